#!/usr/bin/python3
"""Unix domain sockets against loopback TCP (issue 39), the same harness for
both: `volley echo-server -t 1` pinned to SERVER_CPU and Volley's echo client
(on Volley's connection) pinned to CLIENT_CPU, 32-byte messages, one client.

- throughput: 1000 messages in flight; messages per second, and the server's
  CPU time per message (user + system from wait4, over the messages echoed);
- round trip: one message at a time, p50 and p99, with sleeping loops and
  with both sides busy-polling (--busy-poll).
Samples alternate TCP and Unix, round after round; the table gives medians.

Usage: bench/unix_socket_bench.py BINDIR [--rounds N] [--seconds S] [--cpus SERVER,CLIENT] [--json FILE]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, ns_per_message, pinned

SIZE = 32


def run(args, link, mode, sock):
    server = [f"{args.bindir}/volley", "echo-server", "-t", "1", "--no-progress"]
    server += ["--unix", sock] if link == "unix" else ["-p", "0"]
    if mode == "busy":
        server.append("--busy-poll")
    s = ServerProcess(server, args.server_cpu, port_from_stdout=True)
    client = [f"{args.bindir}/volley", "echo-client", "-c", "1", "-t", "1", "-s", str(SIZE), "-z", f"{args.seconds}s",
              "--on-connection", "--json", "--no-progress"]
    client += ["--unix", sock] if link == "unix" else ["-p", s.port]
    if mode != "pipelined":
        client.append("--rtt")
    if mode == "busy":
        client.append("--busy-poll")
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bindir")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--cpus", default="1,0", help="SERVER,CLIENT")
    p.add_argument("--json")
    args = p.parse_args()
    args.server_cpu, args.client_cpu = (int(c) for c in args.cpus.split(","))
    sock = os.path.join(tempfile.mkdtemp(prefix="volley-unix-bench-"), "echo.sock")
    samples = {}
    for r in range(args.rounds):
        for mode in ("pipelined", "sleeping", "busy"):
            for link in ("tcp", "unix"):
                x = run(args, link, mode, sock)
                samples.setdefault((mode, link), []).append(x)
                print(f"round {r + 1} {mode:9} {link:4} {x}", flush=True)

    def med(mode, link, key):
        return statistics.median(x[key] for x in samples[(mode, link)])

    print("\n| 32-byte messages, 1 client | loopback TCP | Unix socket | Unix / TCP |")
    print("|---|---:|---:|---:|")
    rows = [("pipelined", "msgs_per_s", "pipelined echo, messages/s", "{:,.0f}"),
            ("pipelined", "server_ns_per_msg", "pipelined echo, server CPU ns/message", "{:.0f}"),
            ("sleeping", "p50_us", "round trip p50, sleeping loops (us)", "{:.1f}"),
            ("sleeping", "p99_us", "round trip p99, sleeping loops (us)", "{:.1f}"),
            ("busy", "p50_us", "round trip p50, busy-polling (us)", "{:.2f}"),
            ("busy", "p99_us", "round trip p99, busy-polling (us)", "{:.2f}")]
    table = {}
    for mode, key, label, fmt in rows:
        tcp, unix = med(mode, "tcp", key), med(mode, "unix", key)
        table[f"{mode}.{key}"] = {"tcp": tcp, "unix": unix}
        print(f"| {label} | {fmt.format(tcp)} | {fmt.format(unix)} | {unix / tcp:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"medians": table, "rounds": args.rounds, "seconds": args.seconds}, f, indent=1)


if __name__ == "__main__":
    main()
