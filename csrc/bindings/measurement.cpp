// pyhipbench._core.Measurement and measure: a plan's or a call's samples until the rule says stop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "bindings/arrays.hpp"
#include "bindings/bindings.hpp"
#include "pyhipbench/call_plan.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/stopping.hpp"
#include "pyhipbench/timer.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_measurement(py::module_& m) {
  py::class_<Measurement>(m, "Measurement", "What measure() took: the timed samples and how it stopped.")
      .def_property_readonly(
          "times_us", [](const Measurement& r) { return as_array(r.times_us); },
          "the timed samples, µs per kernel (float64 array)")
      .def_readonly("stop_reason", &Measurement::stop_reason)
      .def_readonly("warmup_samples", &Measurement::warmup_samples)
      .def_readonly("launches_per_sample", &Measurement::launches_per_sample)
      .def_readonly("host_us", &Measurement::host_us, "host µs spent issuing the timed samples' launches")
      .def_readonly("precision_reached", &Measurement::precision_reached)
      .def_property_readonly(
          "clock_mhz", [](const Measurement& r) { return as_array(r.clock_mhz); },
          "the SM clock of each run whose samples were kept, MHz (CUDA's clock probe; empty where not read)")
      .def_property_readonly(
          "clock_samples",
          [](const Measurement& r) { return std::vector<size_t>(r.clock_samples.begin(), r.clock_samples.end()); },
          "samples kept from each of those runs")
      .def_readonly("default_clock_mhz", &Measurement::default_clock_mhz,
                    "the device's rated SM clock, MHz (0: unread)")
      .def_readonly("throttled_samples", &Measurement::throttled_samples,
                    "samples discarded as taken below the throttle threshold")
      .def_property_readonly(
          "kernel_times_us",
          [](const Measurement& r) {
            const size_t samples = r.times_us.size();
            const size_t kernels = samples == 0 || r.kernel_times_us.empty() ? 0 : r.kernel_times_us.size() / samples;
            py::array_t<double> out({static_cast<py::ssize_t>(samples), static_cast<py::ssize_t>(kernels)});
            std::copy(r.kernel_times_us.begin(), r.kernel_times_us.end(), out.mutable_data());
            return out;
          },
          "a chain's kernels' own times (cupti), samples x kernels, µs; no columns otherwise")
      .def_property_readonly(
          "span_us", [](const Measurement& r) { return as_array(r.span_us); },
          "each sample's first kernel start to last kernel end (cupti; chains, calls), µs; empty otherwise")
      .def_readonly("activities", &Measurement::activities, "a call's kernels, memcpys and memsets (cupti)");
  m.def(
      "measure",
      [](Timer& timer, LaunchPlan& plan, const StopRule& rule, std::optional<size_t> warmup) {
        py::gil_scoped_release release;
        return measure(timer, plan, rule, warmup);
      },
      py::arg("timer"), py::arg("plan"), py::arg("rule"), py::arg("warmup") = py::none(),
      "Times `plan` with `timer` in chunks until `rule` says stop, warming up first (`warmup` untimed "
      "samples, or None: until two chunk medians settle); one timer session throughout.");
  m.def(
      "measure",
      [](Timer& timer, CallPlan& call, const StopRule& rule, std::optional<size_t> warmup) {
        py::gil_scoped_release release;  // each call takes the GIL back
        return measure(timer, call, rule, warmup);
      },
      py::arg("timer"), py::arg("call"), py::arg("rule"), py::arg("warmup") = py::none(),
      "The same for a callable's calls (the events and cupti timers).");
}

}  // namespace pyhipbench::bindings
