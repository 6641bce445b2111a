"""A census of bad inputs: each tried as a tuner or a new user would, each in a child process.

    python bench/bad_inputs.py                      # this checkout, with its .venv
    python bench/bad_inputs.py --json census.json
    python bench/bad_inputs.py --repo /tmp/old      # another checkout, with /tmp/old/.venv/bin/python
    python bench/bad_inputs.py --class 4 --class 7  # some classes only

No GPU is needed: the fake drivers of the checkout's own tests/fakes (built once
per run, with the checkout's interpreter) stand in, under a Device made as the
checkout's tests make one (`Device.from_backend(HostBackend(...), driver)`,
`_core.load_driver`). CLI
cases run `cli.main(argv)` in a child whose `cli._open_device` returns that
device, as tests/test_cli*.py do; the class-11 cases open the real
`Device("hip")` over the fake HIP runtime on the loader path instead. Every
case runs in its own child, so an LLVM abort or a segfault is observed as a
crash and costs only that case.

Outcome of each case, decided by `classify()`:

- crash: the child died (a signal, exit 134, no report), an exception whose
  class is not the package's (its module is not `pyhipbench...`) escaped the
  API call, or any exception escaped `cli.main` (a traceback).
- silent: a wrong input was accepted (exit 0 or no exception), or an input
  that must work ran but its result is wrong (the case's own check).
- unclear: an error, but the message lacks a fragment the case requires
  (each case lists them: the bad value, and what was expected or what was
  wrong; a tuple means any one of its strings); or an input that must work
  (`expect="ok"`: numpy integers, defaults, a matching hip-python) was
  refused, however clearly.
- clear: an error of the package's own with every required fragment, or
  an `expect="ok"` input that worked and passed its check.

A refused or failed case whose own check fails (a failure named, but another
output or the file as it was lost) is silent, whatever its message.

Another checkout (`--repo`) is tried with the same cases: a case whose
harness part (its `setup`: building the device, loading the copy kernel,
allocating arrays) fails there is reported as `harness`, never counted
against the code; a bad input aimed at an option or keyword that checkout
lacks runs as written and counts as whatever it did (argparse's
"unrecognized arguments" is an error that names the option; an
AttributeError is a crash).
Class 12 (tests that cannot fail) is a static scan of the checkout's tests/,
not an input: a weak test found counts as silent. Class 10 times compiles of
500 and 2000 kernels: more than 5 times longer for 4 times the kernels counts as silent. Class 11 needs
hip-python importable by the checkout's interpreter: the 7.x bindings against
fake runtimes reporting other HIP versions.

Classes 20-23 try what happens after a measurement: outputs that fail (standard
output a closed pipe or a full device, a file on a full disk or beyond a
file-size limit, a folder that takes no file), an energy reading that gives no
figure, big inputs (a report of 10**6 samples, or of 20000 results; the case
times itself), and stored files of another version. A failure named as it must
be that still lost what it had to keep (another output, the measurement, the
file as it was) counts as silent: the case's own check says what.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # this census's checkout: its fixtures come from here
sys.path.insert(0, str(HERE / "tests"))
from code_objects import fatbin, minimal_cubin  # noqa: E402  (pure-Python builders, no package import)

OUTCOMES = ("clear", "unclear", "crash", "silent")
MARK = "@@CENSUS@@"
CLASSES = {
    1: "LLVM aborts in codegen", 2: "output paths", 3: ".ll inputs to run/compile",
    4: "truncated/malformed code objects", 5: "numpy integers and floats", 6: "silently wrong",
    7: "overflow and sizes", 8: "kernel names", 9: "defaults", 10: "compile time vs kernel count",
    11: "hip-python version pairing", 12: "tests that cannot fail",
    13: "undecodable or deep input files", 14: "compare's reports", 15: "Triton modules that fail to import",
    16: "interrupts and the store", 17: "DLPack producers that lie", 18: "summaries and candidate state",
    19: "messages", 20: "failed outputs", 21: "energy without a figure", 22: "big inputs",
    23: "stored files of another version",
}


@dataclass
class Case:
    cls: int
    name: str
    kind: str                      # "cli" (argv), "api" (Python), "static" (scan of tests/)
    body: object                   # argv list, Python code, or a scan function
    needs: tuple = ()              # fragments the error must hold (case-insensitive); a tuple: any of
    expect: str = "error"          # "error": the input must be refused; "ok": it must work
    setup: str = ""                # harness code run before the body (its failure is "harness")
    check: str = ""                # after an accepted body: calls verdict(ok, detail)
    device: str | None = "cuda"    # cli: the fake device cli._open_device returns (None: not patched)
    env: dict = field(default_factory=dict)
    needs_stdout: tuple = ()       # fragments stdout must hold too (the --json fallback)
    timeout: int = 180


# -- fixtures --------------------------------------------------------------------------------------
IR_DATA = HERE / "tests" / "data" / "ir"
MFMA = (IR_DATA / "mfma.ll").read_text()  # what LLVM aborts on (class 1); shared with the tests
MFMA16 = MFMA.replace("32x32x8f16", "16x16x16f16").replace("<16 x float>", "<4 x float>")
WGMMA = (IR_DATA / "wgmma.ll").read_text()
NAMED = {"nv": ('target triple = "nvptx64-nvidia-cuda"\n', "ptx_kernel"),
         "amd": ('target triple = "amdgcn-amd-amdhsa"\n', "amdgpu_kernel")}


def named_kernel_ir(family: str, name: str) -> str:
    """A one-kernel module whose kernel is called `name` (escaped as LLVM IR writes it)."""
    triple, cc = NAMED[family]
    escaped = "".join(c if c.isprintable() and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                      for c in name)
    return (f'{triple}define {cc} void @"{escaped}"(ptr addrspace(1) %p) {{\n'
            "  store i32 0, ptr addrspace(1) %p\n  ret void\n}\n")


def many_kernels_ir(count: int) -> str:
    lines = ['target triple = "amdgcn-amd-amdhsa"']
    for i in range(count):
        lines.append(f"define amdgpu_kernel void @k{i}(ptr addrspace(1) %p, i32 %v) {{\n"
                     f"  %w = add i32 %v, {i}\n  store i32 %w, ptr addrspace(1) %p\n  ret void\n}}")
    return "\n".join(lines) + "\n"


def make_fixtures(folder: Path) -> None:
    """Every input file the cases name, from this census's checkout and the system LLVM 22."""
    ir_data = HERE / "tests" / "data" / "ir"
    kernels = HERE / "pyhipbench" / "kernels"
    shutil.copy(ir_data / "copy_sm_90.ll", folder / "k.ll")
    shutil.copy(kernels / "amdgpu.ll", folder / "amd.ll")
    shutil.copy(kernels / "copy.ptx", folder / "k.ptx")
    shutil.copy(kernels / "copy.ptx", folder / "ptx_named.ll")
    (folder / "mfma.ll").write_text(MFMA)
    (folder / "mfma16.ll").write_text(MFMA16)
    (folder / "wgmma.ll").write_text(WGMMA)
    (folder / "latin1.ll").write_bytes(b"; caf\xe9\ndefine void @f() { ret void }\n")
    (folder / "empty.ll").write_bytes(b"")
    (folder / "nul.ll").write_bytes(b"target triple = \"nvptx64-nvidia-cuda\"\n\0\0\0")
    (folder / "noise.ll").write_bytes(bytes(range(256)) * 4)
    (folder / "dir").mkdir()
    (folder / "a_file").write_text("not a folder")
    (folder / "loop").symlink_to("loop")  # relative: each case's copy of the folder keeps them
    (folder / "dangling.ll").symlink_to("absent-target.ll")
    (folder / "full.json").symlink_to("/dev/full")  # a report path every write to fails (disk full)
    (folder / "full.md").symlink_to("/dev/full")
    (folder / "full.png").symlink_to("/dev/full")
    obj = folder / "k.o"
    subprocess.run(["llc-22", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(ir_data / "kernels_gfx942.ll"), "-o", str(obj)], check=True)
    subprocess.run(["ld.lld-22", "-shared", str(obj), "-o", str(folder / "k.hsaco")], check=True)
    hsaco = (folder / "k.hsaco").read_bytes()
    ptx = (folder / "k.ptx").read_bytes()
    cubin = minimal_cubin()
    fat = fatbin([ptx])
    (folder / "k.cubin").write_bytes(cubin)
    (folder / "k.fatbin").write_bytes(fat)
    bad = {
        "h3000.hsaco": hsaco[:3000], "h64.hsaco": hsaco[:64], "h16.hsaco": hsaco[:16],
        "h1000.hsaco": hsaco[:1000], "hhalf.hsaco": hsaco[:len(hsaco) // 2], "hless1.hsaco": hsaco[:-1],
        "hshoff.hsaco": hsaco[:0x28] + (1 << 40).to_bytes(8, "little") + hsaco[0x30:],
        "hshnum.hsaco": hsaco[:0x3C] + (0xFFFF).to_bytes(2, "little") + hsaco[0x3E:],
        "hshstrndx.hsaco": hsaco[:0x3E] + (0xFFF0).to_bytes(2, "little") + hsaco[0x40:],
        "p100.ptx": ptx[:100], "pentry.ptx": ptx[:ptx.index(b"copy_param_dst")],
        "pversion.ptx": b".version 7.0\n", "pnoentry.ptx": ptx[:ptx.index(b".visible")],
        "pbrace.ptx": ptx[:ptx.index(b"{")], "plast.ptx": ptx[:-2],
        "c30.cubin": cubin[:30], "c63.cubin": cubin[:63], "c100.cubin": cubin[:100],
        "cshoff.cubin": cubin[:0x28] + (1 << 40).to_bytes(8, "little") + cubin[0x30:],
        "f8.fatbin": fat[:8], "f16.fatbin": fat[:16], "f40.fatbin": fat[:40], "fhalf.fatbin": fat[:len(fat) // 2],
        "fsize.fatbin": fat[:8] + (1 << 40).to_bytes(8, "little") + fat[16:],
        "fgarbage.fatbin": fat[:16] + bytes(range(64)) * 2,
    }
    for name, data in bad.items():
        (folder / name).write_bytes(data)
    (folder / "plain_nv.ll").write_text(named_kernel_ir("nv", "copy"))
    make_newer_fixtures(folder)
    (folder / "many500.ll").write_text(many_kernels_ir(500))
    (folder / "many2000.ll").write_text(many_kernels_ir(2000))


def report_entry(**changes) -> dict:
    """One result as `pyhipbench run --out FILE.json` writes it (the fields compare reads), with `changes`."""
    stats = {"median": 4.0, "ci_low": 3.96, "ci_high": 4.04, "rel_ci": 0.01, "mean": 4.0, "stdev": 0.02,
             "p10": 3.97, "p90": 4.03, "outliers": 0, "min": 3.9, "max": 4.1}
    entry = {"kernel": "copy", "grid": [1024, 1, 1], "block": [256, 1, 1], "timer": "cupti",
             "cache_state": "clean-cold", "stats_us": stats, "samples": 16, "stop_reason": "precision",
             "rotation": {"sets": 1}, "host_us_per_kernel": 1.0, "wall_s": 0.01,
             "device": {"name": "NVIDIA H200"}, "verified": False, "target": "sm_90"}
    for key, value in changes.items():
        if key.startswith("stats_") and key != "stats_us":
            stats[key[len("stats_"):]] = value
        elif value is _DROP:
            entry.pop(key)
        else:
            entry[key] = value
    return entry


_DROP = object()
IR_SPACE = {"defaults": {"source": {"kind": "llvm-ir", "text": 'target triple = "amdgcn-amd-amdhsa"\n'
                                    "define amdgpu_kernel void @copy(ptr addrspace(1) %src, ptr addrspace(1) %dst, "
                                    "i64 %n) {\n  ret void\n}\n"},
                         "kernel": "copy", "block": [64], "args": ["array:float32:4096", "array:float32:4096",
                                                                   "int64:4096"],
                         "bench": {"cache": "warm", "iterations": 4, "warmup": 0}}}


def make_newer_fixtures(folder: Path) -> None:
    """The inputs of classes 13-19: spaces, reports, Triton modules, IR."""
    good = dict(IR_SPACE, candidates=[{"grid": [g]} for g in range(1, 4)])
    (folder / "space.json").write_text(json.dumps(good))
    (folder / "space_big.json").write_text(json.dumps(dict(IR_SPACE, candidates=[{"grid": [g]} for g in range(1, 30001)])))
    (folder / "space_twice.json").write_text(json.dumps(dict(IR_SPACE, candidates=[{"grid": [7]}, {"grid": [7]},
                                                                                  {"grid": [8]}])))
    text = json.dumps(good).encode()
    (folder / "space_ff.json").write_bytes(text[:20] + b"\xff\xfe" + text[20:])
    (folder / "space_ff.yaml").write_bytes(b"candidates:\n  - kernel: copy\xff\n")
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    (folder / "report_ok.json").write_text(json.dumps([report_entry()]))
    (folder / "report_bin.json").write_bytes(b"[{\"kernel\": \"co\x80\xffpy\"}]")
    (folder / "report_deep.json").write_text("[" * 100_000 + "]" * 100_000)
    reports = {
        "report_minimal.json": [{"kernel": "copy", "grid": [1], "block": [256], "timer": "cupti",
                                 "cache_state": "clean-cold", "stats_us": {"median": 4.0, "ci_low": 3.9,
                                                                           "ci_high": 4.1}}],
        "report_grid_int.json": [report_entry(grid=1024)],
        "report_median_str.json": [report_entry(stats_median="4.0")],
        "report_median_zero.json": [report_entry(stats_median=0.0, stats_ci_low=0.0, stats_ci_high=0.0)],
        "report_median_neg.json": [report_entry(stats_median=-4.0, stats_ci_low=-4.1, stats_ci_high=-3.9)],
        "report_median_nan.json": '[' + json.dumps(report_entry()).replace('"median": 4.0', '"median": NaN') + ']',
        "report_median_inf.json": '[' + json.dumps(report_entry()).replace('"median": 4.0', '"median": Infinity') + ']',
        "report_ci_inverted.json": [report_entry(stats_ci_low=4.5, stats_ci_high=3.5)],
        "report_twice.json": [report_entry(), report_entry(stats_median=100.0, stats_ci_low=99.0,
                                                           stats_ci_high=101.0)],
        "report_stats_list.json": [report_entry(stats_us=[4.0])],
        "report_kernel_int.json": [report_entry(kernel=7)],
        "report_block_neg.json": [report_entry(block=[-256, 1, 1])],
        "report_timer_none.json": [report_entry(timer=None)],
        "report_not_list.json": "\"copy\"",
    }
    for name, data in reports.items():
        (folder / name).write_text(data if isinstance(data, str) else json.dumps(data))
    (folder / "tmod_syntax.py").write_text("import triton\n@triton.jit\ndef add(x:\n    pass\n")
    (folder / "tmod_raises.py").write_text("raise RuntimeError('the module refuses to load')\n")
    (folder / "tmod_exits.py").write_text("import sys\nsys.exit(3)\n")
    (folder / "tmod_zero.py").write_text("x = 1 / 0\n")
    for mod in ("tmod_syntax", "tmod_raises", "tmod_exits", "tmod_zero"):
        (folder / f"space_{mod}.json").write_text(json.dumps(
            [{"source": {"kind": "triton", "function": f"{mod}:add"}, "kernel": "add", "grid": [1],
              "args": ["array:float32:64"]}]))
    amd = (HERE / "pyhipbench" / "kernels" / "amdgpu.ll").read_text()
    (folder / "own_asm.ll").write_text(amd.replace("define amdgpu_kernel void @empty() {",
                                                   "define amdgpu_kernel void @empty() {\n"
                                                   "  call void asm sideeffect \"; pyhipbench prologue\\0As_nop 0\", \"\"()", 1))
    (folder / "x86_layout.ll").write_text('target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-'
                                          'i128:128-f80:128-n8:16:32:64-S128"\n'
                                          "define amdgpu_kernel void @f() {\n  ret void\n}\n")
    (folder / "k.cu").write_text('extern "C" __global__ void k(float* p) { p[0] = N; }\n')
    # `run --chain` files: two copies of k.ptx's kernel, the second reading the first's output (ref:0.1).
    first = {"kernel": "copy", "grid": [1], "block": [256], "args": ["array:float32:256", "array:float32:256",
                                                                   "int64:256"]}
    chains = {"ok": ["ref:0.1", "array:float32:256", "ref:0.2"], "later": ["ref:1.1", "array:float32:256", "ref:0.2"],
              "missing_arg": ["ref:0.5", "array:float32:256", "ref:0.2"],
              "not_indices": ["ref:src.dst", "array:float32:256", "ref:0.2"]}
    for name, args in chains.items():
        (folder / f"chain_{name}.json").write_text(json.dumps({"launches": [first, dict(first, args=args)]}))
    (folder / "chain_no_kernel.json").write_text(json.dumps({"launches": [first, dict(first, kernel="reduce")]}))
    make_stored_fixtures(folder)


def make_stored_fixtures(folder: Path) -> None:
    """Class 23's files of another version: reports of a newer schema or with fields this version does not
    know, and a sweep database of an older layout (its results table lacks the result column)."""
    header = {"pyhipbench_version": "99.0", "created": "2030-01-01T00:00:00+00:00", "host": {}, "devices": []}
    (folder / "report_v99.json").write_text(json.dumps({"schema_version": 99, **header,
                                                        "results": [report_entry()]}))
    (folder / "report_newer_fields.json").write_text(json.dumps(
        {"schema_version": 2, **header, "results": [report_entry(power_profile={"w": [300.0]})]}))
    db = sqlite3.connect(folder / "old.db")
    db.executescript("CREATE TABLE results (candidate_id TEXT NOT NULL UNIQUE, candidate TEXT NOT NULL, "
                     "kernel TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, "
                     "started_at TEXT NOT NULL, finished_at TEXT NOT NULL);"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "INSERT INTO meta VALUES ('schema_version', '1');"
                     "INSERT INTO meta VALUES ('environment', '{\"devices\": []}');")
    db.commit()
    db.close()


# -- the cases -------------------------------------------------------------------------------------
RUN = ["--kernel", "copy", "--grid", "1", "--block", "256"]
COPY_ARGS = ["--arg", "array:float32:256", "--arg", "array:float32:256", "--arg", "int64:256"]
QUICK = ["--iterations", "2", "--rotate", "1"]
COPY_SETUP = """
dev = dev_cuda()
k = dev.load_module(F + "/k.ptx").kernel("copy")
src = dev.array(np.zeros(256, np.float32)); dst = dev.empty_like(src)
args = [src, dst, hb.int64(256)]
"""
SPY = """
from pyhipbench import cli as _cli
_seen = []
# What `run` measures with: cli.bench in a single-module CLI, cli.run.bench_with in the package.
_spied, _name = (_cli, "bench") if hasattr(_cli, "bench") else (_cli.run, "bench_with")
_real_bench = getattr(_spied, _name)
def _spy(*call, **keywords):
    # bench_with(launches, options) (a list of pyhipbench.Launch), or bench_with(kernel, grid, block, args, ...)
    first = call[0]
    args = first[0].args if isinstance(first, (list, tuple)) and first and hasattr(first[0], "args") else call[3]
    _seen.append([a.to_numpy() if hasattr(a, "to_numpy") else None for a in args])
    return _real_bench(*call, **keywords)
setattr(_spied, _name, _spy)
"""
RANDOM_CHECK = """
values = _seen[0][0] if _seen else None
verdict(values is not None and values.any() and values.min() >= 0 and values.max() <= 127 and len(set(values.tolist())) > 8,
        f"first argument's values: {None if values is None else values[:8].tolist()}")
"""


def cli(cls, name, argv, needs=(), **kw) -> Case:
    return Case(cls, name, "cli", argv, tuple(needs), **kw)


def api(cls, name, body, needs=(), setup="", **kw) -> Case:
    return Case(cls, name, "api", body, tuple(needs), setup=setup, **kw)


def cases() -> list[Case]:
    c: list[Case] = []
    # 1. LLVM aborts: contained, a package error quoting LLVM, naming the kernel and the target
    for target in ("gfx1100", "gfx1030", "gfx1101", "gfx1200"):
        c.append(api(1, f"compile_ir(MFMA, {target})", f'compile_ir(Path(F + "/mfma.ll"), "{target}")',
                     ["mfma_tile", target, "Cannot select"], setup="from pyhipbench.codegen import compile_ir"))
    c.append(api(1, "compile_ir(MFMA16, gfx1100)", 'compile_ir(Path(F + "/mfma16.ll"), "gfx1100")',
                 ["mfma_tile", "gfx1100", "Cannot select"], setup="from pyhipbench.codegen import compile_ir"))
    for target in ("sm_90", "sm_80", "sm_89"):
        c.append(api(1, f"compile_ir(WGMMA, {target})", f'compile_ir(Path(F + "/wgmma.ll"), "{target}")',
                     ["matmul_kernel", target, "Cannot select"], setup="from pyhipbench.codegen import compile_ir"))
    c.append(cli(1, "compile mfma.ll --target gfx1100", ["compile", "{F}/mfma.ll", "--target", "gfx1100", "-o", "{O}/x"],
                 ["mfma_tile", "gfx1100", "Cannot select"]))
    c.append(cli(1, "compile wgmma.ll --target sm_90", ["compile", "{F}/wgmma.ll", "--target", "sm_90", "-o", "{O}/x"],
                 ["matmul_kernel", "sm_90", "Cannot select"]))
    c.append(api(1, "compile_for_device(MFMA, gfx1100 device)",
                 'compile_for_device(Path(F + "/mfma.ll"), dev_hip(arch="gfx1100"))',
                 ["mfma_tile", "gfx1100", "Cannot select"], setup="from pyhipbench.codegen import compile_for_device"))
    c.append(cli(1, "run mfma.ll on a gfx1100 device", ["run", "{F}/mfma.ll", "--kernel", "mfma_tile", "--grid", "1",
                 "--block", "64"], ["mfma_tile", "gfx1100", "Cannot select"], device="hip:gfx1100"))

    # 2. output paths: checked before any work; a failed write keeps the measurement
    for opt_out, why in (("/nonexistent/dir/x", "/nonexistent/dir"), ("{F}/dir", "directory"),
                         ("{F}/a_file/x", "not a directory"), ("", ("empty", "''", "directory", "file path")),
                         ("/proc/x", "/proc"), ("/dev/full", "/dev/full")):
        c.append(cli(2, f"compile -o {opt_out!r}", ["compile", "{F}/k.ll", "--target", "sm_90", "-o", opt_out],
                     [opt_out.replace("{F}", "") or "-o", why]))
    for opt_out, why in (("/nonexistent/r.json", "/nonexistent"), ("{F}/dir", "directory"),
                         ("{F}/a_file/r.json", "not a directory"), ("", ("empty", "''", "directory", "file path"))):
        c.append(cli(2, f"run --json/--out {opt_out!r}", ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, *QUICK, "{REPORT}",
                                                        opt_out],
                     [opt_out.replace("{F}", "") or ("--json", "--out"), why]))
    for target in ("/proc/r.json", "{F}/full.json", "/sys/r.json"):
        c.append(cli(2, f"run --json/--out {target} (write fails after the run)",
                     ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, *QUICK, "{REPORT}", target],
                     [target.replace("{F}/", "")], needs_stdout=('"kernel"',)))
    c.append(cli(2, "compile -o a bad path, IR that also fails",
                 ["compile", "{F}/latin1.ll", "--target", "sm_90", "-o", "/nonexistent/dir/x"], ["/nonexistent/dir"]))

    # 3. unreadable inputs: one error path for run and compile
    inputs = {"absent.ll": ("absent.ll", ("no such file", "does not exist", "cannot read")),
              "dir": ("dir", ("directory", "not a file")), "latin1.ll": ("latin1.ll", ("utf-8", "0xe9")),
              "empty.ll": ("empty.ll", ("empty", "no kernel", "0 bytes")), "nul.ll": ("nul.ll", ("nul", "\\x00", "0x00")),
              "noise.ll": ("noise.ll", ("utf-8", "not", "invalid")), "loop": ("loop", ("symbolic links", "loop")),
              "dangling.ll": ("dangling.ll", ("no such file", "does not exist", "cannot read"))}
    for file, (shown, why) in inputs.items():
        c.append(cli(3, f"run {file}", ["run", "{F}/" + file, *RUN], [shown, why]))
        c.append(cli(3, f"compile {file}", ["compile", "{F}/" + file, "--target", "sm_90", "-o", "{O}/x"], [shown, why]))

    # 4. truncated or malformed code objects: through run and load_module
    where = ("truncat", "ends", "past", "beyond", "outside", "offset", "byte", "bytes", "line", "no kernel",
             "missing", "corrupt", "malformed", "expected")
    hsacos = ["h3000", "h64", "h16", "h1000", "hhalf", "hless1", "hshoff", "hshnum", "hshstrndx"]
    for name in hsacos:
        c.append(api(4, f"load_module({name}.hsaco)", f'dev.load_module(Path(F + "/{name}.hsaco").read_bytes())',
                     [("hsaco", "elf", "code object", "amdgpu"), where], setup="dev = dev_hip()"))
    for name in ("h3000", "h64", "hshoff"):
        c.append(cli(4, f"run {name}.hsaco", ["run", "{F}/" + name + ".hsaco", *RUN],
                     [("hsaco", "elf", "code object"), where], device="hip"))
    for name in ("p100", "pentry", "pversion", "pnoentry", "pbrace", "plast"):
        c.append(api(4, f"load_module({name}.ptx) + kernel('copy')",
                     f'dev.load_module(Path(F + "/{name}.ptx").read_bytes()).kernel("copy")',
                     [("ptx", "copy"), where], setup="dev = dev_cuda()"))
    for name in ("p100", "pentry"):
        c.append(cli(4, f"run {name}.ptx", ["run", "{F}/" + name + ".ptx", *RUN], [("ptx", "copy"), where]))
    for name in ("c30", "c63", "c100", "cshoff"):
        c.append(api(4, f"load_module({name}.cubin)", f'dev.load_module(Path(F + "/{name}.cubin").read_bytes())',
                     [("cubin", "elf", "code object"), where], setup="dev = dev_cuda()"))
    for name in ("f8", "f16", "f40", "fhalf", "fsize", "fgarbage"):
        c.append(api(4, f"load_module({name}.fatbin)", f'dev.load_module(Path(F + "/{name}.fatbin").read_bytes())',
                     [("fatbin", "code object"), where], setup="dev = dev_cuda()"))
    c.append(cli(4, "run f40.fatbin", ["run", "{F}/f40.fatbin", *RUN], [("fatbin", "code object"), where]))

    # 5. numpy integers work everywhere an integer goes; bools and floats are refused
    ok = dict(expect="ok", setup=COPY_SETUP, check="verdict(len(res.times_us) >= 1, 'ran')")
    for label, call in (("grid=np.int64(4)", "grid=np.int64(4), block=256"),
                        ("block=np.int32(256)", "grid=1, block=np.int32(256)"),
                        ("grid=(np.int64(2), np.uint16(1))", "grid=(np.int64(2), np.uint16(1)), block=256"),
                        ("iterations=np.int64(100)", "grid=1, block=256, iterations=np.int64(100)"),
                        ("iterations=np.uint32(10)", "grid=1, block=256, iterations=np.uint32(10)"),
                        ("warmup=np.int64(2)", "grid=1, block=256, warmup=np.int64(2)"),
                        ("shared_bytes=np.int64(0)", "grid=1, block=256, shared_bytes=np.int64(0)"),
                        ("rotate=np.int64(2)", "grid=1, block=256, rotate=np.int64(2)")):
        rotate = "" if "rotate" in call else ", rotate=1"
        c.append(api(5, f"bench({label})", f"res = hb.bench(k, args=args, {call}{rotate})", **ok))
    c.append(api(5, "bench(Pointer(np.uint64(addr)))",
                 "res = hb.bench(k, 1, 256, [hb.Pointer(np.uint64(src.address)), dst, hb.int64(256)], rotate=1)", **ok))
    c.append(api(5, "dev.empty(np.int64(16))", "a = dev.empty(np.int64(16))", expect="ok", setup=COPY_SETUP,
                 check="verdict(a.nbytes == 64, a.nbytes)"))
    c.append(api(5, "dev.empty((np.int32(4), np.int64(4)))", "a = dev.empty((np.int32(4), np.int64(4)))", expect="ok",
                 setup=COPY_SETUP, check="verdict(a.nbytes == 64, a.nbytes)"))
    for label, call, value in (("hb.int64(np.int64(5))", "hb.int64(np.int64(5))", 5),
                               ("hb.int32(np.int16(3))", "hb.int32(np.int16(3))", 3),
                               ("hb.uint8(np.uint8(7))", "hb.uint8(np.uint8(7))", 7)):
        c.append(api(5, label, f"s = {call}", expect="ok", setup="import pyhipbench as hb",
                     check=f"verdict(s.pack() == int({value}).to_bytes(s.nbytes, 'little'), s.pack())"))
    refuse = dict(setup=COPY_SETUP)
    for label, call, shown in (("grid=4.0", "grid=4.0, block=256", "4.0"),
                               ("grid=np.float64(4)", "grid=np.float64(4), block=256", "4.0"),
                               ("grid=True", "grid=True, block=256", "True"),
                               ("block=np.bool_(True)", "grid=1, block=np.bool_(True)", "True"),
                               ("grid='4'", "grid='4', block=256", "'4'"),
                               ("iterations=100.0", "grid=1, block=256, iterations=100.0", "100.0"),
                               ("iterations=np.float32(100)", "grid=1, block=256, iterations=np.float32(100)", "100.0"),
                               ("iterations='100'", "grid=1, block=256, iterations='100'", "'100'"),
                               ("iterations=np.complex64(100)", "grid=1, block=256, iterations=np.complex64(100)",
                                "complex64"),
                               ("warmup=1.5", "grid=1, block=256, warmup=1.5", "1.5"),
                               ("shared_bytes=0.0", "grid=1, block=256, shared_bytes=0.0", "0.0"),
                               ("rotate=2.0", "grid=1, block=256, rotate=2.0", "2.0"),
                               ("rotate=True", "grid=1, block=256, rotate=True", "True")):
        rotate = "" if "rotate" in call else ", rotate=1"
        c.append(api(5, f"bench({label})", f"hb.bench(k, args=args, {call}{rotate})", [shown, "expected"], **refuse))
    for label, call, shown in (("Pointer(1.5)", "hb.Pointer(1.5)", "1.5"), ("Pointer(-1)", "hb.Pointer(-1)", "-1"),
                               ("Pointer(True)", "hb.Pointer(True)", "True"),
                               ("hb.int32(1.5)", "hb.int32(1.5)", "1.5"),
                               ("hb.int32(np.float64(2))", "hb.int32(np.float64(2))", "2.0"),
                               ("hb.int64(True)", "hb.int64(True)", "True"),
                               ("hb.int16('3')", "hb.int16('3')", "'3'"),
                               ("dev.empty(4.0)", "dev.empty(4.0)", "4.0"),
                               ("dev.empty((4, 2.0))", "dev.empty((4, 2.0))", "2.0"),
                               ("dev.empty(-1)", "dev.empty(-1)", "-1"),
                               ("dev.empty(True)", "dev.empty(True)", "True")):
        c.append(api(5, label, call, [shown, ("expected", "must be", "not a", "negative")], **refuse))

    # 6. silently wrong: refused, or done right
    for dtype in ("int32", "int8", "uint16", "int64"):
        c.append(cli(6, f"run --arg array:{dtype}:1024:random fills random integers",
                     ["run", "{F}/k.ptx", *RUN, "--arg", f"array:{dtype}:1024:random", "--arg", "array:float32:256",
                      "--arg", "int64:256", *QUICK], expect="ok", setup=SPY, check=RANDOM_CHECK))
    comp = "from pyhipbench.codegen import compile_ir"
    for flag in ('"yes"', '"no"', "1", "0", '"False"'):
        c.append(api(6, f"compile_ir(icache_flush={flag})", f'compile_ir(Path(F + "/amd.ll"), "gfx942", icache_flush={flag})',
                     ["icache_flush", flag.strip('"')], setup=comp))
    for shape, dtype in (("(2**32, 2**32)", "np.float32"), ("(2**32, 2**32)", "np.float64"), ("(2**62, 4)", "np.float32"),
                         ("(2**64,)", "np.int8"), ("(-1, 4)", "np.float32")):
        c.append(api(6, f"dev.empty({shape}, {dtype})", f"a = dev.empty({shape}, {dtype})",
                     [("2**", "18446744073709551616", "4294967296", "-1", "73786976294838206464",
                       "295147905179352825856", "4611686018427387904"), ("bytes", "expected", "free", "negative")],
                     setup="dev = dev_cuda()"))
    # IR that names no processor (no "target-cpu"), so the target alone decides
    for target in ("sm_1", "sm_0", "sm_10", "sm_9999", "gfx1", "gfx9999"):
        c.append(cli(6, f"compile --target {target}", ["compile", "{F}/plain_nv.ll" if target.startswith("sm") else "{F}/amd.ll",
                                                       "--target", target, "-o", "{O}/x"], [target, ("expected", "unknown", "not")]))
    c.append(api(6, "compile_ir(target='sm_1')", 'compile_ir(Path(F + "/plain_nv.ll"), "sm_1")', ["sm_1"], setup=comp))
    c.append(cli(6, "compile -o the input", ["compile", "{F}/k.ll", "--target", "sm_90", "-o", "{F}/k.ll"],
                 ["k.ll", ("input", "overwrite", "source")]))
    c.append(cli(6, "compile -o the input by another path", ["compile", "{F}/k.ll", "--target", "sm_90", "-o", "{F}/dir/../k.ll"],
                 ["k.ll", ("input", "overwrite", "source")]))
    c.append(cli(6, "run --json/--out the input", ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, *QUICK, "{REPORT}",
                                                   "{F}/k.ptx"],
                 ["k.ptx", ("input", "overwrite", "source")]))
    c.append(cli(6, "run k.ptx --no-icache-flush", ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, *QUICK, "--no-icache-flush"],
                 ["--no-icache-flush", ("code object", "ptx")]))
    c.append(cli(6, "run k.hsaco --no-icache-flush", ["run", "{F}/k.hsaco", *RUN, *COPY_ARGS, *QUICK, "--no-icache-flush"],
                 ["--no-icache-flush", ("code object", "hsaco")], device="hip"))
    for prologue in ("garbage!!", "}", ".entry x {", "mov.u32 %nope, 1;"):
        c.append(cli(6, f"compile sm_90 --prologue {prologue!r}",
                     ["compile", "{F}/k.ll", "--target", "sm_90", "--prologue", prologue, "-o", "{O}/x"],
                     ["prologue", prologue.split()[0]]))
    c.append(cli(6, "compile gfx942 --prologue 'not_an_instruction'",
                 ["compile", "{F}/amd.ll", "--target", "gfx942", "--prologue", "not_an_instruction", "-o", "{O}/x"],
                 ["not_an_instruction", ("prologue", "invalid", "error")]))
    c.append(cli(6, "compile --help says the AMD prologue runs before the argument loads", ["compile", "--help"],
                 expect="ok", check="verdict('s[0:1]' in _stdout() and 'v0' in _stdout(), 'help text')"))

    # 7. overflow and sizes: the package's errors, naming the value
    for call, shown in (("hb.float32(1e40)", "1e+40"), ("hb.float16(1e5)", "100000"), ("hb.float64(10**400)", "1000"),
                        ("hb.float32(10**400)", "1000"), ("hb.float16(np.float64(1e300))", "1e+300"),
                        ("hb.int8(128)", "128"), ("hb.int8(-129)", "-129"), ("hb.uint8(-1)", "-1"),
                        ("hb.int32(2**31)", "2147483648"), ("hb.uint64(2**64)", "18446744073709551616"),
                        ("hb.int64(-2**63 - 1)", "-9223372036854775809"), ("hb.uint32(-1)", "-1")):
        c.append(api(7, call, call, [shown, ("range", "largest", "expected")], setup="import pyhipbench as hb"))
    # each in its place among the copy kernel's arguments, so the value is the only thing wrong
    for spec, shown in (("float32:1e40", ("1e40", "1e+40")), ("float64:1e400", ("1e400", "1e+400")),
                        ("int8:300", "300"), ("uint32:-1", "-1"), ("uint64:-1", "-1"),
                        ("int64:99999999999999999999", "99999999999999999999"),
                        ("array:float32:1000000000000", "1000000000000"), ("array:float64:1000000000000", "1000000000000"),
                        ("array:int8:10000000000000", "10000000000000"), ("shared:float32:1000000000000", "1000000000000"),
                        ("array:float32:1000000000000000:random", "1000000000000000")):
        args = ["--arg", spec, *COPY_ARGS[2:]] if spec.startswith(("array", "shared")) else [*COPY_ARGS[:4], "--arg", spec]
        c.append(cli(7, f"run --arg {spec}", ["run", "{F}/k.ptx", *RUN, *args, *QUICK], [shown]))
    for size in ("infM", "-1", "nan", "1E999", "99999999T", ""):
        c.append(cli(7, f"info --size {size!r}", ["info", "--size", size], [repr(size)[1:-1] or "--size", ("expected", "not a size")]))
    for opt, value in (("--iterations", "1000000000000"), ("--warmup", "1000000000000"), ("--shared-bytes", "1099511627776"),
                       ("--grid", "1099511627776"), ("--block", "8589934592")):
        argv = ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, "--rotate", "1", opt, value]
        c.append(cli(7, f"run {opt} {value}", argv, [(opt, opt[2:].replace("-", "_")), value]))

    # 8. kernel names: refused before any tool runs, naming the kernel and the rule
    bad_names = {"nv": ['a"b', "1copy", "my kernel", "a-b", "%k", "k@v", "kérnel", "a\\b"],
                 "amd": ['a"b', "1copy", "k@v", ".Lhidden", "a\\b", "new\nline"]}
    for family, names in bad_names.items():
        target = "sm_90" if family == "nv" else "gfx942"
        for name in names:
            shown = ("1copy" if name == "1copy" else name.replace("\n", "\\n"), repr(name)[1:-1])
            c.append(api(8, f"compile_ir(kernel {name!r}, {target})",
                         f"compile_ir({named_kernel_ir(family, name)!r}, {target!r})",
                         [shown, ("kernel name", "kernel")], setup=comp))
    for family, name in (("nv", '"q"'), ("nv", "9lives"), ("amd", "9lives"), ("amd", 'a"b')):
        target = "sm_90" if family == "nv" else "gfx942"
        file = f"name_{family}_{abs(hash(name)) % 10000}.ll"
        c.append(cli(8, f"compile kernel {name!r} --target {target}", ["compile", "{O}/" + file, "--target", target, "-o", "{O}/x"],
                     [(name, repr(name)[1:-1]), "kernel"],
                     setup=f"Path(O + '/{file}').write_text({named_kernel_ir(family, name)!r})"))

    c.append(cli(8, "run --chain naming a kernel not in the module",
                 ["run", "{F}/k.ptx", "--chain", "{F}/chain_no_kernel.json", *QUICK], ["reduce", "copy"]))

    # 9. defaults always work: run's default iterations and --rotate auto on a 256 MB last-level cache
    for count in (256, 16384, 262144):
        c.append(cli(9, f"run defaults, 256 MB LLC, 2 x {count} float32", ["run", "{F}/k.ptx", *RUN, "--arg",
                     f"array:float32:{count}", "--arg", f"array:float32:{count}", "--arg", f"int64:{count}"],
                     expect="ok", device="cuda:llc256"))
    c.append(cli(9, "run defaults, gfx942 device, 2 x 256 float32", ["run", "{F}/k.hsaco", *RUN, *COPY_ARGS],
                 expect="ok", device="hip:llc256"))
    c.append(api(9, "bench() defaults, 256 MB LLC, 2 KiB set", "res = hb.bench(k, 1, 256, args)", expect="ok",
                 setup=COPY_SETUP.replace("dev_cuda()", "dev_cuda(llc_bytes=256 << 20)"),
                 check="verdict(len(res.times_us) >= 1, 'ran')"))
    c.append(api(9, "bench() defaults, 4 MB LLC, 2 KiB set", "res = hb.bench(k, 1, 256, args)", expect="ok",
                 setup=COPY_SETUP, check="verdict(len(res.times_us) >= 1, 'ran')"))
    c.append(cli(9, "demo defaults on a fake H200-like device", ["demo"], expect="ok", device="cuda:llc256", timeout=300))

    # 10. compile time linear in the kernel count
    # a quadratic pass would take 16x for 4x the kernels
    c.append(api(10, "compile 500 then 2000 AMD kernels: time ratio < 5 (linear 4)", """
t0 = time.perf_counter(); compile_ir(Path(F + "/many500.ll"), "gfx942"); t1 = time.perf_counter()
compile_ir(Path(F + "/many2000.ll"), "gfx942"); t2 = time.perf_counter()
verdict((t2 - t1) / (t1 - t0) < 5, f"500 kernels {t1 - t0:.2f} s, 2000 kernels {t2 - t1:.2f} s, x{(t2 - t1) / (t1 - t0):.1f}")
""", expect="ok", setup=comp, timeout=600))

    # 11. hip-python pairs by the HIP version its bindings were generated for; info shows a profile then,
    # under a line naming both versions (-v: the release that fits)
    for runtime, label, needs in (("71500000", "HIP 7.15 (ROCm 10)", ["7.15", "hip-python", "10."]),
                                  ("60400000", "HIP 6.4", ["6.4", "hip-python"]),
                                  ("70100000", "HIP 7.1", ["7.1", "hip-python"])):
        c.append(cli(11, f"info -v --backend hip, hip-python 7.2 on {label}", ["info", "-v", "--backend", "hip"],
                     expect="ok", needs_stdout=tuple(needs), device=None,
                     env={"FAKE_HIP_RUNTIME_VERSION": runtime, "@LD": "hip"}))
    c.append(cli(11, "info --backend hip, hip-python 7.2 on its own HIP", ["info", "--backend", "hip"], expect="ok",
                 device=None, env={"@LD": "hip"}))

    # 12. tests that cannot fail (a static scan of the checkout's tests/)
    c += [Case(12, name, "static", scan) for name, scan in STATIC_SCANS.items()]
    c += newer_surfaces()
    c += output_surfaces()
    return c


