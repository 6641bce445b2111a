#include "cuda_driver.hpp"

#include <stdexcept>

namespace pyhipbench {

CudaDriver::CudaDriver(const std::string& library_path)
    : library_(choose_library(library_path, "PYHIPBENCH_CUDA_LIBRARY", "libcuda.so.1"), "CUDA driver",
               "PYHIPBENCH_CUDA_LIBRARY") {
  library_.resolve(cuLaunchKernel, "cuLaunchKernel");
  library_.resolve(cuEventCreate, "cuEventCreate");
  library_.resolve(cuEventRecord, "cuEventRecord");
  library_.resolve(cuEventSynchronize, "cuEventSynchronize");
  library_.resolve(cuEventElapsedTime, "cuEventElapsedTime");
  library_.resolve(cuEventDestroy_v2, "cuEventDestroy_v2");
  library_.resolve(cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2");
  library_.resolve(cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2");
  library_.resolve(cuGetErrorName, "cuGetErrorName");
  library_.resolve(cuGetErrorString, "cuGetErrorString");
  library_.resolve(cuStreamCreate, "cuStreamCreate");
  library_.resolve(cuStreamDestroy_v2, "cuStreamDestroy_v2");
  library_.resolve(cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2");
  library_.resolve(cuStreamEndCapture, "cuStreamEndCapture");
  library_.resolve(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  library_.resolve(cuGraphLaunch, "cuGraphLaunch");
  library_.resolve(cuGraphExecDestroy, "cuGraphExecDestroy");
  library_.resolve(cuGraphDestroy, "cuGraphDestroy");
  library_.resolve(cuMemHostAlloc, "cuMemHostAlloc");
  library_.resolve(cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2");
  library_.resolve(cuMemFreeHost, "cuMemFreeHost");
  library_.resolve(cuModuleLoadData, "cuModuleLoadData");
  library_.resolve(cuModuleGetFunction, "cuModuleGetFunction");
  library_.resolve(cuModuleUnload, "cuModuleUnload");
}

DriverError CudaDriver::error(const char* call, Result status) const {
  const char* name = nullptr;
  const char* message = nullptr;
  if (cuGetErrorName(status, &name) != 0 || name == nullptr) name = "unknown CUDA error";
  if (cuGetErrorString(status, &message) != 0 || message == nullptr) message = "no description";
  return DriverError(call, status, name, message);
}

CudaDriver::Context CudaDriver::context(uintptr_t handle) {
  if (handle == 0) {
    throw std::invalid_argument(
        "CUDA context 0 is not a context: pass a CUcontext handle as an int (e.g. the device's "
        "primary context, from cuDevicePrimaryCtxRetain)");
  }
  return reinterpret_cast<Context>(handle);
}

}  // namespace pyhipbench
