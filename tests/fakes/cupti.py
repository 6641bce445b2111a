"""Reads and steers a loaded fake libcupti (fake_cupti.c) through ctypes."""
from __future__ import annotations

import ctypes


class FakeCupti:
    """Controls and reads the fake libcupti; loading it attaches it to the fake libcuda beside it."""

    def __init__(self, path) -> None:
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)  # the same handle the core's dlopen gets
        self.lib.fake_cupti_log.restype = ctypes.c_char_p
        self.lib.fake_cupti_set_record_bytes.argtypes = [ctypes.c_size_t]
        self.lib.fake_cupti_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.lib.fake_cupti_reset()

    def calls(self) -> list[str]:
        """The CUPTI calls made since the reset, in order (a forced flush is 'cuptiActivityFlushAll(forced)')."""
        return self.lib.fake_cupti_log().decode().split()

    def fail(self, call: str, code: int) -> None:
        """The next call named `call` returns `code`."""
        self.lib.fake_cupti_fail(call.encode(), code)

    def hold_default_flushes(self, n: int) -> None:
        """The next `n` default (unforced) flushes hand back nothing, as if a record were still incomplete."""
        self.lib.fake_cupti_hold_default_flushes(n)

    def fake_version(self, api_version: int, record_bytes: int) -> None:
        """Reports `api_version` and writes kernel records of `record_bytes` (CUPTI 12: 208, 13: 216)."""
        self.lib.fake_cupti_set_version(api_version)
        self.lib.fake_cupti_set_record_bytes(record_bytes)

    @property
    def tracing(self) -> bool:
        """Whether a subscription or kernel activity is still on."""
        return bool(self.lib.fake_cupti_subscribed() or self.lib.fake_cupti_activity_enabled())

    @property
    def buffers_completed(self) -> int:
        return self.lib.fake_cupti_buffers_completed()
