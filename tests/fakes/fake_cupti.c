/* A fake CUPTI (libcupti) for CPU-only tests of the cupti timer.
 *
 * Built as libcupti.so beside the fake libcuda.so.1 and linked to it, as the
 * real libcupti is to the real driver; it registers itself with the fake
 * driver (fake_set_tracer) when loaded. Then every API call the fake driver
 * traces (fake_driver.c lists them with their callback ids) gets a fresh
 * correlation id and goes through the subscriber's callback, at entry and at
 * exit, if its domain (cuptiEnableDomain) or that one call (cuptiEnableCallback)
 * is enabled. The work the calls issue is written as activity records into the
 * buffers the core supplied, each carrying its API call's correlation id: a
 * kernel record (while KERNEL or CONCURRENT_KERNEL activity is enabled) with
 * the launch's grid, block, name and start/end on the fake clock, a memcpy
 * record (MEMCPY) or a memset record (MEMSET). A full buffer is handed back at
 * once, a partial one on flush (a default flush can be told to hold it back, as
 * real CUPTI holds a buffer whose records are not yet complete). Tests steer it
 * and read its call log and the callbacks it made through ctypes (fake_cupti_*
 * below, tests/fakes/cupti.py).
 *
 * Record layouts:
 *   kernel: the kernel record prefix CUPTI has kept since CUpti_ActivityKernel4
 *     (kind 0, start 16, end 24, streamId 48, grid 52, block 64, correlationId
 *     92, name 104: a const char* CUPTI owns), padded to the size of the version
 *     faked (216 bytes: CUpti_ActivityKernel10 of CUPTI 13; 208: Kernel9 of CUPTI 12).
 *   memcpy: CUpti_ActivityMemcpy6 of CUPTI 13, 96 bytes: kind u32 0, copyKind u8 4,
 *     srcKind u8 5, dstKind u8 6, flags u8 7 (1: async), bytes u64 8, start u64 16,
 *     end u64 24, deviceId u32 32, contextId u32 36, streamId u32 40, correlationId u32 44.
 *   memset: CUpti_ActivityMemset4, 88 bytes: kind u32 0, value u32 4, bytes u64 8,
 *     start 16, end 24, deviceId 32, contextId 36, streamId 40, correlationId 44,
 *     flags u16 48 (1: async), memoryKind u16 50 (3: device).
 *   API (DRIVER, RUNTIME activity): CUpti_ActivityAPI, 40 bytes: kind u32 0, cbid u32 4, start u64 8,
 *     end u64 16, processId u32 24, threadId u32 28, correlationId u32 32, returnValue u32 36; written at
 *     the call's exit, each preceded (while EXTERNAL_CORRELATION is on) by a
 *     CUpti_ActivityExternalCorrelation, 24 bytes: kind u32 0, externalKind u32 4, externalId u64 8,
 *     correlationId u32 16, for each kind with an id pushed (cuptiActivityPushExternalCorrelationId).
 * The sizes can be changed (fake_cupti_set_copy_record_bytes); cuptiActivityGetNextRecord
 * steps over each record by the size of its kind.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_launch_observer.h"

#define KIND_MEMCPY 1
#define KIND_MEMSET 2
#define KIND_KERNEL 3
#define KIND_DRIVER 4
#define KIND_RUNTIME 5
#define KIND_CONCURRENT_KERNEL 10
#define KIND_EXTERNAL_CORRELATION 39
#define API_RECORD_BYTES 40
#define EXTERNAL_RECORD_BYTES 24
#define EXTERNAL_KINDS 6  /* CUpti_ExternalCorrelationKind: INVALID 0 ... CUSTOM2 5 */
#define EXTERNAL_DEPTH 16 /* ids pushed per kind, at most */
#define KIND_OVERHEAD 17  /* a non-kernel record the core must step over */
#define OVERHEAD_RECORD_BYTES 40
#define DOMAIN_DRIVER_API 1
#define DOMAIN_RUNTIME_API 2
#define MAX_DOMAIN 6 /* CUPTI's domains run from 1 (driver API) to 6 (state); only 1 and 2 have calls here */
#define MAX_CBID 1024
#define CBID_CU_LAUNCH_KERNEL 307
#define CBID_CU_LAUNCH_KERNEL_EX 652
#define CBID_CUDA_LAUNCH_KERNEL 211 /* CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 */
#define CONTEXT_ID 1                /* the context id records and callbacks carry */
#define MEMORY_KIND_PAGEABLE 1      /* CUpti_ActivityMemoryKind */
#define MEMORY_KIND_DEVICE 3
#define MEMCPY_KIND_HTOD 1         /* CUpti_ActivityMemcpyKind */
#define GPU_EPOCH_NS 1000000000ull /* the fake GPU clock's reading at fake time 0 */

