#pragma once

namespace pyhipbench {

// The outcome of a sequence of driver calls in a hot loop: code 0, or the
// failing call's name and status (turned into an exception outside the loop).
struct Status {
  int code;
  const char* call;
};

}  // namespace pyhipbench
