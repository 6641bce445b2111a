// The hot loop, shared by the CUDA and HIP runtimes.
//
// `Driver` adapts one driver API (see cuda_runtime.cpp, hip_runtime.cpp):
//   Event                          the driver's event handle type
//   kBackend, kEventCreate, kEventSynchronize, kEventElapsedTime   names
//   void check(const LaunchPlan&)  throws std::invalid_argument if the driver
//       cannot take the plan's launch configuration
//   Status launch(const LaunchPlan&, void** args, Event start, Event stop)
//       launches once with `args`, the launch bracketed by the two events
//   static bool is_kernel_fault(int code)   a code a running kernel caused
//   int event_create(Event*), event_destroy(Event), event_record(Event),
//       event_synchronize(Event), elapsed_ms(float*, Event start, Event stop)
//   DriverError error(const char* call, int code)   describes a failed call
//   const DynamicLibrary& library()
// Every driver call returns 0 on success.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dynamic_library.hpp"
#include "pyhipbench/runtime.hpp"

namespace pyhipbench {

// The outcome of a launch: 0, or the failing call and its error code.
struct Status {
  int code;
  const char* call;
};

template <class Driver>
class TimedLoop final : public Runtime {
 public:
  explicit TimedLoop(std::unique_ptr<Driver> driver) : driver_(std::move(driver)) {}
  ~TimedLoop() override {
    for (auto event : events_) driver_->event_destroy(event);
  }

  const std::string& backend() const override { return backend_; }
  const std::string& library_path() const override { return driver_->library().path(); }

  // One run at a time per runtime: runs share the event pool.
  Timings run(LaunchPlan& plan, size_t iterations, size_t first_set) override {
    std::lock_guard<std::mutex> one_run_at_a_time(running_);
    driver_->check(plan);
    Timings timings;
    if (iterations == 0) return timings;
    grow_event_pool(2 * iterations);
    Driver& driver = *driver_;
    const size_t sets = plan.sets();
    size_t set = first_set % sets;

    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iterations; ++i) {
      const Status status = driver.launch(plan, plan.args(set), events_[2 * i], events_[2 * i + 1]);
      if (status.code != 0) fail(plan, status.call, status.code);
      set = set + 1 == sets ? 0 : set + 1;
    }
    const auto issued = std::chrono::steady_clock::now();
    timings.host_us = std::chrono::duration<double, std::micro>(issued - start).count();

    check(plan, Driver::kEventSynchronize, driver.event_synchronize(events_[2 * iterations - 1]));
    timings.times_us.resize(iterations);
    for (size_t i = 0; i < iterations; ++i) {
      float ms = 0;
      check(plan, Driver::kEventElapsedTime, driver.elapsed_ms(&ms, events_[2 * i], events_[2 * i + 1]));
      timings.times_us[i] = static_cast<double>(ms) * 1000.0;
    }
    return timings;
  }

 private:
  void grow_event_pool(size_t count) {
    events_.reserve(count);
    while (events_.size() < count) {
      typename Driver::Event event{};
      const int status = driver_->event_create(&event);
      if (status != 0) throw driver_->error(Driver::kEventCreate, status);
      events_.push_back(event);
    }
  }

  void check(const LaunchPlan& plan, const char* call, int status) {
    if (status != 0) fail(plan, call, status);
  }

  [[noreturn]] void fail(const LaunchPlan& plan, const char* call, int status) {
    DriverError error = driver_->error(call, status);
    if (!Driver::is_kernel_fault(status)) {
      throw DriverError(error, std::string(error.what()) + " (kernel '" + plan.kernel_name() + "')");
    }
    throw KernelFault(error, plan.kernel_name(), context_usable());
  }

  // After a fault, ask the driver whether work can still complete.
  bool context_usable() {
    typename Driver::Event probe{};
    if (driver_->event_create(&probe) != 0) return false;
    const bool usable = driver_->event_record(probe) == 0 && driver_->event_synchronize(probe) == 0;
    driver_->event_destroy(probe);
    return usable;
  }

  std::unique_ptr<Driver> driver_;
  std::string backend_ = Driver::kBackend;
  std::vector<typename Driver::Event> events_;
  std::mutex running_;
};

}  // namespace pyhipbench
