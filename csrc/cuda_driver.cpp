#include "cuda_driver.hpp"

#include <stdexcept>
#include <utility>

namespace pyhipbench {

CudaDriver::CudaDriver(const std::string& library_path)
    : library_(choose_library(library_path, "PYHIPBENCH_CUDA_LIBRARY", "libcuda.so.1"), "CUDA driver",
               "PYHIPBENCH_CUDA_LIBRARY") {
  library_.resolve(cuLaunchKernel, "cuLaunchKernel");
  library_.resolve(cuEventCreate, "cuEventCreate");
  library_.resolve(cuEventRecord, "cuEventRecord");
  library_.resolve(cuEventSynchronize, "cuEventSynchronize");
  library_.resolve(cuEventQuery, "cuEventQuery");
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
  library_.resolve(cuInit, "cuInit");
  library_.resolve(cuDeviceGetCount, "cuDeviceGetCount");
  library_.resolve(cuDeviceGet, "cuDeviceGet");
  library_.resolve(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  library_.resolve(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2");
  library_.resolve(cuCtxSynchronize, "cuCtxSynchronize");
  library_.resolve(cuMemAlloc_v2, "cuMemAlloc_v2");
  library_.resolve(cuMemFree_v2, "cuMemFree_v2");
  library_.resolve(cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2");
  library_.resolve(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
  library_.resolve(cuMemsetD8Async, "cuMemsetD8Async");
  library_.resolve(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2");
  library_.resolve(cuMemGetInfo_v2, "cuMemGetInfo_v2");
  library_.resolve(cuCtxGetDevice, "cuCtxGetDevice");
  library_.resolve(cuDeviceGetAttribute, "cuDeviceGetAttribute");
}

CudaDriver::~CudaDriver() {
  for (const auto& [device, context] : retained_) cuDevicePrimaryCtxRelease_v2(device);
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

namespace {

// A CUDA module, unloaded in its context on destruction.
class CudaModule final : public Module {
 public:
  CudaModule(std::shared_ptr<const CudaDriver> driver, CudaDriver::Context context, CudaDriver::Module handle)
      : driver_(std::move(driver)), context_(context), handle_(handle) {}
  ~CudaModule() override {
    try {
      CudaDriver::CurrentContext current(*driver_, context_);
      driver_->cuModuleUnload(handle_);
    } catch (const DriverError&) {  // the context is gone (a sticky fault), and the module with it
    }
  }
  uintptr_t function(const std::string& name) const override {
    CudaDriver::CurrentContext current(*driver_, context_);
    CudaDriver::Function function = nullptr;
    if (CudaDriver::Result r = driver_->cuModuleGetFunction(&function, handle_, name.c_str())) {
      const DriverError cause = driver_->error("cuModuleGetFunction", r);
      throw DriverError(cause, std::string(cause.what()) + " (kernel '" + name + "')");
    }
    return reinterpret_cast<uintptr_t>(function);
  }

 private:
  std::shared_ptr<const CudaDriver> driver_;
  CudaDriver::Context context_;
  CudaDriver::Module handle_;
};

}  // namespace

uintptr_t CudaDriver::device_context(int ordinal) {
  check("cuInit", cuInit(0));
  int count = 0;
  check("cuDeviceGetCount", cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    throw std::invalid_argument("CUDA device " + std::to_string(ordinal) + ": expected an ordinal in 0 .. " +
                                std::to_string(count - 1) + " (the driver reports " + std::to_string(count) +
                                (count == 1 ? " device)" : " devices)"));
  }
  Device device = 0;
  check("cuDeviceGet", cuDeviceGet(&device, ordinal));
  std::lock_guard<std::mutex> lock(retained_mutex_);
  auto found = retained_.find(device);
  if (found == retained_.end()) {
    Context context = nullptr;
    check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&context, device));
    found = retained_.emplace(device, context).first;
  }
  return reinterpret_cast<uintptr_t>(found->second);
}

std::unique_ptr<pyhipbench::Module> CudaDriver::load_module(uintptr_t context, const std::string& image) {
  if (image.empty()) throw std::invalid_argument("an empty code object: expected PTX, a cubin or a fatbin");
  const Context current_context = CudaDriver::context(context);
  CurrentContext current(*this, current_context);
  Module module = nullptr;
  check("cuModuleLoadData", cuModuleLoadData(&module, image.c_str()));  // c_str(): PTX must end in NUL
  return std::make_unique<CudaModule>(std::static_pointer_cast<const CudaDriver>(shared_from_this()), current_context,
                                      module);
}

uintptr_t CudaDriver::allocate(uintptr_t context, size_t bytes) {
  CurrentContext current(*this, CudaDriver::context(context));
  DevicePointer address = 0;
  if (Result r = cuMemAlloc_v2(&address, bytes)) {
    const DriverError cause = error("cuMemAlloc_v2", r);
    throw DriverError(cause, std::string(cause.what()) + " (allocating " + std::to_string(bytes) + " bytes)");
  }
  return static_cast<uintptr_t>(address);
}

void CudaDriver::deallocate(uintptr_t context, uintptr_t address) noexcept {
  try {
    CurrentContext current(*this, CudaDriver::context(context));
    cuMemFree_v2(address);
  } catch (const DriverError&) {  // the context is gone (a sticky fault), and the memory with it
  }
}

void CudaDriver::copy(uintptr_t context, uintptr_t destination, uintptr_t source, size_t bytes) {
  CurrentContext current(*this, CudaDriver::context(context));
  check("cuMemcpyDtoD_v2", cuMemcpyDtoD_v2(destination, source, bytes));
  check("cuCtxSynchronize", cuCtxSynchronize());  // device-to-device copies may return before they finish
}

void CudaDriver::copy_from_host(uintptr_t context, uintptr_t destination, const void* source, size_t bytes) {
  CurrentContext current(*this, CudaDriver::context(context));
  check("cuMemcpyHtoD_v2", cuMemcpyHtoD_v2(destination, source, bytes));
}

MemoryInfo CudaDriver::memory_info(uintptr_t context) {
  CurrentContext current(*this, CudaDriver::context(context));
  size_t free_bytes = 0, total_bytes = 0;
  check("cuMemGetInfo_v2", cuMemGetInfo_v2(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

uint64_t CudaDriver::l2_cache_bytes(uintptr_t context) {
  constexpr int kL2CacheSize = 38;  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
  CurrentContext current(*this, CudaDriver::context(context));
  Device device = 0;
  check("cuCtxGetDevice", cuCtxGetDevice(&device));
  int bytes = 0;
  check("cuDeviceGetAttribute", cuDeviceGetAttribute(&bytes, kL2CacheSize, device));
  return static_cast<uint64_t>(bytes);
}

}  // namespace pyhipbench
