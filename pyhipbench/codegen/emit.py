"""LLVM code emission in a worker process, so that an LLVM abort costs one compile.

IR that verifies can still be impossible to select (an MFMA intrinsic for
gfx1100, ``llvm.nvvm.wgmma.*`` for sm_90 rather than sm_90a, a name NVPTX
cannot spell): LLVM then prints ``LLVM ERROR: ...`` and calls abort(), which
no Python code can catch. So emission runs in a worker process
(``emit_worker.py``), started on first use and reused across compiles; a
worker that dies becomes a ``CodegenError`` quoting what LLVM printed, and the
next compile starts a new one. The worker is a plain ``python emit_worker.py``
subprocess rather than a ``multiprocessing`` child: it does not re-import the
caller's ``__main__`` (a tuner script without a ``__main__`` guard works) and
its stderr is captured without touching the parent's.

Workers are pooled: a thread that finds none idle starts another, so threads
compile in parallel as they did in-process. A forked child starts its own.
The cost, measured by bench/compile_cost.py, is in docs/codegen.md.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import llvmlite

from ..errors import CodegenError
from . import ir
from .emit_worker import read_message, write_message

__all__ = ["assembly", "check_target", "known_processors"]

_WORKER = Path(__file__).with_name("emit_worker.py")
_UNKNOWN_PROCESSOR = "is not a recognized processor for this target"
_UNKNOWN_FEATURE = "is not a recognized feature for this target"


class _WorkerDied(Exception):
    """The worker exited during a request; ``status`` says how."""

    def __init__(self, status: str, stderr: str) -> None:
        super().__init__(status)
        self.status, self.stderr = status, stderr


class _WorkerGone(Exception):
    """The worker had exited before the request reached it (not the request's fault)."""


class _Worker:
    """One code generator process and the file its stderr goes to."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The worker imports llvmlite from where this process found it.
        paths = [str(Path(llvmlite.__file__).parent.parent), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        try:
            self._stderr = tempfile.TemporaryFile()
            # Appending writes let the parent empty the file between requests.
            flags = fcntl.fcntl(self._stderr.fileno(), fcntl.F_GETFL)
            fcntl.fcntl(self._stderr.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
            self.process = subprocess.Popen(
                [sys.executable, str(_WORKER)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
            )
        except OSError as e:
            raise CodegenError(f"cannot start the code generator process ({sys.executable}): {e}") from None

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, request: tuple) -> tuple[object, str]:
        """(reply, what the worker wrote on stderr meanwhile); raises _WorkerDied."""
        self._stderr.seek(0)
        self._stderr.truncate()
        try:
            write_message(self.process.stdin, request)
        except (BrokenPipeError, ConnectionResetError):
            raise _WorkerGone() from None
        reply = read_message(self.process.stdout)
        if reply is None:
            code = self.process.wait()
            raise _WorkerDied(_exit_status(code), self._read_stderr())
        return reply, self._read_stderr()

    def _read_stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self) -> None:
        """Let the worker finish (it exits when stdin closes), then free its pipes."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.process.stdout.close()
        self._stderr.close()

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


_lock = threading.Lock()
_idle: list[_Worker] = []


def _forget_workers() -> None:
    # In a forked child the pool's pipes are shared with the parent's workers:
    # drop them (the parent still owns those processes) and start afresh, with
    # a new lock (another thread may have held the old one at the fork).
    global _lock
    _lock = threading.Lock()
    _idle.clear()


def _close_workers() -> None:
    with _lock:
        while _idle:
            _idle.pop().close()


os.register_at_fork(after_in_child=_forget_workers)
atexit.register(_close_workers)


def _run(request: tuple) -> tuple[object, str]:
    """Send ``request`` to an idle worker (or a new one); (value, stderr).

    A worker is returned to the pool only after a complete request, so an
    interrupt mid-request (KeyboardInterrupt) never leaves a half-read reply
    for the next caller. A worker that died while idle is replaced silently
    (also when that is found only on sending); one that dies during the
    request raises _WorkerDied.
    """
    for attempt in (1, 2):
        with _lock:
            while _idle and not _idle[-1].alive():
                _idle.pop().close()
            worker = _idle.pop() if _idle else None
        if worker is None:
            worker = _Worker()
        done = False
        try:
            (status, value), stderr = worker.call(request)
            done = True
        except _WorkerGone:
            if attempt == 2:
                raise CodegenError("the code generator process exited before it could take a request") from None
            continue
        finally:
            if done:
                with _lock:
                    _idle.append(worker)
            else:
                worker.kill()
                worker.close()
        break
    if status != "ok":
        raise CodegenError(f"LLVM failed: {value}\n{stderr.strip()}".strip())
    return value, stderr


def _quote(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    # An abort prints LLVM's message, then a stack dump; the message is what
    # a user needs, so at most 20 lines are quoted.
    return "\n".join(lines[:20]) or "(LLVM printed nothing)"


def assembly(module: ir.Module, triple: str, cpu: str, features: str, kernels: list[str]) -> str:
    """The module's assembly (AMDGPU) or PTX text for ``cpu``, emitted in a worker.

    An LLVM abort raises CodegenError naming the kernels and the target and
    quoting LLVM's message. Warnings LLVM prints are discarded.
    """
    bitcode = module.ref.as_bitcode()
    try:
        text, _ = _run(("emit", triple, cpu, features, bitcode))
    except _WorkerDied as e:
        raise CodegenError(
            f"LLVM aborted while generating code for {cpu} (kernel{'s' if len(kernels) > 1 else ''} "
            f"{', '.join(kernels)}; {e.status}):\n{_quote(e.stderr)}\n"
            "The IR verifies but LLVM cannot compile it for this target: an intrinsic or "
            "feature the processor lacks is the usual cause (e.g. MFMA on gfx11, wgmma on "
            "sm_90 instead of sm_90a)."
        ) from None
    return text


_probed: dict[tuple[str, str, str], str] = {}


def check_target(triple: str, cpu: str, features: str = "") -> str:
    """"" when LLVM knows processor ``cpu`` and ``features`` for ``triple``,
    else LLVM's complaint (e.g. "'sm_1' is not a recognized processor ...").
    Cached per process.
    """
    key = (triple, cpu, features)
    if key not in _probed:
        try:
            _, stderr = _run(("probe", triple, cpu, features))
        except _WorkerDied as e:
            raise CodegenError(
                f"LLVM aborted creating a target machine for {cpu}{' with ' + features if features else ''}: "
                f"{_quote(e.stderr)}"
            ) from None
        complaints = [line.strip() for line in stderr.splitlines()
                      if _UNKNOWN_PROCESSOR in line or _UNKNOWN_FEATURE in line]
        _probed[key] = "; ".join(dict.fromkeys(complaints))
    return _probed[key]


_listed: dict[str, tuple[str, ...]] = {}


def known_processors(triple: str) -> tuple[str, ...]:
    """The processors LLVM (llvmlite's) knows for ``triple``, sorted; cached.

    LLVM prints this list once per process, so a new worker is started for it
    (only when an error message needs it).
    """
    if triple not in _listed:
        worker = _Worker()
        try:
            _, stderr = worker.call(("help", triple))
        except _WorkerDied as e:
            raise CodegenError(f"LLVM aborted listing the processors of {triple}: {_quote(e.stderr)}") from None
        except _WorkerGone:
            raise CodegenError(f"the code generator process exited before listing the processors of {triple}") from None
        finally:
            worker.close()
        listing = stderr.split("Available CPUs for this target:", 1)[-1]
        listing = listing.split("Available features for this target:", 1)[0]
        _listed[triple] = tuple(sorted(re.findall(r"^\s+(\S+)\s+- ", listing, re.MULTILINE)))
    return _listed[triple]