# Sweeps in a child: workers on the fake HIP runtime, one GPU; Triton modules found in the inputs folder.
SWEEP_ENV = """
os.environ.update(PYHIPBENCH_HIP_LIBRARY=LIBS["hip"], FAKE_HIP_DEVICE_COUNT="1",
                  PYTHONPATH=F + os.pathsep + os.environ.get("PYTHONPATH", ""))
sys.path.insert(0, F)
"""
SWEEP = ["--out", "{O}/r.db", "--gpus", "0"]
LIAR = """
from fakes.tensors import FakeTensor
class Liar:
    def __init__(self, device=None, raises_in=None):
        self.tensor, self.device, self.raises_in = FakeTensor(np.zeros(256, np.float32)), device, raises_in
    def __dlpack_device__(self):
        if self.raises_in == "device":
            raise RuntimeError("the producer broke")
        return self.device if self.device is not None else self.tensor.__dlpack_device__()
    def __dlpack__(self, **keywords):
        if self.raises_in == "export":
            raise ValueError("the producer cannot export")
        return self.tensor.__dlpack__(**keywords)
"""
QUICK_BENCH = ", iterations=2, warmup=0, cache='warm'"


def newer_surfaces() -> list[Case]:
    """Classes 13-19: compare's reports, sweep spaces, Triton modules, interrupts, DLPack producers, messages."""
    c: list[Case] = []
    # 13. files that are not UTF-8, or nest deeper than a parser recurses
    for name in ("space_ff.json", "space_ff.yaml"):
        c.append(cli(13, f"sweep {name}", ["sweep", "{F}/" + name, *SWEEP], [name, ("utf-8", "decod", "not text")],
                     device=None, setup=SWEEP_ENV))
        c.append(api(13, f"load_space({name})", f'hb.load_space(F + "/{name}")', [name, ("utf-8", "decod", "not text")]))
    for name in ("deep.json", "deep.yaml"):
        c.append(cli(13, f"sweep {name}", ["sweep", "{F}/" + name, *SWEEP], [name, ("deep", "nest")],
                     device=None, setup=SWEEP_ENV))
        c.append(api(13, f"load_space({name})", f'hb.load_space(F + "/{name}")', [name, ("deep", "nest")]))
    c.append(cli(13, "compare report_bin.json", ["compare", "{F}/report_bin.json", "{F}/report_ok.json"],
                 ["report_bin.json", ("utf-8", "decod", "not text", "JSON")], device=None))
    c.append(cli(13, "compare report_deep.json", ["compare", "{F}/report_deep.json", "{F}/report_ok.json"],
                 ["report_deep.json", ("deep", "nest")], device=None))
    # 14. compare trusts no field of a report
    for name, field_ in (("minimal", ("rel_ci", "p10", "p90", "outliers", "samples", "missing")), ("grid_int", "grid"),
                         ("median_str", "median"), ("median_zero", "median"), ("median_neg", "median"),
                         ("median_nan", "median"), ("median_inf", "median"), ("ci_inverted", "ci_"),
                         ("twice", ("twice", "duplicate", "more than once")), ("stats_list", "stats_us"),
                         ("kernel_int", "kernel"), ("block_neg", "block"), ("timer_none", "timer")):
        file = f"report_{name}.json"
        c.append(cli(14, f"compare {file}", ["compare", "{F}/" + file, "{F}/report_ok.json"], [file, field_],
                     device=None))
        c.append(cli(14, f"compare ok {file}", ["compare", "{F}/report_ok.json", "{F}/" + file], [file, field_],
                     device=None))
    c.append(cli(14, "compare report_not_list.json", ["compare", "{F}/report_not_list.json", "{F}/report_ok.json"],
                 ["report_not_list.json"], device=None))
    # 15. a Triton module that fails to import, however it fails
    for mod, why in (("tmod_syntax", ("SyntaxError", "syntax")), ("tmod_raises", "refuses to load"),
                     ("tmod_exits", ("SystemExit", "exit")), ("tmod_zero", ("ZeroDivisionError", "division"))):
        c.append(cli(15, f"sweep space_{mod}.json", ["sweep", f"{{F}}/space_{mod}.json", *SWEEP], [mod, why],
                     device=None, setup=SWEEP_ENV))
        c.append(api(15, f"TritonSource({mod}:add)", f'hb.TritonSource(function="{mod}:add")', [mod, why],
                     setup=SWEEP_ENV))
    # 16. interrupts, a failing disk, two sweeps on one database
    c.append(cli(16, "Ctrl-C during a sweep", ["sweep", "{F}/space_big.json", *SWEEP], [("resume", "--resume")],
                 device=None, timeout=240, setup=SWEEP_ENV + "import signal, threading\n"
                 "_timer = threading.Timer(5.0, lambda: os.kill(os.getpid(), signal.SIGINT))\n"
                 "_timer.daemon = True\n_timer.start()\n"))
    c.append(cli(16, "the database's disk fills up", ["sweep", "{F}/space_big.json", *SWEEP],
                 ["r.db", ("resume", "--resume")], device=None, timeout=240, setup=SWEEP_ENV +
                 "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                 "resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))\n"))
    c.append(cli(16, "two sweeps on one database", ["sweep", "{F}/space_big.json", *SWEEP],
                 [("another sweep", "is writing", "locked", "in use")], device=None, timeout=240, setup=SWEEP_ENV +
                 "import atexit, subprocess\n"
                 "_first = subprocess.Popen([sys.executable, '-m', 'pyhipbench.cli', 'sweep', F + '/space_big.json',"
                 " '--out', O + '/r.db', '--gpus', '0'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                 "atexit.register(_first.kill)\n"
                 "for _ in range(300):\n"
                 "    if os.path.exists(O + '/r.db') and os.path.getsize(O + '/r.db') > 0: break\n"
                 "    time.sleep(0.1)\ntime.sleep(1)\n"))
    # 17. DLPack producers that lie, fail, or point at host memory
    for device, shown in (("'rocm:0'", "rocm:0"), ("(2, 0, 0)", "(2, 0, 0)"), ("(None, 0)", "None"),
                          ("(2.5, 0)", "2.5"), ("(2, -1)", "-1"), ("(2, 2**70)", str(2**70)), ("[2, 0]", "[2, 0]")):
        c.append(api(17, f"__dlpack_device__ -> {device}", f"hb.bench(k, 1, 256, [Liar({device}), dst, hb.int64(256)]"
                     f"{QUICK_BENCH})", ["argument 0", shown], setup=COPY_SETUP + LIAR))
    for where, why in (("device", "the producer broke"), ("export", "the producer cannot export")):
        c.append(api(17, f"the producer's __dlpack{'_device' if where == 'device' else ''}__ raises",
                     f"hb.bench(k, 1, 256, [Liar(raises_in={where!r}), dst, hb.int64(256)]{QUICK_BENCH})",
                     ["argument 0", why], setup=COPY_SETUP + LIAR))
    c.append(api(17, "a capsule on the GPU over host memory",
                 f"hb.bench(k, 1, 256, [FakeTensor(np.zeros(256, np.float32)), dst, hb.int64(256)]{QUICK_BENCH})",
                 ["argument 0", ("host memory", "not device memory", "not memory of")], setup=COPY_SETUP + LIAR))
    c.append(api(17, "an expect= callable that raises",
                 "def check(outputs):\n    raise ValueError('the checker broke')\n"
                 f"hb.bench(k, 1, 256, args, expect=check{QUICK_BENCH})", ["expect", "the checker broke"],
                 setup=COPY_SETUP))
    # 18. summaries that name what they mean; candidates that cannot change under their id
    c.append(api(18, "a candidate's tags changed after construction",
                 "space = [{'source': {'kind': 'code-object', 'path': F + '/k.ptx'}, 'kernel': 'copy', 'grid': [1],"
                 " 'block': [256], 'args': ['array:float32:4', 'array:float32:4', 'int64:4'], 'tags': {'t': [1]}}]\n"
                 "cand = hb.candidates_from_json(space)[0]\nbefore = (cand.id, json.dumps(cand.to_json(), sort_keys=True,"
                 " default=str))\n"
                 "for change in (lambda: cand.tags.__setitem__('x', 1), lambda: cand.tags['t'].append(2)):\n"
                 "    try:\n        change()\n    except Exception:\n        pass\n",
                 expect="ok", check="after = (cand.id, json.dumps(cand.to_json(), sort_keys=True, default=str))\n"
                 "verdict(after == before or after[0] != before[0], f'{before} -> {after}')\n"))
    c.append(cli(18, "a space listing one candidate twice", ["sweep", "{F}/space_twice.json", *SWEEP], expect="ok",
                 device=None, setup=SWEEP_ENV, check="verdict('twice' in _stdout(), _stdout()[-600:])\n"))
    # 19. messages that say what to do
    c.append(cli(19, "run --compile-option -DN=4", ["run", "{F}/k.cu", "--kernel", "k", "--grid", "1", "--block", "1",
                                                    "--arg", "array:float32:1", "--compile-option", "-DN=4"],
                 ["--compile-option=-DN=4"]))
    c.append(api(19, "load_module(PTX text as a str)", 'dev.load_module(open(F + "/k.ptx").read())',
                 ["bytes", "path"], setup=COPY_SETUP))
    c.append(cli(19, "compile --prologue writing the kernarg pointer",
                 ["compile", "{F}/amd.ll", "--target", "gfx942", "--prologue", "s_mov_b64 s[0:1], 0", "-o", "{O}/x"],
                 ["s[0:1]", ("kernarg", "kernel argument")]))
    # 19. a chain's references (run --chain, a sweep candidate's launches) name the launch, the value and the rule
    for name, needs in (("later", ["chain_later.json", "launches[1]", "ref:1.1", ("earlier", "before")]),
                        ("missing_arg", ["chain_missing_arg.json", "ref:0.5", "3 arguments", "0 to 2"]),
                        ("not_indices", ["chain_not_indices.json", "ref:src.dst", "ref:LAUNCH.ARG"])):
        c.append(cli(19, f"run --chain chain_{name}.json", ["run", "{F}/k.ptx", "--chain", f"{{F}}/chain_{name}.json",
                                                           *QUICK], needs))
    c.append(cli(19, "run --chain with --kernel", ["run", "{F}/k.ptx", "--chain", "{F}/chain_ok.json", *RUN, *QUICK],
                 ["--kernel", "--chain"]))
    c.append(cli(19, "run --chain: the second launch reads the first one's output",
                 ["run", "{F}/k.ptx", "--chain", "{F}/chain_ok.json", *QUICK], expect="ok",
                 check="verdict('copy -> copy' in _stdout(), _stdout()[-600:])\n"))
    c.append(api(19, "a sweep candidate's reference to a later launch",
                 "hb.candidates_from_json([{'source': {'kind': 'code-object', 'path': F + '/k.ptx'}, 'launches': "
                 "json.load(open(F + '/chain_later.json'))['launches']}])",
                 ["candidate 0", "launches[1]", "ref:1.1", ("earlier", "before")]))
    c.append(api(19, "a sweep candidate's reference outside a chain",
                 "hb.candidates_from_json([{'source': {'kind': 'code-object', 'path': F + '/k.ptx'}, 'kernel': 'copy', "
                 "'grid': [1], 'block': [256], 'args': ['ref:0.1', 'array:float32:256', 'int64:256']}])",
                 ["ref:0.1", ("launch", "chain")]))
    c.append(cli(19, "compile IR with an x86 datalayout", ["compile", "{F}/x86_layout.ll", "--target", "gfx942",
                                                           "-o", "{O}/x"], ["datalayout"]))
    c.append(cli(19, "compile IR whose own inline asm holds the prologue marker", ["compile", "{F}/own_asm.ll", "--target", "gfx942",
                                                               "-o", "{O}/x"], [("inline asm", "inline-asm"), "marker"]))
    return c


