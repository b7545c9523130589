#!/usr/bin/python3
"""The server's two CPU designs side by side: one loop per worker thread, and
one loop run by a thread pool with a strand per connection (`--design`), on
Volley's echo server, samples of the two interleaved in one run. The
pipelined echo (32-byte messages, 1000 in flight per client) with one
client, with three (two worker loops then carry two and one: uneven), with
100, over TCP and TLS; UDP (a socket per worker on one port); true round trips; the RPC round trip; the gNB
target fed by the generator; the netem relay (one serialized link: a loop of
its own, or a strand of a loop two threads run) with a UDP echo server behind
it. Ratios are thread pool / loop per thread. Markdown on stdout, every sample
in bench/results/design.json."""
import json
import os
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, median, pinned
from echo_bench import client

SAMPLES = int(os.environ.get("BENCH_SAMPLES", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
CROSS = ("server CPU 1, client CPU 0", "1", "0")
SHARED = ("unpinned (2 CPUs shared)", None, None)
DESIGNS = ("loop-per-thread", "thread-pool")


def server(bindir, cpu, design, threads, proto="tcp", certs=None):
    argv = [f"{bindir}/volley", "echo-server", "--proto", proto, "-p", "0", "-t", str(threads), "--design", design,
            "--no-progress"]
    if proto == "tls":
        argv += ["--cert", f"{certs}/server.pem", "--key", f"{certs}/server.key"]
    return ServerProcess(argv, cpu, port_from_stdout=True)


def target_sample(bindir, design, connections):
    """volley target (2 threads) fed by the generator; the target's CPU per frame and the frames it took."""
    s = ServerProcess([f"{bindir}/volley", "target", "-p", "0", "-t", "2", "--design", design, "--no-progress",
                       "--json"], None, port_from_stdout=True)
    gen = subprocess.run([f"{bindir}/traffic_generator", "-p", s.port, "-m", "1001:64:25", "-m", "1002:16:25", "-m",
                          "8001:1200:50", "-c", str(connections), "-t", str(SECONDS), "--no-progress", "--json"],
                         capture_output=True, text=True, timeout=SECONDS + 60)
    s.stop()
    if gen.returncode != 0:
        sys.exit(f"traffic_generator failed: {gen.stderr}")
    report = json.loads(s.proc.stdout.read())
    return {"cpu_ns_per_frame": report["cpu_ns_per_frame"], "frames": report["frames"],
            "frames_per_s": report["frames"] / json.loads(gen.stdout)["seconds"]}


def rpc_sample(bindir, design, cpus):
    """rpc-server (2 threads) and rpc-bench, one call in flight: the request/reply round trip's p50 in us."""
    _, scpu, ccpu = cpus
    s = ServerProcess([f"{bindir}/volley", "rpc-server", "-p", "0", "-t", "2", "--design", design], scpu,
                      port_from_stdout=True)
    out = subprocess.run(pinned(ccpu) + [f"{bindir}/volley", "rpc-bench", "-p", s.port, "--mode", "request",
                                         "--in-flight", "1", "-z", str(SECONDS), "--json"],
                         capture_output=True, text=True, timeout=SECONDS + 60)
    s.stop()
    if out.returncode != 0:
        sys.exit(f"rpc-bench failed: {out.stderr}")
    return json.loads(out.stdout)["results"][0]["rtt_ns"]["p50"] / 1e3


def echo_row(name, place, samples, rtt):
    """One table row of echo-client samples per design: the round trip's p50, or messages per second."""
    for d in DESIGNS:
        for x in samples[d]:
            if x["errors"] or x["mismatched_bytes"]:
                print(f"<!-- {name}, {d}: {x['errors']} errors, {x['mismatched_bytes']} bytes mismatched -->")
    if rtt:
        lpt, tp = (median([x["rtt_ns"]["p50"] / 1e3 for x in samples[d]]) for d in DESIGNS)
        print(f"| {name}, p50 | {place} | {lpt:.1f} us | {tp:.1f} us | {tp / lpt:.2f} (lower is better) |", flush=True)
    else:
        lpt, tp = (median([x["msgs_per_s"] for x in samples[d]]) for d in DESIGNS)
        print(f"| {name} | {place} | {lpt:,.0f} msgs/s | {tp:,.0f} msgs/s | {tp / lpt:.2f} |", flush=True)


def netem_sample(bindir, design, args):
    """The UDP echo client through `volley netem` (no impairment) to a one-loop UDP echo server."""
    echo = ServerProcess([f"{bindir}/volley", "echo-server", "--proto", "udp", "-p", "0", "-t", "1", "--no-progress"],
                         None, port_from_stdout=True)
    relay = ServerProcess([f"{bindir}/volley", "netem", "--port", "0", "--forward",
                           f"127.0.0.1:{echo.port}", "--design", design, "--no-progress"]
                          + (["--threads", "2"] if design == "thread-pool" else []), None, port_from_stdout=True)
    result = client(bindir, None, relay.port, args, "udp")
    relay.stop()
    echo.stop()
    return result


def netem_rows(bindir, record):
    for name, args, rtt in (
            ("netem relay, UDP echo behind it, 8 clients x 10 in flight", ["-c", "8", "-m", "10"], False),
            ("netem relay, UDP round trip, 1 client", ["-c", "1", "--rtt"], True)):
        samples = {d: [] for d in DESIGNS}
        for _ in range(SAMPLES):
            for design in DESIGNS:
                samples[design].append(netem_sample(bindir, design, args))
        record.append({"case": name, "placement": SHARED[0], **samples})
        echo_row(name, SHARED[0], samples, rtt)


def rpc_rows(bindir, record):
    for place in (CROSS, SHARED):
        samples = {d: [] for d in DESIGNS}
        for _ in range(SAMPLES):
            for design in DESIGNS:
                samples[design].append(rpc_sample(bindir, design, place))
        name = "RPC request/reply round trip, 2 threads, p50"
        record.append({"case": name, "placement": place[0], **samples})
        lpt, tp = (median(samples[d]) for d in DESIGNS)
        print(f"| {name} | {place[0]} | {lpt:.1f} us | {tp:.1f} us | {tp / lpt:.2f} (lower is better) |", flush=True)


def target_rows(bindir, record):
    for connections in (1, 4):
        name = f"gNB target, 2 threads, {connections} generator connection{'s' if connections > 1 else ''}"
        samples = {d: [] for d in DESIGNS}
        for _ in range(SAMPLES):
            for design in DESIGNS:
                samples[design].append(target_sample(bindir, design, connections))
        record.append({"case": name, "placement": SHARED[0], **samples})
        lpt, tp = (median([x["frames_per_s"] for x in samples[d]]) for d in DESIGNS)
        print(f"| {name}, frames/s | {SHARED[0]} | {lpt:,.0f} | {tp:,.0f} | {tp / lpt:.2f} |", flush=True)
        lpt, tp = (median([x["cpu_ns_per_frame"] for x in samples[d]]) for d in DESIGNS)
        print(f"| {name}, target CPU per frame | {SHARED[0]} | {lpt:.1f} ns | {tp:.1f} ns | {tp / lpt:.2f} "
              "(lower is better) |", flush=True)


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    record = []
    only = os.environ.get("BENCH_ONLY")  # run the cases whose name has this text, and no others
    cases = [
        ("TCP, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1"], 1, "tcp", False),
        ("TCP, 1 client, 2 threads", SHARED, ["-c", "1", "-t", "1"], 2, "tcp", False),
        ("TCP, 3 clients, 2 threads (uneven)", SHARED, ["-c", "3", "-t", "1"], 2, "tcp", False),
        ("TCP, 100 clients, 2 threads", SHARED, ["-c", "100", "-t", "2"], 2, "tcp", False),
        ("TLS 1.3, 100 clients, 2 threads", SHARED, ["-c", "100", "-t", "2"], 2, "tls", False),
        ("UDP, 8 clients, 2 threads", SHARED, ["-c", "8", "-t", "2"], 2, "udp", False),
        ("TCP round trip, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1", "--rtt"], 1, "tcp", True),
        ("TCP round trip, 1 client, 2 threads", SHARED, ["-c", "1", "-t", "1", "--rtt"], 2, "tcp", True),
    ]
    print(f"## Loop per thread and thread pool: Volley's echo server ({SECONDS:g} s per sample, median of "
          f"{SAMPLES}, the designs interleaved)\n")
    print("| case | placement | loop per thread | thread pool | thread pool / loop per thread |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as certs:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/../scripts/make-test-certs.sh", certs], check=True, stdout=subprocess.DEVNULL)
        for name, (place, scpu, ccpu), args, threads, proto, rtt in cases:
            if only and only not in name:
                continue
            samples = {d: [] for d in DESIGNS}
            for _ in range(SAMPLES):
                for design in DESIGNS:
                    s = server(bindir, scpu, design, threads, proto, certs)
                    samples[design].append(client(bindir, ccpu, s.port, args, proto, certs))
                    s.stop()
            record.append({"case": name, "placement": place, **samples})
            echo_row(name, place, samples, rtt)
    if not only:
        rpc_rows(bindir, record)
        target_rows(bindir, record)
    if not only or only in "netem":
        netem_rows(bindir, record)
    print()
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/design.json" if not only else "bench/results/design-partial.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
