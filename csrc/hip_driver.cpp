#include "hip_driver.hpp"

#include <climits>
#include <stdexcept>
#include <utility>

namespace pyhipbench {

HipDriver::HipDriver(const std::string& library_path)
    : library_(choose_library(library_path, "PYHIPBENCH_HIP_LIBRARY", "libamdhip64.so"), "HIP runtime",
               "PYHIPBENCH_HIP_LIBRARY") {
  library_.resolve(hipExtModuleLaunchKernel, "hipExtModuleLaunchKernel");
  library_.resolve(hipEventCreate, "hipEventCreate");
  library_.resolve(hipEventRecord, "hipEventRecord");
  library_.resolve(hipEventSynchronize, "hipEventSynchronize");
  library_.resolve(hipEventQuery, "hipEventQuery");
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
  library_.resolve(hipGetDeviceCount, "hipGetDeviceCount");
  library_.resolve(hipDeviceSynchronize, "hipDeviceSynchronize");
  library_.resolve(hipMalloc, "hipMalloc");
  library_.resolve(hipFree, "hipFree");
  library_.resolve(hipMemcpyDtoD, "hipMemcpyDtoD");
  library_.resolve(hipMemcpyHtoD, "hipMemcpyHtoD");
  library_.resolve(hipMemsetAsync, "hipMemsetAsync");
  library_.resolve(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  library_.resolve(hipMemGetInfo, "hipMemGetInfo");
  library_.resolve(hipDeviceGetAttribute, "hipDeviceGetAttribute");
  library_.resolve(hipModuleLoadData, "hipModuleLoadData");
  library_.resolve(hipModuleGetFunction, "hipModuleGetFunction");
  library_.resolve(hipModuleUnload, "hipModuleUnload");
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
    throw std::invalid_argument("HIP device " + std::to_string(device) + " is not a device ordinal: expected 0 .. " +
                                std::to_string(INT_MAX));
  }
  return static_cast<Context>(device);
}

LaunchLimits HipDriver::limits() {
  return {UINT32_MAX, "hipExtModuleLaunchKernel takes global work sizes (grid x block) as 32-bit values"};
}

namespace {

// A HIP module, unloaded on its device on destruction.
class HipModule final : public Module {
 public:
  HipModule(std::shared_ptr<const HipDriver> driver, HipDriver::Context device, HipDriver::Module handle)
      : driver_(std::move(driver)), device_(device), handle_(handle) {}
  ~HipModule() override {
    try {
      HipDriver::CurrentContext current(*driver_, device_);
      driver_->hipModuleUnload(handle_);
    } catch (const DriverError&) {  // the device is unusable (a sticky fault), the module gone with it
    }
  }
  uintptr_t function(const std::string& name) const override {
    HipDriver::CurrentContext current(*driver_, device_);
    HipDriver::Function function = nullptr;
    if (HipDriver::Result r = driver_->hipModuleGetFunction(&function, handle_, name.c_str())) {
      const DriverError cause = driver_->error("hipModuleGetFunction", r);
      throw DriverError(cause, std::string(cause.what()) + " (kernel '" + name + "')");
    }
    return reinterpret_cast<uintptr_t>(function);
  }

 private:
  std::shared_ptr<const HipDriver> driver_;
  HipDriver::Context device_;
  HipDriver::Module handle_;
};

}  // namespace

uintptr_t HipDriver::device_context(int ordinal) {
  int count = 0;
  check("hipGetDeviceCount", hipGetDeviceCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    throw std::invalid_argument("HIP device " + std::to_string(ordinal) + ": expected an ordinal in 0 .. " +
                                std::to_string(count - 1) + " (the driver reports " + std::to_string(count) +
                                (count == 1 ? " device)" : " devices)"));
  }
  return static_cast<uintptr_t>(ordinal);
}

std::unique_ptr<pyhipbench::Module> HipDriver::load_module(uintptr_t context, const std::string& image) {
  if (image.empty()) throw std::invalid_argument("an empty code object: expected an HSACO");
  const Context device = HipDriver::context(context);
  CurrentContext current(*this, device);
  Module module = nullptr;
  check("hipModuleLoadData", hipModuleLoadData(&module, image.data()));
  return std::make_unique<HipModule>(std::static_pointer_cast<const HipDriver>(shared_from_this()), device, module);
}

uintptr_t HipDriver::allocate(uintptr_t context, size_t bytes) {
  CurrentContext current(*this, HipDriver::context(context));
  void* address = nullptr;
  if (Result r = hipMalloc(&address, bytes)) {
    const DriverError cause = error("hipMalloc", r);
    throw DriverError(cause, std::string(cause.what()) + " (allocating " + std::to_string(bytes) + " bytes)");
  }
  return reinterpret_cast<uintptr_t>(address);
}

void HipDriver::deallocate(uintptr_t context, uintptr_t address) noexcept {
  try {
    CurrentContext current(*this, HipDriver::context(context));
    hipFree(reinterpret_cast<void*>(address));
  } catch (const DriverError&) {  // the device is unusable (a sticky fault), the memory gone with it
  }
}

void HipDriver::copy(uintptr_t context, uintptr_t destination, uintptr_t source, size_t bytes) {
  CurrentContext current(*this, HipDriver::context(context));
  check("hipMemcpyDtoD", hipMemcpyDtoD(reinterpret_cast<void*>(destination), reinterpret_cast<void*>(source), bytes));
  check("hipDeviceSynchronize", hipDeviceSynchronize());  // device-to-device copies may return before they finish
}

void HipDriver::copy_from_host(uintptr_t context, uintptr_t destination, const void* source, size_t bytes) {
  CurrentContext current(*this, HipDriver::context(context));
  check("hipMemcpyHtoD", hipMemcpyHtoD(reinterpret_cast<void*>(destination), source, bytes));
}

MemoryInfo HipDriver::memory_info(uintptr_t context) {
  CurrentContext current(*this, HipDriver::context(context));
  size_t free_bytes = 0, total_bytes = 0;
  check("hipMemGetInfo", hipMemGetInfo(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

uint64_t HipDriver::l2_cache_bytes(uintptr_t context) {
  constexpr int kL2CacheSize = 19;  // hipDeviceAttributeL2CacheSize
  int bytes = 0;
  check("hipDeviceGetAttribute", hipDeviceGetAttribute(&bytes, kL2CacheSize, HipDriver::context(context)));
  return static_cast<uint64_t>(bytes);
}

}  // namespace pyhipbench
