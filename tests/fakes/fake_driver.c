/* A fake GPU driver for CPU-only tests.
 *
 * Built by the test suite twice from this one file, as libcuda.so.1 and as
 * libamdhip64.so, and loaded through the core's real dlopen path. It records
 * every launch and event call and every context push, pop or device set,
 * gives each launch a fixed duration, and fails a chosen call on demand.
 * Tests read the record through ctypes (fake_* below).
 *
 * Under the fake libcupti (fake_cupti.c, which attaches itself through
 * fake_set_tracer), the calls CUPTI would trace go through its API callbacks
 * with a correlation id, and the work they issue - kernels, memcpys, memsets -
 * is reported with that id and its times on the fake clock. The calls traced,
 * with CUPTI's callback ids and the params struct each passes:
 *   driver domain:  cuLaunchKernel 307 (cuLaunchKernel_params), cuLaunchKernelEx 652
 *                   (cuLaunchKernelEx_params: config, f, kernelParams, extra), cuGraphLaunch 514
 *                   {hGraphExec, hStream}, cuMemsetD8Async 216 {dstDevice, uc, N, hStream},
 *                   cuMemcpyHtoDAsync_v2 277 {dstDevice, srcHost, ByteCount, hStream},
 *                   cuMemcpyDtoDAsync_v2 281 {dstDevice, srcDevice, ByteCount, hStream},
 *                   cuEventRecord 119 {hEvent, hStream}, cuCtxSynchronize 17 (a zeroed word:
 *                   it has no arguments), cuStreamSynchronize 126 {hStream}
 *   runtime domain: fake_runtime_launch_kernel, playing cudaLaunchKernel 211
 *                   (cudaLaunchKernel_v7000_params: func, gridDim, blockDim, args, sharedMem, stream)
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_launch_observer.h"

#define MAX_RECORDS 65536
#define MAX_ARGS 8

typedef struct {
  char call[40];
  uintptr_t function;
  uint32_t grid[3]; /* as passed: blocks (CUDA) or global work size (HIP) */
  uint32_t block[3];
  uint64_t shared_bytes;
  uintptr_t stream;
  uintptr_t params;                  /* the kernelParams array's address */
  uint64_t arg_values[MAX_ARGS];     /* first 8 bytes behind each param pointer */
  uintptr_t start_event, stop_event; /* events given to the launch (HIP ext) */
  uintptr_t event;                   /* event of an event call */
  uintptr_t value;                   /* context pushed or popped, device set, graph, spin target */
  uint64_t blocked_by;               /* the target of the spin kernel still holding the stream, or 0 */
} fake_record;

typedef struct {
  double time_ms; /* when it was last recorded on the fake clock */
  int recorded;
} fake_event;

static fake_record records[MAX_RECORDS];
static int record_count;
static int arg_count_to_read = 0;
static double clock_ms;
/* The clock probe's stamp kernel (see launch_stamp). */
#define FAKE_RATED_SM_KHZ 1980000
#define FAKE_SM_COUNT 4
static uintptr_t stamp_function;
static double sm_mhz, throttled_mhz, stamp_ms, stamp_cycles;
static int throttled_stamps;
static int fake_stamps;          /* stamps written since fake_reset, for the tests */
static double launch_ms = 0.004; /* each launch takes 4 µs on the fake clock */
static double launch_ms_step;    /* ... plus this much more than the launch before it */
static double copy_ms = 0.001;   /* each memcpy or memset takes 1 µs, whatever its size */
static char fail_call[40];
static int fail_code;
static int fail_after;  /* fail on the (fail_after+1)-th call of fail_call */
static int sticky_code; /* once a fault fired with sticky set, every call returns it */
static int hung;        /* a FAKE_KERNEL_HANG kernel was launched: no work completes from then on */
static int fail_sticky;
static int live_events;
static int current_device;          /* HIP: the current device */
static int spin_queue_limit;        /* launches a blocking spin kernel lets queue; 0 = no limit */
static uintptr_t context_stack[64]; /* CUDA: the calling thread's context stack */
static int context_depth;
static fake_launch_observer launch_observer; /* cuLaunchKernel's observer, if one was set */
static const fake_tracer* tracer;            /* the fake libcupti, when loaded */
/* What a launched kernel does to memory, played by the test (host memory stands for device memory). */
typedef void (*fake_kernel_body)(uintptr_t function, void** params);
static fake_kernel_body kernel_body;

static void forget_spin(void);

/* Kernel names tests gave made-up function handles (fake_set_function_name). */
#define MAX_FUNCTION_NAMES 64
static struct {
  uintptr_t function;
  char name[64];
} function_names[MAX_FUNCTION_NAMES];
static int function_name_count;

/* ---- control and inspection, for the tests ---- */
void fake_reset(void) {
  record_count = 0;
  clock_ms = 0;
  launch_ms = 0.004;
  launch_ms_step = 0;
  copy_ms = 0.001;
  function_name_count = 0;
  fail_call[0] = 0;
  fail_code = fail_after = sticky_code = fail_sticky = hung = 0;
  arg_count_to_read = 0;
  context_depth = 0;
  current_device = 0;
  spin_queue_limit = 0;
  kernel_body = NULL;
  forget_spin(); /* a spin an earlier test left pending */
  sm_mhz = FAKE_RATED_SM_KHZ / 1000.0;
  throttled_stamps = 0;
  stamp_ms = stamp_cycles = 0;
  fake_stamps = 0;
}
int fake_record_count(void) { return record_count; }
const fake_record* fake_get_record(int i) { return &records[i]; }
void fake_set_launch_ms(double ms) { launch_ms = ms; }
void fake_set_launch_ms_step(double ms) { launch_ms_step = ms; }
void fake_set_args_to_read(int n) { arg_count_to_read = n < MAX_ARGS ? n : MAX_ARGS; }
int fake_live_events(void) { return live_events; }
int fake_context_depth(void) { return context_depth; }
void fake_set_launch_observer(fake_launch_observer observer) { launch_observer = observer; }
void fake_set_tracer(const fake_tracer* t) { tracer = t; }
/* How long each memcpy and memset takes on the fake clock, ms. */
void fake_set_copy_ms(double ms) { copy_ms = ms; }
/* Names the kernel a (made-up) function handle stands for, as CUPTI's records and callbacks report it. */
void fake_set_function_name(uintptr_t function, const char* name) {
  int i = 0;
  while (i < function_name_count && function_names[i].function != function) ++i;
  if (i == MAX_FUNCTION_NAMES) return;
  if (i == function_name_count) ++function_name_count;
  function_names[i].function = function;
  strncpy(function_names[i].name, name, sizeof function_names[i].name - 1);
  function_names[i].name[sizeof function_names[i].name - 1] = 0;
}
void fake_set_kernel_body(fake_kernel_body body) { kernel_body = body; }
/* Makes the (after+1)-th call named `call` return `code`; with `sticky`, every
 * later call returns it too, as a real driver does after a kernel fault. */
void fake_fail(const char* call, int code, int after, int sticky) {
  strncpy(fail_call, call, sizeof fail_call - 1);
  fail_code = code;
  fail_after = after;
  fail_sticky = sticky;
}

static uint64_t blocking_spin(void);

