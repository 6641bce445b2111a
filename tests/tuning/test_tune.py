"""tune() on the fake drivers: launches, chains and callables through the tuning engine (race, ties, rank)."""
from __future__ import annotations

import pytest
from tuning_helpers import COPY_PTX, launch_us

import pyhipbench as hb
from pyhipbench.errors import BenchError


def variants(copy, args, *blocks: int) -> dict[str, hb.Launch]:
    return {f"block {b}": hb.Launch(copy, 4, b, args) for b in blocks}


def test_tune_picks_the_fastest_launch_and_races_the_rest_against_the_best_so_far(device, copy, args, fake_driver,
                                                                                 monkeypatch):
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0, 256: 4.0}, ramp_us={256: 0.05})
    tuning = hb.tune(variants(copy, args, 64, 128, 256), timer="events", cache="warm", warmup=0, tie_hold_s=None)
    assert tuning.best.label == "block 128" and tuning.best.median_us == pytest.approx(3.0)
    assert [r.label for r in tuning.ranked()] == ["block 128", "block 256", "block 64"]
    bounds = [options.slower_than_us for _, options in measured]
    assert bounds[0] is None and bounds[1] == tuning.results[0].result.ci_us[1]
    assert bounds[2] == tuning.results[1].result.ci_us[1]  # the lowest CI upper bound so far
    # The third, a ramp never within ±1 %, stops at its first check: surely slower than the second.
    assert tuning.results[2].result.stop_reason == "slower" and tuning.results[2].result.samples == 6
    assert tuning.results[1].result.stop_reason == "precision"
    assert all(r.measure_s > 0 and r.error is None for r in tuning.results) and tuning.wall_s > 0
    assert "block 128" in tuning.summary().splitlines()[1] and "<- best" in tuning.summary()
    assert tuning.results[1].to_dict()["result"]["stats_us"]["median"] == pytest.approx(3.0)


def test_without_racing_every_candidate_is_measured_to_the_precision(device, copy, args, fake_driver, monkeypatch):
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0})
    tuning = hb.tune(list(variants(copy, args, 64, 128).values()), race=False, timer="events", cache="warm",
                     tie_hold_s=None)
    assert [r.label for r in tuning.results] == ["copy#0", "copy#1"]  # the kernel's name, numbered
    assert all(options.slower_than_us is None for _, options in measured)
    assert all(r.result.stop_reason == "precision" for r in tuning.results)


def test_the_ties_are_measured_again_after_a_hold_and_the_fastest_there_wins(device, copy, args, fake_driver,
                                                                            backend_name, monkeypatch):
    """Twice each: fastest first, then in the reverse order; the fastest first holds longest, the turn (the
    tie held last, again at once) not at all. Block 128 is the fastest held, but at a clock 20 % above block
    64's: at 64's clock it might not be, so the second pass runs."""
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 5.0, 256: 9.0}, held_us={64: 6.0, 128: 5.5},
                         held_mhz={64: 1500.0, 128: 1800.0})
    tuning = hb.tune(variants(copy, args, 64, 128, 256), timer="events", cache="warm", iterations=4, warmup=0,
                     tie_hold_s=0.002)
    assert tuning.best.label == "block 128"
    first, second, third = tuning.results
    assert first.sustained.median_us == pytest.approx(6.0, rel=1e-4) and first.median_us == pytest.approx(6.0)
    assert second.sustained.median_us == pytest.approx(5.5, rel=1e-4) and third.sustained is None
    sustained = [(block, options.hold_s) for block, options in measured if options.throttle_threshold == 0]
    assert sustained == [(64, 0.002), (128, 0.001), (128, 0), (64, 0.001)]
    assert first.sustained.samples == second.sustained.samples == 8  # 4 + 4 iterations
    assert second.note is None
    if backend_name == "cuda":  # the clock probe's reading (none on AMD yet)
        assert second.sustained.clock.mean_mhz == pytest.approx(1800.0)