enum {
  SUCCESS = 0,
  ERROR_INVALID_PARAMETER = 1,
  ERROR_MAX_LIMIT_REACHED = 12,
  ERROR_INVALID_KIND = 21,
  ERROR_MULTIPLE_SUBSCRIBERS = 39,
  ERROR_UNKNOWN = 999,
};

typedef void (*callback_function)(void* userdata, int domain, uint32_t cbid, const void* data);
typedef void (*buffer_requested_function)(uint8_t** buffer, size_t* size, size_t* max_records);
typedef void (*buffer_completed_function)(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                          size_t valid_size);

/* CUpti_CallbackData. */
typedef struct {
  int callback_site;
  const char* function_name;
  const void* function_params;
  void* function_return_value;
  const char* symbol_name;
  void* context;
  uint32_t context_uid;
  uint64_t* correlation_data;
  uint32_t correlation_id;
} callback_data;

static uint32_t version;
static size_t record_bytes;
static int subscribed, other_subscriber;
/* Which callbacks the subscriber gets, by domain and callback id (cuptiEnableDomain sets a whole domain). */
static unsigned char callback_enabled[MAX_DOMAIN + 1][MAX_CBID];
static callback_function subscriber_function;
static void* subscriber_userdata;
static buffer_requested_function buffer_requested;
static buffer_completed_function buffer_completed;
static int concurrent_kernel_enabled, kernel_enabled, memcpy_enabled, memset_enabled;
static int driver_enabled, runtime_enabled, external_correlation_enabled;
/* The external ids pushed on each thread, per kind (CUPTI keeps a stack per thread). */
static _Thread_local uint64_t external_ids[EXTERNAL_KINDS][EXTERNAL_DEPTH];
static _Thread_local int external_depth[EXTERNAL_KINDS];
static size_t memcpy_record_bytes, memset_record_bytes;
static uint8_t* buffer;
static size_t buffer_size, buffer_used;
static size_t dropped;
static uint32_t next_correlation_id;
static int foreign_records_per_launch, records_to_drop, records_without_time, records_with_wrong_grid;
static int copy_records_without_time;
static int records_twice; /* the next kernel records each written twice */
/* Timestamps in ticks of this many per ns (1: ns), as after a client registered a timestamp callback (Kineto:
 * the CPU's TSC); cuptiGetTimestamp then reads CLOCK_MONOTONIC in those ticks, else CLOCK_REALTIME ns. */
static double ticks_per_ns;
static int default_flushes_held; /* default (unforced) flushes still to hand back nothing */
static int buffers_requested, buffers_completed, buffers_refused;
static char call_log[16384];
static char fail_call[48];
static int fail_code;

/* The callbacks the subscriber got since the reset: the first MAX_CALLBACKS in full, all counted. */
typedef struct {
  int domain;
  uint32_t cbid;
  int site; /* 0 API_ENTER, 1 API_EXIT */
  uint32_t correlation_id;
  int result;           /* *function_return_value as passed (0 at entry) */
  uint64_t first_param; /* the first 8 bytes of *function_params: the CUfunction of cuLaunchKernel */
  char name[40];        /* function_name */
} fake_cupti_callback;
#define MAX_CALLBACKS 4096
static fake_cupti_callback callbacks[MAX_CALLBACKS];
static int callbacks_fired;

