"""Truncated or corrupt code objects are BenchErrors that
say what is wrong and where; nothing else escapes the parsers (no
struct.error, IndexError, UnicodeDecodeError, KeyError, RecursionError).

Systematic truncations and seeded bit flips of real PTX (the package's and
LLVM's NVPTX output), a real HSACO (LLVM 22, gfx942), a cubin-shaped ELF and
a fatbin container, through `codeobject.kernels` (what `load_module` runs
before any driver sees the bytes) and `codegen.verify._descriptors`.
"""
from __future__ import annotations

import copy
import random
import struct
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench._codeobject.elf import ElfFile
from pyhipbench._codeobject.image import check_fatbin, kernels
from pyhipbench.codegen import compile_ir
from pyhipbench.codegen.verify import _descriptors

from code_objects import (
    COPY_METADATA,
    EM_AMDGPU,
    EM_CUDA,
    IR_DATA,
    SHT_NOTE,
    bundled_ptx,
    elf64,
    fatbin,
    hsaco_with_metadata,
    minimal_cubin,
    msgpack,
)
from codegen_helpers import require_toolchain

FLIPS_PER_OBJECT = 1500


KERNELS_LL = Path(hb.__file__).parent / "kernels" / "amdgpu.ll"


@pytest.fixture(scope="module")
def hsaco() -> bytes:
    """A real HSACO: the bundled kernels' IR through LLVM 22 for gfx942 (the flush injected and verified)."""
    require_toolchain("gfx942")
    return compile_ir(KERNELS_LL, "gfx942").data


@pytest.fixture(scope="module")
def real_objects(hsaco) -> dict[str, bytes]:
    """Name -> bytes of every real or driver-shaped code object the tests mutate."""
    objects = {f"{name}.ptx": data for name, data in bundled_ptx().items()}
    objects["copy_sm_90.ptx"] = compile_ir(IR_DATA / "copy_sm_90.ll", "sm_90").data  # LLVM's NVPTX output
    objects["amdgpu.hsaco"] = hsaco
    objects["minimal.cubin"] = minimal_cubin()
    objects["copy.fatbin"] = fatbin([bundled_ptx()["copy"], bundled_ptx()["empty"]])
    return objects


def parse(data: bytes, hsaco_descriptors: bool):
    """What load_module reads on the CPU, plus the descriptor reader for HSACOs."""
    result = kernels(data)
    if hsaco_descriptors:
        _descriptors(data)
    return result


def only_bench_errors(data: bytes, hsaco_descriptors: bool = False):
    """The parse result, or the BenchError it raised; any other exception fails the test."""
    try:
        return parse(data, hsaco_descriptors)
    except hb.BenchError as error:
        assert str(error), "a BenchError must say what is wrong"
        return error


def test_real_objects_parse(real_objects):
    assert kernels(real_objects["amdgpu.hsaco"])["copy"] == [
        hb._device.backends.KernelParam("src", 0, 8), hb._device.backends.KernelParam("dst", 8, 8), hb._device.backends.KernelParam("n", 16, 8)]
    assert set(_descriptors(real_objects["amdgpu.hsaco"])) == {"copy", "empty", "spin", "clean"}
    assert [p.offset for p in kernels(real_objects["copy_sm_90.ptx"])["copy"]] == [0, 8, 16]
    assert kernels(real_objects["minimal.cubin"]) is None and kernels(real_objects["copy.fatbin"]) is None


@pytest.mark.parametrize("name", ["copy.ptx", "empty.ptx", "copy_sm_90.ptx", "amdgpu.hsaco", "minimal.cubin",
                                  "copy.fatbin"])
def test_every_truncation_is_a_bench_error_or_a_consistent_prefix(real_objects, name):
    data = real_objects[name]
    full = kernels(data)
    is_hsaco = name.endswith(".hsaco")
    for length in range(len(data)):
        outcome = only_bench_errors(data[:length], is_hsaco)
        if isinstance(outcome, hb.BenchError):
            continue
        # A PTX prefix may end between kernels: those it has are whole.
        assert name.endswith(".ptx"), f"{name} cut to {length} bytes was accepted"
        assert all(outcome[k] == full[k] for k in outcome), f"{name} cut to {length} bytes"


@pytest.mark.parametrize("name", ["copy.ptx", "copy_sm_90.ptx", "amdgpu.hsaco", "minimal.cubin", "copy.fatbin"])
def test_seeded_bit_flips_raise_only_bench_errors(real_objects, name):
    data = real_objects[name]
    rng = random.Random(f"issue6-{name}")
    is_hsaco = name.endswith(".hsaco")
    refused = 0
    for _ in range(FLIPS_PER_OBJECT):
        corrupt = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4, 8))):
            corrupt[rng.randrange(len(corrupt))] ^= 1 << rng.randrange(8)
        refused += isinstance(only_bench_errors(bytes(corrupt), is_hsaco), hb.BenchError)
    assert refused > 0, "no flip reached an error path"


