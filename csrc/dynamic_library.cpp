#include "dynamic_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "pyhipbench/errors.hpp"

namespace pyhipbench {

namespace {

// For a 64-bit ELF file at `path`: the bytes its loadable segments need (the
// furthest end of a PT_LOAD's file range), and the file's size. dlopen maps
// those ranges: past the file's end (a truncated copy), touching them kills
// the process with SIGBUS instead of failing. {0, 0} where it cannot tell (no
// such file, not a 64-bit little-endian ELF, a bare name the loader searches
// for): dlopen says why then. A range past what 64 bits hold (a corrupt
// header) needs more than any file has: UINT64_MAX.
std::pair<uint64_t, uint64_t> loaded_and_file_bytes(const std::string& path) {
  if (path.find('/') == std::string::npos) return {0, 0};
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return {0, 0};
  const auto file_bytes = static_cast<uint64_t>(file.tellg());
  char header[64] = {};
  file.seekg(0);
  if (!file.read(header, sizeof header) ||
      std::memcmp(header,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      header[4] != 2 || header[5] != 1)  // ELFCLASS64, ELFDATA2LSB
    return {0, 0};
  uint64_t table = 0;
  uint16_t entry_bytes = 0, entries = 0;
  std::memcpy(&table, header + 32, sizeof table);  // e_phoff
  std::memcpy(&entry_bytes, header + 54, sizeof entry_bytes);
  std::memcpy(&entries, header + 56, sizeof entries);
  const uint64_t table_bytes = uint64_t{entry_bytes} * entries;
  if (table > UINT64_MAX - table_bytes) return {UINT64_MAX, file_bytes};
  uint64_t needed = table + table_bytes;
  for (uint16_t i = 0; i < entries && entry_bytes >= 40; ++i) {
    char entry[40] = {};
    file.seekg(static_cast<std::streamoff>(table + uint64_t{i} * entry_bytes));
    if (!file.read(entry, sizeof entry)) break;  // the table itself runs past the end: `needed` says so
    uint32_t type = 0;
    uint64_t offset = 0, size = 0;
    std::memcpy(&type, entry, sizeof type);
    std::memcpy(&offset, entry + 8, sizeof offset);  // p_offset
    std::memcpy(&size, entry + 32, sizeof size);     // p_filesz
    if (type != 1) continue;                         // PT_LOAD only: what dlopen maps
    if (offset > UINT64_MAX - size) return {UINT64_MAX, file_bytes};
    needed = std::max(needed, offset + size);
  }
  return {needed, file_bytes};
}

}  // namespace

DynamicLibrary::DynamicLibrary(const std::string& path, const std::string& what, const std::string& env_var,
                               bool stay_loaded)
    : path_(path), what_(what) {
  const auto [needed, file_bytes] = loaded_and_file_bytes(path);
  if (needed > file_bytes) {
    const std::string found = needed == UINT64_MAX ? "its program headers are corrupt"
                                                   : std::to_string(file_bytes) + " bytes, its segments end at byte " +
                                                         std::to_string(needed);
    throw LibraryError("cannot load the " + what + " library '" + path + "': the file is truncated or corrupt (" +
                       found + "): expected a whole library (set " + env_var + " to the library's path)");
  }
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (stay_loaded ? RTLD_NODELETE : 0));
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
