#include "pyhipbench/stopping.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "interrupt.hpp"

namespace pyhipbench {

namespace {

template <class T>
void require(bool ok, const char* field, T value, const std::string& expected) {
  if (ok) return;
  std::ostringstream message;
  message << field << "=" << value << ": out of range, expected " << expected;
  throw std::invalid_argument(message.str());
}

// Whether `us` is at most `ticks_us` (a span of the timer's clock ticks), give or take the rounding of
// ticks converted to µs: one tick between 0.512 and 0.544 µs reads 0.032000000000000003.
bool within_ticks(double us, double ticks_us) { return us <= ticks_us * (1 + 1e-9); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void StopRule::validate() const {
  require(std::isfinite(precision) && precision >= 0 && precision < 1, "precision", precision,
          "a finite number >= 0 and < 1");
  require(std::isfinite(max_time_s) && max_time_s > 0, "max_time_s", max_time_s, "a finite number > 0");
  require(std::isfinite(settle) && settle > 0 && settle < 1, "settle", settle, "a finite number > 0 and < 1");
  require(std::isfinite(tick_us) && tick_us >= 0, "tick_us", tick_us, "a finite number >= 0");
  require(std::isfinite(slower_than_us) && slower_than_us >= 0, "slower_than_us", slower_than_us,
          "a finite number >= 0 (µs; 0 = no racing)");
  require(std::isfinite(race_threshold) && race_threshold >= 0 && race_threshold < 1, "race_threshold", race_threshold,
          "a fraction >= 0 and < 1");
  require(min_samples >= 1, "min_samples", min_samples, "an integer >= 1");
  require(max_samples >= min_samples, "max_samples", max_samples, "an integer >= " + std::to_string(min_samples));
  require(warmup_chunk >= 1, "warmup_chunk", warmup_chunk, "an integer >= 1");
  require(first_chunk >= 1, "first_chunk", first_chunk, "an integer >= 1");
  require(std::isfinite(throttle_threshold) && throttle_threshold >= 0 && throttle_threshold < 1, "throttle_threshold",
          throttle_threshold, "a fraction of the rated SM clock >= 0 and < 1 (0 = off)");
  require(std::isfinite(hold_s) && hold_s >= 0, "hold_s", hold_s, "a finite number of seconds >= 0 (0 = no hold)");
}

std::string StopRule::stop_reason(const Summary& summary, double elapsed_s) const {
  const double half_width = (summary.ci_high - summary.ci_low) / 2;
  if (precision > 0 && summary.count >= min_samples &&
      (summary.rel_ci() <= precision || within_ticks(half_width, tick_us / 2))) {
    return "precision";
  }
  if (slower_than_us > 0 && summary.count >= min_samples &&
      judge(summary.median / slower_than_us - 1, summary.ci_low / slower_than_us - 1,
            summary.ci_high / slower_than_us - 1, race_threshold) == Verdict::kSlower) {
    return "slower";
  }
  if (summary.count >= max_samples) return "max-samples";
  if (elapsed_s >= max_time_s) return "max-time";
  return "";
}

size_t StopRule::next_chunk(const Summary& summary) const {
  const size_t taken = summary.count;
  const size_t left = max_samples > taken ? max_samples - taken : 0;
  size_t wanted = std::max(first_chunk, taken);  // doubling, without a precision to aim at
  if (precision > 0 && taken > 0) {
    // The interval's half-width shrinks as 1/sqrt(n): aim at the count that
    // reaches the target, at most doubling the samples so far (an estimate
    // from few samples is rough: overshooting costs whole samples, one more
    // run only its flush and synchronisation; an A/B on the H200 chose this
    // over 4x with a 10 % margin, docs/measurement.md), and never a chunk so
    // small that the run's fixed cost outweighs its samples.
    const double target = std::max(precision * summary.median, tick_us / 2);
    const double half_width = (summary.ci_high - summary.ci_low) / 2;
    double ratio = target > 0 ? half_width / target : 2.0;
    // Racing stops once the CI's lower end clears the bound, whichever comes
    // first: that end's distance below the median shrinks as 1/sqrt(n) too and
    // must get under the median's distance above the bound. Not the half-width:
    // a CI longer below the median than above (two clock states, the lower
    // one rarer) would read as clear already and ask for only first_chunk / 2.
    if (slower_than_us > 0 && summary.median > slower_than_us * (1 + race_threshold)) {
      ratio = std::min(ratio, (summary.median - summary.ci_low) / (summary.median - slower_than_us));
    }
    // In doubles until capped: a tiny target can make the estimate overflow a size_t.
    const double needed =
        std::min(std::ceil(static_cast<double>(taken) * ratio * ratio), 2.0 * static_cast<double>(taken));
    wanted = needed > static_cast<double>(taken) ? static_cast<size_t>(needed) - taken : 0;
    wanted = std::max({wanted, first_chunk / 2, min_samples > taken ? min_samples - taken : 0});
  }
  return std::max<size_t>(1, std::min(wanted, left));
}

bool StopRule::settled(double previous_median_us, double median_us) const {
  // One tick of the timer's clock apart is as close as its data can show: a sub-µs kernel's chunk medians a
  // tick apart (several percent) agree, as its interval one tick wide is precise.
  const double difference_us = std::fabs(median_us - previous_median_us);
  return difference_us <= settle * previous_median_us || within_ticks(difference_us, tick_us);
}

namespace {

// The median of `samples` samples from `from` on, µs.
double chunk_median_us(const std::vector<double>& times_us, size_t from, size_t samples) {
  const auto first = times_us.begin() + static_cast<std::ptrdiff_t>(from);
  return summarize(std::vector<double>(first, first + static_cast<std::ptrdiff_t>(samples))).median;
}

// One measure() call: the runs of one timer on one plan or call, and what they
// have kept so far. `run(samples, first_set)` takes one run.
template <class Run>
class MeasurementLoop {
 public:
  // `issue_timed`: a sample holds the host's time to issue it (a call, where Timer::call_samples_hold_issuing).
  MeasurementLoop(Timer& timer, std::string timed, size_t sets, Run run, const StopRule& rule, bool issue_timed)
      : timer_(timer),
        timed_(std::move(timed)),
        sets_(sets),
        run_(std::move(run)),
        rule_(rule),
        issue_timed_(issue_timed) {}

  // The hold (rule.hold_s > 0): untimed runs until hold_s has passed. Runs
  // double from one warm-up chunk, then are sized from the last run's wall
  // time to end near the deadline: few synchronisations, and little
  // overshoot, whatever the sample's length. max_time_s counts from its end.
  void hold() {
    if (rule_.hold_s > 0) {
      const auto holding = std::chrono::steady_clock::now();
      size_t samples = rule_.warmup_chunk;
      for (;;) {
        const auto run_started = std::chrono::steady_clock::now();
        const Timings held = run(samples);
        advance_sets(samples, held);
        measurement_.warmup_samples += samples;
        const double left_s = rule_.hold_s - seconds_since(holding);
        if (left_s <= 0) break;
        const double per_sample_s = std::max(seconds_since(run_started), 1e-9) / static_cast<double>(samples);
        samples = std::clamp<size_t>(static_cast<size_t>(std::ceil(left_s / per_sample_s)), 1,
                                     std::max<size_t>(2 * samples, rule_.warmup_chunk));
        samples = std::min({samples, kMaxHoldRun, static_cast<size_t>(std::ceil(kMaxHoldRunS / per_sample_s))});
      }
    }
    started_ = std::chrono::steady_clock::now();
  }

  // The warm-up, then the first timed samples kept. The first run holds a
  // warm-up chunk and the first timed chunk: a kernel that settles at once
  // costs one run (one synchronisation, one CUPTI flush) before the first
  // stop check. Without a fixed `warmup`, the run is read chunk by chunk
  // until a chunk's median agrees with the one before it (settle()).
  void warm_up(std::optional<size_t> warmup) {
    const size_t chunk = rule_.warmup_chunk;
    size_t lead = warmup ? *warmup : chunk;  // the untimed samples the first run opens with
    if (lead > chunk) {
      // A longer fixed warm-up runs alone, so that no run holds much more than
      // the largest count a caller asked for (a run's events, or CUPTI records,
      // are held until its end).
      take(lead);
      measurement_.warmup_samples += lead;  // after the hold's samples, if any
      lead = 0;
    }
    if (!warmup && rule_.slower_than_us > 0) {
      // Racing: the lead chunk alone first, so that a clear loser stops after it; where the bound is long, its
      // first sample alone before the rest, so that a far loser stops after one (kFarLoser says where).
      const bool probe =
          lead > 1 && rule_.slower_than_us >= kFarLoserProbeFromUs && !issue_timed_ && rule_.throttle_threshold > 0;
      const Timings first = take(probe ? 1 : lead);
      if (probe && first.clock_mhz > 0 && all_over(first, kFarLoser)) {
        stop_as_loser(first, Timings{});
        return;
      }
      const Timings rest = probe ? take(lead - 1) : Timings{};
      if (all_over(first, kClearLoser) && all_over(rest, kClearLoser)) {
        stop_as_loser(first, rest);
        return;
      }
      measurement_.warmup_samples += lead;
      std::vector<double> lead_us = first.times_us;
      lead_us.insert(lead_us.end(), rest.times_us.begin(), rest.times_us.end());
      Timings run = take(std::max(rule_.first_chunk, chunk));
      keep(run, settle(run, 0, chunk_median_us(lead_us, 0, lead)));
      return;
    }
    // Without a fixed warm-up, at least a chunk after the lead: two chunks to compare in this run.
    Timings run = take(lead + (warmup ? rule_.first_chunk : std::max(rule_.first_chunk, chunk)));
    measurement_.warmup_samples += lead;
    const size_t timed_from = warmup ? lead : settle(run, lead, chunk_median_us(run.times_us, 0, chunk));
    keep(run, timed_from);
  }

  bool stopped() const { return !measurement_.stop_reason.empty(); }

  // One timed run, sized by the rule from the samples kept so far.
  void take_timed_run() {
    keep(take(measurement_.times_us.empty() ? rule_.first_chunk : rule_.next_chunk(summary_)), 0);
  }

  Measurement result() && { return std::move(measurement_); }

 private:
  // Reads `run` chunk by chunk from `from` until a chunk's median agrees with
  // the one before it (the first with `previous`, the warm-up chunk's): that
  // chunk is already in the steady state, so it and the samples after it are
  // timed, and only the chunks before it were warm-up. A kernel still
  // unsettled when the run ends warms up in further runs (replacing `run`),
  // each as long as the warm-up so far (next_warmup_run). Returns where `run`'s
  // timed samples start.
  size_t settle(Timings& run, size_t from, double previous) {
    const size_t chunk = rule_.warmup_chunk;
    size_t timed_from = from;
    while (measurement_.warmup_samples < rule_.max_warmup_samples) {
      if (timed_from + chunk > run.times_us.size()) {
        measurement_.warmup_samples += run.times_us.size() - timed_from;  // a tail shorter than a chunk
        run = take(next_warmup_run(run));
        timed_from = 0;
      }
      const double median = chunk_median_us(run.times_us, timed_from, chunk);
      if (rule_.settled(previous, median)) break;
      previous = median;
      timed_from += chunk;
      measurement_.warmup_samples += chunk;
    }
    return timed_from;
  }

  // The length of the next warm-up run after `last`, in whole chunks: as many
  // as have warmed up so far, so that a kernel settling late costs few
  // synchronisations (runs double) and the samples after its settled chunk are
  // timed, not lost; at most what max_warmup_samples leaves and about
  // kMaxWarmupRunS of `last`'s samples (each its launches, or its host time
  // where that is longer), at least a chunk.
  size_t next_warmup_run(const Timings& last) const {
    const size_t chunk = rule_.warmup_chunk;
    const size_t done = measurement_.warmup_samples;  // a hold's samples, or a run's tail, may pass the cap
    const size_t left = rule_.max_warmup_samples > done ? rule_.max_warmup_samples - done : 0;
    size_t chunks = std::max<size_t>(1, std::min(done, left) / chunk);
    const double samples = static_cast<double>(last.times_us.size());
    const double sample_s = std::max(summarize(last.times_us).median * static_cast<double>(last.launches_per_sample),
                                     last.host_us / samples) *
                            1e-6;
    if (sample_s > 0) {
      const double fit = std::floor(kMaxWarmupRunS / (sample_s * static_cast<double>(chunk)));
      chunks = std::min(chunks, static_cast<size_t>(std::max(1.0, std::min(fit, static_cast<double>(chunks)))));
    }
    return chunks * chunk;
  }

  // One run of `samples`, taken again (after a pause) while its clock is below the threshold.
  Timings take(size_t samples) {
    for (;;) {
      Timings taken = run_checked(samples);
      if (!retake(taken)) {
        retakes_ = 0;
        return taken;
      }
      ++retakes_;
      measurement_.throttled_samples += samples;
      std::this_thread::sleep_for(std::chrono::duration<double>(kThrottleRecoveryS));
    }
  }

  // Racing: every sample of `run` (none: true) over `factor` times the bound.
  bool all_over(const Timings& run, double factor) const {
    return std::all_of(run.times_us.begin(), run.times_us.end(),
                       [&](double us) { return us > factor * rule_.slower_than_us; });
  }

  // Racing: a loser stops on its lead samples (`first`, then `rest`), those its timed ones.
  void stop_as_loser(const Timings& first, const Timings& rest) {
    keep(first, 0);
    keep(rest, 0);
    measurement_.stop_reason = "slower";
  }

  // A throttled run is taken again, kThrottleRetakes times in a row at most, and not past max_time_s.
  bool retake(const Timings& run) const {
    const bool throttled = rule_.throttle_threshold > 0 && run.clock_mhz > 0 && run.default_clock_mhz > 0 &&
                           run.clock_mhz < rule_.throttle_threshold * run.default_clock_mhz;
    return throttled && retakes_ < kThrottleRetakes && seconds_since(started_) < rule_.max_time_s;
  }

  // One run, after a look for an interrupt: a measurement stops between runs, too.
  Timings run(size_t samples) {
    stop_if_interrupted(timed_);
    return run_(samples, next_set_);
  }

  Timings run_checked(size_t samples) {
    Timings taken = run(samples);
    if (taken.times_us.size() != samples) {
      throw MeasurementError("the " + timer_.name() + " timer returned " + std::to_string(taken.times_us.size()) +
                             " samples of " + timed_ + " where " + std::to_string(samples) + " were asked for");
    }
    advance_sets(samples, taken);
    measurement_.launches_per_sample = taken.launches_per_sample;
    if (taken.default_clock_mhz > 0) measurement_.default_clock_mhz = taken.default_clock_mhz;
    return taken;
  }

  // The next run continues the rotation where `run`, of `samples`, left it.
  void advance_sets(size_t samples, const Timings& run) {
    next_set_ = (next_set_ + samples * run.launches_per_sample) % sets_;
  }

  // Appends the timed part of a run (its samples from `from` on) and says why
  // to stop, if it is time. Never past max_samples: a settled warm-up chunk,
  // timed, may hold more than a fixed count asks for.
  void keep(const Timings& run, size_t from) {
    Measurement& m = measurement_;
    const size_t n = run.times_us.size();
    const size_t to = std::min(n, from + (rule_.max_samples - m.times_us.size()));
    if (from >= to) return;
    const size_t kept = m.times_us.size();
    m.times_us.insert(m.times_us.end(), run.times_us.begin() + static_cast<std::ptrdiff_t>(from),
                      run.times_us.begin() + static_cast<std::ptrdiff_t>(to));
    if (!run.kernel_times_us.empty()) {
      const size_t kernels = run.kernel_times_us.size() / n;
      m.kernel_times_us.insert(m.kernel_times_us.end(),
                               run.kernel_times_us.begin() + static_cast<std::ptrdiff_t>(from * kernels),
                               run.kernel_times_us.begin() + static_cast<std::ptrdiff_t>(to * kernels));
    }
    if (!run.span_us.empty()) {
      m.span_us.insert(m.span_us.end(), run.span_us.begin() + static_cast<std::ptrdiff_t>(from),
                       run.span_us.begin() + static_cast<std::ptrdiff_t>(to));
    }
    for (const Activity& a : run.activities) {
      if (a.sample < from || a.sample >= to) continue;
      m.activities.push_back(a);
      m.activities.back().sample = kept + (a.sample - from);
    }
    m.host_us += run.host_us * static_cast<double>(to - from) / static_cast<double>(n);
    if (run.clock_mhz > 0) {
      m.clock_mhz.push_back(run.clock_mhz);
      m.clock_samples.push_back(to - from);
    }
    summary_ = summarize(m.times_us);
    m.stop_reason = rule_.stop_reason(summary_, seconds_since(started_));
    m.precision_reached = summary_.rel_ci();
  }

  Timer& timer_;
  const std::string timed_;  // what is timed, for messages: "kernel 'name'" or "call 'name'"
  const size_t sets_;
  Run run_;
  const StopRule& rule_;
  const bool issue_timed_;
  Measurement measurement_;
  Summary summary_;  // of the timed samples kept so far
  size_t next_set_ = 0;
  size_t retakes_ = 0;                             // of the run being taken
  std::chrono::steady_clock::time_point started_;  // the hold's end: max_time_s counts from here
};

// Check the rule, hold, warm up, then take timed runs until the rule says stop; one timer session from the
// warm-up on.
template <class Run>
Measurement measure_runs(Timer& timer, std::string timed, size_t sets, Run run, const StopRule& rule,
                         std::optional<size_t> warmup, bool issue_timed) {
  rule.validate();
  MeasurementLoop loop(timer, std::move(timed), sets, std::move(run), rule, issue_timed);
  loop.hold();
  Timer::Session session(timer);
  loop.warm_up(warmup);
  while (!loop.stopped()) loop.take_timed_run();
  session.end();
  return std::move(loop).result();
}

}  // namespace

Measurement measure(Timer& timer, LaunchPlan& plan, const StopRule& rule, std::optional<size_t> warmup) {
  return measure_runs(
      timer, "kernel '" + plan.name() + "'", plan.sets(),
      [&](size_t samples, size_t first_set) { return timer.run(plan, samples, first_set); }, rule, warmup, false);
}

Measurement measure(Timer& timer, CallPlan& call, const StopRule& rule, std::optional<size_t> warmup) {
  return measure_runs(
      timer, "call '" + call.name() + "'", 1, [&](size_t samples, size_t) { return timer.run(call, samples); }, rule,
      warmup, timer.call_samples_hold_issuing());
}

}  // namespace pyhipbench