# Standard output that fails as a command writes it: a pipe whose reader has gone, or a full device.
CLOSED_STDOUT = """
_reader, _writer = os.pipe()
os.close(_reader)
sys.stdout = open(_writer, "w")
"""
FULL_STDOUT = 'sys.stdout = open("/dev/full", "w")\n'
FILE_LIMIT = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
"""
# The disk fills once the sweep is measured: a 1 KB file-size limit as its summary is printed (the database,
# larger, is not written again; an export of the fastest, with the environment, is larger).
LIMIT_AFTER_THE_SWEEP = """
import resource, signal
from pyhipbench.cli import sweep as _sweep_command
_print_summary = _sweep_command.print_summary
def _full_after_the_sweep(*args, **keywords):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    return _print_summary(*args, **keywords)
_sweep_command.print_summary = _full_after_the_sweep
"""
REPORT_BEFORE = '{"the report": "before"}\n'
WRITTEN = """
def _written(name, holds):
    path = Path(O) / name
    return path.exists() and holds in path.read_text()
def _leftovers():
    return [name for name in os.listdir(O) if name.startswith(".")]
"""
# The fake NVML, whose counter draws no power unless told to: it never steps. A 0.05 s energy window.
NO_STEPS = """
if not LIBS["nvml"]:
    raise RuntimeError("the checkout has no fake NVML (tests/fakes/fake_nvml.c)")
