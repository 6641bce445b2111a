// CUPTI (libcupti), loaded at run time, and one run's kernel activity trace.
//
// The cupti timer reads each kernel's start and end on the GPU from CUPTI's
// kernel activity records. libcupti is dlopen'ed like the drivers, so the core
// builds with no CUDA SDK: the few CUPTI types it uses are declared here, and
// tests/cpp/cupti_layout.cpp checks them against cupti_activity.h where a CUDA
// toolkit is installed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dynamic_library.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/timer.hpp"

namespace pyhipbench {

namespace cupti {

using Result = int;        // CUptiResult
using Context = void*;     // CUcontext
using Subscriber = void*;  // CUpti_SubscriberHandle
using CallbackFunction = void (*)(void* userdata, int domain, uint32_t callback_id, const void* data);
using BufferRequested = void (*)(uint8_t** buffer, size_t* size, size_t* max_records);
using BufferCompleted = void (*)(Context context, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid_size);

constexpr Result kSuccess = 0;
constexpr Result kMaxLimitReached = 12;            // cuptiActivityGetNextRecord: no more records
constexpr Result kInvalidKind = 21;                // cuptiActivityGetNextRecord: incomplete record
constexpr Result kMultipleSubscribers = 39;        // cuptiSubscribe: another client (a profiler) subscribed
constexpr int kKindKernel = 3;                     // CUPTI_ACTIVITY_KIND_KERNEL
constexpr int kKindConcurrentKernel = 10;          // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr int kKindMemcpy = 1;                     // CUPTI_ACTIVITY_KIND_MEMCPY
constexpr int kKindMemset = 2;                     // CUPTI_ACTIVITY_KIND_MEMSET
constexpr int kKindDriver = 4;                     // CUPTI_ACTIVITY_KIND_DRIVER
constexpr int kKindRuntime = 5;                    // CUPTI_ACTIVITY_KIND_RUNTIME
constexpr int kKindExternalCorrelation = 39;       // CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION
constexpr int kExternalKindCustom2 = 5;            // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 (Kineto: CUSTOM0, 1)
constexpr int kDomainDriverApi = 1;                // CUPTI_CB_DOMAIN_DRIVER_API
constexpr int kDomainRuntimeApi = 2;               // CUPTI_CB_DOMAIN_RUNTIME_API
constexpr uint32_t kCallbackCuLaunchKernel = 307;  // CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
constexpr uint32_t kCallbackCuGraphLaunch = 514;   // CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
constexpr int kApiEnter = 0;                       // CUPTI_API_ENTER
constexpr int kApiExit = 1;                        // CUPTI_API_EXIT
constexpr uint32_t kFlushForced = 1;               // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED

// CUPTI 12.0 (API version 19) is the oldest this was checked against; from 13.0
// on the version reads xxyyzz (130000 = 13.0).
constexpr uint32_t kMinimumVersion = 19;

// Where a kernel record (CUpti_ActivityKernel4 ... CUpti_ActivityKernel10, CUDA 9
// to 13) holds the fields the timer reads. Each version appended fields at the
// end; these offsets are the same in all of them, so the timer reads the
// records of any supported libcupti without knowing which struct it writes.
namespace kernel_record {
constexpr size_t kKind = 0;            // uint32_t CUpti_ActivityKind
constexpr size_t kStart = 16;          // uint64_t, ns
constexpr size_t kEnd = 24;            // uint64_t, ns
constexpr size_t kStreamId = 48;       // uint32_t
constexpr size_t kGrid = 52;           // int32_t[3]
constexpr size_t kBlock = 64;          // int32_t[3]
constexpr size_t kCorrelationId = 92;  // uint32_t, the launch's driver API call
constexpr size_t kName = 104;          // const char*, owned by CUPTI
constexpr size_t kEndOfFields = 112;   // every record is at least this long
}  // namespace kernel_record

// Where a memcpy or memset record (CUpti_ActivityMemcpy5/6, CUpti_ActivityMemset3/4:
// CUDA 11 to 13) holds the fields a call's trace reads; the same in both kinds.
namespace copy_record {
constexpr size_t kCopyKind = 4;        // uint8_t CUpti_ActivityMemcpyKind (memcpy only)
constexpr size_t kBytes = 8;           // uint64_t
constexpr size_t kStart = 16;          // uint64_t, ns
constexpr size_t kEnd = 24;            // uint64_t, ns
constexpr size_t kCorrelationId = 44;  // uint32_t, the API call that issued it
constexpr size_t kEndOfFields = 48;
}  // namespace copy_record

// Where a driver or runtime API record (CUpti_ActivityAPI) holds the fields read.
namespace api_record {
constexpr size_t kCallbackId = 4;      // uint32_t, CUPTI_DRIVER_TRACE_CBID_* (cuLaunchKernel: 307)
constexpr size_t kCorrelationId = 32;  // uint32_t
constexpr size_t kReturnValue = 36;    // uint32_t, the call's CUresult / cudaError_t
constexpr size_t kEndOfFields = 40;
}  // namespace api_record

// Where an external correlation record (CUpti_ActivityExternalCorrelation)
// holds its fields: the API call `kCorrelationId` was made while `kExternalId`
// of kind `kExternalKind` was pushed on its thread.
namespace external_record {
constexpr size_t kExternalKind = 4;    // uint32_t CUpti_ExternalCorrelationKind
constexpr size_t kExternalId = 8;      // uint64_t
constexpr size_t kCorrelationId = 16;  // uint32_t
constexpr size_t kEndOfFields = 24;
}  // namespace external_record

// CUpti_CallbackData, what a driver API callback receives (the fields up to
// correlationId, which has been there since CUPTI 4.1).
struct CallbackData {
  int callback_site;  // CUPTI_API_ENTER / CUPTI_API_EXIT
  const char* function_name;
  const void* function_params;  // for cuLaunchKernel: cuLaunchKernel_params, CUfunction first
  void* function_return_value;  // CUresult*, valid at exit
  const char* symbol_name;
  Context context;
  uint32_t context_uid;
  uint64_t* correlation_data;
  uint32_t correlation_id;
};

}  // namespace cupti

// The libcupti entry points the cupti timer calls, and their one error path.
class CuptiLibrary {
 public:
  // `explicit_path` empty: $PYHIPBENCH_CUPTI_LIBRARY, else the first of libcupti.so.13,
  // libcupti.so.12, libcupti.so that loads (by the loader's search, then under
  // $CUDA_HOME and /usr/local/cuda). Throws LibraryError naming every path
  // tried, or if the library is older than CUPTI 12.0.
  explicit CuptiLibrary(const std::string& explicit_path = "");

