// The HIP runtime (libamdhip64): every entry point the core calls, resolved at
// run time, and the one path that turns a failed call into a DriverError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dynamic_library.hpp"
#include "pyhipbench/driver.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "status.hpp"

namespace pyhipbench {

class HipDriver final : public Driver {
 public:
  // Handle types as hip_runtime_api.h declares them: opaque pointers.
  // hipError_t is an enum (int-sized); 0 is hipSuccess. A context is a device ordinal.
  using Result = int;
  using Context = int;
  using Function = struct ihipModuleSymbol_t*;
  using Stream = struct ihipStream_t*;
  using Event = struct ihipEvent_t*;
  using Graph = struct ihipGraph*;
  using GraphExec = struct hipGraphExec*;
  using GraphNode = struct hipGraphNode*;
  using Module = struct ihipModule_t*;

  static constexpr const char* kBackend = "hip";

  explicit HipDriver(const std::string& library_path);

  const std::string& backend() const override { return backend_; }
  const std::string& library_path() const override { return library_.path(); }

  uintptr_t device_context(int ordinal) override;
  std::unique_ptr<pyhipbench::Module> load_module(uintptr_t context, const std::string& image) override;
  void copy(uintptr_t context, uintptr_t destination, uintptr_t source, size_t bytes) override;
  void copy_from_host(uintptr_t context, uintptr_t destination, const void* source, size_t bytes) override;
  MemoryInfo memory_info(uintptr_t context) override;
  uint64_t l2_cache_bytes(uintptr_t context) override;

  // Throws the DriverError describing `status` unless it is hipSuccess.
  void check(const char* call, Result status) const {
    if (status != 0) throw error(call, status);
  }
  DriverError error(const char* call, Result status) const;

  // hipErrorIllegalAddress, hipErrorLaunchTimeOut, hipErrorAssert,
  // hipErrorLaunchFailure. On ROCm a GPU memory fault usually aborts the
  // process (HSA's default) before any of these reaches the caller.
  static bool is_kernel_fault(Result code) { return code == 700 || code == 702 || code == 710 || code == 719; }

  // A device ordinal from the caller.
  static Context context(uintptr_t device);

  // hipExtModuleLaunchKernel takes global work sizes (grid x block) as 32-bit values.
  static LaunchLimits limits();
  void check_plan(const LaunchPlan& plan) const {
    static const LaunchLimits kLimits = limits();
    for (size_t k = 0; k < plan.kernels(); ++k) check_launch_limits(kLimits, plan.kernel(k).config());
  }

  // One launch of `kernel` with `args` on `stream`; hipExtModuleLaunchKernel
  // records the two events (if given) around exactly this dispatch (a chain
  // gives the start event to its first kernel and the stop event to its
  // last). Its sizes are global work sizes (threads), not block counts;
  // check_plan() has made sure grid x block fits in 32 bits.
  Status launch(const KernelLaunch& kernel, void** args, Stream stream, Event start, Event stop) const {
    const LaunchConfig& c = kernel.config();
    const Result r = hipExtModuleLaunchKernel(reinterpret_cast<Function>(kernel.function()), c.grid[0] * c.block[0],
                                              c.grid[1] * c.block[1], c.grid[2] * c.block[2], c.block[0], c.block[1],
                                              c.block[2], c.shared_bytes, stream, args, nullptr, start, stop, 0);
    return {r, "hipExtModuleLaunchKernel"};
  }

  // A reset step's work for argument set `set`, queued on `stream`.
  Status reset(const ResetStep& step, size_t set, Stream stream) const {
    void* destination = reinterpret_cast<void*>(step.destinations[set]);
    if (step.source == 0) return {hipMemsetAsync(destination, 0, step.bytes, stream), "hipMemsetAsync"};
    return {hipMemcpyDtoDAsync(destination, reinterpret_cast<void*>(step.source), step.bytes, stream),
            "hipMemcpyDtoDAsync"};
  }

  // Makes a device current for a scope and restores the caller's after
  // (HIP's current device is per thread: hipGetDevice, hipSetDevice).
  class CurrentContext {
   public:
    CurrentContext(const HipDriver& driver, Context device) : driver_(driver) {
      driver.check("hipGetDevice", driver.hipGetDevice(&previous_));
      driver.check("hipSetDevice", driver.hipSetDevice(device));
    }
    ~CurrentContext() { driver_.hipSetDevice(previous_); }
    CurrentContext(const CurrentContext&) = delete;
    CurrentContext& operator=(const CurrentContext&) = delete;

   private:
    const HipDriver& driver_;
    int previous_ = 0;
  };

