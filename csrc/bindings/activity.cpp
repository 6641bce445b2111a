// pyhipbench._core.Activity: a kernel, memcpy or memset a call issued (the cupti timer).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/bindings.hpp"
#include "pyhipbench/timer.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_activity(py::module_& m) {
  py::class_<Activity>(m, "Activity", "One kernel, memcpy or memset a call issued, as the cupti timer saw it.")
      .def_readonly("sample", &Activity::sample)
      .def_property_readonly(
          "kind",
          [](const Activity& a) {
            return a.kind == Activity::Kind::kernel ? "kernel" : a.kind == Activity::Kind::memcpy ? "memcpy" : "memset";
          })
      .def_readonly("name", &Activity::name)
      .def_readonly("start_ns", &Activity::start_ns, "on the GPU's clock")
      .def_readonly("end_ns", &Activity::end_ns)
      .def_readonly("bytes", &Activity::bytes)
      .def_property_readonly("duration_us",
                             [](const Activity& a) { return static_cast<double>(a.end_ns - a.start_ns) / 1000.0; });
}

}  // namespace pyhipbench::bindings
