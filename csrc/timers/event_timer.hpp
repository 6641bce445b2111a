// The `events` timer: an event pair around each launch.
//
// CUDA: cuEventRecord(start), cuLaunchKernel, cuEventRecord(stop) on the
// launch's stream. HIP: the two events handed to hipExtModuleLaunchKernel,
// which records them around exactly that dispatch. Events come from a pool
// grown before the loop; the host synchronizes once, after the last launch.
#pragma once

#include <chrono>

#include "timers/timer_support.hpp"

namespace pyhipbench {

template <class Driver>
class EventTimer final : public TimerBase<Driver> {
  using Base = TimerBase<Driver>;

 public:
  EventTimer(std::shared_ptr<Driver> driver, uintptr_t context) : Base("events", std::move(driver), context) {}

  ~EventTimer() override {
    this->release_in_context([this] { this->destroy_events(); });
  }

 private:
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override {
    const Driver& driver = *this->driver_;
    this->grow_event_pool(2 * samples);
    const auto stream = reinterpret_cast<typename Base::Stream>(plan.config().stream);
    const auto* events = this->events_.data();
    const size_t sets = plan.sets();
    size_t set = first_set % sets;
    LaunchPlan* clean = plan.clean_step();
    if (clean != nullptr) driver.check_plan(*clean);

    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples; ++i) {
      if (clean != nullptr) {  // before the start event: the clean step is not timed
        const Status cleaned = driver.launch(*clean, clean->args(0), stream, nullptr, nullptr);
        if (cleaned.code != 0) this->fail(*clean, cleaned.call, cleaned.code);
      }
      const Status status = driver.launch(plan, plan.args(set), stream, events[2 * i], events[2 * i + 1]);
      if (status.code != 0) this->fail(plan, status.call, status.code);
      set = set + 1 == sets ? 0 : set + 1;
    }
    timings.host_us = Base::elapsed_us(start);
    timings.times_us = this->read_event_pairs(plan, samples, 1);
  }
};

}  // namespace pyhipbench
