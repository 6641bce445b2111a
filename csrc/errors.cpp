#include "pyhipbench/errors.hpp"

namespace pyhipbench {

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
    : DriverError(cause, "kernel '" + kernel + "' faulted while running: " + cause.what() +
                             (context_usable ? "; the device context is still usable"
                                             : "; the device context is no longer usable (a sticky "
                                               "error): start a new process to use the GPU again")),
      context_usable_(context_usable) {}

}  // namespace pyhipbench
