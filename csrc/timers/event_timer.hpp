// The `events` timer: an event pair around each launch.
//
// CUDA: cuEventRecord(start), cuLaunchKernel, cuEventRecord(stop) on the
// launch's stream. HIP: the two events handed to hipExtModuleLaunchKernel,
// which records them around exactly that dispatch. Events come from a pool
// grown before the loop; the host synchronizes once, after the last launch.
#pragma once

#include <chrono>
#include <mutex>

#include "timers/timer_support.hpp"

namespace pyhipbench {

template <class Driver>
class EventTimer final : public TimerBase<Driver> {
  using Base = TimerBase<Driver>;

 public:
  EventTimer(std::shared_ptr<Driver> driver, uintptr_t context)
      : Base("events", std::move(driver), context) {}

  ~EventTimer() override {
    try {
      typename Base::CurrentContext current(*this->driver_, this->context_);
      this->destroy_events();
    } catch (const DriverError&) {
      // The context is gone (a sticky fault): its events went with it.
    }
  }

  // One run at a time per timer: runs share the event pool.
  Timings run(LaunchPlan& plan, size_t samples, size_t first_set) override {
    std::lock_guard<std::mutex> one_run_at_a_time(running_);
    const Driver& driver = *this->driver_;
    driver.check_plan(plan);
    Timings timings;
    if (samples == 0) return timings;
    typename Base::CurrentContext current(driver, this->context_);
    this->grow_event_pool(2 * samples);
    const auto stream = reinterpret_cast<typename Base::Stream>(plan.config().stream);
    const auto* events = this->events_.data();
    const size_t sets = plan.sets();
    size_t set = first_set % sets;

    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples; ++i) {
      const Status status = driver.launch(plan, plan.args(set), stream, events[2 * i], events[2 * i + 1]);
      if (status.code != 0) this->fail(plan, status.call, status.code);
      set = set + 1 == sets ? 0 : set + 1;
    }
    timings.host_us = Base::elapsed_us(start);
    timings.times_us = this->read_event_pairs(plan, samples, 1);
    return timings;
  }

 private:
  std::mutex running_;
};

}  // namespace pyhipbench
