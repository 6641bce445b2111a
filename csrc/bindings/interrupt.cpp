// pyhipbench._core's interrupts: Python's signal handlers run from inside a measurement, and
// request_interrupt for a thread that wants another's measurement stopped.
#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "bindings/bindings.hpp"
#include "pyhipbench/errors.hpp"
#include "pyhipbench/interrupt.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

namespace {

unsigned long main_thread = 0;  // Python's main thread (threading.main_thread().ident), the one that runs handlers

// The core's host check (interrupt.hpp): on Python's main thread, the handlers of the signals that came
// (Ctrl-C's raises KeyboardInterrupt), run now rather than when the measurement returns. The exception a
// handler raised stays set on the thread and is the one Python sees (the translator below keeps it).
bool run_signal_handlers() {
  if (PyThread_get_thread_ident() != main_thread) return false;
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

// The Python exception an Interrupted leaves: the one a signal handler raised (Ctrl-C's KeyboardInterrupt),
// else a KeyboardInterrupt saying what was measured. It carries `device_abandoned`; where the device was
// given up, the message is added to a handler's exception as a note (BaseException.add_note's __notes__),
// so that the caller reads that the process must end.
void raise_interrupted(const Interrupted& e) {
  if (PyErr_Occurred() == nullptr) PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
  py::error_already_set pending;  // fetched, to be restored with what it carries
  const py::object& error = pending.value();
  error.attr("device_abandoned") = e.device_abandoned();
  if (e.device_abandoned() && std::string(py::str(error)) != e.what()) {
    py::list notes = py::hasattr(error, "__notes__") ? py::list(error.attr("__notes__")) : py::list();
    notes.append(e.what());
    error.attr("__notes__") = notes;
  }
  pending.restore();
}

}  // namespace

void bind_interrupt(py::module_& m) {
  main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  set_interrupt_check(run_signal_handlers);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      raise_interrupted(e);
    }
  });
  m.def("request_interrupt", &request_interrupt,
        "Stops the measurement in progress on any thread (it raises KeyboardInterrupt naming what it measured) "
        "within 50 ms, or the next one to start.");
}

}  // namespace pyhipbench::bindings
