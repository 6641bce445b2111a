"""The cupti timer beside torch.profiler in one process, on a real GPU: before and after a profiler session,
in either order, callables are timed by CUPTI and read what the profiler reads; while it records, the auto
timer is events and says why. Each order runs in a process of its own (CUPTI's state is the process's)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import torch
    import pyhipbench as hb
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(1 << 22, device="cuda")
    op = lambda: x.add_(1.0)  # one elementwise kernel, in place: no allocation moves the data between calls

    def profiled(calls=300):
        '''The op's kernel time per call as the profiler reads it: the median over `calls` warm calls, µs.'''
        for _ in range(20):
            op()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as session:
            for _ in range(calls):
                op()
            torch.cuda.synchronize()
        times = [getattr(e, "device_time", None) or e.cuda_time for e in session.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA]
        return float(np.median(times)), len(times)

    def timed():
        r = hb.bench_callable(op, cache="warm", graph=False)
        return {"timer": r.timer, "median_us": r.median_us, "note": r.timer_note,
                "kernels": [[k.kind, k.name, k.median_us] for k in r.kernels]}

    out = {}
    for step in sys.argv[1].split(","):
        if step == "profile":
            out["profiler_us"], out["profiler_kernels"] = profiled()
        elif step == "during":
            with profile(activities=[ProfilerActivity.CUDA]):
                out["during"] = timed()
        else:
            out[step] = timed()
    print(json.dumps(out))
""")


def _run(steps: str) -> dict:
    child = subprocess.run([sys.executable, "-c", SCRIPT, steps], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.strip().splitlines()[-1])


def _agrees(ours_us: float, profiler_us: float) -> bool:
    return abs(ours_us - profiler_us) <= max(0.02 * profiler_us, 0.1)


def test_after_a_profiler_session_callables_are_timed_by_cupti_and_read_the_profilers_time(torch_gpu):
    got = _run("profile,after")
    assert got["profiler_kernels"] == 300
    assert got["after"]["timer"] == "cupti" and got["after"]["note"] is None
    assert _agrees(got["after"]["median_us"], got["profiler_us"]), got


def test_measuring_before_and_after_a_profiler_session_never_raises(torch_gpu):
    got = _run("before,profile,after")
    assert got["before"]["timer"] == got["after"]["timer"] == "cupti"
    assert _agrees(got["before"]["median_us"], got["profiler_us"]), got
    assert _agrees(got["after"]["median_us"], got["profiler_us"]), got


def test_while_the_profiler_records_the_auto_timer_is_events_and_says_why(torch_gpu):
    got = _run("during")
    assert got["during"]["timer"] == "events" and "torch.profiler was recording" in got["during"]["note"]
