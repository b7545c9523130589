#!/usr/bin/python3
"""Echo benchmarks (issue 3): Volley's echo server and client over TCP, TLS
and UDP next to plain-socket baselines (bench/raw: an epoll TCP echo server,
the same echo on io_uring, a UDP echo with recvmmsg/sendmmsg, a blocking
ping-pong and its busy-polling twin), in one run with samples interleaved. Every figure comes with where
the processes ran (taskset); ratios are Volley / baseline. Markdown on stdout,
every sample in bench/results/echo.json."""
import json
import os
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, median, ns_per_message, pinned, raw_pingpong, raw_pingpong_client

SAMPLES = 3
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
CROSS = ("server CPU 1, client CPU 0", "1", "0")
SAME = ("both on CPU 0", "0", "0")
SHARED = ("unpinned (2 CPUs shared)", None, None)


def volley_server(bindir, cpu, proto="tcp", threads=1, busy=False, certs=None, io="reactor"):
    argv = [f"{bindir}/volley", "echo-server", "--proto", proto, "-p", "0", "-t", str(threads), "--no-progress",
            "--io", io]
    if busy:
        argv.append("--busy-poll")
    if proto == "tls":
        argv += ["--cert", f"{certs}/server.pem", "--key", f"{certs}/server.key"]
    return ServerProcess(argv, cpu, port_from_stdout=True)


def client(bindir, cpu, port, args, proto="tcp", certs=None):
    argv = [f"{bindir}/volley", "echo-client", "--proto", proto, "-p", str(port), "-z", str(SECONDS), "--json",
            "--no-progress", *args]
    if proto == "tls":
        argv += ["--ca", f"{certs}/ca.pem"]
    out = subprocess.run(pinned(cpu) + argv, capture_output=True, text=True, timeout=SECONDS + 120)
    if out.returncode != 0:
        sys.exit(f"echo-client {args} failed: {out.stderr}")
    return json.loads(out.stdout)


def throughput_rows(bindir, certs, record):
    print(f"## Pipelined echo, 32-byte messages, 1000 in flight per client ({SECONDS:g} s per sample, "
          f"median of {SAMPLES})\n")
    print("Beside each rate, the server's CPU time (user + system) per message it echoed: "
          "what the message costs, whatever the machine's other load.\n")
    print("| case | placement | Volley msgs/s | baseline | baseline msgs/s | ratio "
          "| Volley server CPU/msg | baseline CPU/msg | CPU ratio |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    cases = [
        ("TCP, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1"], 1, "tcp", "raw epoll server"),
        ("TCP, 100 clients, 2 threads", SHARED, ["-c", "100", "-t", "2"], 2, "tcp", "raw epoll server, 2 threads"),
        ("UDP, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1"], 1, "udp", "raw recvmmsg/sendmmsg echo"),
        ("UDP, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1"], 1, "udp",
         "raw recvmmsg/sendmmsg echo, segmentation offload"),
        ("TLS 1.3, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1", "--tls-version", "1.3"], 1, "tls", "Volley TCP"),
        ("TLS 1.2, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1", "--tls-version", "1.2"], 1, "tls", "Volley TCP"),
        ("TLS 1.3, 100 clients, 2 threads", SHARED, ["-c", "100", "-t", "2"], 2, "tls", "Volley TCP"),
    ]
    for name, (place, scpu, ccpu), args, threads, proto, baseline in cases:
        vs, bs = [], []
        for _ in range(SAMPLES):
            s = volley_server(bindir, scpu, proto, threads, certs=certs)
            vs.append(client(bindir, ccpu, s.port, args, proto, certs))
            vs[-1]["server_ns_per_msg"] = ns_per_message(s.stop(), vs[-1])
            if proto == "tcp":
                port = 32231
                b = ServerProcess([f"{bindir}/raw_echo_server", str(port), str(threads)], scpu)
                bs.append(client(bindir, ccpu, port, args))
            elif proto == "udp":
                port = 32232
                gso = ["gso"] if "segmentation offload" in baseline else []
                b = ServerProcess([f"{bindir}/raw_udp_echo", str(port), *gso], scpu)
                bs.append(client(bindir, ccpu, port, args, "udp"))
            else:
                b = volley_server(bindir, scpu, "tcp", threads)
                bs.append(client(bindir, ccpu, b.port, [a for a in args if a not in ("--tls-version", "1.2", "1.3")]))
            bs[-1]["server_ns_per_msg"] = ns_per_message(b.stop(), bs[-1])
        for x in vs + bs:
            if x["errors"]:
                print(f"<!-- {name}: {x['errors']} errors in a sample -->")
        v, b = median([x["msgs_per_s"] for x in vs]), median([x["msgs_per_s"] for x in bs])
        vc, bc = median([x["server_ns_per_msg"] for x in vs]), median([x["server_ns_per_msg"] for x in bs])
        record.append({"case": name, "placement": place, "volley": vs, "baseline": bs})
        print(f"| {name} | {place} | {v:,.0f} | {baseline} | {b:,.0f} | {v / b:.2f} | {vc:.0f} ns | {bc:.0f} ns "
              f"| {vc / bc:.2f} |", flush=True)
    print()


