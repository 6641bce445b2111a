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
#include <thread>
#include <vector>

#include "interrupt.hpp"
#include "pyhipbench/interrupt.hpp"
#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/timer.hpp"
#include "status.hpp"
#include "timers/clock_probe.hpp"

namespace pyhipbench {

template <class Driver>
class TimerBase : public Timer {
 protected:
  using Event = typename Driver::Event;
  using Stream = typename Driver::Stream;
  using CurrentContext = typename Driver::CurrentContext;

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
    read_clock(timings);
    return timings;
  }

  // The same around a callable's calls.
  Timings run(CallPlan& call, size_t samples) final {
    std::lock_guard<std::recursive_mutex> one_run_at_a_time(running_);
    if (call.clean_step() != nullptr) driver_->check_plan(*call.clean_step());
    Timings timings;
    if (samples == 0) return timings;
    CurrentContext current(*driver_, context_);
    time(call, samples, timings);
    read_clock(timings);
    return timings;
  }

 protected:
  // The timer's own work for run(): `samples` samples into `timings`.
  virtual void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) = 0;
  // For a callable; only the events and cupti timers time calls.
  virtual void time(CallPlan& call, size_t samples, Timings& timings) {
    (void)call, (void)samples, (void)timings;
    throw std::invalid_argument("the " + name_ +
                                " timer times launches it issues itself, not a callable's: time calls with "
                                "the 'cupti' or 'events' timer");
  }

  // The clock stamps around a run (clock_probe.hpp): each timer's time() stamps
  // before its first sample and after its last, before it synchronizes.
  void stamp_clock(bool end, Stream stream, const std::string& timed) {
    if (!probe_) probe_ = std::make_unique<ClockProbe<Driver>>(*driver_);  // the context is current
    if (!probe_->available()) return;
    const Status status = probe_->stamp(end, stream);
    if (status.code != 0) fail("clock stamp around " + timed, status.call, status.code);
  }
  bool clock_probed() const { return probe_ && probe_->available(); }  // whether stamp_clock launches
  void read_clock(Timings& timings) const {
    if (!clock_probed()) return;
    timings.clock_mhz = probe_->clock_mhz();
    timings.default_clock_mhz = probe_->default_mhz();
  }

  // The clean step before a call, on the call's stream.
  void prepare_call(CallPlan& call, Stream stream) { launch_clean_step(call.clean_step(), stream); }

  // `clean` (a plan's or a call's clean step, if any), launched untimed on `stream`.
  void launch_clean_step(LaunchPlan* clean, Stream stream) {
    if (clean == nullptr) return;
    KernelLaunch& kernel = clean->kernel(0);
    const Status status = driver_->launch(kernel, kernel.args(0), stream, nullptr, nullptr);
    if (status.code != 0) fail(kernel.kernel_name(), status.call, status.code);
  }

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

  // Events for `count` uses, created before a timed loop so it allocates nothing.
  void grow_event_pool(size_t count) {
    events_.reserve(count);
    while (events_.size() < count) {
      Event event{};
      driver_->check(Driver::kEventCreate, driver_->event_create(&event));
      events_.push_back(event);
    }
  }

  // Frees the event pool and the clock probe; for destructors, which run with the context made current.
  void release_pool_and_probe() {
    for (Event event : events_) driver_->event_destroy(event);
    events_.clear();
    probe_.reset();
  }

  // Samples spanning several chains (graph, batched) would time the untimed
  // steps between them too.
  void refuse_clean_step(const LaunchPlan& plan) const {
    if (plan.clean_step() != nullptr) {
      throw std::invalid_argument("the " + name_ +
                                  " timer times several launches together, so it would time "
                                  "the clean step too: the clean-cold cache state needs the 'events' or "
                                  "'cupti' timer");
    }
    if (!plan.resets().empty()) {
      throw std::invalid_argument("the " + name_ +
                                  " timer times several launches together, so it would time the reset steps "
                                  "(reset_to_zero, restore_value) too: they need the 'events' or 'cupti' timer");
    }
  }

  // The untimed steps before a sample on argument set `set`, on `stream`, in
  // the order real code has them: the clean step (the cache as earlier work
  // leaves it), then the resets, so what they wrote (an output zeroed right
  // before the kernel) is in the cache when the chain starts, as in real use.
  void prepare_sample(LaunchPlan& plan, size_t set, Stream stream) {
    launch_clean_step(plan.clean_step(), stream);
    for (const ResetStep& step : plan.resets()) {
      const Status status = driver_->reset(step, set, stream);
      if (status.code != 0) fail("reset step before " + plan.name(), status.call, status.code);
    }
  }

  // The plan's chain on argument set `set`: `start` (if any) recorded before its
  // first kernel, `stop` after its last. On failure, `failed` is the kernel's index.
  Status launch_chain(LaunchPlan& plan, size_t set, Stream stream, Event start, Event stop, size_t& failed) {
    const size_t last = plan.kernels() - 1;
    for (size_t k = 0; k <= last; ++k) {
      KernelLaunch& kernel = plan.kernel(k);
      const Status status =
          driver_->launch(kernel, kernel.args(set), stream, k == 0 ? start : nullptr, k == last ? stop : nullptr);
      if (status.code != 0) {
        failed = k;
        return status;
      }
    }
    return {0, nullptr};
  }
  // A sample's chain (not a graph's capture, where no event may be recorded), counted by count_launch.
  void launch_chain_or_fail(LaunchPlan& plan, size_t set, Stream stream, Event start = nullptr, Event stop = nullptr) {
    count_launch(plan.name(), stream);
    size_t failed = 0;
    const Status status = launch_chain(plan, set, stream, start, stop, failed);
    if (status.code != 0) fail(plan.kernel(failed).kernel_name(), status.call, status.code);
  }

  // One more launch (or chain, or graph) of `timed` issued on `stream`: every
  // kInterruptLaunches of them, a look at the request flag (interrupt.hpp), so
  // a long run stops while it is still being issued; the GPU then gets its
  // grace to finish what was issued, as in wait_for.
  void count_launch(const std::string& timed, Stream stream) {
    if (++launches_since_look_ < kInterruptLaunches) return;
    launches_since_look_ = 0;
    if (interrupt_flagged()) stop_issuing(stream, timed, "kernel");
  }

  // Before each call of a callable: a request stops the run there (Ctrl-C needs no look: it raises in the
  // call itself, which runs Python). `stream`: where the calls' work is waited for (nullptr: the legacy
  // default stream, which follows every blocking stream).
  void count_call(const std::string& timed, Stream stream) {
    if (interrupt_flagged()) stop_issuing(stream, timed, "call");
  }

  // Waits for `event` (a run's last), for the run of `timed` (a kernel's or a
  // call's name, `kind` saying which), as event_synchronize
  // does, but polling the event rather than blocking on it, so that an
  // interrupt is seen while the GPU runs: yielding between looks for the first
  // kSpinS (as the driver's own spin-wait does: a run's end is usually that
  // close), then sleeping kPollSleepS, a small share of a wait that long.
  // After an interrupt the GPU gets kInterruptGraceS to finish, or the device
  // is given up (a kernel that never returns).
  void wait_for(Event event, const std::string& timed, const char* kind = "kernel") {
    const auto started = std::chrono::steady_clock::now();
    while (driver_->event_query(event) == Driver::kNotReady) {
      if (interrupt_requested()) interrupted_while_waiting(event, timed, kind);
      if (std::chrono::steady_clock::now() - started < std::chrono::duration<double>(kSpinS)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(kPollSleepS));
      }
    }
    const int status = driver_->event_synchronize(event);  // complete: returns at once, with the work's status
    if (status != 0) fail(timed, Driver::kEventSynchronize, status);
  }

  // Waits for the last stop event (wait_for) and reads each (start, stop)
  // pair's time in µs, divided by `launches_per_pair`.
  std::vector<double> read_event_pairs(const std::string& timed, size_t pairs, size_t launches_per_pair,
                                       const char* kind = "kernel") {
    wait_for(events_[2 * pairs - 1], timed, kind);
    std::vector<double> times_us(pairs);
    for (size_t i = 0; i < pairs; ++i) {
      float ms = 0;
      const int status = driver_->elapsed_ms(&ms, events_[2 * i], events_[2 * i + 1]);
      if (status != 0) fail(timed, Driver::kEventElapsedTime, status);
      times_us[i] = static_cast<double>(ms) * 1000.0 / static_cast<double>(launches_per_pair);
    }
    return times_us;
  }

  void check(const LaunchPlan& plan, const char* call, int status) {
    if (status != 0) fail(plan.name(), call, status);
  }
  void check(const LaunchPlan& plan, Status status) {
    if (status.code != 0) fail(plan.name(), status.call, status.code);
  }

  // A failed call while `kernel` (a kernel's or a chain's name) ran: a
  // KernelFault if its code means a kernel faulted (saying whether the
  // context survived), else a DriverError naming the kernel.
  [[noreturn]] void fail(const std::string& kernel, const char* call, int status) {
    DriverError error = driver_->error(call, status);
    if (!Driver::is_kernel_fault(status)) {
      throw DriverError(error, std::string(error.what()) + " (kernel '" + kernel + "')");
    }
    throw KernelFault(error, kernel, context_usable());
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
  static constexpr double kSpinS = 0.01;       // wait_for's spin before it sleeps between looks, s
  static constexpr double kPollSleepS = 1e-4;  // its sleep between looks after that, s

  // What an interrupt names: "kernel 'copy'", "call 'op'".
  static std::string measured(const char* kind, const std::string& timed) {
    return std::string(kind) + " '" + timed + "'";
  }

  // An interrupt while `timed`'s run is being issued on `stream`: the grace for what was issued so far.
  [[noreturn]] void stop_issuing(Stream stream, const std::string& timed, const char* kind) {
    Event issued{};
    if (driver_->event_create(&issued) != 0) throw_interrupted(measured(kind, timed), false);
    struct Destroy {
      const Driver& driver;
      Event event;
      ~Destroy() { driver.event_destroy(event); }
    } destroy{*driver_, issued};
    if (driver_->event_record(issued, stream) != 0) throw_interrupted(measured(kind, timed), false);
    interrupted_while_waiting(issued, timed, kind);
  }

  // After an interrupt: the GPU gets kInterruptGraceS to finish `timed`'s work up to `event`, or the device
  // is given up; a fault in that work is reported as the fault it is.
  [[noreturn]] void interrupted_while_waiting(Event event, const std::string& timed, const char* kind) {
    const std::string what = measured(kind, timed);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kInterruptGraceS);
    while (std::chrono::steady_clock::now() < deadline) {
      const int status = driver_->event_query(event);
      if (status == 0) throw_interrupted(what, false);
      if (status != Driver::kNotReady) fail(timed, Driver::kEventSynchronize, status);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw_interrupted(what, true);
  }

  size_t launches_since_look_ = 0;             // count_launch's count since its last look
  std::unique_ptr<ClockProbe<Driver>> probe_;  // made on the first run, with the context current
  std::recursive_mutex running_;               // run(), and a session's thread for the whole session
};

}  // namespace pyhipbench
