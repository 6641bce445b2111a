// dlopen/dlsym with errors that say which library and symbol, and how to fix it.
#pragma once

#include <string>

namespace pyhipbench {

class DynamicLibrary {
 public:
  // `env_var` names the variable a user sets to point at the library; it is
  // only used in the error message. `stay_loaded`: never unmap the library,
  // even after the last handle is closed (for a library that hooks itself into
  // another, as CUPTI does into the driver).
  DynamicLibrary(const std::string& path, const std::string& what, const std::string& env_var,
                 bool stay_loaded = false);
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  const std::string& path() const { return path_; }

  // Resolves `name` into `fn`; throws LibraryError naming the library if absent.
  template <class Fn>
  void resolve(Fn*& fn, const char* name) const {
    fn = reinterpret_cast<Fn*>(symbol(name));
  }

  // Resolves `name` into `fn`, or sets it to null if the library lacks it
  // (an entry point newer versions added).
  template <class Fn>
  void resolve_optional(Fn*& fn, const char* name) const {
    fn = reinterpret_cast<Fn*>(find(name));
  }

 private:
  void* symbol(const char* name) const;
  void* find(const char* name) const;
  std::string path_;
  std::string what_;
  void* handle_ = nullptr;
};

// The library path to load: `explicit_path`, else $env_var, else `default_name`.
std::string choose_library(const std::string& explicit_path, const char* env_var, const char* default_name);

}  // namespace pyhipbench
