#include "cupti.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <tuple>
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
  library_->resolve(enable_domain, "cuptiEnableDomain");
  library_->resolve(unsubscribe, "cuptiUnsubscribe");
  library_->resolve(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  library_->resolve(activity_enable, "cuptiActivityEnable");
  library_->resolve(activity_disable, "cuptiActivityDisable");
  library_->resolve(activity_flush_all, "cuptiActivityFlushAll");
  library_->resolve(activity_get_next_record, "cuptiActivityGetNextRecord");
  library_->resolve(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  library_->resolve(get_timestamp, "cuptiGetTimestamp");
  library_->resolve(push_external_id, "cuptiActivityPushExternalCorrelationId");
  library_->resolve(pop_external_id, "cuptiActivityPopExternalCorrelationId");
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

// ---- what every trace shares ----

CuptiTrace::CuptiTrace(const CuptiLibrary& cupti, uintptr_t context, cupti::CallbackFunction callback,
                       std::vector<int> activity_kinds)
    : cupti_(cupti),
      thread_(std::this_thread::get_id()),
      context_(reinterpret_cast<cupti::Context>(context)),
      one_trace_at_a_time_(trace_mutex()),
      activity_kinds_(std::move(activity_kinds)) {
  try {
    cupti_.check("cuptiActivityRegisterCallbacks",
                 cupti_.activity_register_callbacks(buffer_requested, buffer_completed));
    uint64_t now_ticks = 0;
    cupti_.check("cuptiGetTimestamp", cupti_.get_timestamp(&now_ticks));
    const auto realtime_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (std::llabs(static_cast<long long>(now_ticks) - static_cast<long long>(realtime_ns)) > 1'000'000'000) {
      calibrated_ = false;  // not CLOCK_REALTIME ns: another client's timestamp callback
      std::tie(first_host_, first_tick_) = host_and_ticks();
    }
    const cupti::Result subscribed = cupti_.subscribe(&subscriber_, callback, this);
    if (subscribed == cupti::kMultipleSubscribers) {
      subscriber_ = nullptr;
      by_external_ids_ = true;
    } else {
      cupti_.check("cuptiSubscribe", subscribed);
    }
  } catch (...) {
    stop();
    throw;
  }
}

// cuptiGetTimestamp and the host's clock at one instant: of kBrackets host reads around it, the pair
// closest together (a thread descheduled between two reads only widens a pair), its midpoint.
std::pair<std::chrono::steady_clock::time_point, uint64_t> CuptiTrace::host_and_ticks() const {
  constexpr int kBrackets = 5;
  auto best_width = std::chrono::steady_clock::duration::max();
  std::pair<std::chrono::steady_clock::time_point, uint64_t> best;
  for (int i = 0; i < kBrackets; ++i) {
    uint64_t ticks = 0;
    const auto before = std::chrono::steady_clock::now();
    cupti_.check("cuptiGetTimestamp", cupti_.get_timestamp(&ticks));
    const auto after = std::chrono::steady_clock::now();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ticks};
    }
  }
  return best;
}

uint64_t CuptiTrace::to_ns(uint64_t ticks) {
  if (ticks == 0 || (calibrated_ && ns_per_tick_ == 1)) return ticks;
  if (!calibrated_) {
    std::this_thread::sleep_until(first_host_ + std::chrono::duration<double>(kCalibrationS));
    const auto [host, now_ticks] = host_and_ticks();
    ns_per_tick_ = std::chrono::duration<double, std::nano>(host - first_host_).count() /
                   static_cast<double>(now_ticks - first_tick_);
    calibrated_ = true;
  }
  // From the first tick, where a double holds the difference exactly.
  const auto since_first = static_cast<double>(static_cast<int64_t>(ticks - first_tick_));
  return first_tick_ + static_cast<uint64_t>(std::llround(since_first * ns_per_tick_));
}

uint64_t CuptiTrace::new_external_ids(size_t count) {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(count);
}

void CuptiTrace::push_external_id(uint64_t id) {
  pop_external_id();
  cupti_.check("cuptiActivityPushExternalCorrelationId", cupti_.push_external_id(cupti::kExternalKindCustom2, id));
  pushed_ = true;
}

