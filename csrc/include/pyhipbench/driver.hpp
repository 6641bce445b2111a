// A GPU driver library, loaded at run time (dlopen), shared by the timers, and
// what an embedder needs to run kernels with it from C++ alone: a device's
// context, code objects and their functions, device memory.
//
// The core builds and links with no GPU SDK: every driver entry point it calls
// is resolved with dlsym when the driver is loaded (csrc/cuda_driver.hpp,
// csrc/hip_driver.hpp list them). Handles (contexts, functions, device
// addresses) are plain integers, as Python passes them.
//
// Contexts: every call here that takes a `context` makes it current itself
// and restores the caller's before returning (CUDA: cuCtxPushCurrent /
// cuCtxPopCurrent; HIP: hipSetDevice, the previous device set back), so the
// caller's thread needs no current context and keeps the one it had.
//
// Thread safety: a Driver may be used from several threads at once; each
// call's context switch is confined to the calling thread.
//
// Errors: a failed driver call throws DriverError naming the call, the
// driver's code and message (pyhipbench/errors.hpp); bad arguments throw
// std::invalid_argument naming the value. After a kernel fault (a sticky
// error) every call into the context fails: destructors here then free
// nothing and throw nothing, since the driver released it all with the context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pyhipbench/export.hpp"

namespace pyhipbench {

// A loaded code object. Its functions are valid until it is destroyed; it
// unloads itself (in the context it was loaded in) on destruction.
class PYHIPBENCH_API Module {
 public:
  virtual ~Module() = default;
  // The handle of kernel `name` (a CUfunction / hipFunction_t as an integer),
  // what LaunchPlan takes. Throws DriverError whose message names `name` if
  // the module has no such kernel.
  virtual uintptr_t function(const std::string& name) const = 0;
};

class DeviceBuffer;

// A device's memory as the driver reports it, bytes (rotation.hpp's
// plan_rotation takes both).
struct MemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class PYHIPBENCH_API Driver : public std::enable_shared_from_this<Driver> {
 public:
  virtual ~Driver() = default;
  virtual const std::string& backend() const = 0;       // "cuda" or "hip"
  virtual const std::string& library_path() const = 0;  // the library loaded

  // The context the calls below and make_timer take for device `ordinal`.
  // CUDA: the device's primary context (cuInit, cuDeviceGet,
  // cuDevicePrimaryCtxRetain), retained once and released when this Driver
  // is destroyed, so everything made in it must go first (timers, modules
  // and buffers hold the driver, which makes that so). HIP: the ordinal.
  // Throws std::invalid_argument for an ordinal the driver has no device for.
  virtual uintptr_t device_context(int ordinal) = 0;

  // Loads `image` in `context`: CUDA, PTX (text), cubin or fatbin; HIP, a
  // code object for the device's processor (HSACO) or a bundle holding one.
  // The driver reads the image during the call only.
  virtual std::unique_ptr<Module> load_module(uintptr_t context, const std::string& image) = 0;

  // Copies `bytes` bytes between device addresses (device to device) or from
  // host memory to the device; returns when the copy is complete.
  virtual void copy(uintptr_t context, uintptr_t destination, uintptr_t source, size_t bytes) = 0;
  virtual void copy_from_host(uintptr_t context, uintptr_t destination, const void* source, size_t bytes) = 0;

  // Free and total memory of `context`'s device, bytes (CUDA: cuMemGetInfo_v2;
  // HIP: hipMemGetInfo): the free-memory input of plan_rotation.
  virtual MemoryInfo memory_info(uintptr_t context) = 0;

  // The L2 cache of `context`'s device as the driver reports it, bytes: the
  // last-level-cache input of plan_rotation on NVIDIA, whose L2 is the last
  // level (CUDA: cuCtxGetDevice, then cuDeviceGetAttribute with
  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE). HIP: hipDeviceGetAttribute with
  // hipDeviceAttributeL2CacheSize, which on MI300 (gfx942) is one XCD's 4 MB
  // L2 while the last-level cache is the 256 MB Infinity Cache: rotation sized
  // from it would leave the data warm there, so on such a device the embedder
  // passes the last-level cache itself (Python's pyhipbench/archs.py tables it
  // per architecture).
  virtual uint64_t l2_cache_bytes(uintptr_t context) = 0;

 protected:
  // Device memory, made and freed only through DeviceBuffer.
  friend class DeviceBuffer;
  virtual uintptr_t allocate(uintptr_t context, size_t bytes) = 0;
  virtual void deallocate(uintptr_t context, uintptr_t address) noexcept = 0;
};

// `bytes` bytes of device memory in `context` (at least 256-byte aligned, as
// both drivers allocate), freed on destruction. Holds the driver, so it may
// outlive the caller's handle to it. Move-only.
class PYHIPBENCH_API DeviceBuffer {
 public:
  // Throws std::invalid_argument for 0 bytes, DriverError if the driver
  // cannot allocate (out of memory names the size).
  DeviceBuffer(std::shared_ptr<Driver> driver, uintptr_t context, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uintptr_t address() const { return address_; }  // device address
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  std::shared_ptr<Driver> driver_;
  uintptr_t context_ = 0;
  uintptr_t address_ = 0;
  size_t bytes_ = 0;
};

// Loads the driver for `backend` ("cuda" or "hip"). `library_path` empty means:
// the environment variable (PYHIPBENCH_CUDA_LIBRARY / PYHIPBENCH_HIP_LIBRARY),
// else the platform's default name (libcuda.so.1 / libamdhip64.so). Throws
// LibraryError if the library or one of its entry points is missing.
PYHIPBENCH_API std::shared_ptr<Driver> load_driver(const std::string& backend, const std::string& library_path = "");

}  // namespace pyhipbench
