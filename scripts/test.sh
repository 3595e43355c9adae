#!/usr/bin/env bash
# Builds Parallax and runs every test.
#
#   bash scripts/test.sh              clang-format check, Release build in build/: all tests, then the install test
#                                     (cmake --install into a temporary prefix, then build and run
#                                     the consumer project tests/install/ against it).
#   bash scripts/test.sh --sanitize   Debug build (-O1) with ASan+UBSan in build-asan/: all tests.
#   bash scripts/test.sh --tsan       Debug build (-O1) with ThreadSanitizer in build-tsan/: the
#                                     dist, dtensor and runtime tests and the plan layer's solver
#                                     tests (the multi-threaded code).
#
# Installs missing Debian packages first (scripts/install-deps.sh; needs root or sudo).
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

sanitize=0
tsan=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --tsan) tsan=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc)"

bash scripts/install-deps.sh

# Test order is shuffled (a fresh seed each run; gtest prints it) to catch order dependence.
export GTEST_SHUFFLE=1

# A Debug build at -O1 (as ASan's own docs advise: -O0 makes the multi-rank suites several times
# slower) with sanitizers, in unity batches, then its tests. The sanitizers look for memory, UB and
# race errors, not for coverage: the DTensor op suites check fewer placement combinations per op
# here (the Release run checks them all).
sanitized_build_and_test() {
  local dir="$1" what="$2"
  shift 2
  export PARALLAX_DTENSOR_MAX_COMBOS=8
  echo "== configure (Debug at -O1, $what) in $dir/"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
    -DPARALLAX_UNITY_BUILD=ON -DPARALLAX_BUILD_BENCHMARKS=OFF "$@"
  echo "== build"
  cmake --build "$dir" -j"$jobs"
  echo "== test"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j"$jobs"
  echo "== $what tests passed"
}

if [[ $tsan -eq 1 ]]; then
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # OpenBLAS's own worker threads hand work over through spinning on plain memory that TSan cannot
  # see (the library is not instrumented): every BLAS call that goes parallel, such as CBC's dense
  # factorisation through dgemm, reads as a race. Parallax's threads are what this build checks.
  export OPENBLAS_NUM_THREADS=1
  sanitized_build_and_test build-tsan ThreadSanitizer -DPARALLAX_SANITIZE=thread -DPARALLAX_BUILD_EXAMPLES=OFF
  exit 0
fi

if [[ $sanitize -eq 1 ]]; then
  export ASAN_OPTIONS=detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  sanitized_build_and_test build-asan ASan+UBSan -DPARALLAX_SANITIZE=ON
  exit 0
fi

echo "== format (clang-format --dry-run -Werror)"
bash scripts/check-format.sh

echo "== configure (Release) in build/"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
echo "== build"
cmake --build build -j"$jobs"
echo "== test"
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"

echo "== install test"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/parallax-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cmake --install build --prefix "$tmp/prefix"
cmake -S tests/install -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix"
cmake --build "$tmp/consumer" -j"$jobs"
"$tmp/consumer/app"
echo "== all tests passed (including the install test)"
