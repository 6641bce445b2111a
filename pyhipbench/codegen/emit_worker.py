"""The code generator's process: LLVM emission where an abort is survivable.

Run as a script by ``pyhipbench.codegen.emit`` (never imported by the
package), so it depends on nothing but the standard library and llvmlite and
starts without importing pyhipbench. It reads requests from stdin and writes
replies to stdout until stdin closes; each message is an 8-byte
little-endian length followed by that many bytes of pickle. LLVM writes its
diagnostics (warnings, ``LLVM ERROR: ...`` before an abort) to stderr, which
the parent captures.

Requests, as tuples:

- ``("emit", triple, cpu, features, bitcode)``: the assembly (or PTX) text;
- ``("probe", triple, cpu, features)``: creates the target machine only, so
  that LLVM reports an unknown processor or feature on stderr; replies None.
- ``("help", triple)``: LLVM's list of the target's processors and features,
  printed on stderr (LLVM prints it once per process: ask a fresh one).

Replies: ``("ok", value)`` or ``("error", message)`` for an exception.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys

import llvmlite.binding as llvm

_LENGTH = struct.Struct("<Q")


def read_message(stream) -> object | None:
    """The next message on ``stream``, or None at its end."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def write_message(stream, message: object) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _machine(triple: str, cpu: str, features: str):
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)


def _emit(triple: str, cpu: str, features: str, bitcode: bytes) -> str:
    return _machine(triple, cpu, features).emit_assembly(llvm.parse_bitcode(bitcode))


def _probe(triple: str, cpu: str, features: str) -> None:
    _machine(triple, cpu, features)


def _help(triple: str) -> None:
    _machine(triple, "help", "")


_HANDLERS = {"emit": _emit, "probe": _probe, "help": _help}


def main() -> None:
    # The replies get stdout to themselves: anything else written to file
    # descriptor 1 would corrupt them, so fd 1 becomes stderr.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    while True:
        request = read_message(requests)
        if request is None:
            return
        op, *args = request
        try:
            reply = ("ok", _HANDLERS[op](*args))
        except Exception as e:  # returned to the parent, which raises CodegenError
            reply = ("error", f"{type(e).__name__}: {e}")
        write_message(replies, reply)


if __name__ == "__main__":
    main()