  // ---- the entry points (hip_runtime_api.h signatures, handle types as above) ----
  Result (*hipExtModuleLaunchKernel)(Function, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, size_t,
                                     Stream, void**, void**, Event start, Event stop, uint32_t flags);
  Result (*hipEventCreate)(Event*);
  Result (*hipEventRecord)(Event, Stream);
  Result (*hipEventSynchronize)(Event);
  Result (*hipEventQuery)(Event);
  Result (*hipEventElapsedTime)(float* ms, Event start, Event stop);
  Result (*hipEventDestroy)(Event);
  Result (*hipGetDevice)(int*);
  Result (*hipSetDevice)(int);
  const char* (*hipGetErrorName)(Result);
  const char* (*hipGetErrorString)(Result);
  Result (*hipStreamCreateWithFlags)(Stream*, unsigned flags);
  Result (*hipStreamDestroy)(Stream);
  Result (*hipStreamBeginCapture)(Stream, int mode);
  Result (*hipStreamEndCapture)(Stream, Graph*);
  Result (*hipGraphInstantiate)(GraphExec*, Graph, GraphNode* error_node, char* log, size_t log_bytes);
  Result (*hipGraphLaunch)(GraphExec, Stream);
  Result (*hipGraphExecDestroy)(GraphExec);
  Result (*hipGraphDestroy)(Graph);
  Result (*hipHostMalloc)(void** host, size_t bytes, unsigned flags);
  Result (*hipHostGetDevicePointer)(void** device, void* host, unsigned flags);
  Result (*hipHostFree)(void* host);
  Result (*hipGetDeviceCount)(int*);
  Result (*hipDeviceSynchronize)();
  Result (*hipMalloc)(void** device, size_t bytes);
  Result (*hipFree)(void* device);
  Result (*hipMemcpyDtoD)(void* destination, void* source, size_t bytes);
  Result (*hipMemcpyHtoD)(void* destination, const void* source, size_t bytes);
  Result (*hipMemsetAsync)(void* destination, int value, size_t bytes, Stream);
  Result (*hipMemcpyDtoDAsync)(void* destination, void* source, size_t bytes, Stream);
  Result (*hipMemGetInfo)(size_t* free_bytes, size_t* total_bytes);
  Result (*hipDeviceGetAttribute)(int* value, int attribute, int device);
  Result (*hipModuleLoadData)(Module*, const void* image);
  Result (*hipModuleGetFunction)(Function*, Module, const char* name);
  Result (*hipModuleUnload)(Module);

  // Names of the calls the timers make through the generic event interface.
  static constexpr const char* kEventCreate = "hipEventCreate";
  static constexpr const char* kEventRecord = "hipEventRecord";
  static constexpr const char* kEventSynchronize = "hipEventSynchronize";
  static constexpr const char* kEventElapsedTime = "hipEventElapsedTime";
  Result event_create(Event* event) const { return hipEventCreate(event); }
  Result event_destroy(Event event) const { return hipEventDestroy(event); }
  Result event_record(Event event, Stream stream) const { return hipEventRecord(event, stream); }
  Result event_synchronize(Event event) const { return hipEventSynchronize(event); }
  // Whether `event` has completed: 0, kNotReady while the work before it runs, or an error.
  Result event_query(Event event) const { return hipEventQuery(event); }
  static constexpr Result kNotReady = 600;  // hipErrorNotReady
  Result elapsed_ms(float* ms, Event start, Event stop) const { return hipEventElapsedTime(ms, start, stop); }

  // Graphs, built by stream capture. hipStreamNonBlocking (1): the capture
  // stream never waits on, nor joins, the null stream;
  // hipStreamCaptureModeThreadLocal (1): only this thread's calls are
  // checked for capture safety, so other threads may allocate meanwhile.
  Status capture_stream_create(Stream* stream) const {
    return {hipStreamCreateWithFlags(stream, 1), "hipStreamCreateWithFlags"};
  }
  Status stream_destroy(Stream stream) const { return {hipStreamDestroy(stream), "hipStreamDestroy"}; }
  Status begin_capture(Stream stream) const { return {hipStreamBeginCapture(stream, 1), "hipStreamBeginCapture"}; }
  Status end_capture(Stream stream, Graph* graph) const {
    return {hipStreamEndCapture(stream, graph), "hipStreamEndCapture"};
  }
  Status graph_instantiate(GraphExec* exec, Graph graph) const {
    return {hipGraphInstantiate(exec, graph, nullptr, nullptr, 0), "hipGraphInstantiate"};
  }
  Status graph_launch(GraphExec exec, Stream stream) const { return {hipGraphLaunch(exec, stream), "hipGraphLaunch"}; }
  Status graph_exec_destroy(GraphExec exec) const { return {hipGraphExecDestroy(exec), "hipGraphExecDestroy"}; }
  Status graph_destroy(Graph graph) const { return {hipGraphDestroy(graph), "hipGraphDestroy"}; }

  // Pinned host memory mapped into the device's address space
  // (hipHostMallocMapped), and the address kernels use for it.
  Status host_alloc_mapped(void** host, size_t bytes) const {
    return {hipHostMalloc(host, bytes, 0x2), "hipHostMalloc"};
  }
  Status host_device_pointer(void** device, void* host) const {
    return {hipHostGetDevicePointer(device, host, 0), "hipHostGetDevicePointer"};
  }
  Status host_free(void* host) const { return {hipHostFree(host), "hipHostFree"}; }

  // No embedded spin kernel: an AMD code object is per processor, so the
  // caller compiles one for its device (pyhipbench/kernels/amdgpu.ll, `spin`)
  // and passes its function handle.
  static constexpr bool kEmbedsSpinKernel = false;
  // No clock probe on AMD yet (csrc/timers/clock_probe.hpp): runs report no clock.
  static constexpr bool kEmbedsClockProbe = false;

  // One work-item of `function` with `params` on `stream`.
  Status launch_single(Function function, void** params, Stream stream) const {
    return {hipExtModuleLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr, nullptr, nullptr, 0),
            "hipExtModuleLaunchKernel"};
  }

 protected:
  uintptr_t allocate(uintptr_t context, size_t bytes) override;
  void deallocate(uintptr_t context, uintptr_t address) noexcept override;

 private:
  DynamicLibrary library_;
  std::string backend_ = kBackend;
};

}  // namespace pyhipbench
