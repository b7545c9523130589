#!/usr/bin/env bash
# The main job: start `volley target`, shoot the standard traffic mix at it for a few
# seconds, stop the target cleanly, print both reports and check they agree.
set -euo pipefail
bin=${1:-build/bin}
work=$(mktemp -d)
target_pid=
cleanup() {
  [[ -n "$target_pid" ]] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/volley" target --bind 127.0.0.1 --port "${VOLLEY_DEMO_PORT:-32101}" --reply ack --no-progress \
  --port-file "$work/port" >"$work/target.txt" 2>"$work/target.log" &
target_pid=$!
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.05; done
if [[ ! -s "$work/port" ]]; then
  echo "demo: the target did not start:" >&2; cat "$work/target.log" >&2; exit 1
fi
port=$(cat "$work/port")

cmd=("$bin/traffic_generator" -m 1001:64:25 -m 1002:16:25 -m 8001:1200:50 -t3 --port "$port")
echo "\$ volley target --reply ack --port $port &"
echo "\$ traffic_generator -m 1001:64:25 -m 1002:16:25 -m 8001:1200:50 -t3 --port $port"
"${cmd[@]}" | tee "$work/gen.txt"

kill -TERM "$target_pid"
wait "$target_pid"
target_pid=
echo
cat "$work/target.txt"

# Every type's count received by the target must equal the count the generator sent.
# (No {4} intervals: Debian's default awk, mawk, lacks them.)
row='^  [0-9a-f][0-9a-f][0-9a-f][0-9a-f] '
sent=$(awk -v row="$row" '$0 ~ row {n[$1] += $5} END {for (t in n) print t, n[t]}' "$work/gen.txt" | sort)
received=$(awk -v row="$row" '$0 ~ row && $3 > 0 {print $1, $3}' "$work/target.txt" | sort)
echo
if [[ -n "$sent" && "$sent" == "$received" ]]; then
  echo "check: every type's count received equals the count sent ($(echo $sent | tr '\n' ' '))"
else
  echo "check FAILED: sent [$sent] but received [$received]" >&2
  exit 1
fi
