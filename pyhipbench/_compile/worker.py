"""A compile worker's main: `main()`, with the pipes' file descriptors in argv (REQUESTS_FD REPLIES_FD).

Started by CompilePool. The first request is the parent's sys.path; then each
request is (function, args), answered by ("ok", value) or ("error", message),
until the requests pipe closes. ("ready",) goes back once the worker is up.
"""
from __future__ import annotations

import os
import pickle
import sys
from multiprocessing.connection import Connection

from .pool import die_with_parent


def serve(requests: Connection, replies: Connection) -> None:
    sys.path[:] = requests.recv()
    replies.send(("ready",))
    while True:
        try:
            request = requests.recv_bytes()
        except EOFError:
            return
        try:  # unpickling imports the function's module: its errors are the task's too
            function, args = pickle.loads(request)
            reply: tuple[str, object] = ("ok", function(*args))
        except Exception as e:  # the task's failure, in words (an exception may not unpickle in the parent)
            reply = ("error", f"{type(e).__name__}: {' '.join(str(e).split())}")
        try:
            replies.send(reply)
        except Exception as e:  # a value that does not pickle
            replies.send(("error", f"its result cannot be sent back: {type(e).__name__}: {e}"))


def main() -> None:
    die_with_parent()
    os.dup2(2, 1)  # what a kernel's module prints goes to stderr; the replies have their own pipe
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))


