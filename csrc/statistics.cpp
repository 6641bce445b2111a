#include "pyhipbench/statistics.hpp"

// Percentiles and the normal quantile round as numpy's and CPython's do, one
// operation at a time: no fused multiply-add (the default where the target has
// one, e.g. aarch64).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pyhipbench {

namespace {

// The standard normal distribution's inverse CDF: Wichura's AS241 (PPND16), as
// Python's statistics.NormalDist.inv_cdf computes it, operation for operation.
double normal_inv_cdf(double p) {
  const double q = p - 0.5;
  double num, den;
  if (std::fabs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    num = (((((((2.5090809287301226727e+3 * r + 3.3430575583588128105e+4) * r + 6.7265770927008700853e+4) * r +
               4.5921953931549871457e+4) *
                  r +
              1.3731693765509461125e+4) *
                 r +
             1.9715909503065514427e+3) *
                r +
            1.3314166789178437745e+2) *
               r +
           3.3871328727963666080e+0) *
          q;
    den = (((((((5.2264952788528545610e+3 * r + 2.8729085735721942674e+4) * r + 3.9307895800092710610e+4) * r +
               2.1213794301586595867e+4) *
                  r +
              5.3941960214247511077e+3) *
                 r +
             6.8718700749205790830e+2) *
                r +
            4.2313330701600911252e+1) *
               r +
           1.0);
    return num / den;
  }
  double r = std::sqrt(-std::log(q <= 0.0 ? p : 1.0 - p));
  if (r <= 5.0) {
    r = r - 1.6;
    num = (((((((7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r + 2.41780725177450611770e-1) * r +
               1.27045825245236838258e+0) *
                  r +
              3.64784832476320460504e+0) *
                 r +
             5.76949722146069140550e+0) *
                r +
            4.63033784615654529590e+0) *
               r +
           1.42343711074968357734e+0);
    den = (((((((1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r + 1.51986665636164571966e-2) * r +
               1.48103976427480074590e-1) *
                  r +
              6.89767334985100004550e-1) *
                 r +
             1.67638483018380384940e+0) *
                r +
            2.05319162663775882187e+0) *
               r +
           1.0);
  } else {
    r = r - 5.0;
    num = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 1.24266094738807843860e-3) * r +
               2.65321895265761230930e-2) *
                  r +
              2.96560571828504891230e-1) *
                 r +
             1.78482653991729133580e+0) *
                r +
            5.46378491116411436990e+0) *
               r +
           6.65790464350110377720e+0);
    den = (((((((2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r + 1.84631831751005468180e-5) * r +
               7.86869131145613259100e-4) *
                  r +
              1.48753612908506148525e-2) *
                 r +
             1.36929880922735805310e-1) *
                r +
            5.99832206555887937690e-1) *
               r +
           1.0);
  }
  const double x = num / den;
  return q < 0.0 ? -x : x;
}

void check_samples(size_t count) {
  if (count == 0) throw std::invalid_argument("no samples to summarize: expected at least one time, µs");
}

void check_confidence(double confidence) {
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("confidence=" + std::to_string(confidence) + ": expected a number in (0, 1)");
  }
}

}  // namespace

double Summary::rel_ci() const {
  return median > 0 ? (ci_high - ci_low) / (2 * median) : std::numeric_limits<double>::infinity();
}

double percentile(const std::vector<double>& sorted, double percent) {
  check_samples(sorted.size());
  if (!(percent >= 0 && percent <= 100)) {
    throw std::invalid_argument("percent=" + std::to_string(percent) + ": expected a number in [0, 100]");
  }
  // numpy: index (n - 1) * q, the neighbours floor and floor + 1 (both the last
  // past the end), and its lerp, which interpolates from the nearer end.
  const size_t last = sorted.size() - 1;
  const double index = static_cast<double>(last) * (percent / 100);
  const double below = std::floor(index);
  const size_t lower = index >= static_cast<double>(last) ? last : static_cast<size_t>(below);
  const size_t upper = index >= static_cast<double>(last) ? last : lower + 1;
  const double weight = index - below;
  const double a = sorted[lower], b = sorted[upper];
  const double difference = b - a;
  return weight >= 0.5 ? b - difference * (1 - weight) : a + difference * weight;
}

std::pair<double, double> median_ci(const std::vector<double>& sorted, double confidence) {
  check_samples(sorted.size());
  check_confidence(confidence);
  const double n = static_cast<double>(sorted.size());
  const double half = normal_inv_cdf(0.5 + confidence / 2) * std::sqrt(n) / 2;
  const double low = std::max(std::floor(n / 2 - half), 0.0);  // 0-based ranks
  const double high = std::min(std::ceil(n / 2 + half), n - 1);
  return {sorted[static_cast<size_t>(low)], sorted[static_cast<size_t>(high)]};
}

Summary summarize(std::vector<double> times_us, double confidence) {
  check_samples(times_us.size());
  check_confidence(confidence);
  for (size_t i = 0; i < times_us.size(); ++i) {
    if (!std::isfinite(times_us[i])) {
      throw std::invalid_argument("sample " + std::to_string(i) + " is " + std::to_string(times_us[i]) +
                                  ": expected finite times, µs");
    }
  }
  std::sort(times_us.begin(), times_us.end());
  Summary s;
  s.count = times_us.size();
  s.confidence = confidence;
  s.median = percentile(times_us, 50);
  std::tie(s.ci_low, s.ci_high) = median_ci(times_us, confidence);
  double sum = 0;
  for (double t : times_us) sum += t;
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double t : times_us) squares += (t - s.mean) * (t - s.mean);
    s.stdev = std::sqrt(squares / static_cast<double>(s.count - 1));
  }
  s.min = times_us.front();
  s.max = times_us.back();
  s.p10 = percentile(times_us, 10);
  s.p90 = percentile(times_us, 90);
  const double q1 = percentile(times_us, 25), q3 = percentile(times_us, 75);
  const double fence = 1.5 * (q3 - q1);
  for (double t : times_us) s.outliers += (t < q1 - fence || t > q3 + fence) ? 1 : 0;
  return s;
}

Verdict judge(double difference, double low, double high, double threshold) {
  if (low >= -threshold && high <= threshold) return Verdict::kSame;
  if (low > 0 && difference > threshold) return Verdict::kSlower;
  if (high < 0 && difference < -threshold) return Verdict::kFaster;
  return Verdict::kCantTell;
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kSame:
      return "same";
    case Verdict::kCantTell:
      break;
  }
  return "can't tell";
}

}  // namespace pyhipbench
