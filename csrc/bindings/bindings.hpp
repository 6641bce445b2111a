// The parts of the pybind11 module pyhipbench._core (module.cpp), one per bound
// concept, each in the file of its name; each adds its classes and functions
// to `m`. pybind11 writes a signature's type names when the function is bound
// (a type bound later reads as its C++ name), so the order module.cpp calls
// them in is part of the signatures Python sees.
#pragma once

#include <pybind11/pybind11.h>

namespace pyhipbench::bindings {

void bind_errors(pybind11::module_& m);
void bind_interrupt(pybind11::module_& m);
void bind_launch_limits(pybind11::module_& m);
void bind_launch_plan(pybind11::module_& m);
void bind_call_plan(pybind11::module_& m);
void bind_activity(pybind11::module_& m);
void bind_driver(pybind11::module_& m);
void bind_rotated_buffers(pybind11::module_& m);
void bind_timer(pybind11::module_& m);
void bind_statistics(pybind11::module_& m);
void bind_stop_rule(pybind11::module_& m);
void bind_measurement(pybind11::module_& m);
void bind_rotation(pybind11::module_& m);

}  // namespace pyhipbench::bindings
