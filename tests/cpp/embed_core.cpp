// A C++ tuner's use of the core, without Python: built by test_cpp_core.py
// against csrc/include with AddressSanitizer and UBSan, and run on the fake
// driver named by argv[1] ("cuda" or "hip") and argv[2] (its path). On CUDA
// the cupti timer runs too, on the fake libcupti that $PYHIPBENCH_CUPTI_LIBRARY names.
#include <cstdio>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::shared_ptr<Driver> driver = load_driver(argv[1], argv[2]);
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
        void** args = plan.args(s);
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
  if (empty.args(0) != nullptr || events->run(empty, 3, 0).times_us.size() != 3 ||
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
    if (m.stop_reason != "precision" || m.warmup_samples != 16 || m.times_us.size() != 16 ||
        summarize(m.times_us).median <= 0) {
      return fails("measure: wrong stop");
    }
  }
  cupti_timer.reset();
  // The timers keep the driver alive: dropping the caller's handle first is fine.
  driver.reset();
  graph.reset();
  batched.reset();
  if (events->run(empty, 2, 0).times_us.size() != 2) return fails("events after the driver handle went");
  std::printf("ok\n");
  return 0;
}
