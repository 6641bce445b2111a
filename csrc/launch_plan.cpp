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

KernelLaunch::KernelLaunch(uintptr_t function, std::string kernel_name, LaunchConfig config,
                           const std::vector<std::string>& arg_sets, std::vector<size_t> arg_offsets)
    : function_(function),
      kernel_name_(std::move(kernel_name)),
      config_(config),
      sets_(arg_sets.size()),
      arg_offsets_(std::move(arg_offsets)) {
  if (sets_ == 0) throw std::invalid_argument("kernel '" + kernel_name_ + "' needs at least one argument set");
  const size_t set_bytes = arg_sets[0].size();
  for (size_t s = 0; s < sets_; ++s) {
    if (arg_sets[s].size() != set_bytes) {
      throw std::invalid_argument("argument set " + std::to_string(s) + " of kernel '" + kernel_name_ + "' has " +
                                  std::to_string(arg_sets[s].size()) + " bytes, set 0 has " +
                                  std::to_string(set_bytes) + "; all sets must share one layout");
    }
  }
  for (size_t offset : arg_offsets_) {
    if (offset >= set_bytes) {
      throw std::invalid_argument("argument offset " + std::to_string(offset) + " of kernel '" + kernel_name_ +
                                  "' is outside the " + std::to_string(set_bytes) + "-byte argument set");
    }
  }
  const size_t stride = round_up(set_bytes);
  storage_.resize((stride * sets_ + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  pointers_.resize(sets_ * arg_offsets_.size());
  for (size_t s = 0; s < sets_; ++s) {
    std::byte* base = reinterpret_cast<std::byte*>(storage_.data()) + s * stride;
    if (set_bytes > 0) std::memcpy(base, arg_sets[s].data(), set_bytes);
    for (size_t a = 0; a < arg_offsets_.size(); ++a) {
      pointers_[s * arg_offsets_.size() + a] = base + arg_offsets_[a];
    }
  }
}

namespace {
std::vector<KernelLaunch> one_kernel(KernelLaunch launch) {
  std::vector<KernelLaunch> chain;
  chain.push_back(std::move(launch));
  return chain;
}
}  // namespace

LaunchPlan::LaunchPlan(uintptr_t function, std::string kernel_name, LaunchConfig config,
                       const std::vector<std::string>& arg_sets, std::vector<size_t> arg_offsets)
    : LaunchPlan(one_kernel(KernelLaunch(function, std::move(kernel_name), config, arg_sets, std::move(arg_offsets)))) {
}

LaunchPlan::LaunchPlan(std::vector<KernelLaunch> chain) : id_(next_plan_id++), chain_(std::move(chain)) {
  if (chain_.empty()) throw std::invalid_argument("a launch plan needs at least one kernel, got none");
  const KernelLaunch& first = chain_.front();
  for (const KernelLaunch& k : chain_) {
    if (k.sets() != first.sets()) {
      throw std::invalid_argument("kernel '" + k.kernel_name() + "' has " + std::to_string(k.sets()) +
                                  " argument sets, kernel '" + first.kernel_name() + "' has " +
                                  std::to_string(first.sets()) + "; a chain rotates its kernels' sets together");
    }
    if (k.config().stream != first.config().stream) {
      throw std::invalid_argument("kernel '" + k.kernel_name() + "' launches on another stream than kernel '" +
                                  first.kernel_name() + "'; a chain runs on one stream");
    }
    name_ += (name_.empty() ? "" : " -> ") + k.kernel_name();
  }
}

void LaunchPlan::add_reset(ResetStep step) {
  if (step.destinations.size() != sets()) {
    throw std::invalid_argument("a reset step of " + std::to_string(step.destinations.size()) +
                                " destinations for a plan of " + std::to_string(sets()) +
                                " argument sets; expected one per set");
  }
  if (step.bytes == 0) throw std::invalid_argument("a reset step of 0 bytes; expected at least one");
  resets_.push_back(std::move(step));
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

void check_clean_step(const LaunchPlan& step) {
  if (step.sets() != 1 || step.kernels() != 1 || step.clean_step() != nullptr || !step.resets().empty()) {
    throw std::invalid_argument(
        "a clean step is one launch: a plan of one kernel, one argument set and no steps "
        "of its own, got " +
        std::to_string(step.kernels()) + " kernels and " + std::to_string(step.sets()) + " sets");
  }
}

void LaunchPlan::set_clean_step(std::unique_ptr<LaunchPlan> step) {
  if (step != nullptr) check_clean_step(*step);
  clean_step_ = std::move(step);
}

}  // namespace pyhipbench
