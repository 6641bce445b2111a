#include "pyhipbench/timer.hpp"

#include <stdexcept>
#include <type_traits>

#include "cuda_driver.hpp"
#include "hip_driver.hpp"
#include "timers/batched_timer.hpp"
#include "timers/cupti_timer.hpp"
#include "timers/event_timer.hpp"
#include "timers/graph_timer.hpp"
#include "timers/rocprofiler_timer.hpp"

namespace pyhipbench {

Timings Timer::run(CallPlan& call, size_t samples) {
  (void)samples;
  throw std::invalid_argument("the " + name() + " timer cannot time calls ('" + call.name() +
                              "'); expected the 'cupti' or 'events' timer");
}

namespace {

template <class VendorDriver>
std::unique_ptr<Timer> make_vendor_timer(const std::string& name, std::shared_ptr<VendorDriver> driver,
                                         uintptr_t context, const TimerOptions& options) {
  constexpr bool kCuda = std::is_same<VendorDriver, CudaDriver>::value;
  const std::string names =
      kCuda ? "'events', 'graph', 'batched', 'cupti'" : "'events', 'graph', 'batched', 'rocprofiler'";
  if (name == "cupti" && !kCuda) {
    throw std::invalid_argument("the cupti timer reads NVIDIA's CUPTI: the " + driver->backend() +
                                " backend has no cupti timer; expected one of " + names);
  }
  if (name == "rocprofiler" && kCuda) {
    throw std::invalid_argument("the rocprofiler timer reads AMD's rocprofiler-sdk: the " + driver->backend() +
                                " backend has no rocprofiler timer; expected one of " + names);
  }
  const size_t launches = options.launches_per_sample;
  if (options.spin_function != 0 && name != "batched") {
    throw std::invalid_argument("spin_function=" + std::to_string(options.spin_function) +
                                ": only the "
                                "batched timer takes a spin kernel, not '" +
                                name + "'");
  }
  if (name == "events" || name == "cupti" || name == "rocprofiler") {
    if (launches > 1) {
      throw std::invalid_argument("launches_per_sample=" + std::to_string(launches) + ": the " + name +
                                  " timer times each launch on its own; expected 1 (or 0, "
                                  "the default), or use the 'graph' or 'batched' timer");
    }
    if (name == "events") return std::make_unique<EventTimer<VendorDriver>>(std::move(driver), context);
    if constexpr (kCuda) {
      return std::make_unique<CuptiTimer>(std::move(driver), context);
    } else {
      return std::make_unique<RocprofilerTimer>(std::move(driver), context);
    }
  }
  const size_t per_sample = launches == 0 ? TimerOptions::kDefaultLaunchesPerSample : launches;
  if (name == "graph") return std::make_unique<GraphTimer<VendorDriver>>(std::move(driver), context, per_sample);
  if (name == "batched") {
    return std::make_unique<BatchedTimer<VendorDriver>>(std::move(driver), context, per_sample, options.spin_function,
                                                        options.spin_timeout_ms);
  }
  throw std::invalid_argument("unknown timer '" + name + "' for the " + driver->backend() +
                              " backend; expected one of " + names);
}

}  // namespace

std::string attach_rocprofiler(const std::string& library) { return RocprofilerTracer::instance().attach(library); }

std::unique_ptr<Timer> make_timer(const std::string& name, std::shared_ptr<Driver> driver, uintptr_t context,
                                  const TimerOptions& options) {
  if (driver == nullptr) throw std::invalid_argument("make_timer needs a driver, got none");
  if (auto cuda = std::dynamic_pointer_cast<CudaDriver>(driver)) {
    return make_vendor_timer(name, std::move(cuda), context, options);
  }
  if (auto hip = std::dynamic_pointer_cast<HipDriver>(driver)) {
    return make_vendor_timer(name, std::move(hip), context, options);
  }
  throw std::invalid_argument("make_timer: a driver of backend '" + driver->backend() +
                              "', which has no timers; expected one from load_driver");
}

}  // namespace pyhipbench
