// A C++ tuner's use of the core, without Python: built by test_cpp_core.py
// against csrc/include with AddressSanitizer and UBSan, and run on the fake
// driver named by argv[1] ("cuda" or "hip") and argv[2] (its path). On CUDA
// the cupti timer runs too, on the fake libcupti that $PYHIPBENCH_CUPTI_LIBRARY names.
// A whole measurement as an embedder makes it: the device's context, its own
// buffers, the core's rotated copies of them, a plan over every set, each timer.
// The fakes' device memory is host memory, so the copies are read back directly.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "pyhipbench/driver.hpp"
#include "pyhipbench/rotated_buffers.hpp"
#include "pyhipbench/rotation.hpp"
#include "pyhipbench/stopping.hpp"
#include "pyhipbench/timer.hpp"

using namespace pyhipbench;

namespace {

// The context a timer runs in: a made-up CUcontext handle for the fake CUDA
// driver, device 0 for HIP.
uintptr_t fake_context(const std::string& backend) { return backend == "cuda" ? 0xC00000 : 0; }

bool fails(const char* what) {
  std::printf("%s\n", what);
  return true;
}

// Whether `call` throws E whose what() contains `fragment`.
template <class E, class Call>
bool throws(Call call, const char* fragment) {
  try {
    call();
  } catch (const E& e) {
    if (std::strstr(e.what(), fragment) != nullptr) return true;
    std::printf("wrong message: %s\n", e.what());
  }
  return false;
}

// Device memory the fake holds now: CUDA, live allocations; HIP, bytes in use.
size_t fake_memory_in_use(const std::string& backend, void* fake) {
  if (backend == "cuda") {
    auto live = reinterpret_cast<int (*)()>(dlsym(fake, "fake_live_device_allocations"));
    return static_cast<size_t>(live());
  }
  auto info = reinterpret_cast<int (*)(size_t*, size_t*)>(dlsym(fake, "hipMemGetInfo"));
  size_t free_bytes = 0, total_bytes = 0;
  info(&free_bytes, &total_bytes);
  return total_bytes - free_bytes;
}

// How many calls named `call` the fake CUDA driver recorded from record `first` on.
int recorded(void* fake, int first, const char* call) {
  auto count = reinterpret_cast<int (*)()>(dlsym(fake, "fake_record_count"));
  // A record starts with its call's name.
  auto record = reinterpret_cast<const char* (*)(int)>(dlsym(fake, "fake_get_record"));
  int n = 0;
  for (int i = first; i < count(); ++i) n += std::strcmp(record(i), call) == 0;
  return n;
}

// What R rotated sets cost (the fake CUDA driver records its calls): one
// allocation, and B + ceil(log2(R - 1)) copies for B buffers: the originals
// into copy set 1, then doubling. Two 1000- and 13-byte buffers at `a`, `b`.
const char* rotation_costs(void* fake, std::shared_ptr<Driver> driver, uintptr_t context, uintptr_t a, uintptr_t b) {
  auto count = reinterpret_cast<int (*)()>(dlsym(fake, "fake_record_count"));
  const size_t in_use = fake_memory_in_use("cuda", fake);
  struct Cost {
    size_t sets;
    int doubling_copies;  // ceil(log2(sets - 1)); none for 1 or 2 sets
  };
  for (const Cost cost :
       {Cost{1, 0}, Cost{2, 0}, Cost{3, 1}, Cost{4, 2}, Cost{5, 2}, Cost{9, 3}, Cost{17, 4}, Cost{100, 7}}) {
    const int allocations = cost.sets > 1 ? 1 : 0;
    for (const std::vector<BufferRange>& buffers :
         {std::vector<BufferRange>{{a, 1000}}, std::vector<BufferRange>{{a, 1000}, {b, 13}}}) {
      const int first = count();
      RotatedBuffers rotated(driver, context, buffers, cost.sets);
      const int copies = cost.sets > 1 ? static_cast<int>(buffers.size()) + cost.doubling_copies : 0;
      if (recorded(fake, first, "cuMemAlloc_v2") != allocations) return "RotatedBuffers: not one allocation";
      if (recorded(fake, first, "cuMemcpyDtoD_v2") != copies) return "RotatedBuffers: not B + ceil(log2(R - 1)) copies";
      if (rotated.set_stride_bytes() != 256 * (buffers.size() == 1 ? 4 : 5)) return "RotatedBuffers: wrong stride";
      for (size_t s = 1; s < cost.sets; ++s) {
        for (size_t i = 0; i < buffers.size(); ++i) {
          if (std::memcmp(reinterpret_cast<const void*>(rotated.address(s, i)),
                          reinterpret_cast<const void*>(buffers[i].address), buffers[i].bytes) != 0) {
            return "RotatedBuffers: a doubled copy does not hold the original's bytes";
          }
        }
        if (rotated.address(s, 0) != rotated.address(1, 0) + (s - 1) * rotated.set_stride_bytes()) {
          return "RotatedBuffers: copy sets not one stride apart";
        }
      }
      rotated.free();
      rotated.free();
      if (rotated.sets() != 1 || rotated.address(0, 0) != a || fake_memory_in_use("cuda", fake) != in_use) {
        return "RotatedBuffers: free() kept the copies or lost the originals";
      }
    }
  }
  return nullptr;
}

// An embedder's measurement: its own buffers, R - 1 rotated copies made by
// the core, one plan over the R sets, every timer; the copies freed after.
const char* whole_measurement(const std::string& backend, void* fake, std::shared_ptr<Driver> driver) {
  const size_t in_use = fake_memory_in_use(backend, fake);
  if (!throws<std::invalid_argument>([&] { driver->device_context(3); },
                                     "device 3: expected an ordinal in 0 .. 0 (the driver reports 1 device)")) {
    return "device_context(3) on one device";
  }
  const uintptr_t context = driver->device_context(0);
  if (driver->device_context(0) != context) return "device_context: a second call gave another context";
  if (backend == "cuda") {  // the fake HIP runtime loads real AMDGPU code objects only
    const std::string ptx = ".version 7.0\n.target sm_52\n.address_size 64\n.visible .entry copy(\n)\n{\nret;\n}\n";
    std::unique_ptr<Module> module = driver->load_module(context, ptx);
    if (module->function("copy") == 0) return "load_module: no handle for copy";
    if (!throws<DriverError>([&] { module->function("absent"); }, "(kernel 'absent')")) return "function(absent)";
  }
  if (!throws<std::invalid_argument>([&] { DeviceBuffer(driver, context, 0); }, "0 bytes")) return "a 0-byte buffer";
  {
    // Odd sizes: each copy must keep its own bytes, inside its own allocation.
    DeviceBuffer a(driver, context, 1000);
    DeviceBuffer b(driver, context, 13);
    std::vector<unsigned char> a_bytes(1000), b_bytes(13);
    for (size_t i = 0; i < a_bytes.size(); ++i) a_bytes[i] = static_cast<unsigned char>(i * 7);
    for (size_t i = 0; i < b_bytes.size(); ++i) b_bytes[i] = static_cast<unsigned char>(200 - i);
    driver->copy_from_host(context, a.address(), a_bytes.data(), a_bytes.size());
    driver->copy_from_host(context, b.address(), b_bytes.data(), b_bytes.size());
    if (!throws<std::invalid_argument>([&] { RotatedBuffers(driver, context, {{a.address(), 1000}}, 0); }, "sets=0")) {
      return "RotatedBuffers with 0 sets";
    }
    if (!throws<std::invalid_argument>([&] { RotatedBuffers(driver, context, {{a.address(), 1000}, {0, 8}}, 2); },
                                       "buffer 1 (address 0, 8 bytes)")) {
      return "RotatedBuffers with a null buffer";
    }
    RotatedBuffers rotated(driver, context, {{a.address(), a_bytes.size()}, {b.address(), b_bytes.size()}}, 5);
    if (rotated.sets() != 5 || rotated.address(0, 0) != a.address() || rotated.address(0, 1) != b.address()) {
      return "RotatedBuffers: set 0 is not the originals";
    }
    if (!throws<std::out_of_range>([&] { rotated.address(5, 0); }, "set 5, buffer 0")) return "address(5, 0)";
    std::vector<std::string> arg_sets;
    for (size_t s = 0; s < rotated.sets(); ++s) {
      const uintptr_t copy_a = rotated.address(s, 0), copy_b = rotated.address(s, 1);
      if (s > 0 && (copy_a % 256 != 0 || copy_b % 256 != 0 || copy_a == a.address())) return "copies misplaced";
      if (std::memcmp(reinterpret_cast<const void*>(copy_a), a_bytes.data(), a_bytes.size()) != 0 ||
          std::memcmp(reinterpret_cast<const void*>(copy_b), b_bytes.data(), b_bytes.size()) != 0) {
        return "a rotated copy does not hold the original's bytes";
      }
      const uint64_t values[2] = {copy_a, copy_b};
      arg_sets.emplace_back(reinterpret_cast<const char*>(values), sizeof values);
    }
    LaunchConfig config;
    config.grid = {4, 1, 1};
    config.block = {64, 1, 1};
    LaunchPlan plan(0x1234, "k", config, arg_sets, {0, 8});
    TimerOptions batched_options;
    if (backend == "hip") batched_options.spin_function = 0x5917;
    for (const char* name : {"events", "graph", "batched", "cupti"}) {
      if (backend == "hip" && std::string(name) == "cupti") continue;
      const TimerOptions options = std::string(name) == "batched" ? batched_options : TimerOptions{};
      std::unique_ptr<Timer> timer = make_timer(name, driver, context, options);
      size_t next_set = 0;
      for (size_t chunk = 0; chunk < 3; ++chunk) {  // chunks continuing the rotation, as adaptive stopping runs
        Timings t = timer->run(plan, 7, next_set);
        if (t.times_us.size() != 7 || t.times_us[0] <= 0) return "a timer over rotated buffers: wrong samples";
        next_set = (next_set + 7 * t.launches_per_sample) % plan.sets();
      }
    }
    if (fake_memory_in_use(backend, fake) <= in_use) return "RotatedBuffers allocated nothing";
    if (backend == "cuda") {
      if (const char* failure = rotation_costs(fake, driver, context, a.address(), b.address())) return failure;
    }
    if (backend == "cuda") {  // a failed copy or allocation frees what was made (the fake fails CUDA calls)
      auto fail = reinterpret_cast<void (*)(const char*, int, int, int)>(dlsym(fake, "fake_fail"));
      const size_t before = fake_memory_in_use(backend, fake);
      fail("cuMemcpyDtoD_v2", 1, 2, 0);  // the first doubling copy, after both buffers went into set 1
      if (!throws<DriverError>([&] { RotatedBuffers(driver, context, {{a.address(), 1000}, {b.address(), 13}}, 4); },
                               "cuMemcpyDtoD_v2 failed: CUDA_ERROR_INVALID_VALUE (1)")) {
        return "RotatedBuffers: a failed copy";
      }
      fail("cuMemAlloc_v2", 2, 0, 0);  // the one allocation
      if (!throws<DriverError>([&] { RotatedBuffers(driver, context, {{a.address(), 1000}}, 3); },
                               "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (allocating 2048 bytes)")) {
        return "RotatedBuffers: a failed allocation";
      }
      if (fake_memory_in_use(backend, fake) != before) return "RotatedBuffers leaked after a failure";
    }
  }
  if (fake_memory_in_use(backend, fake) != in_use) return "RotatedBuffers or DeviceBuffer leaked device memory";
  return nullptr;
}

// The rotation rule's inputs as the driver reports them: the fake CUDA device
// is an H200 (60 MiB L2, 141 GB), the fake HIP one an MI300X (one XCD's 4 MiB
// L2, 192 GB); free memory counts the live allocations.
const char* rotation_inputs(const std::string& backend, void* fake, std::shared_ptr<Driver> driver) {
  const bool cuda = backend == "cuda";
  const uintptr_t context = driver->device_context(0);
  const uint64_t total = cuda ? 141000000000ull : 192000000000ull;
  const MemoryInfo before = driver->memory_info(context);
  if (before.total_bytes != total || before.free_bytes > total) return "memory_info: wrong total";
  {
    DeviceBuffer buffer(driver, context, 4096);
    const MemoryInfo during = driver->memory_info(context);
    if (during.total_bytes != total || during.free_bytes != before.free_bytes - 4096) {
      return "memory_info: free memory does not count an allocation";
    }
  }
  if (driver->memory_info(context).free_bytes != before.free_bytes) return "memory_info: free after the buffer went";
  if (driver->l2_cache_bytes(context) != (cuda ? uint64_t{60} << 20 : uint64_t{4} << 20)) {
    return "l2_cache_bytes: wrong size";
  }
  if (cuda) {
    if (!throws<std::invalid_argument>([&] { driver->memory_info(0); }, "CUDA context 0 is not a context") ||
        !throws<std::invalid_argument>([&] { driver->l2_cache_bytes(0); }, "CUDA context 0 is not a context")) {
      return "memory_info / l2_cache_bytes on context 0";
    }
    auto fail = reinterpret_cast<void (*)(const char*, int, int, int)>(dlsym(fake, "fake_fail"));
    fail("cuMemGetInfo_v2", 1, 0, 0);
    if (!throws<DriverError>([&] { driver->memory_info(context); },
                             "cuMemGetInfo_v2 failed: CUDA_ERROR_INVALID_VALUE (1)")) {
      return "memory_info: a failed cuMemGetInfo_v2";
    }
    fail("cuDeviceGetAttribute", 101, 0, 0);
    if (!throws<DriverError>([&] { driver->l2_cache_bytes(context); },
                             "cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE (101)")) {
      return "l2_cache_bytes: a failed cuDeviceGetAttribute";
    }
    if (reinterpret_cast<int (*)()>(dlsym(fake, "fake_context_depth"))() != 0) {
      return "memory_info / l2_cache_bytes left a context pushed";
    }
  } else {
    if (!throws<DriverError>([&] { driver->l2_cache_bytes(5); }, "hipDeviceGetAttribute failed") ||
        !throws<DriverError>([&] { driver->memory_info(5); }, "hipSetDevice failed")) {
      return "memory_info / l2_cache_bytes on device 5 of 1";
    }
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::shared_ptr<Driver> driver = load_driver(argv[1], argv[2]);
  void* fake = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD);  // the library the core loaded
  if (fake == nullptr) return fails("the fake driver is not loaded");
  if (const char* failure = whole_measurement(argv[1], fake, driver)) return fails(failure);
  if (const char* failure = rotation_inputs(argv[1], fake, driver)) return fails(failure);
  std::unique_ptr<Timer> events = make_timer("events", driver, fake_context(argv[1]));
  TimerOptions five_per_sample;
  five_per_sample.launches_per_sample = 5;
  std::unique_ptr<Timer> graph = make_timer("graph", driver, fake_context(argv[1]), five_per_sample);
  // CUDA embeds the spin kernel; on HIP the embedder passes its own (any
  // handle here: the fake runs it as a plain kernel).
  TimerOptions batch_options = five_per_sample;
  if (std::string(argv[1]) == "hip") batch_options.spin_function = 0x5917;
  std::unique_ptr<Timer> batched = make_timer("batched", driver, fake_context(argv[1]), batch_options);
  // Odd set sizes and many sets: every pointer must stay inside the plan's storage.
  for (size_t set_bytes : {1, 12, 16, 17, 40, 100}) {
    for (size_t sets : {1, 3, 7, 64}) {
      std::vector<std::string> arg_sets;
      for (size_t s = 0; s < sets; ++s) arg_sets.emplace_back(set_bytes, static_cast<char>(s));
      std::vector<size_t> offsets{0, set_bytes - 1};
      LaunchPlan plan(0x1234, "k", LaunchConfig{}, arg_sets, offsets);
      for (size_t s = 0; s < sets; ++s) {
        void** args = plan.kernel(0).args(s);
        if (*static_cast<char*>(args[0]) != static_cast<char>(s) ||
            *static_cast<char*>(args[1]) != static_cast<char>(s)) {
          std::printf("set %zu of %zu (%zu bytes) reads the wrong bytes\n", s, sets, set_bytes);
          return 1;
        }
      }
      Timings t = events->run(plan, 2 * sets, 1);
      if (t.times_us.size() != 2 * sets || t.launches_per_sample != 1) return fails("events: wrong sample count");
      // Twice on one plan (graphs cached), then the next plan frees them.
      for (size_t first_set : {size_t{0}, sets - 1}) {
        Timings g = graph->run(plan, sets + 1, first_set);
        if (g.times_us.size() != sets + 1 || g.launches_per_sample != 5) return fails("graph: wrong sample count");
        Timings b = batched->run(plan, sets + 1, first_set);
        if (b.times_us.size() != sets + 1 || b.launches_per_sample != 5) return fails("batched: wrong sample count");
      }
    }
  }
  // A kernel without arguments: no storage, no pointer arrays.
  LaunchPlan empty(0x1234, "empty", LaunchConfig{}, {std::string()}, {});
  if (empty.kernel(0).args(0) != nullptr || events->run(empty, 3, 0).times_us.size() != 3 ||
      graph->run(empty, 3, 0).times_us.size() != 3 || batched->run(empty, 3, 0).times_us.size() != 3) {
    return fails("empty plan");
  }
  if (std::string(argv[1]) == "cuda") {
    // Runs of 1 to 12000 samples: records spanning several of CUPTI's buffers.
    std::unique_ptr<Timer> cupti = make_timer("cupti", driver, fake_context(argv[1]));
    LaunchPlan plan(0x1234, "k", LaunchConfig{}, {std::string(17, 'a'), std::string(17, 'b')}, {0, 16});
    for (size_t samples : {1, 5, 12000, 3}) {
      Timings t = cupti->run(plan, samples, 1);
      if (t.times_us.size() != samples || t.times_us[0] <= 0) return fails("cupti: wrong samples");
    }
  }
  // A chain of two kernels, rotated together, and a callable's calls, as a C++ tuner embeds them.
  {
    std::vector<KernelLaunch> kernels;
    kernels.emplace_back(0x1234, "first", LaunchConfig{}, std::vector<std::string>(3, std::string(8, 'f')),
                         std::vector<size_t>{0});
    kernels.emplace_back(0x5678, "second", LaunchConfig{}, std::vector<std::string>(3, std::string(8, 's')),
                         std::vector<size_t>{0});
    LaunchPlan chain(std::move(kernels));
    if (chain.kernels() != 2 || chain.name() != "first -> second") return fails("chain: wrong shape");
    Timings t = events->run(chain, 4, 0);
    if (t.times_us.size() != 4 || graph->run(chain, 2, 0).times_us.size() != 2) return fails("chain: samples");
    size_t calls = 0;
    CallPlan call("tuner call", [&] { ++calls; }, 0);
    if (events->run(call, 5).times_us.size() != 5 || calls != 5) return fails("call: samples");
    if (!throws<std::invalid_argument>([&] { graph->run(call, 1); }, "times launches it issues itself")) {
      return fails("graph call");
    }
    if (!throws<std::invalid_argument>([&] { LaunchPlan(std::vector<KernelLaunch>{}); }, "at least one kernel")) {
      return fails("empty chain");
    }
  }
  // A whole measurement as a C++ tuner makes one: R from the rotation rule,
  // warm-up until settled, then chunks until the 1 % target (the fake's times
  // are constant), with every timer that can take the plan.
  const Rotation rotation = plan_rotation(3 << 20, 60 << 20, uint64_t{8} << 30, uint64_t{16} << 30);
  if (rotation.sets != 40 || rotation.capped_by_memory()) return fails("rotation: wrong set count");
  std::vector<std::string> rotated(rotation.sets, std::string(24, 'r'));
  LaunchPlan rotating(0x1234, "k", LaunchConfig{}, rotated, {0, 8, 16});
  std::vector<Timer*> timers{events.get(), graph.get(), batched.get()};
  std::unique_ptr<Timer> cupti_timer;
  if (std::string(argv[1]) == "cuda") {
    cupti_timer = make_timer("cupti", driver, fake_context(argv[1]));
    timers.push_back(cupti_timer.get());
  }
  for (Timer* timer : timers) {
    const Measurement m = measure(*timer, rotating, StopRule{});
    if (m.stop_reason != "precision" || m.warmup_samples != 8 || m.times_us.size() != 16 ||
        summarize(m.times_us).median <= 0) {
      return fails("measure: wrong stop");
    }
  }
  // A hold: untimed runs for at least hold_s of wall time before the warm-up, counted as warm-up.
  StopRule held;
  held.hold_s = 0.005;
  const auto holding = std::chrono::steady_clock::now();
  const Measurement h = measure(*events, rotating, held);
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - holding).count() < 0.005 ||
      h.warmup_samples <= 8 || h.times_us.size() != 16 || h.stop_reason != "precision") {
    return fails("measure: wrong hold");
  }
  cupti_timer.reset();
  // The timers keep the driver alive: dropping the caller's handle first is fine.
  driver.reset();
  graph.reset();
  batched.reset();
  if (events->run(empty, 2, 0).times_us.size() != 2) return fails("events after the driver handle went");
  // The last timer holds the last reference: the driver goes with it, releasing its primary context.
  events.reset();
  if (std::string(argv[1]) == "cuda" && reinterpret_cast<int (*)()>(dlsym(fake, "fake_retained_contexts"))() != 0) {
    return fails("the CUDA primary context was not released with the driver");
  }
  dlclose(fake);
  std::printf("ok\n");
  return 0;
}