  const std::string& path() const { return library_->path(); }
  uint32_t version() const { return version_; }

  // Throws DriverError(call, result, CUPTI's name for it, its message) unless
  // `result` is CUPTI_SUCCESS.
  void check(const char* call, cupti::Result result) const;
  DriverError error(const char* call, cupti::Result result) const;

  cupti::Result (*get_version)(uint32_t*);
  cupti::Result (*get_result_string)(cupti::Result, const char**);
  cupti::Result (*get_error_message)(cupti::Result, const char**);  // CUPTI >= 12.5; may be null
  cupti::Result (*subscribe)(cupti::Subscriber*, cupti::CallbackFunction, void*);
  cupti::Result (*enable_callback)(uint32_t, cupti::Subscriber, int, uint32_t);
  cupti::Result (*enable_domain)(uint32_t, cupti::Subscriber, int);
  cupti::Result (*unsubscribe)(cupti::Subscriber);
  cupti::Result (*activity_register_callbacks)(cupti::BufferRequested, cupti::BufferCompleted);
  cupti::Result (*activity_enable)(int);
  cupti::Result (*activity_disable)(int);
  cupti::Result (*activity_flush_all)(uint32_t);
  cupti::Result (*activity_get_next_record)(uint8_t*, size_t, void**);
  cupti::Result (*activity_get_num_dropped_records)(cupti::Context, uint32_t, size_t*);
  cupti::Result (*get_timestamp)(uint64_t* timestamp);
  cupti::Result (*push_external_id)(int kind, uint64_t id);
  cupti::Result (*pop_external_id)(int kind, uint64_t* id);

