#!/usr/bin/env bash
# Two network namespaces joined by an impaired IP link: `volley netem tun` relays
# between a TUN device in each. Side a is 198.18.0.1, side b is 198.18.0.2
# (198.18.0.0/15 is reserved for benchmarking, never routed outside).
#
#   scripts/netem-tun.sh start [--name N] [--up '...'] [--down '...'] [--seed S] [--bin DIR]
#                              [--design loop-per-thread|thread-pool] [--threads T]
#   scripts/netem-tun.sh stop  [--name N]          (prints the relay's final counters as JSON)
#   scripts/netem-tun.sh run   [same options] -- COMMAND ARGS...
#
# `run` starts the link, runs COMMAND with NETEM_NS_A, NETEM_NS_B, NETEM_ADDR_A and
# NETEM_ADDR_B in its environment, and always tears everything down, whatever
# happens. Run things on a side with: ip netns exec "$NETEM_NS_B" COMMAND.
# Needs root, /dev/net/tun and iproute2; says so when one is missing.
set -euo pipefail

action=${1:-}
[[ $# -gt 0 ]] && shift
name=volley-netem
up=""
down=""
seed=1
design=loop-per-thread
threads=()
bin="$(cd "$(dirname "$0")/.." && pwd)/build/bin"
command=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --up) up=$2; shift 2 ;;
    --down) down=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --design) design=$2; shift 2 ;;
    --threads) threads=(--threads "$2"); shift 2 ;;
    --) shift; command=("$@"); break ;;
    *) echo "netem-tun: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

ns_a="$name-a"
ns_b="$name-b"
# Interface names have at most 15 characters.
short=$(printf '%s' "$name" | md5sum | cut -c1-8)
dev_a="vn${short}a"
dev_b="vn${short}b"
state="/tmp/$name.netem"
addr_a=198.18.0.1
addr_b=198.18.0.2

preflight() {
  if [[ $(id -u) -ne 0 ]]; then echo "netem-tun: needs root (network namespaces and TUN devices)" >&2; exit 1; fi
  if [[ ! -c /dev/net/tun ]]; then echo "netem-tun: /dev/net/tun is missing: this kernel or container has no TUN support" >&2; exit 1; fi
  if ! command -v ip >/dev/null 2>&1; then echo "netem-tun: the ip command (iproute2) is missing" >&2; exit 1; fi
  if [[ ! -x "$bin/volley" ]]; then echo "netem-tun: $bin/volley not found (make build)" >&2; exit 1; fi
}

stop_link() {
  if [[ -f "$state/pid" ]]; then
    local pid
    pid=$(cat "$state/pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  ip link del "$dev_a" 2>/dev/null || true
  ip link del "$dev_b" 2>/dev/null || true
  rm -rf "$state"
}

start_link() {
  preflight
  stop_link  # leftovers of an earlier run under the same name
  mkdir -p "$state"
  trap 'echo "netem-tun: start failed, tearing down" >&2; stop_link' ERR
  ip netns add "$ns_a"
  ip netns add "$ns_b"
  # The relay creates the devices in this namespace; they keep its descriptors when moved.
  "$bin/volley" netem tun --dev-a "$dev_a" --dev-b "$dev_b" --up "$up" --down "$down" --seed "$seed" \
    --design "$design" "${threads[@]}" --no-progress --json --ready-file "$state/ready" \
    >"$state/relay.json" 2>"$state/relay.log" &
  echo $! >"$state/pid"
  for _ in $(seq 100); do [[ -s "$state/ready" ]] && break; kill -0 "$(cat "$state/pid")" 2>/dev/null || break; sleep 0.05; done
  if [[ ! -s "$state/ready" ]]; then cat "$state/relay.log" >&2; false; fi
  ip link set "$dev_a" netns "$ns_a"
  ip link set "$dev_b" netns "$ns_b"
  ip -n "$ns_a" link set lo up
  ip -n "$ns_b" link set lo up
  ip -n "$ns_a" addr add "$addr_a/32" peer "$addr_b" dev "$dev_a"
  ip -n "$ns_b" addr add "$addr_b/32" peer "$addr_a" dev "$dev_b"
  ip -n "$ns_a" link set "$dev_a" up
  ip -n "$ns_b" link set "$dev_b" up
  trap - ERR
  echo "netem-tun: $ns_a ($addr_a) <-> $ns_b ($addr_b) through volley netem tun (pid $(cat "$state/pid"))"
}

case "$action" in
  start) start_link ;;
  stop)
    # The relay's final counters (JSON) on stdout, then everything goes.
    if [[ -f "$state/pid" ]]; then
      kill -TERM "$(cat "$state/pid")" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$(cat "$state/pid")" 2>/dev/null || break; sleep 0.1; done
      cat "$state/relay.json" 2>/dev/null || true
    fi
    stop_link
    echo "netem-tun: $name torn down" >&2
    ;;
  run)
    [[ ${#command[@]} -gt 0 ]] || { echo "netem-tun: run needs -- COMMAND" >&2; exit 2; }
    start_link
    trap stop_link EXIT
    NETEM_NS_A=$ns_a NETEM_NS_B=$ns_b NETEM_ADDR_A=$addr_a NETEM_ADDR_B=$addr_b "${command[@]}"
    ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
