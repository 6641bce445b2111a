/* A fake librocprofiler-sdk: the calls pyhipbench's rocprofiler timer makes,
 * with rocprofiler-sdk's ABI (ROCm 6.2 to 7.x: its signatures, status codes,
 * record header and kernel-dispatch record layout), over the fake HIP runtime
 * (fake_driver.c + fake_hip_runtime.c), which reports each kernel it runs
 * through its tracer (fake_launch_observer.h), on its fake clock.
 *
 * As the real SDK: configuration happens once (rocprofiler_force_configure
 * calls the tool's configure, then its initialize, where alone contexts,
 * buffers and services may be made); an SDK configured after HIP initialised
 * never sees a dispatch; a dispatch is recorded only while its context is
 * started, with the external correlation id on top of the launching thread's
 * stack; flushing hands the records to the buffer's callback.
 *
 * Test hooks: fake_rocprofiler_dispatches() counts the records made;
 * fake_rocprofiler_drop(n) drops the next n dispatches (a record lost). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_launch_observer.h"

typedef struct {
  uint64_t handle;
} handle_t;
typedef union {
  uint64_t value;
  void* ptr;
} user_data_t;
typedef struct {
  size_t size;
  int (*initialize)(void* finalize, void* tool_data);
  void (*finalize)(void* tool_data);
  void* tool_data;
} configure_result_t;
typedef configure_result_t* (*configure_fn)(uint32_t version, const char* runtime_version, uint32_t priority,
                                            void* client_id);
typedef struct {
  uint32_t category, kind;
  void* payload;
} record_header_t;
typedef void (*buffer_cb)(handle_t context, handle_t buffer, record_header_t** headers, size_t count, void* data,
                          uint64_t drops);
typedef struct {
  uint64_t size;
  uint32_t kind, operation;
  uint64_t internal;
  user_data_t external;
  uint64_t thread_id;
  uint64_t start_ns, end_ns;
  struct {
    uint64_t size;
    handle_t agent, queue;
    uint64_t kernel_id, dispatch_id;
    uint32_t private_segment_size, group_segment_size;
    uint32_t workgroup[3], grid[3];
    uint8_t reserved_padding[56];
  } dispatch_info;
} dispatch_record_t; /* 184 bytes, as rocprofiler_buffer_tracing_kernel_dispatch_record_t */

enum {
  SUCCESS = 0,
  ERROR = 1,
  CONTEXT_NOT_FOUND = 2,
  BUFFER_NOT_FOUND = 3,
  CONTEXT_ID_NOT_ZERO = 13,
  CONFIGURATION_LOCKED = 16,
  INVALID_ARGUMENT = 19
};

int fake_hip_initialized(void); /* fake_hip_runtime.c */

static int init_status; /* 0 not yet, -1 initialising, 1 done */
static int sees_dispatches;
static int context_made, context_active, service_configured;
static buffer_cb callback;
static void* callback_data;
static dispatch_record_t* pending;
static size_t pending_count, pending_capacity;
static uint64_t internal_ids, dispatches, drop_next;
static __thread uint64_t external_stack[64];
static __thread int external_depth;

uint64_t fake_rocprofiler_dispatches(void) { return dispatches; }
void fake_rocprofiler_drop(uint64_t count) { drop_next = count; }

static uint64_t thread_id(void) { return (uint64_t)syscall(SYS_gettid); }

static void on_kernel(uint32_t correlation_id, const fake_launch_params* launch, double start_ms, double end_ms) {
  (void)correlation_id;
  if (!sees_dispatches || !context_active || !service_configured) return;
  if (drop_next) {
    --drop_next;
    return;
  }
  if (pending_count == pending_capacity) {
    pending_capacity = pending_capacity ? 2 * pending_capacity : 256;
    pending = realloc(pending, pending_capacity * sizeof *pending);
  }
  dispatch_record_t* r = &pending[pending_count++];
  memset(r, 0, sizeof *r);
  r->size = sizeof *r;
  r->kind = 11;     /* ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH */
  r->operation = 2; /* ROCPROFILER_KERNEL_DISPATCH_COMPLETE */
  r->internal = ++internal_ids;
  r->external.value = external_depth ? external_stack[external_depth - 1] : 0;
  r->thread_id = thread_id();
  r->start_ns = (uint64_t)(start_ms * 1e6 + 0.5);
  r->end_ns = (uint64_t)(end_ms * 1e6 + 0.5);
  r->dispatch_info.size = 72;
  r->dispatch_info.kernel_id = (uint64_t)(uintptr_t)launch->f;
  r->dispatch_info.workgroup[0] = launch->block_x;
  r->dispatch_info.grid[0] = launch->grid_x;
  ++dispatches;
}

static void on_api(int site, fake_api_call* call, int result) { (void)site, (void)call, (void)result; }
static void on_copy(uint32_t correlation_id, const fake_copy_work* work, double start_ms, double end_ms) {
  (void)correlation_id, (void)work, (void)start_ms, (void)end_ms;
}
static const fake_tracer tracer = {on_api, on_kernel, on_copy};

