// The CUDA driver API (libcuda): every entry point the core calls, resolved at
// run time, and the one path that turns a failed call into a DriverError.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "dynamic_library.hpp"
#include "pyhipbench/driver.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "status.hpp"

namespace pyhipbench {

class CudaDriver final : public Driver {
 public:
  // Handle types as cuda.h declares them: opaque pointers. CUresult is an enum
  // (int-sized); 0 is CUDA_SUCCESS.
  using Result = int;
  using Context = struct CUctx_st*;
  using Function = struct CUfunc_st*;
  using Stream = struct CUstream_st*;
  using Event = struct CUevent_st*;
  using Graph = struct CUgraph_st*;
  using GraphExec = struct CUgraphExec_st*;
  using Module = struct CUmod_st*;

  static constexpr const char* kBackend = "cuda";

  using DevicePointer = unsigned long long;  // CUdeviceptr
  using Device = int;                        // CUdevice

  explicit CudaDriver(const std::string& library_path);
  // Releases the primary contexts device_context() retained.
  ~CudaDriver() override;

  const std::string& backend() const override { return backend_; }
  const std::string& library_path() const override { return library_.path(); }

  uintptr_t device_context(int ordinal) override;
  std::unique_ptr<pyhipbench::Module> load_module(uintptr_t context, const std::string& image) override;
  void copy(uintptr_t context, uintptr_t destination, uintptr_t source, size_t bytes) override;
  void copy_from_host(uintptr_t context, uintptr_t destination, const void* source, size_t bytes) override;
  MemoryInfo memory_info(uintptr_t context) override;
  uint64_t l2_cache_bytes(uintptr_t context) override;

  // Throws the DriverError describing `status` unless it is CUDA_SUCCESS.
  void check(const char* call, Result status) const {
    if (status != 0) throw error(call, status);
  }
  DriverError error(const char* call, Result status) const;

  // After these the context is unusable: illegal address, launch timeout,
  // assert, stack error, illegal instruction, misaligned address, invalid
  // address space, invalid PC, launch failed.
  static bool is_kernel_fault(Result code) {
    return code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719);
  }

  // A context handle from the caller (Python passes an int).
  static Context context(uintptr_t handle);

  // cuLaunchKernel takes block counts, each dimension's checked by the driver
  // at launch: nothing beyond the device's limits.
  static LaunchLimits limits() { return {}; }
  void check_plan(const LaunchPlan&) const {}

  // One launch of `kernel` with `args` on `stream`; with events, bracketed by
  // them (cuLaunchKernel takes no events: they are recorded on the stream
  // right before and after it).
  Status launch(const KernelLaunch& kernel, void** args, Stream stream, Event start, Event stop) const {
    const LaunchConfig& c = kernel.config();
    if (start != nullptr) {
      if (Result r = cuEventRecord(start, stream)) return {r, "cuEventRecord"};
    }
    if (Result r = cuLaunchKernel(reinterpret_cast<Function>(kernel.function()), c.grid[0], c.grid[1], c.grid[2],
                                  c.block[0], c.block[1], c.block[2], c.shared_bytes, stream, args, nullptr)) {
      return {r, "cuLaunchKernel"};
    }
    if (stop != nullptr) {
      if (Result r = cuEventRecord(stop, stream)) return {r, "cuEventRecord"};
    }
    return {0, nullptr};
  }

  // A reset step's work for argument set `set`, queued on `stream`.
  Status reset(const ResetStep& step, size_t set, Stream stream) const {
    const auto destination = static_cast<DevicePointer>(step.destinations[set]);
    if (step.source == 0) return {cuMemsetD8Async(destination, 0, step.bytes, stream), "cuMemsetD8Async"};
    return {cuMemcpyDtoDAsync_v2(destination, static_cast<DevicePointer>(step.source), step.bytes, stream),
            "cuMemcpyDtoDAsync_v2"};
  }

