"""Tasks the compile pool's tests run in its workers (a worker imports them by module name)."""
import os
import signal
import time

from pyhipbench._sweep.sources import Source


def pid() -> int:
    return os.getpid()


def square(x: int) -> int:
    return x * x


def fail(message: str) -> None:
    raise ValueError(message)


def crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


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
