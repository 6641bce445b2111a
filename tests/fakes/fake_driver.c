/* A fake GPU driver for CPU-only tests.
 *
 * Built by the test suite twice from this one file, as libcuda.so.1 and as
 * libamdhip64.so, and loaded through the core's real dlopen path. It records
 * every launch and event call and every context push, pop or device set,
 * gives each launch a fixed duration, and fails a chosen call on demand.
 * Tests read the record through ctypes (fake_* below).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_launch_observer.h"

#define MAX_RECORDS 65536
#define MAX_ARGS 8

typedef struct {
  char call[40];
  uintptr_t function;
  uint32_t grid[3];  /* as passed: blocks (CUDA) or global work size (HIP) */
  uint32_t block[3];
  uint64_t shared_bytes;
  uintptr_t stream;
  uintptr_t params;                   /* the kernelParams array's address */
  uint64_t arg_values[MAX_ARGS];      /* first 8 bytes behind each param pointer */
  uintptr_t start_event, stop_event;  /* events given to the launch (HIP ext) */
  uintptr_t event;                    /* event of an event call */
  uintptr_t value;                    /* context pushed or popped, device set */
} fake_record;

typedef struct {
  double time_ms; /* when it was last recorded on the fake clock */
  int recorded;
} fake_event;

static fake_record records[MAX_RECORDS];
static int record_count;
static int arg_count_to_read = 0;
static double clock_ms;
static double launch_ms = 0.004; /* each launch takes 4 µs on the fake clock */
static double launch_ms_step;     /* ... plus this much more than the launch before it */
static char fail_call[40];
static int fail_code;
static int fail_after; /* fail on the (fail_after+1)-th call of fail_call */
static int sticky_code; /* once a fault fired with sticky set, every call returns it */
static int fail_sticky;
static int live_events;
static int current_device;          /* HIP: the current device */
static uintptr_t context_stack[64]; /* CUDA: the calling thread's context stack */
static int context_depth;
static fake_launch_observer launch_observer; /* the fake libcupti, when loaded */

/* ---- control and inspection, for the tests ---- */
void fake_reset(void) {
  record_count = 0;
  clock_ms = 0;
  launch_ms = 0.004;
  launch_ms_step = 0;
  fail_call[0] = 0;
  fail_code = fail_after = sticky_code = fail_sticky = 0;
  arg_count_to_read = 0;
  context_depth = 0;
  current_device = 0;
}
int fake_record_count(void) { return record_count; }
const fake_record* fake_get_record(int i) { return &records[i]; }
void fake_set_launch_ms(double ms) { launch_ms = ms; }
void fake_set_launch_ms_step(double ms) { launch_ms_step = ms; }
void fake_set_args_to_read(int n) { arg_count_to_read = n < MAX_ARGS ? n : MAX_ARGS; }
int fake_live_events(void) { return live_events; }
int fake_context_depth(void) { return context_depth; }
void fake_set_launch_observer(fake_launch_observer observer) { launch_observer = observer; }
/* Makes the (after+1)-th call named `call` return `code`; with `sticky`, every
 * later call returns it too, as a real driver does after a kernel fault. */
void fake_fail(const char* call, int code, int after, int sticky) {
  strncpy(fail_call, call, sizeof fail_call - 1);
  fail_code = code;
  fail_after = after;
  fail_sticky = sticky;
}

static fake_record* record(const char* call) {
  fake_record* r = &records[record_count < MAX_RECORDS ? record_count++ : MAX_RECORDS - 1];
  memset(r, 0, sizeof *r);
  strncpy(r->call, call, sizeof r->call - 1);
  return r;
}

/* The error this call should return, if any. */
static int injected(const char* call) {
  if (sticky_code) return sticky_code;
  if (fail_call[0] && strcmp(call, fail_call) == 0) {
    if (fail_after-- == 0) {
      fail_call[0] = 0;
      if (fail_sticky) sticky_code = fail_code;
      return fail_code;
    }
  }
  return 0;
}

static int record_launch(const char* call, uintptr_t f, const uint32_t grid[3],
                         const uint32_t block[3], uint64_t shared, uintptr_t stream,
                         void** params, fake_event* start, fake_event* stop) {
  int err = injected(call);
  if (err) return err;
  fake_record* r = record(call);
  r->function = f;
  memcpy(r->grid, grid, sizeof r->grid);
  memcpy(r->block, block, sizeof r->block);
  r->shared_bytes = shared;
  r->stream = stream;
  r->params = (uintptr_t)params;
  for (int a = 0; a < arg_count_to_read && params; ++a) memcpy(&r->arg_values[a], params[a], 8);
  r->start_event = (uintptr_t)start;
  r->stop_event = (uintptr_t)stop;
  if (start) { start->time_ms = clock_ms; start->recorded = 1; }
  clock_ms += launch_ms;
  launch_ms += launch_ms_step;
  if (stop) { stop->time_ms = clock_ms; stop->recorded = 1; }
  return 0;
}

static int event_create(const char* call, fake_event** event) {
  int err = injected(call);
  if (err) return err;
  *event = calloc(1, sizeof **event);
  ++live_events;
  return 0;
}

static int event_record(const char* call, fake_event* event) {
  int err = injected(call);
  if (err) return err;
  record(call)->event = (uintptr_t)event;
  event->time_ms = clock_ms;
  event->recorded = 1;
  return 0;
}

static int event_synchronize(const char* call, fake_event* event) {
  int err = injected(call);
  if (err) return err;
  record(call)->event = (uintptr_t)event;
  return 0;
}

