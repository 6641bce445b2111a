// The errors the core raises: a failed driver call, a kernel fault, a library
// that cannot be loaded, a run that could not be measured, an interrupt.
#pragma once

#include <stdexcept>
#include <string>

#include "pyhipbench/export.hpp"

namespace pyhipbench {

// A driver call returned an error.
class PYHIPBENCH_API DriverError : public std::runtime_error {
 public:
  // what(): "<call> failed: <name> (<code>): <message>".
  DriverError(std::string call, int code, std::string name, std::string message);
  // The same error with what() replaced, e.g. to add which kernel it concerns.
  DriverError(const DriverError& cause, std::string what);
  const std::string& call() const { return call_; }        // e.g. "cuLaunchKernel"
  int code() const { return code_; }                       // the driver's error code
  const std::string& name() const { return name_; }        // e.g. "CUDA_ERROR_INVALID_VALUE"
  const std::string& message() const { return message_; }  // the driver's error string

 private:
  std::string call_;
  int code_;
  std::string name_;
  std::string message_;
};

// A kernel failed while running (for example an illegal address).
class PYHIPBENCH_API KernelFault : public DriverError {
 public:
  KernelFault(const DriverError& cause, const std::string& kernel, bool context_usable);
  bool context_usable() const { return context_usable_; }

 private:
  bool context_usable_;
};

// The driver library could not be loaded or lacks a symbol.
class PYHIPBENCH_API LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The launches ran but the timer could not read a time for each of them (for
// example CUPTI dropped kernel records): the run has no trustworthy samples.
class PYHIPBENCH_API MeasurementError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A measurement stopped on request (interrupt.hpp): nothing of it is kept.
class PYHIPBENCH_API Interrupted : public std::runtime_error {
 public:
  Interrupted(const std::string& what, bool device_abandoned)
      : std::runtime_error(what), device_abandoned_(device_abandoned) {}
  // The GPU was still running the measurement's work kInterruptGraceS after
  // the request: the process cannot use the device again.
  bool device_abandoned() const { return device_abandoned_; }

 private:
  bool device_abandoned_;
};

}  // namespace pyhipbench