namespace {
constexpr int kApiKinds[] = {cupti::kKindDriver, cupti::kKindRuntime, cupti::kKindExternalCorrelation};
}  // namespace

void CuptiTrace::start_api_records() {
  for (; api_kinds_on_ < std::size(kApiKinds); ++api_kinds_on_) {
    cupti_.check("cuptiActivityEnable", cupti_.activity_enable(kApiKinds[api_kinds_on_]));
  }
}

void CuptiTrace::stop_api_records() noexcept {
  for (; api_kinds_on_ > 0; --api_kinds_on_) cupti_.activity_disable(kApiKinds[api_kinds_on_ - 1]);
}

void CuptiTrace::work_issued() noexcept {
  pop_external_id();
  stop_api_records();
}

void CuptiTrace::pop_external_id() {
  if (!pushed_) return;
  uint64_t id = 0;
  cupti_.pop_external_id(cupti::kExternalKindCustom2, &id);  // only fails for a kind with nothing pushed
  pushed_ = false;
}

void CuptiTrace::start_activity() {
  dropped_records();  // reads and so resets the counts left from before this trace
  // CONCURRENT_KERNEL, not KERNEL: KERNEL serialises every kernel in the
  // process, changing how other streams' work runs while the timer is on.
  for (int kind : activity_kinds_) {
    cupti_.check("cuptiActivityEnable", cupti_.activity_enable(kind));
    ++enabled_kinds_;
  }
}

CuptiTrace::~CuptiTrace() { stop(); }

void CuptiTrace::stop() noexcept {
  work_issued();
  for (; enabled_kinds_ > 0; --enabled_kinds_) cupti_.activity_disable(activity_kinds_[enabled_kinds_ - 1]);
  if (subscriber_ != nullptr) cupti_.unsubscribe(subscriber_);
  subscriber_ = nullptr;
}

void CuptiTrace::finish() {
  work_issued();
  cupti::Result disabled = cupti::kSuccess;
  for (; enabled_kinds_ > 0; --enabled_kinds_) {
    const cupti::Result r = cupti_.activity_disable(activity_kinds_[enabled_kinds_ - 1]);
    if (disabled == cupti::kSuccess) disabled = r;
  }
  const cupti::Subscriber subscriber = std::exchange(subscriber_, nullptr);
  const cupti::Result unsubscribed = subscriber != nullptr ? cupti_.unsubscribe(subscriber) : cupti::kSuccess;
  cupti_.check("cuptiActivityDisable", disabled);
  cupti_.check("cuptiUnsubscribe", unsubscribed);
}

// CUPTI counts records it had no buffer for in the global queue (context
// null) and, in older versions, the context's queue: both are read.
size_t CuptiTrace::dropped_records() {
  size_t total = 0;
  for (cupti::Context context : {context_, cupti::Context{nullptr}}) {
    size_t dropped = 0;
    cupti_.check("cuptiActivityGetNumDroppedRecords", cupti_.activity_get_num_dropped_records(context, 0, &dropped));
    total += dropped;
  }
  return total;
}

template <class Visit, class Complete>
void CuptiTrace::read(const std::string& which, Visit visit, Complete complete) {
  // The host has waited for the GPU, so the records are complete: a default
  // flush, which hands over only buffers of complete records, should bring
  // them all. It is tried first because a forced flush makes CUPTI re-arm its
  // device buffer on the next launch, ~200 µs on the H200 against ~40 µs
  // (docs/measurement.md); a forced flush follows only if a record is missing.
  cupti_.check("cuptiActivityFlushAll", cupti_.activity_flush_all(by_external_ids_ ? cupti::kFlushForced : 0));
  read_delivered(which, visit);
  if (!by_external_ids_ && !complete()) {
    cupti_.check("cuptiActivityFlushAll", cupti_.activity_flush_all(cupti::kFlushForced));
    read_delivered(which, visit);
  }
  const size_t dropped = dropped_records();
  if (dropped != 0) {
    throw MeasurementError("CUPTI dropped " + std::to_string(dropped) + " activity records while timing " + which +
                           " (no activity buffer was free): the run has no time for some launches");
  }
}

