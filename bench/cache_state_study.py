"""Which isolated cache state ranks Triton configs as the model they run in does.

For each space of bench/model_blocks.py (a GEMM and a split-K GEMM in an MLP block, the fused bias + GELU
between them, a flash-attention forward in an attention block), one process:

  in the model  each config's kernel time in place among its neighbours: the block's forward run
                back to back (eager, and compiled by torch.compile around the kernel), timed by
                pyhipbench.bench_callable (cupti, warm: nothing between two forwards, graph=False: the
                forward called as real code calls it, --iterations forwards after the warm-up), the
                kernel's own median read from the call's per-kernel CUPTI records; the configs read in
                their order, then again in reverse, each config's reading the mean of its two
  isolated      each config launched alone on inputs of the model's shapes by pyhipbench.triton.autotune,
                under each cache state (clean-cold, dirty-cold, warm): once with race=False and
                tie_hold_s=None (every config to the ±1 % precision: the ranking), then --repeats times
                with autotune's defaults (racing, the tie round: the pick a user gets)

Per space, model mode and state: Spearman's and Kendall's rank correlation of the isolated medians with
the in-model readings; whether the full pass's fastest is the in-model winner and its in-model cost (%
above the in-model best); how many of the --repeats picks are the in-model winner, and within 1 % of it.
Then, per state, the same over every space and mode. Prints the tables; --out FILE.json keeps every
reading. Progress goes to stderr.

    python bench/cache_state_study.py [--spaces gemm,split-k,bias-gelu,attention] [--modes eager,compiled]
        [--states clean-cold,dirty-cold,warm] [--iterations 200] [--repeats 3] [--configs N] [--out FILE.json]

Needs an NVIDIA GPU (the in-model reading is CUPTI's), torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from rank_agreement import kendall, spearman

SPACE_NAMES = ("gemm", "split-k", "bias-gelu", "attention")
MODES = ("eager", "compiled")
STATES = ("clean-cold", "dirty-cold", "warm")
WITHIN = 0.01  # a pick within 1 % of the in-model winner counts as the winner: the target's tolerance


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def in_model_reading(space_name: str, mode: str, configs: list, iterations: int, device) -> dict[str, dict]:
    """Each config's kernel time in the model, µs, by label: `space_name`'s block run `mode` ("eager" or
    "compiled"), its forward timed by bench_callable (cupti, warm, called, `iterations` forwards after the
    warm-up) once per config in the configs' order and once in reverse; `median_us` the mean of the kernel's
    two medians, `passes_us` both. A config whose launch fails has its `error` instead."""
    import torch
    from model_blocks import SPACES, label, model

    import pyhipbench as hb
    space = SPACES[space_name]
    block, candidate, x = model(space)
    forward = torch.compile(block) if mode == "compiled" else block
    readings: dict[str, dict] = {label(c): {"passes_us": []} for c in configs}
    for order in (configs, configs[::-1]):
        for config in order:
            reading = readings[label(config)]
            if "error" in reading:
                continue
            candidate.config = config
            try:
                result = hb.bench_callable(lambda: forward(x), timer="cupti", cache="warm", graph=False,
                                           iterations=iterations, device=device, name=f"{space_name} {mode}")
            except Exception as e:  # a config Triton cannot launch (out of resources) is a reading, not a crash
                reading["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
                continue
            times = [k.median_us for k in result.kernels if k.kind == "kernel" and k.name == space.kernel_name]
            if len(times) != 1:
                raise SystemExit(f"{space_name} {mode}: expected one {space.kernel_name} per forward in the "
                                 f"CUPTI records, found {len(times)} among {[k.name for k in result.kernels]}")
            reading["passes_us"].append(times[0])
    for reading in readings.values():
        if "error" not in reading:
            reading["median_us"] = statistics.mean(reading["passes_us"])
    return readings


def isolated_reading(space_name: str, configs: list, state: str, repeats: int, device) -> dict:
    """`space_name`'s kernel alone under cache state `state`: every config to the precision (`median_us`
    by label), and the picks of `repeats` tunings with autotune's defaults."""
    from model_blocks import SPACES, label
    space = SPACES[space_name]
    full = space.autotune(configs, device, cache=state, race=False, tie_hold_s=None)
    medians = {label(r.config): r.median_us for r in full.results if r.error is None}
    picks = [label(space.autotune(configs, device, cache=state).best) for _ in range(repeats)]
    return {"median_us": medians, "errors": {label(r.config): r.error for r in full.failed}, "picks": picks}


def agreement(isolated: dict, in_model: dict[str, dict]) -> dict:
    """One state's isolated readings against the in-model ones: rank correlations over the configs both
    read, the full pass's fastest and the picks, each with its in-model cost (fraction above the in-model
    best)."""
    model = {k: v["median_us"] for k, v in in_model.items() if "median_us" in v}
    both = [k for k in isolated["median_us"] if k in model]
    best = min(model.values())
    winner = min(model, key=model.__getitem__)
    full_winner = min(both, key=isolated["median_us"].__getitem__)
    cost = {pick: model[pick] / best - 1 for pick in isolated["picks"] if pick in model}
    costs = [cost.get(pick) for pick in isolated["picks"]]
    return {"configs": len(both),
            "spearman": spearman([isolated["median_us"][k] for k in both], [model[k] for k in both]),
            "kendall": kendall([isolated["median_us"][k] for k in both], [model[k] for k in both]),
            "in_model_winner": winner, "full_winner": full_winner, "full_winner_is_winner": full_winner == winner,
            "full_winner_cost": model[full_winner] / best - 1,
            "picks": isolated["picks"], "pick_costs": costs,
            "picks_winner": sum(pick == winner for pick in isolated["picks"]),
            "picks_within": sum(c is not None and c <= WITHIN for c in costs)}


