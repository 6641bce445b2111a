#include "dynamic_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "pyhipbench/errors.hpp"

namespace pyhipbench {

DynamicLibrary::DynamicLibrary(const std::string& path, const std::string& what, const std::string& env_var,
                               bool stay_loaded)
    : path_(path),
      what_(what),
      handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (stay_loaded ? RTLD_NODELETE : 0))) {
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw LibraryError("cannot load the " + what + " library '" + path +
                       "': " + (reason ? reason : "unknown dlopen error") + " (is the driver installed? set " +
                       env_var + " to the library's path)");
  }
}

DynamicLibrary::~DynamicLibrary() { dlclose(handle_); }

void* DynamicLibrary::find(const char* name) const { return dlsym(handle_, name); }

void* DynamicLibrary::symbol(const char* name) const {
  void* address = find(name);
  if (address == nullptr) {
    throw LibraryError("the " + what_ + " library '" + path_ + "' has no symbol '" + name +
                       "' (driver too old, or not a " + what_ + " library)");
  }
  return address;
}

std::string choose_library(const std::string& explicit_path, const char* env_var, const char* default_name) {
  if (!explicit_path.empty()) return explicit_path;
  const char* from_env = std::getenv(env_var);
  if (from_env != nullptr && from_env[0] != '\0') return from_env;
  return default_name;
}

}  // namespace pyhipbench
