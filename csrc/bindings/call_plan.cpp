// pyhipbench._core.CallPlan, make_graph_call and capture_call: a callable to time.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "bindings/clean_step.hpp"
#include "pyhipbench/call_plan.hpp"
#include "pyhipbench/driver.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

// A Python callable as the core calls it: from a thread without the GIL (measure releases it).
// The function object is released with the GIL held, wherever the last copy goes.
std::function<void()> python_call(py::function call) {
  auto held = std::shared_ptr<py::function>(new py::function(std::move(call)), [](py::function* f) {
    py::gil_scoped_acquire gil;
    delete f;
  });
  return [held] {
    py::gil_scoped_acquire gil;
    (*held)();
  };
}

}  // namespace

void bind_call_plan(py::module_& m) {
  py::class_<CallPlan>(m, "CallPlan",
                       "A callable to time: the GPU work of one call is one sample (pyhipbench/call_plan.hpp).")
      .def(py::init([](std::string name, py::function call, uintptr_t stream) {
             return std::make_unique<CallPlan>(std::move(name), python_call(std::move(call)), stream);
           }),
           py::arg("name"), py::arg("call"), py::arg("stream"))
      .def_property_readonly("name", &CallPlan::name)
      .def_property_readonly("stream", &CallPlan::stream)
      .def(
          "set_clean_step",
          [](CallPlan& call, uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
             std::array<uint32_t, 3> block, py::bytes args, std::vector<size_t> arg_offsets) {
            call.set_clean_step(clean_step_plan(function, std::move(kernel_name), grid, block, args,
                                                std::move(arg_offsets), call.stream()));
          },
          py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("args"),
          py::arg("arg_offsets"), "An untimed launch before each call, on the call's stream (the clean step).")
      .def_property_readonly("has_clean_step", [](const CallPlan& call) { return call.clean_step() != nullptr; });
  m.def("make_graph_call", &make_graph_call, py::arg("driver"), py::arg("context"), py::arg("graph"), py::arg("stream"),
        py::arg("name"), "A CallPlan replaying captured graph `graph` (a CUgraph / hipGraph_t handle) on `stream`.");
  m.def(
      "capture_call",
      [](std::shared_ptr<Driver> driver, uintptr_t context, uintptr_t stream, py::function call, std::string name) {
        return capture_call(std::move(driver), context, stream, python_call(std::move(call)), std::move(name));
      },
      py::arg("driver"), py::arg("context"), py::arg("stream"), py::arg("call"), py::arg("name"),
      "Captures what `call` issues on `stream` into a graph and returns a CallPlan replaying it.");
}

}  // namespace pyhipbench::bindings