os.environ["PYHIPBENCH_NVML_LIBRARY"] = LIBS["nvml"]
from pyhipbench._measure import energy as _energy
_energy.WINDOW_S = 0.05
"""
STOPS_READING = """
import threading
from pyhipbench._device.nvml import NvmlDevice, Unreadable
_thread_errors = []
threading.excepthook = lambda a: _thread_errors.append(f"{a.exc_type.__name__}: {a.exc_value}")
_read, _reads = NvmlDevice.energy_mj, []
def _lost(self):
    _reads.append(1)
    if len(_reads) > 1:
        raise Unreadable("nvmlDeviceGetTotalEnergyConsumption: GPU is lost")
    return _read(self)
NvmlDevice.energy_mj = _lost
"""
# A report of `results` results of `samples` samples each, at O/`name`, as run --out writes it: made by a child
# of its own (so the case's peak memory is the command's alone), then the clock WITHIN reads starts.
MAKE_REPORT = r"""
import json, sys
import numpy as np
from pyhipbench._measure.stats import summarize
path, results, samples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
entries = []
for i in range(results):
    times = rng.lognormal(np.log(100.0), 0.01, samples)
    s = summarize(times)
    entries.append({"kernel": f"k{i}", "grid": [64, 1, 1], "block": [256, 1, 1], "timer": "cupti",
                    "cache_state": "warm", "stats_us": {"median": s.median, "ci_low": s.ci_low,
                    "ci_high": s.ci_high, "rel_ci": s.rel_ci, "p10": s.p10, "p90": s.p90, "outliers": s.outliers},
                    "samples": s.count, "stop_reason": "precision", "rotation": {"sets": 1},
                    "host_us_per_kernel": 1.0, "wall_s": 0.01, "device": {"name": "GPU"}, "times_us": times.tolist()})
