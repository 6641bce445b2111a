"""Picks checked the way users would check them: pyhipbench.triton.autotune in fresh processes, judged
against a long reference and against the kernel's time in the model it runs in.

For each space of bench/model_blocks.py chosen (default: the flash-attention forward, the split-K GEMM
with its reset_to_zero, the GEMM), each reading in a process of its own:

  tune        pyhipbench.triton.autotune with its defaults (or --cache) in --processes new processes,
              each with a fresh Triton cache (so a fresh pyhipbench tuning cache, which lives there):
              its pick, the tuning's wall and compile wall
  triton      Triton's own autotuner (triton.autotune, its do_bench) once, Triton's cache warm: its pick
  reference   every config measured long, in the configs' order and in reverse (one process each):
              same-state (the default) pyhipbench.triton.autotune with race=False, tie_hold_s=None,
              precision 1e-4 and max_time_s --reference-ms, in the cache state the tuning used; or
              do-bench, triton.testing.do_bench with rep=--reference-ms (Triton's flush: 256 MB zeroed
              before each launch). Both passes together name the winner as bench/compile_ahead.py does
              (each config's mean of its two medians, give or take half their difference)
  in-model    each config's kernel time in its model, eager and compiled: cache_state_study.py's
              in_model_reading (--iterations forwards, both orders)

Per space and process: the pick, its % above the reference's winner (and whether within the two passes'
noise), its % above the in-model best in each mode, and whether it meets the target there: within 1 % of
the in-model winner, or as fast in the model as Triton's own pick. Then how many processes meet it on
every space and mode. Prints the tables; --out FILE.json keeps every reading. Progress goes to stderr.

    python bench/pick_quality.py [--spaces attention,split-k,gemm] [--processes 5] [--configs N] [--cache auto]
        [--modes eager,compiled] [--reference same-state] [--reference-ms 300] [--iterations 200] [--quick]
        [--out FILE.json]

--quick is a smoke test: one space (the first of --spaces, else split-k), 2 processes, the first 8 configs.

Needs an NVIDIA GPU, torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cache_state_study import MODES, SPACE_NAMES, WITHIN, in_model_reading, names, progress
from compile_ahead import judged_by_both

REFERENCES = ("same-state", "do-bench")
CACHES = ("auto", "clean-cold", "dirty-cold", "warm")
TRITON = "Triton's autotuner"
# The reference's precision: far past what --reference-ms reaches, so each config is measured that long (unless
# its CI is one 32 ns clock tick wide first).
REFERENCE_PRECISION = 1e-4


def space_configs(space_name: str, settings: dict) -> list:
    from model_blocks import SPACES
    return SPACES[space_name].configs()[:settings["configs"]]


def work_tune(settings: dict) -> dict:
    """pyhipbench.triton.autotune with its defaults over each space: the pick and what the tuning cost."""
    from model_blocks import SPACES, label

    import pyhipbench as hb
    device = hb.Device("cuda")
    out = {}
    for space_name in settings["spaces"]:
        progress(f"tune: {space_name}")
        tuning = SPACES[space_name].autotune(space_configs(space_name, settings), device, cache=settings["cache"])
        out[space_name] = {"pick": label(tuning.best), "wall_s": tuning.wall_s,
                           "compile_wall_s": tuning.compile_wall_s,
                           "results": [{"label": label(r.config), **r.to_dict()} for r in tuning.results]}
    return out


def work_triton(settings: dict) -> dict:
    """Triton's own autotuner over each space: its pick and wall."""
    from model_blocks import SPACES, label
    out = {}
    for space_name in settings["spaces"]:
        progress(f"Triton's autotuner: {space_name}")
        started = time.perf_counter()
        best = SPACES[space_name].triton_autotune(space_configs(space_name, settings))
        out[space_name] = {"pick": label(best), "wall_s": time.perf_counter() - started}
    return out


