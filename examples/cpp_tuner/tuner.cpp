// A C++ autotuner on pyhipbench's core: picks the block size of a copy kernel.
//
//   cpp_tuner BACKEND CODE_OBJECT [ELEMENTS [SETS]]
//
// BACKEND is cuda or hip; CODE_OBJECT holds `copy(src, dst, n)` (float32,
// grid-stride loop), e.g. pyhipbench/kernels/copy.ptx; ELEMENTS is the array
// length (default 1 << 22); SETS the rotated argument sets (default 4: the
// dirty-cold cache state; 1 = warm). The driver library is loaded at run time
// ($PYHIPBENCH_CUDA_LIBRARY / $PYHIPBENCH_HIP_LIBRARY name another one).
//
// Each candidate block size is timed by every per-kernel timer the backend
// has (cupti and events on CUDA, events on HIP) with the same rotated
// buffers; the table shows each one's median and bandwidth, and the winner
// is the fastest by the first timer that ran.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pyhipbench/driver.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/rotated_buffers.hpp"
#include "pyhipbench/timer.hpp"

namespace {

constexpr size_t kSamples = 64;  // per candidate and timer, taken in chunks of kChunk
constexpr size_t kChunk = 16;

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read the code object '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

size_t parse_count(const char* text, const char* what) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (end == text || *end != '\0' || value == 0 || text[0] == '-') {
    throw std::invalid_argument(std::string(what) + " '" + text + "': expected a positive integer");
  }
  return static_cast<size_t>(value);
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

// The median of `plan`'s samples on `timer`, µs per kernel, chunks continuing the rotation.
// (When the core's adaptive measure() lands, it replaces this function: it takes the
// timer and plan and returns the median with its CI and stop reason.)
double median_us(pyhipbench::Timer& timer, pyhipbench::LaunchPlan& plan) {
  const pyhipbench::Timings warm_up = timer.run(plan, kChunk, 0);  // untimed: first-launch costs
  std::vector<double> samples;
  size_t next_set = kChunk * warm_up.launches_per_sample % plan.sets();
  while (samples.size() < kSamples) {
    pyhipbench::Timings chunk = timer.run(plan, kChunk, next_set);
    samples.insert(samples.end(), chunk.times_us.begin(), chunk.times_us.end());
    next_set = (next_set + kChunk * chunk.launches_per_sample) % plan.sets();
  }
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

struct Row {
  uint32_t block;
  uint32_t grid;
  std::string timer;
  double median_us;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: %s cuda|hip CODE_OBJECT [ELEMENTS [SETS]]\n", argv[0]);
    return 2;
  }
  try {
    const std::string backend = argv[1];
    const size_t elements = argc > 3 ? parse_count(argv[3], "ELEMENTS") : size_t{1} << 22;
    const size_t sets = argc > 4 ? parse_count(argv[4], "SETS") : 4;
    const size_t bytes = elements * sizeof(float);

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
    // (When the core's rotation rule lands, `sets` comes from it: set size 2 * bytes,
    // the last-level cache and free memory, the same R as Python's.)
    pyhipbench::RotatedBuffers rotated(driver, context, {{src.address(), bytes}, {dst.address(), bytes}}, sets);
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
    for (uint32_t block : {64u, 128u, 256u, 512u, 1024u}) {
      pyhipbench::LaunchConfig config;
      const uint64_t blocks = (elements + block - 1) / block;
      config.grid = {static_cast<uint32_t>(std::min<uint64_t>(blocks, 65535)), 1, 1};
      config.block = {block, 1, 1};
      pyhipbench::LaunchPlan plan(copy, "copy", config, arg_sets, {0, 8, 16});
      for (const auto& timer : timers) rows.push_back({block, config.grid[0], timer->name(), median_us(*timer, plan)});
    }

    std::printf("copy of %zu floats (%zu bytes), %zu rotated sets, %zu samples each\n", elements, bytes,
                rotated.sets(), kSamples);
    std::printf("%6s %6s %7s %11s %8s\n", "block", "grid", "timer", "median µs", "GB/s");
    for (const Row& r : rows) {
      std::printf("%6u %6u %7s %11.3f %8.1f\n", r.block, r.grid, r.timer.c_str(), r.median_us,
                  2.0 * bytes / (r.median_us * 1e3));
    }
    const std::string& judge = timers.front()->name();
    const Row* best = nullptr;
    for (const Row& r : rows) {
      if (r.timer == judge && (best == nullptr || r.median_us < best->median_us)) best = &r;
    }
    std::printf("winner: block %u (grid %u), %.3f µs by the %s timer\n", best->block, best->grid,
                best->median_us, judge.c_str());
    return 0;
  } catch (const pyhipbench::DriverError& e) {
    std::fprintf(stderr, "cpp_tuner: %s (call %s, code %d)\n", e.what(), e.call().c_str(), e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_tuner: %s\n", e.what());
  }
  return 1;
}
