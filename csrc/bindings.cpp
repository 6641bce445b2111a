// pybind11 module pyhipbench._core: launch plans, drivers and timers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "pyhipbench/call_plan.hpp"
#include "pyhipbench/rotated_buffers.hpp"
#include "pyhipbench/rotation.hpp"
#include "pyhipbench/statistics.hpp"
#include "pyhipbench/stopping.hpp"
#include "pyhipbench/timer.hpp"

namespace py = pybind11;
using namespace pyhipbench;

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

std::vector<double> as_vector(const py::array_t<double, py::array::c_style | py::array::forcecast>& times) {
  if (times.ndim() != 1) {
    throw std::invalid_argument("times of " + std::to_string(times.ndim()) + " dimensions: expected one, µs");
  }
  return std::vector<double>(times.data(), times.data() + times.size());
}

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

std::vector<std::string> as_strings(const std::vector<py::bytes>& sets) {
  return std::vector<std::string>(sets.begin(), sets.end());
}

// One kernel of a chain as Python gives it: (function, kernel_name, grid, block, shared_bytes, stream,
// arg_sets, arg_offsets).
using ChainEntry = std::tuple<uintptr_t, std::string, std::array<uint32_t, 3>, std::array<uint32_t, 3>, uint32_t,
                              uintptr_t, std::vector<py::bytes>, std::vector<size_t>>;

std::unique_ptr<LaunchPlan> clean_step_plan(uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
                                            std::array<uint32_t, 3> block, const py::bytes& args,
                                            std::vector<size_t> arg_offsets, uintptr_t stream) {
  return std::make_unique<LaunchPlan>(function, std::move(kernel_name), LaunchConfig{grid, block, 0, stream},
                                      std::vector<std::string>{std::string(args)}, std::move(arg_offsets));
}

void** checked_args(LaunchPlan& plan, size_t set, size_t kernel) {
  if (kernel >= plan.kernels()) throw py::index_error("no kernel " + std::to_string(kernel));
  if (set >= plan.sets()) throw py::index_error("no argument set " + std::to_string(set));
  return plan.kernel(kernel).args(set);
}

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

