// Stopping a measurement from outside it: Ctrl-C, SIGTERM, a tuner's deadline.
//
// A measurement looks for a request between its runs, every kInterruptLaunches
// launches (or calls) it issues, and every kInterruptPollS while it waits for
// the GPU (whose end it polls rather than blocks on); the host's check (below)
// is asked between runs and while waiting only, never among the launches of
// a run, whose samples a stall there would change. On a request, measure()
// throws Interrupted (errors.hpp) and keeps nothing of the measurement in
// progress; what finished before is the caller's. If the GPU is still running
// the measurement's work kInterruptGraceS after the request (a kernel that
// never returns), the device is given up: Interrupted::device_abandoned() is
// true, and this process can use the device no more (memory and modules
// cannot be freed under a running kernel): it should exit.
#pragma once

#include <cstddef>

#include "pyhipbench/export.hpp"

namespace pyhipbench {

inline constexpr double kInterruptPollS = 0.05;    // the longest a request waits while the GPU runs, s
inline constexpr double kInterruptGraceS = 0.5;    // how long the GPU may take to finish after a request, s
inline constexpr size_t kInterruptLaunches = 256;  // launches issued between two looks for a request

// Stops the measurement in progress, or the next one to start if none is:
// one measurement (the first to see the request, where several run at once)
// throws Interrupted and clears it. Async-signal-safe (one lock-free atomic
// store), so a signal handler may call it.
PYHIPBENCH_API void request_interrupt() noexcept;

// A host's own check, asked at the same points as the request, at most every
// kInterruptPollS per thread: returning true stops the measurement as a
// request does. Python's bindings set one that runs the interpreter's signal
// handlers (its main thread only), so Ctrl-C raises KeyboardInterrupt from
// inside a measurement. nullptr: none (the default).
using InterruptCheck = bool (*)();
PYHIPBENCH_API void set_interrupt_check(InterruptCheck check) noexcept;

}  // namespace pyhipbench