def test_hsaco_headers_hit_field_by_field(hsaco):
    """Every byte of the ELF header and the section header table set to 0x00 and to 0xff, and
    every byte of the metadata note inverted (the note holds no symbols: kernels() alone reads it)."""
    code_object = ElfFile(hsaco)
    note = next(s for s in code_object.sections if s.name == ".note")
    shoff, = struct.unpack_from("<Q", hsaco, 0x28)  # e_shoff
    for position in [*range(64), *range(shoff, len(hsaco))]:
        for value in (0x00, 0xFF):
            corrupt = bytearray(hsaco)
            corrupt[position] = value
            only_bench_errors(bytes(corrupt), True)
    for position in range(note.offset, note.offset + note.size):
        corrupt = bytearray(hsaco)
        corrupt[position] ^= 0xFF
        only_bench_errors(bytes(corrupt))


# ---- what the messages say ---------------------------------------------------

def test_a_3000_byte_prefix_of_an_hsaco_names_the_section_header_table(hsaco, device):
    shoff, = struct.unpack_from("<Q", hsaco, 0x28)
    message = (rf"HSACO truncated or corrupt: section header table \(\d+ entries of 64 bytes\) at 0x{shoff:x}\.\.0x"
               rf"{len(hsaco):x} runs past the end of the 3000-byte file")
    with pytest.raises(hb.BenchError, match=message):
        device.load_module(hsaco[:3000])
    assert device.backend.modules == {}  # refused before the driver saw it


def test_a_section_past_the_end_is_named(hsaco):
    shoff, = struct.unpack_from("<Q", hsaco, 0x28)
    corrupt = bytearray(hsaco)
    struct.pack_into("<Q", corrupt, shoff + 64 + 0x20, 1 << 40)  # section 1 (.note): sh_size
    with pytest.raises(hb.BenchError, match=r"HSACO truncated or corrupt: section 1 at 0x200\.\.0x10000000200 "
                                            rf"runs past the end of the {len(hsaco)}-byte file"):
        kernels(bytes(corrupt))


def test_a_descriptor_outside_its_section_is_named(hsaco):
    # Move copy.kd's value (st_value, 8 bytes into its .symtab entry) to the end of .rodata.
    code_object = ElfFile(hsaco)
    symtab = next(s for s in code_object.sections if s.name == ".symtab")
    index, symbol = next((i, s) for i, s in enumerate(code_object.symbols()) if s.name == "copy.kd")
    corrupt = bytearray(hsaco)
    rodata = next(s for s in code_object.sections if s.name == ".rodata")
    struct.pack_into("<Q", corrupt, symtab.offset + 24 * index + 8, rodata.address + rodata.size)
    with pytest.raises(hb.BenchError, match=r"HSACO is corrupt: kernel descriptor copy.kd at address 0x[0-9a-f]+ "
                                            r"\(64 bytes\) is not inside section \d+ \.rodata"):
        _descriptors(bytes(corrupt))


@pytest.mark.parametrize("data,message", [
    (b"\x7fELF\x02\x01\x01", r"ELF file truncated: 7 bytes, shorter than the 64-byte ELF64 header"),
    (elf64(EM_AMDGPU, [])[:6] + b"\x07" + elf64(EM_AMDGPU, [])[7:],
     r"HSACO is corrupt: has ELF version 7; every ELF file has version 1"),
    (b"\x7fELF\x01\x01\x01" + b"\0" * 11 + struct.pack("<H", EM_AMDGPU) + b"\0" * 44,
     r"HSACO has ELF class 1 and data encoding 1; expected a 64-bit \(2\) little-endian \(1\) ELF"),
    (elf64(EM_AMDGPU, [(".note", SHT_NOTE, struct.pack("<III", 7, 4000, 32) + b"AMDGPU\0\0")]),
     r"HSACO is corrupt: note at 0x40 declares a 7-byte name and a 4000-byte description, past the end of "
     r"section 1 \.note \(20 bytes at 0x40\)"),
    (elf64(EM_AMDGPU, []), r"HSACO has no AMDGPU metadata note"),
])
def test_elf_structure_errors(data, message):
    with pytest.raises(hb.BenchError, match=message):
        kernels(data)


def test_a_wrong_section_entry_size_is_named():
    data = bytearray(elf64(EM_CUDA, [(".text", 1, b"\0" * 16)]))
    struct.pack_into("<H", data, 0x3A, 40)
    with pytest.raises(hb.BenchError, match="cubin is corrupt: its section header table has 40-byte entries; ELF64 has 64"):
        kernels(bytes(data))


def bad_metadata(change) -> bytes:
    document = copy.deepcopy(COPY_METADATA)
    change(document)
    return hsaco_with_metadata(msgpack(document))