py::array_t<double> as_array(const std::vector<double>& times) {
  py::array_t<double> out(static_cast<py::ssize_t>(times.size()));
  std::copy(times.begin(), times.end(), out.mutable_data());
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "pyhipbench's C++ core: launch plans, driver libraries and the timers that run them";

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

  py::class_<LaunchLimits>(m, "LaunchLimits",
                           "What a backend's launch call can express beyond the device's limits "
                           "(pyhipbench/launch_plan.hpp).")
      .def_readonly("max_global_threads", &LaunchLimits::max_global_threads,
                    "the most threads per axis (grid x block) the launch call takes; 2**64 - 1 for no limit")
      .def_readonly("limited_by", &LaunchLimits::limited_by, "why, as the check's message says; '' for no limit")
      .def(
          "check",
          [](const LaunchLimits& limits, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block) {
            check_launch_limits(limits, LaunchConfig{grid, block, 0, 0});
          },
          py::arg("grid"), py::arg("block"),
          "Raises BenchError naming the axis if grid x block (blocks, threads per block) exceeds the limits.")
      .def("__repr__", [](const LaunchLimits& limits) {
        return py::str("LaunchLimits(max_global_threads={}, limited_by={!r})")
            .format(limits.max_global_threads, limits.limited_by);
      });
  m.def("launch_limits", &launch_limits, py::arg("backend"),
        "The launch limits of backend 'cuda' or 'hip' (the timers check every plan against them).");

  py::class_<LaunchPlan>(m, "LaunchPlan",
                         "What a sample launches: one kernel, or a chain of kernels in order "
                         "(pyhipbench/launch_plan.hpp).")
      .def(py::init([](uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
                       std::array<uint32_t, 3> block, uint32_t shared_bytes, uintptr_t stream,
                       std::vector<py::bytes> arg_sets, std::vector<size_t> arg_offsets) {
             return std::make_unique<LaunchPlan>(function, std::move(kernel_name),
                                                 LaunchConfig{grid, block, shared_bytes, stream}, as_strings(arg_sets),
                                                 std::move(arg_offsets));
           }),
           py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("shared_bytes"),
           py::arg("stream"), py::arg("arg_sets"), py::arg("arg_offsets"))
      .def_static(
          "chain",
          [](const std::vector<ChainEntry>& kernels) {
            std::vector<KernelLaunch> chain;
            chain.reserve(kernels.size());
            for (const auto& [function, name, grid, block, shared_bytes, stream, arg_sets, offsets] : kernels) {
              chain.emplace_back(function, name, LaunchConfig{grid, block, shared_bytes, stream}, as_strings(arg_sets),
                                 offsets);
            }
            return std::make_unique<LaunchPlan>(std::move(chain));
          },
          py::arg("kernels"),
          "A chain: each of `kernels` a tuple (function, kernel_name, grid, block, shared_bytes, stream, "
          "arg_sets, arg_offsets), all with the same number of sets and the same stream.")
      .def_property_readonly("sets", &LaunchPlan::sets)
      .def_property_readonly("kernels", &LaunchPlan::kernels, "kernels per sample")
      .def_property_readonly("name", &LaunchPlan::name, "the kernel's name; a chain's names joined by ' -> '")
      .def_property_readonly("kernel_names",
                             [](const LaunchPlan& plan) {
                               std::vector<std::string> names;
                               for (size_t k = 0; k < plan.kernels(); ++k)
                                 names.push_back(plan.kernel(k).kernel_name());
                               return names;
                             })
      .def_property_readonly("id", &LaunchPlan::id)
      .def(
          "set_clean_step",
          [](LaunchPlan& plan, uintptr_t function, std::string kernel_name, std::array<uint32_t, 3> grid,
             std::array<uint32_t, 3> block, py::bytes args, std::vector<size_t> arg_offsets) {
            plan.set_clean_step(clean_step_plan(function, std::move(kernel_name), grid, block, args,
                                                std::move(arg_offsets), plan.stream()));
          },
          py::arg("function"), py::arg("kernel_name"), py::arg("grid"), py::arg("block"), py::arg("args"),
          py::arg("arg_offsets"),
          "An untimed launch before each sample, on the plan's stream (the clean-cold clean step).")
      .def_property_readonly("has_clean_step", [](const LaunchPlan& plan) { return plan.clean_step() != nullptr; })
      .def(
          "add_reset",
          [](LaunchPlan& plan, std::vector<uintptr_t> destinations, uintptr_t source, size_t bytes) {
            plan.add_reset(ResetStep{std::move(destinations), source, bytes});
          },
          py::arg("destinations"), py::arg("source"), py::arg("bytes"),
          "An untimed step before each sample: `bytes` bytes at destinations[set] set to zero (source 0) or "
          "copied from device address `source`.")
      .def_property_readonly("resets", [](const LaunchPlan& plan) { return plan.resets().size(); })
      .def(
          "arg_pointers",
          [](LaunchPlan& plan, size_t set, size_t kernel) {
            // The kernelParams addresses of one set, for tests of the packing.
            void** args = checked_args(plan, set, kernel);
            std::vector<uintptr_t> out;
            for (size_t a = 0; a < plan.kernel(kernel).arg_count(); ++a) {
              out.push_back(reinterpret_cast<uintptr_t>(args[a]));
            }
            return out;
          },
          py::arg("set"), py::arg("kernel") = 0)
      .def(
          "params_address",
          [](LaunchPlan& plan, size_t set, size_t kernel) {
            // Where set `set`'s kernelParams array lives: what the driver is handed.
            return reinterpret_cast<uintptr_t>(checked_args(plan, set, kernel));
          },
          py::arg("set"), py::arg("kernel") = 0);

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

  py::class_<Driver, std::shared_ptr<Driver>>(m, "Driver")
      .def_property_readonly("backend", &Driver::backend)
      .def_property_readonly("library_path", &Driver::library_path);

  py::class_<RotatedBuffers>(m, "RotatedBuffers",
                             "The R - 1 rotated copies of device buffers, in one allocation "
                             "(pyhipbench/rotated_buffers.hpp); freed by free() or when collected.")
      .def(py::init([](std::shared_ptr<Driver> driver, uintptr_t context,
                       const std::vector<std::pair<uintptr_t, size_t>>& buffers, size_t sets) {
             std::vector<BufferRange> originals;
             originals.reserve(buffers.size());
             for (const auto& [address, bytes] : buffers) originals.push_back({address, bytes});
             py::gil_scoped_release release;  // the copies wait for the device
             return std::make_unique<RotatedBuffers>(std::move(driver), context, std::move(originals), sets);
           }),
           py::arg("driver"), py::arg("context"), py::arg("buffers"), py::arg("sets"),
           "Copies each (device address, bytes) of `buffers` into sets 1 .. `sets` - 1, device to device in "
           "`context` (CUDA: a CUcontext handle; HIP: a device ordinal); returns when they are complete.")
      .def_property_readonly("sets", &RotatedBuffers::sets, "argument sets: R, or 1 once freed")
      .def_property_readonly("buffers", &RotatedBuffers::buffers)
      .def_property_readonly("set_stride_bytes", &RotatedBuffers::set_stride_bytes,
                             "bytes from one copy set to the next (each buffer 256-byte aligned)")
      .def("address", &RotatedBuffers::address, py::arg("set"), py::arg("buffer"),
           "Buffer `buffer`'s device address in set `set` (set 0: the original).")
      .def("free", &RotatedBuffers::free, "Frees the copies now; set 0, the originals, remains.");

  m.def("load_driver", &load_driver, py::arg("backend"), py::arg("library_path") = "",
        "Loads the driver library of `backend` ('cuda' or 'hip').");

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
      "summarize",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& times, double confidence) {
        return summarize(as_vector(times), confidence);
      },
      py::arg("times_us"), py::arg("confidence") = 0.95, "All statistics of `times_us` (µs, any order).");
  m.def(
      "median_ci",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& sorted, double confidence) {
        return median_ci(as_vector(sorted), confidence);
      },
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

  const StopRule defaults;
  py::class_<StopRule>(m, "StopRule", "Targets and caps of one measurement (pyhipbench/stopping.hpp).")
      .def(py::init([](double precision, size_t min_samples, size_t max_samples, double max_time_s, double settle,
                       size_t max_warmup_samples, size_t warmup_chunk, size_t first_chunk, double tick_us,
                       double slower_than_us, double race_threshold, double throttle_threshold, double hold_s) {
             StopRule rule{precision,          min_samples,        max_samples, max_time_s, settle,
                           max_warmup_samples, warmup_chunk,       first_chunk, tick_us,    slower_than_us,
                           race_threshold,     throttle_threshold, hold_s};
             rule.validate();
             return rule;
           }),
           py::kw_only(), py::arg("precision") = defaults.precision, py::arg("min_samples") = defaults.min_samples,
           py::arg("max_samples") = defaults.max_samples, py::arg("max_time_s") = defaults.max_time_s,
           py::arg("settle") = defaults.settle, py::arg("max_warmup_samples") = defaults.max_warmup_samples,
           py::arg("warmup_chunk") = defaults.warmup_chunk, py::arg("first_chunk") = defaults.first_chunk,
           py::arg("tick_us") = defaults.tick_us, py::arg("slower_than_us") = defaults.slower_than_us,
           py::arg("race_threshold") = defaults.race_threshold,
           py::arg("throttle_threshold") = defaults.throttle_threshold, py::arg("hold_s") = defaults.hold_s)
      .def_readonly("precision", &StopRule::precision)
      .def_readonly("min_samples", &StopRule::min_samples)
      .def_readonly("max_samples", &StopRule::max_samples)
      .def_readonly("max_time_s", &StopRule::max_time_s)
      .def_readonly("settle", &StopRule::settle)
      .def_readonly("max_warmup_samples", &StopRule::max_warmup_samples)
      .def_readonly("warmup_chunk", &StopRule::warmup_chunk)
      .def_readonly("first_chunk", &StopRule::first_chunk)
      .def_readonly("tick_us", &StopRule::tick_us)
      .def_readonly("slower_than_us", &StopRule::slower_than_us)
      .def_readonly("race_threshold", &StopRule::race_threshold)
      .def_readonly("throttle_threshold", &StopRule::throttle_threshold)
      .def_readonly("hold_s", &StopRule::hold_s)
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
