#!/usr/bin/env bash
# Two benchmarks of the sharding solvers.
#
#   bash scripts/bench-solvers.sh [runs (default 3)] [time limit s (default 120)]
#     The fast solver against the exact one (CBC) on the same sharding problems (issue 7, section
#     7): each problem is exported by `parallax plan --export-problem` (or read from
#     ../shared/iopddl/), solved by `parallax solve --solver fast --stop-after-stall 50` (the fast
#     solver as the planner runs it) and `--solver ilp` with the same time limit, each run `runs`
#     times; prints the median wall seconds of each, the time ratio and the objective ratio.
#
#   bash scripts/bench-solvers.sh --contest [seeds (default 3)] [threads (default: all)]
#     Every public IOPDDL contest instance in ../shared/iopddl/ at its contest time limit, seeds
#     0..seeds-1, `parallax solve --solver fast` (anytime: it searches until the limit); prints the
#     median and worst cost of the seeds against the contest's best entry, whether every run
#     was feasible, and the best lower bound the runs proved (against the best entry: no entry
#     can be below it). Takes seeds x 10 minutes.
#
# Needs a Release build in build/ (scripts/test.sh makes one), or in $PARALLAX_BUILD_DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${PARALLAX_BUILD_DIR:-build}"
parallax="$build/parallax"
cmake --build "$build" --target parallax_cli >/dev/null
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

if [[ "${1:-}" == "--contest" ]]; then
  seeds="${2:-3}"
  threads="${3:-0}"
  # instance|time limit s|best contest entry (../shared/iopddl/README.md)
  instances=("A|60|6548641531" "G|120|217039" "M|180|49928460991" "S|240|1534613444")
  echo "# $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, --threads $threads, seeds 0..$((seeds - 1))"
  printf '%s\n' "| instance | limit s | best entry | median cost | worst cost | median / best | worst / best | all feasible | best bound | bound / best entry |" \
    "|---|---|---|---|---|---|---|---|---|---|"
  for entry in "${instances[@]}"; do
    IFS='|' read -r name limit best <<<"$entry"
    file="../shared/iopddl/asplos-2025-iopddl-$name.json.gz"
    [[ -f "$file" ]] || { echo "bench-solvers.sh: $file is missing" >&2; exit 1; }
    costs=()
    bounds=()
    feasible=yes
    for ((seed = 0; seed < seeds; ++seed)); do
      out="$("$parallax" solve "$file" --solver fast --time-limit "$limit" --seed "$seed" --threads "$threads")"
      costs+=("$(field "$out" cost)")
      bounds+=("$(field "$out" bound)")
      [[ "$(field "$out" feasible)" == True ]] || feasible=no
    done
    worst="$(printf '%s\n' "${costs[@]}" | sort -g | tail -n 1)"
    # The fast solver's lower bound (dual_bound.h): every run's is valid, so the best of them is.
    bound="$(printf '%s\n' "${bounds[@]}" | grep -v '^None$' | sort -g | tail -n 1)"
    awk -v n="$name" -v l="$limit" -v b="$best" -v m="$(median "${costs[@]}")" -v w="$worst" -v f="$feasible" \
      -v lb="${bound:-nan}" \
      'BEGIN {printf "| %s | %d | %.0f | %.0f | %.0f | %.6f | %.6f | %s | %.0f | %.6f |\n", n, l, b, m, w, m / b, w / b, f, lb, lb / b}'
  done
  exit 0
fi

runs="${1:-3}"
limit="${2:-120}"
work="$(mktemp -d "${TMPDIR:-/tmp}/parallax-solvers.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# name|plan arguments (the graph without --no-cluster is clustered: one decision per set of identical layers)
problems=(
  "gpt2-124m on 8|--model gpt2-124m --mesh 8"
  "gpt2-124m on 8, unclustered|--model gpt2-124m --mesh 8 --no-cluster"
  "gpt2-124m on 64, unclustered|--model gpt2-124m --mesh 64 --no-cluster"
  "llama3-8b on 8|--model llama3-8b --mesh 8"
  "llama3-8b on 64|--model llama3-8b --mesh 64"
  "llama3-8b on 8, unclustered|--model llama3-8b --mesh 8 --no-cluster"
)
files=()
names=()
for entry in "${problems[@]}"; do
  name="${entry%%|*}"
  file="$work/problem${#files[@]}.json.gz"
  # shellcheck disable=SC2086
  "$parallax" plan ${entry#*|} --no-baselines --export-problem "$file" >/dev/null
  files+=("$file")
  names+=("$name")
done
if [[ -f ../shared/iopddl/asplos-2025-iopddl-G.json.gz ]]; then
  files+=(../shared/iopddl/asplos-2025-iopddl-G.json.gz)
  names+=("IOPDDL G (contest instance)")
fi

printf '%s\n' "| problem | decisions | fast s | ilp s | ilp / fast time | fast / ilp cost | ilp solver |" \
  "|---|---|---|---|---|---|---|"
for i in "${!files[@]}"; do
  declare -A wall=() cost=() how=()
  for solver in fast ilp; do
    times=()
    for ((r = 0; r < runs; ++r)); do
      out="$("$parallax" solve "${files[$i]}" --solver "$solver" --time-limit "$limit" --stop-after-stall 50)"
      times+=("$(field "$out" wall_s)")
      cost[$solver]="$(field "$out" cost)"
      how[$solver]="$(field "$out" solver)"
      if [[ "$(field "$out" optimal)" == True ]]; then how[$solver]+=", optimal"; fi
    done
    wall[$solver]="$(median "${times[@]}")"
  done
  decisions="$(python3 -c 'import gzip,json,sys; print(len(json.load(gzip.open(sys.argv[1]))["problem"]["nodes"]["costs"]))' "${files[$i]}")"
  awk -v n="${names[$i]}" -v d="$decisions" -v tf="${wall[fast]}" -v ti="${wall[ilp]}" -v cf="${cost[fast]}" \
    -v ci="${cost[ilp]}" -v h="${how[ilp]}" \
    'BEGIN {printf "| %s | %d | %.3f | %.3f | %.1fx | %.5f | %s |\n", n, d, tf, ti, ti / tf, cf / ci, h}'
  unset wall cost how
done
