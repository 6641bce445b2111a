"""The HIP host path end to end, on the fake HIP runtime: IR -> HSACO (with the
flush, verified) -> hip-python module load -> parameters from the HSACO's
metadata -> bench() -> hipExtModuleLaunchKernel with rotated sets.

No AMD GPU runs anything here: the fake records what the real runtime would be
asked to do.
"""
from __future__ import annotations

from pathlib import Path

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python, run_with_fake  # noqa: F401 (fixture)

require_hip_python()

TESTS = Path(__file__).parents[1]
IR = TESTS / "data" / "ir" / "kernels_gfx942.ll"


def test_ir_to_timed_hip_launches(fake_hip_library):
    require_toolchain("gfx942")
    report = run_with_fake(fake_hip_library, f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pyhipbench as hb
from pyhipbench.codegen import compile_ir
from fakes.driver import FakeDriver

device = hb.Device("hip")
code = compile_ir(__import__("pathlib").Path({str(IR)!r}), device.arch)
module = device.load_module(code.data)
copy, scale = module.kernel("copy"), module.kernel("scale")
n = 1 << 16
src = device.array(np.arange(n, dtype=np.float32))
dst = device.empty_like(src)
fake = FakeDriver("libamdhip64.so")
fake.read_args(3)
stream = device.stream()
result = hb.bench(copy, n // 256, 256, [src, dst, hb.int64(n)], iterations=6, warmup=2, rotate=4,
                  stream=stream)
launches = fake.records("hipExtModuleLaunchKernel")
report(arch=device.arch, llc=device.properties.llc_bytes, format=module.format,
       verified=code.verification.ok, kernels=module.kernel_names(),
       copy_params=[[p.name, p.offset, p.size] for p in copy.params],
       scale_params=[[p.name, p.offset, p.size] for p in scale.params],
       sources=[r.arg_values[0] for r in launches], src=src.address,
       ns=[r.arg_values[2] for r in launches],
       global_x=[r.grid[0] for r in launches], local_x=[r.block[0] for r in launches],
       events=[[r.start_event, r.stop_event] for r in launches],
       functions=sorted({{r.function for r in launches}}), copy_handle=copy.handle,
       sets=result.rotation.sets, times=list(result.times_us),
       streams=sorted({{r.stream for r in launches}}), stream=stream.handle)
""")
    assert report["arch"].startswith("gfx942") and report["llc"] == 256 << 20
    assert report["format"] == "hsaco" and report["verified"] is True
    assert report["kernels"] == ["copy", "scale"]
    # Explicit arguments only; the hidden ones (block counts, offsets) stay out.
    assert report["copy_params"] == [["src.coerce", 0, 8], ["dst.coerce", 8, 8], ["n", 16, 8]]
    assert report["scale_params"] == [["x.coerce", 0, 8], ["a", 8, 4], ["n", 12, 4]]
    assert report["functions"] == [report["copy_handle"]]
    sources = report["sources"]
    assert len(sources) == 8 and sources[0] == report["src"]
    assert len(set(sources)) == 4 and sources == [sources[i % 4] for i in range(8)]
    assert report["ns"] == [1 << 16] * 8
    assert report["global_x"] == [(1 << 16)] * 8 and report["local_x"] == [256] * 8  # grid x block
    assert all(start and stop for start, stop in report["events"])
    assert report["sets"] == 4 and len(report["times"]) == 6
    assert report["streams"] == [report["stream"]] and report["stream"] != 0


def test_demo_on_hip_compiles_the_bundled_ir_for_the_device(fake_hip_library):
    require_toolchain("gfx942")
    report = run_with_fake(fake_hip_library, """
import contextlib, io
from pyhipbench import cli
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = cli.main(["demo", "--backend", "hip"])
report(code=code, lines=out.getvalue().splitlines())
""")
    assert report["code"] == 0
    lines = report["lines"]
    assert lines[0].startswith("AMD Instinct MI300X (fake) (gfx942") and "last-level cache 256 MiB" in lines[0]
    rows = [line.split() for line in lines[2:9]]
    states = ["warm", "dirty-cold", "clean-cold"]
    assert [(r[0], r[3] if r[0] == "copy" else r[2]) for r in rows] == [("copy", s) for s in states * 2] + [
        ("empty", "warm")]
    assert {r[4] if r[0] == "copy" else r[3] for r in rows} == {"events"}  # HIP's timer: the dispatch's events
    assert [r[5] for r in rows[:6]] == ["1", "8", "1", "1", "2", "1"]  # dirty-cold: 32 MiB buffers 8 sets, 1 GiB 2
