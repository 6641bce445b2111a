#include "pyhipbench/stopping.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pyhipbench {

namespace {

template <class T>
void require(bool ok, const char* field, T value, const std::string& expected) {
  if (ok) return;
  std::ostringstream message;
  message << field << "=" << value << ": out of range, expected " << expected;
  throw std::invalid_argument(message.str());
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of(std::vector<double> times_us) { return summarize(std::move(times_us)).median; }

}  // namespace

void StopRule::validate() const {
  require(std::isfinite(precision) && precision >= 0 && precision < 1, "precision", precision,
          "a finite number >= 0 and < 1");
  require(std::isfinite(max_time_s) && max_time_s > 0, "max_time_s", max_time_s, "a finite number > 0");
  require(std::isfinite(settle) && settle > 0 && settle < 1, "settle", settle, "a finite number > 0 and < 1");
  require(std::isfinite(tick_us) && tick_us >= 0, "tick_us", tick_us, "a finite number >= 0");
  require(min_samples >= 1, "min_samples", min_samples, "an integer >= 1");
  require(max_samples >= min_samples, "max_samples", max_samples, "an integer >= " + std::to_string(min_samples));
  require(warmup_chunk >= 1, "warmup_chunk", warmup_chunk, "an integer >= 1");
  require(first_chunk >= 1, "first_chunk", first_chunk, "an integer >= 1");
}

std::string StopRule::stop_reason(const Summary& summary, double elapsed_s) const {
  const double half_width = (summary.ci_high - summary.ci_low) / 2;
  if (precision > 0 && summary.count >= min_samples &&
      (summary.rel_ci() <= precision || half_width <= tick_us / 2)) {
    return "precision";
  }
  if (summary.count >= max_samples) return "max-samples";
  if (elapsed_s >= max_time_s) return "max-time";
  return "";
}

size_t StopRule::next_chunk(size_t taken) const {
  const size_t left = max_samples > taken ? max_samples - taken : 0;
  return std::max<size_t>(1, std::min(std::max(first_chunk, taken), left));
}

bool StopRule::settled(double previous_median_us, double median_us) const {
  return std::fabs(median_us - previous_median_us) <= settle * previous_median_us;
}

Measurement measure(Timer& timer, LaunchPlan& plan, const StopRule& rule, std::optional<size_t> warmup) {
  rule.validate();
  Measurement m;
  size_t next_set = 0;
  auto take = [&](size_t samples) {
    Timings chunk = timer.run(plan, samples, next_set);
    if (chunk.times_us.size() != samples) {
      throw MeasurementError("the " + timer.name() + " timer returned " + std::to_string(chunk.times_us.size()) +
                             " samples of kernel '" + plan.kernel_name() + "' where " + std::to_string(samples) +
                             " were asked for");
    }
    next_set = (next_set + samples * chunk.launches_per_sample) % plan.sets();
    m.launches_per_sample = chunk.launches_per_sample;
    return chunk;
  };
  Timer::Session session(timer);

  if (warmup) {
    if (*warmup > 0) take(*warmup);
    m.warmup_samples = *warmup;
  } else {
    double previous = median_of(take(rule.warmup_chunk).times_us);
    m.warmup_samples = rule.warmup_chunk;
    while (m.warmup_samples < rule.max_warmup_samples) {
      const double median = median_of(take(rule.warmup_chunk).times_us);
      m.warmup_samples += rule.warmup_chunk;
      if (rule.settled(previous, median)) break;
      previous = median;
    }
  }

  const auto started = std::chrono::steady_clock::now();
  while (m.stop_reason.empty()) {
    Timings chunk = take(rule.next_chunk(m.times_us.size()));
    m.times_us.insert(m.times_us.end(), chunk.times_us.begin(), chunk.times_us.end());
    m.host_us += chunk.host_us;
    const Summary summary = summarize(m.times_us);
    m.stop_reason = rule.stop_reason(summary, seconds_since(started));
    m.precision_reached = summary.rel_ci();
  }
  session.end();
  return m;
}

}  // namespace pyhipbench
