// CUPTI (libcupti), loaded at run time, and one run's kernel activity trace.
//
// The cupti timer reads each kernel's start and end on the GPU from CUPTI's
// kernel activity records. libcupti is dlopen'ed like the drivers, so the core
// builds with no CUDA SDK: the few CUPTI types it uses are declared here, and
// tests/cpp/cupti_layout.cpp checks them against cupti_activity.h where a CUDA
// toolkit is installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dynamic_library.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"

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
constexpr int kKindKernel = 3;                     // CUPTI_ACTIVITY_KIND_KERNEL
constexpr int kKindConcurrentKernel = 10;          // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr int kDomainDriverApi = 1;                // CUPTI_CB_DOMAIN_DRIVER_API
constexpr uint32_t kCallbackCuLaunchKernel = 307;  // CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
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
constexpr size_t kEndOfFields = 96;    // every record is at least this long
}  // namespace kernel_record

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
  cupti::Result (*unsubscribe)(cupti::Subscriber);
  cupti::Result (*activity_register_callbacks)(cupti::BufferRequested, cupti::BufferCompleted);
  cupti::Result (*activity_enable)(int);
  cupti::Result (*activity_disable)(int);
  cupti::Result (*activity_flush_all)(uint32_t);
  cupti::Result (*activity_get_next_record)(uint8_t*, size_t, void**);
  cupti::Result (*activity_get_num_dropped_records)(cupti::Context, uint32_t, size_t*);

 private:
  std::unique_ptr<DynamicLibrary> library_;
  uint32_t version_ = 0;
};

struct KernelArrivals;  // cupti.cpp: the records read so far, by launch

// Kernel activity tracing, for one run of launches or for the chunks of one
// measurement. The constructor starts tracing: it hands CUPTI the buffer
// callbacks, subscribes to cuLaunchKernel (to learn each launch's correlation
// id) and enables CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL. Each chunk is then
// expect() before its launches and collect() after them, which only flushes
// and reads: the launches of the expected function that the constructing
// thread makes in between are that chunk's records, in order.
//
// One trace at a time per process (CUPTI's buffer callbacks are global): a
// second trace waits for the first to end. finish() stops tracing, reporting
// a failure; the destructor stops it if finish() did not (an error path), so
// CUPTI never outlives a run or a measurement.
class CuptiKernelTrace {
 public:
  // `context`: the CUcontext the launches run in (where CUPTI counts dropped records).
  CuptiKernelTrace(const CuptiLibrary& cupti, uintptr_t context);
  ~CuptiKernelTrace();
  CuptiKernelTrace(const CuptiKernelTrace&) = delete;
  CuptiKernelTrace& operator=(const CuptiKernelTrace&) = delete;

  // Before a chunk: the next `launches` launches of `function` from the
  // constructing thread are the chunk's. `other_records`: kernels of other
  // functions it launches too (a clean step), whose records also need buffer space.
  void expect(uintptr_t function, size_t launches, size_t other_records = 0);

  // Call once the chunk's launches have completed on the GPU. Flushes CUPTI
  // and writes each launch's kernel duration (end - start, µs) into
  // `durations_us`, in launch order. Throws MeasurementError if a launch has
  // no record, CUPTI dropped records or lacked timestamps, or a record's grid
  // and block differ from `config` (a record correlated to the wrong launch).
  void collect(const LaunchConfig& config, const std::string& kernel, std::vector<double>& durations_us);

  // Stops tracing; throws DriverError if CUPTI fails to (tracing is off all the same).
  void finish();

 private:
  static void on_driver_call(void* userdata, int domain, uint32_t callback_id, const void* data);
  void start();
  void stop() noexcept;
  size_t dropped_records();
  void read_records(const LaunchConfig& config, const std::string& which, KernelArrivals& arrivals);

  const CuptiLibrary& cupti_;
  cupti::Context context_;
  const std::thread::id thread_;  // the launching thread
  std::unique_lock<std::mutex> one_trace_at_a_time_;
  uintptr_t function_ = 0;                 // the expected launches' function
  std::vector<uint32_t> correlation_ids_;  // launch k's correlation id, written by the callback
  size_t seen_ = 0;                        // launches of function_ seen by the callback
  cupti::Subscriber subscriber_ = nullptr;
  bool activity_enabled_ = false;
};

}  // namespace pyhipbench
