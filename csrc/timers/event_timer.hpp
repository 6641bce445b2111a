// The `events` timer: an event pair around each sample's chain.
//
// CUDA: cuEventRecord(start), cuLaunchKernel for each kernel of the chain,
// cuEventRecord(stop) on the plan's stream. HIP: the start event handed to
// hipExtModuleLaunchKernel for the chain's first kernel, the stop event for its
// last, which records them around exactly those dispatches. Events come from a pool
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
    this->release_in_context([this] { this->release_pool_and_probe(); });
  }

  bool call_samples_hold_issuing() const override { return true; }  // the pair brackets the call's Python too

 private:
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override {
    this->grow_event_pool(2 * samples);
    const auto stream = reinterpret_cast<typename Base::Stream>(plan.stream());
    const auto* events = this->events_.data();
    const size_t sets = plan.sets();
    size_t set = first_set % sets;
    if (LaunchPlan* clean = plan.clean_step()) this->driver_->check_plan(*clean);

    this->stamp_clock(false, stream, plan.name());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples; ++i) {
      this->prepare_sample(plan, set, stream);  // before the start event: not timed
      this->launch_chain_or_fail(plan, set, stream, events[2 * i], events[2 * i + 1]);
      set = set + 1 == sets ? 0 : set + 1;
    }
    timings.host_us = Base::elapsed_us(start);
    this->stamp_clock(true, stream, plan.name());
    timings.times_us = this->read_event_pairs(plan.name(), samples, 1);
  }

  // A call between an event pair on its stream: what it issues there, and the
  // gaps between (work on other streams is not seen).
  void time(CallPlan& call, size_t samples, Timings& timings) override {
    this->grow_event_pool(2 * samples);
    const auto stream = reinterpret_cast<typename Base::Stream>(call.stream());
    const auto* events = this->events_.data();
    this->stamp_clock(false, stream, call.name());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples; ++i) {
      this->count_call(call.name(), stream);
      this->prepare_call(call, stream);
      int status = this->driver_->event_record(events[2 * i], stream);
      if (status != 0) this->fail(call.name(), Driver::kEventRecord, status);
      call.call();
      status = this->driver_->event_record(events[2 * i + 1], stream);
      if (status != 0) this->fail(call.name(), Driver::kEventRecord, status);
    }
    timings.host_us = Base::elapsed_us(start);
    this->stamp_clock(true, stream, call.name());
    timings.times_us = this->read_event_pairs(call.name(), samples, 1, "call");
  }
};

}  // namespace pyhipbench
