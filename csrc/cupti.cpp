#include "cupti.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace pyhipbench {

namespace {

constexpr const char* kEnvVar = "PYHIPBENCH_CUPTI_LIBRARY";

// The libcupti to try when none is named: the loader's search first, then the
// usual toolkit folders (libcupti is rarely on the loader's path).
std::vector<std::string> default_candidates() {
  const char* names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  std::vector<std::string> folders;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* root = std::getenv(variable);
    if (root != nullptr && root[0] != '\0') folders.push_back(std::string(root) + "/lib64");
  }
  folders.push_back("/usr/local/cuda/lib64");
  folders.push_back("/usr/local/cuda/extras/CUPTI/lib64");
  std::vector<std::string> candidates(std::begin(names), std::end(names));
  for (const std::string& folder : folders) {
    for (const char* name : names) candidates.push_back(folder + "/" + name);
  }
  return candidates;
}

// Once traced, the driver calls into libcupti (its callbacks) for the rest of
// the process: libcupti must never be unmapped, whatever closes it.
constexpr bool kStayLoaded = true;

std::unique_ptr<DynamicLibrary> open_cupti(const std::string& explicit_path) {
  const std::string chosen = choose_library(explicit_path, kEnvVar, "");
  if (!chosen.empty()) return std::make_unique<DynamicLibrary>(chosen, "CUPTI", kEnvVar, kStayLoaded);
  const std::vector<std::string> candidates = default_candidates();
  std::string first_reason;
  for (const std::string& candidate : candidates) {
    try {
      return std::make_unique<DynamicLibrary>(candidate, "CUPTI", kEnvVar, kStayLoaded);
    } catch (const LibraryError& error) {
      if (first_reason.empty()) first_reason = error.what();
    }
  }
  std::string tried;
  for (const std::string& candidate : candidates) tried += (tried.empty() ? "" : ", ") + candidate;
  throw LibraryError("cannot find libcupti (the cupti timer needs it): tried " + tried +
                     "; the first said: " + first_reason + ". Set " + kEnvVar +
                     " to libcupti's path (the CUDA toolkit's lib64, or nvidia/cu13/lib of the "
                     "nvidia-cuda-cupti wheel)");
}

// ---- activity buffers ----

constexpr size_t kBufferBytes = size_t{1} << 20;  // about 4800 CUpti_ActivityKernel10 records
constexpr size_t kRecordBytesBound = 256;         // a kernel record's size, rounded up (216 in CUPTI 13)

struct Delivered {
  uint8_t* buffer;
  size_t valid_bytes;
};

// The buffers CUPTI fills. Process-wide, like CUPTI's buffer callbacks, and
// never destroyed: CUPTI may hand a buffer back from its own thread at any
// time, at process exit included.
class BufferPool {
 public:
  // Enough free buffers for `records` records, handed out without allocating
  // while the launches are issued; buffers CUPTI returned since the last run
  // (other threads' kernels after its flush) are discarded.
  void prepare(size_t records) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Delivered& d : delivered_) free_.push_back(d.buffer);
    delivered_.clear();
    const size_t wanted = 1 + (records * kRecordBytesBound + kBufferBytes - 1) / kBufferBytes;
    while (free_.size() < wanted) {
      owned_.push_back(std::make_unique<uint8_t[]>(kBufferBytes));
      free_.push_back(owned_.back().get());
    }
    delivered_.reserve(owned_.size());
  }

  // A free buffer; a new one only if the run needs more than prepare() gave
  // (other kernels traced meanwhile). Null if memory is exhausted: CUPTI then
  // drops records and counts them, which the trace reports.
  uint8_t* take() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) {
      try {
        owned_.push_back(std::make_unique<uint8_t[]>(kBufferBytes));
        delivered_.reserve(owned_.size());
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
      return owned_.back().get();
    }
    uint8_t* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }

  void deliver(const Delivered& delivered) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    delivered_.push_back(delivered);  // capacity reserved for every owned buffer
  }

  std::vector<Delivered> take_delivered() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Delivered> out;
    out.swap(delivered_);
    delivered_.reserve(owned_.size());
    return out;
  }

  void give_back(const std::vector<Delivered>& buffers) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Delivered& d : buffers) free_.push_back(d.buffer);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_;
  std::vector<uint8_t*> free_;
  std::vector<Delivered> delivered_;
};