static fake_record* record(const char* call) {
  fake_record* r = &records[record_count < MAX_RECORDS ? record_count++ : MAX_RECORDS - 1];
  memset(r, 0, sizeof *r);
  strncpy(r->call, call, sizeof r->call - 1);
  r->blocked_by = blocking_spin();
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
/* injected(), for the fake HIP runtime's calls. */
int fake_injected(const char* call) { return injected(call); }

/* ---- API calls, as CUPTI sees them ----
 * A traced call is bracketed by api_enter and api_exit; the tracer gives it a
 * correlation id at entry, which the work it issues carries. Without a tracer
 * (no fake libcupti loaded) the id is 0 and nothing is reported. */
static fake_api_call api_enter(int domain, uint32_t cbid, const char* name, const void* params, const char* symbol) {
  void* context = context_depth ? (void*)context_stack[context_depth - 1] : NULL;
  fake_api_call call = {domain, cbid, name, params, symbol, context, 0};
  if (tracer) tracer->api(FAKE_LAUNCH_ENTER, &call, 0);
  return call;
}
static int api_exit(fake_api_call* call, int result) {
  if (tracer) tracer->api(FAKE_LAUNCH_EXIT, call, result);
  return result;
}
static void report_kernel(uint32_t correlation_id, const fake_launch_params* launch, double start_ms, double end_ms) {
  if (tracer) tracer->kernel(correlation_id, launch, start_ms, end_ms);
}

/* ---- streams, capture and graphs ----
 * Streams made here are registered, so a handle the tests made up (a plan's
 * stream 0x77) is never dereferenced. A launch on a stream being captured is
 * not run: it becomes a node of the capture's graph, keeping the first bytes
 * of each argument as they were at capture (the real driver copies the
 * values then). So do memsets and memcpys (fake_issue_copy), keeping their
 * addresses and value. Launching an instantiated graph runs its nodes in
 * order: each kernel recorded as a "graph node" with its own kernelParams,
 * taking launch_ms on the fake clock; each memset or memcpy setting or copying
 * memory again, recorded as a "graph memset node" / "graph memcpy node",
 * taking copy_ms.
 *
 * As the real driver: the legacy default stream (handle 0, or CU_STREAM_LEGACY
 * 0x1) cannot be captured (900, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED). While
 * a blocking stream (made without CU_STREAM_NON_BLOCKING / hipStreamNonBlocking,
 * flag 1) is capturing, work sent to the legacy stream would make it wait on
 * the capture: it fails with 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) and
 * invalidates the capture, whose later work fails with 901
 * (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), as its end does, giving no graph. A
 * non-blocking stream's capture is not disturbed by the legacy stream. */
enum { NODE_KERNEL = 0, NODE_MEMCPY = FAKE_WORK_MEMCPY, NODE_MEMSET = FAKE_WORK_MEMSET };

typedef struct {
  int type; /* NODE_KERNEL, NODE_MEMCPY or NODE_MEMSET */
  /* kernels */
  uintptr_t function;
  uint32_t grid[3], block[3];
  uint64_t shared_bytes;
  uintptr_t params;
  uint64_t arg_values[MAX_ARGS];
  /* memcpys and memsets */
  uintptr_t destination, source; /* source: memcpy only */
  uint32_t value;                /* memset only */
  uint64_t bytes;
  uint8_t copy_kind; /* memcpy: CUpti_ActivityMemcpyKind */
} fake_node;

typedef struct {
  int count, capacity;
  fake_node* nodes;
} fake_graph; /* an instantiated graph (exec) has the same shape: a copy */

typedef struct {
  fake_graph* capture;     /* the graph being captured, or NULL */
  int capture_invalidated; /* the capture met work on the legacy stream */
  int non_blocking;        /* made with flag 1: does not synchronize with the legacy stream */
} fake_stream;

#define MAX_STREAMS 64
static fake_stream* streams[MAX_STREAMS];
static int live_streams, live_graphs, live_graph_execs;
int fake_live_streams(void) { return live_streams; }
int fake_live_graphs(void) { return live_graphs; }
int fake_live_graph_execs(void) { return live_graph_execs; }

static fake_stream* find_stream(const void* handle) {
  for (int i = 0; i < MAX_STREAMS; ++i)
    if (handle && streams[i] == handle) return streams[i];
  return NULL;
}

/* The legacy default stream: NULL, or CUDA's CU_STREAM_LEGACY (0x1). */
static int is_legacy_stream(uintptr_t handle) { return handle == 0 || handle == 1; }

/* 906 if work sent to `stream` would make the legacy stream wait on a capture
 * (every capture of a blocking stream is then invalidated), else 0. */
static int implicit_capture_dependency(uintptr_t stream) {
  if (!is_legacy_stream(stream)) return 0;
  int blocked = 0;
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (streams[i] && streams[i]->capture && !streams[i]->non_blocking) {
      streams[i]->capture_invalidated = 1;
      blocked = 1;
    }
  }
  return blocked ? 906 : 0; /* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT */
}

static int stream_create(const char* call, fake_stream** out, unsigned flags) {
  int err = injected(call);
  if (err) return err;
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (!streams[i]) {
      streams[i] = calloc(1, sizeof **out);
      streams[i]->non_blocking = (flags & 1) != 0;
      *out = streams[i];
      ++live_streams;
      record(call)->value = (uintptr_t)*out;
      return 0;
    }
  }
  return 2;
}

static int stream_destroy(const char* call, fake_stream* stream) {
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (stream && streams[i] == stream) {
      if (stream->capture) return 900; /* still capturing */
      record(call)->value = (uintptr_t)stream;
      free(stream);
      streams[i] = NULL;
      --live_streams;
      return 0;
    }
  }
  return 400;
}

static int begin_capture(const char* call, fake_stream* stream) {
  int err = injected(call);
  if (err) return err;
  if (is_legacy_stream((uintptr_t)stream)) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  stream = find_stream(stream);
  if (!stream || stream->capture) return 1;
  stream->capture = calloc(1, sizeof *stream->capture);
  stream->capture_invalidated = 0;
  record(call)->value = (uintptr_t)stream;
  return 0;
}

static int end_capture(const char* call, fake_stream* stream, fake_graph** graph) {
  stream = find_stream(stream);
  if (!stream || !stream->capture) return 1;
  if (stream->capture_invalidated) { /* the capture ends, its partial graph is dropped */
    free(stream->capture->nodes);
    free(stream->capture);
    stream->capture = NULL;
    stream->capture_invalidated = 0;
    *graph = NULL;
    record(call)->value = 0;
    return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  }
  *graph = stream->capture;
  stream->capture = NULL;
  ++live_graphs;
  record(call)->value = (uintptr_t)*graph;
  return injected(call);
}

static int graph_destroy(fake_graph* graph, int* live) {
  if (!graph) return 400;
  free(graph->nodes);
  free(graph);
  --*live;
  return 0;
}

static int graph_instantiate(const char* call, fake_graph** exec, fake_graph* graph) {
  int err = injected(call);
  if (err) return err;
  fake_graph* copy = calloc(1, sizeof *copy);
  copy->count = copy->capacity = graph->count;
  copy->nodes = malloc(sizeof(fake_node) * (size_t)(graph->count ? graph->count : 1));
  memcpy(copy->nodes, graph->nodes, sizeof(fake_node) * (size_t)graph->count);
  *exec = copy;
  ++live_graph_execs;
  record(call)->value = (uintptr_t)graph->count;
  return 0;
}

/* Sets or copies the memory of a memset or memcpy node (device memory is host memory). */
static void run_copy(const fake_node* n) {
  if (n->type == NODE_MEMSET)
    memset((void*)n->destination, (int)(n->value & 0xFF), n->bytes);
  else
    memmove((void*)n->destination, (const void*)n->source, n->bytes);
}

/* Runs a memset or memcpy node now: memory, fake clock, and the tracer's record (with `correlation_id`). */
static void run_copy_node(const fake_node* n, uintptr_t stream, uint32_t correlation_id) {
  run_copy(n);
  const double start_ms = clock_ms;
  clock_ms += copy_ms;
  if (tracer) {
    const fake_copy_work work = {n->type, n->copy_kind, n->value, n->bytes, (void*)stream};
    tracer->copy(correlation_id, &work, start_ms, clock_ms);
  }
}

static int graph_launch(const char* call, fake_graph* exec, uintptr_t stream, uint32_t correlation_id) {
  int err = injected(call);
  if (err) return err;
  err = implicit_capture_dependency(stream);
  if (err) return err;
  fake_record* r = record(call);
  r->stream = stream;
  r->value = (uintptr_t)exec;
  for (int i = 0; i < exec->count; ++i) {
    const fake_node* n = &exec->nodes[i];
    if (n->type != NODE_KERNEL) {
      fake_record* copy = record(n->type == NODE_MEMSET ? "graph memset node" : "graph memcpy node");
      copy->stream = stream;
      copy->arg_values[0] = n->destination;
      copy->arg_values[1] = n->type == NODE_MEMSET ? n->value : n->source;
      copy->arg_values[2] = n->bytes;
      copy->value = (uintptr_t)exec;
      run_copy_node(n, stream, correlation_id);
      continue;
    }
    fake_record* node = record("graph node");
    node->function = n->function;
    memcpy(node->grid, n->grid, sizeof node->grid);
    memcpy(node->block, n->block, sizeof node->block);
    node->shared_bytes = n->shared_bytes;
    node->stream = stream;
    node->params = n->params;
    memcpy(node->arg_values, n->arg_values, sizeof node->arg_values);
    node->value = (uintptr_t)exec;
    const double start_ms = clock_ms;
    clock_ms += launch_ms;
    const fake_launch_params launch = {(void*)n->function, n->grid[0],        n->grid[1],  n->grid[2],
                                       n->block[0],        n->block[1],       n->block[2], (unsigned)n->shared_bytes,
                                       (void*)stream,      (void**)n->params, NULL};
    report_kernel(correlation_id, &launch, start_ms, clock_ms);
  }
  return 0;
}

