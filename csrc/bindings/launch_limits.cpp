// pyhipbench._core.LaunchLimits and launch_limits.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>

#include "bindings/bindings.hpp"
#include "pyhipbench/launch_plan.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_launch_limits(py::module_& m) {
  py::class_<LaunchLimits>(m, "LaunchLimits",
                           "What a backend's launch call can express beyond the device's limits "
                           "(pyhipbench/launch_plan.hpp).")
      .def_readonly("max_global_threads", &LaunchLimits::max_global_threads,
                    "the most threads per axis (grid x block) the launch call takes; 2**64 - 1 for no limit")
      .def_readonly("limited_by", &LaunchLimits::limited_by, "why, as the check's message says; '' for no limit")
      .def(
          "check",
          [](const LaunchLimits& limits, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block) {
            check_launch_limits(limits, LaunchConfig{grid, block, 0, 0});
          },
          py::arg("grid"), py::arg("block"),
          "Raises BenchError naming the axis if grid x block (blocks, threads per block) exceeds the limits.")
      .def("__repr__", [](const LaunchLimits& limits) {
        return py::str("LaunchLimits(max_global_threads={}, limited_by={!r})")
            .format(limits.max_global_threads, limits.limited_by);
      });
  m.def("launch_limits", &launch_limits, py::arg("backend"),
        "The launch limits of backend 'cuda' or 'hip' (the timers check every plan against them).");
}

}  // namespace pyhipbench::bindings