 private:
  std::unique_ptr<DynamicLibrary> library_;
  uint32_t version_ = 0;
};

// What the CUPTI buffer callbacks and subscription of a trace share: started
// by the constructor, stopped by finish() (reporting a failure) or, on an
// error path, by the destructor, so CUPTI never outlives a run or a
// measurement. One trace at a time per process (CUPTI's buffer callbacks are
// global, and it takes one subscriber): a second trace waits for the first.
//
// Where another client holds CUPTI's one callback subscription (Kineto keeps
// torch.profiler's for the rest of the process once it has profiled; nsys),
// cuptiSubscribe fails and the trace correlates by external ids instead: it
// pushes an id of its own (kind CUSTOM2, which Kineto leaves alone) on the
// tracing thread around the work it traces, and CUPTI writes, before each
// driver or runtime API record made meanwhile, a record tying the API call's
// correlation id to that id. This costs an API record per call and a forced
// flush per read; the callbacks cost nothing where they can be had. Neither
// works while the other client is collecting activity itself (its buffers are
// the process's one set): the Python layer checks for a profiler that is
// recording before it picks this timer.
class CuptiTrace {
 public:
  CuptiTrace(const CuptiTrace&) = delete;
  CuptiTrace& operator=(const CuptiTrace&) = delete;
  // Stops tracing; throws DriverError if CUPTI fails to (tracing is off all the same).
  void finish();
  // The chunk's work is all issued: by external ids, no API call is marked or recorded from here on.
  void work_issued() noexcept;

 protected:
  // `context`: the CUcontext traced (where CUPTI counts dropped records).
  // `activity_kinds`: the CUPTI_ACTIVITY_KIND_*s to enable. The subclass's
  // constructor enables its callbacks with subscriber(), then start_activity().
  CuptiTrace(const CuptiLibrary& cupti, uintptr_t context, cupti::CallbackFunction callback,
             std::vector<int> activity_kinds);
  ~CuptiTrace();
  cupti::Subscriber subscriber() const { return subscriber_; }
  // Whether the trace correlates by external ids (another client subscribed).
  bool by_external_ids() const { return by_external_ids_; }
  // `count` external ids of this trace's own, the first returned: unique in the process.
  static uint64_t new_external_ids(size_t count);
  // The external id that marks the tracing thread's API calls from now on, until pop_external_id().
  void push_external_id(uint64_t id);
  void pop_external_id();
  // By external ids: the API activity kinds (DRIVER, RUNTIME, EXTERNAL_CORRELATION) on while a chunk's
  // work is issued, and off for the wait after it: they record every API call of the process, the
  // wait's own event queries included.
  void start_api_records();
  void stop_api_records() noexcept;
  void start_activity();
  // A record's timestamp `ticks` in ns (0 stays 0: CUPTI's "no time"). CUPTI writes timestamps in the domain
  // of the timestamp callback a client registered, else in CLOCK_REALTIME ns; Kineto registers the CPU's
  // TSC (torch.profiler's default) and leaves it registered after its session, so durations read in ticks
  // would be off by the TSC's GHz. Where cuptiGetTimestamp (the records' domain) is far from
  // CLOCK_REALTIME, the ns per tick are measured against the host's clock over kCalibrationS.
  uint64_t to_ns(uint64_t ticks);
  std::pair<std::chrono::steady_clock::time_point, uint64_t> host_and_ticks() const;
  // Flushes CUPTI (a default flush, then a forced one while `complete()` says
  // records are missing; by external ids, the forced one at once: the API
  // records must come with the work records) and hands each kernel, memcpy or
  // memset record delivered to `visit(record bytes, kind)`; by external ids,
  // every API and external correlation record first, in a pass of their own.
  // Throws MeasurementError naming `which` if CUPTI dropped records or
  // delivered an incomplete one.
  template <class Visit, class Complete>
  void read(const std::string& which, Visit visit, Complete complete);

  const CuptiLibrary& cupti_;
  const std::thread::id thread_;  // the thread whose calls are traced

 private:
  void stop() noexcept;
  size_t dropped_records();
  template <class Visit>
  void read_delivered(const std::string& which, Visit& visit);