def by_state(rows: list[dict], states: list[str]) -> list[dict]:
    """Per state, over every space and mode: the mean rank correlations, how often the full pass's fastest
    is the in-model winner, and how many picks are within 1 % of it."""
    out = []
    for state in states:
        mine = [r for r in rows if r["state"] == state]
        kendalls = [r["kendall"] for r in mine if r["kendall"] == r["kendall"]]  # nan: a constant side
        spearmans = [r["spearman"] for r in mine if r["spearman"] == r["spearman"]]
        out.append({"state": state, "cases": len(mine),
                    "mean_spearman": statistics.mean(spearmans) if spearmans else float("nan"),
                    "mean_kendall": statistics.mean(kendalls) if kendalls else float("nan"),
                    "full_winners": sum(r["full_winner_is_winner"] for r in mine),
                    "full_winners_within": sum(r["full_winner_cost"] <= WITHIN for r in mine),
                    "picks_within": sum(r["picks_within"] for r in mine),
                    "picks": sum(len(r["picks"]) for r in mine),
                    "worst_pick_cost": max((c for r in mine for c in r["pick_costs"] if c is not None),
                                           default=float("nan"))})
    return out


def table(rows: list[dict], totals: list[dict]) -> str:
    lines = ["| space | mode | state | configs | Spearman | Kendall | full pass's fastest: in-model cost | "
             "picks = in-model winner | picks within 1 % | worst pick's cost |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        worst = max((c for c in r["pick_costs"] if c is not None), default=float("nan"))
        lines.append(f"| {r['space']} | {r['mode']} | {r['state']} | {r['configs']} | {r['spearman']:+.3f} | "
                     f"{r['kendall']:+.3f} | {'winner, ' if r['full_winner_is_winner'] else ''}"
                     f"{100 * r['full_winner_cost']:+.2f} % | {r['picks_winner']} of {len(r['picks'])} | "
                     f"{r['picks_within']} of {len(r['picks'])} | {100 * worst:+.2f} % |")
    lines += ["", "| state | cases | mean Spearman | mean Kendall | full pass's fastest = winner | within 1 % | "
              "picks within 1 % | worst pick's cost |", "|---|---|---|---|---|---|---|---|"]
    for t in totals:
        lines.append(f"| {t['state']} | {t['cases']} | {t['mean_spearman']:+.3f} | {t['mean_kendall']:+.3f} | "
                     f"{t['full_winners']} | {t['full_winners_within']} | {t['picks_within']} of {t['picks']} | "
                     f"{100 * t['worst_pick_cost']:+.2f} % |")
    return "\n".join(lines)


def names(text: str, known: tuple[str, ...], flag: str) -> list[str]:
    """A comma-separated choice among `known`, in order, each once; SystemExit(2) naming the value."""
    chosen = text.split(",")
    if not text or any(c not in known for c in chosen) or len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(f"{flag} {text!r}: expected distinct names among {', '.join(known)}")
    return chosen


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spaces", default=",".join(SPACE_NAMES), type=lambda t: names(t, SPACE_NAMES, "--spaces"))
    parser.add_argument("--modes", default=",".join(MODES), type=lambda t: names(t, MODES, "--modes"))
    parser.add_argument("--states", default=",".join(STATES), type=lambda t: names(t, STATES, "--states"))
    parser.add_argument("--iterations", type=int, default=200, help="timed forwards per config and pass")
    parser.add_argument("--repeats", type=int, default=3, help="tunings with autotune's defaults per state")
    parser.add_argument("--configs", type=int, default=None, help="the first N configs of each space (all)")
    parser.add_argument("--out", type=Path, help="write every reading as JSON here")
    options = parser.parse_args(argv)
    if options.iterations < 10 or options.repeats < 1 or options.configs is not None and options.configs < 2:
        parser.error(f"--iterations {options.iterations}, --repeats {options.repeats}, --configs {options.configs}: "
                     "expected at least 10 forwards, 1 tuning and 2 configs")
    return options


def main() -> None:
    options = parse()
    import torch
    import triton
    from model_blocks import SPACES

    import pyhipbench as hb
    device = hb.Device("cuda")
    torch.manual_seed(0)
    out: dict = {"device": device.name, "torch": torch.__version__, "triton": triton.__version__,
                 "pyhipbench": hb.__version__, "iterations": options.iterations, "repeats": options.repeats,
                 "spaces": {}, "rows": []}
    for space_name in options.spaces:
        configs = SPACES[space_name].configs()[:options.configs]
        space_out = out["spaces"][space_name] = {"isolated": {}, "in_model": {}}
        for state in options.states:  # first: autotune compiles every config ahead, in the pool
            progress(f"{space_name}: {len(configs)} configs alone, {state}")
            space_out["isolated"][state] = isolated_reading(space_name, configs, state, options.repeats, device)
        for mode in options.modes:
            progress(f"{space_name}: {len(configs)} configs in the {mode} model, 2 passes of "
                     f"{options.iterations} forwards each")
            in_model = space_out["in_model"][mode] = in_model_reading(space_name, mode, configs, options.iterations,
                                                                      device)
            if not any("median_us" in r for r in in_model.values()):
                raise SystemExit(f"{space_name} {mode}: no config ran in the model: "
                                 f"{next(iter(in_model.values())).get('error')}")
            for state in options.states:
                out["rows"].append({"space": space_name, "mode": mode, "state": state,
                                    **agreement(space_out["isolated"][state], in_model)})
    out["by_state"] = by_state(out["rows"], options.states)
    print(table(out["rows"], out["by_state"]))
    if options.out:
        options.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
