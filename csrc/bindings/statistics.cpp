// pyhipbench._core.Summary, summarize, median_ci and judge.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings/arrays.hpp"
#include "bindings/bindings.hpp"
#include "pyhipbench/statistics.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_statistics(py::module_& m) {
  py::class_<Summary>(m, "Summary", "Statistics of one sample, all in µs except the counts and rel_ci.")
      .def_readonly("count", &Summary::count)
      .def_readonly("median", &Summary::median)
      .def_readonly("ci_low", &Summary::ci_low, "the median's confidence interval, µs")
      .def_readonly("ci_high", &Summary::ci_high)
      .def_readonly("confidence", &Summary::confidence)
      .def_readonly("mean", &Summary::mean)
      .def_readonly("stdev", &Summary::stdev, "sample standard deviation (0 for one sample)")
      .def_readonly("min", &Summary::min)
      .def_readonly("max", &Summary::max)
      .def_readonly("p10", &Summary::p10)
      .def_readonly("p90", &Summary::p90)
      .def_readonly("outliers", &Summary::outliers, "samples beyond Tukey's fences (1.5 IQR outside the quartiles)")
      .def_property_readonly("rel_ci", &Summary::rel_ci,
                             "Half-width of the median's confidence interval over the median (0.01 = ±1 %).")
      .def("__repr__", [](const Summary& s) {
        return py::str(
                   "Summary(count={}, median={}, ci_low={}, ci_high={}, confidence={}, mean={}, stdev={}, "
                   "min={}, max={}, p10={}, p90={}, outliers={})")
            .format(s.count, s.median, s.ci_low, s.ci_high, s.confidence, s.mean, s.stdev, s.min, s.max, s.p10, s.p90,
                    s.outliers);
      });
  m.def(
      "summarize", [](const TimesArray& times, double confidence) { return summarize(as_vector(times), confidence); },
      py::arg("times_us"), py::arg("confidence") = 0.95, "All statistics of `times_us` (µs, any order).");
  m.def(
      "median_ci", [](const TimesArray& sorted, double confidence) { return median_ci(as_vector(sorted), confidence); },
      py::arg("sorted_times_us"), py::arg("confidence") = 0.95,
      "The median's distribution-free confidence interval from ascending samples, µs.");

  m.attr("DEFAULT_THRESHOLD") = kDefaultThreshold;
  m.def(
      "judge",
      [](double difference, double low, double high, double threshold) {
        return std::string(to_string(judge(difference, low, high, threshold)));
      },
      py::arg("difference"), py::arg("low"), py::arg("high"), py::arg("threshold") = kDefaultThreshold,
      "How B compares with A ('faster', 'slower', 'same' or \"can't tell\") from the relative difference "
      "of their medians B / A - 1, its 95 % confidence interval [low, high], and the smallest difference "
      "that matters, `threshold` (a fraction).");
}

}  // namespace pyhipbench::bindings
