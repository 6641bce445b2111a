#include "rocprofiler.hpp"

#include <cstddef>
#include <cstdlib>

#include "pyhipbench/errors.hpp"

namespace pyhipbench {

namespace {

constexpr const char* kEnvVar = "PYHIPBENCH_ROCPROFILER_LIBRARY";

// rocprofiler-sdk's declarations, as its headers (rocprofiler-sdk/*.h, ROCm
// 6.2 to 7.x) have them: handles are structs of one uint64_t, passed by value;
// statuses are ints, 0 success. Only what the tracer calls.
struct Handle {
  uint64_t handle;
};
union UserData {
  uint64_t value;
  void* ptr;
};
struct ConfigureResult {  // rocprofiler_tool_configure_result_t
  size_t size;
  int (*initialize)(void* finalize, void* tool_data);
  void (*finalize)(void* tool_data);
  void* tool_data;
};
using ConfigureFn = ConfigureResult* (*)(uint32_t version, const char* runtime_version, uint32_t priority,
                                         void* client_id);
struct RecordHeader {  // rocprofiler_record_header_t: {category, kind} packed as its 64-bit hash, then the payload
  uint32_t category;
  uint32_t kind;
  void* payload;
};
using BufferCallback = void (*)(Handle context, Handle buffer, RecordHeader** headers, size_t count, void* data,
                                uint64_t drops);
// rocprofiler_buffer_tracing_kernel_dispatch_record_t, up to the dispatch info's kernel id.
struct KernelDispatchRecord {
  uint64_t size;
  uint32_t kind;
  uint32_t operation;
  uint64_t internal_correlation;
  UserData external_correlation;
  uint64_t thread_id;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t info_size;
  Handle agent;
  Handle queue;
  uint64_t kernel_id;
};
static_assert(offsetof(KernelDispatchRecord, external_correlation) == 24, "rocprofiler-sdk's record layout");
static_assert(offsetof(KernelDispatchRecord, start_ns) == 40 && offsetof(KernelDispatchRecord, end_ns) == 48,
              "rocprofiler-sdk's record layout");
static_assert(offsetof(KernelDispatchRecord, kernel_id) == 80, "rocprofiler-sdk's record layout");

constexpr uint32_t kCategoryTracing = 1;          // ROCPROFILER_BUFFER_CATEGORY_TRACING
constexpr uint32_t kKindKernelDispatch = 11;      // ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH
constexpr int kPolicyLossless = 2;                // ROCPROFILER_BUFFER_POLICY_LOSSLESS
constexpr size_t kBufferBytes = size_t{1} << 22;  // ~22000 dispatch records before the SDK delivers
constexpr size_t kWatermarkBytes = kBufferBytes / 2;

ConfigureResult configure_result;

ConfigureResult* configure(uint32_t, const char*, uint32_t, void*) {
  configure_result = {sizeof(ConfigureResult), [](void*, void*) { return RocprofilerTracer::instance().initialize(); },
                      [](void*) {}, nullptr};
  return &configure_result;
}

void on_records(Handle, Handle, RecordHeader** headers, size_t count, void*, uint64_t) {
  for (size_t i = 0; i < count; ++i) {
    const RecordHeader* header = headers[i];
    if (header->category != kCategoryTracing || header->kind != kKindKernelDispatch) continue;
    const auto* record = static_cast<const KernelDispatchRecord*>(header->payload);
    RocprofilerTracer::instance().deliver({record->external_correlation.value, record->start_ns, record->end_ns});
  }
}

std::vector<std::string> candidates(const std::string& explicit_path) {
  const std::string chosen = choose_library(explicit_path, kEnvVar, "");
  if (!chosen.empty()) return {chosen};
  std::vector<std::string> names = {"librocprofiler-sdk.so", "librocprofiler-sdk.so.1", "librocprofiler-sdk.so.0"};
  std::vector<std::string> out = names;
  const char* rocm = std::getenv("ROCM_PATH");
  for (const std::string root : {std::string(rocm != nullptr ? rocm : ""), std::string("/opt/rocm")}) {
    if (root.empty()) continue;
    for (const std::string& name : names) out.push_back(root + "/lib/" + name);
  }
  return out;
}

}  // namespace

struct RocprofilerTracer::Api {
  int (*force_configure)(ConfigureFn);
  int (*create_context)(Handle*);
  int (*create_buffer)(Handle, size_t, size_t, int, BufferCallback, void*, Handle*);
  int (*configure_buffer_tracing_service)(Handle, int, const int32_t*, size_t, Handle);
  int (*start_context)(Handle);
  int (*stop_context)(Handle);
  int (*flush_buffer)(Handle);
  int (*get_thread_id)(uint64_t*);
  int (*push_external_correlation_id)(Handle, uint64_t, UserData);
  int (*pop_external_correlation_id)(Handle, uint64_t, UserData*);
  const char* (*get_status_string)(int);
};

RocprofilerTracer& RocprofilerTracer::instance() {
  static RocprofilerTracer* tracer = new RocprofilerTracer();  // never destroyed: the SDK may call it at exit
  return *tracer;
}

std::string RocprofilerTracer::attach(const std::string& library) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (attach_tried_) return unavailable_;
  attach_tried_ = true;
  std::string first_reason;
  for (const std::string& path : candidates(library)) {
    try {
      library_ = std::make_unique<DynamicLibrary>(path, "rocprofiler-sdk", kEnvVar, /*stay_loaded=*/true);
      break;
    } catch (const LibraryError& error) {
      if (first_reason.empty()) first_reason = error.what();
    }
  }
  if (library_ == nullptr) return unavailable_ = "rocprofiler-sdk not loaded: " + first_reason;
  try {
    auto api = std::make_unique<Api>();
    library_->resolve(api->force_configure, "rocprofiler_force_configure");
    library_->resolve(api->create_context, "rocprofiler_create_context");
    library_->resolve(api->create_buffer, "rocprofiler_create_buffer");
    library_->resolve(api->configure_buffer_tracing_service, "rocprofiler_configure_buffer_tracing_service");
    library_->resolve(api->start_context, "rocprofiler_start_context");
    library_->resolve(api->stop_context, "rocprofiler_stop_context");
    library_->resolve(api->flush_buffer, "rocprofiler_flush_buffer");
    library_->resolve(api->get_thread_id, "rocprofiler_get_thread_id");
    library_->resolve(api->push_external_correlation_id, "rocprofiler_push_external_correlation_id");
    library_->resolve(api->pop_external_correlation_id, "rocprofiler_pop_external_correlation_id");
    library_->resolve(api->get_status_string, "rocprofiler_get_status_string");
    api_ = std::move(api);
  } catch (const LibraryError& error) {
    return unavailable_ = error.what();
  }
  // When the runtimes initialise they load the SDK by this name: the copy loaded here, not a second one.
  setenv("ROCPROFILER_REGISTER_LIBRARY", library_->path().c_str(), /*overwrite=*/0);
  unavailable_ = "";
  const int status = api_->force_configure(&configure);  // calls initialize() before it returns
  if (status != 0) {
    const char* text = api_->get_status_string(status);
    unavailable_ = std::string("rocprofiler_force_configure: ") + (text != nullptr ? text : "error") + " (status " +
                   std::to_string(status) + "): another tool configured rocprofiler-sdk first in this process";
  }
  return unavailable_;
}