/* The graph `stream` is capturing, or NULL; *err 901 (and NULL) if that capture was invalidated. */
static fake_graph* capturing(void* stream_handle, int* err) {
  *err = 0;
  fake_stream* stream = find_stream(stream_handle);
  if (!stream || !stream->capture) return NULL;
  if (stream->capture_invalidated) {
    *err = 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    return NULL;
  }
  return stream->capture;
}

/* A new, zeroed node at the end of graph `g`. */
static fake_node* add_node(fake_graph* g) {
  if (g->count == g->capacity) {
    g->capacity = g->capacity ? 2 * g->capacity : 16;
    g->nodes = realloc(g->nodes, sizeof(fake_node) * (size_t)g->capacity);
  }
  fake_node* n = &g->nodes[g->count++];
  memset(n, 0, sizeof *n);
  return n;
}

/* Adds a launch to the graph `stream` is capturing: 1 if it did, 0 if the
 * stream is not capturing, -901 if its capture was invalidated. */
static int captured(const char* call, uintptr_t f, const uint32_t grid[3], const uint32_t block[3], uint64_t shared,
                    void* stream_handle, void** params) {
  int err;
  fake_graph* g = capturing(stream_handle, &err);
  if (err) return -err;
  if (!g) return 0;
  fake_node* n = add_node(g);
  n->type = NODE_KERNEL;
  n->function = f;
  memcpy(n->grid, grid, sizeof n->grid);
  memcpy(n->block, block, sizeof n->block);
  n->shared_bytes = shared;
  n->params = (uintptr_t)params;
  for (int a = 0; a < arg_count_to_read && params; ++a) memcpy(&n->arg_values[a], params[a], 8);
  record(call)->value = (uintptr_t)stream_handle; /* a captured launch: recorded, not run */
  return 1;
}

/* ---- pinned, mapped host memory ----
 * The device's address of a mapped allocation lies in a range of its own, the
 * allocation's slot in DEVICE_BASE + slot * DEVICE_SLOT_BYTES: far from any
 * host address on any address layout, so a kernel handed the host address
 * instead is caught, and nothing depends on where the host's heap lies. */
#define DEVICE_BASE ((uintptr_t)0xD << 60)
#define DEVICE_SLOT_BYTES ((uintptr_t)1 << 32)
#define MAX_HOST_ALLOCATIONS 16
typedef struct {
  char* host;
  size_t bytes;
  int mapped;
  int probe; /* the clock probe's words */
} host_allocation;
static host_allocation host_allocations[MAX_HOST_ALLOCATIONS];
static int live_host_allocations;
int fake_live_host_allocations(void) { return live_host_allocations; }

static int host_alloc(const char* call, void** host, size_t bytes, int mapped) {
  int err = injected(call);
  if (err) return err;
  if (bytes > DEVICE_SLOT_BYTES) return 2;
  for (int i = 0; i < MAX_HOST_ALLOCATIONS; ++i) {
    if (!host_allocations[i].host) {
      host_allocations[i].host = calloc(1, bytes);
      host_allocations[i].bytes = bytes;
      host_allocations[i].mapped = mapped;
      host_allocations[i].probe = 0;
      *host = host_allocations[i].host;
      ++live_host_allocations;
      record(call)->value = bytes;
      return 0;
    }
  }
  return 2;
}

static int host_device_pointer(const char* call, void** device, void* host) {
  int err = injected(call);
  if (err) return err;
  for (int i = 0; i < MAX_HOST_ALLOCATIONS; ++i) {
    host_allocation* a = &host_allocations[i];
    if (a->host && (char*)host >= a->host && (char*)host < a->host + a->bytes) {
      if (!a->mapped) return 1; /* not allocated mapped: no device address */
      *device = (void*)(DEVICE_BASE + (uintptr_t)i * DEVICE_SLOT_BYTES + (uintptr_t)((char*)host - a->host));
      return 0;
    }
  }
  return 1;
}

/* The live host allocation (cuMemHostAlloc / hipHostMalloc) holding `address`, as a host
 * pointer or as its mapped device address, or NULL. fake_hip_runtime.c asks it too. */
static host_allocation* find_host_allocation(uintptr_t address) {
  for (int i = 0; i < MAX_HOST_ALLOCATIONS; ++i) {
    host_allocation* a = &host_allocations[i];
    if (!a->host) continue;
    const uintptr_t host = (uintptr_t)a->host, device = DEVICE_BASE + (uintptr_t)i * DEVICE_SLOT_BYTES;
    if ((address >= host && address - host < a->bytes) || (address >= device && address - device < a->bytes)) return a;
  }
  return NULL;
}
int fake_host_allocation_range(uintptr_t address, uintptr_t* start, size_t* bytes) {
  const host_allocation* a = find_host_allocation(address);
  if (!a) return 0;
  *start = (uintptr_t)a->host;
  *bytes = a->bytes;
  return 1;
}

/* The host word behind a device address of live mapped memory, or NULL (not
 * such an address, or its allocation was freed). */
static void* mapped_range(uintptr_t device, size_t bytes) {
  if (device < DEVICE_BASE) return NULL;
  const uintptr_t slot = (device - DEVICE_BASE) / DEVICE_SLOT_BYTES;
  const uintptr_t offset = (device - DEVICE_BASE) % DEVICE_SLOT_BYTES;
  if (slot >= MAX_HOST_ALLOCATIONS) return NULL;
  host_allocation* a = &host_allocations[slot];
  if (!a->host || !a->mapped || offset + bytes > a->bytes) return NULL;
  return a->host + offset;
}
static uint32_t* mapped_word(uintptr_t device) { return mapped_range(device, 4); }

/* ---- the clock probe's stamp kernel (pyhipbench_clock_stamp) ----
 * A launch writes (%globaltimer ns, SM 0's cycles) into the mapped memory its
 * argument points to: the fake's clock (plus 1 s: a real globaltimer is never
 * 0) and cycles counted at `sm_mhz` since the last stamp, or at
 * `throttled_mhz` for the next `throttled_stamps` stamps (a run is two). The
 * rated clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE) is FAKE_RATED_SM_KHZ. */
void fake_set_sm_clock_mhz(double mhz) { sm_mhz = mhz; }
void fake_throttle_stamps(int stamps, double mhz) {
  throttled_stamps = stamps;
  throttled_mhz = mhz;
}
int fake_stamp_count(void) { return fake_stamps; }
static int launch_stamp(void** params) {
  uint64_t* out = mapped_range(*(uintptr_t*)params[0], 16);
  if (!out) return 1; /* not mapped memory */
  const double mhz = throttled_stamps > 0 ? throttled_mhz : sm_mhz;
  if (throttled_stamps > 0) --throttled_stamps;
  stamp_cycles += (clock_ms - stamp_ms) * 1e3 * mhz;
  stamp_ms = clock_ms;
  out[0] = (uint64_t)(clock_ms * 1e6) + 1000000000ull;
  out[1] = (uint64_t)stamp_cycles;
  ++fake_stamps;
  return 0;
}

/* ---- the spin kernel ----
 * A launch of `spin_function` is the batched timer's spin kernel. The fake
 * runs launches when they are queued, so "held" is bookkeeping: while the
 * spin's release word (host memory) is below its target, every call is
 * recorded with blocked_by = the target. The spin ends when a later call finds
 * the word released, or, if the host synchronizes first or queues more than
 * `spin_queue_limit` launches behind it (a real launch call would block until
 * the spin gives up), it times out and writes its target to the timed-out word.
 * The spin keeps the words' device addresses and looks them up at each use,
 * so a spin whose memory was freed (its timer collected) has ended; fake_reset
 * ends any spin left by an earlier test. */
static uintptr_t spin_function;
static struct {
  int active;
  uintptr_t flag, timed_out; /* device addresses */
  uint32_t target;
  int queued;
} spin;
static void forget_spin(void) { spin.active = 0; }
void fake_set_spin_function(uintptr_t f) { spin_function = f; }
void fake_set_spin_queue_limit(int launches) { spin_queue_limit = launches; }

