"""CodeObject: a loadable code object and what went into it.

Kept apart from pyhipbench.codegen (which loads llvmlite) so that loading a
code object never imports the code generator.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._textfile import write_whole

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
        """Write ``data`` to ``path``, whole or not at all (a new file beside it,
        renamed over it: a full disk leaves what was there); returns the path.

        A failed write raises OSError whose ``filename`` is ``path``.
        """
        path = Path(path)
        write_whole(path, self.data)
        return path