std::string RocprofilerTracer::unavailable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unavailable_;
}

int RocprofilerTracer::initialize() {
  // Inside force_configure (attach holds the lock): the one time the SDK takes contexts and services.
  Handle context{0}, buffer{0};
  int status = api_->create_context(&context);
  if (status == 0) {
    status =
        api_->create_buffer(context, kBufferBytes, kWatermarkBytes, kPolicyLossless, &on_records, nullptr, &buffer);
  }
  if (status == 0) status = api_->configure_buffer_tracing_service(context, kKindKernelDispatch, nullptr, 0, buffer);
  if (status != 0) {
    const char* text = api_->get_status_string(status);
    unavailable_ = std::string("rocprofiler-sdk refused the kernel-dispatch trace: ") + (text ? text : "error");
    return 1;
  }
  context_ = context.handle;
  buffer_ = buffer.handle;
  return 0;
}

void RocprofilerTracer::check(const char* call, int status) const {
  if (status == 0) return;
  const char* text = api_->get_status_string(status);
  throw MeasurementError(std::string(call) + ": " + (text != nullptr ? text : "error") + " (status " +
                         std::to_string(status) + ")");
}

uint64_t RocprofilerTracer::reserve(size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t first = next_id_;
  next_id_ += count;
  return first;
}

void RocprofilerTracer::start() { check("rocprofiler_start_context", api_->start_context(Handle{context_})); }

void RocprofilerTracer::stop() { check("rocprofiler_stop_context", api_->stop_context(Handle{context_})); }

void RocprofilerTracer::push(uint64_t id) {
  uint64_t thread = 0;
  check("rocprofiler_get_thread_id", api_->get_thread_id(&thread));
  UserData value{};
  value.value = id;
  check("rocprofiler_push_external_correlation_id",
        api_->push_external_correlation_id(Handle{context_}, thread, value));
}

void RocprofilerTracer::pop() {
  uint64_t thread = 0;
  check("rocprofiler_get_thread_id", api_->get_thread_id(&thread));
  UserData value{};
  check("rocprofiler_pop_external_correlation_id", api_->pop_external_correlation_id(Handle{context_}, thread, &value));
}

std::vector<DispatchRecord> RocprofilerTracer::flush() {
  check("rocprofiler_flush_buffer", api_->flush_buffer(Handle{buffer_}));  // delivers to on_records first
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DispatchRecord> records;
  records.swap(delivered_);
  return records;
}

void RocprofilerTracer::deliver(const DispatchRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  delivered_.push_back(record);
}

}  // namespace pyhipbench
