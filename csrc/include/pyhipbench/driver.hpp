// A GPU driver library, loaded at run time (dlopen), shared by the timers.
//
// The core builds and links with no GPU SDK: every driver entry point it calls
// is resolved with dlsym when the driver is loaded (csrc/cuda_driver.hpp,
// csrc/hip_driver.hpp list them).
#pragma once

#include <memory>
#include <string>

namespace pyhipbench {

class Driver {
 public:
  virtual ~Driver() = default;
  virtual const std::string& backend() const = 0;        // "cuda" or "hip"
  virtual const std::string& library_path() const = 0;   // the library loaded
};

// Loads the driver for `backend` ("cuda" or "hip"). `library_path` empty means:
// the environment variable (PYHIPBENCH_CUDA_LIBRARY / PYHIPBENCH_HIP_LIBRARY),
// else the platform's default name (libcuda.so.1 / libamdhip64.so). Throws
// LibraryError if the library or one of its entry points is missing.
std::shared_ptr<Driver> load_driver(const std::string& backend, const std::string& library_path = "");

}  // namespace pyhipbench
