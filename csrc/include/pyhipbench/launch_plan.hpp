// A kernel launch with R precomputed argument sets, packed before timing.
//
// Each set holds the kernel's argument values laid out in one buffer, and an
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

class PYHIPBENCH_API LaunchPlan {
 public:
  // `function`: a CUfunction / hipFunction_t as an integer.
  // `arg_sets[s]`: the packed argument bytes of set s; every set has the same
  // layout, given by `arg_offsets` (byte offset of each argument in a set).
  LaunchPlan(uintptr_t function, std::string kernel_name, LaunchConfig config, const std::vector<std::string>& arg_sets,
             std::vector<size_t> arg_offsets);
  // The pointer arrays point into this object's own storage: no copies.
  LaunchPlan(const LaunchPlan&) = delete;
  LaunchPlan& operator=(const LaunchPlan&) = delete;

  // Unique to this plan in the process (never reused, unlike its address):
  // what timers key the graphs they build from a plan by.
  uint64_t id() const { return id_; }
  uintptr_t function() const { return function_; }
  const std::string& kernel_name() const { return kernel_name_; }
  const LaunchConfig& config() const { return config_; }
  size_t sets() const { return sets_; }
  size_t arg_count() const { return arg_offsets_.size(); }
  // The kernelParams array of set `s`, valid for the plan's lifetime.
  void** args(size_t s) { return arg_count() == 0 ? nullptr : &pointers_[s * arg_count()]; }

  // An untimed launch the per-kernel timers (events, cupti) issue before each
  // timed one, on the same stream: the clean-cold cache state's clean step (a
  // kernel that reads more than the last-level cache). A one-set plan; none by
  // default. Timers that time several launches together (graph, batched)
  // refuse a plan with one, since they would time it too.
  void set_clean_step(std::unique_ptr<LaunchPlan> step);
  LaunchPlan* clean_step() const { return clean_step_.get(); }

 private:
  uint64_t id_;
  uintptr_t function_;
  std::string kernel_name_;
  LaunchConfig config_;
  size_t sets_;
  std::vector<size_t> arg_offsets_;
  size_t set_stride_;                      // bytes between sets in storage_, aligned
  std::vector<std::max_align_t> storage_;  // all sets' argument bytes
  std::vector<void*> pointers_;            // sets_ x arg_count() pointers into storage_
  std::unique_ptr<LaunchPlan> clean_step_;
};

}  // namespace pyhipbench
