#include "pyhipbench/launch_plan.hpp"

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

namespace pyhipbench {

namespace {
// Each set starts on a boundary fit for the widest kernel argument (a 16-byte vector).
constexpr size_t kAlignment = alignof(std::max_align_t);
size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
std::atomic<uint64_t> next_plan_id{1};
}  // namespace

LaunchPlan::LaunchPlan(uintptr_t function, std::string kernel_name, LaunchConfig config,
                       const std::vector<std::string>& arg_sets, std::vector<size_t> arg_offsets)
    : id_(next_plan_id++),
      function_(function),
      kernel_name_(std::move(kernel_name)),
      config_(config),
      sets_(arg_sets.size()),
      arg_offsets_(std::move(arg_offsets)) {
  if (sets_ == 0) throw std::invalid_argument("a launch plan needs at least one argument set");
  const size_t set_bytes = arg_sets[0].size();
  for (size_t s = 0; s < sets_; ++s) {
    if (arg_sets[s].size() != set_bytes) {
      throw std::invalid_argument("argument set " + std::to_string(s) + " has " + std::to_string(arg_sets[s].size()) +
                                  " bytes, set 0 has " + std::to_string(set_bytes) +
                                  "; all sets must share one layout");
    }
  }
  for (size_t offset : arg_offsets_) {
    if (offset >= set_bytes) {
      throw std::invalid_argument("argument offset " + std::to_string(offset) + " is outside the " +
                                  std::to_string(set_bytes) + "-byte argument set");
    }
  }
  set_stride_ = round_up(set_bytes);
  const size_t bytes = set_stride_ * sets_;
  storage_.resize((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  pointers_.resize(sets_ * arg_offsets_.size());
  for (size_t s = 0; s < sets_; ++s) {
    std::byte* base = reinterpret_cast<std::byte*>(storage_.data()) + s * set_stride_;
    if (set_bytes > 0) std::memcpy(base, arg_sets[s].data(), set_bytes);
    for (size_t a = 0; a < arg_offsets_.size(); ++a) {
      pointers_[s * arg_offsets_.size() + a] = base + arg_offsets_[a];
    }
  }
}

void check_launch_limits(const LaunchLimits& limits, const LaunchConfig& config) {
  for (size_t axis = 0; axis < 3; ++axis) {
    const uint64_t threads = uint64_t{config.grid[axis]} * config.block[axis];  // < 2^64: two 32-bit factors
    if (threads > limits.max_global_threads) {
      const std::string xyz(1, "xyz"[axis]);
      throw std::invalid_argument("grid " + xyz + " = " + std::to_string(config.grid[axis]) + " by block " + xyz +
                                  " = " + std::to_string(config.block[axis]) + " is " + std::to_string(threads) +
                                  " threads; at most " + std::to_string(limits.max_global_threads) +
                                  " per axis: " + limits.limited_by);
    }
  }
}

void LaunchPlan::set_clean_step(std::unique_ptr<LaunchPlan> step) {
  if (step != nullptr && (step->sets() != 1 || step->clean_step() != nullptr)) {
    throw std::invalid_argument(
        "a clean step is one launch: a plan of one argument set and no clean step of "
        "its own, got " +
        std::to_string(step->sets()) + " sets");
  }
  clean_step_ = std::move(step);
}

}  // namespace pyhipbench