/* ---- control and inspection, for the tests ---- */
void fake_cupti_reset(void) {
  subscribed = concurrent_kernel_enabled = kernel_enabled = memcpy_enabled = memset_enabled = 0;
  driver_enabled = runtime_enabled = external_correlation_enabled = 0;
  memset(external_depth, 0, sizeof external_depth);
  memset(callback_enabled, 0, sizeof callback_enabled);
  memcpy_record_bytes = 96;
  memset_record_bytes = 88;
  copy_records_without_time = records_twice = 0;
  ticks_per_ns = 1;
  callbacks_fired = 0;
  buffer = NULL; /* the core's; it keeps its buffers for the process's lifetime */
  buffer_used = buffer_size = 0;
  version = 130001;
  record_bytes = 216;
  other_subscriber = 0;
  foreign_records_per_launch = records_to_drop = records_without_time = records_with_wrong_grid = 0;
  default_flushes_held = 0;
  buffers_requested = buffers_completed = buffers_refused = 0;
  dropped = 0;
  next_correlation_id = 1000;
  call_log[0] = 0;
  fail_call[0] = 0;
  fail_code = 0;
}
void fake_cupti_set_version(uint32_t v) { version = v; }
void fake_cupti_set_record_bytes(size_t n) { record_bytes = n; }
/* Another CUPTI client (nsys, torch.profiler) holds the callback subscription. */
void fake_cupti_set_other_subscriber(int on) { other_subscriber = on; }
/* Before each of our kernel records: this many records of other launches. */
void fake_cupti_set_foreign_records(int n) { foreign_records_per_launch = n; }
void fake_cupti_drop_records(int n) { records_to_drop = n; }
void fake_cupti_records_without_time(int n) { records_without_time = n; }
void fake_cupti_records_with_wrong_grid(int n) { records_with_wrong_grid = n; }
/* The next `n` memcpy or memset records have start = end = 0, as CUPTI writes them without timestamps. */
void fake_cupti_copy_records_without_time(int n) { copy_records_without_time = n; }
/* The next `n` kernel records are each written twice. */
void fake_cupti_records_twice(int n) { records_twice = n; }
/* Timestamps in `ticks` per ns from now on (1: ns, CUPTI's own domain). */
void fake_cupti_set_ticks_per_ns(double ticks) { ticks_per_ns = ticks; }
/* The sizes of the memcpy and memset records written (CUPTI 13: 96 and 88). */
void fake_cupti_set_copy_record_bytes(size_t memcpy_bytes, size_t memset_bytes) {
  memcpy_record_bytes = memcpy_bytes;
  memset_record_bytes = memset_bytes;
}
/* The next `n` default flushes keep the partial buffer, as if a record in it were incomplete. */
void fake_cupti_hold_default_flushes(int n) { default_flushes_held = n; }
/* Makes the next call named `call` return `code`. */
void fake_cupti_fail(const char* call, int code) {
  strncpy(fail_call, call, sizeof fail_call - 1);
  fail_code = code;
}
const char* fake_cupti_log(void) { return call_log; }
int fake_cupti_buffers_requested(void) { return buffers_requested; }
int fake_cupti_buffers_completed(void) { return buffers_completed; }
int fake_cupti_subscribed(void) { return subscribed; }
int fake_cupti_activity_enabled(void) {
  return concurrent_kernel_enabled || kernel_enabled || memcpy_enabled || memset_enabled || driver_enabled ||
         runtime_enabled || external_correlation_enabled;
}
/* How many external ids of `kind` are pushed now. */
int fake_cupti_external_depth(int kind) { return kind >= 0 && kind < EXTERNAL_KINDS ? external_depth[kind] : -1; }
/* How many callbacks the subscriber got since the reset, and the i-th of them (i < MAX_CALLBACKS). */
int fake_cupti_callbacks_fired(void) { return callbacks_fired; }
const fake_cupti_callback* fake_cupti_get_callback(int i) {
  return i >= 0 && i < MAX_CALLBACKS && i < callbacks_fired ? &callbacks[i] : NULL;
}
/* Whether the subscriber gets `domain`'s callback `cbid`. */
int fake_cupti_callback_enabled(int domain, uint32_t cbid) {
  return domain >= 1 && domain <= MAX_DOMAIN && cbid < MAX_CBID && callback_enabled[domain][cbid];
}

/* Logs the call; the error it should return, if one was injected. */
static int enter(const char* call) {
  const size_t used = strlen(call_log);
  snprintf(call_log + used, sizeof call_log - used, "%s%s", used ? " " : "", call);
  if (fail_call[0] && strcmp(call, fail_call) == 0) {
    fail_call[0] = 0;
    return fail_code;
  }
  return SUCCESS;
}

/* ---- activity buffers ---- */
static void complete_buffer(void) {
  if (!buffer) return;
  uint8_t* full = buffer;
  const size_t valid = buffer_used, size = buffer_size;
  buffer = NULL;
  buffer_used = buffer_size = 0;
  ++buffers_completed;
  buffer_completed(NULL, 0, full, size, valid);
}