def work_reference(settings: dict) -> dict:
    """Every config of each space measured for --reference-ms, in settings["order"]: {label: {"median_ms"}},
    or {"error"} for a config that could not run."""
    from model_blocks import SPACES, label

    import pyhipbench as hb
    device = hb.Device("cuda")
    out: dict = {}
    for space_name in settings["spaces"]:
        progress(f"reference ({settings['reference']}, {settings['order']}): {space_name}")
        space = SPACES[space_name]
        configs = space_configs(space_name, settings)
        configs = configs if settings["order"] == "forward" else configs[::-1]
        readings = out[space_name] = {}
        if settings["reference"] == "same-state":
            tuning = space.autotune(configs, device, cache=settings["cache"], race=False, tie_hold_s=None,
                                    precision=REFERENCE_PRECISION, max_time_s=settings["reference_ms"] / 1000)
            for r in tuning.results:
                readings[label(r.config)] = {"error": r.error} if r.error is not None else \
                    {"median_ms": r.median_us / 1000, "samples": r.result.samples}
            continue
        for config in configs:
            try:
                median_ms, p80_ms = space.do_bench(config, settings["reference_ms"])
            except Exception as e:  # Triton's refusals (out of resources) are readings here, not crashes
                readings[label(config)] = {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}
                continue
            readings[label(config)] = {"median_ms": median_ms, "p80_ms": p80_ms}
    return out


def work_in_model(settings: dict) -> dict:
    """Each space's configs read in the model, per mode: cache_state_study.in_model_reading."""
    import pyhipbench as hb
    device = hb.Device("cuda")
    out: dict = {}
    for space_name in settings["spaces"]:
        out[space_name] = {}
        for mode in settings["modes"]:
            progress(f"in the {mode} model: {space_name}")
            out[space_name][mode] = in_model_reading(space_name, mode, space_configs(space_name, settings),
                                                     settings["iterations"], device)
    return out


WORK = {"tune": work_tune, "triton": work_triton, "reference": work_reference, "in-model": work_in_model}


def in_child(kind: str, cache_dir: Path, settings: dict) -> dict:
    """`kind`'s work in a new process whose Triton cache is `cache_dir`; its stderr (progress) passes
    through."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", kind,
                           "--settings", json.dumps(settings)], stdout=subprocess.PIPE, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {kind} process failed (exit {done.returncode}); its stderr is above")
    return json.loads(done.stdout.strip().splitlines()[-1])


def judged(pick: str, forward: dict, reverse: dict, in_model: dict[str, dict], triton_pick: str) -> dict:
    """One pick against both reference passes and, per mode, against the in-model readings: its fraction
    above the in-model best, Triton's pick's, and whether it meets the target (within 1 % of the in-model
    winner, or no slower in the model than Triton's pick)."""
    modes = {}
    for mode, readings in in_model.items():
        model = {k: v["median_us"] for k, v in readings.items() if "median_us" in v}
        best = min(model.values())
        over = model[pick] / best - 1 if pick in model else None
        triton_over = model[triton_pick] / best - 1 if triton_pick in model else None
        as_good = over is not None and triton_over is not None and over <= triton_over
        modes[mode] = {"winner": min(model, key=model.__getitem__), "over_best": over,
                       "triton_over_best": triton_over, "meets": over is not None and (over <= WITHIN or as_good)}
    reference = judged_by_both(forward, reverse, pick)
    reference["above_winner"] = reference["over_winner"] - 1 if "over_winner" in reference else None
    return {"pick": pick, "reference": reference, "in_model": modes, "meets": all(m["meets"] for m in modes.values())}


def percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:+.2f} %"