def arg(document, i):
    return document["amdhsa.kernels"][0][".args"][i]


@pytest.mark.parametrize("change,message", [
    (lambda d: arg(d, 1).pop(".offset"), r"HSACO metadata is corrupt: kernel 'copy' argument 1 has no \.offset"),
    (lambda d: arg(d, 2).pop(".size"), r"kernel 'copy' argument 2 has no \.size"),
    (lambda d: arg(d, 0).pop(".value_kind"), r"kernel 'copy' argument 0 has no \.value_kind"),
    (lambda d: d["amdhsa.kernels"][0].pop(".name"), r"amdhsa\.kernels\[0\] has no \.name"),
    (lambda d: d["amdhsa.kernels"][0].pop(".kernarg_segment_size"), r"kernel 'copy' has no \.kernarg_segment_size"),
    (lambda d: arg(d, 1).update({".offset": "eight"}),
     r"kernel 'copy' argument 1 \.offset is 'eight'; expected an integer in \[0, 2\*\*32\)"),
    (lambda d: arg(d, 1).update({".size": True}), r"argument 1 \.size is True; expected an integer"),
    (lambda d: arg(d, 2).update({".offset": 1 << 40}), r"argument 2 \.offset is 1099511627776; expected an integer"),
    (lambda d: arg(d, 2).update({".offset": 20}),
     r"kernel 'copy' argument 2 \(8 bytes at offset 20\) lies beyond the kernel's 24-byte \.kernarg_segment_size"),
    (lambda d: arg(d, 0).update({".name": 5}), r"kernel 'copy' argument 0 \.name is 5; expected a string"),
    (lambda d: d.update({"amdhsa.kernels": {"copy": 1}}), r"amdhsa\.kernels is \{'copy': 1\}; expected a list"),
    (lambda d: d["amdhsa.kernels"].append([1]), r"amdhsa\.kernels\[1\] is \[1\]; expected a map"),
    (lambda d: d["amdhsa.kernels"][0].update({".args": "x"}), r"kernel 'copy' \.args is 'x'; expected a list"),
    (lambda d: d["amdhsa.kernels"][0][".args"].append(7), r"kernel 'copy' argument 4 is 7; expected a map"),
])
def test_metadata_with_missing_or_wrong_fields(change, message):
    with pytest.raises(hb.BenchError, match=message):
        kernels(bad_metadata(change))


def test_the_metadata_fixture_itself_parses():
    assert kernels(hsaco_with_metadata(msgpack(COPY_METADATA))) == {"copy": [
        hb._device.backends.KernelParam("src", 0, 8), hb._device.backends.KernelParam("dst", 8, 8),
        hb._device.backends.KernelParam("n", 16, 8)]}


@pytest.mark.parametrize("document,message", [
    (b"\xdb\xff\xff\xff\xf0abc", r"HSACO metadata truncated or corrupt: a 4294967280-byte string at byte 5 needs "
                                 r"4294967280 bytes, 3 remain in the 8-byte msgpack note"),
    (b"\xdd\xff\xff\xff\xff\x01", r"HSACO metadata is corrupt: an array of 4294967295 elements, but only 1 bytes "
                                  r"remain \(at byte 0 of the 6-byte msgpack note\)"),
    (b"\xdf\x00\x01\x00\x00\x01", r"a map of 65536 elements, but only 1 bytes remain \(at byte 0"),
    (b"\x91" * 10000, r"values nested deeper than 32 levels \(at byte 33"),
    (b"\x81\x01\x02", r"a map key is 1; AMDGPU metadata keys are strings \(at byte 1"),
    (b"\x81\x91\xa1k\x02", r"a map key is \['k'\]; AMDGPU metadata keys are strings"),
    (b"\x81\xa2\xff\xfe\x01", r"the string b'\\xff\\xfe' is not UTF-8 \(at byte 1"),
    (b"\x81\xa1k\xc7\x01\x00\x00", r"unsupported msgpack byte 0xc7 \(at byte 3"),
    (b"\x92\x01", r"an array of 2 elements, but only 1 bytes remain \(at byte 0 of the 2-byte msgpack note\)"),
    (b"\x92\x01\x02", r"the root is \[1, 2\], not a map"),
    (b"\x05", r"the root is 5, not a map"),
    (b"\x81\xa1k\xcf\x00\x01", r"a number at byte 4 needs 8 bytes, 2 remain"),
    (b"", r"a value at byte 0 needs 1 bytes, 0 remain in the 0-byte msgpack note"),
])
def test_msgpack_is_bounds_checked(document, message):
    with pytest.raises(hb.BenchError, match=message):
        kernels(hsaco_with_metadata(document))


