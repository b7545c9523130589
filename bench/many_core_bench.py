#!/usr/bin/python3
"""The connection core's throughput rows on a machine with CPUs for both sides
(16 or more), each beside its raw baseline and each with its cost: the CPU
time (user + system, from wait4) of each program per message or per KB.
Samples of the things compared are interleaved.

1. Pipelined echo, 100 clients, 32-byte messages, 1000 in flight each, at 4
   and 8 server threads: the server on CPUs 0..T-1, the clients (T threads)
   on CPUs 8..8+T-1. `volley echo-server`, the same with `--io uring`, and
   the raw epoll server (bench/raw); msgs/s and server CPU per message.
2. gNB, the 1200-byte mix, 1, 4 and 8 connections, a thread per connection
   on each side: the receiver on CPUs 0..C-1, the sender on 8..8+C-1. Pairs:
   traffic_generator -> volley target (and the target with --io uring), raw
   sender -> raw sink, raw sender -> raw sink checking every frame as the
   target does (`raw_sink ... check`), and the cross pairs (generator -> raw
   sink, raw sender -> target) that show which Volley side is the slower.
   MB/s, receiver CPU per KB, sender CPU per KB. Every run checks that the
   receiver got exactly the bytes the sender sent.

Round trips and the one-thread echo costs are bench/core_cost.py's.
Usage: bench/many_core_bench.py [BINDIR] [--samples N] [--seconds S] [--echo-threads 4,8]
[--connections 1,4,8] [--client-base 8] [--only echo|gnb]
Markdown on stdout, every sample in bench/results/many_core.json."""
import argparse
import json
import os
import signal
import sys
import tempfile
import time

from bench_common import ServerProcess, finish, median, ns_per_message, pinned, start
from gnb_bench import MIXES, RAW_MIX, machine, wait_for_file

CLIENT_BASE = 8  # the first CPU of the sending side (--client-base)


def cpus(first, count):
    return f"{first}-{first + count - 1}" if count > 1 else str(first)


def echo_client(bindir, cpu, port, threads, seconds):
    argv = [f"{bindir}/volley", "echo-client", "--proto", "tcp", "-p", str(port), "-z", str(seconds), "--json",
            "--no-progress", "-c", "100", "-t", str(threads)]
    out = start(pinned(cpu) + argv)
    status, stdout, stderr, _ = finish(out, seconds + 60)
    if status != 0:
        raise RuntimeError(f"echo-client failed: {stderr.strip()[-200:]}")
    r = json.loads(stdout)
    if r["errors"] or r["mismatched_bytes"]:
        raise RuntimeError(f"an echo sample had errors: {r}")
    return r


def echo_sample(bindir, kind, threads, seconds, port):
    scpu, ccpu = cpus(0, threads), cpus(CLIENT_BASE, threads)
    if kind == "raw epoll":
        s = ServerProcess([f"{bindir}/raw_echo_server", str(port), str(threads)], scpu)
        port_used = port
    else:
        io = "uring" if kind == "volley --io uring" else "reactor"
        try:
            s = ServerProcess([f"{bindir}/volley", "echo-server", "--proto", "tcp", "-p", "0", "-t", str(threads),
                               "--no-progress", "--io", io], scpu, port_from_stdout=True)
        except SystemExit as e:
            raise RuntimeError(str(e))
        port_used = s.port
    try:
        r = echo_client(bindir, ccpu, port_used, threads, seconds)
    finally:
        cpu = s.stop()
    return {"msgs_per_s": r["msgs_per_s"], "server_ns_per_msg": ns_per_message(cpu, r)}


def attempt(what, sample):
    """One sample, or None (and a line on stderr) where it failed: one broken kind must not lose the others."""
    try:
        return sample()
    except (RuntimeError, SystemExit, OSError, ValueError, KeyError) as e:
        print(f"many_core: {what}: {e}", file=sys.stderr, flush=True)
        return None


def medians(samples, fields):
    ok = [x for x in samples if x is not None]
    return {f: median([x[f] for x in ok]) for f in fields} if ok else None


def echo_rows(bindir, thread_counts, samples, seconds, record):
    kinds = ("volley", "volley --io uring", "raw epoll")
    print(f"## Pipelined echo, 100 clients, 32 B, 1000 in flight each ({seconds:g} s, median of {samples})\n")
    print("| threads | " + " | ".join(f"{k} msgs/s | {k} server CPU/msg" for k in kinds) +
          " | volley / raw (rate) | volley / raw (CPU/msg) | uring / reactor (rate) |")
    print("|---:|" + "---:|" * (2 * len(kinds) + 3))
    port = 32300
    for threads in thread_counts:
        got = {k: [] for k in kinds}
        for _ in range(samples):
            for k in kinds:
                port += 1
                got[k].append(attempt(f"echo {k}, {threads} threads",
                                      lambda: echo_sample(bindir, k, threads, seconds, port)))
        m = {k: medians(got[k], ("msgs_per_s", "server_ns_per_msg")) for k in kinds}
        record.append({"run": "echo", "threads": threads, "samples": got})
        cell = lambda x: f"{x['msgs_per_s'] / 1e6:.1f} M | {x['server_ns_per_msg']:.1f} ns" if x else "failed | -"
        ratio = lambda a, b, f: f"{a[f] / b[f]:.2f}" if a and b else "-"
        v, r, u = m["volley"], m["raw epoll"], m["volley --io uring"]
        print(f"| {threads} | " + " | ".join(cell(m[k]) for k in kinds) +
              f" | {ratio(v, r, 'msgs_per_s')} | {ratio(v, r, 'server_ns_per_msg')} | {ratio(u, v, 'msgs_per_s')} |",
              flush=True)
    print()


