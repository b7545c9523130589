#!/usr/bin/env bash
# `make bench`: the microbenchmarks, the end-to-end gNB, netem, RPC, ping-pong and echo benchmarks, the cost of a
# metrics scrape, the scaling run.
# (The ARQ delay benchmarks take 7 minutes of real time: `build/bin/volley arq-bench --out DIR`, then
# `bench/plot_arq.py DIR`; `build/bin/volley arq-sim` gives the same scenarios on a virtual clock at once.)
set -euo pipefail
bin=${1:-build/bin}
cd "$(dirname "$0")/.."
echo "# Microbenchmarks (Google Benchmark)"
"$bin/volley_micro_bench" --benchmark_min_time="${MICRO_MIN_TIME:-0.3}"
echo
echo "# Serialization: reflection against hand-written code (CPU time is the fair column)"
"$bin/volley_serial_bench" --benchmark_min_time="${MICRO_MIN_TIME:-0.3}" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true
echo
echo "# The checked frame's XOR checksum and decode"
"$bin/volley_checked_bench" --benchmark_min_time="${MICRO_MIN_TIME:-0.3}"
echo
# Debian's interpreter: the first python3 on PATH may be another one.
/usr/bin/python3 bench/gnb_bench.py "$bin"
/usr/bin/python3 bench/netem_bench.py "$bin"
/usr/bin/python3 bench/rpc_bench.py "$bin"
/usr/bin/python3 bench/pingpong_bench.py "$bin"
/usr/bin/python3 bench/echo_bench.py "$bin"
/usr/bin/python3 bench/design_bench.py "$bin"
/usr/bin/python3 bench/websocket_bench.py "$bin"
/usr/bin/python3 bench/http_bench.py "$bin"
/usr/bin/python3 bench/metrics_bench.py "$bin"
/usr/bin/python3 bench/scaling_bench.py "$bin"