@pytest.mark.parametrize("data,message", [
    (b".version 8.0\n.target sm_90\n.entry k(.param .u64 p)\n{\n ret;\n", r"PTX truncated or corrupt: 1 '\{' never "
                                                                         r"closed, the last at line 4"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .u64 p,\n.param .u3",
     r"PTX truncated or corrupt: the parameter list of kernel 'k' \(line 3\) is never closed"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .u64 p)", r"kernel 'k' \(line 3\) has no body"),
    (b".version 8.0\n.target sm_90\n/* a comment\n\n.entry k() {}", r"the /\* comment at line 3 is never closed"),
    (b".version 8.0\n.target sm_90\n.entry k() { ret; }\n}", r"PTX is corrupt: the '\}' at line 4 closes nothing"),
    (b".version 8.0\n.target sm_90\n.entry k() {}\0\0", None),
    (b".version 8.0\n.target sm_90\n\0.entry k() {}", r"PTX is corrupt: a NUL byte at offset 27 \(line 3\); the "
                                                      r"driver would ignore everything after it"),
    (b".version 8.0\n.target sm_90\n// caf\xe9\n.entry k() {}", r"PTX is not UTF-8 text: byte 0xe9 at offset 33 "
                                                               r"\(line 3\)"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .align 0 .b8 p[4]) {}",
     r"cannot read PTX parameter '\.param \.align 0 \.b8 p\[4\]' of kernel 'k': \.align takes a power of two, got '0'"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .b8 p[40000]) {}",
     r"PTX kernel 'k' declares 40000 bytes of parameters; CUDA allows at most 32764"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .u64 .u32 p) {}", r"kernel 'k': two types"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .u64 .weird p) {}", r"unknown qualifier '\.weird'"),
    (b".version 8.0\n.target sm_90\n.entry k(.param p) {}", r"kernel 'k': expected \.param TYPE NAME"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .b8 p[x]) {}", r"expected an array size such as \[16\]"),
    (b".version 8.0\n.target sm_90\n.entry k(.param .b8 p[99999999999999999999]) {}", r"declares \d+ bytes of parameters"),
])
def test_ptx_errors_name_the_line(data, message):
    if message is None:
        assert kernels(data) == {"k": []}  # a C string's trailing NULs are allowed
        return
    with pytest.raises(hb.BenchError, match=message):
        kernels(data)


def test_ptx_kernel_without_parameter_list():
    assert kernels(b".version 8.0\n.target sm_90\n.entry k\n.maxntid 64, 1, 1\n{\n ret;\n}\n") == {"k": []}


@pytest.mark.parametrize("data,message", [
    (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1000) + b"\0" * 100,
     r"fatbin truncated or corrupt: its header declares entries up to 0x3f8, past the end of the 116-byte file"),
    (struct.pack("<IHH", 0xBA55ED50, 1, 16), r"fatbin truncated: 8 bytes, shorter than its 16-byte header"),
    (struct.pack("<IHHQ", 0xBA55ED50, 1, 4, 0), r"fatbin is corrupt: its header says it is 4 bytes; it is at least 16"),
    (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 8) + b"\0" * 8, r"fatbin is corrupt: entry 0 at 0x10 is cut off by the "
                                                             r"container's end at 0x18"),
    (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 80) + struct.pack("<HHIQ", 1, 0, 64, 4096) + b"\0" * 64,
     r"fatbin truncated or corrupt: entry 0 at 0x10 \(64-byte header, 4096-byte payload\) runs past the "
     r"container's end at 0x60"),
    (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 80) + struct.pack("<HHIQ", 1, 0, 0, 0) + b"\0" * 64,
     r"entry 0 at 0x10 \(0-byte header, 0-byte payload\) runs past"),
])
def test_fatbin_errors(data, message):
    with pytest.raises(hb.BenchError, match=message):
        check_fatbin(data)


def test_a_cubin_section_past_the_end_is_refused_before_loading(device):
    cubin = bytearray(minimal_cubin())
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    struct.pack_into("<Q", cubin, shoff + 64 + 0x18, len(cubin))  # section 1's offset: the end of the file
    with pytest.raises(hb.BenchError, match=rf"cubin truncated or corrupt: section 1 at 0x{len(cubin):x}\.\.0x"):
        device.load_module(bytes(cubin))
    assert device.backend.modules == {}



def test_the_cli_reports_a_truncated_code_object_in_one_line(hsaco, device, monkeypatch, tmp_path, capsys):
    from pyhipbench import cli
    monkeypatch.setattr(cli, "_open_device", lambda backend, index=0: device)
    path = tmp_path / "cut.hsaco"
    path.write_bytes(hsaco[:3000])
    assert cli.main(["run", str(path), "--kernel", "copy", "--grid", "1", "--block", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyhipbench run: HSACO truncated or corrupt: section header table (")
    assert err.endswith("runs past the end of the 3000-byte file\n") and err.count("\n") == 1
    assert device.backend.modules == {}
