// When a measurement has enough samples, and the loop that takes them.
//
// measure() runs a timer on a plan (or a callable's calls) in runs of
// samples, continuing the rotation from one run to the next, under one
// Timer::Session:
//
//   0. hold (when `hold_s` > 0): untimed runs back to back for at least
//      `hold_s` of wall time, each run sized from the one before to end near
//      the deadline, so that the GPU reaches the clock its power and thermal
//      limits sustain under this work (a few ms of work from idle runs at the
//      boost clock; a power-capped GPU settles over tens to hundreds of ms).
//      Its samples count as warm-up; `max_time_s` counts from its end, and
//      no run of the hold is taken again for its clock;
//   1. warm-up: `warmup` untimed samples, or (none given) chunks of
//      `warmup_chunk` until a chunk's median agrees within `settle` (or one
//      `tick_us`) with the chunk's before it (clocks up, caches and TLBs in their steady state;
//      at most `max_warmup_samples`): that chunk is already steady and is
//      the first timed one, so the warm-up is at least one chunk. A kernel
//      not settled by the end of a run warms up in runs as long as its
//      warm-up so far (doubling), read chunk by chunk the same way. The first
//      run holds one warm-up chunk and the first timed chunk (`first_chunk`),
//      so a kernel that settles at once costs one run before its first check.
//      Racing (below), the warm-up chunk runs alone first: where every one of
//      its samples is over kClearLoser times `slower_than_us`, the candidate
//      stops there ("slower"), those samples its timed ones. Where the bound
//      is long (kFarLoserProbeFromUs), the chunk's first sample runs alone
//      before the rest: one over kFarLoser times the bound stops it there;
//   2. timed runs, each sized from the median's CI so far to reach the
//      precision (its half-width shrinks as 1/sqrt(n); at most doubling the
//      samples so far, and doubling without a precision target), until the first of
//      - "precision": the median's 95 % CI within ±`precision` of the median,
//        or no wider than one tick of the timer's clock (`tick_us`), once
//        `min_samples` are in;
//      - "max-samples": `max_samples` taken;
//      - "max-time": `max_time_s` of wall time spent, warm-up included;
//      - "slower" (racing, when `slower_than_us` is set): compare's rule
//        (statistics.hpp's judge, at `race_threshold`) calls the median slower
//        than `slower_than_us`: its 95 % CI wholly above it and the median
//        more than `race_threshold` above it, once `min_samples` are in. A
//        tuner passes the best candidate's CI upper bound so far: a candidate
//        that is surely slower stops without reaching the precision, and one
//        within the threshold of the best is measured to the end.
//
// The clock: a run whose SM clock (Timings::clock_mhz, the clock probe's
// reading over its samples) is below `throttle_threshold` times the device's
// rated clock did not run at the GPU's own speed: its samples are discarded
// (counted in Measurement::throttled_samples) and the run taken again after a
// 50 ms recovery pause, as nvbench does, up to kThrottleRetakes times in a row
// (then kept: the clocks in the result show it). So a warm-up settles only
// once the clock is up, and a timed sample below it never counts. Runs that
// report no clock (AMD, or no stamp) are kept as they are.
//
// Each run costs a synchronisation (and for the cupti timer a flush of its
// records) beside its samples, so fewer, well-sized runs cost less wall time.
//
// This is the one implementation of the rule: Python's pyhipbench.bench calls
// it through the binding.
#pragma once

#include "pyhipbench/export.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pyhipbench/launch_plan.hpp"
#include "pyhipbench/statistics.hpp"
#include "pyhipbench/timer.hpp"

namespace pyhipbench {

struct PYHIPBENCH_API StopRule {
  double precision = 0.01;  // relative half-width of the median's 95 % CI; 0 = no target
  size_t min_samples = 10;
  size_t max_samples = 10000;
  double max_time_s = 1.0;  // wall time of the measurement, warm-up included (the hold not), seconds
  double settle = 0.02;     // warm-up: consecutive chunk medians within ±2 % (or one tick_us)
  size_t max_warmup_samples = 1000;
  size_t warmup_chunk = 8;  // samples per warm-up chunk
  size_t first_chunk = 16;
  // CUPTI's timestamps tick every 32 ns on the H200 (docs/measurement.md): a
  // sub-µs kernel's samples take a few values one tick apart, and an interval
  // one tick wide is as narrow as such data can show.
  double tick_us = 0.032;
  double slower_than_us = 0;                  // racing: stop once the median is surely slower than this, µs; 0 = never
  double race_threshold = kDefaultThreshold;  // racing: "slower" means by more than this fraction
  double throttle_threshold = 0.75;  // a run below this fraction of the rated SM clock is taken again; 0 = never
  double hold_s = 0;                 // untimed runs back to back for this long first, seconds; 0 = none