with open(path, "w") as file:
    json.dump(entries, file)
"""
WITHIN = """
_took_s, _peak_mb = time.perf_counter() - _started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
verdict(_rc == 0 and _took_s < {limit_s}, f"exit {{_rc}}, {{_took_s:.1f}} s (limit {limit_s} s), peak {{_peak_mb}} MB")
"""
NEWER_DB = """
import sqlite3
from pyhipbench._results.store import Store
Store(Path(O) / "new.db").close()
_db = sqlite3.connect(Path(O) / "new.db")
_db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
_db.commit()
_db.close()
"""


def big_report(name: str, results: int, samples: int) -> str:
    """A case's set-up: MAKE_REPORT's report at O/`name`, then the clock started."""
    return (f"import resource, subprocess\nsubprocess.run([sys.executable, '-c', {MAKE_REPORT!r}, O + '/{name}', "
            f"'{results}', '{samples}'], check=True)\n_started = time.perf_counter()\n")


def kept_whole(name: str) -> str:
    """A case's check: O/`name` holds REPORT_BEFORE still, and no partly written file is left."""
    return (f"_held = Path(O, {name!r}).read_text()\nverdict(_held == {REPORT_BEFORE!r} and not _leftovers(), "
            f"f'{name} holds {{_held[:60]!r}}..., left behind: {{_leftovers()}}')\n")


