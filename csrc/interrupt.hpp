// The measuring side of pyhipbench/interrupt.hpp: where a measurement looks for a request.
#pragma once

#include <string>

namespace pyhipbench {

// Whether a request came (clearing it) or the host's check, when its period
// has passed on this thread, says stop.
bool interrupt_requested();

// Throws Interrupted for `timed` (what was being measured, "kernel 'copy'"):
// the device given up or not.
[[noreturn]] void throw_interrupted(const std::string& timed, bool device_abandoned);

// throw_interrupted(timed, false) if interrupt_requested().
void stop_if_interrupted(const std::string& timed);

}  // namespace pyhipbench
