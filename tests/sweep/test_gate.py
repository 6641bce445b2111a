"""MeasureGate: ready candidates held while compiles run, until they would keep the GPUs busy to the end."""
from __future__ import annotations

from pyhipbench._sweep import gate
from pyhipbench._sweep.gate import MeasureGate


def test_nothing_compiling_holds_nothing():
    assert MeasureGate().open(ready=1, in_flight=0, gpus=1)


def test_before_a_measurement_the_gpus_wait_for_the_last_compile():
    g = MeasureGate()
    g.compiling()
    g.compiled(99)
    assert not g.open(ready=10_000, in_flight=1, gpus=1)


def test_the_gate_opens_once_the_backlog_outlasts_the_compiles(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(gate.time, "monotonic", lambda: clock[0])
    g = MeasureGate()
    g.compiling()
    clock[0] = 110.0
    g.compiled(20)                # 2 compiles a second
    g.measured_one(0.01)          # 10 ms a candidate
    # 30 compiles left: 15 s. 1000 ready on 1 GPU: 10 s of measuring, held; 2000: 20 s, measured now.
    assert not g.open(ready=1000, in_flight=30, gpus=1)
    assert g.open(ready=2000, in_flight=30, gpus=1)
    assert not g.open(ready=2000, in_flight=30, gpus=2)  # two GPUs drain it in 10 s
