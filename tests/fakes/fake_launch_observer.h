/* How the fake libcuda (fake_driver.c) tells the fake libcupti (fake_cupti.c)
 * about its calls, as the real driver tells CUPTI: before each traced API
 * call and after it with its result, and, on the fake clock, when the GPU work
 * the call issued (a kernel, a memcpy, a memset) ran.
 *
 * Two interfaces: the launch observer (cuLaunchKernel only; kept for anything
 * that still sets it) and the tracer, which the fake libcupti uses: every
 * traced driver call, the fake runtime launch (fake_runtime_launch_kernel) and
 * every piece of work, each piece carrying the correlation id of the API call
 * that issued it. */
#ifndef FAKE_LAUNCH_OBSERVER_H
#define FAKE_LAUNCH_OBSERVER_H

#include <stdint.h>

/* cuLaunchKernel's arguments, laid out as CUPTI's cuLaunchKernel_params. */
typedef struct {
  void* f;
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  void* stream;
  void** kernel_params;
  void** extra;
} fake_launch_params;

enum { FAKE_LAUNCH_ENTER = 0, FAKE_LAUNCH_EXIT = 1 };

/* `result`, `start_ms`, `end_ms`: only at FAKE_LAUNCH_EXIT. */
typedef void (*fake_launch_observer)(int site, const fake_launch_params* call, int result, double start_ms,
                                     double end_ms);

void fake_set_launch_observer(fake_launch_observer observer);

/* ---- the tracer ---- */

/* CUPTI's callback domains: which API a call belongs to. */
enum { FAKE_DOMAIN_DRIVER = 1, FAKE_DOMAIN_RUNTIME = 2 };

/* One API call in progress. The driver fills all but `correlation_id`, which
 * the tracer gives at FAKE_LAUNCH_ENTER (a fresh one per call); the driver then
 * tags the work the call issues with it. */
typedef struct {
  int domain;
  uint32_t cbid;      /* CUPTI's callback id of the call (fake_driver.c lists them) */
  const char* name;   /* the API function's name */
  const void* params; /* the call's arguments, laid out as CUPTI's <call>_params */
  const char* symbol; /* launches: the kernel's name, else NULL */
  void* context;      /* the current CUcontext, or NULL */
  uint32_t correlation_id;
} fake_api_call;

/* Which kind of copy a memcpy or memset was: CUPTI's activity kinds. */
enum { FAKE_WORK_MEMCPY = 1, FAKE_WORK_MEMSET = 2 };

/* A memcpy or memset that ran. */
typedef struct {
  int kind;          /* FAKE_WORK_MEMCPY or FAKE_WORK_MEMSET */
  uint8_t copy_kind; /* memcpy: CUpti_ActivityMemcpyKind (1 HTOD, 8 DTOD) */
  uint32_t value;    /* memset: the byte value set */
  uint64_t bytes;
  void* stream;
} fake_copy_work;

typedef struct {
  /* Before (site FAKE_LAUNCH_ENTER) and after (FAKE_LAUNCH_EXIT, with `result`) each traced API call. */
  void (*api)(int site, fake_api_call* call, int result);
  /* A kernel ran from `start_ms` to `end_ms` on the fake clock, issued by the API call `correlation_id`. */
  void (*kernel)(uint32_t correlation_id, const fake_launch_params* launch, double start_ms, double end_ms);
  /* A memcpy or memset ran. */
  void (*copy)(uint32_t correlation_id, const fake_copy_work* work, double start_ms, double end_ms);
} fake_tracer;

/* `tracer` is kept (not copied); NULL detaches it. */
void fake_set_tracer(const fake_tracer* tracer);

/* The name of the kernel a function handle stands for, or NULL: a name a test
 * gave it (fake_set_function_name), the fake HIP runtime's, or the entry a
 * CUDA module function handle names. Valid until the module is unloaded. */
const char* fake_kernel_name(uintptr_t function);

#endif
