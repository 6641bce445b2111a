// A C++ autotuner on pyhipbench's core: picks the block size of a copy kernel.
//
//   cpp_tuner BACKEND CODE_OBJECT [ELEMENTS [SETS|auto [LLC_BYTES]]]
//
// BACKEND is cuda or hip; CODE_OBJECT holds `copy(src, dst, n)` (float32,
// grid-stride loop), e.g. pyhipbench/kernels/copy.ptx; ELEMENTS is the array
// length (default 1 << 22). SETS is R, the rotated argument sets: auto (the
// default) chooses it by the core's rotation rule, the same R as Python's
// bench() (one set is both arrays; against the last-level cache and the free
// device memory; no more sets than the run's launches); 1 = warm. LLC_BYTES is
// the last-level cache that rule sizes against, bytes: by default the L2 the
// driver reports, which is the last level on NVIDIA; on MI300 pass the 256 MB
// Infinity Cache (268435456), since HIP reports one XCD's 4 MB L2. The driver
// library is loaded at run time ($PYHIPBENCH_CUDA_LIBRARY /
// $PYHIPBENCH_HIP_LIBRARY name another one).
//
// Each candidate block size is measured by every per-kernel timer the backend
// has (cupti and events on CUDA, events on HIP) on the same rotated buffers,
// by the core's adaptive measure(): warm-up until settled, then samples until
// the median's 95 % CI is within ±1 % (or the sample or time cap). Candidates
// race: each stops ("slower") once its CI lies wholly above the lowest CI upper
// bound the same timer has measured so far (StopRule::slower_than_us), so a
// block size that surely loses costs a few samples. The table shows each
// one's median, its CI, the samples taken, why it stopped and the bandwidth;
// the winner is the fastest median by the first timer that ran.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pyhipbench/driver.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/rotated_buffers.hpp"
#include "pyhipbench/rotation.hpp"
#include "pyhipbench/statistics.hpp"
#include "pyhipbench/stopping.hpp"
#include "pyhipbench/timer.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read the code object '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

size_t parse_count(const char* text, const char* what, const char* expected = "a positive integer") {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (end == text || *end != '\0' || value == 0 || text[0] == '-' || errno == ERANGE ||
      value > std::numeric_limits<size_t>::max()) {
    throw std::invalid_argument(std::string(what) + " '" + text + "': expected " + expected);
  }
  return static_cast<size_t>(value);
}

// SETS: "auto" (nullopt: the rotation rule chooses) or a set count.
std::optional<size_t> parse_sets(const char* text) {
  if (std::strcmp(text, "auto") == 0) return std::nullopt;
  return parse_count(text, "SETS", "'auto' or a positive integer");
}

// The kernel's arguments (src, dst, n) of every rotated set, packed as
// LaunchPlan takes them: three 8-byte values at offsets 0, 8, 16.
std::vector<std::string> argument_sets(const pyhipbench::RotatedBuffers& buffers, uint64_t elements) {
  std::vector<std::string> sets;
  for (size_t s = 0; s < buffers.sets(); ++s) {
    const uint64_t values[3] = {buffers.address(s, 0), buffers.address(s, 1), elements};
    sets.emplace_back(reinterpret_cast<const char*>(values), sizeof values);
  }
  return sets;
}

