// The measuring side of pyhipbench/interrupt.hpp: where a measurement looks for a request.
#pragma once

#include <string>

namespace pyhipbench {

// Whether request_interrupt() was called (and not yet answered by an
// Interrupted): one atomic load, for the loops that issue launches.
bool interrupt_flagged();

// Whether a request came, or the host's check, when its period has passed on
// this thread, says stop.
bool interrupt_requested();

// Throws Interrupted for `timed` (what was being measured, "kernel 'copy'"),
// the device given up or not; the request is answered (cleared).
[[noreturn]] void throw_interrupted(const std::string& timed, bool device_abandoned);

// throw_interrupted(timed, false) if interrupt_requested().
void stop_if_interrupted(const std::string& timed);

}  // namespace pyhipbench
