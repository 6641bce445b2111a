// pyhipbench._core's errors: the hierarchy, the translator from the core's exceptions, driver_error.
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "bindings/bindings.hpp"
#include "pyhipbench/errors.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

// The Python exception for `e`, with the driver's details attached so callers
// can act on the code, not only read the message. Both the core's own errors
// and the Python backends' (through driver_error) are made here, so a failed
// call reads the same from either layer.
py::object python_error(const DriverError& e) {
  const auto* fault = dynamic_cast<const KernelFault*>(&e);
  py::object error = py::module_::import("pyhipbench._core").attr(fault ? "KernelFault" : "DriverError")(e.what());
  error.attr("call") = e.call();
  error.attr("code") = e.code();
  error.attr("driver_message") = e.message();
  if (fault != nullptr) error.attr("context_usable") = fault->context_usable();
  return error;
}

}  // namespace

void bind_errors(py::module_& m) {
  // pyhipbench.Error is the root of every error a user can cause; the Python
  // layer derives its own errors from it (pyhipbench/errors.py).
  py::object error =
      py::reinterpret_steal<py::object>(PyErr_NewException("pyhipbench._core.Error", PyExc_Exception, nullptr));
  m.attr("Error") = error;
  py::exception<DriverError> driver_error(m, "DriverError", py::make_tuple(error, py::handle(PyExc_RuntimeError)));
  py::exception<KernelFault> kernel_fault(m, "KernelFault", driver_error);
  py::register_exception<LibraryError>(m, "LibraryError", py::make_tuple(error, py::handle(PyExc_OSError)));
  py::register_exception<MeasurementError>(m, "MeasurementError",
                                           py::make_tuple(error, py::handle(PyExc_RuntimeError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DriverError& e) {  // KernelFault included
      py::object error = python_error(e);
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    } catch (const std::invalid_argument& e) {
      // Bad input to the core (a plan, a timer's options): pyhipbench.BenchError,
      // a pyhipbench.Error and a ValueError, like the same mistake caught in Python.
      py::object error = py::module_::import("pyhipbench.errors").attr("BenchError")(e.what());
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    }
  });

  m.def(
      "driver_error",
      [](std::string call, int code, std::string name, std::string message) {
        return python_error(DriverError(std::move(call), code, std::move(name), std::move(message)));
      },
      py::arg("call"), py::arg("code"), py::arg("name"), py::arg("message"),
      "The DriverError (not raised) for driver call `call` that returned `code`, the driver's `name` and "
      "`message` for it: what the Python backends raise, worded as the core words its own.");
}

}  // namespace pyhipbench::bindings
