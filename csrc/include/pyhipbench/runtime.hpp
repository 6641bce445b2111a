// The timed loop's view of a GPU driver: launch with events, read times.
//
// One Runtime per backend (CUDA, HIP). Each resolves its driver library at run
// time with dlopen, so the core builds and links with no GPU SDK installed.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pyhipbench/launch_plan.hpp"

namespace pyhipbench {

// A driver call returned an error.
class DriverError : public std::runtime_error {
 public:
  // what(): "<call> failed: <name> (<code>): <message>".
  DriverError(std::string call, int code, std::string name, std::string message);
  // The same error with what() replaced, e.g. to add which kernel it concerns.
  DriverError(const DriverError& cause, std::string what);
  const std::string& call() const { return call_; }      // e.g. "cuLaunchKernel"
  int code() const { return code_; }                     // the driver's error code
  const std::string& name() const { return name_; }      // e.g. "CUDA_ERROR_INVALID_VALUE"
  const std::string& message() const { return message_; }// the driver's error string

 private:
  std::string call_;
  int code_;
  std::string name_;
  std::string message_;
};

// A kernel failed while running (for example an illegal address).
class KernelFault : public DriverError {
 public:
  KernelFault(const DriverError& cause, const std::string& kernel, bool context_usable);
  bool context_usable() const { return context_usable_; }

 private:
  bool context_usable_;
};

// The driver library could not be loaded or lacks a symbol.
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The launches ran but the timer could not read a time for each of them (for
// example CUPTI dropped kernel records): the run has no trustworthy samples.
class MeasurementError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Timings {
  std::vector<double> times_us;  // per timed iteration, µs, from the driver's events
  double host_us = 0;            // host wall time to issue the loop, µs, all iterations
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const std::string& backend() const = 0;        // "cuda" or "hip"
  virtual const std::string& library_path() const = 0;   // the driver library in use

  // Runs `iterations` launches of `plan`; iteration i uses argument set
  // (first_set + i) mod plan.sets(). Each launch is bracketed by its own event
  // pair; the host synchronizes once, after the last launch. Nothing is
  // allocated while launching: events come from a pool grown beforehand.
  virtual Timings run(LaunchPlan& plan, size_t iterations, size_t first_set) = 0;
};

// Loads the driver for `backend` ("cuda" or "hip"). `library_path` empty means:
// the environment variable (PYHIPBENCH_CUDA_LIBRARY / PYHIPBENCH_HIP_LIBRARY),
// else the platform's default name (libcuda.so.1 / libamdhip64.so).
std::unique_ptr<Runtime> load_runtime(const std::string& backend,
                                      const std::string& library_path = "");

}  // namespace pyhipbench