BufferPool& buffer_pool() {
  static BufferPool* pool = new BufferPool;  // see BufferPool: never destroyed
  return *pool;
}

std::mutex& trace_mutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}

void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = buffer_pool().take();
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

// Since CUDA 6 every buffer is global: CUPTI passes no context or stream.
void buffer_completed(cupti::Context, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  if (buffer != nullptr) buffer_pool().deliver({buffer, valid_bytes});
}

template <class T>
T read_field(const uint8_t* record, size_t offset) {
  T value;
  std::memcpy(&value, record + offset, sizeof value);
  return value;
}

std::string dims(const int32_t d[3]) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

}  // namespace

// ---- the library ----

CuptiLibrary::CuptiLibrary(const std::string& explicit_path) : library_(open_cupti(explicit_path)) {
  library_->resolve(get_version, "cuptiGetVersion");
  library_->resolve(get_result_string, "cuptiGetResultString");
  library_->resolve_optional(get_error_message, "cuptiGetErrorMessage");
  library_->resolve(subscribe, "cuptiSubscribe");
  library_->resolve(enable_callback, "cuptiEnableCallback");
  library_->resolve(unsubscribe, "cuptiUnsubscribe");
  library_->resolve(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  library_->resolve(activity_enable, "cuptiActivityEnable");
  library_->resolve(activity_disable, "cuptiActivityDisable");
  library_->resolve(activity_flush_all, "cuptiActivityFlushAll");
  library_->resolve(activity_get_next_record, "cuptiActivityGetNextRecord");
  library_->resolve(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  check("cuptiGetVersion", get_version(&version_));
  if (version_ < cupti::kMinimumVersion) {
    throw LibraryError("the CUPTI library '" + path() + "' has API version " + std::to_string(version_) +
                       ", older than " + std::to_string(cupti::kMinimumVersion) +
                       " (CUDA 12.0), the oldest the cupti timer reads; set " + kEnvVar + " to a newer libcupti");
  }
}

DriverError CuptiLibrary::error(const char* call, cupti::Result result) const {
  const char* name = nullptr;
  if (get_result_string(result, &name) != cupti::kSuccess || name == nullptr) name = "unknown CUPTI error";
  const char* message = nullptr;
  if (get_error_message == nullptr || get_error_message(result, &message) != cupti::kSuccess || message == nullptr) {
    message = name;
  }
  return DriverError(call, result, name, message);
}

void CuptiLibrary::check(const char* call, cupti::Result result) const {
  if (result != cupti::kSuccess) throw error(call, result);
}

// ---- the trace: one run's, or one measurement's ----

CuptiKernelTrace::CuptiKernelTrace(const CuptiLibrary& cupti, uintptr_t context)
    : cupti_(cupti),
      context_(reinterpret_cast<cupti::Context>(context)),
      thread_(std::this_thread::get_id()),
      one_trace_at_a_time_(trace_mutex()) {
  try {
    start();
  } catch (...) {
    stop();
    throw;
  }
}

CuptiKernelTrace::~CuptiKernelTrace() { stop(); }

void CuptiKernelTrace::start() {
  cupti_.check("cuptiActivityRegisterCallbacks",
               cupti_.activity_register_callbacks(buffer_requested, buffer_completed));
  cupti_.check("cuptiSubscribe", cupti_.subscribe(&subscriber_, on_driver_call, this));
  cupti_.check("cuptiEnableCallback",
               cupti_.enable_callback(1, subscriber_, cupti::kDomainDriverApi, cupti::kCallbackCuLaunchKernel));
  dropped_records();  // reads and so resets the counts left from before this run
  // CONCURRENT_KERNEL, not KERNEL: KERNEL serialises every kernel in the
  // process, changing how other streams' work runs while the timer is on.
  cupti_.check("cuptiActivityEnable", cupti_.activity_enable(cupti::kKindConcurrentKernel));
  activity_enabled_ = true;
}

void CuptiKernelTrace::stop() noexcept {
  if (activity_enabled_) cupti_.activity_disable(cupti::kKindConcurrentKernel);
  activity_enabled_ = false;
  if (subscriber_ != nullptr) cupti_.unsubscribe(subscriber_);
  subscriber_ = nullptr;
}

// Runs inside each driver call the trace subscribed to (cuLaunchKernel), on
// the calling thread: records the correlation id CUPTI gives the kernel's
// activity record. Launches by other threads, of other functions, or that
// failed are not this run's.
void CuptiKernelTrace::on_driver_call(void* userdata, int domain, uint32_t callback_id, const void* data) {
  auto* trace = static_cast<CuptiKernelTrace*>(userdata);
  const auto* call = static_cast<const cupti::CallbackData*>(data);
  if (domain != cupti::kDomainDriverApi || callback_id != cupti::kCallbackCuLaunchKernel ||
      call->callback_site != cupti::kApiExit || std::this_thread::get_id() != trace->thread_) {
    return;
  }
  uintptr_t function;  // cuLaunchKernel_params begins with the CUfunction
  std::memcpy(&function, call->function_params, sizeof function);
  int status;
  std::memcpy(&status, call->function_return_value, sizeof status);
  if (function != trace->function_ || status != 0) return;
  if (trace->seen_ < trace->correlation_ids_.size()) trace->correlation_ids_[trace->seen_] = call->correlation_id;
  ++trace->seen_;
}

// CUPTI counts records it had no buffer for in the global queue (context
// null) and, in older versions, the context's queue: both are read.
size_t CuptiKernelTrace::dropped_records() {
  size_t total = 0;
  for (cupti::Context context : {context_, cupti::Context{nullptr}}) {
    size_t dropped = 0;
    cupti_.check("cuptiActivityGetNumDroppedRecords", cupti_.activity_get_num_dropped_records(context, 0, &dropped));
    total += dropped;
  }
  return total;
}

void CuptiKernelTrace::expect(uintptr_t function, size_t launches, size_t other_records) {
  buffer_pool().prepare(launches + other_records);
  function_ = function;
  correlation_ids_.assign(launches, 0);
  seen_ = 0;
}

// Each launch's record, as the flushes deliver them.
struct KernelArrivals {
  explicit KernelArrivals(const std::vector<uint32_t>& correlation_ids)
      : by_id(correlation_ids.size()),
        start(correlation_ids.size(), 0),
        end(correlation_ids.size(), 0),
        found(correlation_ids.size(), false) {
    for (size_t k = 0; k < correlation_ids.size(); ++k) by_id[k] = {correlation_ids[k], k};
    std::sort(by_id.begin(), by_id.end());
  }
  std::vector<std::pair<uint32_t, size_t>> by_id;  // (correlation id, launch index), sorted
  std::vector<uint64_t> start, end;                // ns, GPU clock
  std::vector<bool> found;
  size_t count = 0;
};

void CuptiKernelTrace::collect(const LaunchConfig& config, const std::string& kernel,
                               std::vector<double>& durations_us) {
  const size_t launches = correlation_ids_.size();
  const std::string which = "kernel '" + kernel + "'";
  if (seen_ != launches) {
    throw MeasurementError("CUPTI saw " + std::to_string(seen_) + " launches of " + which + " where " +
                           std::to_string(launches) + " were made: the trace cannot tell them apart");
  }
  // The host has waited for the last kernel, so its records are complete: a
  // default flush, which hands over only buffers of complete records, should
  // bring them all. It is tried first because a forced flush makes CUPTI
  // re-arm its device buffer on the next launch, ~200 µs on the H200 against
  // ~40 µs (docs/measurement.md); a forced flush follows only if a record is
  // still missing.
  KernelArrivals arrivals(correlation_ids_);
  cupti_.check("cuptiActivityFlushAll", cupti_.activity_flush_all(0));
  read_records(config, which, arrivals);
  if (arrivals.count != launches) {
    cupti_.check("cuptiActivityFlushAll", cupti_.activity_flush_all(cupti::kFlushForced));
    read_records(config, which, arrivals);
  }
  const size_t dropped = dropped_records();
  if (dropped != 0) {
    throw MeasurementError("CUPTI dropped " + std::to_string(dropped) + " activity records while timing " + which +
                           " (no activity buffer was free): the run has no time for some launches");
  }
  durations_us.resize(launches);
  for (size_t k = 0; k < launches; ++k) {
    if (!arrivals.found[k]) {
      throw MeasurementError("CUPTI delivered no kernel record for launch " + std::to_string(k) + " of " +
                             std::to_string(launches) + " of " + which + " (correlation id " +
                             std::to_string(correlation_ids_[k]) + ")");
    }
    const uint64_t start = arrivals.start[k], end = arrivals.end[k];
    if (start == 0 || end < start) {
      throw MeasurementError("CUPTI recorded no valid time for launch " + std::to_string(k) + " of " + which +
                             " (start " + std::to_string(start) + " ns, end " + std::to_string(end) +
                             " ns; CUPTI writes 0 when it lacked device memory for timestamps)");
    }
    durations_us[k] = static_cast<double>(end - start) / 1000.0;
  }
}

void CuptiKernelTrace::finish() {
  activity_enabled_ = false;
  const cupti::Result disabled = cupti_.activity_disable(cupti::kKindConcurrentKernel);
  const cupti::Subscriber subscriber = std::exchange(subscriber_, nullptr);
  const cupti::Result unsubscribed = cupti_.unsubscribe(subscriber);
  cupti_.check("cuptiActivityDisable", disabled);
  cupti_.check("cuptiUnsubscribe", unsubscribed);
}

// Reads the buffers CUPTI delivered since the last read into `arrivals`,
// stepping over other launches' records.
void CuptiKernelTrace::read_records(const LaunchConfig& config, const std::string& which, KernelArrivals& arrivals) {
  const std::vector<Delivered> delivered = buffer_pool().take_delivered();
  struct GiveBack {
    const std::vector<Delivered>& buffers;
    ~GiveBack() { buffer_pool().give_back(buffers); }
  } give_back{delivered};

  const int32_t grid[3] = {static_cast<int32_t>(config.grid[0]), static_cast<int32_t>(config.grid[1]),
                           static_cast<int32_t>(config.grid[2])};
  const int32_t block[3] = {static_cast<int32_t>(config.block[0]), static_cast<int32_t>(config.block[1]),
                            static_cast<int32_t>(config.block[2])};
  for (const Delivered& d : delivered) {
    void* record = nullptr;
    for (;;) {
      const cupti::Result result = cupti_.activity_get_next_record(d.buffer, d.valid_bytes, &record);
      if (result == cupti::kMaxLimitReached) break;
      if (result == cupti::kInvalidKind) {
        throw MeasurementError("CUPTI delivered an incomplete activity record while timing " + which +
                               " (the buffer was flushed before its kernel finished)");
      }
      cupti_.check("cuptiActivityGetNextRecord", result);
      const auto* bytes = static_cast<const uint8_t*>(record);
      const auto kind = read_field<uint32_t>(bytes, cupti::kernel_record::kKind);
      if (kind != cupti::kKindConcurrentKernel && kind != cupti::kKindKernel) continue;
      const auto id = read_field<uint32_t>(bytes, cupti::kernel_record::kCorrelationId);
      const auto at = std::lower_bound(arrivals.by_id.begin(), arrivals.by_id.end(), std::make_pair(id, size_t{0}));
      if (at == arrivals.by_id.end() || at->first != id) continue;  // another launch's kernel
      const size_t k = at->second;
      if (arrivals.found[k]) {
        throw MeasurementError("CUPTI delivered two kernel records for launch " + std::to_string(k) + " of " + which +
                               " (correlation id " + std::to_string(id) + ")");
      }
      int32_t record_grid[3], record_block[3];
      std::memcpy(record_grid, bytes + cupti::kernel_record::kGrid, sizeof record_grid);
      std::memcpy(record_block, bytes + cupti::kernel_record::kBlock, sizeof record_block);
      if (!std::equal(grid, grid + 3, record_grid) || !std::equal(block, block + 3, record_block)) {
        throw MeasurementError("the kernel record correlated to launch " + std::to_string(k) + " of " + which +
                               " has grid " + dims(record_grid) + " and block " + dims(record_block) +
                               ", the launch had grid " + dims(grid) + " and block " + dims(block) +
                               ": the correlation is wrong");
      }
      arrivals.found[k] = true;
      ++arrivals.count;
      arrivals.start[k] = read_field<uint64_t>(bytes, cupti::kernel_record::kStart);
      arrivals.end[k] = read_field<uint64_t>(bytes, cupti::kernel_record::kEnd);
    }
  }
}

}  // namespace pyhipbench
