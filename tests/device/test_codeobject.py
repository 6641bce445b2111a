"""Code object formats and parameter lists read on the CPU."""
from __future__ import annotations

import struct
from importlib import resources

import pytest

from pyhipbench import BenchError
from pyhipbench._codeobject.image import detect_format, kernels, ptx_kernels
from pyhipbench._device.backends import KernelParam

KERNELS = resources.files("pyhipbench") / "kernels"


def test_bundled_ptx():
    assert kernels((KERNELS / "copy.ptx").read_bytes()) == {
        "copy": [KernelParam("copy_param_src", 0, 8), KernelParam("copy_param_dst", 8, 8),
                 KernelParam("copy_param_n", 16, 8)]}
    assert kernels((KERNELS / "empty.ptx").read_bytes()) == {"empty": []}


def test_ptx_alignment_arrays_and_several_entries():
    ptx = """
.version 8.0
.target sm_90
.address_size 64
// .entry commented(.param .u64 x)
.visible .entry first(
    .param .u8 first_param_0,
    .param .f32 first_param_1,
    .param .align 16 .b8 first_param_2[32],
    .param .u64 .ptr .global .align 8 first_param_3
) { ret; }
.entry second() { ret; }
"""
    assert ptx_kernels(ptx) == {
        "first": [KernelParam("first_param_0", 0, 1), KernelParam("first_param_1", 4, 4),
                  KernelParam("first_param_2", 16, 32), KernelParam("first_param_3", 48, 8)],
        "second": []}


def _elf(machine: int) -> bytes:
    return b"\x7fELF\x02\x01\x01" + b"\0" * 11 + struct.pack("<H", machine) + b"\0" * 44


def test_formats():
    assert detect_format(_elf(190)) == "cubin"
    assert detect_format(_elf(224)) == "hsaco"
    assert detect_format(struct.pack("<I", 0xBA55ED50) + b"\0" * 12) == "fatbin"
    assert detect_format((KERNELS / "copy.ptx").read_bytes()) == "ptx"
    assert kernels(_elf(190)) is None  # cubin: the driver reports parameters


def test_not_a_code_object():
    with pytest.raises(BenchError, match="an ELF file for machine 62 is not a GPU code object"):
        detect_format(_elf(62))
    with pytest.raises(BenchError, match="not a code object"):
        detect_format(b"#!/bin/sh\n")


def test_ptx_pointee_alignment_does_not_move_the_parameter():
    # `.align 16` after `.ptr` is the pointee's alignment: the driver puts `p` at 8, not 16.
    ptx = ".version 8.0\n.target sm_90\n.entry k(.param .u32 a, .param .u64 .ptr .global .align 16 p)\n{ ret; }"
    assert ptx_kernels(ptx)["k"] == [KernelParam("a", 0, 4), KernelParam("p", 8, 8)]
