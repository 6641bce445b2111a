"""The fork server: one process per environment that imports once what compile workers need, then forks them.

A worker forked from it starts in milliseconds with Python, pyhipbench and
whatever `ForkServer.warm` imported (Triton's compiler, a kernel's module)
already loaded, where a fresh interpreter per worker pays all of that again,
on every core at once. A front end warms the server as soon as it knows what
its compiles will import (autotune, at decoration), so that start-up is paid
while the caller still makes its tensors.

The server holds no GPU and forks only while no thread of its own runs (it
waits for those a warm-up started), so a worker inherits no lock held. It talks to
the pool over a SOCK_SEQPACKET socket, one pickled message per packet:
("path", sys.path) first; ("warm", function, args), run in the server, its
failure ignored (the task that needs the same import fails in the worker and
says why); ("fork", token) with the new worker's two pipe ends attached. It
answers ("forked", token, pid) and, as each worker ends, ("exited", pid,
returncode) with Popen's convention (negative: the signal). A worker dies
with the server, and the server with the process that started it.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Callable

__all__ = ["ForkServer", "ForkedProcess", "main", "serving"]

# True in a fork server and the workers it forks: work that prepares a measuring process's future (threads
# started at import) is not done there.
serving = False

_PACKET_BYTES = 1 << 20  # a message's largest size: a warm-up's arguments, sys.path
_EXIT_WAIT_S = 5.0  # how long a worker's exit status may trail the end of its pipe
_THREADS_LIMIT_S = 30.0  # how long a warm-up's own threads may run on before workers are forked


class ForkedProcess:
    """A compile worker forked by a ForkServer, as CompilePool uses a subprocess.Popen: `pid` (None until the
    server answers), `kill()`, `wait()` and `returncode` (None where the server ended before saying)."""

    def __init__(self, server: "ForkServer", token: int) -> None:
        self.server, self.token = server, token
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exited = False

    def kill(self) -> None:
        """SIGKILL; a worker not forked yet reads the end of its closed request pipe and exits by itself."""
        self.server.read()  # a worker that ended by itself is not signalled (its pid may be another's by now)
        if self.pid is not None and not self.exited:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended, and the server has not said so yet
                pass

    def wait(self) -> int | None:
        """The exit status, once the server reports it (up to a few seconds after the worker's pipe ended)."""
        self.server.await_exit(self)
        return self.returncode


class ForkServer:
    """The parent's side: starts the server in `env` (a Popen, so a missing interpreter raises OSError here),
    forks workers from it and reads its news. Thread-safe: the pool's dispatcher and close() both use it."""

    def __init__(self, env: dict[str, str], package_root: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        start = (f"import sys; sys.path.insert(0, {package_root!r}); "
                 "from pyhipbench._compile.forkserver import main; main()")
        try:
            # A session of its own, so a terminal's Ctrl-C reaches only the parent, which decides.
            self.process = subprocess.Popen([sys.executable, "-P", "-c", start, str(theirs.fileno())],
                                            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                            start_new_session=True, env=env)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self.socket = ours
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._tokens = 0
        self._forked: dict[int, ForkedProcess] = {}  # by token, until the server gives its pid
        self._by_pid: dict[int, ForkedProcess] = {}
        self._exits: dict[int, int] = {}  # exits reported before their fork's answer was read
        self.ended = False  # its socket ended: the server is gone
        self._warmed: set[bytes] = set()  # the warm-ups sent, pickled: each runs once
        self._send(("path", list(sys.path)))

    def fileno(self) -> int:
        """Readable when the server has news (for multiprocessing.connection.wait)."""
        return self.socket.fileno()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def warm(self, function: Callable[..., Any], *args: Any) -> None:
        """Runs `function(*args)` in the server before any later fork (an import every worker would do), once:
        the same warm-up again (a tuning's next config, say) is not sent."""
        packet = pickle.dumps(("warm", function, args))
        if packet not in self._warmed:
            self.socket.send(packet)
            self._warmed.add(packet)

    def fork(self) -> tuple[Connection, Connection, ForkedProcess]:
        """A new worker: the pool's ends of its request and reply pipes, and its process. OSError when the
        server is gone."""
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        with self._lock:
            self._tokens += 1
            process = ForkedProcess(self, self._tokens)
            self._forked[process.token] = process
        try:
            socket.send_fds(self.socket, [pickle.dumps(("fork", process.token))],
                            [requests_read, replies_write])
        except OSError:
            for fd in (requests_write, replies_read):
                os.close(fd)
            raise
        finally:
            os.close(requests_read)
            os.close(replies_write)
        return (Connection(requests_write, readable=False), Connection(replies_read, writable=False), process)

    def read(self) -> None:
        """Takes in what the server has said so far (non-blocking)."""
        with self._lock:
            while self._read_one(block=False):
                pass

    def await_exit(self, process: ForkedProcess) -> None:
        deadline = time.perf_counter() + _EXIT_WAIT_S
        with self._lock:
            while not process.exited and not self.ended and time.perf_counter() < deadline:
                ready, _, _ = select.select([self.socket], [], [], max(0.0, deadline - time.perf_counter()))
                if not ready or not self._read_one(block=True):
                    break

    def close(self) -> None:
        """Kills the server (its workers die with it)."""
        self.process.kill()
        self.process.wait()
        with self._lock:
            self.socket.close()
            self.ended = True

    def _send(self, message: tuple) -> None:
        self.socket.send(pickle.dumps(message))

    def _read_one(self, block: bool) -> bool:
        """One message taken in; False when there is none now or the server is gone."""
        try:
            packet = self.socket.recv(_PACKET_BYTES, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:  # closed here
            self.ended = True
            return False
        if not packet:
            self.ended = True
            return False
        message = pickle.loads(packet)
        if message[0] == "forked":
            _, token, pid = message
            process = self._forked.pop(token)
            process.pid = pid
            self._by_pid[pid] = process
            if pid in self._exits:
                self._exited(process, self._exits.pop(pid))
        elif message[0] == "exited":
            _, pid, returncode = message
            if pid in self._by_pid:
                self._exited(self._by_pid.pop(pid), returncode)
            else:
                self._exits[pid] = returncode
        return True

    @staticmethod
    def _exited(process: ForkedProcess, returncode: int) -> None:
        process.returncode, process.exited = returncode, True


# The server process from here on.

def main() -> None:
    """The server: argv[1] is its socket's file descriptor."""
    global serving
    from .pool import die_with_parent
    serving = True
    die_with_parent()
    os.dup2(2, 1)  # what a kernel's module prints goes to stderr; the workers' replies have their own pipes
    server = socket.socket(fileno=int(sys.argv[1]))
    woken_read, woken_write = os.pipe()  # SIGCHLD wakes the loop: a worker ended
    os.set_blocking(woken_write, False)
    signal.set_wakeup_fd(woken_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([server, woken_read], [], [])
        if woken_read in ready:
            os.read(woken_read, 512)
            _report_exits(server)
        if server in ready:
            packet, fds, _, _ = socket.recv_fds(server, _PACKET_BYTES, 2)
            if not packet:  # the pool is gone
                return
            try:  # unpickling a warm-up imports its function's module
                message = pickle.loads(packet)
            except BaseException:  # noqa: BLE001 - a warm-up is only a head start; the task says what failed
                continue
            if message[0] == "path":
                sys.path[:] = message[1]
            elif message[0] == "warm":
                try:
                    message[1](*message[2])
                except BaseException:  # noqa: BLE001 - as above
                    pass
                _join_threads()
            elif message[0] == "fork":
                _fork_worker(server, message[1], fds, (woken_read, woken_write))


def _join_threads() -> None:
    """Waits for the threads a warm-up started (an import's background work) to end: a child forked while
    one holds a lock would wait for it forever. One that runs on past the limit is left to the workers'
    start-up limit."""
    deadline = time.perf_counter() + _THREADS_LIMIT_S
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.perf_counter()))


def _fork_worker(server: socket.socket, token: int, fds: list[int], own: tuple[int, int]) -> None:
    from .pool import die_with_parent
    from .worker import serve
    requests_fd, replies_fd = fds
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in own:
                os.close(fd)
            server.close()
            die_with_parent()
            sys.argv[1:] = [str(requests_fd), str(replies_fd)]
            serve(Connection(requests_fd, writable=False), Connection(replies_fd, readable=False))
        except BaseException:  # noqa: BLE001 - a worker's end is its exit status; its pipe's end says so
            code = 1
        finally:
            os._exit(code)
    os.close(requests_fd)
    os.close(replies_fd)
    server.send(pickle.dumps(("forked", token, pid)))
    _report_exits(server)


def _report_exits(server: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        server.send(pickle.dumps(("exited", pid, os.waitstatus_to_exitcode(status))))
