#!/usr/bin/python3
"""Co-located transports (issue 39): loopback TCP, a Unix socket and shared
memory under the same harness, beside hand-written baselines.

`volley echo-server -t 1` pinned to SERVER_CPU and Volley's echo client (on
Volley's connection) pinned to CLIENT_CPU, 32-byte messages, one client:
- pipelined: 1000 messages in flight; messages per second, and the server's
  CPU time per message (user + system from wait4, over the messages echoed);
- sleeping: one message at a time, the loops sleeping in the kernel between
  messages (shared memory with --shm-spin 0: every message a doorbell on the
  socket and a wake-up); p50 and p99;
- spin-then-sleep (shared memory only): the same with the default --shm-spin
  (10 us of looking before a side sleeps);
- busy: one at a time, both sides busy-polling (--busy-poll).
Baselines, same CPUs: bench/raw/raw_shm_pingpong (two processes, a ring each
way, spinning) for the busy rows; bench/raw/raw_pingpong (blocking TCP) for
the sleeping rows. Samples alternate round after round; the table gives medians.

With --busy-pairs N, only the busy shared-memory round trip and its raw
baseline, N pairs of 1-second runs back to back: on a VM whose two vCPUs
now share a cache and now do not, only samples taken back to back compare.

Usage: bench/local_bench.py BINDIR [--rounds N] [--seconds S] [--cpus SERVER,CLIENT] [--json FILE]
       bench/local_bench.py BINDIR --busy-pairs N"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, ns_per_message, pinned, raw_pingpong

SIZE = 32
LINKS = ("tcp", "unix", "shm")


def volley(args, link, mode, sock):
    server = [f"{args.bindir}/volley", "echo-server", "-t", "1", "--no-progress"]
    server += ["-p", "0"] if link == "tcp" else ["--unix", sock]
    client = [f"{args.bindir}/volley", "echo-client", "-c", "1", "-t", "1", "-s", str(SIZE), "-z", f"{args.seconds}s",
              "--on-connection", "--json", "--no-progress"]
    if link == "shm":
        spin = ["--shm-spin", "0"] if mode == "sleeping" else []
        server += ["--shm"] + spin
        client += ["--shm"] + spin
    if mode != "pipelined":
        client.append("--rtt")
    if mode == "busy":
        server.append("--busy-poll")
        client.append("--busy-poll")
    s = ServerProcess(server, args.server_cpu, port_from_stdout=True)
    client += ["-p", s.port] if link == "tcp" else ["--unix", sock]
    out = subprocess.run(pinned(args.client_cpu) + client, capture_output=True, text=True, timeout=args.seconds + 60)
    cpu = s.stop()
    if out.returncode != 0:
        sys.exit(f"echo-client failed: {out.stderr}")
    r = json.loads(out.stdout)
    if r["errors"]:
        sys.exit(f"echo-client reported errors: {out.stderr}")
    if mode == "pipelined":
        return {"msgs_per_s": r["msgs_per_s"], "server_ns_per_msg": ns_per_message(cpu, r)}
    return {"p50_us": r["rtt_ns"]["p50"] / 1e3, "p99_us": r["rtt_ns"]["p99"] / 1e3}


def raw_shm(args):
    out = subprocess.run([f"{args.bindir}/raw_shm_pingpong", str(args.seconds), str(SIZE), args.server_cpu,
                          args.client_cpu], capture_output=True, text=True, timeout=args.seconds + 60)
    if out.returncode != 0:
        sys.exit(f"raw_shm_pingpong failed: {out.stderr}")
    r = json.loads(out.stdout)
    return {"p50_us": r["p50_ns"] / 1e3, "p99_us": r["p99_ns"] / 1e3}


def busy_pairs(args, sock):
    args.seconds = 1
    ratios = []
    for i in range(args.busy_pairs):
        v = volley(args, "shm", "busy", sock)["p50_us"]
        r = raw_shm(args)["p50_us"]
        ratios.append(v / r)
        print(f"pair {i + 1}: Volley shm busy p50 {v * 1e3:.0f} ns, raw {r * 1e3:.0f} ns, ratio {v / r:.2f}", flush=True)
    print(f"median ratio {statistics.median(ratios):.2f} over {len(ratios)} pairs")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bindir")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--cpus", default="1,0", help="SERVER,CLIENT")
    p.add_argument("--json")
    p.add_argument("--busy-pairs", type=int, default=0)
    args = p.parse_args()
    args.server_cpu, args.client_cpu = args.cpus.split(",")
    sock = os.path.join(tempfile.mkdtemp(prefix="volley-local-bench-"), "echo.sock")
    if args.busy_pairs:
        return busy_pairs(args, sock)
    samples = {}

    def add(key, x):
        samples.setdefault(key, []).append(x)
        print(f"round {r + 1} {key[0]:9} {key[1]:8} {x}", flush=True)

    for r in range(args.rounds):
        for mode in ("pipelined", "sleeping", "busy"):
            for link in LINKS:
                add((mode, link), volley(args, link, mode, sock))
        add(("spin-then-sleep", "shm"), volley(args, "shm", "spin-then-sleep", sock))
        add(("busy", "raw shm"), raw_shm(args))
        raw = raw_pingpong(args.bindir, args.server_cpu, args.client_cpu, args.seconds, SIZE, SIZE)
        add(("sleeping", "raw tcp"), {"p50_us": raw["p50_us"], "p99_us": raw["p99_us"]})

    def med(mode, link, key):
        return statistics.median(x[key] for x in samples[(mode, link)])

    print("\n| 32-byte messages, 1 client | loopback TCP | Unix socket | shared memory | Unix / TCP | shm / TCP |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = [("pipelined", "msgs_per_s", "pipelined echo, messages/s", "{:,.0f}"),
            ("pipelined", "server_ns_per_msg", "pipelined echo, server CPU ns/message", "{:.0f}"),
            ("sleeping", "p50_us", "round trip p50, sleeping loops (us)", "{:.1f}"),
            ("sleeping", "p99_us", "round trip p99, sleeping loops (us)", "{:.1f}"),
            ("busy", "p50_us", "round trip p50, busy-polling (us)", "{:.2f}"),
            ("busy", "p99_us", "round trip p99, busy-polling (us)", "{:.2f}")]
    table = {}
    for mode, key, label, fmt in rows:
        v = {link: med(mode, link, key) for link in LINKS}
        table[f"{mode}.{key}"] = v
        print(f"| {label} | {' | '.join(fmt.format(v[l]) for l in LINKS)} | {v['unix'] / v['tcp']:.2f} | "
              f"{v['shm'] / v['tcp']:.2f} |")
    table["spin-then-sleep"] = {k: med("spin-then-sleep", "shm", k) for k in ("p50_us", "p99_us")}
    print(f"\nshared memory, spin-then-sleep (--shm-spin 10us): round trip p50 "
          f"{table['spin-then-sleep']['p50_us']:.2f} us, p99 {table['spin-then-sleep']['p99_us']:.2f} us")
    raw_tcp = med("sleeping", "raw tcp", "p50_us")
    raw_shm_p50 = med("busy", "raw shm", "p50_us")
    print(f"raw blocking TCP ping-pong p50: {raw_tcp:.1f} us (Volley shm, sleeping: "
          f"{table['sleeping.p50_us']['shm']:.1f} us)")
    print(f"raw shared-memory ping-pong p50: {raw_shm_p50 * 1e3:.0f} ns (Volley shm, busy: "
          f"{table['busy.p50_us']['shm'] * 1e3:.0f} ns, {table['busy.p50_us']['shm'] / raw_shm_p50:.2f}x)")
    table["raw"] = {"tcp_blocking_p50_us": raw_tcp, "shm_busy_p50_us": raw_shm_p50,
                    "tcp_blocking_p99_us": med("sleeping", "raw tcp", "p99_us"),
                    "shm_busy_p99_us": med("busy", "raw shm", "p99_us")}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"medians": table, "rounds": args.rounds, "seconds": args.seconds}, f, indent=1)


if __name__ == "__main__":
    main()