def table(out: dict, spaces: list[str], modes: list[str]) -> str:
    lines = ["| space | who | pick | wall s | above reference winner | within its noise | "
             + " | ".join(f"{mode}: above in-model best" for mode in modes) + " | meets |",
             "|---|---|---|---|---|---|" + "---|" * len(modes) + "---|"]
    for space_name in spaces:
        for who, verdict in out["verdicts"][space_name].items():
            reference = verdict["reference"]
            meets = "-" if who == TRITON else "yes" if verdict["meets"] else "NO"  # Triton's pick: the bar itself
            lines.append(f"| {space_name} | {who} | {verdict['pick']} | {verdict['wall_s']:.2f} | "
                         f"{percent(reference['above_winner'])} | {'yes' if reference['within_noise'] else 'no'} | "
                         + " | ".join(percent(verdict["in_model"][mode]["over_best"]) for mode in modes)
                         + f" | {meets} |")
    processes = len(out["tune"])
    meeting = sum(all(out["verdicts"][s][f"process {p + 1}"]["meets"] for s in spaces) for p in range(processes))
    lines += ["", f"processes whose picks meet the target on every space and mode: {meeting} of {processes}"]
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spaces", type=lambda t: names(t, SPACE_NAMES, "--spaces"), default=None,
                        help="default attention,split-k,gemm")
    parser.add_argument("--processes", type=int, default=5, help="fresh processes that tune each space")
    parser.add_argument("--configs", type=int, default=None, help="the first N configs of each space (all)")
    parser.add_argument("--cache", choices=CACHES, default="auto", help="autotune's cache state")
    parser.add_argument("--modes", default=",".join(MODES), type=lambda t: names(t, MODES, "--modes"))
    parser.add_argument("--reference", choices=REFERENCES, default="same-state")
    parser.add_argument("--reference-ms", type=float, default=300.0, help="each config's reference, ms per pass")
    parser.add_argument("--iterations", type=int, default=200, help="timed forwards per config and pass, in the model")
    parser.add_argument("--quick", action="store_true", help="one space, 2 processes, the first 8 configs")
    parser.add_argument("--out", type=Path, help="write every reading as JSON here")
    parser.add_argument("--worker", choices=tuple(WORK), help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.processes < 1 or options.iterations < 10 or options.configs is not None and options.configs < 2 \
            or not options.reference_ms > 0:
        parser.error(f"--processes {options.processes}, --iterations {options.iterations}, --configs "
                     f"{options.configs}, --reference-ms {options.reference_ms}: expected at least 1 process, "
                     "10 forwards, 2 configs and a positive time")
    if options.quick:
        options.spaces = (options.spaces or ["split-k"])[:1]
        options.processes, options.configs = 2, min(options.configs or 8, 8)
    options.spaces = options.spaces or ["attention", "split-k", "gemm"]
    return options


def main() -> None:
    options = parse()
    if options.worker:
        print(json.dumps(WORK[options.worker](json.loads(options.settings))))
        return
    settings = {"spaces": options.spaces, "configs": options.configs, "cache": options.cache,
                "modes": options.modes, "iterations": options.iterations, "reference": options.reference,
                "reference_ms": options.reference_ms}
    out: dict = {"settings": settings, "tune": []}
    for p in range(options.processes):
        progress(f"process {p + 1} of {options.processes}: pyhipbench.triton.autotune, fresh Triton cache")
        cache_dir = Path(tempfile.mkdtemp(prefix="pick_quality_"))
        out["tune"].append(in_child("tune", cache_dir, settings))
    # The last process's cache holds every config: the other readings compile nothing.
    out["triton"] = in_child("triton", cache_dir, settings)
    out["reference"] = {order: in_child("reference", cache_dir, {**settings, "order": order})
                        for order in ("forward", "reverse")}
    out["in_model"] = in_child("in-model", cache_dir, settings)
    out["verdicts"] = {}
    for space_name in options.spaces:
        triton_pick = out["triton"][space_name]["pick"]
        whose = {f"process {p + 1}": run[space_name] for p, run in enumerate(out["tune"])}
        whose[TRITON] = out["triton"][space_name]
        out["verdicts"][space_name] = {
            who: {**judged(run["pick"], out["reference"]["forward"][space_name],
                           out["reference"]["reverse"][space_name], out["in_model"][space_name], triton_pick),
                  "wall_s": run["wall_s"]}
            for who, run in whose.items()}
    print(table(out, options.spaces, options.modes))
    if options.out:
        options.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
