#!/usr/bin/env bash
# `make bench`: the microbenchmarks, the end-to-end gNB benchmarks, the netem relay.
set -euo pipefail
bin=${1:-build/bin}
cd "$(dirname "$0")/.."
echo "# Microbenchmarks (Google Benchmark)"
"$bin/volley_micro_bench" --benchmark_min_time="${MICRO_MIN_TIME:-0.3}"
echo
# Debian's interpreter: the first python3 on PATH may be another one.
/usr/bin/python3 bench/gnb_bench.py "$bin"
/usr/bin/python3 bench/netem_bench.py "$bin"