// Hands each kernel, memcpy and memset record of the buffers CUPTI delivered
// since the last read to `visit`, stepping over other kinds.
template <class Visit>
void CuptiTrace::read_delivered(const std::string& which, Visit& visit) {
  const std::vector<Delivered> delivered = buffer_pool().take_delivered();
  struct GiveBack {
    const std::vector<Delivered>& buffers;
    ~GiveBack() { buffer_pool().give_back(buffers); }
  } give_back{delivered};
  // By external ids, the API calls' records first: they say which work records are the trace's.
  for (const bool api_pass : {true, false}) {
    if (api_pass && !by_external_ids_) continue;
    for (const Delivered& d : delivered) {
      void* record = nullptr;
      for (;;) {
        const cupti::Result result = cupti_.activity_get_next_record(d.buffer, d.valid_bytes, &record);
        if (result == cupti::kMaxLimitReached) break;
        if (result == cupti::kInvalidKind) {
          throw MeasurementError("CUPTI delivered an incomplete activity record while timing " + which +
                                 " (the buffer was flushed before its work finished)");
        }
        cupti_.check("cuptiActivityGetNextRecord", result);
        const auto* bytes = static_cast<const uint8_t*>(record);
        const auto kind = static_cast<int>(read_field<uint32_t>(bytes, cupti::kernel_record::kKind));
        const bool api =
            kind == cupti::kKindDriver || kind == cupti::kKindRuntime || kind == cupti::kKindExternalCorrelation;
        if (api_pass) {
          if (api) visit(bytes, kind);
        } else if (kind == cupti::kKindKernel) {
          visit(bytes, cupti::kKindConcurrentKernel);
        } else if (kind == cupti::kKindConcurrentKernel || kind == cupti::kKindMemcpy || kind == cupti::kKindMemset) {
          visit(bytes, kind);
        }
      }
    }
  }
}

// ---- a plan's launches: one run's, or one measurement's ----

CuptiKernelTrace::CuptiKernelTrace(const CuptiLibrary& cupti, uintptr_t context)
    : CuptiTrace(cupti, context, on_driver_call, {cupti::kKindConcurrentKernel}) {
  // A throw here still stops tracing: the base is complete, so its destructor runs.
  if (!by_external_ids()) {
    cupti_.check("cuptiEnableCallback",
                 cupti_.enable_callback(1, subscriber(), cupti::kDomainDriverApi, cupti::kCallbackCuLaunchKernel));
  }
  start_activity();
}

// Runs inside each cuLaunchKernel, on the calling thread: records the
// correlation id CUPTI gives the kernel's activity record. Launches by other
// threads, or that failed, are not this run's.
void CuptiKernelTrace::on_driver_call(void* userdata, int domain, uint32_t callback_id, const void* data) {
  auto* trace = static_cast<CuptiKernelTrace*>(userdata);
  const auto* call = static_cast<const cupti::CallbackData*>(data);
  if (domain != cupti::kDomainDriverApi || callback_id != cupti::kCallbackCuLaunchKernel ||
      call->callback_site != cupti::kApiExit || std::this_thread::get_id() != trace->thread_) {
    return;
  }
  int status;
  std::memcpy(&status, call->function_return_value, sizeof status);
  if (status != 0) return;
  if (trace->skipped_ > 0) {
    --trace->skipped_;
    return;
  }
  if (trace->seen_ < trace->correlation_ids_.size()) trace->correlation_ids_[trace->seen_] = call->correlation_id;
  ++trace->seen_;
}

void CuptiKernelTrace::expect(size_t launches) {
  buffer_pool().prepare(launches);
  correlation_ids_.assign(launches, 0);
  seen_ = 0;
  skipped_ = 0;
  if (by_external_ids()) {
    chunk_calls_.clear();
    launch_calls_.clear();
    chunk_id_ = new_external_ids(1);
    start_api_records();
    push_external_id(chunk_id_);
  }
}

void CuptiKernelTrace::skip_next_launch() {
  if (!by_external_ids()) ++skipped_;  // by external ids, work_issued() ended the marking before it
}