def backend_rows(bindir, record):
    """The raw epoll server against the same echo on io_uring (bench/raw/raw_uring_echo:
    multishot accept and receive, provided buffers, one submission per completion
    batch), with Volley's server beside them: how much an io_uring backend could
    give on this kernel, and where Volley stands against each."""
    if not os.path.exists(f"{bindir}/raw_uring_echo"):
        print("## Raw echo on epoll and on io_uring: skipped (raw_uring_echo not built: liburing missing)\n")
        return
    print(f"## Raw echo on epoll and on io_uring, Volley beside them ({SECONDS:g} s per sample, median of "
          f"{SAMPLES}, samples interleaved)\n")
    print("| case | placement | raw epoll msgs/s | raw io_uring msgs/s | io_uring / epoll | Volley msgs/s "
          "| Volley / raw epoll | Volley / raw io_uring | server CPU/msg: raw epoll, raw io_uring, Volley "
          "| Volley CPU / raw epoll |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    cases = [
        ("pipelined, 32 B, 1 client, 1 thread", CROSS, ["-c", "1", "-t", "1"], 1),
        ("pipelined, 32 B, 100 clients, 2 threads", SHARED, ["-c", "100", "-t", "2"], 2),
        ("pipelined, 32 B, 100 clients, 1 thread", CROSS, ["-c", "100", "-t", "1"], 1),
    ]
    for name, (place, scpu, ccpu), args, threads in cases:
        es, us, vs = [], [], []
        for _ in range(SAMPLES):
            b = ServerProcess([f"{bindir}/raw_echo_server", "32233", str(threads)], scpu)
            es.append(client(bindir, ccpu, 32233, args))
            es[-1]["server_ns_per_msg"] = ns_per_message(b.stop(), es[-1])
            b = ServerProcess([f"{bindir}/raw_uring_echo", "32234", str(threads)], scpu)
            us.append(client(bindir, ccpu, 32234, args))
            us[-1]["server_ns_per_msg"] = ns_per_message(b.stop(), us[-1])
            s = volley_server(bindir, scpu, "tcp", threads)
            vs.append(client(bindir, ccpu, s.port, args))
            vs[-1]["server_ns_per_msg"] = ns_per_message(s.stop(), vs[-1])
        for x in es + us + vs:
            if x["errors"] or x["mismatched_bytes"]:
                print(f"<!-- {name}: {x['errors']} errors, {x['mismatched_bytes']} mismatched bytes in a sample -->")
        e, u, v = (median([x["msgs_per_s"] for x in xs]) for xs in (es, us, vs))
        ec, uc, vc = (median([x["server_ns_per_msg"] for x in xs]) for xs in (es, us, vs))
        record.append({"case": name, "placement": place, "raw_epoll": es, "raw_io_uring": us, "volley": vs})
        print(f"| {name} | {place} | {e:,.0f} | {u:,.0f} | {u / e:.2f} | {v:,.0f} | {v / e:.2f} | {v / u:.2f} "
              f"| {ec:.0f}, {uc:.0f}, {vc:.0f} ns | {vc / ec:.2f} |", flush=True)
    print()


