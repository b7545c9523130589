#!/usr/bin/env bash
# A test bed of several hosts: each host a network namespace, each link an
# impaired IP link between two of them, relayed by `volley netem tun` (as
# scripts/netem-tun.sh does for one link). Needs root, /dev/net/tun and iproute2.
#
#   scripts/netem-topology.sh up FILE [--name N] [--bin DIR] [--seed S]
#   scripts/netem-topology.sh down [--name N]        (prints each link's final counters)
#   scripts/netem-topology.sh exec HOST [--name N] [--] COMMAND ARGS...
#   scripts/netem-topology.sh address HOST [--name N]
#   scripts/netem-topology.sh cut HOST [--name N]    (every link of HOST drops all, silently)
#   scripts/netem-topology.sh heal HOST [--name N]
#
# FILE, one statement a line ('#' starts a comment):
#   host NAME                      hosts get 198.19.0.1, .2, ... in the order named
#   link HOST HOST [IMPAIRMENT]    both ways, in tc-netem syntax: delay 5ms loss 1%
# A host reaches the hosts it has a link to, at their addresses (`address`);
# there is no forwarding. A cut drops every packet of the host's links, both
# ways (the relay's link_down count): nothing passes and nothing is refused,
# as when a cable is pulled; heal restores them.
set -euo pipefail

action=${1:-}
[[ $# -gt 0 ]] && shift
file=""
host=""
case "$action" in
  up) file=${1:-}; [[ $# -gt 0 ]] && shift ;;
  exec | address | cut | heal) host=${1:-}; [[ $# -gt 0 ]] && shift ;;
esac
name=volley-topology
seed=1
bin="$(cd "$(dirname "$0")/.." && pwd)/build/bin"
command=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --) shift; command=("$@"); break ;;
    *)
      if [[ $action == exec ]]; then command=("$@"); break; fi  # exec HOST COMMAND, without the --
      echo "netem-topology: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
state="/tmp/$name.topology"
# Interface names have at most 15 characters: vt, 6 of the name's hash, the link's number, a or b.
short=$(printf '%s' "$name" | md5sum | cut -c1-6)

fail() { echo "netem-topology: $*" >&2; exit 1; }

preflight() {
  [[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces and TUN devices)"
  [[ -c /dev/net/tun ]] || fail "/dev/net/tun is missing: this kernel or container has no TUN support"
  command -v ip >/dev/null 2>&1 || fail "the ip command (iproute2) is missing"
  [[ -x "$bin/volley" ]] || fail "$bin/volley not found (make build)"
}

# The hosts, one a line, in the order named (from a running topology).
hosts() { cat "$state/hosts" 2>/dev/null || true; }
host_number() {
  local n
  n=$(grep -nxF -- "$1" "$state/hosts" 2>/dev/null | cut -d: -f1 || true)
  [[ -n "$n" ]] || fail "no host '$1' in topology $name"
  echo "$n"
}

tear_down() {
  local pid
  for pidfile in "$state"/link*.pid; do
    [[ -f "$pidfile" ]] || continue
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  while read -r h; do
    [[ -n "$h" ]] && ip netns del "$name-$h" 2>/dev/null || true
  done < <(hosts)
  ip -o link show 2>/dev/null | { grep -o "vt${short}[0-9]*[ab]" || true; } | while read -r dev; do ip link del "$dev" 2>/dev/null || true; done
  rm -rf "$state"
}

# Parses FILE into $state/hosts and $state/links ("A B IMPAIRMENT" a line).
parse() {
  [[ -r "$file" ]] || fail "cannot read topology file '$file'"
  : >"$state/hosts"
  : >"$state/links"
  local line_no=0 line word a b rest
  while IFS= read -r line || [[ -n "$line" ]]; do
    line_no=$((line_no + 1))
    line=${line%%#*}
    read -r word a b rest <<<"$line" || true
    case "$word" in
      "") ;;
      host)
        [[ -n "$a" && -z "$b" && "$a" =~ ^[A-Za-z0-9_.-]+$ ]] || fail "$file:$line_no: 'host NAME' (letters, digits, _ . -)"
        grep -qxF -- "$a" "$state/hosts" && fail "$file:$line_no: host '$a' named twice"
        echo "$a" >>"$state/hosts"
        ;;
      link)
        [[ -n "$a" && -n "$b" ]] || fail "$file:$line_no: 'link HOST HOST [IMPAIRMENT]'"
        [[ "$a" != "$b" ]] || fail "$file:$line_no: a link joins two different hosts"
        grep -qxF -- "$a" "$state/hosts" || fail "$file:$line_no: no host '$a' named before this link"
        grep -qxF -- "$b" "$state/hosts" || fail "$file:$line_no: no host '$b' named before this link"
        echo "$a $b $rest" >>"$state/links"
        ;;
      *) fail "$file:$line_no: '$word': a line is 'host NAME' or 'link HOST HOST [IMPAIRMENT]'" ;;
    esac
  done <"$file"
  [[ $(wc -l <"$state/hosts") -le 250 ]] || fail "at most 250 hosts"
  [[ $(wc -l <"$state/links") -le 99 ]] || fail "at most 99 links"
}

