#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, Clang with ASan+UBSan, in build-fuzz/) and runs each on its
# seed corpus (fuzz/corpus/<target>/).
#
#   bash scripts/fuzz.sh                    every target for 30 seconds (CI runs --seconds 20)
#   bash scripts/fuzz.sh --seconds 600      every target for 10 minutes
#   bash scripts/fuzz.sh --runs 1000000 ir_parser
#                                           one target for a number of executions
#
# Inputs libFuzzer finds interesting go to a temporary directory, so the seed corpora in the tree
# do not change; a crash leaves its input in build-fuzz/artifacts/ and fails the script.
# Installs missing Debian packages first (the build's, plus clang-19 and libclang-rt-19-dev).
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

seconds=30
runs=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds | --runs)
      if [[ $# -lt 2 || ! "$2" =~ ^[1-9][0-9]*$ ]]; then
        echo "fuzz.sh: $1 needs a positive whole number" >&2
        exit 2
      fi
      if [[ "$1" == --seconds ]]; then seconds="$2"; else runs="$2"; fi
      shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(ir_parser iopddl_problem plan_json model_config device_profile)
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " == *" $target "* ]]; then
    echo "fuzz.sh: unknown target '$target' (the targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh clang-19 libclang-rt-19-dev

echo "== configure (Clang, ASan+UBSan, libFuzzer) in build-fuzz/"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DPARALLAX_SANITIZE=address -DPARALLAX_BUILD_FUZZERS=ON \
  -DPARALLAX_UNITY_BUILD=ON -DPARALLAX_BUILD_TESTS=OFF -DPARALLAX_BUILD_EXAMPLES=OFF -DPARALLAX_BUILD_BENCHMARKS=OFF
echo "== build"
cmake --build build-fuzz -j"$(nproc)" --target parallax_fuzzers

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p build-fuzz/artifacts
work="$(mktemp -d "${TMPDIR:-/tmp}/parallax-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
  echo "== fuzz_$target"
  mkdir -p "$work/$target"
  limit=(-max_total_time="$seconds")
  [[ -n "$runs" ]] && limit=(-runs="$runs")
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: one that takes 2 GB is a leak or a bomb.
  status=0
  "build-fuzz/fuzz/fuzz_$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$target-" "$work/$target" "fuzz/corpus/$target" >"$work/$target.log" 2>&1 ||
    status=$?
  grep -E '^#[0-9]+[[:space:]]*(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
    "$work/$target.log" || true
  if [[ $status -ne 0 ]]; then
    tail -n 60 "$work/$target.log" >&2
    echo "fuzz.sh: fuzz_$target failed (exit $status); the input is in build-fuzz/artifacts/" >&2
    exit 1
  fi
done
echo "== fuzzing found nothing"