int rocprofiler_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch) {
  *major = 1, *minor = 0, *patch = 0;
  return SUCCESS;
}
int rocprofiler_is_initialized(int* status) {
  *status = init_status;
  return SUCCESS;
}
int rocprofiler_force_configure(configure_fn configure) {
  if (init_status != 0) return CONFIGURATION_LOCKED;
  init_status = -1;
  /* An SDK that starts after HIP never gets HSA's API table: no queue of HIP's is intercepted. */
  sees_dispatches = !fake_hip_initialized();
  char client[24] = {0};
  configure_result_t* result = configure(10000, "1.0.0", 0, client);
  int failed = result && result->initialize ? result->initialize(NULL, result->tool_data) : 0;
  init_status = 1;
  if (failed) return ERROR;
  fake_set_tracer(&tracer);
  return SUCCESS;
}
int rocprofiler_create_context(handle_t* context) {
  if (init_status != -1) return CONFIGURATION_LOCKED;
  if (context->handle != 0) return CONTEXT_ID_NOT_ZERO;
  context->handle = 0xC0;
  context_made = 1;
  return SUCCESS;
}
int rocprofiler_create_buffer(handle_t context, size_t size, size_t watermark, int policy, buffer_cb cb, void* data,
                              handle_t* buffer) {
  if (init_status != -1) return CONFIGURATION_LOCKED;
  if (context.handle != 0xC0 || !context_made) return CONTEXT_NOT_FOUND;
  if (!cb || watermark > size || policy < 0 || policy > 2) return INVALID_ARGUMENT;
  callback = cb, callback_data = data;
  buffer->handle = 0xB0;
  return SUCCESS;
}
int rocprofiler_configure_buffer_tracing_service(handle_t context, int kind, const int32_t* operations, size_t count,
                                                 handle_t buffer) {
  (void)operations;
  if (init_status != -1) return CONFIGURATION_LOCKED;
  if (context.handle != 0xC0) return CONTEXT_NOT_FOUND;
  if (buffer.handle != 0xB0) return BUFFER_NOT_FOUND;
  if (kind != 11 || count != 0) return INVALID_ARGUMENT;
  service_configured = 1;
  return SUCCESS;
}
int rocprofiler_start_context(handle_t context) {
  if (context.handle != 0xC0) return CONTEXT_NOT_FOUND;
  context_active = 1;
  return SUCCESS;
}
int rocprofiler_stop_context(handle_t context) {
  if (context.handle != 0xC0) return CONTEXT_NOT_FOUND;
  context_active = 0;
  return SUCCESS;
}
int rocprofiler_flush_buffer(handle_t buffer) {
  if (buffer.handle != 0xB0) return BUFFER_NOT_FOUND;
  if (!pending_count) return SUCCESS;
  record_header_t* headers = malloc(pending_count * sizeof *headers);
  record_header_t** pointers = malloc(pending_count * sizeof *pointers);
  for (size_t i = 0; i < pending_count; ++i) {
    headers[i].category = 1; /* ROCPROFILER_BUFFER_CATEGORY_TRACING */
    headers[i].kind = 11;
    headers[i].payload = &pending[i];
    pointers[i] = &headers[i];
  }
  callback((handle_t){0xC0}, buffer, pointers, pending_count, callback_data, 0);
  free(pointers);
  free(headers);
  pending_count = 0;
  return SUCCESS;
}
int rocprofiler_get_thread_id(uint64_t* tid) {
  *tid = thread_id();
  return SUCCESS;
}
int rocprofiler_push_external_correlation_id(handle_t context, uint64_t tid, user_data_t value) {
  if (context.handle != 0xC0) return CONTEXT_NOT_FOUND;
  if (tid < (uint64_t)getpid() || tid != thread_id() || external_depth == 64) return INVALID_ARGUMENT;
  external_stack[external_depth++] = value.value;
  return SUCCESS;
}
int rocprofiler_pop_external_correlation_id(handle_t context, uint64_t tid, user_data_t* value) {
  if (context.handle != 0xC0) return CONTEXT_NOT_FOUND;
  if (tid != thread_id() || external_depth == 0) return INVALID_ARGUMENT;
  value->value = external_stack[--external_depth];
  return SUCCESS;
}
const char* rocprofiler_get_status_string(int status) {
  switch (status) {
    case SUCCESS:
      return "Success";
    case CONTEXT_NOT_FOUND:
      return "Context not found";
    case BUFFER_NOT_FOUND:
      return "Buffer not found";
    case CONTEXT_ID_NOT_ZERO:
      return "Context id not zero";
    case CONFIGURATION_LOCKED:
      return "Configuration locked";
    case INVALID_ARGUMENT:
      return "Invalid argument";
    default:
      return "General error";
  }
}