def output_surfaces() -> list[Case]:
    """Classes 20-23: failed outputs, energy without a figure, big inputs, stored files of another version."""
    c: list[Case] = []
    run = ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, *QUICK]
    # 20. every output tried: each failure one line naming its path (or standard output) and the cause
    c.append(cli(20, "run --out - --out r.json, standard output a closed pipe", [*run, "--out", "-", "--out", "{O}/r.json"],
                 ["standard output", "broken pipe"], setup=CLOSED_STDOUT + WRITTEN,
                 check="verdict(_written('r.json', '\"kernel\"'), 'r.json not written')\n"))
    c.append(cli(20, "run --out r.md, the summary's standard output a closed pipe", [*run, "--out", "{O}/r.md"],
                 ["standard output", "broken pipe"], setup=CLOSED_STDOUT + WRITTEN,
                 check="verdict(_written('r.md', '| copy |'), 'r.md not written')\n"))
    c.append(cli(20, "run --out - --out r.csv, standard output a full device", [*run, "--out", "-", "--out", "{O}/r.csv"],
                 ["standard output", "no space left"], setup=FULL_STDOUT + WRITTEN,
                 check="verdict(_written('r.csv', 'kernel,grid'), 'r.csv not written')\n"))
    c.append(cli(20, "run --out a full disk --out r.md", [*run, "--out", "{F}/full.json", "--out", "{O}/r.md"],
                 ["full.json", "no space left"], needs_stdout=('"kernel"',), setup=WRITTEN,
                 check="verdict(_written('r.md', '| copy |'), 'r.md not written')\n"))
    c.append(cli(20, "run --out a full disk, then --out - (--format csv)",
                 [*run, "--out", "{F}/full.md", "--out", "-", "--format", "csv"], ["full.md", "no space left"],
                 needs_stdout=("kernel,grid",)))
    c.append(cli(20, "run --out r.json beyond a file-size limit: the report before stays whole",
                 ["run", "{F}/k.ptx", *RUN, *COPY_ARGS, "--iterations", "2000", "--rotate", "1", "--out", "{O}/r.json",
                  "--out", "{O}/r.md"], ["r.json", "file too large"], needs_stdout=('"kernel"',),
                 setup=WRITTEN + f"Path(O, 'r.json').write_text({REPORT_BEFORE!r})\n" + FILE_LIMIT,
                 check=kept_whole("r.json") + "if _census['verdict']['ok']:\n"
                       "    verdict(_written('r.md', '| copy |'), 'r.md not written')\n"))
    c.append(cli(20, "run --out into a folder that takes no file (/proc/self)", [*run, "--out", "/proc/self/r.json"],
                 ["/proc/self/r.json", "not writable"]))
    c.append(cli(20, "sweep --export a full disk --export best.md, standard output a closed pipe",
                 ["sweep", "{F}/space.json", *SWEEP, "--export", "{F}/full.json", "--export", "{O}/best.md"],
                 ["full.json", "no space left", "standard output"], device=None,
                 setup=SWEEP_ENV + CLOSED_STDOUT + WRITTEN,
                 check="verdict(_written('best.md', '| copy |'), 'best.md not written')\n"))
    c.append(cli(20, "sweep --export beyond a file-size limit: the export before stays whole",
                 ["sweep", "{F}/space.json", *SWEEP, "--export", "{O}/best.json"], ["best.json", "file too large"],
                 device=None, setup=SWEEP_ENV + WRITTEN + f"Path(O, 'best.json').write_text({REPORT_BEFORE!r})\n"
                 + LIMIT_AFTER_THE_SWEEP, check=kept_whole("best.json")))
    c.append(cli(20, "plot -o a full disk", ["plot", "{F}/report_ok.json", "-o", "{F}/full.png"],
                 ["full.png", "no space left"], device=None))
    c.append(cli(20, "plot -o beyond a file-size limit: the picture before stays whole",
                 ["plot", "{F}/report_ok.json", "-o", "{O}/r.png"], ["r.png", "file too large"], device=None,
                 setup=WRITTEN + f"Path(O, 'r.png').write_text({REPORT_BEFORE!r})\n"
                 + FILE_LIMIT.replace("16384", "4096"), check=kept_whole("r.png")))
    c.append(cli(20, "compare, standard output a closed pipe", ["compare", "{F}/report_ok.json", "{F}/report_ok.json"],
                 ["standard output", "broken pipe"], device=None, setup=CLOSED_STDOUT))
    # 21. an energy window that gives no figure keeps the measurement and says why
    c.append(cli(21, "run --energy, a counter that never steps",
                 [*run, "--cache", "warm", "--energy", "--out", "{O}/r.json"], expect="ok", setup=NO_STEPS + WRITTEN,
                 check="verdict(_rc == 0 and 'energy not read' in _stdout() and _written('r.json', 'unreadable'), "
                       "_stdout()[-400:])\n"))
    quick_energy = "res = hb.bench(k, 1, 256, args, cache='warm', iterations=5, warmup=0, rotate=1, energy=True)"
    c.append(api(21, "bench(energy=True), a counter that never steps", quick_energy, expect="ok",
                 setup=NO_STEPS + COPY_SETUP,
                 check="verdict(res.samples == 5 and 'stepped 0 times' in str(res.energy), res.energy)"))
    c.append(api(21, "bench(energy=True), a counter that stops reading in the window", quick_energy, expect="ok",
                 setup=NO_STEPS + COPY_SETUP + STOPS_READING,
                 check="verdict(not _thread_errors and res.samples == 5 and 'GPU is lost' in str(res.energy), "
                       "f'{res.energy}; in the polling thread: {_thread_errors}')"))
    # 22. big inputs: bounded time (the check says the time and the peak memory)
    for name, command, results, samples, limit_s in (
            ("compare a report of 10**6 samples with itself", "compare", 1, 1_000_000, 10),
            ("plot a report of 10**6 samples", "plot", 1, 1_000_000, 30),
            ("compare a report of 20000 results with itself", "compare", 20_000, 20, 30)):
        argv = [command, "{O}/big.json"] + (["{O}/big.json"] if command == "compare" else ["-o", "{O}/big.png"])
        c.append(cli(22, f"{name} ({limit_s} s)", argv, expect="ok", device=None,
                     setup=big_report("big.json", results, samples), check=WITHIN.format(limit_s=limit_s),
                     timeout=300))
    # 23. files another pyhipbench wrote: refused naming the version or layout, or read where they can be
    for command in (["compare", "{F}/report_v99.json", "{F}/report_ok.json"],
                    ["plot", "{F}/report_v99.json", "-o", "{O}/x.png"]):
        c.append(cli(23, f"{command[0]} a report of schema version 99", command,
                     ["report_v99.json", "schema_version", "99"], device=None))
    for name, file in (("a report of schema version 1 (a bare list)", "report_ok.json"),
                       ("a report whose results hold a field this version does not know", "report_newer_fields.json")):
        c.append(cli(23, f"compare {name}", ["compare", "{F}/" + file, "{F}/report_ok.json"], expect="ok",
                     device=None, check="verdict('copy grid 1024x1x1' in _stdout(), _stdout()[-300:])\n"))
    for command in (["compare", "{F}/old.db", "{F}/report_ok.json"], ["plot", "{F}/old.db", "-o", "{O}/x.png"],
                    ["sweep", "{F}/space.json", "--out", "{F}/old.db", "--resume", "--gpus", "0"]):
        c.append(cli(23, f"{command[0]} a sweep database of an older layout", command, ["old.db", "older layout"],
                     device=None, setup=SWEEP_ENV if command[0] == "sweep" else ""))
    for command in (["compare", "{O}/new.db", "{F}/report_ok.json"],
                    ["sweep", "{F}/space.json", "--out", "{O}/new.db", "--resume", "--gpus", "0"]):
        c.append(cli(23, f"{command[0]} a sweep database of schema version 99", command, ["new.db", "99"],
                     device=None, setup=(SWEEP_ENV if command[0] == "sweep" else "") + NEWER_DB))
    return c