/* The pending spin's release word, or NULL if no spin is pending (or its memory is gone). */
static volatile uint32_t* spin_flag(void) {
  if (!spin.active) return NULL;
  volatile uint32_t* flag = mapped_word(spin.flag);
  if (!flag) spin.active = 0;
  return flag;
}

static uint64_t blocking_spin(void) {
  volatile uint32_t* flag = spin_flag();
  return flag && *flag < spin.target ? spin.target : 0;
}

/* Ends the pending spin: released if its word reached the target, else timed out. */
static void finish_spin(void) {
  volatile uint32_t* flag = spin_flag();
  if (!flag) return;
  int released = *flag >= spin.target;
  spin.active = 0;
  uint32_t* timed_out = mapped_word(spin.timed_out);
  if (!released && timed_out) *timed_out = spin.target;
  record(released ? "spin released" : "spin timed out")->value = spin.target;
}

static int launch_spin(void** params, uintptr_t stream) {
  finish_spin(); /* the stream runs one spin at a time */
  uintptr_t flag = *(uintptr_t*)params[0], timed_out = *(uintptr_t*)params[3];
  if (!mapped_word(flag) || !mapped_word(timed_out)) return 1; /* not device addresses of mapped memory */
  fake_record* r = record("spin");
  r->stream = stream;
  r->arg_values[0] = flag;
  r->arg_values[1] = *(uint32_t*)params[1];
  r->arg_values[2] = *(uint64_t*)params[2];
  r->arg_values[3] = timed_out;
  r->value = *(uint32_t*)params[1];
  spin.active = 1;
  spin.flag = flag;
  spin.target = *(uint32_t*)params[1];
  spin.timed_out = timed_out;
  spin.queued = 0;
  return 0;
}

/* A launch arriving behind the spin: a released spin ends; a full queue makes it time out. */
static void queue_behind_spin(void) {
  if (!spin_flag()) return;
  if (!blocking_spin() || (spin_queue_limit && spin.queued >= spin_queue_limit)) {
    finish_spin();
    return;
  }
  ++spin.queued;
}

static int host_free(const char* call, void* host) {
  for (int i = 0; i < MAX_HOST_ALLOCATIONS; ++i) {
    host_allocation* a = &host_allocations[i];
    if (host && a->host == host) {
      record(call)->value = a->bytes;
      free(a->host);
      a->host = NULL;
      --live_host_allocations;
      return 0;
    }
  }
  return 1;
}

/* ---- modules (CUDA): PTX text; a function per `.entry NAME(` it declares ----
 * A module keeps a copy of its PTX; each function handle is the address of a
 * slot in the module holding the name. The batched timer's embedded spin
 * kernel (pyhipbench_spin) is run as a spin kernel when launched. */
#define MAX_MODULE_FUNCTIONS 16
typedef struct {
  char* ptx;
  char functions[MAX_MODULE_FUNCTIONS][64]; /* names looked up, in order */
} fake_module;
static int live_modules;
int fake_live_modules(void) { return live_modules; }

/* The live modules, so a function handle's kernel name can be found (fake_kernel_name). */
#define MAX_NAMED_MODULES 256
static fake_module* named_modules[MAX_NAMED_MODULES];
static void remember_module(fake_module* m, fake_module* replaced) {
  for (int i = 0; i < MAX_NAMED_MODULES; ++i) {
    if (named_modules[i] == replaced) {
      named_modules[i] = m;
      return;
    }
  }
}

const char* fake_function_name(uintptr_t function) __attribute__((weak)); /* the fake HIP runtime's */

const char* fake_kernel_name(uintptr_t function) {
  for (int i = 0; i < function_name_count; ++i)
    if (function_names[i].function == function) return function_names[i].name;
  const char* name = fake_function_name ? fake_function_name(function) : NULL;
  if (name) return name;
  for (int i = 0; i < MAX_NAMED_MODULES; ++i) { /* a CUDA handle is the address of its module's name slot */
    const fake_module* m = named_modules[i];
    if (!m) continue;
    const uintptr_t first = (uintptr_t)m->functions, slot_bytes = sizeof m->functions[0];
    if (function >= first && function < first + sizeof m->functions && (function - first) % slot_bytes == 0 &&
        *(const char*)function) {
      return (const char*)function;
    }
  }
  return NULL;
}

/* How long a launch of `block_x` threads per block takes, ms: launch_ms, or
 * the time FAKE_LAUNCH_US_BY_BLOCK gives that block size ("64:9,256:3": µs
 * per block size), so a tuner's candidates differ. "128:7~0.5": 7 µs ± 0.5,
 * launch after launch, a spread whose median's CI never narrows (racing). */
static double launch_duration_ms(uint32_t block_x) {
  static int jitter_up;
  const char* table = getenv("FAKE_LAUNCH_US_BY_BLOCK");
  for (const char* p = table; p && *p;) {
    char* end;
    const unsigned long block = strtoul(p, &end, 10);
    if (*end != ':') break;
    const double us = strtod(end + 1, &end);
    const double jitter_us = *end == '~' ? strtod(end + 1, &end) : 0;
    if (block == block_x) {
      jitter_up = !jitter_up;
      return (jitter_up ? us + jitter_us : us - jitter_us) / 1000;
    }
    p = *end == ',' ? end + 1 : end;
  }
  return launch_ms;
}

/* ---- misbehaving kernels, chosen by name (fake_kernel_name: CUDA's module slots, or the fake HIP runtime's) ----
 * Environment, read at each launch, each a comma-separated list of kernel names:
 *   FAKE_KERNEL_FAULT  the launch returns 700 (an illegal address) and every later call too, as a real fault
 *   FAKE_KERNEL_HANG   the launch returns, and the kernel never ends: from then on no work completes (an
 *                      event query says not ready, a synchronisation never returns), as on a GPU
 *   FAKE_KERNEL_ABORT  the launch aborts the process (ROCm's default on a GPU memory fault) */
static int named_in(const char* variable, const char* name) {
  const char* list = getenv(variable);
  const size_t length = strlen(name);
  for (const char* at = list; at && *at; at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL) {
    if (strncmp(at, name, length) == 0 && (at[length] == ',' || at[length] == 0)) return 1;
  }
  return 0;
}

static int misbehave(uintptr_t f) {
  const char* name = fake_kernel_name(f);
  if (!name) return 0;
  if (named_in("FAKE_KERNEL_ABORT", name)) abort();
  if (named_in("FAKE_KERNEL_HANG", name)) hung = 1;
  if (named_in("FAKE_KERNEL_FAULT", name)) return sticky_code = 700;
  return 0;
}

/* Runs (or captures) one launch; a kernel that ran is reported to the tracer
 * with `correlation_id`, the id of the API call that made it. */
static int record_launch(const char* call, uintptr_t f, const uint32_t grid[3], const uint32_t block[3],
                         uint64_t shared, uintptr_t stream, void** params, fake_event* start, fake_event* stop,
                         uint32_t correlation_id) {
  if (stamp_function && f == stamp_function) {
    int err = injected("clock stamp");
    if (!err) err = launch_stamp(params);
    if (err) return err;
    /* No kernel record for the fake CUPTI: the traces skip the stamps' records by their correlation ids. */
    (void)correlation_id;
    record("clock stamp")->stream = stream;
    return 0;
  }
  int err = injected(call);
  if (err) return err;
  err = implicit_capture_dependency(stream);
  if (err) return err;
  err = misbehave(f);
  if (err || hung) return err; /* a hung kernel (or one queued behind it) runs no further */
  const fake_launch_params launch = {(void*)f, grid[0],          grid[1],       grid[2], block[0], block[1],
                                     block[2], (unsigned)shared, (void*)stream, params,  NULL};
  const double start_ms = clock_ms;
  if (spin_function && f == spin_function) {
    err = launch_spin(params, stream);
    if (!err) report_kernel(correlation_id, &launch, start_ms, clock_ms); /* it runs, on the GPU's own time */
    return err;
  }
  queue_behind_spin();
  char captured_call[sizeof records[0].call];
  snprintf(captured_call, sizeof captured_call, "captured %s", call);
  const int in_capture = captured(captured_call, f, grid, block, shared, (void*)stream, params);
  if (in_capture < 0) return -in_capture;       /* the capture was invalidated */
  if (in_capture) return start || stop ? 1 : 0; /* as HIP: no events inside a capture */
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
  if (start) {
    start->time_ms = clock_ms;
    start->recorded = 1;
  }
  if (kernel_body) kernel_body(f, params);
  clock_ms += launch_duration_ms(block[0]);
  launch_ms += launch_ms_step;
  if (stop) {
    stop->time_ms = clock_ms;
    stop->recorded = 1;
  }
  report_kernel(correlation_id, &launch, start_ms, clock_ms);
  return 0;
}