/* Space for a record of `bytes` in the current buffer, asking the core for a
 * new buffer when it is full; NULL (and the record counted as dropped) if the
 * core gives none big enough. */
static uint8_t* space_for(size_t bytes) {
  if (buffer && buffer_used + bytes > buffer_size) complete_buffer();
  if (!buffer) {
    uint8_t* fresh = NULL;
    size_t size = 0, max_records = 0;
    ++buffers_requested;
    buffer_requested(&fresh, &size, &max_records);
    if (!fresh || size < bytes) {
      ++buffers_refused;
      ++dropped;
      return NULL;
    }
    buffer = fresh;
    buffer_size = size;
    buffer_used = 0;
  }
  uint8_t* at = buffer + buffer_used;
  memset(at, 0, bytes);
  buffer_used += bytes;
  return at;
}

static void put32(uint8_t* record, size_t offset, uint32_t value) { memcpy(record + offset, &value, 4); }
static void put64(uint8_t* record, size_t offset, uint64_t value) { memcpy(record + offset, &value, 8); }

static void put_pointer(uint8_t* record, size_t offset, const void* value) { memcpy(record + offset, &value, 8); }

/* `name`, kept for the life of the process: CUPTI owns the names its records
 * point to, and the core reads them after the module may be unloaded. */
static const char* interned(const char* name) {
  static struct interned_name {
    struct interned_name* next;
    char text[];
  }* names;
  for (struct interned_name* n = names; n; n = n->next)
    if (strcmp(n->text, name) == 0) return n->text;
  struct interned_name* n = malloc(sizeof *n + strlen(name) + 1);
  if (!n) return "fake_kernel";
  strcpy(n->text, name);
  n->next = names;
  names = n;
  return n->text;
}

/* The kernel's name as CUPTI reports it: the fake driver's, or a fixed one for a made-up handle. */
static const char* kernel_name(const void* f) {
  const char* name = fake_kernel_name((uintptr_t)f);
  return name ? interned(name) : "fake_kernel";
}

static void write_kernel_record(uint32_t correlation_id, const fake_launch_params* call, uint64_t start_ns,
                                uint64_t end_ns) {
  uint8_t* record = space_for(record_bytes);
  if (!record) return;
  put32(record, 0, concurrent_kernel_enabled ? KIND_CONCURRENT_KERNEL : KIND_KERNEL);
  put64(record, 16, start_ns);
  put64(record, 24, end_ns);
  put32(record, 48, (uint32_t)((uintptr_t)call->stream & 0xFFFF) + 7); /* streamId */
  put32(record, 52, call->grid_x);
  put32(record, 56, call->grid_y);
  put32(record, 60, call->grid_z);
  put32(record, 64, call->block_x);
  put32(record, 68, call->block_y);
  put32(record, 72, call->block_z);
  put32(record, 92, correlation_id);
  put_pointer(record, 104, kernel_name(call->f));
}

static void write_foreign_records(void) {
  const fake_launch_params other = {(void*)0xBEEF, 1, 1, 1, 32, 1, 1, 0, (void*)0x5, NULL, NULL}; /* "fake_kernel" */
  for (int i = 0; i < foreign_records_per_launch; ++i) {
    if (i % 2) {
      uint8_t* overhead = space_for(OVERHEAD_RECORD_BYTES);
      if (overhead) put32(overhead, 0, KIND_OVERHEAD);
    } else {
      write_kernel_record(next_correlation_id++, &other, GPU_EPOCH_NS, GPU_EPOCH_NS + 123);
    }
  }
}

/* Fake time `ms` as a record's timestamp: ns, or ticks. */
static uint64_t gpu_ns(double ms) { return (uint64_t)((GPU_EPOCH_NS + ms * 1e6) * ticks_per_ns + 0.5); }

static int is_launch(int domain, uint32_t cbid) {
  if (domain == DOMAIN_RUNTIME_API) return cbid == CBID_CUDA_LAUNCH_KERNEL;
  return domain == DOMAIN_DRIVER_API && (cbid == CBID_CU_LAUNCH_KERNEL || cbid == CBID_CU_LAUNCH_KERNEL_EX);
}

/* At an API call's exit, while its domain's activity is on: the external
 * correlation records (one per kind with an id pushed), then the API record. */
