"""Inductor's max-autotune with its own benchmarker and through pyhipbench.inductor, side by side.

Each (model, dtype, benchmarker) compiles in a fresh process with fresh Inductor and Triton caches
(TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR in a new temporary directory), mode="max-autotune-no-cudagraphs".
Reported per run: the seconds Inductor's autotuning log says it spent benchmarking (and precompiling), the
seconds install() took (it readies the measuring; 0 for Inductor's own), the compile's wall time (the first
call), what pyhipbench measured (pyhipbench.inductor.ledger()), each op's pick, the compiled model's forward
time by a long torch.profiler reading (the device time of its kernels per forward, neither benchmarker), and
whether its outputs match eager (torch.testing's tolerances for the dtype). Writes --out (JSON) and prints a table.

    python bench/inductor_autotune.py --out inductor.json
    python bench/inductor_autotune.py --quick --out quick.json     # one small model, a smoke test
    python bench/inductor_autotune.py --models mlp,gemms --dtypes bfloat16 --out some.json
    python bench/inductor_autotune.py --install '{"tie_hold_s": 0}' --out no_ties.json   # install()'s keywords
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ("mlp", "attention", "gemms")
DTYPES = ("bfloat16", "float16")
BENCHMARKERS = ("inductor", "pyhipbench")
FORWARD_ITERATIONS = 200  # forwards in the profiler's reading
TOOK = re.compile(r"AUTOTUNE benchmarking takes ([0-9.]+) seconds and ([0-9.]+) seconds precompiling for (\d+) "
                  r"choices")
OP = re.compile(r"^AUTOTUNE (\S+?)\((.*)\)$")
CHOICE = re.compile(r"^  (\S+) ([0-9.]+|inf) ms")


def build(name: str, dtype_name: str, quick: bool):
    """(model, inputs) on the GPU in `dtype_name`."""
    import torch
    from torch import nn
    dtype = getattr(torch, dtype_name)
    batch = 256 if quick else 4096
    if name == "mlp":  # a transformer MLP block: two GEMMs with bias and an activation
        width = 512 if quick else 4096
        model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        inputs = (torch.randn(batch, width),)
    elif name == "attention":
        model = _Attention(1024, 16)
        inputs = (torch.randn(8, 1024, 1024),)
    else:  # several GEMM shapes: a tall-skinny, a square and a wide projection
        model = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 2048), nn.SiLU(), nn.Linear(2048, 2048),
                              nn.ReLU(), nn.Linear(2048, 8192))
        inputs = (torch.randn(batch, 1024),)
    return model.to("cuda", dtype).eval(), tuple(x.to("cuda", dtype) for x in inputs)


class _Attention:
    """A self-attention block: QKV projection, scaled dot-product attention, the output projection."""

    def __new__(cls, width: int, heads: int):
        import torch
        from torch import nn

        class Attention(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.qkv, self.out, self.heads = nn.Linear(width, 3 * width), nn.Linear(width, width), heads

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                b, t, c = x.shape
                q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
                y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.out(y.transpose(1, 2).reshape(b, t, c))
        return Attention()


def forward_ms(fn, inputs) -> float:
    """The device time of one forward's kernels, ms: torch.profiler over FORWARD_ITERATIONS forwards."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad():
        for _ in range(20):
            fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(FORWARD_ITERATIONS):
                fn(*inputs)
            torch.cuda.synchronize()
    device_us = sum(e.self_device_time_total for e in prof.key_averages())
    return device_us / FORWARD_ITERATIONS / 1000


LOW_PRECISION_TOLERANCE = {"atol": 2e-2, "rtol": 2e-2}


