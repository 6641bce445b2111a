"""CodeObject: a loadable code object and what went into it.

Kept apart from pyhipbench.codegen (which loads llvmlite) so that loading a
code object never imports the code generator.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..codegen.verify import Verification


@dataclass(frozen=True)
class CodeObject:
    """A loadable code object and what went into it.

    ``data`` is an HSACO (ELF, ``format == "hsaco"``) or PTX text
    (``format == "ptx"``); ``target`` is the processor (``"gfx942"``,
    ``"sm_90"``); ``kernels`` are the kernel names; ``verification`` is the
    AMD first-instruction proof (None when nothing was injected, and on NVIDIA).
    """

    data: bytes
    format: str
    target: str
    kernels: tuple[str, ...]
    verification: Verification | None = None

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``data`` to ``path``; returns the path.

        A failed write raises OSError whose ``filename`` is ``path`` (a write
        that fails after the file opened, e.g. a full disk, names no file
        otherwise).
        """
        path = Path(path)
        try:
            path.write_bytes(self.data)
        except OSError as e:
            if e.filename is not None:
                raise
            raise OSError(e.errno, e.strerror or str(e), os.fspath(path)) from e
        return path