def test_where_the_last_ties_hold_fails_the_second_pass_opens_with_a_switch_hold(device, copy, args, fake_driver,
                                                                                 monkeypatch):
    """Block 256's first run fails, so block 128 was not the last run before the second pass: it holds again."""
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 5.0, 256: 5.0},
                         held_us={64: 6.0, 128: 5.5, 256: 5.8}, held_mhz={64: 1500.0, 128: 1800.0},
                         hold_fails=(256,))
    tuning = hb.tune(variants(copy, args, 64, 128, 256), timer="events", cache="warm", iterations=4, warmup=0,
                     tie_hold_s=0.002)
    assert [(block, options.hold_s) for block, options in measured if options.throttle_threshold == 0] == [
        (64, 0.002), (128, 0.001), (256, 0.001), (128, 0.001), (64, 0.001)]
    assert tuning.best.label == "block 128" and tuning.results[2].sustained is None
    assert "sustained measurement failed: BenchError: block 256's hold failed" in tuning.results[2].note


@pytest.mark.parametrize("mhz_64, mhz_128", [(1700.0, 1800.0), (1800.0, 1700.0)])
def test_a_tie_fastest_at_every_other_ties_clock_ends_the_round_after_one_pass(device, copy, args, fake_driver,
                                                                               backend_name, monkeypatch, mhz_64,
                                                                               mhz_128):
    # Block 128 held reads 5.5 µs against 64's 6.0. At 1800 MHz against 1700 it would take at most
    # 5.5 * 1800 / 1700 = 5.82 µs at 64's clock, still the fastest; at the lower clock it beat 64 already. Either
    # way no drift can have made it the fastest. On AMD no clock is read yet: both passes run.
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 5.0}, held_us={64: 6.0, 128: 5.5},
                         held_mhz={64: mhz_64, 128: mhz_128})
    tuning = hb.tune(variants(copy, args, 64, 128), timer="events", cache="warm", iterations=4, warmup=0,
                     tie_hold_s=0.002)
    first, second = tuning.results
    passes = 1 if backend_name == "cuda" else 2
    assert tuning.best.label == "block 128" and second.sustained.samples == first.sustained.samples == 4 * passes
    assert [(block, options.hold_s) for block, options in measured if options.throttle_threshold == 0] == [
        (64, 0.002), (128, 0.001), (128, 0), (64, 0.001)][:2 * passes]
    assert (second.note == "the fastest of the first pass at every other tie's clock, so no second pass") == (
        passes == 1)


def test_a_chain_is_one_candidate_and_a_failed_candidate_keeps_its_error(device, copy, args, fake_driver, monkeypatch):
    launch_us(monkeypatch, fake_driver, {64: 2.0, 128: 3.0})
    chain = [hb.Launch(copy, 4, 64, args), hb.Launch(copy, 4, 64, args)]
    broken = hb.Launch(copy, 4, 128, args[:2])  # one argument short
    tuning = hb.tune({"chain": chain, "broken": broken, "one": hb.Launch(copy, 4, 128, args)}, timer="events",
                     cache="warm", tie_hold_s=None)
    chained, failed, one = tuning.results
    assert chained.result.ran == "chain" and chained.median_us == pytest.approx(4.0)  # two 2 µs kernels
    assert failed.result is None and failed.error.startswith("BenchError: ") and tuning.failed == (failed,)
    assert tuning.best is one and tuning.ranked()[-1] is failed
    assert "failed: BenchError" in tuning.summary()


def test_a_callable_is_a_candidate(device, fake_driver, backend_name, fake_cupti):
    """(fake_cupti: skipped in a process where the real driver is loaded, whose torch would capture the call.)"""
    if backend_name != "cuda":
        pytest.skip("the fake runtime launch (cudaLaunchKernel) is CUDA's")
    fake_driver.lib.fake_set_launch_ms(0.002)
    tuning = hb.tune({"call": lambda: fake_driver.runtime_launch(0xA1, 1, 64)}, device=device, timer="events",
                     cache="warm", tie_hold_s=None)
    assert tuning.best.label == "call" and tuning.best.result.ran in ("call", "graph")


