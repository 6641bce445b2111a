#include "pyhipbench/rotation.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace pyhipbench {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

std::string in_units(uint64_t bytes, uint64_t unit, const char* format) {
  char text[64];
  std::snprintf(text, sizeof text, format, static_cast<double>(bytes) / static_cast<double>(unit));
  return text;
}
std::string mib(uint64_t bytes) { return in_units(bytes, kMiB, "%.1f MiB"); }
std::string gib(uint64_t bytes) { return in_units(bytes, kGiB, "%.2f GiB"); }

}  // namespace

uint64_t headroom_bytes(uint64_t total_bytes) {
  return std::max(kMinHeadroomBytes, static_cast<uint64_t>(static_cast<double>(total_bytes) * kHeadroomFraction));
}

Rotation plan_rotation(uint64_t set_bytes, uint64_t llc_bytes, uint64_t free_bytes, uint64_t total_bytes,
                       std::optional<size_t> rotate, std::optional<size_t> launches) {
  if (launches && *launches == 0) throw std::invalid_argument("launches=0: expected a launch count >= 1, or none");
  const uint64_t headroom = headroom_bytes(total_bytes);
  const uint64_t available = free_bytes > headroom ? free_bytes - headroom : 0;
  const uint64_t fits = 1 + (set_bytes != 0 ? available / set_bytes : 0);  // sets that fit, the original included
  const std::string memory = gib(free_bytes) + " free less " + gib(headroom) + " headroom";
  if (rotate) {
    const size_t r = *rotate;
    if (r == 0) throw std::invalid_argument("rotate=0: expected 'auto' or a set count >= 1");
    if (set_bytes == 0 && r > 1) {
      throw std::invalid_argument("rotate=" + std::to_string(r) +
                                  " with set_bytes=0: there is nothing to rotate; expected rotate=1, or the bytes "
                                  "of the buffers that rotate");
    }
    if (r > fits) {
      throw std::invalid_argument("rotate=" + std::to_string(r) + " sets of " + std::to_string(set_bytes) +
                                  " bytes cannot fit in device memory: " + memory + " holds " + std::to_string(fits) +
                                  " (the original included)");
    }
    return {r, r, "set by the caller (rotate=" + std::to_string(r) + ")"};
  }
  if (set_bytes == 0) return {1, 1, "no rotated device array: nothing to rotate"};
  size_t wanted = 2;
  std::string reason;
  if (set_bytes >= llc_bytes) {
    reason = "one set (" + mib(set_bytes) + ") >= last-level cache (" + mib(llc_bytes) + "): 2 sets";
  } else {
    wanted = 2 * static_cast<size_t>((llc_bytes + set_bytes - 1) / set_bytes);
    reason = "2 x ceil(last-level cache " + mib(llc_bytes) + " / set " + mib(set_bytes) +
             ") = " + std::to_string(wanted) + " sets";
  }
  if (launches && wanted > *launches) {
    wanted = *launches;
    reason += ", capped to " + std::to_string(wanted) + ": the run makes no more launches";
  }
  if (wanted <= fits) return {wanted, wanted, reason};
  if (fits < 2) {
    throw std::invalid_argument("rotated sets cannot fit in device memory: a second set of " +
                                std::to_string(set_bytes) + " bytes needs more than the " + memory +
                                "; expected rotate=1 (one set), or smaller buffers");
  }
  const size_t capped = static_cast<size_t>(fits);
  return {capped, wanted,
          reason + ", capped to " + std::to_string(capped) + " by free memory (" + gib(free_bytes) + " free, " +
              gib(headroom) + " headroom): " + std::to_string(wanted - capped) + " sets short"};
}

}  // namespace pyhipbench