// The API pass, by external ids: the calls made under the chunk's id, and the cuLaunchKernel calls that succeeded.
void CuptiKernelTrace::correlate(const uint8_t* record, int kind) {
  if (kind == cupti::kKindExternalCorrelation) {
    if (read_field<uint32_t>(record, cupti::external_record::kExternalKind) == cupti::kExternalKindCustom2 &&
        read_field<uint64_t>(record, cupti::external_record::kExternalId) == chunk_id_) {
      chunk_calls_.push_back(read_field<uint32_t>(record, cupti::external_record::kCorrelationId));
    }
  } else if (kind == cupti::kKindDriver &&
             read_field<uint32_t>(record, cupti::api_record::kCallbackId) == cupti::kCallbackCuLaunchKernel &&
             read_field<uint32_t>(record, cupti::api_record::kReturnValue) == 0) {
    launch_calls_.push_back(read_field<uint32_t>(record, cupti::api_record::kCorrelationId));
  }
}

// The chunk's launches, in the order they were made (correlation ids rise with each call): what the callback
// writes into correlation_ids_ and seen_ where there is one.
void CuptiKernelTrace::launches_correlated() {
  std::sort(chunk_calls_.begin(), chunk_calls_.end());
  std::sort(launch_calls_.begin(), launch_calls_.end());
  std::vector<uint32_t> launches;
  std::set_intersection(launch_calls_.begin(), launch_calls_.end(), chunk_calls_.begin(), chunk_calls_.end(),
                        std::back_inserter(launches));
  seen_ = launches.size();
  if (seen_ == correlation_ids_.size()) correlation_ids_ = std::move(launches);
}

void CuptiKernelTrace::collect(const std::vector<const KernelLaunch*>& cycle, const std::string& which,
                               std::vector<uint64_t>& start_ns, std::vector<uint64_t>& end_ns) {
  work_issued();
  const size_t launches = correlation_ids_.size();
  std::vector<std::pair<uint32_t, size_t>> by_id;  // (correlation id, launch), sorted
  // Which correlation id is which launch: known now from the callback, or by external ids after the API pass.
  auto index = [&] {
    if (!by_id.empty() || launches == 0) return;
    if (by_external_ids()) launches_correlated();
    if (seen_ != launches) {
      throw MeasurementError("CUPTI saw " + std::to_string(seen_) + " launches while timing " + which + " where " +
                             std::to_string(launches) + " were made: the trace cannot tell them apart");
    }
    by_id.resize(launches);
    for (size_t k = 0; k < launches; ++k) by_id[k] = {correlation_ids_[k], k};
    std::sort(by_id.begin(), by_id.end());
  };
  if (!by_external_ids()) index();
  std::vector<bool> found(launches, false);
  size_t count = 0;
  start_ns.assign(launches, 0);
  end_ns.assign(launches, 0);
  // For messages only: launch k's kernel, named.
  auto kernel = [&](size_t k) { return "kernel '" + cycle[k % cycle.size()]->kernel_name() + "'"; };
  auto visit = [&](const uint8_t* bytes, int kind) {
    if (kind != cupti::kKindConcurrentKernel) return correlate(bytes, kind);  // the API pass's records
    index();
    const auto id = read_field<uint32_t>(bytes, cupti::kernel_record::kCorrelationId);
    const auto at = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(id, size_t{0}));
    if (at == by_id.end() || at->first != id) return;  // another launch's kernel
    const size_t k = at->second;
    const KernelLaunch& launch = *cycle[k % cycle.size()];
    if (found[k]) {
      // The same record delivered twice counts once; two different records for one launch are a wrong correlation.
      if (to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kStart)) == start_ns[k] &&
          to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kEnd)) == end_ns[k]) {
        return;
      }
      throw MeasurementError("CUPTI delivered two kernel records for launch " + std::to_string(k) + " (" + kernel(k) +
                             ") while timing " + which + " (correlation id " + std::to_string(id) + ")");
    }
    const LaunchConfig& config = launch.config();
    const int32_t grid[3] = {static_cast<int32_t>(config.grid[0]), static_cast<int32_t>(config.grid[1]),
                             static_cast<int32_t>(config.grid[2])};
    const int32_t block[3] = {static_cast<int32_t>(config.block[0]), static_cast<int32_t>(config.block[1]),
                              static_cast<int32_t>(config.block[2])};
    int32_t record_grid[3], record_block[3];
    std::memcpy(record_grid, bytes + cupti::kernel_record::kGrid, sizeof record_grid);
    std::memcpy(record_block, bytes + cupti::kernel_record::kBlock, sizeof record_block);
    if (!std::equal(grid, grid + 3, record_grid) || !std::equal(block, block + 3, record_block)) {
      throw MeasurementError("the kernel record correlated to launch " + std::to_string(k) + " of " + kernel(k) +
                             " has grid " + dims(record_grid) + " and block " + dims(record_block) +
                             ", the launch had grid " + dims(grid) + " and block " + dims(block) +
                             ": the correlation is wrong");
    }
    found[k] = true;
    ++count;
    start_ns[k] = to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kStart));
    end_ns[k] = to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kEnd));
  };
  read(which, visit, [&] { return count == launches; });
  index();
  for (size_t k = 0; k < launches; ++k) {
    if (!found[k]) {
      throw MeasurementError("CUPTI delivered no kernel record for launch " + std::to_string(k) + " of " +
                             std::to_string(launches) + " (" + kernel(k) + ") while timing " + which +
                             " (correlation id " + std::to_string(correlation_ids_[k]) + ")");
    }
    if (start_ns[k] == 0 || end_ns[k] < start_ns[k]) {
      throw MeasurementError("CUPTI recorded no valid time for launch " + std::to_string(k) + " of " + kernel(k) +
                             " (start " + std::to_string(start_ns[k]) + " ns, end " + std::to_string(end_ns[k]) +
                             " ns; CUPTI writes 0 when it lacked device memory for timestamps)");
    }
  }
}

