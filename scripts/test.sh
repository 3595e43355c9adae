#!/usr/bin/env bash
# Builds Parallax and runs every test.
#
#   bash scripts/test.sh              clang-format check, Release build in build/: all tests, then the install test
#                                     (cmake --install into a temporary prefix, then build and run
#                                     the consumer project tests/install/ against it).
#   bash scripts/test.sh --sanitize   Debug build (-O1) with ASan+UBSan in build-asan/: all tests.
#
# Installs missing Debian packages first (scripts/install-deps.sh; needs root or sudo).
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }

sanitize=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
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

if [[ $sanitize -eq 1 ]]; then
  # Exported before the build too: gtest_discover_tests runs the test binaries at build time.
  export ASAN_OPTIONS=detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # The sanitizers look for memory and UB errors, not for coverage: the DTensor op suites check
  # fewer placement combinations per op here (the Release run checks them all).
  export PARALLAX_DTENSOR_MAX_COMBOS=8
  echo "== configure (Debug at -O1, ASan+UBSan) in build-asan/"
  # -O1 as ASan's own docs advise: -O0 makes the multi-rank suites several times slower.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DPARALLAX_SANITIZE=ON \
    -DPARALLAX_BUILD_BENCHMARKS=OFF
  echo "== build"
  cmake --build build-asan -j"$jobs"
  echo "== test"
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs"
  echo "== sanitizer tests passed"
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