bring_up() {
  preflight
  tear_down  # leftovers of an earlier run under the same name
  mkdir -p "$state"
  trap 'echo "netem-topology: up failed, tearing down" >&2; tear_down' EXIT
  parse
  local i=0 h
  while read -r h; do
    i=$((i + 1))
    ip netns add "$name-$h"
    ip -n "$name-$h" link set lo up
    ip -n "$name-$h" addr add "198.19.0.$i/32" dev lo
  done < <(hosts)
  local l=0 a b impairment dev_a dev_b na nb pid
  while read -r a b impairment; do
    l=$((l + 1))
    dev_a="vt${short}${l}a"
    dev_b="vt${short}${l}b"
    na=$(host_number "$a")
    nb=$(host_number "$b")
    # The relay makes both devices here; they keep its descriptors when moved.
    "$bin/volley" netem tun --dev-a "$dev_a" --dev-b "$dev_b" --up "$impairment" --down "$impairment" \
      --seed "$((seed + l))" --no-progress --json --ready-file "$state/link$l.ready" \
      >"$state/link$l.json" 2>"$state/link$l.log" &
    pid=$!
    echo "$pid" >"$state/link$l.pid"
    echo "$a $b" >"$state/link$l.hosts"
    for _ in $(seq 100); do [[ -s "$state/link$l.ready" ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if [[ ! -s "$state/link$l.ready" ]]; then cat "$state/link$l.log" >&2; false; fi
    ip link set "$dev_a" netns "$name-$a"
    ip link set "$dev_b" netns "$name-$b"
    ip -n "$name-$a" addr add "198.18.$l.1/32" peer "198.18.$l.2" dev "$dev_a"
    ip -n "$name-$b" addr add "198.18.$l.2/32" peer "198.18.$l.1" dev "$dev_b"
    ip -n "$name-$a" link set "$dev_a" up
    ip -n "$name-$b" link set "$dev_b" up
    # Each end reaches the other host's address through the link, from its own.
    ip -n "$name-$a" route add "198.19.0.$nb/32" dev "$dev_a" src "198.19.0.$na"
    ip -n "$name-$b" route add "198.19.0.$na/32" dev "$dev_b" src "198.19.0.$nb"
    echo "netem-topology: link $l: $a <-> $b${impairment:+ ($impairment)}"
  done <"$state/links"
  trap - EXIT
  i=0
  while read -r h; do
    i=$((i + 1))
    echo "netem-topology: host $h: 198.19.0.$i (namespace $name-$h)"
  done < <(hosts)
}

# Cuts (want=cut) or heals (want=healed) every link of $host. SIGUSR1 turns
# a relay's link off, and the next on (its report counts the drops as
# link_down); a marker file keeps a second cut from healing.
set_links() {
  local want=$1 found=0 f a b link
  host_number "$host" >/dev/null
  for f in "$state"/link*.hosts; do
    read -r a b <"$f"
    [[ "$a" == "$host" || "$b" == "$host" ]] || continue
    found=1
    link=${f%.hosts}
    if [[ $want == cut && ! -e "$link.cut" ]]; then
      kill -USR1 "$(cat "$link.pid")"
      touch "$link.cut"
    elif [[ $want == healed && -e "$link.cut" ]]; then
      kill -USR1 "$(cat "$link.pid")"
      rm -f "$link.cut"
    fi
  done
  [[ $found -eq 1 ]] || fail "host '$host' has no link"
}

case "$action" in
  up)
    [[ -n "$file" ]] || fail "up needs a topology FILE"
    bring_up
    ;;
  down)
    for f in "$state"/link*.pid; do
      [[ -f "$f" ]] || continue
      kill -TERM "$(cat "$f")" 2>/dev/null || true
    done
    for f in "$state"/link*.pid; do
      [[ -f "$f" ]] || continue
      for _ in $(seq 50); do kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.1; done
      echo "$(cat "${f%.pid}.hosts"): $(cat "${f%.pid}.json" 2>/dev/null)"
    done
    tear_down
    echo "netem-topology: $name torn down" >&2
    ;;
  exec)
    [[ ${#command[@]} -gt 0 ]] || fail "exec needs HOST -- COMMAND"
    host_number "$host" >/dev/null
    exec ip netns exec "$name-$host" "${command[@]}"
    ;;
  address)
    number=$(host_number "$host")
    echo "198.19.0.$number"
    ;;
  cut) set_links cut ;;
  heal) set_links healed ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
