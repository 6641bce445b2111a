#include "hip_driver.hpp"

#include <climits>
#include <stdexcept>

namespace pyhipbench {

HipDriver::HipDriver(const std::string& library_path)
    : library_(choose_library(library_path, "PYHIPBENCH_HIP_LIBRARY", "libamdhip64.so"), "HIP runtime",
               "PYHIPBENCH_HIP_LIBRARY") {
  library_.resolve(hipExtModuleLaunchKernel, "hipExtModuleLaunchKernel");
  library_.resolve(hipEventCreate, "hipEventCreate");
  library_.resolve(hipEventRecord, "hipEventRecord");
  library_.resolve(hipEventSynchronize, "hipEventSynchronize");
  library_.resolve(hipEventElapsedTime, "hipEventElapsedTime");
  library_.resolve(hipEventDestroy, "hipEventDestroy");
  library_.resolve(hipGetDevice, "hipGetDevice");
  library_.resolve(hipSetDevice, "hipSetDevice");
  library_.resolve(hipGetErrorName, "hipGetErrorName");
  library_.resolve(hipGetErrorString, "hipGetErrorString");
  library_.resolve(hipStreamCreateWithFlags, "hipStreamCreateWithFlags");
  library_.resolve(hipStreamDestroy, "hipStreamDestroy");
  library_.resolve(hipStreamBeginCapture, "hipStreamBeginCapture");
  library_.resolve(hipStreamEndCapture, "hipStreamEndCapture");
  library_.resolve(hipGraphInstantiate, "hipGraphInstantiate");
  library_.resolve(hipGraphLaunch, "hipGraphLaunch");
  library_.resolve(hipGraphExecDestroy, "hipGraphExecDestroy");
  library_.resolve(hipGraphDestroy, "hipGraphDestroy");
  library_.resolve(hipHostMalloc, "hipHostMalloc");
  library_.resolve(hipHostGetDevicePointer, "hipHostGetDevicePointer");
  library_.resolve(hipHostFree, "hipHostFree");
}

DriverError HipDriver::error(const char* call, Result status) const {
  const char* name = hipGetErrorName(status);
  const char* message = hipGetErrorString(status);
  if (name == nullptr) name = "unknown HIP error";
  if (message == nullptr) message = "no description";
  return DriverError(call, status, name, message);
}

HipDriver::Context HipDriver::context(uintptr_t device) {
  if (device > INT_MAX) {
    throw std::invalid_argument("HIP device " + std::to_string(device) +
                                " is not a device ordinal: expected 0 .. " + std::to_string(INT_MAX));
  }
  return static_cast<Context>(device);
}

void HipDriver::check_plan(const LaunchPlan& plan) const {
  const LaunchConfig& c = plan.config();
  for (int axis = 0; axis < 3; ++axis) {
    const uint64_t threads = uint64_t{c.grid[axis]} * c.block[axis];
    if (threads > UINT32_MAX) {
      throw std::invalid_argument("grid x block = " + std::to_string(threads) + " threads on axis " +
                                  "xyz"[axis] + " exceeds hipExtModuleLaunchKernel's 32-bit global size");
    }
  }
}

}  // namespace pyhipbench
