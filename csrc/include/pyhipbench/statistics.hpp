// Statistics of a sample of kernel times: the median, its confidence interval,
// spread and outliers. The one implementation: the stopping rule (stopping.hpp)
// uses it after every chunk and Python's pyhipbench.stats binds it.
//
// Kernel times are skewed (a floor set by the hardware, a tail from clocks,
// interrupts and the launch path), so the centre is the median and its
// confidence interval is the distribution-free one from order statistics: with
// n samples the number below the true median is Binomial(n, 1/2), so the sorted
// samples at ranks n/2 ± z·√n/2 bracket it with the stated confidence. No
// normality is assumed, and it is cheap enough to re-evaluate after every chunk.
#pragma once

#include "pyhipbench/export.hpp"

#include <cstddef>
#include <utility>
#include <vector>

namespace pyhipbench {

struct PYHIPBENCH_API Summary {  // all in µs except the counts, `confidence` and rel_ci()
  size_t count = 0;
  double median = 0;
  double ci_low = 0;  // the median's confidence interval, µs
  double ci_high = 0;
  double confidence = 0.95;  // of that interval, in (0, 1)
  double mean = 0;
  double stdev = 0;  // sample standard deviation (0 for one sample)
  double min = 0;
  double max = 0;
  double p10 = 0;
  double p90 = 0;
  size_t outliers = 0;  // samples beyond Tukey's fences (1.5 IQR outside the quartiles)

  // Half-width of the median's confidence interval over the median (0.01 = ±1 %); infinity if the median is <= 0.
  double rel_ci() const;
};

// The `percent`-th percentile (0 to 100) of ascending `sorted` samples, linearly
// interpolated between the two nearest ranks: numpy.percentile's default
// ("linear"), computed the same way so the two agree to the bit.
// Throws std::invalid_argument for no samples or `percent` outside [0, 100].
PYHIPBENCH_API double percentile(const std::vector<double>& sorted, double percent);

// The median's distribution-free `confidence` interval from ascending `sorted`
// samples, µs. With too few samples for the confidence asked, the interval is
// the whole sample range (the widest honest answer). Throws
// std::invalid_argument for no samples or `confidence` outside (0, 1).
PYHIPBENCH_API std::pair<double, double> median_ci(const std::vector<double>& sorted, double confidence = 0.95);

// All statistics of `times_us` (any order), µs. Throws std::invalid_argument
// for no samples, a sample that is not finite, or `confidence` outside (0, 1).
PYHIPBENCH_API Summary summarize(std::vector<double> times_us, double confidence = 0.95);

// How B compares with A, judged from the relative difference of their medians,
// d = B / A - 1: its estimate `difference` and its 95 % confidence interval
// [`low`, `high`], against the smallest difference that matters, `threshold`
// (0.02 = 2 %):
//   kSame:     the whole interval within ±threshold (any difference is smaller);
//   kSlower:   the interval wholly above 0 and the estimate above +threshold;
//   kFaster:   the interval wholly below 0 and the estimate below -threshold;
//   kCantTell: anything else (too few or too noisy samples to say either).
// nvbench's compare script (SAME / FAST / SLOW / AMBG) is the anchor. The one
// rule for `pyhipbench compare` and for racing (StopRule::race_threshold).
enum class Verdict { kFaster, kSlower, kSame, kCantTell };
inline constexpr double kDefaultThreshold = 0.02;
PYHIPBENCH_API Verdict judge(double difference, double low, double high, double threshold = kDefaultThreshold);
// "faster", "slower", "same" or "can't tell".
PYHIPBENCH_API const char* to_string(Verdict verdict);

}  // namespace pyhipbench
