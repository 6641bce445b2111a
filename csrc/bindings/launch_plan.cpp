// pyhipbench._core.LaunchPlan: one kernel, or a chain, with its argument sets.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/bindings.hpp"
#include "bindings/clean_step.hpp"
#include "pyhipbench/launch_plan.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

std::vector<std::string> as_strings(const std::vector<py::bytes>& sets) {
  return std::vector<std::string>(sets.begin(), sets.end());
}

// One kernel of a chain as Python gives it: (function, kernel_name, grid, block, shared_bytes, stream,
// arg_sets, arg_offsets).
using ChainEntry = std::tuple<uintptr_t, std::string, std::array<uint32_t, 3>, std::array<uint32_t, 3>, uint32_t,
                              uintptr_t, std::vector<py::bytes>, std::vector<size_t>>;

void** checked_args(LaunchPlan& plan, size_t set, size_t kernel) {
  if (kernel >= plan.kernels()) throw py::index_error("no kernel " + std::to_string(kernel));
  if (set >= plan.sets()) throw py::index_error("no argument set " + std::to_string(set));
  return plan.kernel(kernel).args(set);
}

}  // namespace

void bind_launch_plan(py::module_& m) {
  py::class_<LaunchPlan>(m, "LaunchPlan",
                         "What a sample launches: one kernel, or a chain of kernels in order "
                         "(pyhipbench/launch_plan.hpp).")
      .def(py::init([](uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
                       std::array<uint32_t, 3> block, uint32_t shared_bytes, uintptr_t stream,
                       std::vector<py::bytes> arg_sets, std::vector<size_t> arg_offsets) {
             return std::make_unique<LaunchPlan>(function, std::move(kernel_name),
                                                 LaunchConfig{grid, block, shared_bytes, stream}, as_strings(arg_sets),
                                                 std::move(arg_offsets));
           }),
           py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("shared_bytes"),
           py::arg("stream"), py::arg("arg_sets"), py::arg("arg_offsets"))
      .def_static(
          "chain",
          [](const std::vector<ChainEntry>& kernels) {
            std::vector<KernelLaunch> chain;
            chain.reserve(kernels.size());
            for (const auto& [function, name, grid, block, shared_bytes, stream, arg_sets, offsets] : kernels) {
              chain.emplace_back(function, name, LaunchConfig{grid, block, shared_bytes, stream}, as_strings(arg_sets),
                                 offsets);
            }
            return std::make_unique<LaunchPlan>(std::move(chain));
          },
          py::arg("kernels"),
          "A chain: each of `kernels` a tuple (function, kernel_name, grid, block, shared_bytes, stream, "
          "arg_sets, arg_offsets), all with the same number of sets and the same stream.")
      .def_property_readonly("sets", &LaunchPlan::sets)
      .def_property_readonly("kernels", &LaunchPlan::kernels, "kernels per sample")
      .def_property_readonly("name", &LaunchPlan::name, "the kernel's name; a chain's names joined by ' -> '")
      .def_property_readonly("kernel_names",
                             [](const LaunchPlan& plan) {
                               std::vector<std::string> names;
                               for (size_t k = 0; k < plan.kernels(); ++k)
                                 names.push_back(plan.kernel(k).kernel_name());
                               return names;
                             })
      .def_property_readonly("id", &LaunchPlan::id)
      .def(
          "set_clean_step",
          [](LaunchPlan& plan, uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
             std::array<uint32_t, 3> block, py::bytes args, std::vector<size_t> arg_offsets) {
            plan.set_clean_step(clean_step_plan(function, std::move(kernel_name), grid, block, args,
                                                std::move(arg_offsets), plan.stream()));
          },
          py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("args"),
          py::arg("arg_offsets"),
          "An untimed launch before each sample, on the plan's stream (the clean-cold clean step).")
      .def_property_readonly("has_clean_step", [](const LaunchPlan& plan) { return plan.clean_step() != nullptr; })
      .def(
          "add_reset",
          [](LaunchPlan& plan, std::vector<uintptr_t> destinations, uintptr_t source, size_t bytes) {
            plan.add_reset(ResetStep{std::move(destinations), source, bytes});
          },
          py::arg("destinations"), py::arg("source"), py::arg("bytes"),
          "An untimed step before each sample: `bytes` bytes at destinations[set] set to zero (source 0) or "
          "copied from device address `source`.")
      .def_property_readonly("resets", [](const LaunchPlan& plan) { return plan.resets().size(); })
      .def(
          "arg_pointers",
          [](LaunchPlan& plan, size_t set, size_t kernel) {
            // The kernelParams addresses of one set, for tests of the packing.
            void** args = checked_args(plan, set, kernel);
            std::vector<uintptr_t> out;
            for (size_t a = 0; a < plan.kernel(kernel).arg_count(); ++a) {
              out.push_back(reinterpret_cast<uintptr_t>(args[a]));
            }
            return out;
          },
          py::arg("set"), py::arg("kernel") = 0)
      .def(
          "params_address",
          [](LaunchPlan& plan, size_t set, size_t kernel) {
            // Where set `set`'s kernelParams array lives: what the driver is handed.
            return reinterpret_cast<uintptr_t>(checked_args(plan, set, kernel));
          },
          py::arg("set"), py::arg("kernel") = 0);
}

}  // namespace pyhipbench::bindings
