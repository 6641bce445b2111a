// What every timer shares: the driver and context it runs on, an event pool,
// and the path from a failed call to DriverError or KernelFault.
//
// `Driver` is CudaDriver or HipDriver (csrc/cuda_driver.hpp, csrc/hip_driver.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/timer.hpp"
#include "status.hpp"

namespace pyhipbench {

template <class Driver>
class TimerBase : public Timer {
 public:
  // `launches_per_sample`: 1 for the per-launch timers; graph nodes or batch length otherwise.
  TimerBase(std::string name, std::shared_ptr<Driver> driver, uintptr_t context, size_t launches_per_sample = 1)
      : name_(std::move(name)),
        driver_(std::move(driver)),
        context_(Driver::context(context)),
        launches_per_sample_(launches_per_sample) {}

  const std::string& name() const override { return name_; }

  // What every timer does around its own timing: one run at a time (runs
  // share the timer's event pool and state), the plan checked, a timer whose
  // samples span several launches refusing a clean step, and the timer's
  // context current while it works (the caller's restored after).
  Timings run(LaunchPlan& plan, size_t samples, size_t first_set) final {
    std::lock_guard<std::recursive_mutex> one_run_at_a_time(running_);
    driver_->check_plan(plan);
    if (launches_per_sample_ > 1) refuse_clean_step(plan);
    Timings timings;
    timings.launches_per_sample = launches_per_sample_;
    if (samples == 0) return timings;
    CurrentContext current(*driver_, context_);
    time(plan, samples, first_set, timings);
    return timings;
  }

 protected:
  // The timer's own work for run(): `samples` samples into `timings`.
  virtual void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) = 0;

  // A session holds the run lock from begin to end, so another thread's run() waits for the whole
  // measurement (not only for its current chunk) and never finds the session's set-up half made or gone.
  void begin_session() final {
    running_.lock();
    try {
      open_session();
    } catch (...) {
      running_.unlock();
      throw;
    }
  }
  void end_session(bool checked) final {
    struct Unlock {
      std::recursive_mutex& mutex;
      ~Unlock() { mutex.unlock(); }
    } unlock{running_};
    close_session(checked);
  }
  // The timer's own set-up for a session (Timer::begin_session / end_session), under the run lock.
  virtual void open_session() {}
  virtual void close_session(bool checked) { (void)checked; }

  // For destructors: `release` runs with the timer's context current. If the
  // context is gone (a sticky fault), what the timer held went with it.
  template <class Release>
  void release_in_context(Release release) noexcept {
    try {
      CurrentContext current(*driver_, context_);
      release();
    } catch (const DriverError&) {
    }
  }

  using Event = typename Driver::Event;
  using Stream = typename Driver::Stream;
  using CurrentContext = typename Driver::CurrentContext;

  // Events for `count` uses, created before a timed loop so it allocates nothing.
  void grow_event_pool(size_t count) {
    events_.reserve(count);
    while (events_.size() < count) {
      Event event{};
      driver_->check(Driver::kEventCreate, driver_->event_create(&event));
      events_.push_back(event);
    }
  }

  // Frees the pool; for destructors, which run with the context made current.
  void destroy_events() {
    for (Event event : events_) driver_->event_destroy(event);
    events_.clear();
  }

  // Samples spanning several launches (graph, batched) would time a clean step
  // between them too.
  void refuse_clean_step(const LaunchPlan& plan) const {
    if (plan.clean_step() != nullptr) {
      throw std::invalid_argument("the " + name_ +
                                  " timer times several launches together, so it would time "
                                  "the clean step too: the clean-cold cache state needs the 'events' or "
                                  "'cupti' timer");
    }
  }

  // Synchronizes on the last stop event and reads each (start, stop) pair's
  // time in µs, divided by `launches_per_pair`.
  std::vector<double> read_event_pairs(const LaunchPlan& plan, size_t pairs, size_t launches_per_pair) {
    check(plan, Driver::kEventSynchronize, driver_->event_synchronize(events_[2 * pairs - 1]));
    std::vector<double> times_us(pairs);
    for (size_t i = 0; i < pairs; ++i) {
      float ms = 0;
      check(plan, Driver::kEventElapsedTime, driver_->elapsed_ms(&ms, events_[2 * i], events_[2 * i + 1]));
      times_us[i] = static_cast<double>(ms) * 1000.0 / static_cast<double>(launches_per_pair);
    }
    return times_us;
  }

  void check(const LaunchPlan& plan, const char* call, int status) {
    if (status != 0) fail(plan, call, status);
  }
  void check(const LaunchPlan& plan, Status status) {
    if (status.code != 0) fail(plan, status.call, status.code);
  }

  // A failed call while `plan` ran: a KernelFault if its code means a kernel
  // faulted (saying whether the context survived), else a DriverError naming the kernel.
  [[noreturn]] void fail(const LaunchPlan& plan, const char* call, int status) {
    DriverError error = driver_->error(call, status);
    if (!Driver::is_kernel_fault(status)) {
      throw DriverError(error, std::string(error.what()) + " (kernel '" + plan.kernel_name() + "')");
    }
    throw KernelFault(error, plan.kernel_name(), context_usable());
  }

  // After a fault, ask the driver whether work can still complete.
  bool context_usable() {
    Event probe{};
    if (driver_->event_create(&probe) != 0) return false;
    const bool usable = driver_->event_record(probe, nullptr) == 0 && driver_->event_synchronize(probe) == 0;
    driver_->event_destroy(probe);
    return usable;
  }

  static double elapsed_us(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since).count();
  }

  const std::string name_;
  const std::shared_ptr<Driver> driver_;
  const typename Driver::Context context_;
  const size_t launches_per_sample_;
  std::vector<Event> events_;

 private:
  std::recursive_mutex running_;  // run(), and a session's thread for the whole session
};

}  // namespace pyhipbench
