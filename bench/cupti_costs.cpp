// What CUPTI's kernel activity tracing costs the host, call by call (NVIDIA).
//
// The cupti timer's wall time per candidate is its samples plus a few fixed
// costs: turning tracing on and off, and one flush per run of samples. This
// measures each against the CUDA toolkit's libcupti, on the copy kernel
// (pyhipbench/kernels/copy.ptx, 1 MiB per buffer), medians of `reps`:
//
//   - subscribe / enable / disable / unsubscribe, host µs each;
//   - one launch with tracing on (steady state) and off;
//   - the first launch after enabling, after a forced flush
//     (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) and after a default flush (0):
//     CUPTI re-arms its device buffer on the launch after a flush;
//   - each flush's own cost after 16 launches, and whether a default flush
//     after a synchronisation brought every record.
//
// Build and run on a machine with the CUDA toolkit:
//   g++ -O2 -std=c++17 bench/cupti_costs.cpp -I$CUDA_HOME/include -L$CUDA_HOME/lib64
//       -lcupti -lcuda -o /tmp/cupti_costs      (one line)
//   LD_LIBRARY_PATH=$CUDA_HOME/lib64 /tmp/cupti_costs pyhipbench/kernels/copy.ptx [reps]
#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

void check_cu(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: CUresult %d\n", call, static_cast<int>(result));
  std::exit(1);
}

void check_cupti(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* name = "?";
  cuptiGetResultString(result, &name);
  std::fprintf(stderr, "%s failed: %s\n", call, name);
  std::exit(1);
}

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Host µs of one call.
template <class F>
double timed(F&& call) {
  const auto start = Clock::now();
  call();
  return us_since(start);
}

// Activity buffers, reused as the core's pool reuses them; records counted on delivery.
constexpr size_t kBufferBytes = size_t{1} << 20;
std::vector<uint8_t*> free_buffers;
size_t records_delivered = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (free_buffers.empty()) free_buffers.push_back(static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes)));
  *buffer = free_buffers.back();
  free_buffers.pop_back();
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) ++records_delivered;
  free_buffers.push_back(buffer);
}

void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

struct Column {
  explicit Column(const char* column_name) : name(column_name) {}
  const char* name;
  std::vector<double> us;
  double median() {
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s COPY_PTX [reps]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 25;
  if (reps < 1) {
    std::fprintf(stderr, "reps '%s': expected a whole number >= 1\n", argv[2]);
    return 2;
  }
  check_cu(cuInit(0), "cuInit");
  CUdevice device;
  check_cu(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check_cu(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check_cu(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  std::ifstream file(argv[1]);
  std::stringstream ptx;
  ptx << file.rdbuf();
  CUmodule module;
  check_cu(cuModuleLoadData(&module, ptx.str().c_str()), "cuModuleLoadData");
  CUfunction copy;
  check_cu(cuModuleGetFunction(&copy, module, "copy"), "cuModuleGetFunction");
  long long n = 1 << 18;  // floats: 1 MiB per buffer
  CUdeviceptr src, dst;
  check_cu(cuMemAlloc(&src, n * 4), "cuMemAlloc");
  check_cu(cuMemAlloc(&dst, n * 4), "cuMemAlloc");
  void* params[] = {&src, &dst, &n};
  CUevent done;
  check_cu(cuEventCreate(&done, 0), "cuEventCreate");
  auto launch = [&] {
    check_cu(cuLaunchKernel(copy, 1056, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  };
  auto launches = [&](int count) {
    for (int i = 0; i < count; ++i) launch();
  };
  auto synchronize = [&] {
    check_cu(cuEventRecord(done, nullptr), "cuEventRecord");
    check_cu(cuEventSynchronize(done), "cuEventSynchronize");
  };
  launches(100);
  synchronize();
  check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");

  Column subscribe{"subscribe"}, enable{"activity enable"}, disable{"activity disable"}, unsubscribe{"unsubscribe"},
      traced{"launch, tracing on (steady)"}, untraced{"launch, tracing off"},
      after_enable{"first launch after enabling"}, after_forced{"first launch after a forced flush"},
      after_default{"first launch after a default flush"}, forced{"forced flush after 16 launches"},
      default_flush{"default flush after 16 launches"};
  int default_flush_short = 0;  // default flushes that did not bring all 16 records
  for (int rep = 0; rep < reps; ++rep) {
    CUpti_SubscriberHandle subscriber;
    subscribe.us.push_back(timed([&] {
      check_cupti(cuptiSubscribe(&subscriber, on_driver_call, nullptr), "cuptiSubscribe");
      check_cupti(
          cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
          "cuptiEnableCallback");
    }));
    enable.us.push_back(
        timed([] { check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable"); }));
    after_enable.us.push_back(timed(launch));
    for (int i = 0; i < 15; ++i) traced.us.push_back(timed(launch));
    synchronize();
    forced.us.push_back(timed([] { check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush"); }));
    after_forced.us.push_back(timed(launch));
    launches(15);
    synchronize();
    const size_t before = records_delivered;
    default_flush.us.push_back(timed([] { check_cupti(cuptiActivityFlushAll(0), "flush"); }));
    if (records_delivered - before != 16) ++default_flush_short;
    after_default.us.push_back(timed(launch));
    synchronize();
    check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
    disable.us.push_back(timed(
        [] { check_cupti(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable"); }));
    unsubscribe.us.push_back(timed([&] { check_cupti(cuptiUnsubscribe(subscriber), "cuptiUnsubscribe"); }));
    for (int i = 0; i < 16; ++i) untraced.us.push_back(timed(launch));
    synchronize();
  }
  std::printf("| host cost, median of %d | µs |\n|---|---|\n", reps);
  for (Column* column : {&subscribe, &enable, &disable, &unsubscribe, &untraced, &traced, &after_enable, &after_forced,
                         &after_default, &forced, &default_flush}) {
    std::printf("| %s | %.1f |\n", column->name, column->median());
  }
  std::printf("\ndefault flushes after a synchronisation that missed a record: %d of %d\n", default_flush_short, reps);
  return 0;
}
