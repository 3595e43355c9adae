#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format at the root) makes
# of it, listing the files. Fix with: git ls-files '*.cpp' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find src include cli tests bench examples fuzz -name '*.cpp' -o -name '*.h')
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/parallax-format.$$; then
  grep 'error:' /tmp/parallax-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /' >&2
  rm -f /tmp/parallax-format.$$
  echo "check-format: run clang-format -i on the files above" >&2
  exit 1
fi
rm -f /tmp/parallax-format.$$
echo "check-format: ${#files[@]} files formatted"
