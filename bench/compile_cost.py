"""What containing LLVM in a worker process costs per compile, and how compile
time grows with the kernel count. No GPU needed.

    .venv/bin/python bench/compile_cost.py            # containment: 50 compiles, 3 ways
    .venv/bin/python bench/compile_cost.py --scaling  # 500 ... 4000 kernels, gfx942

Containment: one small kernel compiled N times, side by side in one run,
(a) emitting in this process (what pyhipbench did before; an LLVM abort kills
the caller), (b) in the warm worker pyhipbench uses (started once, reused),
(c) in a fresh worker per compile (what a spawn-per-compile design costs).
Each figure is the median wall time per compile, ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import llvmlite.binding as llvm

from pyhipbench.codegen import compile_ir, emit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from codegen_helpers import many_kernels  # noqa: E402  (the IR the scaling test uses too)

SMALL = {
    "sm_90": """
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @copy(ptr addrspace(1) %src, ptr addrspace(1) %dst, i64 %n) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %p = getelementptr float, ptr addrspace(1) %src, i64 %i
  %v = load float, ptr addrspace(1) %p
  %q = getelementptr float, ptr addrspace(1) %dst, i64 %i
  store float %v, ptr addrspace(1) %q
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
""",
}
SMALL["gfx942"] = (SMALL["sm_90"].replace("nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa")
                   .replace("ptx_kernel", "amdgpu_kernel")
                   .replace("llvm.nvvm.read.ptx.sreg.tid.x", "llvm.amdgcn.workitem.id.x"))


def _in_process(module, triple, cpu, features, kernels):
    machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)
    return machine.emit_assembly(module.clone())


def _fresh_worker(module, triple, cpu, features, kernels):
    emit.emission_pool().close()
    return _warm(module, triple, cpu, features, kernels)


_warm = emit.assembly


def per_compile_ms(text: str, target: str, compiles: int) -> dict[str, float]:
    figures = {}
    for name, emitter in (("in-process", _in_process), ("warm worker", _warm), ("fresh worker", _fresh_worker)):
        emit.assembly = emitter
        try:
            compile_ir(text, target)  # warm-up: toolchain lookup, worker start
            times = []
            for _ in range(compiles):
                start = time.perf_counter()
                compile_ir(text, target)
                times.append(time.perf_counter() - start)
        finally:
            emit.assembly = _warm
        figures[name] = statistics.median(times) * 1e3
    return figures



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compiles", type=int, default=50)
    parser.add_argument("--scaling", action="store_true", help="time 500 to 4000 kernels instead")
    args = parser.parse_args()
    if args.scaling:
        compile_ir(many_kernels(1), "gfx942")  # warm-up: toolchain lookup, worker start
        for n in (500, 1000, 2000, 4000):
            text = many_kernels(n)
            start = time.perf_counter()
            compile_ir(text, "gfx942")
            seconds = time.perf_counter() - start
            print(f"{n} kernels, gfx942: {seconds:.2f} s ({seconds / n * 1e3:.1f} ms per kernel)")
        return
    print(f"median ms per compile over {args.compiles} compiles of one small kernel")
    print(f"{'target':8} {'in-process':>11} {'warm worker':>12} {'fresh worker':>13}")
    for target, text in SMALL.items():
        f = per_compile_ms(text, target, args.compiles)
        print(f"{target:8} {f['in-process']:11.2f} {f['warm worker']:12.2f} {f['fresh worker']:13.2f}")


if __name__ == "__main__":
    main()