  // Makes a context current for a scope and restores the caller's after:
  // cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2, so the thread's stack is as it was.
  class CurrentContext {
   public:
    CurrentContext(const CudaDriver& driver, Context context) : driver_(driver) {
      driver.check("cuCtxPushCurrent_v2", driver.cuCtxPushCurrent_v2(context));
    }
    ~CurrentContext() {
      Context popped = nullptr;
      driver_.cuCtxPopCurrent_v2(&popped);  // nothing to do if it fails: the push succeeded
    }
    CurrentContext(const CurrentContext&) = delete;
    CurrentContext& operator=(const CurrentContext&) = delete;

   private:
    const CudaDriver& driver_;
  };

  // ---- the entry points (cuda.h signatures, handle types as above) ----
  Result (*cuLaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream,
                           void**, void**);
  Result (*cuEventCreate)(Event*, unsigned flags);
  Result (*cuEventRecord)(Event, Stream);
  Result (*cuEventSynchronize)(Event);
  Result (*cuEventQuery)(Event);
  Result (*cuEventElapsedTime)(float* ms, Event start, Event stop);
  Result (*cuEventDestroy_v2)(Event);
  Result (*cuCtxPushCurrent_v2)(Context);
  Result (*cuCtxPopCurrent_v2)(Context*);
  Result (*cuGetErrorName)(Result, const char**);
  Result (*cuGetErrorString)(Result, const char**);
  Result (*cuStreamCreate)(Stream*, unsigned flags);
  Result (*cuStreamDestroy_v2)(Stream);
  Result (*cuStreamBeginCapture_v2)(Stream, int mode);
  Result (*cuStreamEndCapture)(Stream, Graph*);
  Result (*cuGraphInstantiateWithFlags)(GraphExec*, Graph, unsigned long long flags);
  Result (*cuGraphLaunch)(GraphExec, Stream);
  Result (*cuGraphExecDestroy)(GraphExec);
  Result (*cuGraphDestroy)(Graph);
  Result (*cuMemHostAlloc)(void** host, size_t bytes, unsigned flags);
  Result (*cuMemHostGetDevicePointer_v2)(void** device, void* host, unsigned flags);
  Result (*cuMemFreeHost)(void* host);
  Result (*cuModuleLoadData)(Module*, const void* image);
  Result (*cuModuleGetFunction)(Function*, Module, const char* name);
  Result (*cuModuleUnload)(Module);
  Result (*cuInit)(unsigned flags);
  Result (*cuDeviceGetCount)(int*);
  Result (*cuDeviceGet)(Device*, int ordinal);
  Result (*cuDevicePrimaryCtxRetain)(Context*, Device);
  Result (*cuDevicePrimaryCtxRelease_v2)(Device);
  Result (*cuCtxSynchronize)();
  Result (*cuMemAlloc_v2)(DevicePointer*, size_t bytes);
  Result (*cuMemFree_v2)(DevicePointer);
  Result (*cuMemcpyDtoD_v2)(DevicePointer destination, DevicePointer source, size_t bytes);
  Result (*cuMemcpyHtoD_v2)(DevicePointer destination, const void* source, size_t bytes);
  Result (*cuMemsetD8Async)(DevicePointer destination, unsigned char value, size_t bytes, Stream);
  Result (*cuMemcpyDtoDAsync_v2)(DevicePointer destination, DevicePointer source, size_t bytes, Stream);
  Result (*cuMemGetInfo_v2)(size_t* free_bytes, size_t* total_bytes);
  Result (*cuCtxGetDevice)(Device*);
  Result (*cuDeviceGetAttribute)(int* value, int attribute, Device);

  // Names of the calls the timers make through the generic event interface.
  static constexpr const char* kEventCreate = "cuEventCreate";
  static constexpr const char* kEventRecord = "cuEventRecord";
  static constexpr const char* kEventSynchronize = "cuEventSynchronize";
  static constexpr const char* kEventElapsedTime = "cuEventElapsedTime";
  Result event_create(Event* event) const { return cuEventCreate(event, 0); }
  Result event_destroy(Event event) const { return cuEventDestroy_v2(event); }
  Result event_record(Event event, Stream stream) const { return cuEventRecord(event, stream); }
  Result event_synchronize(Event event) const { return cuEventSynchronize(event); }
  // Whether `event` has completed: 0, kNotReady while the work before it runs, or an error.
  Result event_query(Event event) const { return cuEventQuery(event); }
  static constexpr Result kNotReady = 600;  // CUDA_ERROR_NOT_READY
  Result elapsed_ms(float* ms, Event start, Event stop) const { return cuEventElapsedTime(ms, start, stop); }