def test_a_callable_that_raises_fails_alone_and_the_others_are_measured(device, fake_driver, backend_name,
                                                                         fake_cupti):
    """Its error one line naming it; a KeyboardInterrupt still ends the tuning."""
    if backend_name != "cuda":
        pytest.skip("the fake runtime launch (cudaLaunchKernel) is CUDA's")
    fake_driver.lib.fake_set_launch_ms(0.002)

    def broken() -> None:
        raise RuntimeError("out of resources: shared memory\nRequired: 98304, Hardware limit: 65536")
    call = lambda: fake_driver.runtime_launch(0xA1, 1, 64)  # noqa: E731
    tuning = hb.tune({"broken": broken, "call": call}, device=device, timer="events", cache="warm", tie_hold_s=None)
    failed, ran = tuning.results
    assert failed.result is None and tuning.failed == (failed,)
    assert failed.error == "BenchError: broken raised RuntimeError: out of resources: shared memory"
    assert tuning.best is ran and ran.result.ran in ("call", "graph") and tuning.ranked() == [ran, failed]
    assert tuning.summary().splitlines()[-1].endswith("failed: " + failed.error)

    def interrupted() -> None:
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hb.tune({"interrupted": interrupted, "call": call}, device=device, timer="events", cache="warm",
                tie_hold_s=None)


def test_the_summary_columns_align_under_the_header_when_every_label_is_shorter(device, copy, args, fake_driver,
                                                                               monkeypatch):
    launch_us(monkeypatch, fake_driver, {64: 2.0, 128: 3.0})
    tuning = hb.tune({"a": hb.Launch(copy, 4, 64, args), "b": hb.Launch(copy, 4, 128, args)}, timer="events",
                     cache="warm", tie_hold_s=None)
    header, first, second = tuning.summary().splitlines()
    assert header.startswith("candidate   median µs")
    assert first.startswith("a          ") and first[11:21] == f"{tuning.results[0].result.stats.median:>10.3f}"
    assert second.startswith("b          ") and second[11:21] == f"{tuning.results[1].result.stats.median:>10.3f}"


def test_when_no_candidate_runs_the_error_names_each_ones_reason(device, copy, args):
    with pytest.raises(BenchError, match=r"^tune: no candidate ran; a: BenchError: .*; b: BenchError: "):
        hb.tune({"a": hb.Launch(copy, 4, 64, args[:1]), "b": hb.Launch(copy, 4, 64, args[:2])}, timer="events")


@pytest.mark.parametrize("candidates, options, message", [
    (5, {}, r"^candidates=5: expected a list, or a dict by label, of Launch"),
    ([], {}, r"^candidates: empty; expected at least one"),
    ({1: print}, {}, r"^candidates: label 1: expected a string"),
    ({"": print}, {}, r"^candidates: label '': expected a non-empty string \(the candidate's name in the tuning\)$"),
    ([3], {}, r"^candidate '.*'=3: expected a pyhipbench.Launch, a non-empty list of Launch"),
    ([print], {"slower_than_us": 3.0}, r"^tune option slower_than_us=3.0: racing sets it"),
    ([print], {"race": "yes"}, r"^race='yes': expected True \(the default\) or False"),
    ([print], {"tie_hold_s": -1}, r"^tie_hold_s=-1"),
    ([print], {"colour": 1}, r"^tune option\(s\) 'colour' unknown; expected "),
    ([print], {"precision": 2}, r"^precision=2"),
    ([print], {"reset_to_zero": []}, r"^candidate 'print' is a callable, and reset_to_zero apply to launches"),
    # A callable's buffers are its own: no rotation (beside launches too: below).
    ([print], {"cache": "dirty-cold"}, r"^tune cache='dirty-cold': its candidates' buffers are their own, so "
                                       r"pyhipbench cannot rotate them; expected 'clean-cold' or 'warm'$"),
    ([print], {"rotate": 4}, r"^tune cache='dirty-cold': its candidates' buffers are their own"),  # auto's, here
    ([print], {"timer": "graph"}, r"^timer='graph': a callable is timed call by call; expected cupti or events"),
    ([print], {"progress": "yes"}, r"^progress='yes': expected True, False or None"),
    ([print], {"compile_workers": 0}, r"^compile_workers=0: out of range, expected an integer in \[1, 1024\]"),
    ([print], {"compile_workers": "all"}, r"^compile_workers='all': expected an integer"),
])
def test_bad_input_is_refused_in_one_line_before_anything_runs(candidates, options, message):
    with pytest.raises(BenchError, match=message):
        hb.tune(candidates, **options)


