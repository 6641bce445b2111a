#!/usr/bin/env bash
# One call on the GPU machine. Results land in $OUT.
#   bash bench/on_device.sh test    build, all tests (GPU ones verbose), info, demo, launch overhead
#   bash bench/on_device.sh study   build, the fidelity study (every timer x cache state beside ncu,
#                                   torch.profiler and do_bench) and the rotation-cap measurement
#   bash bench/on_device.sh sweep   build, bench/sweep_scaling.py on GPU 0 then GPUs 0,1, the space as listed
#                                   (bad candidates last) and shuffled: four sweeps (2-GPU machine)
set -u
PHASE=${1:-test}
OUT=${OUT:-/tmp/pyhipbench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m pip install --no-build-isolation --no-deps -q . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
cd /tmp  # import the installed package, not the source tree
REPO=$OLDPWD
if [ "$PHASE" = test ]; then
  python3 -m pytest -q -rs -p no:cacheprovider --rootdir "$REPO" "$REPO/tests" --ignore "$REPO/tests/gpu" \
    ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log" | tail -3
  python3 -m pytest -v -rs -p no:cacheprovider --rootdir "$REPO" "$REPO/tests/gpu" 2>&1 | tee "$OUT/pytest-gpu.log" \
    | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|^E " | head -80
  pyhipbench info 2>&1 | tee "$OUT/info.txt"
  pyhipbench demo 2>&1 | tee "$OUT/demo.txt"
  python3 "$REPO/bench/launch_overhead.py" --rounds 30 --out "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt"
elif [ "$PHASE" = cpu-tests ]; then
  python3 -m pytest -q -rfE -p no:cacheprovider --rootdir "$REPO" "$REPO/tests" ${PYTEST_ARGS:-} 2>&1 \
    | tee "$OUT/pytest.log" | grep -E "^(FAILED|ERROR)|passed|failed|Fatal|line [0-9]+ in test_" | head -40
elif [ "$PHASE" = sweep ]; then
  timeout 560 python3 "$REPO/bench/sweep_scaling.py" --out "$OUT/sweep" ${SWEEP_ARGS:-} 2>&1 | tee "$OUT/sweep.txt"
else
  timeout 480 python3 "$REPO/bench/fidelity.py" --out "$OUT" ${FIDELITY_ARGS:-} 2>&1 | tee "$OUT/fidelity.txt"
  timeout 90 python3 "$REPO/bench/rotation_cap.py" --sizes 4K,1M --iterations 200 --out "$OUT/cap.json" 2>&1 | tail -30
fi
