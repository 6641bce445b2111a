"""Output verification: a fast wrong candidate must not win a tuning run.

`bench(..., expect=...)` launches the kernel once on each argument set, before
anything is timed, and checks the outputs of that launch, set by set, as
rocMLIR's tuning driver and Kernel Tuner do. Each set starts from its initial
contents (set 0 is the caller's arrays, set s > 0 their copies; a shared()
array, one buffer in every set, is given its initial contents back before
each set's launch), so an output the kernel computes in place is compared
after exactly one launch on it.

`expect` is either
- reference arrays: a list aligned with the arguments (None where nothing is
  checked) or a dict {argument index: reference}; each reference a host array
  of the argument's shape, compared with `numpy.isclose(out, ref, rtol, atol,
  equal_nan=True)` (integer and bool outputs against integer or bool
  references: exactly); or
- a callable `check(outputs) -> bool`: `outputs` is a list aligned with the
  arguments holding a host copy of each array argument (None for scalars and
  pointers); it returns True when they are right (False, or an AssertionError,
  is a mismatch).

The launches go through the core's events timer (one launch per sample,
`run(plan, 1, s)`): the same plan, argument buffers and driver path as the
timed launches, with no Python inside the timed loop.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Union

import numpy as np

from .. import _core
from .._device.memory import DeviceArray
from .._launch.args import Argument, Shared
from .._values import integer, real, show
from ..errors import BenchError, OutputMismatch
from .timers import core_timer

if TYPE_CHECKING:
    from .._device.device import Device
    from .._launch.argument_sets import ArgumentSets

Check = Callable[[list[Union[np.ndarray, None]]], bool]
Expect = Union[Sequence, Mapping, Check, None]
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8  # numpy.isclose's


def checked_tolerances(atol: float | None, rtol: float | None) -> tuple[float, float]:
    """(atol, rtol), each a float >= 0 (None: numpy.isclose's default); BenchError naming one that is not.
    The CLI asks before a device is opened; Expectation, when made."""
    return (real("atol", DEFAULT_ATOL if atol is None else atol, minimum=0),
            real("rtol", DEFAULT_RTOL if rtol is None else rtol, minimum=0))


class Expectation:
    """What the outputs of one launch on each set must be; checked on the CPU when made."""

    def __init__(self, expect: Expect, args: list[Argument], kernel_name: str, atol: float = DEFAULT_ATOL,
                 rtol: float = DEFAULT_RTOL) -> None:
        self.atol, self.rtol = checked_tolerances(atol, rtol)
        self._args, self._kernel_name = args, kernel_name
        self._check: Check | None = None
        self._references: dict[int, np.ndarray] = {}
        if callable(expect) and not isinstance(expect, (Mapping, Sequence)):
            self._check = expect
        elif isinstance(expect, Mapping):
            for key, reference in expect.items():
                index = integer("expect key", key, 0, len(args) - 1, unit="an argument's position")
                self._add(index, reference)
        elif isinstance(expect, Sequence) and not isinstance(expect, (str, bytes)):
            if len(expect) != len(args):
                raise BenchError(f"expect has {len(expect)} entries for {len(args)} arguments; expected one per "
                                 "argument (None where nothing is checked), or a dict {argument index: reference}")
            for index, reference in enumerate(expect):
                if reference is not None:
                    self._add(index, reference)
        else:
            raise BenchError(f"expect={show(expect)}: expected a list of reference arrays aligned with the "
                             "arguments, a dict {argument index: reference}, or a callable check(outputs) -> bool")
        if self._check is None and not self._references:
            raise BenchError("expect names no reference array (every entry is None); expected at least one, "
                             "or expect=None to skip verification")

    def _add(self, index: int, reference: object) -> None:
        arg = self._args[index]
        array = _array_of(arg)
        where = f"expect[{index}]"
        if array is None:
            raise BenchError(f"{where}: argument {index} is {type(arg).__name__}, which has no shape or dtype "
                             "to check; expected references for device arrays and tensors only")
        if isinstance(reference, DeviceArray):
            raise BenchError(f"{where}: a DeviceArray reference; expected a host array (array.to_numpy())")
        try:  # a GPU tensor refuses here (torch: "can't convert cuda:0 device type tensor to numpy")
            host = np.asarray(reference)
        except Exception as e:  # whatever its own conversion raises: the package's error, chained
            raise BenchError(f"{where}: a {type(reference).__name__} is not a host array ({_text_of(e)}); expected "
                             "one (numpy; torch: tensor.cpu().numpy())") from e
        if host.dtype.kind not in "biufc":
            raise BenchError(f"{where}: a reference of dtype {host.dtype}; expected numbers (bool, integer, "
                             "float or complex)")
        if host.shape != array.shape:
            raise BenchError(f"{where}: a reference of shape {host.shape} for argument {index} of shape "
                             f"{array.shape}; expected the same shape")
        self._references[index] = host

    def verify(self, device: Device, plan: _core.LaunchPlan, sets: ArgumentSets) -> None:
        """Launches `plan` once on each set, then checks that set's outputs; OutputMismatch at the first wrong one."""
        timer = core_timer(device, "events")
        # Shared arrays are one buffer in every set: each set's launch gets them back as they started.
        shared = {id(a.array): a.array for a in self._args if isinstance(a, Shared)} if len(sets) > 1 else {}
        initial = [(array, array.to_numpy()) for array in shared.values()]
        for s in range(len(sets)):
            for array, contents in initial if s else ():
                array.copy_from(contents)
            timer.run(plan, 1, s)
            if self._check is not None:
                self._run_check(s, [None if _array_of(a) is None else self._read(device, sets, s, a)
                                    for a in self._args])
            else:
                for index, reference in self._references.items():
                    self._compare(s, index, self._read(device, sets, s, self._args[index]), reference)

    @staticmethod
    def _read(device: Device, sets: ArgumentSets, s: int, arg: Argument) -> np.ndarray:
        array = _array_of(arg)
        address = sets.address(s, arg) if isinstance(arg, DeviceArray) else array.address
        host = np.empty(array.shape, array.dtype)
        device.backend.copy_to_host(host, address)
        return host

    def _where(self, s: int, index: int) -> str:
        return f"kernel {self._kernel_name!r}, argument {index}, set {s}"

    def _compare(self, s: int, index: int, out: np.ndarray, reference: np.ndarray) -> None:
        if out.dtype.kind in "biu" and reference.dtype.kind in "biu":
            wrong = out != reference  # exact: a float conversion would blur large integers
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                wrong = ~np.isclose(out, reference, rtol=self.rtol, atol=self.atol, equal_nan=True)
        if wrong.any():
            position = tuple(int(p) for p in np.unravel_index(int(np.flatnonzero(wrong)[0]), out.shape))
            got, want = out[position].item(), reference[position].item()
            raise OutputMismatch(
                f"{self._where(s, index)}: element {list(position)} is {got!r}, expected {want!r} "
                f"(rtol={self.rtol}, atol={self.atol}); {int(wrong.sum())} of {wrong.size} elements differ",
                argument=index, set_index=s, index=position, got=got, expected=want)

    def _run_check(self, s: int, outputs: list[np.ndarray | None]) -> None:
        try:
            verdict = self._check(outputs)
        except AssertionError as e:
            raise OutputMismatch(f"kernel {self._kernel_name!r}, set {s}: the expect check failed: {e}",
                                 set_index=s) from e
        except Exception as e:  # the check's own bug: the package's error, so `except hb.Error` holds it
            raise BenchError(f"kernel {self._kernel_name!r}, set {s}: the expect check {_name_of(self._check)} "
                             f"raised {type(e).__name__}: {_text_of(e)}; expected it to return True or False "
                             "(or raise AssertionError for a mismatch)") from e
        if not isinstance(verdict, (bool, np.bool_)):
            raise BenchError(f"the expect check returned {show(verdict)} for set {s}; expected True (the outputs "
                             "are right) or False")
        if not verdict:
            raise OutputMismatch(f"kernel {self._kernel_name!r}, set {s}: the expect check returned False",
                                 set_index=s)


def _array_of(arg: Argument) -> DeviceArray | None:
    """The device array behind an argument (bare or shared), or None for scalars and pointers."""
    if isinstance(arg, Shared):
        return arg.array
    return arg if isinstance(arg, DeviceArray) else None


def _name_of(check: object) -> str:
    """The check callable as a message names it: its qualified name, or its type's."""
    name = getattr(check, "__qualname__", None)
    return f"{name}()" if isinstance(name, str) else f"(a {type(check).__name__})"


def _text_of(error: BaseException) -> str:
    """str(error), or its type's name where even that fails."""
    try:
        return str(error)
    except Exception:
        return f"(a {type(error).__name__} whose str() raised)"
