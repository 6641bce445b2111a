"""Tasks the compile pool's tests run in its workers (a worker imports them by module name)."""
import os
import signal
import sys
import time

from pyhipbench._sources import Source


def pid() -> int:
    return os.getpid()


def square(x: int) -> int:
    return x * x


def fail(message: str) -> None:
    raise ValueError(message)


def crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def die_unnoticed(after_s: float) -> None:
    """Kills this worker `after_s` after it replies, from a child that keeps the worker's reply pipe open: the
    pool sees no end of that pipe and learns of the death only when it sends the next task."""
    requests_fd, worker = int(sys.argv[1]), os.getpid()
    if os.fork() == 0:
        os.close(requests_fd)  # so that no reader of the requests is left
        time.sleep(after_s)
        os.kill(worker, signal.SIGKILL)
        time.sleep(5)
        os._exit(0)


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def shout(text: str) -> str:
    print(text)  # to stdout, which the replies must not share
    return text


class CrashingSource(Source):
    """A sweep source whose compile kills the process compiling it."""
    kind, needs_compiler = "crashing", True

    def identity(self):
        return {"kind": self.kind}

    def to_json(self):
        return self.identity()

    def compile(self, target, args=()):
        crash()


def getenv(name: str) -> str | None:
    return os.environ.get(name)


def parent_pid() -> int:
    return os.getppid()


def loaded(module: str) -> bool:
    """Whether `module` was imported in this worker before this task ran."""
    return module in sys.modules


def load(module: str) -> None:
    __import__(module)


def starter_pid() -> int:
    """The process whose pool forked this worker: its fork server's parent."""
    with open(f"/proc/{os.getppid()}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def ready_for_triton() -> tuple[bool, int]:
    """(Triton's compiler imported, Triton's installation hash cached) in this worker before this task ran."""
    compiler = "triton.compiler" in sys.modules
    from triton.runtime.cache import triton_key
    return compiler, triton_key.cache_info().currsize


WARM_UPS: list[str] = []


def note_warm_up(name: str) -> None:
    """A warm-up that leaves a trace in the server, which the workers forked after it inherit."""
    WARM_UPS.append(name)


def warm_ups() -> list[str]:
    return WARM_UPS