def _scan(pattern_check):
    def scan(tests: Path) -> list[str]:
        found = []
        for path in sorted(tests.rglob("test_*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern_check(path, line):
                    found.append(f"{path.relative_to(tests.parent)}:{number}: {line.strip()}")
        return found
    return scan


def _clone_test_mutates(tests: Path) -> list[str]:
    path = tests / "test_ir.py"
    text = path.read_text() if path.exists() else ""
    start = text.find("def test_module_clone_is_independent")
    if start < 0:
        return []
    body = text[start:text.find("\ndef ", start + 1)]
    mutating = ("inject", "prologue", "set_", ".name =", "triple =", "add_", "remove")
    return [] if any(m in body for m in mutating) else [f"tests/codegen/test_ir.py: {body.strip().splitlines()[0]} never mutates"]


STATIC_SCANS = {
    "pytest.raises(Exception, ...)": _scan(lambda p, line: "pytest.raises(Exception" in line),
    "pytest.raises(SystemExit) with no code or message checked":
        _scan(lambda p, line: "pytest.raises(SystemExit)" in line and " as " not in line),
    "test_module_clone_is_independent mutates a module": _clone_test_mutates,
    "GPU tests asserting only '> 0'": _scan(lambda p, line: "gpu" in p.parts and line.strip().startswith("assert")
                                            and line.rstrip().endswith("> 0") and " and " not in line),
}


# -- running ---------------------------------------------------------------------------------------
PRELUDE = r'''
import json, os, sys, time, traceback, warnings
from pathlib import Path
sys.path.insert(0, TESTS)
import numpy as np
warnings.simplefilter("ignore")
_census = {"verdict": None}
def verdict(ok, detail=""):
    _census["verdict"] = {"ok": bool(ok), "detail": str(detail)[:2000]}
def _emit():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a case's own standard output (a closed pipe, /dev/full)
            pass
    os.write(1, ("\n" + MARK + json.dumps(_census) + "\n").encode())
class _Tee:
    def __init__(self, stream): self.stream, self.text = stream, []
    def write(self, s): self.text.append(s); return self.stream.write(s)
    def flush(self): self.stream.flush()
    def __getattr__(self, name): return getattr(self.stream, name)
sys.stdout = _Tee(sys.stdout)
def _stdout(): return "".join(sys.stdout.text)
def _fake_device(backend, **props):
    import pyhipbench as hb
    from pyhipbench import _core
    from fakes.host_backend import HostBackend
    load = _core.load_driver
    be = HostBackend(backend=backend, **props)
    be.driver_version = lambda: 12040  # what compile_for_device asks a CUDA driver
    return hb.Device.from_backend(be, load(backend, LIBS[backend]))
def dev_cuda(**props): return _fake_device("cuda", **props)
def dev_hip(**props):
    props.setdefault("arch", "gfx942")
    return _fake_device("hip", **props)
def _device(spec):
    backend, _, variant = spec.partition(":")
    props = {"llc_bytes": 256 << 20, "l2_bytes": 50 << 20, "total_bytes": 141 << 30} if variant == "llc256" else {}
    if variant.startswith("gfx"):
        props["arch"] = variant
    free = {"free_bytes": 130 << 30} if variant == "llc256" else {}
    return (dev_cuda if backend == "cuda" else dev_hip)(**free, **props)
'''


def child_code(case: Case, fixtures: Path, out: Path, tests: Path, libs: dict) -> str:
    head = (f"F = {str(fixtures)!r}\nO = {str(out)!r}\nTESTS = {str(tests)!r}\nLIBS = {json.dumps(libs)}\n"
            f"MARK = {MARK!r}\n" + PRELUDE)
    setup = case.setup
    if case.kind == "cli":
        argv = [a.replace("{F}", str(fixtures)).replace("{O}", str(out)) for a in case.body]
        device = "" if case.device is None else \
            f"from pyhipbench import cli as _cli_for_device\n_dev = _device({case.device!r})\n" \
            "_cli_for_device._open_device = lambda backend, index=0: _dev\n"
        setup = device + setup
        # The result file's option: --out.
        body = (f"from pyhipbench import cli\n_argv = {argv!r}\n"
                "_report = '--out' if 'compare' in cli.build_parser().format_help() else '--json'\n"
                "_argv = [_report if a == '{REPORT}' else a for a in _argv]\n"
                "try:\n    _rc = cli.main(_argv)\nexcept SystemExit as e:\n"
                "    _rc = e.code\n_census['rc'] = _rc\n")
    else:
        body = case.body
        setup = "import pyhipbench as hb\n" + setup
    return (head + "try:\n" + textwrap.indent(setup or "pass", "    ") +
            "\nexcept BaseException as e:\n    _census['harness'] = f'{type(e).__name__}: {e}'\n"
            "    _emit(); sys.exit(0)\n"
            "try:\n" + textwrap.indent(textwrap.dedent(body), "    ") +
            ("\n" + textwrap.indent(textwrap.dedent(case.check), "    ") if case.check else "") +
            "\nexcept BaseException as e:\n"
            "    _census['raised'] = {'type': type(e).__name__, 'module': type(e).__module__, 'message': str(e),"
            " 'traceback': traceback.format_exc()[-3000:]}\n"
            "_emit()\n")


def contains(text: str, fragment) -> bool:
    options = fragment if isinstance(fragment, tuple) else (fragment,)
    return any(o.lower() in text.lower() for o in options)


def classify(case: Case, rc: int, stdout: str, stderr: str, report: dict | None) -> tuple[str, str, str]:
    """(outcome, why, shown output) for one case's child."""
    def tail(text: str) -> str:
        return text.strip()[-1500:]
    if report is None:
        died = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
        return "crash", f"the process died ({died}) before reporting", tail(stderr or stdout)
    if report.get("harness"):
        return "harness", "the census's own setup failed: " + report["harness"], ""
    raised = report.get("raised")
    if raised:
        shown = tail(raised["traceback"])
        if case.kind == "cli":
            return "crash", f"{raised['type']} escaped cli.main (a traceback)", shown
        if not raised["module"].startswith("pyhipbench"):
            return "crash", f"{raised['module']}.{raised['type']} is not the package's", shown
        message = f"{raised['type']}: {raised['message']}"
    elif case.kind == "cli":
        if "Traceback (most recent call last)" in stderr:
            return "crash", "a traceback on stderr", tail(stderr)
        if report.get("rc") in (0, None):
            message = None
        else:
            message = stderr
    else:
        message = None
    if message is None:  # accepted
        if case.expect == "error":
            return "silent", "accepted", tail(stdout.split(MARK)[0] + stderr)
        v = report.get("verdict")
        if v is not None and not v["ok"]:
            return "silent", "ran, but its result is wrong: " + v["detail"], tail(stdout.split(MARK)[0])
        return "clear", "worked" + (f" ({v['detail']})" if v else ""), ""
    if case.expect == "ok":
        return "unclear", "refused an input that must work", tail(message)
    v = report.get("verdict")
    if v is not None and not v["ok"]:
        return "silent", "named, but lost what it had to keep: " + v["detail"], tail(message)
    missing = [f for f in case.needs if not contains(message, f)]
    missing += [f for f in case.needs_stdout if not contains(stdout, f)]
    if missing:
        return "unclear", "lacks " + ", ".join(map(repr, missing)), tail(message)
    return "clear", "", tail(message)


def run_case(case: Case, python: str, repo: Path, fixtures: Path, scratch: Path, libs: dict, index: int) -> dict:
    record = {"class": case.cls, "name": case.name, "kind": case.kind, "expect": case.expect}
    if case.kind == "static":
        found = case.body(repo / "tests")
        record.update(outcome="silent" if found else "clear", why=f"{len(found)} found" if found else "none found",
                      output="\n".join(found[:10]))
        return record
    out = scratch / f"case{index}"
    out.mkdir()
    # Each case gets its own copy of the inputs: a case the code under test
    # wrongly lets overwrite its input (-o the input) must not spoil the next.
    fixtures = Path(shutil.copytree(fixtures, out / "inputs", symlinks=True))
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYHIPBENCH_HIP_LIBRARY")}
    env["PYTHONPATH"] = str(repo)
    for key, value in case.env.items():
        if key == "@LD":
            env["LD_LIBRARY_PATH"] = str(Path(libs[value]).parent)
        else:
            env[key] = value
    started = time.perf_counter()
    try:
        result = subprocess.run([python, "-c", child_code(case, fixtures, out, repo / "tests", libs)], env=env,
                                capture_output=True, text=True, timeout=case.timeout, cwd=out)
        rc, stdout, stderr = result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = -signal.SIGKILL, str(e.stdout or ""), f"timed out after {case.timeout} s"
    report = None
    if MARK in stdout:
        report = json.loads(stdout.rsplit(MARK, 1)[1].splitlines()[0])
    outcome, why, shown = classify(case, rc, stdout, stderr, report)
    record.update(outcome=outcome, why=why, output=shown, seconds=round(time.perf_counter() - started, 2))
    return record


def build_fakes(python: str, repo: Path, folder: Path) -> dict:
    """The checkout's fake libcuda, libamdhip64 and NVML, each in a folder of its own, built by its own
    tests/fakes ("" for an NVML the checkout has no fake of: class 21's set-up then fails, as harness)."""
    code = (f"import sys; sys.path.insert(0, {str(repo / 'tests')!r})\nfrom fakes.build import build_fake\n"
            f"print(build_fake({str(folder / 'cuda')!r}, 'libcuda.so.1'))\n"
            f"print(build_fake({str(folder / 'hip')!r}, 'libamdhip64.so'))\n"
            f"try:\n    print(build_fake({str(folder / 'nvml')!r}, 'libnvidia-ml.so.1'))\n"
            "except Exception:\n    print('-')\n")
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    if result.returncode != 0:
        raise SystemExit(f"building the fake drivers with {repo}/tests/fakes failed:\n{result.stderr}")
    cuda, hip, nvml = result.stdout.split()
    return {"cuda": cuda, "hip": hip, "nvml": "" if nvml == "-" else nvml}


def describe_package(python: str, repo: Path) -> str:
    code = "import pyhipbench, pyhipbench._core as c; print(pyhipbench.__file__, c.__file__)"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    if result.returncode != 0:
        raise SystemExit(f"{python} cannot import pyhipbench from {repo}:\n{result.stderr}")
    return result.stdout.strip()


def print_tables(records: list[dict]) -> None:
    by_class = defaultdict(Counter)
    for r in records:
        by_class[r["class"]][r["outcome"]] += 1
    columns = OUTCOMES + (("harness",) if any(r["outcome"] == "harness" for r in records) else ())
    print(f"{'class':<42} " + " ".join(f"{o:>8}" for o in columns) + f" {'total':>6}")
    for cls in sorted(by_class):
        counts = by_class[cls]
        print(f"{cls:>2}. {CLASSES[cls]:<38} " + " ".join(f"{counts[o]:>8}" for o in columns)
              + f" {sum(counts.values()):>6}")
    total = Counter(r["outcome"] for r in records)
    print(f"{'total':<42} " + " ".join(f"{total[o]:>8}" for o in columns) + f" {len(records):>6}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="checkout whose package is tried (default: this one)")
    parser.add_argument("--python", help="its interpreter (default: REPO/.venv/bin/python)")
    parser.add_argument("--json", type=Path, help="write every case's record here")
    parser.add_argument("--class", dest="classes", type=int, action="append", help="only these classes")
    parser.add_argument("-j", "--jobs", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only those not clear")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    python = args.python or str(repo / ".venv" / "bin" / "python")
    print(f"package: {describe_package(python, repo)}")
    selected = [c for c in cases() if not args.classes or c.cls in args.classes]
    names = Counter((c.cls, c.name) for c in selected)
    assert all(n == 1 for n in names.values()), [k for k, n in names.items() if n > 1]
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as temp:
        temp = Path(temp)
        (temp / "fixtures").mkdir()
        make_fixtures(temp / "fixtures")
        libs = build_fakes(python, repo, temp / "fakes")
        (temp / "scratch").mkdir()
        started = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            records = list(pool.map(lambda ic: run_case(ic[1], python, repo, temp / "fixtures", temp / "scratch",
                                                        libs, ic[0]), enumerate(selected)))
    print(f"{len(records)} bad inputs in {time.perf_counter() - started:.0f} s\n")
    print_tables(records)
    for r in records:
        if r["outcome"] != "clear" or args.verbose:
            print(f"\n[{r['outcome']}] class {r['class']}: {r['name']} -- {r['why']}")
            if r["output"]:
                print(textwrap.indent(r["output"], "    "))
    if args.json:
        args.json.write_text(json.dumps({"repo": str(repo), "records": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