// ---- calls ----

CuptiCallTrace::CuptiCallTrace(const CuptiLibrary& cupti, uintptr_t context, bool graph_launch_only)
    : CuptiTrace(cupti, context, on_api_call, {cupti::kKindConcurrentKernel, cupti::kKindMemcpy, cupti::kKindMemset}),
      graph_launch_only_(graph_launch_only) {
  if (by_external_ids()) {
    // No callbacks: each call's API calls are marked by its external id (open()).
  } else if (graph_launch_only_) {
    cupti_.check("cuptiEnableCallback",
                 cupti_.enable_callback(1, subscriber(), cupti::kDomainDriverApi, cupti::kCallbackCuGraphLaunch));
  } else {
    cupti_.check("cuptiEnableDomain", cupti_.enable_domain(1, subscriber(), cupti::kDomainDriverApi));
    cupti_.check("cuptiEnableDomain", cupti_.enable_domain(1, subscriber(), cupti::kDomainRuntimeApi));
  }
  start_activity();
}

// Runs inside every driver and runtime API call: while a call is open on the
// tracing thread, the API call's correlation id is that call's. Recorded at
// entry, so a call that never returns to the callback still counts.
void CuptiCallTrace::on_api_call(void* userdata, int domain, uint32_t, const void* data) {
  auto* trace = static_cast<CuptiCallTrace*>(userdata);
  const auto* call = static_cast<const cupti::CallbackData*>(data);
  if ((domain != cupti::kDomainDriverApi && domain != cupti::kDomainRuntimeApi) ||
      call->callback_site != cupti::kApiEnter || trace->open_call_ == kNoCall ||
      std::this_thread::get_id() != trace->thread_) {
    return;
  }
  trace->correlation_calls_.emplace_back(call->correlation_id, trace->open_call_);
}

void CuptiCallTrace::expect(size_t calls) {
  buffer_pool().prepare(calls * 4);  // a few records per call; more buffers come on demand
  correlation_calls_.clear();
  correlation_calls_.reserve(calls * 16);
  open_call_ = kNoCall;
  calls_ = calls;
  if (by_external_ids()) {
    first_call_id_ = new_external_ids(calls);
    start_api_records();
  }
}