static void write_api_records(const fake_api_call* call, int result) {
  if (!(call->domain == DOMAIN_DRIVER_API ? driver_enabled : call->domain == DOMAIN_RUNTIME_API && runtime_enabled))
    return;
  for (int kind = 0; external_correlation_enabled && kind < EXTERNAL_KINDS; ++kind) {
    if (external_depth[kind] == 0) continue;
    uint8_t* record = space_for(EXTERNAL_RECORD_BYTES);
    if (!record) return;
    put32(record, 0, KIND_EXTERNAL_CORRELATION);
    put32(record, 4, (uint32_t)kind);
    put64(record, 8, external_ids[kind][external_depth[kind] - 1]);
    put32(record, 16, call->correlation_id);
  }
  uint8_t* record = space_for(API_RECORD_BYTES);
  if (!record) return;
  put32(record, 0, call->domain == DOMAIN_DRIVER_API ? KIND_DRIVER : KIND_RUNTIME);
  put32(record, 4, call->cbid);
  put32(record, 32, call->correlation_id);
  put32(record, 36, (uint32_t)result);
}

/* Called by the fake driver before and after each traced API call: a fresh
 * correlation id at entry (whether or not anyone subscribed, as CUPTI numbers
 * every call it traces), the API's activity records at exit, and the
 * subscriber's callback if it is enabled. */
static void trace_api(int site, fake_api_call* call, int result) {
  if (site == FAKE_LAUNCH_ENTER) call->correlation_id = next_correlation_id++;
  if (site == FAKE_LAUNCH_EXIT) write_api_records(call, result);
  if (!subscribed || !fake_cupti_callback_enabled(call->domain, call->cbid)) return;
  int returned = result;
  const char* symbol = call->symbol;
  if (symbol) symbol = interned(symbol);
  if (!symbol && is_launch(call->domain, call->cbid)) symbol = "fake_kernel";
  callback_data data = {site,          call->name, call->params, &returned,           symbol,
                        call->context, CONTEXT_ID, NULL,         call->correlation_id};
  if (callbacks_fired < MAX_CALLBACKS) {
    fake_cupti_callback* logged = &callbacks[callbacks_fired];
    memset(logged, 0, sizeof *logged);
    logged->domain = call->domain;
    logged->cbid = call->cbid;
    logged->site = site;
    logged->correlation_id = call->correlation_id;
    logged->result = returned;
    if (call->params) memcpy(&logged->first_param, call->params, sizeof logged->first_param);
    strncpy(logged->name, call->name, sizeof logged->name - 1);
  }
  ++callbacks_fired;
  subscriber_function(subscriber_userdata, call->domain, call->cbid, &data);
}

/* Called by the fake driver for each kernel that ran (launched, or a graph's node). */
static void trace_kernel(uint32_t correlation_id, const fake_launch_params* launch, double start_ms, double end_ms) {
  if (!(concurrent_kernel_enabled || kernel_enabled)) return;
  write_foreign_records();
  if (records_to_drop > 0) {
    --records_to_drop;
    ++dropped;
    return;
  }
  uint64_t start_ns = gpu_ns(start_ms), end_ns = gpu_ns(end_ms);
  if (records_without_time > 0) {
    --records_without_time;
    start_ns = end_ns = 0;
  }
  fake_launch_params reported = *launch;
  if (records_with_wrong_grid > 0) {
    --records_with_wrong_grid;
    reported.grid_x += 1;
  }
  write_kernel_record(correlation_id, &reported, start_ns, end_ns);
  if (records_twice > 0) {
    --records_twice;
    write_kernel_record(correlation_id, &reported, start_ns, end_ns);
  }
}

/* Called by the fake driver for each memcpy and memset that ran (issued, or a graph's node). */
static void trace_copy(uint32_t correlation_id, const fake_copy_work* work, double start_ms, double end_ms) {
  const int is_memset = work->kind == FAKE_WORK_MEMSET;
  if (!(is_memset ? memset_enabled : memcpy_enabled)) return;
  uint8_t* record = space_for(is_memset ? memset_record_bytes : memcpy_record_bytes);
  if (!record) return;
  uint64_t start_ns = gpu_ns(start_ms), end_ns = gpu_ns(end_ms);
  if (copy_records_without_time > 0) {
    --copy_records_without_time;
    start_ns = end_ns = 0;
  }
  put32(record, 0, is_memset ? KIND_MEMSET : KIND_MEMCPY);
  if (is_memset) {
    put32(record, 4, work->value);
    const uint16_t flags = 1, memory_kind = MEMORY_KIND_DEVICE; /* CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC */
    memcpy(record + 48, &flags, 2);
    memcpy(record + 50, &memory_kind, 2);
  } else {
    record[4] = work->copy_kind;
    record[5] = work->copy_kind == MEMCPY_KIND_HTOD ? MEMORY_KIND_PAGEABLE : MEMORY_KIND_DEVICE; /* srcKind */
    record[6] = MEMORY_KIND_DEVICE;                                                              /* dstKind */
    record[7] = 1; /* CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC */
  }
  put64(record, 8, work->bytes);
  put64(record, 16, start_ns);
  put64(record, 24, end_ns);
  put32(record, 32, 0); /* deviceId */
  put32(record, 36, CONTEXT_ID);
  put32(record, 40, (uint32_t)((uintptr_t)work->stream & 0xFFFF) + 7); /* streamId, as a kernel record's */
  put32(record, 44, correlation_id);
}

