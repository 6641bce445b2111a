// pyhipbench._core's rotation rule: plan_rotation and the memory headroom.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>

#include "bindings/bindings.hpp"
#include "pyhipbench/rotation.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_rotation(py::module_& m) {
  m.attr("MIN_HEADROOM_BYTES") = kMinHeadroomBytes;
  m.attr("HEADROOM_FRACTION") = kHeadroomFraction;
  m.def("headroom_bytes", &headroom_bytes, py::arg("total_bytes"),
        "Device memory left free for the driver, bytes: 5 % of `total_bytes`, at least MIN_HEADROOM_BYTES.");
  m.def(
      "plan_rotation",
      [](uint64_t set_bytes, uint64_t llc_bytes, uint64_t free_bytes, uint64_t total_bytes,
         std::optional<size_t> rotate, std::optional<size_t> launches) {
        const Rotation r = plan_rotation(set_bytes, llc_bytes, free_bytes, total_bytes, rotate, launches);
        return py::make_tuple(r.sets, r.wanted, r.reason);
      },
      py::arg("set_bytes"), py::arg("llc_bytes"), py::arg("free_bytes"), py::arg("total_bytes"),
      py::arg("rotate") = py::none(), py::arg("launches") = py::none(),
      "(R, R before the free-memory cap, why) for one rotated set of `set_bytes` (pyhipbench/rotation.hpp).");
}

}  // namespace pyhipbench::bindings
