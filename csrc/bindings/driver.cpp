// pyhipbench._core.Driver and load_driver.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "bindings/bindings.hpp"
#include "pyhipbench/driver.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_driver(py::module_& m) {
  py::class_<Driver, std::shared_ptr<Driver>>(m, "Driver")
      .def_property_readonly("backend", &Driver::backend)
      .def_property_readonly("library_path", &Driver::library_path);
  m.def("load_driver", &load_driver, py::arg("backend"), py::arg("library_path") = "",
        "Loads the driver library of `backend` ('cuda' or 'hip').");
}

}  // namespace pyhipbench::bindings