  // Graphs, built by stream capture. CU_STREAM_NON_BLOCKING (1): the capture
  // stream never waits on, nor joins, the legacy default stream;
  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (1): only this thread's calls are
  // checked for capture safety, so other threads may allocate meanwhile.
  Status capture_stream_create(Stream* stream) const { return {cuStreamCreate(stream, 1), "cuStreamCreate"}; }
  Status stream_destroy(Stream stream) const { return {cuStreamDestroy_v2(stream), "cuStreamDestroy_v2"}; }
  Status begin_capture(Stream stream) const { return {cuStreamBeginCapture_v2(stream, 1), "cuStreamBeginCapture_v2"}; }
  Status end_capture(Stream stream, Graph* graph) const {
    return {cuStreamEndCapture(stream, graph), "cuStreamEndCapture"};
  }
  Status graph_instantiate(GraphExec* exec, Graph graph) const {
    return {cuGraphInstantiateWithFlags(exec, graph, 0), "cuGraphInstantiateWithFlags"};
  }
  Status graph_launch(GraphExec exec, Stream stream) const { return {cuGraphLaunch(exec, stream), "cuGraphLaunch"}; }
  Status graph_exec_destroy(GraphExec exec) const { return {cuGraphExecDestroy(exec), "cuGraphExecDestroy"}; }
  Status graph_destroy(Graph graph) const { return {cuGraphDestroy(graph), "cuGraphDestroy"}; }

  // Pinned host memory mapped into the device's address space
  // (CU_MEMHOSTALLOC_DEVICEMAP), and the address kernels use for it.
  Status host_alloc_mapped(void** host, size_t bytes) const {
    return {cuMemHostAlloc(host, bytes, 0x02), "cuMemHostAlloc"};
  }
  Status host_device_pointer(void** device, void* host) const {
    return {cuMemHostGetDevicePointer_v2(device, host, 0), "cuMemHostGetDevicePointer_v2"};
  }
  Status host_free(void* host) const { return {cuMemFreeHost(host), "cuMemFreeHost"}; }

  // The spin kernel is embedded PTX (csrc/timers/spin_kernel_ptx.hpp), loaded
  // into the timer's context.
  static constexpr bool kEmbedsSpinKernel = true;
  Status module_load_data(Module* module, const char* image) const {
    return {cuModuleLoadData(module, image), "cuModuleLoadData"};
  }
  Status module_get_function(Function* function, Module module, const char* name) const {
    return {cuModuleGetFunction(function, module, name), "cuModuleGetFunction"};
  }
  Status module_unload(Module module) const { return {cuModuleUnload(module), "cuModuleUnload"}; }

  // One thread of `function` with `params` on `stream`.
  Status launch_single(Function function, void** params, Stream stream) const {
    return {cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel"};
  }
  // `blocks` blocks of `threads` threads of `function` on `stream`.
  Status launch_grid(Function function, unsigned blocks, unsigned threads, void** params, Stream stream) const {
    return {cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel"};
  }

  // The clock probe (csrc/timers/clock_probe.hpp) is embedded PTX too; it needs
  // the current context's device's multiprocessor count and rated SM clock
  // (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16, CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, kHz).
  static constexpr bool kEmbedsClockProbe = true;
  Status sm_count_and_clock(int* sms, int* khz) const {
    Device device = 0;
    if (Result r = cuCtxGetDevice(&device)) return {r, "cuCtxGetDevice"};
    if (Result r = cuDeviceGetAttribute(sms, 16, device)) return {r, "cuDeviceGetAttribute"};
    return {cuDeviceGetAttribute(khz, 13, device), "cuDeviceGetAttribute"};
  }

 protected:
  uintptr_t allocate(uintptr_t context, size_t bytes) override;
  void deallocate(uintptr_t context, uintptr_t address) noexcept override;

 private:
  DynamicLibrary library_;
  std::string backend_ = kBackend;
  std::mutex retained_mutex_;
  std::map<Device, Context> retained_;  // primary contexts device_context() retained
};

}  // namespace pyhipbench