def child(model_name: str, dtype_name: str, benchmarker: str, quick: bool, out: str, install: str) -> None:
    """One compile, in this (fresh) process; its record to `out`. `install`: install()'s keywords, JSON."""
    import torch
    torch.manual_seed(0)
    started = time.perf_counter()
    if benchmarker == "pyhipbench":  # install() readies the measuring (the device, its timer): timed here
        import pyhipbench.inductor
        pyhipbench.inductor.install(**json.loads(install))
    install_s = time.perf_counter() - started
    model, inputs = build(model_name, dtype_name, quick)
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
    with torch.no_grad():
        started = time.perf_counter()
        got = compiled(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - started
        expected = model(*inputs)
    ledger = None
    if benchmarker == "pyhipbench":  # what pyhipbench measured for the compile, counted
        ledger = pyhipbench.inductor.ledger().to_dict()
    try:  # 16-bit outputs of sums Inductor may reorder: atol = rtol = 2e-2 (the dtype's default atol is 1e-5)
        torch.testing.assert_close(got, expected, **LOW_PRECISION_TOLERANCE if got.dtype in (
            torch.float16, torch.bfloat16) else {})
        matches, mismatch = True, None
    except AssertionError as e:
        matches, mismatch = False, str(e).splitlines()[0]
    max_abs_diff = float((got.float() - expected.float()).abs().max())
    record = {"model": model_name, "dtype": dtype_name, "benchmarker": benchmarker, "install_s": install_s,
              "compile_s": compile_s,
              "forward_ms": forward_ms(compiled, inputs), "eager_forward_ms": forward_ms(model, inputs),
              "matches_eager": matches, "mismatch": mismatch, "max_abs_diff": max_abs_diff, "ledger": ledger}
    Path(out).write_text(json.dumps(record))


def parse_log(stderr: str) -> dict:
    """Inductor's autotuning log: the seconds benchmarking and precompiling, each op's pick."""
    benchmark_s = precompile_s = 0.0
    picks, op = [], None
    for line in stderr.splitlines():
        if (took := TOOK.search(line)):
            benchmark_s += float(took.group(1))
            precompile_s += float(took.group(2))
        elif (found := OP.match(line)):
            op = found.group(1) + "(" + found.group(2) + ")"
        elif op is not None and (choice := CHOICE.match(line)):
            picks.append({"op": op, "pick": choice.group(1), "ms": float(choice.group(2))})
            op = None
    return {"benchmark_s": benchmark_s, "precompile_s": precompile_s, "picks": picks}


def run(model_name: str, dtype_name: str, benchmarker: str, quick: bool, install: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="inductor-autotune-") as fresh:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": f"{fresh}/inductor", "TRITON_CACHE_DIR": f"{fresh}/triton"}
        env.pop("PYHIPBENCH_INDUCTOR", None)  # each run says itself which benchmarker it uses
        out = f"{fresh}/record.json"
        command = [sys.executable, __file__, "--child", model_name, dtype_name, benchmarker, out, "--install", install]
        started = time.perf_counter()
        done = subprocess.run(command + (["--quick"] if quick else []), env=env, capture_output=True, text=True)
        wall_s = time.perf_counter() - started
        if done.returncode != 0 or not Path(out).exists():
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            return {"model": model_name, "dtype": dtype_name, "benchmarker": benchmarker,
                    "error": f"exit {done.returncode}: {tail}"}
        return {**json.loads(Path(out).read_text()), **parse_log(done.stderr), "process_wall_s": wall_s}


def summary(records: list[dict]) -> str:
    lines = [f"{'model':<10} {'dtype':<9} {'benchmarker':<11} {'bench s':>8} {'install s':>9} {'compile s':>9} "
             f"{'fwd ms':>8} {'eager':>5} picks"]
    for r in records:
        if "error" in r:
            lines.append(f"{r['model']:<10} {r['dtype']:<9} {r['benchmarker']:<11} failed: {r['error']}")
            continue
        picks = ", ".join(p["pick"] for p in r["picks"])
        lines.append(f"{r['model']:<10} {r['dtype']:<9} {r['benchmarker']:<11} {r['benchmark_s']:>8.3f} "
                     f"{r['install_s']:>9.2f} {r['compile_s']:>9.2f} {r['forward_ms']:>8.4f} "
                     f"{'ok' if r['matches_eager'] else 'NO':>5} "
                     f"{picks}")
        if r.get("ledger"):
            lines.append(f"{'':<10} pyhipbench ledger: {json.dumps(r['ledger'])}")
    by_key = {(r["model"], r["dtype"], r["benchmarker"]): r for r in records if "error" not in r}
    for model, dtype, _ in sorted(k for k in by_key if k[2] == "inductor"):
        ours = by_key.get((model, dtype, "pyhipbench"))
        theirs = by_key[(model, dtype, "inductor")]
        if ours and theirs["benchmark_s"] > 0 and theirs["forward_ms"] > 0:
            lines.append(f"{model} {dtype}: benchmarking {ours['benchmark_s'] / theirs['benchmark_s']:.2f}x, "
                         f"forward {ours['forward_ms'] / theirs['forward_ms']:.3f}x (pyhipbench / inductor)")
    return "\n".join(lines)


def names(parser: argparse.ArgumentParser, option: str, value: str, known: tuple[str, ...]) -> list[str]:
    """`value`'s comma-separated names, each one of `known`, none twice; else the parser's one-line error."""
    chosen = value.split(",")
    if not value or any(n not in known for n in chosen) or len(set(chosen)) != len(chosen):
        parser.error(f"{option} {value!r}: expected distinct names among {', '.join(known)}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required="--child" not in sys.argv,
                        help="the JSON report, written again after each run")
    parser.add_argument("--quick", action="store_true", help="one small model (the MLP block, bf16)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"among {', '.join(MODELS)}")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help=f"among {', '.join(DTYPES)}")
    parser.add_argument("--install", default="{}", help="pyhipbench.inductor.install()'s keywords, a JSON object "
                        "(default: {}, its defaults)")
    parser.add_argument("--child", nargs=4, metavar=("MODEL", "DTYPE", "BENCHMARKER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child[:3], args.quick, args.child[3], args.install)
        return
    try:
        keywords = json.loads(args.install)
    except ValueError:
        keywords = None
    if not isinstance(keywords, dict):
        parser.error(f"--install {args.install!r}: expected a JSON object of pyhipbench.inductor.install()'s keywords")
    from pyhipbench.errors import BenchError
    from pyhipbench.inductor._settings import Settings
    try:  # checked here as install() checks them, not first in each child process
        Settings.from_keywords(keywords)
    except BenchError as e:
        parser.error(f"--install {args.install!r}: {e}")
    models = names(parser, "--models", args.models, MODELS)
    dtypes = names(parser, "--dtypes", args.dtypes, DTYPES)
    plan = [("mlp", "bfloat16")] if args.quick else [(m, d) for m in models for d in dtypes]
    records = []
    for model_name, dtype_name in plan:
        for benchmarker in BENCHMARKERS:
            records.append(run(model_name, dtype_name, benchmarker, args.quick, args.install))
            Path(args.out).write_text(json.dumps({"install": keywords, "records": records}, indent=1))
            print(f"{model_name} {dtype_name} {benchmarker}: done", file=sys.stderr)
    print(summary(records))


if __name__ == "__main__":
    main()
