// A C++ tuner's use of the core, without Python: built by test_cpp_core.py
// against csrc/include with AddressSanitizer and UBSan, and run on the fake
// driver named by argv[1] ("cuda" or "hip") and argv[2] (its path). On CUDA
// the cupti timer runs too, on the fake libcupti that $PYHIPBENCH_CUPTI_LIBRARY names.
#include <cstdio>
#include <string>
#include <vector>

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
    }
  }
  // A kernel without arguments: no storage, no pointer arrays.
  LaunchPlan empty(0x1234, "empty", LaunchConfig{}, {std::string()}, {});
  if (empty.args(0) != nullptr || events->run(empty, 3, 0).times_us.size() != 3) return fails("empty plan");
  if (std::string(argv[1]) == "cuda") {
    // Records spanning several of CUPTI's buffers, and runs after a failed one.
    std::unique_ptr<Timer> cupti = make_timer("cupti", driver, fake_context(argv[1]));
    LaunchPlan plan(0x1234, "k", LaunchConfig{}, {std::string(17, 'a'), std::string(17, 'b')}, {0, 16});
    for (size_t samples : {1, 5, 12000, 3}) {
      Timings t = cupti->run(plan, samples, 1);
      if (t.times_us.size() != samples || t.times_us[0] <= 0) return fails("cupti: wrong samples");
    }
  }
  // The timer keeps the driver alive: dropping the caller's handle first is fine.
  driver.reset();
  if (events->run(empty, 2, 0).times_us.size() != 2) return fails("events after the driver handle went");
  std::printf("ok\n");
  return 0;
}
