// The clean step of a LaunchPlan or a CallPlan as Python gives it: one kernel, one argument set.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pyhipbench/launch_plan.hpp"

namespace pyhipbench::bindings {

inline std::unique_ptr<LaunchPlan> clean_step_plan(uintptr_t function, std::string kernel_name,
                                                   std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
                                                   const pybind11::bytes& args, std::vector<size_t> arg_offsets,
                                                   uintptr_t stream) {
  return std::make_unique<LaunchPlan>(function, std::move(kernel_name), LaunchConfig{grid, block, 0, stream},
                                      std::vector<std::string>{std::string(args)}, std::move(arg_offsets));
}

}  // namespace pyhipbench::bindings
