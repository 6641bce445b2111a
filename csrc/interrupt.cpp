#include "interrupt.hpp"

#include <atomic>
#include <chrono>
#include <string>

#include "pyhipbench/errors.hpp"
#include "pyhipbench/interrupt.hpp"

namespace pyhipbench {

namespace {

std::atomic<bool> requested{false};
std::atomic<InterruptCheck> host_check{nullptr};
static_assert(std::atomic<bool>::is_always_lock_free, "request_interrupt() must be async-signal-safe");

}  // namespace

void request_interrupt() noexcept { requested.store(true, std::memory_order_relaxed); }

void set_interrupt_check(InterruptCheck check) noexcept { host_check.store(check); }

bool interrupt_flagged() { return requested.load(std::memory_order_relaxed); }

bool interrupt_requested() {
  if (interrupt_flagged()) return true;
  const InterruptCheck check = host_check.load(std::memory_order_relaxed);
  if (check == nullptr) return false;
  // The host's check may take a lock (Python's, the GIL): asked once a period, not at every look.
  thread_local auto last_checked = std::chrono::steady_clock::time_point{};
  const auto now = std::chrono::steady_clock::now();
  if (now - last_checked < std::chrono::duration<double>(kInterruptPollS)) return false;
  last_checked = now;
  return check();
}

void throw_interrupted(const std::string& timed, bool device_abandoned) {
  requested.store(false, std::memory_order_relaxed);
  if (!device_abandoned) throw Interrupted("interrupted while measuring " + timed, false);
  const auto grace_ms = std::to_string(static_cast<int>(kInterruptGraceS * 1000));
  throw Interrupted("interrupted while measuring " + timed + ", whose work still ran on the GPU " + grace_ms +
                        " ms later: the device is given up (nothing on it can be freed while a kernel runs); "
                        "end this process to release it",
                    true);
}

void stop_if_interrupted(const std::string& timed) {
  if (interrupt_requested()) throw_interrupted(timed, false);
}

}  // namespace pyhipbench
