#!/usr/bin/env bash
# The reliable baseline of `volley arq-bench`: the same stamped messages over TCP
# between two network namespaces joined by the netem TUN link (both directions
# impaired alike). Needs root and /dev/net/tun (scripts/netem-tun.sh checks).
# usage: arq_tcp_baseline.sh BIN_DIR NETEM COUNT INTERVAL_MS SIZE SEED CSV_OUT
set -euo pipefail
[[ $# -eq 7 ]] || { echo "usage: $0 BIN_DIR NETEM COUNT INTERVAL_MS SIZE SEED CSV_OUT" >&2; exit 2; }
bin=$1 netem=$2 count=$3 interval=$4 size=$5 seed=$6 csv=$7
here=$(cd "$(dirname "$0")/.." && pwd)
rm -f "$csv" "$csv.ready"
"$here/scripts/netem-tun.sh" run --name "vab$$" --bin "$bin" --up "$netem" --down "$netem" --seed "$seed" -- \
  bash -c '
    set -e
    bin=$0 csv=$1 count=$2 interval=$3 size=$4
    ip netns exec "$NETEM_NS_B" "$bin/volley" arq-recv --protocol tcp --listen "$NETEM_ADDR_B:9500" \
      --csv "$csv" --json --ready-file "$csv.ready" > "$csv.recv.json" 2>/dev/null &
    for _ in $(seq 200); do [[ -s "$csv.ready" ]] && break; sleep 0.05; done
    ip netns exec "$NETEM_NS_A" "$bin/volley" arq-send --protocol tcp --to "$NETEM_ADDR_B:9500" \
      --count "$count" --interval "$interval" --size "$size" --json > "$csv.send.json"
    wait
  ' "$bin" "$csv" "$count" "$interval" "$size" >/dev/null
