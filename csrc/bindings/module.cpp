// pybind11 module pyhipbench._core: launch plans, drivers and timers.
#include <pybind11/pybind11.h>

#include "bindings/bindings.hpp"

PYBIND11_MODULE(_core, m) {
  using namespace pyhipbench::bindings;
  m.doc() = "pyhipbench's C++ core: launch plans, driver libraries and the timers that run them";
  bind_errors(m);
  bind_interrupt(m);
  bind_launch_limits(m);
  bind_launch_plan(m);
  bind_call_plan(m);
  bind_activity(m);
  bind_driver(m);
  bind_rotated_buffers(m);
  bind_timer(m);
  bind_statistics(m);
  bind_stop_rule(m);
  bind_measurement(m);
  bind_rotation(m);
}
