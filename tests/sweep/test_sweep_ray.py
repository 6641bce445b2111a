"""A sweep on a local Ray cluster with two declared GPUs, whose actors run against the fake HIP runtime.

The cluster starts in a child process (about 10 s on two cores), so no Ray
state is left in the test process; the child writes what the database holds to report.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import sweep_environment

require_hip_python()
ray = pytest.importorskip("ray", reason="the Ray tests need ray (pip install 'ray[default]')")
TESTS = Path(__file__).resolve().parents[1]


def test_sweep_on_ray_isolates_faults_and_resumes(fake_hip_library, tmp_path):  # noqa: F811 (the fixture imported above)
    require_toolchain("gfx942")
    script = textwrap.dedent(f"""
        import json, sqlite3, sys
        sys.path.insert(0, {str(TESTS)!r})
        import ray
        from sweep_helpers import space
        from pyhipbench import candidates_from_json, sweep

        def main():
            ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
            candidates = candidates_from_json(space(12))
            db = {str(tmp_path / "ray.db")!r}
            first = sweep(candidates[:8], db, cluster="auto", timeout_floor_s=2, progress=False)
            second = sweep(candidates, db, cluster="auto", resume=True, timeout_floor_s=2, progress=False)
            rows = sqlite3.connect(db).execute(
                "SELECT kernel, status, reason, attempts, device FROM results").fetchall()
            with open("report.json", "w") as report:  # Ray's own messages go to stdout
                json.dump({{"first": [first.measured, first.failed, first.gpus],
                           "second": [second.skipped, second.measured, second.failed], "rows": rows}}, report)

        if __name__ == "__main__":
            main()
    """)
    (tmp_path / "ray_sweep.py").write_text(script)
    env = {**os.environ, **sweep_environment(fake_hip_library), "RAY_AUTH_MODE": "disabled"}
    result = subprocess.run([sys.executable, str(tmp_path / "ray_sweep.py")], capture_output=True, text=True,
                            env=env, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["first"] == [8, 0, 2]
    assert report["second"] == [8, 4, 3]  # the 8 recorded are skipped; 4 more copies and the 3 bad ones run
    rows = report["rows"]
    assert len(rows) == 15 and len({tuple(r) for r in rows}) >= 4
    failed = {r[0]: (r[2], r[3]) for r in rows if r[1] == "failed"}
    assert failed == {"fault": ("fault", 2), "hang": ("timeout", 2), "crash": ("died", 2)}
    # Each actor opens device 0 of the GPU Ray gave it.
    devices = {r[4].split(" GPU ")[1] for r in rows if r[1] == "ok"}
    assert devices == {"0 hip:0 AMD Instinct MI300X (fake)", "1 hip:0 AMD Instinct MI300X (fake)"}
