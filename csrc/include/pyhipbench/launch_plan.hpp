// What a sample launches: one kernel or a chain of kernels, each with R
// precomputed argument sets, packed before timing.
//
// Each set holds a kernel's argument values laid out in one buffer, and an
// array of pointers into that buffer: the `void** kernelParams` that both
// cuLaunchKernel and hipExtModuleLaunchKernel take. Building the pointer arrays
// here, once, is what lets the timed loop allocate nothing.
//
// A plan copies the argument bytes it is given (device addresses among them);
// the buffers those addresses name are the caller's, and must stay allocated
// while the plan runs. Give a plan to one Timer::run at a time, and set its
// clean step before that, never while it runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pyhipbench/export.hpp"

namespace pyhipbench {

struct LaunchConfig {
  std::array<uint32_t, 3> grid{1, 1, 1};   // blocks per dimension
  std::array<uint32_t, 3> block{1, 1, 1};  // threads per block per dimension
  uint32_t shared_bytes = 0;               // dynamic shared memory, bytes
  uintptr_t stream = 0;                    // driver stream handle; 0 = default stream
};

// What a backend's launch call can express, beyond the device's own limits
// (blocks and threads per dimension, threads per block: the device's
// properties state those and the driver checks them at launch). The timers
// check every plan against their backend's; Python checks a launch against
// the same before anything is launched.
struct LaunchLimits {
  // The most threads per axis, grid x block. HIP: hipExtModuleLaunchKernel
  // takes global work sizes (threads, not blocks) as 32-bit values, so
  // 2^32 - 1. CUDA: cuLaunchKernel takes block counts, so no limit here.
  uint64_t max_global_threads = UINT64_MAX;
  // Why max_global_threads is what it is, as check_launch_limits states it;
  // empty when there is no limit.
  std::string limited_by;
};

// The launch limits of backend "cuda" or "hip". Throws std::invalid_argument
// for another name.
PYHIPBENCH_API LaunchLimits launch_limits(const std::string& backend);

// Throws std::invalid_argument naming the axis, the sizes and the limit if
// grid x block on an axis of `config` exceeds `limits.max_global_threads`.
PYHIPBENCH_API void check_launch_limits(const LaunchLimits& limits, const LaunchConfig& config);

// One kernel of a plan: its function, launch configuration and R argument
// sets, packed. The pointer arrays point into this object's own storage, which
// a move keeps in place (a vector's buffer moves with it); it cannot be copied.
class PYHIPBENCH_API KernelLaunch {
 public:
  // `function`: a CUfunction / hipFunction_t as an integer.
  // `arg_sets[s]`: the packed argument bytes of set s; every set has the same
  // layout, given by `arg_offsets` (byte offset of each argument in a set).
  KernelLaunch(uintptr_t function, std::string kernel_name, LaunchConfig config,
               const std::vector<std::string>& arg_sets, std::vector<size_t> arg_offsets);
  KernelLaunch(KernelLaunch&&) noexcept = default;
  KernelLaunch& operator=(KernelLaunch&&) noexcept = default;
  KernelLaunch(const KernelLaunch&) = delete;
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  uintptr_t function() const { return function_; }
  const std::string& kernel_name() const { return kernel_name_; }
  const LaunchConfig& config() const { return config_; }
  size_t sets() const { return sets_; }
  size_t arg_count() const { return arg_offsets_.size(); }
  // The kernelParams array of set `s`, valid for the launch's lifetime.
  void** args(size_t s) { return arg_count() == 0 ? nullptr : &pointers_[s * arg_count()]; }

 private:
  uintptr_t function_;
  std::string kernel_name_;
  LaunchConfig config_;
  size_t sets_;
  std::vector<size_t> arg_offsets_;
  std::vector<std::max_align_t> storage_;  // all sets' argument bytes, each set aligned
  std::vector<void*> pointers_;            // sets_ x arg_count() pointers into storage_
};

// An untimed step before each sample, outside the timed window, on the plan's
// stream: Triton's reset_to_zero (fill an argument's buffer with zeros) and
// restore_value (copy a saved copy back). Per argument set: the buffer that
// stands for the argument in that set.
struct ResetStep {
  std::vector<uintptr_t> destinations;  // device address per argument set
  uintptr_t source = 0;                 // device address of the saved bytes; 0 = fill with zeros
  size_t bytes = 0;
};

// What one sample launches: a chain of one or more kernels, in order, on one
// stream, each with R argument sets (set s of every kernel belongs to sample
// set s: an array two kernels share is the same array within a set).
class LaunchPlan;

// Throws std::invalid_argument unless `step` is fit to be a clean step: one
// kernel, one argument set, no steps of its own.
PYHIPBENCH_API void check_clean_step(const LaunchPlan& step);

class PYHIPBENCH_API LaunchPlan {
 public:
  // A one-kernel plan.
  LaunchPlan(uintptr_t function, std::string kernel_name, LaunchConfig config, const std::vector<std::string>& arg_sets,
             std::vector<size_t> arg_offsets);
  // A chain. Throws std::invalid_argument if it is empty, or its kernels
  // differ in their number of argument sets or their stream.
  explicit LaunchPlan(std::vector<KernelLaunch> chain);
  LaunchPlan(const LaunchPlan&) = delete;
  LaunchPlan& operator=(const LaunchPlan&) = delete;

  // Unique to this plan in the process (never reused, unlike its address):
  // what timers key the graphs they build from a plan by.
  uint64_t id() const { return id_; }
  // The kernel's name; a chain's kernels' names joined by " -> ".
  const std::string& name() const { return name_; }
  size_t kernels() const { return chain_.size(); }
  KernelLaunch& kernel(size_t k) { return chain_[k]; }
  const KernelLaunch& kernel(size_t k) const { return chain_[k]; }
  size_t sets() const { return chain_.front().sets(); }
  uintptr_t stream() const { return chain_.front().config().stream; }

  // An untimed launch the per-kernel timers (events, cupti) issue before each
  // sample (before its chain's first kernel, never between its kernels), on
  // the same stream: the clean-cold cache state's clean step (a kernel that
  // reads more than the last-level cache). A one-kernel, one-set plan; none by
  // default. Timers that time several samples together (graph, batched)
  // refuse a plan with one, since they would time it too.
  void set_clean_step(std::unique_ptr<LaunchPlan> step);
  LaunchPlan* clean_step() const { return clean_step_.get(); }

  // Untimed steps before each sample, after the clean step (so what they write
  // is in the cache when the chain starts, as in real code, where an output is
  // zeroed right before the kernel); the same timers take them.
  // Throws std::invalid_argument unless the step has one destination per set.
  void add_reset(ResetStep step);
  const std::vector<ResetStep>& resets() const { return resets_; }

 private:
  uint64_t id_;
  std::vector<KernelLaunch> chain_;
  std::string name_;
  std::unique_ptr<LaunchPlan> clean_step_;
  std::vector<ResetStep> resets_;
};

}  // namespace pyhipbench