static const fake_tracer tracer = {trace_api, trace_kernel, trace_copy};

__attribute__((constructor)) static void attach_to_driver(void) {
  fake_cupti_reset();
  fake_set_tracer(&tracer);
}

/* ---- the CUPTI API ---- */
int cuptiGetVersion(uint32_t* v) {
  int err = enter("cuptiGetVersion");
  if (err) return err;
  *v = version;
  return SUCCESS;
}

static const char* result_name(int result) {
  switch (result) {
    case SUCCESS:
      return "CUPTI_SUCCESS";
    case ERROR_INVALID_PARAMETER:
      return "CUPTI_ERROR_INVALID_PARAMETER";
    case ERROR_MAX_LIMIT_REACHED:
      return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case ERROR_INVALID_KIND:
      return "CUPTI_ERROR_INVALID_KIND";
    case ERROR_MULTIPLE_SUBSCRIBERS:
      return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    default:
      return NULL;
  }
}

int cuptiGetResultString(int result, const char** text) {
  const char* name = result_name(result);
  if (!name) return ERROR_INVALID_PARAMETER;
  *text = name;
  return SUCCESS;
}

int cuptiGetErrorMessage(int result, const char** text) {
  switch (result) {
    case ERROR_INVALID_PARAMETER:
      *text = "Invalid parameter";
      return SUCCESS;
    case ERROR_MULTIPLE_SUBSCRIBERS:
      *text = "CUPTI doesn't allow multiple callback subscribers";
      return SUCCESS;
    default:
      return ERROR_INVALID_PARAMETER;
  }
}

int cuptiSubscribe(void** subscriber, callback_function function, void* userdata) {
  int err = enter("cuptiSubscribe");
  if (err) return err;
  if (subscribed || other_subscriber) return ERROR_MULTIPLE_SUBSCRIBERS;
  subscribed = 1;
  subscriber_function = function;
  subscriber_userdata = userdata;
  *subscriber = &subscribed;
  return SUCCESS;
}

int cuptiEnableCallback(uint32_t enable, void* subscriber, int domain, uint32_t cbid) {
  int err = enter("cuptiEnableCallback");
  if (err) return err;
  if (!subscribed || subscriber != &subscribed) return ERROR_INVALID_PARAMETER;
  if (domain >= 1 && domain <= MAX_DOMAIN && cbid < MAX_CBID) callback_enabled[domain][cbid] = enable != 0;
  return SUCCESS;
}

/* Every callback of `domain` on (or off), as CUPTI's; a domain out of CUPTI's range is an invalid parameter. */
int cuptiEnableDomain(uint32_t enable, void* subscriber, int domain) {
  int err = enter("cuptiEnableDomain");
  if (err) return err;
  if (!subscribed || subscriber != &subscribed) return ERROR_INVALID_PARAMETER;
  if (domain < 1 || domain > MAX_DOMAIN) return ERROR_INVALID_PARAMETER;
  memset(callback_enabled[domain], enable != 0, sizeof callback_enabled[domain]);
  return SUCCESS;
}

int cuptiUnsubscribe(void* subscriber) {
  int err = enter("cuptiUnsubscribe");
  if (err) return err;
  if (!subscribed || subscriber != &subscribed) return ERROR_INVALID_PARAMETER;
  subscribed = 0;
  memset(callback_enabled, 0, sizeof callback_enabled);
  return SUCCESS;
}

