// pyhipbench._core's interrupts: Python's signal handlers run from inside a measurement, and
// request_interrupt for a thread that wants another's measurement stopped.
#include <pybind11/pybind11.h>

#include <exception>

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

// An Interrupted whose device was given up adds its message to the exception a handler raised, as a note
// (BaseException.add_note's __notes__): the caller learns that the process must end.
void note_on_pending_error(const char* note) {
  py::error_already_set pending;  // fetched, to be restored with its note
  const py::object& error = pending.value();
  py::list notes = py::hasattr(error, "__notes__") ? py::list(error.attr("__notes__")) : py::list();
  notes.append(note);
  error.attr("__notes__") = notes;
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
      if (PyErr_Occurred() == nullptr) {
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());  // request_interrupt(): no handler raised
      } else if (e.device_abandoned()) {
        note_on_pending_error(e.what());
      }
    }
  });
  m.def("request_interrupt", &request_interrupt,
        "Stops the measurement in progress on any thread (it raises KeyboardInterrupt naming what it measured) "
        "within 50 ms, or the next one to start.");
}

}  // namespace pyhipbench::bindings
