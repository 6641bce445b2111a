// pyhipbench._core.Timer (the core's timers, and one written in Python), attach_rocprofiler, make_timer.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/arrays.hpp"
#include "bindings/bindings.hpp"
#include "pyhipbench/call_plan.hpp"
#include "pyhipbench/driver.hpp"
#include "pyhipbench/timer.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

// A timer written in Python (a subclass of _core.Timer defining
// run(plan, samples, first_set) -> (µs per kernel per sample, launches per
// sample, host µs)): measure() drives it like the core's own, which is how
// the stopping rule is tested on synthetic samples.
class PythonTimer : public Timer {
 public:
  explicit PythonTimer(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  using Timer::run;
  Timings run(LaunchPlan& plan, size_t samples, size_t first_set) override {
    py::gil_scoped_acquire gil;
    py::function run = py::get_override(static_cast<const Timer*>(this), "run");
    if (!run) throw std::logic_error("the Python timer '" + name_ + "' defines no run(plan, samples, first_set)");
    const auto [times, launches_per_sample, host_us] =
        run(py::cast(&plan, py::return_value_policy::reference), samples, first_set)
            .cast<std::tuple<std::vector<double>, size_t, double>>();
    Timings timings;
    timings.times_us = times;
    timings.launches_per_sample = launches_per_sample;
    timings.host_us = host_us;
    return timings;
  }

 private:
  const std::string name_;
};

}  // namespace

void bind_timer(py::module_& m) {
  py::class_<Timer, PythonTimer>(m, "Timer")
      .def(py::init<std::string>(), py::arg("name"),
           "A timer written in Python: subclass and define run(plan, samples, first_set).")
      .def_property_readonly("name", &Timer::name)
      .def(
          "run",
          [](Timer& timer, LaunchPlan& plan, size_t samples, size_t first_set) {
            Timings timings;
            {
              py::gil_scoped_release release;
              timings = timer.run(plan, samples, first_set);
            }
            return py::make_tuple(as_array(timings.times_us), timings.launches_per_sample, timings.host_us);
          },
          py::arg("plan"), py::arg("samples"), py::arg("first_set") = 0,
          "Takes `samples` samples, chain k on argument set (first_set + k) mod plan.sets; returns "
          "(µs per sample as a float64 array, launches per sample, host µs spent "
          "issuing them all).")
      .def(
          "run",
          [](Timer& timer, CallPlan& call, size_t samples) {
            Timings timings;
            {
              py::gil_scoped_release release;
              timings = timer.run(call, samples);
            }
            return py::make_tuple(as_array(timings.times_us), timings.launches_per_sample, timings.host_us);
          },
          py::arg("call"), py::arg("samples"), "Takes `samples` calls, each a sample; as above.");

  m.def("attach_rocprofiler", &attach_rocprofiler, py::arg("library") = "",
        "Loads rocprofiler-sdk ($PYHIPBENCH_ROCPROFILER_LIBRARY, else librocprofiler-sdk.so, $ROCM_PATH/lib, "
        "/opt/rocm/lib) and configures its kernel-dispatch trace, once per process, before HIP initialises; "
        "why the rocprofiler timer cannot trace, or '' when it can.");
  m.def(
      "make_timer",
      [](const std::string& name, std::shared_ptr<Driver> driver, uintptr_t context, size_t launches_per_sample,
         uintptr_t spin_function, double spin_timeout_ms) {
        TimerOptions options;
        options.launches_per_sample = launches_per_sample;
        options.spin_function = spin_function;
        options.spin_timeout_ms = spin_timeout_ms;
        return make_timer(name, std::move(driver), context, options);
      },
      py::arg("name"), py::arg("driver"), py::arg("context"), py::kw_only(), py::arg("launches_per_sample") = 0,
      py::arg("spin_function") = 0, py::arg("spin_timeout_ms") = TimerOptions{}.spin_timeout_ms,
      "A timer `name` ('events', 'graph', 'batched'; CUDA also 'cupti', HIP also 'rocprofiler') on `driver`, running "
      "in "
      "`context` (CUDA: a CUcontext handle; HIP: a device ordinal). 'cupti' loads libcupti: "
      "$PYHIPBENCH_CUPTI_LIBRARY, else libcupti.so.13 / .12 / .so by the loader's search, then under "
      "$CUDA_HOME and /usr/local/cuda. `launches_per_sample`: kernel nodes per graph, "
      "launches per batch (0 = the default, 100). `spin_function` (batched, HIP only): the handle "
      "of the `spin` kernel of pyhipbench/kernels/amdgpu.ll loaded on the device. "
      "`spin_timeout_ms` (batched): how long the spin kernel waits for a batch to be queued.");
}

}  // namespace pyhipbench::bindings
