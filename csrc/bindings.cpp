// pybind11 module pyhipbench._core: launch plans, drivers and timers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "pyhipbench/timer.hpp"

namespace py = pybind11;
using namespace pyhipbench;

PYBIND11_MODULE(_core, m) {
  m.doc() = "pyhipbench's C++ core: launch plans, driver libraries and the timers that run them";

  // pyhipbench.Error is the root of every error a user can cause; the Python
  // layer derives its own errors from it (pyhipbench/errors.py).
  py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewException("pyhipbench._core.Error", PyExc_Exception, nullptr));
  m.attr("Error") = error;
  py::exception<DriverError> driver_error(
      m, "DriverError", py::make_tuple(error, py::handle(PyExc_RuntimeError)));
  py::exception<KernelFault> kernel_fault(m, "KernelFault", driver_error);
  py::register_exception<LibraryError>(m, "LibraryError",
                                       py::make_tuple(error, py::handle(PyExc_OSError)));
  py::register_exception<MeasurementError>(m, "MeasurementError",
                                           py::make_tuple(error, py::handle(PyExc_RuntimeError)));
  // Attach the driver's details to the Python exception, so callers can act
  // on the code, not only read the message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const KernelFault& e) {
      py::object error = py::module_::import("pyhipbench._core").attr("KernelFault")(e.what());
      error.attr("call") = e.call();
      error.attr("code") = e.code();
      error.attr("driver_message") = e.message();
      error.attr("context_usable") = e.context_usable();
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    } catch (const DriverError& e) {
      py::object error = py::module_::import("pyhipbench._core").attr("DriverError")(e.what());
      error.attr("call") = e.call();
      error.attr("code") = e.code();
      error.attr("driver_message") = e.message();
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    } catch (const std::invalid_argument& e) {
      // Bad input to the core (a plan, a timer's options): pyhipbench.BenchError,
      // a pyhipbench.Error and a ValueError, like the same mistake caught in Python.
      py::object error = py::module_::import("pyhipbench.errors").attr("BenchError")(e.what());
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    }
  });

  py::class_<LaunchPlan>(m, "LaunchPlan")
      .def(py::init([](uintptr_t function, std::string kernel_name,
                       std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
                       uint32_t shared_bytes, uintptr_t stream, std::vector<py::bytes> arg_sets,
                       std::vector<size_t> arg_offsets) {
             std::vector<std::string> sets(arg_sets.begin(), arg_sets.end());
             return std::make_unique<LaunchPlan>(function, std::move(kernel_name),
                                                 LaunchConfig{grid, block, shared_bytes, stream},
                                                 sets, std::move(arg_offsets));
           }),
           py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"),
           py::arg("shared_bytes"), py::arg("stream"), py::arg("arg_sets"), py::arg("arg_offsets"))
      .def_property_readonly("sets", &LaunchPlan::sets)
      .def_property_readonly("arg_count", &LaunchPlan::arg_count)
      .def_property_readonly("kernel_name", &LaunchPlan::kernel_name)
      .def_property_readonly("id", &LaunchPlan::id)
      .def("set_clean_step",
           [](LaunchPlan& plan, uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
              std::array<uint32_t, 3> block, py::bytes args, std::vector<size_t> arg_offsets) {
             plan.set_clean_step(std::make_unique<LaunchPlan>(
                 function, std::move(kernel_name), LaunchConfig{grid, block, 0, plan.config().stream},
                 std::vector<std::string>{std::string(args)}, std::move(arg_offsets)));
           },
           py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("args"),
           py::arg("arg_offsets"),
           "An untimed launch before each timed one, on the plan's stream (the clean-cold clean step).")
      .def_property_readonly("has_clean_step", [](const LaunchPlan& plan) { return plan.clean_step() != nullptr; })
      .def("arg_pointers", [](LaunchPlan& plan, size_t set) {
             // The kernelParams addresses of one set, for tests of the packing.
             if (set >= plan.sets()) throw py::index_error("no argument set " + std::to_string(set));
             std::vector<uintptr_t> out;
             void** args = plan.args(set);
             for (size_t a = 0; a < plan.arg_count(); ++a) out.push_back(reinterpret_cast<uintptr_t>(args[a]));
             return out;
           }, py::arg("set"))
      .def("params_address", [](LaunchPlan& plan, size_t set) {
             // Where set `set`'s kernelParams array lives: what the driver is handed.
             if (set >= plan.sets()) throw py::index_error("no argument set " + std::to_string(set));
             return reinterpret_cast<uintptr_t>(plan.args(set));
           }, py::arg("set"));

  py::class_<Driver, std::shared_ptr<Driver>>(m, "Driver")
      .def_property_readonly("backend", &Driver::backend)
      .def_property_readonly("library_path", &Driver::library_path);

  m.def("load_driver", &load_driver, py::arg("backend"), py::arg("library_path") = "",
        "Loads the driver library of `backend` ('cuda' or 'hip').");

  py::class_<Timer>(m, "Timer")
      .def_property_readonly("name", &Timer::name)
      .def("run",
           [](Timer& timer, LaunchPlan& plan, size_t samples, size_t first_set) {
             Timings timings;
             {
               py::gil_scoped_release release;
               timings = timer.run(plan, samples, first_set);
             }
             py::array_t<double> times(static_cast<py::ssize_t>(timings.times_us.size()));
             std::copy(timings.times_us.begin(), timings.times_us.end(), times.mutable_data());
             return py::make_tuple(times, timings.launches_per_sample, timings.host_us);
           },
           py::arg("plan"), py::arg("samples"), py::arg("first_set") = 0,
           "Takes `samples` samples, launch k on argument set (first_set + k) mod plan.sets; returns "
           "(µs per kernel per sample as a float64 array, launches per sample, host µs spent "
           "issuing them all).");

  m.def("make_timer",
        [](const std::string& name, std::shared_ptr<Driver> driver, uintptr_t context,
           size_t launches_per_sample, uintptr_t spin_function, double spin_timeout_ms) {
          TimerOptions options;
          options.launches_per_sample = launches_per_sample;
          options.spin_function = spin_function;
          options.spin_timeout_ms = spin_timeout_ms;
          return make_timer(name, std::move(driver), context, options);
        },
        py::arg("name"), py::arg("driver"), py::arg("context"), py::kw_only(),
        py::arg("launches_per_sample") = 0, py::arg("spin_function") = 0,
        py::arg("spin_timeout_ms") = TimerOptions{}.spin_timeout_ms,
        "A timer `name` ('events', 'graph', 'batched'; CUDA also 'cupti') on `driver`, running in "
        "`context` (CUDA: a CUcontext handle; HIP: a device ordinal). 'cupti' loads libcupti: "
        "$PYHIPBENCH_CUPTI_LIBRARY, else libcupti.so.13 / .12 / .so by the loader's search, then under "
        "$CUDA_HOME and /usr/local/cuda. `launches_per_sample`: kernel nodes per graph, "
        "launches per batch (0 = the default, 100). `spin_function` (batched, HIP only): the handle "
        "of the `spin` kernel of pyhipbench/kernels/amdgpu.ll loaded on the device. "
        "`spin_timeout_ms` (batched): how long the spin kernel waits for a batch to be queued.");
}