int cuptiActivityRegisterCallbacks(buffer_requested_function requested, buffer_completed_function completed) {
  int err = enter("cuptiActivityRegisterCallbacks");
  if (err) return err;
  if (!requested || !completed) return ERROR_INVALID_PARAMETER;
  buffer_requested = requested;
  buffer_completed = completed;
  return SUCCESS;
}

static int set_kind(const char* call, int kind, int on) {
  int err = enter(call);
  if (err) return err;
  if (kind == KIND_CONCURRENT_KERNEL)
    concurrent_kernel_enabled = on;
  else if (kind == KIND_KERNEL)
    kernel_enabled = on;
  else if (kind == KIND_MEMCPY)
    memcpy_enabled = on;
  else if (kind == KIND_MEMSET)
    memset_enabled = on;
  else if (kind == KIND_DRIVER)
    driver_enabled = on;
  else if (kind == KIND_RUNTIME)
    runtime_enabled = on;
  else if (kind == KIND_EXTERNAL_CORRELATION)
    external_correlation_enabled = on;
  else
    return ERROR_INVALID_KIND;
  return SUCCESS;
}
int cuptiActivityEnable(int kind) { return set_kind("cuptiActivityEnable", kind, 1); }
int cuptiActivityDisable(int kind) { return set_kind("cuptiActivityDisable", kind, 0); }

int cuptiActivityFlushAll(uint32_t flag) {
  int err = enter(flag & 1 ? "cuptiActivityFlushAll(forced)" : "cuptiActivityFlushAll");
  if (err) return err;
  if (!buffer_completed) return 7; /* CUPTI_ERROR_INVALID_OPERATION: no callbacks registered */
  if (!(flag & 1) && default_flushes_held > 0) {
    --default_flushes_held;
    return SUCCESS;
  }
  if (buffer && buffer_used > 0) complete_buffer();
  return SUCCESS;
}

int cuptiActivityGetNextRecord(uint8_t* records, size_t valid_bytes, uint8_t** record) {
  if (!records) return ERROR_INVALID_PARAMETER;
  size_t at = 0;
  if (*record) {
    uint32_t kind;
    memcpy(&kind, *record, 4);
    const size_t size = kind == KIND_OVERHEAD                         ? OVERHEAD_RECORD_BYTES
                        : kind == KIND_MEMCPY                         ? memcpy_record_bytes
                        : kind == KIND_MEMSET                         ? memset_record_bytes
                        : kind == KIND_DRIVER || kind == KIND_RUNTIME ? API_RECORD_BYTES
                        : kind == KIND_EXTERNAL_CORRELATION           ? EXTERNAL_RECORD_BYTES
                                                                      : record_bytes;
    at = (size_t)(*record - records) + size;
  }
  if (at >= valid_bytes) return ERROR_MAX_LIMIT_REACHED;
  *record = records + at;
  return SUCCESS;
}

int cuptiActivityGetNumDroppedRecords(void* context, uint32_t stream_id, size_t* count) {
  (void)context;
  (void)stream_id;
  int err = enter("cuptiActivityGetNumDroppedRecords");
  if (err) return err;
  *count = dropped;
  dropped = 0;
  return SUCCESS;
}

int cuptiActivityPushExternalCorrelationId(int kind, uint64_t id) {
  int err = enter("cuptiActivityPushExternalCorrelationId");
  if (err) return err;
  if (kind <= 0 || kind >= EXTERNAL_KINDS || external_depth[kind] == EXTERNAL_DEPTH) return ERROR_INVALID_PARAMETER;
  external_ids[kind][external_depth[kind]++] = id;
  return SUCCESS;
}

int cuptiActivityPopExternalCorrelationId(int kind, uint64_t* last_id) {
  int err = enter("cuptiActivityPopExternalCorrelationId");
  if (err) return err;
  if (kind <= 0 || kind >= EXTERNAL_KINDS || external_depth[kind] == 0) return ERROR_INVALID_PARAMETER;
  const uint64_t id = external_ids[kind][--external_depth[kind]];
  if (last_id) *last_id = id;
  return SUCCESS;
}

/* Not logged: every trace reads it once (tests compare the calls that turn tracing on and off). */
int cuptiGetTimestamp(uint64_t* timestamp) {
  struct timespec now;
  clock_gettime(ticks_per_ns == 1 ? CLOCK_REALTIME : CLOCK_MONOTONIC, &now);
  *timestamp = (uint64_t)(((double)now.tv_sec * 1e9 + (double)now.tv_nsec) * ticks_per_ns);
  return SUCCESS;
}