def rtt_rows(bindir, record):
    print(f"## True round trips, 32 bytes, one message in flight (median of {SAMPLES} samples)\n")
    print("| Volley | placement | p50 | p99 | baseline | p50 | p99 | p50 ratio | p99 ratio |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    # The busy-poll rows' client runs on Volley's own connection (--on-connection), whose loop reads
    # the waiting sockets itself while it spins; the default client is a plain Asio stream.
    cases = [
        ("echo-client --rtt", CROSS, False, False),
        ("echo-client --rtt", SAME, False, False),
        ("--busy-poll both sides, client on Volley's connection", CROSS, True, False),
        ("--busy-poll both sides, client on Volley's connection", CROSS, True, True),
    ]
    for name, (place, scpu, ccpu), busy, against_busy in cases:
        vs, rs = [], []
        for _ in range(SAMPLES):
            s = volley_server(bindir, scpu, "tcp", 1, busy=busy)
            vs.append(client(bindir, ccpu, s.port, ["-c", "1", "-t", "1", "--rtt"] + (["--busy-poll", "--on-connection"] if busy else []))["rtt_ns"])
            s.stop()
            rs.append(raw_pingpong(bindir, scpu, ccpu, SECONDS, 32, 32, busy=against_busy, port=32221))
        v50, v99 = median([x["p50"] / 1e3 for x in vs]), median([x["p99"] / 1e3 for x in vs])
        r50, r99 = median([x["p50_us"] for x in rs]), median([x["p99_us"] for x in rs])
        baseline = "raw busy-poll ping-pong" if against_busy else "raw blocking ping-pong"
        record.append({"case": name, "placement": place, "baseline": baseline, "volley": vs, "raw": rs})
        print(f"| {name} | {place} | {v50:.1f} us | {v99:.1f} us | {baseline} | {r50:.1f} us | {r99:.1f} us "
              f"| {v50 / r50:.2f} | {v99 / r99:.2f} |", flush=True)
    print()
    one_cpu_server_rows(bindir, record)


def one_cpu_server_rows(bindir, record):
    """On one CPU a round trip is both programs' time added up. The same raw blocking client against three
    servers: the raw blocking one (sleeps in recv), the raw epoll one (sleeps in epoll_wait: the least an event
    loop does) and Volley's echo server. What the epoll server adds is the price of sleeping in epoll; what
    Volley adds beyond it is the library's."""
    print(f"### One CPU, server side alone: raw blocking client, 32 bytes (median of {SAMPLES} samples)\n")
    print("| server | p50 | p99 | p50 / raw blocking server | p50 / raw epoll server |")
    print("|---|---:|---:|---:|---:|")
    rows = {"raw blocking server": [], "raw epoll server": [], "Volley echo server": []}
    for _ in range(SAMPLES):
        rows["raw blocking server"].append(raw_pingpong(bindir, "0", "0", SECONDS, 32, 32, port=32221))
        rows["raw epoll server"].append(raw_pingpong(bindir, "0", "0", SECONDS, 32, 32, port=32221, epoll_server=True))
        s = volley_server(bindir, "0", "tcp", 1)
        rows["Volley echo server"].append(raw_pingpong_client(bindir, "0", s.port, SECONDS, 32, 32))
        s.stop()
    p50 = {k: median([x["p50_us"] for x in v]) for k, v in rows.items()}
    for name, samples in rows.items():
        record.append({"case": "one CPU, raw client", "server": name, "samples": samples})
        print(f"| {name} | {p50[name]:.2f} us | {median([x['p99_us'] for x in samples]):.2f} us "
              f"| {p50[name] / p50['raw blocking server']:.2f} | {p50[name] / p50['raw epoll server']:.2f} |",
              flush=True)
    print()


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    record = []
    with tempfile.TemporaryDirectory() as certs:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/../scripts/make-test-certs.sh", certs], check=True, stdout=subprocess.DEVNULL)
        throughput_rows(bindir, certs, record)
    backend_rows(bindir, record)
    rtt_rows(bindir, record)
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/echo.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
