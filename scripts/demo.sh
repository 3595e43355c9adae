#!/usr/bin/env bash
# Builds (Release, in build/) and runs the demo: plans GPT-mini on a 2x2 mesh (which parameter
# is sharded how, the predicted step time next to the hand-written DP, FSDP, TP and FSDP+TP
# plans), trains it 20 steps on 4 thread ranks printing the loss, and checks that every loss and
# every parameter equals a single-device run (float64, relative 1e-10).
# Extra arguments go to `parallax run` (e.g. --plan FSDP, --optimizer sgd, --dump-graphs DIR).
# Installs missing Debian packages first (scripts/install-deps.sh; needs root or sudo).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target parallax_cli
exec build/parallax run --model gpt-mini --mesh 2x2 --steps 20 --dtype f64 --check --parameters 0 "$@"
