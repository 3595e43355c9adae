#!/usr/bin/env bash
# Predicted against measured step time (issue 8, section 8), and two ranks against one.
#
# 1. `parallax calibrate` fits every op's time model on three calibration models
#    (bench/configs/calibrate-*.json: GPTs of dim 128 and 384, a LLaMA of dim 192; batch 16 x 128
#    tokens), trained data-parallel on 2 thread ranks so that each rank's kernels share the
#    machine's memory bandwidth as in the runs below, and writes the calibrated profile to
#    $out/cpu-calibrated.json.
# 2. `parallax run` trains a different model, a GPT of dim 256, 4 layers (bench/configs/
#    gpt-dim256.json), batch 16 x 128 tokens, float32, AdamW, 6 steps, on 1 rank (solver plan) and
#    on 2 thread ranks (solver, DP, FSDP plans), each priced under the published-peak `cpu` profile
#    and under the calibrated one; `rounds` interleaved rounds, each (after the first) with a fresh
#    calibration just before it. Prints one line per run: measured median step, the graph run
#    within it, the plan's predicted step and predicted / measured.
#
#   bash scripts/bench-prediction.sh [rounds (default 3)] [out dir (default /tmp/parallax-prediction)]
#
# One kernel thread per rank (--threads-per-rank 1) and one OpenBLAS thread: the `cpu` profile and
# the calibration assume one core per rank and OpenBLAS's Haswell
# kernels unless the environment says otherwise. Builds the tool in $PARALLAX_BUILD_DIR (default
# build) when needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${1:-3}"
out="${2:-/tmp/parallax-prediction}"
build="${PARALLAX_BUILD_DIR:-build}"
export OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
mkdir -p "$out"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target parallax_cli -- -j2 >/dev/null
tool="$build/parallax"

calibrate() {
  "$tool" calibrate --model bench/configs/calibrate-gpt-dim128.json --model bench/configs/calibrate-gpt-dim384.json \
    --model bench/configs/calibrate-llama-dim192.json --ranks 2 --batch 16 --seq 128 --steps 6 \
    --out "$out/cpu-calibrated.json"
}
calibrate
echo
printf '%-5s %-5s %-7s %-11s %12s %12s %13s %10s\n' round ranks plan profile "step ms" "graph ms" "predicted ms" "pred/meas"
for round in $(seq 1 "$rounds"); do
  # Each round after the first calibrates again: this machine's speed drifts by 10-20% over
  # minutes (a shared VM), and a prediction can only be as close as the profile is to the moment.
  if [[ $round -gt 1 ]]; then calibrate >/dev/null; fi
  for run in "1 solver" "2 solver" "2 DP" "2 FSDP"; do
    read -r ranks plan <<<"$run"
    for profile in cpu calibrated; do
      device=cpu
      [[ $profile == calibrated ]] && device="$out/cpu-calibrated.json"
      "$tool" run --model bench/configs/gpt-dim256.json --mesh "$ranks" --plan "$plan" --batch 16 --seq 128 \
        --steps 6 --no-baselines --device "$device" --threads-per-rank 1 --json "$out/run.json" >/dev/null
      /usr/bin/python3 - "$out/run.json" "$round" "$ranks" "$plan" "$profile" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
step, graph, predicted = r["median_step_s"] * 1e3, r["executor_step_s"] * 1e3, r["predicted_step_s"] * 1e3
print(f"{sys.argv[2]:<5} {sys.argv[3]:<5} {sys.argv[4]:<7} {sys.argv[5]:<11} {step:12.1f} {graph:12.1f} {predicted:13.1f} {predicted / step:10.2f}")
PY
    done
  done
done