def test_a_callable_beside_launches_refuses_dirty_cold_before_anything_runs(device, copy, args, fake_driver,
                                                                             monkeypatch):
    measured = launch_us(monkeypatch, fake_driver, {64: 2.0})
    with pytest.raises(BenchError, match=r"^tune cache='dirty-cold': its candidates' buffers are their own"):
        hb.tune({"launch": hb.Launch(copy, 4, 64, args), "call": print}, device=device, timer="events",
                cache="dirty-cold", tie_hold_s=None)
    assert measured == []


def test_sources_compile_ahead_then_race_and_their_modules_are_unloaded(device, args, fake_driver, monkeypatch):
    launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0})
    loaded = len(device.backend.modules)
    ptx = hb.CodeObjectSource(COPY_PTX)
    tuning = hb.tune([hb.SourceLaunch(ptx, "copy", 4, b, args) for b in (64, 128)], device=device, timer="events",
                     cache="warm", tie_hold_s=None)
    assert [r.label for r in tuning.results] == ["copy#0", "copy#1"] and tuning.best.label == "copy#1"
    assert tuning.results[1].result.slower_than_us == tuning.results[0].result.ci_us[1]
    assert len(device.backend.modules) == loaded  # each candidate's module unloaded after the tuning


def test_an_ir_source_compiles_in_the_pool_and_one_that_fails_costs_only_itself(device, args, backend_name):
    if backend_name != "hip":
        pytest.skip("the IR is AMDGPU's")
    from codegen_helpers import require_toolchain
    from sweep_helpers import IR
    require_toolchain("gfx942")
    tuning = hb.tune({"ir": hb.SourceLaunch(hb.IRSource(IR.encode()), "copy", 4, 64, args),
                      "broken": hb.SourceLaunch(hb.IRSource(b"define void @copy( {"), "copy", 4, 64, args)},
                     device=device, timer="events", iterations=3, tie_hold_s=None, compile_workers=1)
    ran, broken = tuning.results
    assert ran.error is None and ran.result.samples == 3 and tuning.best is ran
    assert broken.result is None and broken.error.startswith("CodegenError: llvm-ir source of 'copy' did not compile")


@pytest.mark.parametrize("launch, message", [
    (lambda: hb.SourceLaunch(b"ptx", "copy", 1, 1, []), r"^SourceLaunch source=b'ptx': expected a pyhipbench source"),
    (lambda: hb.SourceLaunch(hb.CodeObjectSource(COPY_PTX), "", 1, 1, []), r"^SourceLaunch kernel='': expected"),
])
def test_a_source_launch_that_cannot_compile_is_refused_before_anything_runs(launch, message):
    with pytest.raises(BenchError, match=message):
        hb.tune([launch()])


def test_candidates_are_prepared_ahead_only_where_every_ones_timer_keeps_host_work_out(device, copy, args,
                                                                                        backend_name):
    # On AMD the kernel timer (rocprofiler) times the launches it issues, so a callable is timed with events,
    # whose samples span the host's work: beside a callable, nothing is prepared ahead.
    from pyhipbench._tuning.contenders import CallContender, ChainContender
    from pyhipbench._tuning.engine import _host_work_hidden
    from pyhipbench._tuning.trial import Trial
    options = hb.BenchOptions(timer="rocprofiler" if backend_name == "hip" else "cupti")
    launch = Trial("launch", ChainContender([hb.Launch(copy, 4, 64, args)], options, {}))
    call = Trial("call", CallContender(lambda: None, device, "call"))
    assert _host_work_hidden([launch], options, device)
    assert _host_work_hidden([launch, call], options, device) == (backend_name == "cuda")
