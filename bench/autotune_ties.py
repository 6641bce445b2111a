"""What autotune's tie round holds, and what it costs, over bench/triton_matmul.py's 24 GEMM configs.

For each size (fp16, size^3), pyhipbench.triton.autotune with the defaults (racing, tie_hold_s=0.1),
then again with tie_hold_s=None, each a new Autotuner (Triton's cache warm after the first): tune()'s
wall, the pick, and each config that was held (its first median, its sustained median, the note).

    python bench/autotune_ties.py [--sizes 512,1024,2048,4096]

Needs an NVIDIA GPU, torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def sizes_option(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 16:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated sizes >= 16")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=sizes_option, default=[512, 1024, 2048, 4096])
    options = parser.parse_args()
    import torch  # after the options are checked: a bad one is refused without a GPU or torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from triton_matmul import configs, grid, label, matmul_kernel

    import pyhipbench as hb
    import pyhipbench.triton as ht
    device = hb.Device()
    for size in options.sizes:
        a, b, c = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(3))
        for hold_s in (0.1, None):
            tuned = ht.autotune(configs(), key=["M", "N", "K"], device=device, tie_hold_s=hold_s)(matmul_kernel)
            started = time.perf_counter()
            tuning = tuned.tune(grid, a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1))
            wall_s = time.perf_counter() - started
            held = [f"{label(r.config)} {r.median_us:.2f} µs -> "
                    + (f"{r.sustained.median_us:.2f} µs" if r.sustained is not None else f"({r.note})")
                    for r in tuning.results if r.sustained is not None or (r.note and "held" in r.note)]
            print(f"{size}^3, tie_hold_s={hold_s}: {wall_s:.2f} s, pick {label(tuning.best)}; held: "
                  + ("; ".join(held) or "none"), flush=True)


if __name__ == "__main__":
    main()