struct Row {
  uint32_t block;
  uint32_t grid;
  std::string timer;
  pyhipbench::Summary summary;  // of the timed samples, µs
  std::string stop_reason;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 6) {
    std::fprintf(stderr, "usage: %s cuda|hip CODE_OBJECT [ELEMENTS [SETS|auto [LLC_BYTES]]]\n", argv[0]);
    return 2;
  }
  try {
    const std::string backend = argv[1];
    const size_t elements = argc > 3 ? parse_count(argv[3], "ELEMENTS") : size_t{1} << 22;
    // Both arrays' bytes (2 * bytes, one rotated set) must not wrap.
    constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / (2 * sizeof(float));
    if (elements > kMaxElements) {
      throw std::invalid_argument("ELEMENTS '" + std::string(argv[3]) + "': expected at most " +
                                  std::to_string(kMaxElements) + " (two float arrays of it must fit in size_t)");
    }
    const std::optional<size_t> sets = argc > 4 ? parse_sets(argv[4]) : std::nullopt;
    const std::optional<size_t> llc_argument =
        argc > 5 ? std::optional<size_t>(parse_count(argv[5], "LLC_BYTES")) : std::nullopt;
    const size_t bytes = elements * sizeof(float);
    const pyhipbench::StopRule rule;  // the core's defaults, as Python's bench()

    std::shared_ptr<pyhipbench::Driver> driver = pyhipbench::load_driver(backend);
    const uintptr_t context = driver->device_context(0);
    std::unique_ptr<pyhipbench::Module> module = driver->load_module(context, read_file(argv[2]));
    const uintptr_t copy = module->function("copy");

    // The tuner's own buffers (it owns them); the core makes and frees the rotated copies.
    pyhipbench::DeviceBuffer src(driver, context, bytes);
    pyhipbench::DeviceBuffer dst(driver, context, bytes);
    std::vector<float> host(elements);
    for (size_t i = 0; i < elements; ++i) host[i] = static_cast<float>(i % 1000);
    driver->copy_from_host(context, src.address(), host.data(), bytes);

    // R by the core's rule, from the same inputs as Python's bench(): one set
    // is both arrays; the launch cap is the rule's most warm-up and timed samples.
    const uint64_t llc_bytes = llc_argument ? *llc_argument : driver->l2_cache_bytes(context);
    const pyhipbench::MemoryInfo memory = driver->memory_info(context);
    const pyhipbench::Rotation rotation = pyhipbench::plan_rotation(
        2 * bytes, llc_bytes, memory.free_bytes, memory.total_bytes, sets, rule.max_warmup_samples + rule.max_samples);
    if (rotation.capped_by_memory()) {
      std::fprintf(stderr,
                   "cpp_tuner: warning: %zu of the %zu rotated sets fit in free memory: the cache is "
                   "less cold than asked\n",
                   rotation.sets, rotation.wanted);
    }
    pyhipbench::RotatedBuffers rotated(driver, context, {{src.address(), bytes}, {dst.address(), bytes}},
                                       rotation.sets);
    const std::vector<std::string> arg_sets = argument_sets(rotated, elements);

    std::vector<std::unique_ptr<pyhipbench::Timer>> timers;
    for (const char* name : {"cupti", "events"}) {
      if (backend != "cuda" && std::strcmp(name, "cupti") == 0) continue;
      try {
        timers.push_back(pyhipbench::make_timer(name, driver, context));
      } catch (const pyhipbench::LibraryError& e) {  // no libcupti here: time with the others
        std::printf("(no %s timer: %s)\n", name, e.what());
      }
    }

    std::vector<Row> rows;
    std::map<std::string, double> best_ci_high_us;  // per timer, the race's bound (0: none yet)
    for (uint32_t block : {64u, 128u, 256u, 512u, 1024u}) {
      pyhipbench::LaunchConfig config;
      const uint64_t blocks = (elements + block - 1) / block;
      config.grid = {static_cast<uint32_t>(std::min<uint64_t>(blocks, 65535)), 1, 1};
      config.block = {block, 1, 1};
      pyhipbench::LaunchPlan plan(copy, "copy", config, arg_sets, {0, 8, 16});
      for (const auto& timer : timers) {
        double& bound = best_ci_high_us[timer->name()];
        pyhipbench::StopRule race = rule;
        race.slower_than_us = bound;
        const pyhipbench::Measurement m = pyhipbench::measure(*timer, plan, race);
        const pyhipbench::Summary summary = pyhipbench::summarize(m.times_us);
        bound = bound == 0 ? summary.ci_high : std::min(bound, summary.ci_high);
        rows.push_back({block, config.grid[0], timer->name(), summary, m.stop_reason});
      }
    }

    std::printf("copy of %zu floats (%zu bytes), last-level cache %llu bytes (%s)\n", elements, bytes,
                static_cast<unsigned long long>(llc_bytes), llc_argument ? "given" : "the driver's L2");
    std::printf("rotation: R = %zu (%s)\n", rotation.sets, rotation.reason.c_str());
    std::printf(
        "stopping: the median's 95 %% CI within ±%g %%, %zu to %zu samples, at most %g s each; "
        "racing: a candidate stops once its CI lies above the best one's so far\n",
        rule.precision * 100, rule.min_samples, rule.max_samples, rule.max_time_s);
    std::printf("%6s %6s %7s %11s %21s %8s %-11s %8s\n", "block", "grid", "timer", "median µs", "95 % CI µs", "samples",
                "stop", "GB/s");
    for (const Row& r : rows) {
      std::printf("%6u %6u %7s %10.3f [%8.3f, %8.3f] %8zu %-11s %8.1f\n", r.block, r.grid, r.timer.c_str(),
                  r.summary.median, r.summary.ci_low, r.summary.ci_high, r.summary.count, r.stop_reason.c_str(),
                  2.0 * bytes / (r.summary.median * 1e3));
    }
    const std::string& judge = timers.front()->name();
    const Row* best = nullptr;
    for (const Row& r : rows) {
      if (r.timer == judge && (best == nullptr || r.summary.median < best->summary.median)) best = &r;
    }
    std::printf("winner: block %u (grid %u), %.3f µs by the %s timer\n", best->block, best->grid, best->summary.median,
                judge.c_str());
    return 0;
  } catch (const pyhipbench::DriverError& e) {
    std::fprintf(stderr, "cpp_tuner: %s (call %s, code %d)\n", e.what(), e.call().c_str(), e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_tuner: %s\n", e.what());
  }
  return 1;
}