void CuptiCallTrace::open(size_t call) {
  open_call_ = call;
  if (by_external_ids()) push_external_id(first_call_id_ + call);
}

void CuptiCallTrace::close() {
  open_call_ = kNoCall;
  pop_external_id();
}

std::vector<Activity> CuptiCallTrace::collect(const std::string& which) {
  bool sorted = false;  // correlation_calls_, complete once the API pass is over (by external ids)
  std::vector<Activity> activities;
  auto visit = [&](const uint8_t* bytes, int kind) {
    if (kind == cupti::kKindExternalCorrelation) {  // the API pass: call i's API calls carry first_call_id_ + i
      const auto call = read_field<uint64_t>(bytes, cupti::external_record::kExternalId) - first_call_id_;
      if (read_field<uint32_t>(bytes, cupti::external_record::kExternalKind) == cupti::kExternalKindCustom2 &&
          call < calls_) {
        correlation_calls_.emplace_back(read_field<uint32_t>(bytes, cupti::external_record::kCorrelationId), call);
      }
      return;
    }
    if (kind == cupti::kKindDriver || kind == cupti::kKindRuntime) return;
    if (!sorted) {
      std::sort(correlation_calls_.begin(), correlation_calls_.end());
      sorted = true;
    }
    const bool kernel = kind == cupti::kKindConcurrentKernel;
    const auto id =
        read_field<uint32_t>(bytes, kernel ? cupti::kernel_record::kCorrelationId : cupti::copy_record::kCorrelationId);
    const auto at =
        std::lower_bound(correlation_calls_.begin(), correlation_calls_.end(), std::make_pair(id, size_t{0}));
    if (at == correlation_calls_.end() || at->first != id) return;  // not issued by a traced call
    Activity a;
    a.sample = at->second;
    a.kind = kernel                       ? Activity::Kind::kernel
             : kind == cupti::kKindMemcpy ? Activity::Kind::memcpy
                                          : Activity::Kind::memset;
    if (kernel) {
      const auto* name = read_field<const char*>(bytes, cupti::kernel_record::kName);
      a.name = name != nullptr ? name : "(unnamed kernel)";
      a.start_ns = to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kStart));
      a.end_ns = to_ns(read_field<uint64_t>(bytes, cupti::kernel_record::kEnd));
    } else {
      a.name = kind == cupti::kKindMemcpy ? "memcpy" : "memset";
      a.bytes = read_field<uint64_t>(bytes, cupti::copy_record::kBytes);
      a.start_ns = to_ns(read_field<uint64_t>(bytes, cupti::copy_record::kStart));
      a.end_ns = to_ns(read_field<uint64_t>(bytes, cupti::copy_record::kEnd));
    }
    if (a.start_ns == 0 || a.end_ns < a.start_ns) {
      throw MeasurementError("CUPTI recorded no valid time for " + a.name + " of call " + std::to_string(a.sample) +
                             " while timing " + which + " (CUPTI writes 0 when it lacked device memory)");
    }
    activities.push_back(std::move(a));
  };
  // How many records will come is not known, so a default flush cannot tell
  // that all are in (a call's last records may sit in a partly filled buffer
  // it keeps): the forced flush always follows. Its cost (CUPTI re-arms its
  // device buffer on the next launch) falls once per chunk, outside the calls.
  read(which, visit, [] { return false; });
  std::stable_sort(activities.begin(), activities.end(), [](const Activity& x, const Activity& y) {
    return std::tie(x.sample, x.start_ns, x.end_ns) < std::tie(y.sample, y.start_ns, y.end_ns);
  });
  // A record CUPTI delivered twice (the same work of the same call, start and end) counts once: in this
  // order its copies are neighbours.
  const auto same = [](const Activity& x, const Activity& y) {
    return std::tie(x.sample, x.kind, x.start_ns, x.end_ns, x.name) ==
           std::tie(y.sample, y.kind, y.start_ns, y.end_ns, y.name);
  };
  activities.erase(std::unique(activities.begin(), activities.end(), same), activities.end());
  return activities;
}

}  // namespace pyhipbench
