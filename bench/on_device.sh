#!/usr/bin/env bash
# One call on the GPU machine: build, test, demo, time. Results land in $OUT.
set -u
OUT=${OUT:-/tmp/pyhipbench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cuda.bindings, llvmlite; print('cuda-bindings', cuda.bindings.__version__, 'llvmlite', llvmlite.__version__)"
python3 -m pip install --no-build-isolation --no-deps -q . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
cd /tmp  # import the installed package, not the source tree
REPO=$OLDPWD
python3 -m pytest -q -p no:cacheprovider --rootdir "$REPO" "$REPO/tests" ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log" | tail -3
python3 -m pytest -v -p no:cacheprovider --rootdir "$REPO" "$REPO/tests/gpu" 2>&1 | tee "$OUT/pytest-gpu.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed"
pyhipbench info 2>&1 | tee "$OUT/info.txt"
pyhipbench demo 2>&1 | tee "$OUT/demo.txt"
python3 "$REPO/bench/launch_overhead.py" --rounds 60 --out "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt"
