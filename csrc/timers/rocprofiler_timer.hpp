// The `rocprofiler` timer (HIP only): each kernel's duration on the GPU, from
// rocprofiler-sdk's kernel-dispatch records (end - start), as the cupti timer
// reads CUPTI's. A plan's sample is its chain: the sum of its kernels'
// durations (for a chain of several, each kernel's own and the span from the
// first start to the last end too).
//
// Each sample's chain is launched with a fresh external correlation id pushed
// on this thread (RocprofilerTracer), so its records are told from the clean
// step's (launched before the push) and from any other dispatch. One event
// after the last launch is all the host waits on; then the SDK's buffer is
// flushed. A run whose samples did not all come back with one record per
// kernel is refused (MeasurementError): the SDK attached after HIP had
// initialised sees no dispatch (csrc/rocprofiler.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "hip_driver.hpp"
#include "rocprofiler.hpp"
#include "timers/timer_support.hpp"

namespace pyhipbench {

class RocprofilerTimer final : public TimerBase<HipDriver> {
 public:
  // Throws LibraryError saying why where the process's tracer cannot trace.
  RocprofilerTimer(std::shared_ptr<HipDriver> driver, uintptr_t context)
      : TimerBase<HipDriver>("rocprofiler", std::move(driver), context), tracer_(RocprofilerTracer::instance()) {
    const std::string reason = tracer_.unavailable();
    if (!reason.empty()) {
      throw LibraryError("the rocprofiler timer cannot trace: " + reason +
                         " (pyhipbench attaches rocprofiler-sdk when it opens its first HIP device, before "
                         "HIP initialises; set PYHIPBENCH_ROCPROFILER_LIBRARY to librocprofiler-sdk.so's path)");
    }
  }

  ~RocprofilerTimer() override {
    release_in_context([this] { release_pool_and_probe(); });
  }

 private:
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override {
    grow_event_pool(1);
    const Event done = events_[0];
    const auto stream = reinterpret_cast<Stream>(plan.stream());
    const size_t sets = plan.sets();
    size_t set = first_set % sets;
    if (LaunchPlan* clean = plan.clean_step()) driver_->check_plan(*clean);
    const uint64_t first_id = tracer_.reserve(samples);

    tracer_.start();
    struct Stop {
      RocprofilerTracer& tracer;
      bool stopped = false;
      ~Stop() {
        if (stopped) return;
        try {
          tracer.stop();
        } catch (const MeasurementError&) {  // already failing: that error is the one reported
        }
      }
    } stop{tracer_};
    stamp_clock(false, stream, plan.name());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < samples; ++i) {
      prepare_sample(plan, set, stream);  // before the push: the clean step's record is not the sample's
      tracer_.push(first_id + i);
      struct Pop {
        RocprofilerTracer& tracer;
        ~Pop() {
          try {
            tracer.pop();
          } catch (const MeasurementError&) {  // the push succeeded: a pop fails only with the SDK gone
          }
        }
      } pop{tracer_};
      launch_chain_or_fail(plan, set, stream);
      set = set + 1 == sets ? 0 : set + 1;
    }
    timings.host_us = elapsed_us(start);
    stamp_clock(true, stream, plan.name());
    check(plan, HipDriver::kEventRecord, driver_->event_record(done, stream));
    wait_for(done, plan.name());
    std::vector<DispatchRecord> records = tracer_.flush();
    stop.stopped = true;
    tracer_.stop();
    fill(plan, samples, first_id, records, timings);
  }

  // The samples' times from their records: each sample's kernels in the order they started.
  static void fill(LaunchPlan& plan, size_t samples, uint64_t first_id, std::vector<DispatchRecord>& records,
                   Timings& timings) {
    const size_t kernels = plan.kernels();
    std::vector<std::vector<const DispatchRecord*>> by_sample(samples);
    for (const DispatchRecord& r : records) {
      if (r.external_id >= first_id && r.external_id < first_id + samples) {
        by_sample[r.external_id - first_id].push_back(&r);
      }
    }
    timings.times_us.resize(samples);
    if (kernels > 1) {
      timings.kernel_times_us.resize(samples * kernels);
      timings.span_us.resize(samples);
    }
    for (size_t i = 0; i < samples; ++i) {
      std::vector<const DispatchRecord*>& mine = by_sample[i];
      if (mine.size() != kernels) {
        throw MeasurementError("rocprofiler-sdk returned " + std::to_string(mine.size()) + " dispatch record(s) for " +
                               "sample " + std::to_string(i) + " of '" + plan.name() + "'; expected " +
                               std::to_string(kernels) +
                               " (none at all: the SDK was attached after HIP had initialised, so it sees no "
                               "dispatch; use timer='events')");
      }
      std::sort(mine.begin(), mine.end(),
                [](const DispatchRecord* a, const DispatchRecord* b) { return a->start_ns < b->start_ns; });
      double sum_us = 0;
      for (size_t k = 0; k < kernels; ++k) {
        const double us = static_cast<double>(mine[k]->end_ns - mine[k]->start_ns) / 1000.0;
        sum_us += us;
        if (kernels > 1) timings.kernel_times_us[i * kernels + k] = us;
      }
      timings.times_us[i] = sum_us;
      if (kernels > 1) {
        uint64_t last = 0;
        for (const DispatchRecord* r : mine) last = std::max(last, r->end_ns);
        timings.span_us[i] = static_cast<double>(last - mine.front()->start_ns) / 1000.0;
      }
    }
  }

  RocprofilerTracer& tracer_;
};

}  // namespace pyhipbench
