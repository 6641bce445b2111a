"""A driver stream owned by a Device: launches on it are ordered with each other."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .device import Device


class Stream:
    """A blocking stream (ordered with the default stream, where pyhipbench's copies run).

    Pass it as `bench(..., stream=s)`; `handle` is the raw CUstream / hipStream_t.
    """

    def __init__(self, device: Device) -> None:
        self._backend = device.backend
        self.handle = self._backend.create_stream()

    def synchronize(self) -> None:
        """Waits for everything launched on this stream."""
        self._backend.synchronize_stream(self.handle)

    def close(self) -> None:
        """Destroys the stream now rather than when it is collected."""
        if self.handle:
            self._backend.destroy_stream(self.handle)
            self.handle = 0

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown or a dead context: nothing to release into
            pass

    def __repr__(self) -> str:
        return f"Stream(0x{self.handle:x})"
