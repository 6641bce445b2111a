"""A compile worker's loop: `serve(requests, replies)`, in a process the fork server (forkserver.py) forked.

The first request is the parent's sys.path; then each request is (function,
args), answered by ("ok", value) or ("error", message), until the requests
pipe closes. ("ready",) goes back once the worker is up.
"""
from __future__ import annotations

import pickle
import sys
from multiprocessing.connection import Connection


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
