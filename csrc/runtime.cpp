#include "pyhipbench/runtime.hpp"

namespace pyhipbench {

std::unique_ptr<Runtime> load_cuda_runtime(const std::string& library_path);
std::unique_ptr<Runtime> load_hip_runtime(const std::string& library_path);

DriverError::DriverError(std::string call, int code, std::string name, std::string message)
    : std::runtime_error(call + " failed: " + name + " (" + std::to_string(code) + "): " + message),
      call_(std::move(call)),
      code_(code),
      name_(std::move(name)),
      message_(std::move(message)) {}

DriverError::DriverError(const DriverError& cause, std::string what)
    : std::runtime_error(std::move(what)),
      call_(cause.call_),
      code_(cause.code_),
      name_(cause.name_),
      message_(cause.message_) {}

KernelFault::KernelFault(const DriverError& cause, const std::string& kernel, bool context_usable)
    : DriverError(cause,
                  "kernel '" + kernel + "' faulted while running: " + cause.what() +
                      (context_usable ? "; the device context is still usable"
                                      : "; the device context is no longer usable (a sticky "
                                        "error): start a new process to use the GPU again")),
      context_usable_(context_usable) {}

std::unique_ptr<Runtime> load_runtime(const std::string& backend, const std::string& library_path) {
  if (backend == "cuda") return load_cuda_runtime(library_path);
  if (backend == "hip") return load_hip_runtime(library_path);
  throw std::invalid_argument("unknown backend '" + backend + "'; expected 'cuda' or 'hip'");
}

}  // namespace pyhipbench
