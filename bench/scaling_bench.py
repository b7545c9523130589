#!/usr/bin/python3
"""The scaling run (`make bench`): the pipelined echo and the gNB target at
1, 2, 4 and 8 server threads, as many as fit this machine, each beside its
raw baselines in the same run with samples interleaved. Ratios are Volley /
baseline.

Placement: with T server threads, where 2T CPUs exist the server runs on CPUs
0..T-1 and the clients on T..2T-1 ("separate"); where they do not, both share
all the CPUs unpinned ("shared"), which is what a 2-core machine can do at 2
threads. Echo: `volley echo-server` against the raw epoll server and the raw
io_uring echo (bench/raw), 100 clients with 1000 32-byte messages in flight
each. gNB: `volley target` against the raw blocking sink (bench/raw), the
1200-byte mix over 2T connections (every frame checked at the target). Volley
runs twice: receiving through the reactor (the default) and through io_uring
(`--io uring`: multishot receives into buffers the loop provides).
Markdown on stdout, every sample in bench/results/scaling.json."""
import json
import os
import sys

from bench_common import ServerProcess, median
from echo_bench import SAMPLES, client, volley_server
from gnb_bench import machine, run_raw, run_volley

GNB_SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))


def placement(threads):
    """(name, server CPUs, client CPUs) for a server of `threads` threads."""
    cpus = os.cpu_count() or 1
    if 2 * threads <= cpus:
        if threads == 1:
            return "separate: server CPU 0, clients CPU 1", "0", "1"
        server, clients = f"0-{threads - 1}", f"{threads}-{2 * threads - 1}"
        return f"separate: server CPUs {server}, clients CPUs {clients}", server, clients
    return f"shared: {cpus} CPUs, unpinned", None, None


def echo_rows(bindir, thread_counts, record):
    uring = os.path.exists(f"{bindir}/raw_uring_echo")
    print("## Pipelined echo, 100 clients, 32-byte messages, 1000 in flight each (median of "
          f"{SAMPLES} interleaved samples)\n")
    print("| threads | placement | Volley msgs/s | Volley --io uring msgs/s | raw epoll msgs/s | Volley / raw epoll "
          "| Volley --io uring / raw epoll | raw io_uring msgs/s | Volley / raw io_uring |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for threads in thread_counts:
        place, scpu, ccpu = placement(threads)
        args = ["-c", "100", "-t", str(threads)]
        vs, ws, es, us = [], [], [], []
        for _ in range(SAMPLES):
            s = volley_server(bindir, scpu, "tcp", threads)
            vs.append(client(bindir, ccpu, s.port, args))
            s.stop()
            s = volley_server(bindir, scpu, "tcp", threads, io="uring")
            ws.append(client(bindir, ccpu, s.port, args))
            s.stop()
            b = ServerProcess([f"{bindir}/raw_echo_server", "32241", str(threads)], scpu)
            es.append(client(bindir, ccpu, 32241, args))
            b.stop()
            if uring:
                b = ServerProcess([f"{bindir}/raw_uring_echo", "32242", str(threads)], scpu)
                us.append(client(bindir, ccpu, 32242, args))
                b.stop()
        for x in vs + ws + es + us:
            if x["errors"] or x["mismatched_bytes"]:
                sys.exit(f"scaling: an echo sample had errors: {x}")
        v, e = median([x["msgs_per_s"] for x in vs]), median([x["msgs_per_s"] for x in es])
        w = median([x["msgs_per_s"] for x in ws])
        u_cols = "- | -"
        if us:
            u = median([x["msgs_per_s"] for x in us])
            u_cols = f"{u:,.0f} | {v / u:.2f}"
        record.append({"run": "echo", "threads": threads, "placement": place, "volley": vs,
                       "volley_io_uring_receive": ws, "raw_epoll": es, "raw_io_uring": us})
        print(f"| {threads} | {place} | {v:,.0f} | {w:,.0f} | {e:,.0f} | {v / e:.2f} | {w / e:.2f} | {u_cols} |",
              flush=True)
    print()


def gnb_rows(bindir, thread_counts, record):
    print(f"## gNB target, 1200-byte mix, 2 connections per thread ({GNB_SECONDS:g} s per sample, median of "
          f"{SAMPLES} interleaved samples)\n")
    print("| threads | connections | placement | Volley MB/s | target CPU ns/frame | Volley --io uring MB/s "
          "| its CPU ns/frame | raw sink MB/s | Volley / raw | Volley --io uring / raw |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for threads in thread_counts:
        place, scpu, ccpu = placement(threads)
        connections = 2 * threads
        vs, ws, rs = [], [], []
        for _ in range(SAMPLES):
            vs.append(run_volley(bindir, "variant", "1200", GNB_SECONDS, connections, threads, scpu, ccpu,
                                 gen_threads=threads))
            ws.append(run_volley(bindir, "variant", "1200", GNB_SECONDS, connections, threads, scpu, ccpu,
                                 gen_threads=threads, io="uring"))
            rs.append(run_raw(bindir, "1200", GNB_SECONDS, connections, scpu, ccpu, 32243))
        v, r = median([x["mb_per_s"] for x in vs]), median([x["mb_per_s"] for x in rs])
        w = median([x["mb_per_s"] for x in ws])
        cpu, wcpu = median([x["target_cpu_ns"] for x in vs]), median([x["target_cpu_ns"] for x in ws])
        record.append({"run": "gnb", "threads": threads, "connections": connections, "placement": place,
                       "volley": vs, "volley_io_uring_receive": ws, "raw": rs})
        print(f"| {threads} | {connections} | {place} | {v:,.1f} | {cpu:.1f} | {w:,.1f} | {wcpu:.1f} | {r:,.1f} "
              f"| {v / r:.2f} | {w / r:.2f} |", flush=True)
    print()


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    cpus = os.cpu_count() or 1
    thread_counts = [t for t in (1, 2, 4, 8) if t <= cpus]
    m = machine()
    print(f"# Scaling: {', '.join(map(str, thread_counts))} server threads on {m['cpu']}, {m['cores']} CPUs, "
          f"kernel {m['kernel']}, {m['date']}\n")
    record = {"machine": m, "rows": []}
    echo_rows(bindir, thread_counts, record["rows"])
    gnb_rows(bindir, thread_counts, record["rows"])
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/scaling.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