static int elapsed(const char* call, float* ms, fake_event* start, fake_event* stop) {
  int err = injected(call);
  if (err) return err;
  if (!start->recorded || !stop->recorded) return 600; /* not ready */
  *ms = (float)(stop->time_ms - start->time_ms);
  return 0;
}

static int event_destroy(fake_event* event) {
  free(event);
  --live_events;
  return 0;
}

static const char* error_name(int code) {
  switch (code) {
    case 0: return "SUCCESS";
    case 1: return "INVALID_VALUE";
    case 2: return "OUT_OF_MEMORY";
    case 100: return "NO_DEVICE";
    case 101: return "INVALID_DEVICE";
    case 201: return "INVALID_CONTEXT";
    case 200: return "INVALID_IMAGE";
    case 400: return "INVALID_HANDLE";
    case 500: return "NOT_FOUND";
    case 700: return "ILLEGAL_ADDRESS";
    default: return "UNKNOWN";
  }
}

static const char* error_string(int code) {
  switch (code) {
    case 0: return "no error";
    case 1: return "invalid argument";
    case 2: return "out of memory";
    case 100: return "no GPU device was detected";
    case 101: return "invalid device ordinal";
    case 201: return "invalid device context";
    case 200: return "device kernel image is invalid";
    case 400: return "invalid resource handle";
    case 500: return "named symbol not found";
    case 700: return "an illegal memory access was encountered";
    default: return "unknown error";
  }
}

/* ---- CUDA driver API ---- */
static char cuda_name[64];
int cuGetErrorName(int code, const char** name) {
  strcpy(cuda_name, "CUDA_ERROR_");
  strcat(cuda_name, error_name(code));
  *name = cuda_name;
  return 0;
}
int cuGetErrorString(int code, const char** s) { *s = error_string(code); return 0; }
int cuEventCreate(fake_event** event, unsigned flags) { (void)flags; return event_create("cuEventCreate", event); }
int cuEventDestroy_v2(fake_event* event) { return event_destroy(event); }
int cuEventRecord(fake_event* event, void* stream) { (void)stream; return event_record("cuEventRecord", event); }
int cuEventSynchronize(fake_event* event) { return event_synchronize("cuEventSynchronize", event); }
int cuEventElapsedTime(float* ms, fake_event* start, fake_event* stop) {
  return elapsed("cuEventElapsedTime", ms, start, stop);
}
/* The context stack: pushes and pops are recorded with the context. */
int cuCtxPushCurrent_v2(void* context) {
  int err = injected("cuCtxPushCurrent_v2");
  if (err) return err;
  if (!context || context_depth == 64) return 201;
  record("cuCtxPushCurrent_v2")->value = (uintptr_t)context;
  context_stack[context_depth++] = (uintptr_t)context;
  return 0;
}
int cuCtxPopCurrent_v2(void** context) {
  int err = injected("cuCtxPopCurrent_v2");
  if (err) return err;
  if (context_depth == 0) return 201;
  uintptr_t popped = context_stack[--context_depth];
  record("cuCtxPopCurrent_v2")->value = popped;
  if (context) *context = (void*)popped;
  return 0;
}
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  const fake_launch_params call = {f, gx, gy, gz, bx, by, bz, shared, stream, params, extra};
  if (launch_observer) launch_observer(FAKE_LAUNCH_ENTER, &call, 0, 0, 0);
  const double start_ms = clock_ms;
  const int result = record_launch("cuLaunchKernel", (uintptr_t)f, grid, block, shared,
                                   (uintptr_t)stream, params, NULL, NULL);
  if (launch_observer) launch_observer(FAKE_LAUNCH_EXIT, &call, result, start_ms, clock_ms);
  return result;
}

/* ---- HIP runtime API ---- */
static char hip_name[64];
const char* hipGetErrorName(int code) {
  strcpy(hip_name, "hipError");
  strcat(hip_name, error_name(code));
  return hip_name;
}
const char* hipGetErrorString(int code) { return error_string(code); }
int hipEventCreate(fake_event** event) { return event_create("hipEventCreate", event); }
int hipEventDestroy(fake_event* event) { return event_destroy(event); }
int hipEventRecord(fake_event* event, void* stream) { (void)stream; return event_record("hipEventRecord", event); }
int hipEventSynchronize(fake_event* event) { return event_synchronize("hipEventSynchronize", event); }
int hipEventElapsedTime(float* ms, fake_event* start, fake_event* stop) {
  return elapsed("hipEventElapsedTime", ms, start, stop);
}
/* The current device (per process here; HIP's is per thread). Device count
 * from FAKE_HIP_DEVICE_COUNT, as fake_hip_runtime.c reads it; hipSetDevice is
 * recorded with the device. */
static int fake_device_count(void) {
  const char* text = getenv("FAKE_HIP_DEVICE_COUNT");
  return text && *text ? atoi(text) : 1;
}
int hipSetDevice(int device) {
  int err = injected("hipSetDevice");
  if (err) return err;
  if (device < 0 || device >= fake_device_count()) return 101;
  record("hipSetDevice")->value = (uintptr_t)device;
  current_device = device;
  return 0;
}
int hipGetDevice(int* device) {
  if (!device) return 1;
  *device = current_device;
  return 0;
}
int fake_current_device(void) { return current_device; }
int hipExtModuleLaunchKernel(void* f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                             uint32_t ly, uint32_t lz, size_t shared, void* stream,
                             void** params, void** extra, fake_event* start, fake_event* stop,
                             uint32_t flags) {
  (void)extra;
  (void)flags;
  const uint32_t global[3] = {gx, gy, gz}, local[3] = {lx, ly, lz};
  return record_launch("hipExtModuleLaunchKernel", (uintptr_t)f, global, local, shared,
                       (uintptr_t)stream, params, start, stop);
}