  // Throws std::invalid_argument naming the first field out of range and its value.
  void validate() const;
  // Why to stop after a chunk ("precision", "slower", "max-samples", "max-time"), or empty to go on.
  std::string stop_reason(const Summary& summary, double elapsed_s) const;
  // Samples to ask for next, given the timed samples so far (`summary`): enough
  // to reach `precision` (or, racing, to lift the CI's lower end above
  // `slower_than_us` when the median is past the threshold, if that takes fewer) by the 1/sqrt(n) law, within
  // [first_chunk / 2, taken], or the rest of min_samples; doubling if
  // precision is 0; never past max_samples.
  size_t next_chunk(const Summary& summary) const;
  // Warm-up is over when two consecutive chunk medians (µs) agree within `settle`, or one `tick_us`.
  bool settled(double previous_median_us, double median_us) const;
};

struct PYHIPBENCH_API Measurement {
  std::vector<double> times_us;  // the timed samples, µs per sample (Timings::times_us)
  // What the timer gave beside, for the timed samples only (Timings): each
  // kernel's time (samples x kernels) and each sample's span, µs; a call's
  // activities, their `sample` counting the timed samples from 0.
  std::vector<double> kernel_times_us;
  std::vector<double> span_us;
  std::vector<Activity> activities;
  std::string stop_reason;    // "precision", "slower", "max-samples" or "max-time"
  size_t warmup_samples = 0;  // untimed samples run first
  size_t launches_per_sample = 1;
  double host_us = 0;            // host µs spent issuing the timed samples' launches
  double precision_reached = 0;  // the median CI's relative half-width at the stop
  // The SM clock of each run whose samples were kept (MHz; runs that reported
  // one) and how many of its samples were kept; the device's rated SM clock
  // (MHz, 0 if unread); samples discarded as taken below the throttle threshold.
  std::vector<double> clock_mhz;
  std::vector<size_t> clock_samples;
  double default_clock_mhz = 0;
  size_t throttled_samples = 0;
};

// Racing's clear loser: a warm-up chunk (3 samples for a tuner, after the
// candidate's untimed first call) wholly over this many times the bound. Each
// sample of a candidate whose median is at or below the bound is at or below
// it with probability one half, and one 50 % over the median is an outlier no
// steady kernel time shows in one sample of ten: three in a row over 1.5x the
// bound is a one-in-a-thousand event even then, where the sign test alone
// (three samples over the bound) would be one in eight.
inline constexpr double kClearLoser = 1.5;
// Racing's far loser: the warm-up chunk's first sample, taken alone, over this
// many times the bound. A kernel's time twice its median in one sample needs
// the GPU taken from it (another context time-sliced in) or a clock at half
// its rate: neither is a steady kernel time. So the probe runs only where a
// sample leaves out the host's time to issue it (not a call under the events
// timer) and a run below the throttle threshold is taken again, and stops a
// candidate only where its run read the clock (not yet on AMD).
inline constexpr double kFarLoser = 2.0;
// The far-loser probe's least bound, µs: it costs a run of its own (a
// synchronisation, a CUPTI flush: tens of µs of host time) for every candidate
// it does not stop, and saves a far loser's other warm-up samples, each over
// kFarLoser times the bound: worth it from here on.
inline constexpr double kFarLoserProbeFromUs = 50.0;
inline constexpr size_t kThrottleRetakes = 3;       // throttled runs taken again in a row, at most
inline constexpr double kThrottleRecoveryS = 0.05;  // the pause before taking a throttled run again, s
// A hold's run holds its events (or CUPTI records) until its end, as any run: bounded as a fixed count is.
inline constexpr size_t kMaxHoldRun = 1'000'000;
// A hold's run lasts about this long at most, s: between runs the host's interrupt check runs (interrupt.hpp).
inline constexpr double kMaxHoldRunS = 0.25;
// A late warm-up's run lasts about this long at most (unless one chunk is longer), s: long enough that its
// synchronisation (and CUPTI flush: tens of µs of host time) is a small part of it, short enough that a kernel
// settling early in it reaches its first stop check soon after.
inline constexpr double kMaxWarmupRunS = 0.01;

// Times `plan` with `timer` until `rule` says stop (see the top of this file).
// `warmup`: that many untimed samples (0: none) instead of warming up until
// the medians settle. Throws std::invalid_argument for a bad rule, and what
// the timer throws (DriverError, KernelFault, MeasurementError); the timer's
// session is closed on every path.
PYHIPBENCH_API Measurement measure(Timer& timer, LaunchPlan& plan, const StopRule& rule,
                                   std::optional<size_t> warmup = std::nullopt);
// The same for a callable: each call a sample (the events and cupti timers).
PYHIPBENCH_API Measurement measure(Timer& timer, CallPlan& call, const StopRule& rule,
                                   std::optional<size_t> warmup = std::nullopt);

}  // namespace pyhipbench