/* ---- memsets and memcpys (cuMemsetD8Async, cuMemcpy*Async, hipMemsetAsync, hipMemcpyDtoDAsync) ----
 * The caller has checked the call's context and ranges. On a capturing
 * stream the copy becomes a graph node; otherwise it sets or copies memory at
 * once (device memory is host memory), takes copy_ms on the fake clock and is
 * reported to the tracer with `correlation_id`. Recorded as `call` with the
 * stream, value = bytes, arg_values = {destination, memset value or memcpy source, bytes}. */
int fake_issue_copy(const char* call, int kind, uint8_t copy_kind, void* destination, const void* source,
                    uint32_t value, size_t bytes, void* stream, uint32_t correlation_id) {
  int err = implicit_capture_dependency((uintptr_t)stream);
  if (err) return err;
  queue_behind_spin(); /* queued on the stream as a launch is */
  fake_node node = {.type = kind == FAKE_WORK_MEMSET ? NODE_MEMSET : NODE_MEMCPY,
                    .destination = (uintptr_t)destination,
                    .source = (uintptr_t)source,
                    .value = value,
                    .bytes = bytes,
                    .copy_kind = copy_kind};
  fake_graph* graph = capturing(stream, &err);
  if (err) return err;
  char name[sizeof records[0].call];
  snprintf(name, sizeof name, "%s%s", graph ? "captured " : "", call);
  fake_record* r = record(name);
  r->stream = (uintptr_t)stream;
  r->arg_values[0] = node.destination;
  r->arg_values[1] = node.type == NODE_MEMSET ? node.value : node.source;
  r->arg_values[2] = bytes;
  if (graph) {
    *add_node(graph) = node;
    r->value = (uintptr_t)stream; /* as a captured launch: recorded, not run */
    return 0;
  }
  r->value = bytes;
  run_copy_node(&node, (uintptr_t)stream, correlation_id);
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

/* The host waits for work that never completes. */
static void wait_on_hung_kernel(void) {
  while (hung) pause();
}

static int event_synchronize(const char* call, fake_event* event) {
  int err = injected(call);
  if (err) return err;
  wait_on_hung_kernel();
  finish_spin(); /* the host waits: a spin still holding the GPU runs into its timeout */
  record(call)->event = (uintptr_t)event;
  return 0;
}

/* Completion, as cuEventQuery / hipEventQuery report it: 600 (not ready) behind a hung kernel. */
static int event_query(const char* call, fake_event* event) {
  int err = injected(call);
  if (err) return err;
  (void)event;
  return hung ? 600 : 0;
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
    case 0:
      return "SUCCESS";
    case 1:
      return "INVALID_VALUE";
    case 2:
      return "OUT_OF_MEMORY";
    case 98:
      return "INVALID_DEVICE_FUNCTION";
    case 100:
      return "NO_DEVICE";
    case 101:
      return "INVALID_DEVICE";
    case 201:
      return "INVALID_CONTEXT";
    case 200:
      return "INVALID_IMAGE";
    case 400:
      return "INVALID_HANDLE";
    case 500:
      return "NOT_FOUND";
    case 700:
      return "ILLEGAL_ADDRESS";
    case 900:
      return "STREAM_CAPTURE_UNSUPPORTED";
    case 901:
      return "STREAM_CAPTURE_INVALIDATED";
    case 906:
      return "STREAM_CAPTURE_IMPLICIT";
    default:
      return "UNKNOWN";
  }
}

