// How many argument sets to rotate through: the rule Python's
// pyhipbench.rotation applies, in one place for both.
//
// Rotating R copies of the argument buffers means no launch finds the
// previous one's data in cache. With one set of S bytes and a last-level cache
// of C bytes:
//
//     R = 2                  if S >= C   (the other set has been evicted)
//     R = 2 * ceil(C / S)    otherwise   (2x the sets needed to overflow the cache)
//
// then no more than the run's launches, and capped so the R - 1 extra copies
// fit in free device memory less a headroom (headroom_bytes). R = 1 is warm.
// This yields a *dirty* cold cache (earlier launches' outputs are still being
// written back), which is why every result names its cache state.
#pragma once

#include "pyhipbench/export.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace pyhipbench {

// Device memory left free for the driver, code and the kernel's scratch, bytes:
// kHeadroomFraction of `total_bytes`, at least kMinHeadroomBytes.
constexpr uint64_t kMinHeadroomBytes = uint64_t{256} << 20;
constexpr double kHeadroomFraction = 0.05;
PYHIPBENCH_API uint64_t headroom_bytes(uint64_t total_bytes);

struct PYHIPBENCH_API Rotation {
  size_t sets = 1;                                         // R: argument sets used in turn (1 = warm)
  size_t wanted = 1;                                       // R before the free-memory cap (== sets unless capped)
  std::string reason;                                      // why R is what it is, in words
  bool capped_by_memory() const { return sets < wanted; }  // the caller should warn: the state is less cold
};

// R for one set of `set_bytes` (the arrays that rotate), against a last-level
// cache of `llc_bytes` and `free_bytes` of `total_bytes` device memory.
// `rotate`: R itself (1 = warm), or nullopt to choose it. `launches`: the
// most launches the run makes (warm-up included); a chosen R is no larger,
// since a set no launch reaches costs memory and copying and changes nothing.
// Throws std::invalid_argument if `rotate` is 0, asks to rotate with nothing
// to rotate, or the sets cannot fit in free memory less the headroom.
PYHIPBENCH_API Rotation plan_rotation(uint64_t set_bytes, uint64_t llc_bytes, uint64_t free_bytes, uint64_t total_bytes,
                                      std::optional<size_t> rotate = std::nullopt,
                                      std::optional<size_t> launches = std::nullopt);

}  // namespace pyhipbench