  cupti::Context context_;
  std::unique_lock<std::mutex> one_trace_at_a_time_;
  std::vector<int> activity_kinds_;
  size_t enabled_kinds_ = 0;
  cupti::Subscriber subscriber_ = nullptr;
  bool by_external_ids_ = false;
  bool pushed_ = false;      // an external id of this trace is pushed on the tracing thread
  size_t api_kinds_on_ = 0;  // of kApiKinds, the first this many enabled
  // The records' timestamp domain: ns (ns_per_tick_ 1), or ticks measured from (first_host_, first_tick_).
  static constexpr double kCalibrationS = 0.002;
  bool calibrated_ = true;
  double ns_per_tick_ = 1;
  std::chrono::steady_clock::time_point first_host_;
  uint64_t first_tick_ = 0;
};

// Kernel activity tracing of a plan's launches, for one run or for the
// chunks of one measurement: subscribes to cuLaunchKernel (to learn each
// launch's correlation id) and enables CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.
// Each chunk is expect() before its launches and collect() after them, which
// only flushes and reads: the cuLaunchKernel calls the constructing thread
// makes in between are that chunk's launches, in order.
class CuptiKernelTrace : public CuptiTrace {
 public:
  CuptiKernelTrace(const CuptiLibrary& cupti, uintptr_t context);

  // Before a chunk: the next `launches` kernel launches from the constructing thread are the chunk's.
  void expect(size_t launches);
  // The next launch from the constructing thread is not the chunk's (the clock probe's stamp after it).
  void skip_next_launch();

  // Call once the chunk's launches have completed on the GPU. Flushes CUPTI
  // and writes launch k's start and end on the GPU clock (ns) into
  // `start_ns[k]`, `end_ns[k]`. Launch k was of `cycle[k % cycle.size()]` (a
  // sample's clean step, then its chain's kernels). Throws MeasurementError if
  // a launch has no record, CUPTI dropped records or lacked timestamps, or a
  // record's grid and block differ from its launch's (a wrong correlation).
  void collect(const std::vector<const KernelLaunch*>& cycle, const std::string& which, std::vector<uint64_t>& start_ns,
               std::vector<uint64_t>& end_ns);

 private:
  static void on_driver_call(void* userdata, int domain, uint32_t callback_id, const void* data);

  // By external ids: the correlation ids of the chunk's successful cuLaunchKernel calls, from the API pass.
  void correlate(const uint8_t* record, int kind);
  void launches_correlated();

  std::vector<uint32_t> correlation_ids_;  // launch k's correlation id, written by the callback
  size_t seen_ = 0;                        // launches seen by the callback
  size_t skipped_ = 0;                     // launches still to pass uncounted (skip_next_launch)
  uint64_t chunk_id_ = 0;                  // by external ids: the chunk's id
  std::vector<uint32_t> chunk_calls_;      // by external ids: the API calls made under chunk_id_
  std::vector<uint32_t> launch_calls_;     // by external ids: the successful cuLaunchKernel calls seen
};

// Tracing of calls: every kernel, memcpy and memset issued by a driver or
// runtime API call the constructing thread makes while a call is open()
// belongs to that call, by CUPTI's correlation ids (the API call's id is the
// id of the records of the work it issued), whichever library made the API
// call. Subscribes to the driver and runtime API domains (or, for calls that
// only launch a graph, to cuGraphLaunch alone: fewer callbacks per sample)
// and enables CONCURRENT_KERNEL, MEMCPY and MEMSET activity.
class CuptiCallTrace : public CuptiTrace {
 public:
  CuptiCallTrace(const CuptiLibrary& cupti, uintptr_t context, bool graph_launch_only);
  bool graph_launch_only() const { return graph_launch_only_; }

  void expect(size_t calls);  // before a chunk of `calls` calls
  void open(size_t call);
  void close();
  // Once the chunk's work has completed on the GPU: each call's activities, in
  // the order of their start, call by call.
  std::vector<Activity> collect(const std::string& which);

 private:
  static void on_api_call(void* userdata, int domain, uint32_t callback_id, const void* data);
  static constexpr size_t kNoCall = SIZE_MAX;

  const bool graph_launch_only_;
  size_t open_call_ = kNoCall;
  size_t calls_ = 0;            // the chunk's calls (expect)
  uint64_t first_call_id_ = 0;  // by external ids: call i of the chunk is marked first_call_id_ + i
  std::vector<std::pair<uint32_t, size_t>> correlation_calls_;  // (API call's correlation id, call)
};

}  // namespace pyhipbench
