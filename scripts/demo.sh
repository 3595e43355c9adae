#!/usr/bin/env bash
# Builds (Release, in build/) and runs the demo: a small MLP trained on one device
# through the IR interpreter, printing the loss as it falls.
# Installs missing Debian packages first (scripts/install-deps.sh; needs root or sudo).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target demo_mlp
exec build/examples/demo_mlp "$@"
