#include "pyhipbench/launch_plan.hpp"

#include <atomic>
#include <cstring>
#include <stdexcept>

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
      throw std::invalid_argument("argument set " + std::to_string(s) + " has " +
                                  std::to_string(arg_sets[s].size()) + " bytes, set 0 has " +
                                  std::to_string(set_bytes) + "; all sets must share one layout");
    }
  }
  for (size_t offset : arg_offsets_) {
    if (offset >= set_bytes) {
      throw std::invalid_argument("argument offset " + std::to_string(offset) +
                                  " is outside the " + std::to_string(set_bytes) +
                                  "-byte argument set");
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

}  // namespace pyhipbench
