// pyhipbench._core.StopRule: the stopping rule's targets and caps, each field declared once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>

#include "bindings/bindings.hpp"
#include "pyhipbench/statistics.hpp"
#include "pyhipbench/stopping.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

// One of StopRule's fields as Python sees it: a keyword of the constructor, a
// read-only property, a part of the repr.
template <auto Member>
struct Field {
  const char* name;
  const char* doc;
};

// Every field, in the order of the constructor's keywords and of the repr.
constexpr std::tuple kFields{
    Field<&StopRule::precision>{"precision", "Relative half-width of the median's 95 % CI to reach; 0: no target."},
    Field<&StopRule::min_samples>{"min_samples", "Timed samples before a 'precision' or 'slower' stop, at least."},
    Field<&StopRule::max_samples>{"max_samples", "Timed samples at most: then the stop is 'max-samples'."},
    Field<&StopRule::max_time_s>{"max_time_s", "Wall time of the measurement, warm-up included (the hold not), s."},
    Field<&StopRule::settle>{
        "settle", "Warm-up ends when consecutive chunk medians agree within this fraction (or one tick_us)."},
    Field<&StopRule::max_warmup_samples>{"max_warmup_samples",
                                         "Untimed samples (the hold's included) after which a warm-up that waits "
                                         "for the medians to settle ends, settled or not."},
    Field<&StopRule::warmup_chunk>{"warmup_chunk", "Samples per warm-up chunk."},
    Field<&StopRule::first_chunk>{"first_chunk", "Samples of the first timed chunk."},
    Field<&StopRule::tick_us>{"tick_us", "A CI no wider than one tick of the timer's clock counts as precise, µs."},
    Field<&StopRule::slower_than_us>{"slower_than_us",
                                     "Racing: stop once the median is surely slower than this (judge, at "
                                     "race_threshold), µs; 0: never."},
    Field<&StopRule::race_threshold>{"race_threshold", "Racing: \"slower\" means by more than this fraction."},
    Field<&StopRule::throttle_threshold>{"throttle_threshold",
                                         "A run below this fraction of the rated SM clock is taken again; 0: never."},
    Field<&StopRule::hold_s>{"hold_s",
                             "Untimed runs back to back for at least this long before the warm-up, s; 0: none."},
};

template <class Value>
Value value_of(Value StopRule::*member);  // never defined: ValueOf reads its return type

template <auto Member>
using ValueOf = decltype(value_of(Member));

// The keyword constructor (each keyword defaulting to the C++ default, the rule
// checked by StopRule::validate), the properties and the repr, from `fields`.
template <auto... Members>
void bind_fields(py::class_<StopRule>& rule_class, const Field<Members>&... fields) {
  const StopRule defaults;
  rule_class.def(py::init([](ValueOf<Members>... values) {
                   StopRule rule;
                   ((rule.*Members = values), ...);
                   rule.validate();
                   return rule;
                 }),
                 py::kw_only(), (py::arg(fields.name) = defaults.*Members)...);
  (rule_class.def_readonly(fields.name, Members, fields.doc), ...);
  rule_class.def("__repr__", [fields...](const StopRule& rule) {
    py::list assignments;
    (assignments.append(py::str("{}={!r}").format(fields.name, rule.*Members)), ...);
    return py::str("StopRule({})").format(py::str(", ").attr("join")(assignments));
  });
}

}  // namespace

void bind_stop_rule(py::module_& m) {
  py::class_<StopRule> rule_class(m, "StopRule", "Targets and caps of one measurement (pyhipbench/stopping.hpp).");
  std::apply([&rule_class](const auto&... fields) { bind_fields(rule_class, fields...); }, kFields);
  rule_class
      .def(
          "stop_reason",
          [](const StopRule& rule, const Summary& summary, double elapsed_s) -> std::optional<std::string> {
            std::string reason = rule.stop_reason(summary, elapsed_s);
            if (reason.empty()) return std::nullopt;
            return reason;
          },
          py::arg("summary"), py::arg("elapsed_s"),
          "Why to stop after a chunk ('precision', 'slower', 'max-samples', 'max-time'), or None to go on.")
      .def("next_chunk", &StopRule::next_chunk, py::arg("summary"),
           "Samples to ask for next, given the summary of the timed samples so far.")
      .def("settled", &StopRule::settled, py::arg("previous_median_us"), py::arg("median_us"));
}

}  // namespace pyhipbench::bindings
