#!/usr/bin/env bash
# Fuzz campaign: builds the libFuzzer targets (clang) and runs each for a set
# time (or a set number of executions), starting from its checked-in corpus
# and keeping what it learns in build-fuzz/campaign/<target>/. Prints a table
# of executions and findings; exits non-zero if any target found a crash, a
# leak or a wedge (the reproducer is in build-fuzz/campaign/<target>/findings/).
# usage: scripts/fuzz-campaign.sh [SECONDS per target, default 60] [RUNS per target, default unlimited]
#                                 [TARGET PATTERN, a grep -E pattern over the names, default all]
# A target stops at whichever of SECONDS and RUNS comes first.
set -euo pipefail
seconds=${1:-60}
runs=${2:--1}
pattern=${3:-.}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
cmake -S "$root" -B "$build" -G Ninja -DVOLLEY_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" >/dev/null
printf '| target | seconds | executions | executions/s | corpus | findings |\n|---|---:|---:|---:|---:|---:|\n'
status=0
for fuzzer in "$build"/bin/*_fuzz; do
  name=$(basename "$fuzzer")
  grep -qE "$pattern" <<<"$name" || continue
  work="$build/campaign/$name"
  mkdir -p "$work/corpus" "$work/findings"
  start=$(date +%s.%N)
  set +e
  ASAN_OPTIONS=detect_leaks=1 "$fuzzer" -max_total_time="$seconds" -runs="$runs" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/findings/" "$work/corpus" "$root/tests/fuzz/corpus/$name" \
    >"$work/log" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(find "$work/corpus" -type f | wc -l)
  findings=$(find "$work/findings" -type f | wc -l)
  awk -v n="$name" -v s="$start" -v e="$end" -v x="$execs" -v c="$corpus" -v f="$findings" \
    'BEGIN { printf "| %s | %.0f | %d | %d | %d | %d |\n", n, e - s, x, x / (e - s), c, f }'
  if [[ $rc -ne 0 || $findings -ne 0 ]]; then
    status=1
    echo "fuzz-campaign: $name failed (exit $rc); see $work/log" >&2
  fi
done
exit $status