def receiver(bindir, kind, connections, port, tmp):
    """Starts a receiver; returns (process, port, how to read its bytes from its stdout)."""
    rcpu = cpus(0, connections)
    if kind.startswith("raw"):
        p = start(pinned(rcpu) + [f"{bindir}/raw_sink", str(port), str(connections)] +
                  (["check"] if kind == "raw check" else []))
        time.sleep(0.2)
        return p, port
    port_file = os.path.join(tmp, "port")
    p = start(pinned(rcpu) + [f"{bindir}/volley", "target", "--bind", "127.0.0.1", "--port", "0", "--port-file",
                              port_file, "--handler", "variant", "--threads", str(connections), "--json",
                              "--no-progress", "--io", "uring" if kind == "target --io uring" else "reactor"])
    return p, wait_for_file(port_file, p, "volley target")


def gnb_sample(bindir, sender_kind, receiver_kind, connections, seconds, port):
    scpu = cpus(CLIENT_BASE, connections)
    with tempfile.TemporaryDirectory() as tmp:
        rx, rx_port = receiver(bindir, receiver_kind, connections, port, tmp)
        tx_status = None
        try:
            if sender_kind == "generator":
                argv = [f"{bindir}/traffic_generator", *MIXES["1200"], "-t", str(seconds), "--port", str(rx_port),
                        "-c", str(connections), "--threads", str(connections), "--json", "--no-progress"]
            else:
                argv = [f"{bindir}/raw_sender", str(rx_port), str(seconds), str(connections), *RAW_MIX["1200"]]
            tx_status, tx_out, tx_err, tx_cpu = finish(start(pinned(scpu) + argv), seconds + 60)
        finally:
            if not receiver_kind.startswith("raw"):
                rx.send_signal(signal.SIGTERM)
            elif tx_status != 0:  # also None: the sender did not run
                rx.kill()  # the sink waits for connections that will not come (poll() would reap it)
        rx_status, rx_out, rx_err, rx_cpu = finish(rx, 60)
    if tx_status != 0 or rx_status != 0:
        raise RuntimeError(f"{sender_kind} -> {receiver_kind} failed: {tx_err.strip()[-200:]} {rx_err.strip()[-200:]}")
    tx = json.loads(tx_out)
    rx_json = json.loads(rx_out[rx_out.index("{"):])  # after the target's "listening" line
    if tx["bytes"] != rx_json["bytes"]:
        raise RuntimeError(f"{receiver_kind} received {rx_json['bytes']} bytes, {sender_kind} sent {tx['bytes']}")
    sent = tx["bytes"]
    secs = tx.get("seconds") or tx.get("elapsed_s") or seconds
    return {"mb_per_s": tx["mb_per_s"] if "mb_per_s" in tx else sent / secs / 1e6,
            "receiver_ns_per_kb": rx_cpu / sent * 1e12, "sender_ns_per_kb": tx_cpu / sent * 1e12}


def gnb_rows(bindir, connection_counts, samples, seconds, record):
    pairs = [("generator", "target"), ("generator", "target --io uring"), ("raw", "raw"), ("raw", "raw check"),
             ("generator", "raw"), ("raw", "target")]
    print(f"## gNB, 1200-byte mix, a thread per connection each side ({seconds:g} s, median of {samples})\n")
    print("Each cell: MB/s; receiver CPU per KB; sender CPU per KB.\n")
    print("| connections | " + " | ".join(f"{s} -> {r}" for s, r in pairs) + " |")
    print("|---:|" + "---|" * len(pairs))
    port = 32400
    for connections in connection_counts:
        got = {p: [] for p in pairs}
        for _ in range(samples):
            for p in pairs:
                port += 1
                got[p].append(attempt(f"gnb {p[0]} -> {p[1]}, {connections} connections",
                                      lambda: gnb_sample(bindir, p[0], p[1], connections, seconds, port)))
        cells = []
        for p in pairs:
            m = medians(got[p], ("mb_per_s", "receiver_ns_per_kb", "sender_ns_per_kb"))
            cells.append(f"{m['mb_per_s']:,.0f}; {m['receiver_ns_per_kb']:.0f} ns; {m['sender_ns_per_kb']:.0f} ns"
                         if m else "failed")
        record.append({"run": "gnb", "connections": connections,
                       "samples": {f"{s} -> {r}": v for (s, r), v in got.items()}})
        print(f"| {connections} | " + " | ".join(cells) + " |", flush=True)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bindir", nargs="?", default="build/bin")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", choices=("echo", "gnb"), help="one of the two tables")
    ap.add_argument("--echo-threads", default="4,8", help="server thread counts of the echo table")
    ap.add_argument("--connections", default="1,4,8", help="connection counts of the gNB table")
    ap.add_argument("--client-base", type=int, default=8, help="first CPU of the sending side")
    args = ap.parse_args()
    global CLIENT_BASE
    CLIENT_BASE = args.client_base
    threads = [int(x) for x in args.echo_threads.split(",")]
    connections = [int(x) for x in args.connections.split(",")]
    need = max(args.client_base, max(threads + connections)) + max(threads + connections)
    if (os.cpu_count() or 1) < need:
        sys.exit(f"many_core: needs {need} CPUs for this placement, this machine has {os.cpu_count()}")
    m = machine()
    print(f"# The connection core on {m['cpu']}, {m['cores']} CPUs, kernel {m['kernel']}, {m['date']}\n")
    record = {"machine": m, "rows": []}
    if args.only in (None, "echo"):
        echo_rows(args.bindir, threads, args.samples, args.seconds, record["rows"])
    if args.only in (None, "gnb"):
        gnb_rows(args.bindir, connections, args.samples, args.seconds, record["rows"])
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/many_core.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