static const char* error_string(int code) {
  switch (code) {
    case 0:
      return "no error";
    case 1:
      return "invalid argument";
    case 2:
      return "out of memory";
    case 98:
      return "invalid device function";
    case 100:
      return "no GPU device was detected";
    case 101:
      return "invalid device ordinal";
    case 201:
      return "invalid device context";
    case 200:
      return "device kernel image is invalid";
    case 400:
      return "invalid resource handle";
    case 500:
      return "named symbol not found";
    case 700:
      return "an illegal memory access was encountered";
    case 900:
      return "operation not permitted when stream is capturing";
    case 901:
      return "operation failed due to a previous error during capture";
    case 906:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    default:
      return "unknown error";
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
int cuGetErrorString(int code, const char** s) {
  *s = error_string(code);
  return 0;
}
int cuEventCreate(fake_event** event, unsigned flags) {
  (void)flags;
  return event_create("cuEventCreate", event);
}
int cuEventDestroy_v2(fake_event* event) { return event_destroy(event); }
int cuEventRecord(fake_event* event, void* stream) {
  const struct {
    fake_event* event;
    void* stream;
  } params = {event, stream}; /* cuEventRecord_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 119, "cuEventRecord", &params, NULL);
  return api_exit(&api, event_record("cuEventRecord", event));
}
int cuEventSynchronize(fake_event* event) { return event_synchronize("cuEventSynchronize", event); }
int cuEventQuery(fake_event* event) { return event_query("cuEventQuery", event); }
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
/* flags: CU_STREAM_NON_BLOCKING (1) makes a stream that does not synchronize with the legacy stream. */
int cuStreamCreate(fake_stream** stream, unsigned flags) { return stream_create("cuStreamCreate", stream, flags); }
int cuStreamDestroy_v2(fake_stream* stream) { return stream_destroy("cuStreamDestroy_v2", stream); }
int cuStreamBeginCapture_v2(fake_stream* stream, int mode) {
  (void)mode;
  return begin_capture("cuStreamBeginCapture_v2", stream);
}
int cuStreamEndCapture(fake_stream* stream, fake_graph** graph) {
  return end_capture("cuStreamEndCapture", stream, graph);
}
int cuGraphInstantiateWithFlags(fake_graph** exec, fake_graph* graph, unsigned long long flags) {
  (void)flags;
  return graph_instantiate("cuGraphInstantiateWithFlags", exec, graph);
}
int cuGraphLaunch(fake_graph* exec, void* stream) {
  const struct {
    fake_graph* exec;
    void* stream;
  } params = {exec, stream}; /* cuGraphLaunch_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 514, "cuGraphLaunch", &params, NULL);
  return api_exit(&api, graph_launch("cuGraphLaunch", exec, (uintptr_t)stream, api.correlation_id));
}
int cuGraphExecDestroy(fake_graph* exec) { return graph_destroy(exec, &live_graph_execs); }
int cuGraphDestroy(fake_graph* graph) { return graph_destroy(graph, &live_graphs); }
/* The clock probe's calls (its module, stamp function and mapped words, made
 * in that order) are recorded as "clock probe <call>", and its stamps as
 * "clock stamp", so a test of a timer's own calls can leave them out
 * (FakeDriver.work) and an injected failure of a call names the timer's. */
static int probe_alloc_next; /* the stamp function was just looked up: the next host allocation is the probe's */
int cuMemHostAlloc(void** host, size_t bytes, unsigned flags) {
  const int probe = probe_alloc_next;
  probe_alloc_next = 0;
  const int err = host_alloc(probe ? "clock probe cuMemHostAlloc" : "cuMemHostAlloc", host, bytes,
                             (flags & 0x02) != 0); /* CU_MEMHOSTALLOC_DEVICEMAP */
  if (!err && probe) find_host_allocation((uintptr_t)*host)->probe = 1;
  return err;
}
int cuMemHostGetDevicePointer_v2(void** device, void* host, unsigned flags) {
  (void)flags;
  return host_device_pointer("cuMemHostGetDevicePointer_v2", device, host);
}
int cuMemFreeHost(void* host) {
  const host_allocation* a = host ? find_host_allocation((uintptr_t)host) : NULL;
  return host_free(a && a->probe ? "clock probe cuMemFreeHost" : "cuMemFreeHost", host);
}
static int declares_entry(const char* ptx, const char* name);
static const char* probe_call(const char* ptx, const char* call, char* named, size_t size) {
  if (!ptx || !declares_entry(ptx, "pyhipbench_clock_stamp")) return call;
  snprintf(named, size, "clock probe %s", call);
  return named;
}
int cuModuleLoadData(fake_module** module, const char* image) {
  char named[40];
  const char* call = probe_call(image, "cuModuleLoadData", named, sizeof named);
  int err = injected(call);
  if (err) return err;
  if (!image || !strstr(image, ".entry ")) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  *module = calloc(1, sizeof **module);
  (*module)->ptx = strdup(image);
  remember_module(*module, NULL);
  ++live_modules;
  record(call)->value = (uintptr_t)*module;
  return 0;
}
/* Whether the PTX declares `.entry name(` (or `.entry name (`). */
static int declares_entry(const char* ptx, const char* name) {
  const size_t length = strlen(name);
  for (const char* p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
    const char* q = p + strlen(".entry ");
    if (strncmp(q, name, length) == 0 && (q[length] == '(' || q[length] == ' ')) return 1;
  }
  return 0;
}
int cuModuleGetFunction(void** function, fake_module* module, const char* name) {
  char named[40];
  const char* call = probe_call(module ? module->ptx : NULL, "cuModuleGetFunction", named, sizeof named);
  int err = injected(call);
  if (err) return err;
  if (!module || !name || strlen(name) >= sizeof module->functions[0] || !declares_entry(module->ptx, name)) {
    return 500; /* CUDA_ERROR_NOT_FOUND */
  }
  int slot = 0;
  while (slot < MAX_MODULE_FUNCTIONS && module->functions[slot][0] && strcmp(module->functions[slot], name) != 0) {
    ++slot;
  }
  if (slot == MAX_MODULE_FUNCTIONS) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  strcpy(module->functions[slot], name);
  *function = module->functions[slot];
  if (strcmp(name, "pyhipbench_spin") == 0) spin_function = (uintptr_t)*function;
  if (strcmp(name, "pyhipbench_clock_stamp") == 0) {
    stamp_function = (uintptr_t)*function;
    probe_alloc_next = 1;
  }
  record(call)->value = (uintptr_t)*function;
  return 0;
}
int cuModuleUnload(fake_module* module) {
  if (!module) return 400;
  const uintptr_t first = (uintptr_t)module->functions, end = first + sizeof module->functions;
  if (spin_function >= first && spin_function < end) spin_function = 0;
  if (stamp_function >= first && stamp_function < end) stamp_function = 0;
  char named[40];
  record(probe_call(module->ptx, "cuModuleUnload", named, sizeof named))->value = (uintptr_t)module;
  remember_module(NULL, module);
  free(module->ptx);
  free(module);
  --live_modules;
  return 0;
}

/* ---- devices, primary contexts and memory (CUDA) ----
 * FAKE_CUDA_DEVICE_COUNT devices (default 1), each an H200 as pyhipbench's
 * h200 profile has it: a 60 MiB L2 and FAKE_CUDA_TOTAL_BYTES of memory
 * (default 141 GB), read at each cuMemGetInfo_v2, whose free memory is that
 * less the live allocations. Device d's primary context is the handle
 * 0xC00000 + d (the made-up context the tests push). Device memory is host
 * memory; a copy's range must lie inside one live allocation, so tests catch
 * copies past the end of a buffer, or clear of them all (copyable_range). */
#define FAKE_CUDA_PRIMARY_CONTEXT 0xC00000u
#define FAKE_CUDA_L2_BYTES (60 << 20)
#define MAX_DEVICE_ALLOCATIONS 4096
typedef struct {
  char* base;
  size_t bytes;
  int device; /* the ordinal of the context current when it was allocated */
} device_allocation;
static device_allocation device_allocations[MAX_DEVICE_ALLOCATIONS];
static int live_device_allocations, retained_contexts;
static size_t device_allocated_bytes;
int fake_live_device_allocations(void) { return live_device_allocations; }
int fake_retained_contexts(void) { return retained_contexts; }

static int cuda_device_count(void) {
  const char* text = getenv("FAKE_CUDA_DEVICE_COUNT");
  return text && *text ? atoi(text) : 1;
}
int cuInit(unsigned flags) { return flags ? 1 : injected("cuInit"); }
/* NVRTC looks for the driver loaded in the process (by the soname libcuda.so.1, which this
 * fake has) and asks it for its private export tables; without this it calls a null pointer.
 * CUDA_ERROR_NOT_SUPPORTED: NVRTC then compiles without the driver, as on a machine with none. */
int cuGetExportTable(const void** table, const void* id) {
  (void)id;
  *table = 0;
  return 801;
}
int cuDeviceGetCount(int* count) {
  int err = injected("cuDeviceGetCount");
  if (err) return err;
  *count = cuda_device_count();
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  int err = injected("cuDeviceGet");
  if (err) return err;
  if (ordinal < 0 || ordinal >= cuda_device_count()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = ordinal;
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  int err = injected("cuDevicePrimaryCtxRetain");
  if (err) return err;
  if (device < 0 || device >= cuda_device_count()) return 101;
  *context = (void*)(uintptr_t)(FAKE_CUDA_PRIMARY_CONTEXT + device);
  ++retained_contexts;
  record("cuDevicePrimaryCtxRetain")->value = (uintptr_t)*context;
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device) {
  if (device < 0 || device >= cuda_device_count() || retained_contexts == 0) return 101;
  --retained_contexts;
  record("cuDevicePrimaryCtxRelease_v2")->value = (uintptr_t)device;
  return 0;
}
/* The device of the current context when it is a primary one, else 0. */
static int current_context_device(void) {
  const uintptr_t context = context_depth ? context_stack[context_depth - 1] : 0;
  const int primary =
      context >= FAKE_CUDA_PRIMARY_CONTEXT && context < FAKE_CUDA_PRIMARY_CONTEXT + (uintptr_t)cuda_device_count();
  return primary ? (int)(context - FAKE_CUDA_PRIMARY_CONTEXT) : 0;
}
/* Memory calls need a current context, as the real driver's do. */
static int needs_context(const char* call) {
  int err = injected(call);
  if (err) return err;
  return context_depth == 0 ? 201 : 0; /* CUDA_ERROR_INVALID_CONTEXT */
}
int cuCtxSynchronize(void) {
  static const uint64_t no_params = 0; /* it has no arguments: CUPTI is handed a zeroed word */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 17, "cuCtxSynchronize", &no_params, NULL);
  wait_on_hung_kernel();
  return api_exit(&api, needs_context("cuCtxSynchronize"));
}
/* The host waits for the stream: a spin still holding it runs into its timeout, as at cuEventSynchronize. */
int cuStreamSynchronize(void* stream) {
  const struct {
    void* stream;
  } params = {stream}; /* cuStreamSynchronize_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 126, "cuStreamSynchronize", &params, NULL);
  int err = injected("cuStreamSynchronize");
  if (!err) {
    wait_on_hung_kernel();
    finish_spin();
    record("cuStreamSynchronize")->stream = (uintptr_t)stream;
  }
  return api_exit(&api, err);
}
int cuMemAlloc_v2(uint64_t* address, size_t bytes) {
  int err = needs_context("cuMemAlloc_v2");
  if (err) return err;
  if (bytes == 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
  for (int i = 0; i < MAX_DEVICE_ALLOCATIONS; ++i) {
    device_allocation* a = &device_allocations[i];
    if (a->base) continue;
    a->base = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!a->base) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    a->bytes = bytes;
    a->device = current_context_device();
    device_allocated_bytes += bytes;
    ++live_device_allocations;
    *address = (uintptr_t)a->base;
    record("cuMemAlloc_v2")->value = bytes;
    return 0;
  }
  return 2;
}
int cuMemFree_v2(uint64_t address) {
  int err = needs_context("cuMemFree_v2");
  if (err) return err;
  for (int i = 0; i < MAX_DEVICE_ALLOCATIONS; ++i) {
    device_allocation* a = &device_allocations[i];
    if (a->base && (uintptr_t)a->base == address) {
      record("cuMemFree_v2")->value = a->bytes;
      device_allocated_bytes -= a->bytes;
      free(a->base);
      a->base = NULL;
      --live_device_allocations;
      return 0;
    }
  }
  return 1;
}
int cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  int err = needs_context("cuMemGetInfo_v2");
  if (err) return err;
  const char* text = getenv("FAKE_CUDA_TOTAL_BYTES");
  *total_bytes = text && *text ? (size_t)strtoull(text, NULL, 0) : 141000000000ull;
  *free_bytes = *total_bytes > device_allocated_bytes ? *total_bytes - device_allocated_bytes : 0;
  return 0;
}
/* The device of the current context: a primary context's, else CUDA_ERROR_INVALID_CONTEXT. */
int cuCtxGetDevice(int* device) {
  int err = needs_context("cuCtxGetDevice");
  if (err) return err;
  const uintptr_t context = context_stack[context_depth - 1];
  if (context < FAKE_CUDA_PRIMARY_CONTEXT || context >= FAKE_CUDA_PRIMARY_CONTEXT + (uintptr_t)cuda_device_count()) {
    return 201;
  }
  *device = (int)(context - FAKE_CUDA_PRIMARY_CONTEXT);
  return 0;
}
/* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (38) only; any other is CUDA_ERROR_INVALID_VALUE. */
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  int err = injected("cuDeviceGetAttribute");
  if (err) return err;
  if (device < 0 || device >= cuda_device_count()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  switch (attribute) {
    case 38:
      *value = FAKE_CUDA_L2_BYTES;
      return 0; /* L2_CACHE_SIZE */
    case 13:
      *value = FAKE_RATED_SM_KHZ;
      return 0; /* CLOCK_RATE, kHz */
    case 16:
      *value = FAKE_SM_COUNT;
      return 0; /* MULTIPROCESSOR_COUNT */
    default:
      return 1;
  }
}
/* Whether [address, address + bytes) lies inside one live allocation. */
static int device_range(uint64_t address, size_t bytes) {
  for (int i = 0; i < MAX_DEVICE_ALLOCATIONS; ++i) {
    const device_allocation* a = &device_allocations[i];
    const uintptr_t base = (uintptr_t)a->base;
    if (a->base && address >= base && address - base <= a->bytes && bytes <= a->bytes - (address - base)) return 1;
  }
  return 0;
}
/* Whether a device-to-device copy may read or write [address, address + bytes):
 * inside one live allocation, or clear of every one. The second is host memory
 * a test owns standing in for device memory made elsewhere in the process (the
 * host backend's arrays, fake tensors), as the real driver copies between
 * allocations made through other bindings of it. */
static int copyable_range(uint64_t address, size_t bytes) {
  if (address == 0) return 0;
  if (device_range(address, bytes)) return 1;
  for (int i = 0; i < MAX_DEVICE_ALLOCATIONS; ++i) {
    const device_allocation* a = &device_allocations[i];
    const uintptr_t base = (uintptr_t)a->base;
    const int overlaps = base <= address ? address - base < a->bytes : base - address < bytes;
    if (a->base && overlaps) return 0; /* runs into or past an allocation: not inside it */
  }
  return 1;
}
int cuMemcpyDtoD_v2(uint64_t destination, uint64_t source, size_t bytes) {
  int err = needs_context("cuMemcpyDtoD_v2");
  if (err) return err;
  if (!copyable_range(destination, bytes) || !copyable_range(source, bytes)) return 1;
  memmove((void*)(uintptr_t)destination, (const void*)(uintptr_t)source, bytes);
  record("cuMemcpyDtoD_v2")->value = bytes;
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t destination, const void* source, size_t bytes) {
  int err = needs_context("cuMemcpyHtoD_v2");
  if (err) return err;
  if (!device_range(destination, bytes) || (!source && bytes)) return 1;
  memcpy((void*)(uintptr_t)destination, source, bytes);
  record("cuMemcpyHtoD_v2")->value = bytes;
  return 0;
}
/* What the device copies of [address, address + bytes) hold, for the tests. */
int fake_read_device(void* host, uint64_t address, size_t bytes) {
  if (!device_range(address, bytes)) return 1;
  memcpy(host, (const void*)(uintptr_t)address, bytes);
  return 0;
}

/* ---- pointer attributes (CUDA) ----
 * What the driver knows of an address, from the tables above: inside a live
 * cuMemAlloc_v2 allocation, device memory (CU_MEMORYTYPE_DEVICE) of the device
 * it was allocated on; inside a cuMemHostAlloc one (host or mapped address),
 * host memory (CU_MEMORYTYPE_HOST); anything else (plain host memory, a test's
 * buffers) is memory the driver does not know: cuPointerGetAttribute fails
 * with CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes answers zeros, as the
 * real driver does. The attributes answered: MEMORY_TYPE (2), IS_MANAGED (8),
 * DEVICE_ORDINAL (9), RANGE_START_ADDR (11), RANGE_SIZE (12), MAPPED (13);
 * any other is CUDA_ERROR_INVALID_VALUE. */
typedef struct {
  unsigned memory_type; /* CUmemorytype; 0: not memory the driver knows */
  int device;
  uint64_t start;
  size_t bytes;
} pointer_facts;
static pointer_facts pointer_facts_of(uint64_t address) {
  pointer_facts facts = {0, 0, 0, 0};
  for (int i = 0; i < MAX_DEVICE_ALLOCATIONS; ++i) {
    const device_allocation* a = &device_allocations[i];
    const uintptr_t base = (uintptr_t)a->base;
    if (a->base && address >= base && address - base < a->bytes) {
      facts = (pointer_facts){2, a->device, base, a->bytes};
      return facts;
    }
  }
  uintptr_t start;
  size_t bytes;
  if (fake_host_allocation_range(address, &start, &bytes))
    facts = (pointer_facts){1, current_context_device(), start, bytes};
  return facts;
}
static int pointer_attribute(void* data, int attribute, const pointer_facts* facts) {
  switch (attribute) {
    case 2: /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
      *(unsigned*)data = facts->memory_type;
      return 0;
    case 8: /* CU_POINTER_ATTRIBUTE_IS_MANAGED */
      *(unsigned*)data = 0;
      return 0;
    case 9: /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
      *(int*)data = facts->device;
      return 0;
    case 11: /* CU_POINTER_ATTRIBUTE_RANGE_START_ADDR */
      *(uint64_t*)data = facts->start;
      return 0;
    case 12: /* CU_POINTER_ATTRIBUTE_RANGE_SIZE */
      *(size_t*)data = facts->bytes;
      return 0;
    case 13: /* CU_POINTER_ATTRIBUTE_MAPPED */
      *(unsigned*)data = facts->memory_type != 0;
      return 0;
    default:
      return 1; /* CUDA_ERROR_INVALID_VALUE */
  }
}
int cuPointerGetAttribute(void* data, int attribute, uint64_t address) {
  int err = injected("cuPointerGetAttribute");
  if (err) return err;
  const pointer_facts facts = pointer_facts_of(address);
  if (!data || !facts.memory_type) return 1; /* CUDA_ERROR_INVALID_VALUE: not memory the driver knows */
  return pointer_attribute(data, attribute, &facts);
}
int cuPointerGetAttributes(unsigned count, const int* attributes, void** data, uint64_t address) {
  int err = injected("cuPointerGetAttributes");
  if (err) return err;
  if (!attributes || !data) return 1;
  const pointer_facts facts = pointer_facts_of(address);
  for (unsigned i = 0; i < count; ++i) {
    if (!data[i]) return 1;
    err = pointer_attribute(data[i], attributes[i], &facts);
    if (err) return err;
  }
  return 0;
}

int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void* stream, void** params, void** extra) {
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  const fake_launch_params call = {f, gx, gy, gz, bx, by, bz, shared, stream, params, extra};
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 307, "cuLaunchKernel", &call, fake_kernel_name((uintptr_t)f));
  if (launch_observer) launch_observer(FAKE_LAUNCH_ENTER, &call, 0, 0, 0);
  const double start_ms = clock_ms;
  const int result = record_launch("cuLaunchKernel", (uintptr_t)f, grid, block, shared, (uintptr_t)stream, params, NULL,
                                   NULL, api.correlation_id);
  if (launch_observer) launch_observer(FAKE_LAUNCH_EXIT, &call, result, start_ms, clock_ms);
  return api_exit(&api, result);
}

/* CUlaunchConfig, as cuda.h lays it out (56 bytes). */
typedef struct {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  void* stream;
  void* attributes; /* CUlaunchAttribute*: ignored here (no clusters, no priorities) */
  unsigned attribute_count;
} fake_launch_config;
_Static_assert(sizeof(fake_launch_config) == 56, "CUlaunchConfig is 56 bytes");
_Static_assert(offsetof(fake_launch_config, stream) == 32, "CUlaunchConfig.hStream");

/* cuLaunchKernelEx's arguments, laid out as CUPTI's cuLaunchKernelEx_params:
 * the config first, then the CUfunction (not first, unlike cuLaunchKernel_params). */
typedef struct {
  const fake_launch_config* config;
  void* f;
  void** kernel_params;
  void** extra;
} fake_launch_ex_params;

/* As cuLaunchKernel, with the launch's shape and stream in `config`; recorded as "cuLaunchKernelEx". */
int cuLaunchKernelEx(const fake_launch_config* config, void* f, void** params, void** extra) {
  const fake_launch_ex_params call = {config, f, params, extra};
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 652, "cuLaunchKernelEx", &call, fake_kernel_name((uintptr_t)f));
  if (!config) return api_exit(&api, 1); /* CUDA_ERROR_INVALID_VALUE */
  const uint32_t grid[3] = {config->grid_x, config->grid_y, config->grid_z};
  const uint32_t block[3] = {config->block_x, config->block_y, config->block_z};
  return api_exit(&api, record_launch("cuLaunchKernelEx", (uintptr_t)f, grid, block, config->shared_bytes,
                                      (uintptr_t)config->stream, params, NULL, NULL, api.correlation_id));
}

/* cudaLaunchKernel's arguments, laid out as CUPTI's cudaLaunchKernel_v7000_params. */
typedef struct {
  const void* func;
  unsigned grid[3];  /* dim3 gridDim */
  unsigned block[3]; /* dim3 blockDim */
  void** args;
  size_t shared_bytes;
  void* stream;
} fake_runtime_launch_params;

/* What a launch through the CUDA runtime (cudaLaunchKernel, as PyTorch and
 * Triton's launchers make) looks like to CUPTI: a runtime API call (domain 2,
 * cbid 211) with its own correlation id, whose kernel runs with no driver API
 * callback of its own (the runtime's calls into the driver are not traced)
 * and whose kernel record carries the runtime call's correlation id. Grid
 * (grid_x, 1, 1), block (block_x, 1, 1), no shared memory, no kernelParams;
 * recorded as "cudaLaunchKernel". */
int fake_runtime_launch_kernel(void* f, unsigned grid_x, unsigned block_x, void* stream) {
  const fake_runtime_launch_params call = {f, {grid_x, 1, 1}, {block_x, 1, 1}, NULL, 0, stream};
  fake_api_call api =
      api_enter(FAKE_DOMAIN_RUNTIME, 211, "cudaLaunchKernel_v7000", &call, fake_kernel_name((uintptr_t)f));
  const uint32_t grid[3] = {grid_x, 1, 1}, block[3] = {block_x, 1, 1};
  return api_exit(&api, record_launch("cudaLaunchKernel", (uintptr_t)f, grid, block, 0, (uintptr_t)stream, NULL, NULL,
                                      NULL, api.correlation_id));
}

/* ---- asynchronous memsets and memcpys (CUDA) ----
 * Checked as their synchronous forms are (a current context; ranges inside
 * one live allocation, or, device to device, clear of them all), then run or
 * captured by fake_issue_copy: memory set or copied, copy_ms on the fake
 * clock, a memset / memcpy activity record when CUPTI traces them. */
#define MEMCPY_HTOD 1 /* CUPTI_ACTIVITY_MEMCPY_KIND_HTOD */
#define MEMCPY_DTOD 8 /* CUPTI_ACTIVITY_MEMCPY_KIND_DTOD */
int cuMemsetD8Async(uint64_t destination, unsigned char value, size_t bytes, void* stream) {
  const struct {
    uint64_t destination;
    unsigned char value;
    size_t bytes;
    void* stream;
  } params = {destination, value, bytes, stream}; /* cuMemsetD8Async_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 216, "cuMemsetD8Async", &params, NULL);
  int err = needs_context("cuMemsetD8Async");
  if (!err && !copyable_range(destination, bytes)) err = 1;
  if (!err)
    err = fake_issue_copy("cuMemsetD8Async", FAKE_WORK_MEMSET, 0, (void*)(uintptr_t)destination, NULL, value, bytes,
                          stream, api.correlation_id);
  return api_exit(&api, err);
}
int cuMemcpyDtoDAsync_v2(uint64_t destination, uint64_t source, size_t bytes, void* stream) {
  const struct {
    uint64_t destination, source;
    size_t bytes;
    void* stream;
  } params = {destination, source, bytes, stream}; /* cuMemcpyDtoDAsync_v2_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 281, "cuMemcpyDtoDAsync_v2", &params, NULL);
  int err = needs_context("cuMemcpyDtoDAsync_v2");
  if (!err && (!copyable_range(destination, bytes) || !copyable_range(source, bytes))) err = 1;
  if (!err)
    err = fake_issue_copy("cuMemcpyDtoDAsync_v2", FAKE_WORK_MEMCPY, MEMCPY_DTOD, (void*)(uintptr_t)destination,
                          (const void*)(uintptr_t)source, 0, bytes, stream, api.correlation_id);
  return api_exit(&api, err);
}
int cuMemcpyHtoDAsync_v2(uint64_t destination, const void* source, size_t bytes, void* stream) {
  const struct {
    uint64_t destination;
    const void* source;
    size_t bytes;
    void* stream;
  } params = {destination, source, bytes, stream}; /* cuMemcpyHtoDAsync_v2_params */
  fake_api_call api = api_enter(FAKE_DOMAIN_DRIVER, 277, "cuMemcpyHtoDAsync_v2", &params, NULL);
  int err = needs_context("cuMemcpyHtoDAsync_v2");
  if (!err && (!device_range(destination, bytes) || (!source && bytes))) err = 1;
  if (!err)
    err = fake_issue_copy("cuMemcpyHtoDAsync_v2", FAKE_WORK_MEMCPY, MEMCPY_HTOD, (void*)(uintptr_t)destination, source,
                          0, bytes, stream, api.correlation_id);
  return api_exit(&api, err);
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
int hipEventRecord(fake_event* event, void* stream) {
  (void)stream;
  return event_record("hipEventRecord", event);
}
int hipEventSynchronize(fake_event* event) { return event_synchronize("hipEventSynchronize", event); }
int hipEventQuery(fake_event* event) { return event_query("hipEventQuery", event); }
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
int hipStreamCreate(fake_stream** stream) { return stream_create("hipStreamCreate", stream, 0); }
/* flags: hipStreamNonBlocking (1), as CUDA's CU_STREAM_NON_BLOCKING. */
int hipStreamCreateWithFlags(fake_stream** stream, unsigned flags) {
  return stream_create("hipStreamCreateWithFlags", stream, flags);
}
int hipStreamDestroy(fake_stream* stream) { return stream_destroy("hipStreamDestroy", stream); }
int hipStreamBeginCapture(fake_stream* stream, int mode) {
  (void)mode;
  return begin_capture("hipStreamBeginCapture", stream);
}
int hipStreamEndCapture(fake_stream* stream, fake_graph** graph) {
  return end_capture("hipStreamEndCapture", stream, graph);
}
int hipGraphInstantiate(fake_graph** exec, fake_graph* graph, void* error_node, char* log, size_t log_bytes) {
  (void)error_node, (void)log, (void)log_bytes;
  return graph_instantiate("hipGraphInstantiate", exec, graph);
}
int hipGraphLaunch(fake_graph* exec, void* stream) {
  return graph_launch("hipGraphLaunch", exec, (uintptr_t)stream, 0);
}
int hipGraphExecDestroy(fake_graph* exec) { return graph_destroy(exec, &live_graph_execs); }
int hipGraphDestroy(fake_graph* graph) { return graph_destroy(graph, &live_graphs); }
int hipHostMalloc(void** host, size_t bytes, unsigned flags) {
  return host_alloc("hipHostMalloc", host, bytes, (flags & 0x2) != 0); /* hipHostMallocMapped */
}
int hipHostGetDevicePointer(void** device, void* host, unsigned flags) {
  (void)flags;
  return host_device_pointer("hipHostGetDevicePointer", device, host);
}
int hipHostFree(void* host) { return host_free("hipHostFree", host); }
int hipExtModuleLaunchKernel(void* f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly, uint32_t lz,
                             size_t shared, void* stream, void** params, void** extra, fake_event* start,
                             fake_event* stop, uint32_t flags) {
  (void)extra;
  (void)flags;
  const uint32_t global[3] = {gx, gy, gz}, local[3] = {lx, ly, lz};
  return record_launch("hipExtModuleLaunchKernel", (uintptr_t)f, global, local, shared, (uintptr_t)stream, params,
                       start, stop, 0);
}
