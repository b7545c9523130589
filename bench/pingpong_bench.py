#!/usr/bin/python3
"""The checked-frame ping-pong groups: `volley pingpong` against
`volley pingpong-server`, next to the raw blocking ping-pong
(bench/raw/raw_pingpong) with the same frame sizes (payload + 5 bytes each
way), in the same run, samples interleaved, for two placements. Two raw
columns: plain (bytes only) and checked (each sender computes the XOR, each
receiver verifies it: the same protocol work Volley does, the fair
comparison; the ratios are against it). Prints Markdown tables; JSON of
every sample goes to bench/results/pingpong.json."""
import json
import os
import subprocess
import sys

from bench_common import ServerProcess, median, pinned, raw_pingpong

SIZES = [1, 10, 100, 1000, 10000, 100000, 1000000]
SAMPLES = 3


def pingpong_server(bindir, cpu, extra=()):
    return ServerProcess([f"{bindir}/volley", "pingpong-server", "-p", "0", *extra], cpu, port_from_stdout=True)


def volley(bindir, port, cpu, args):
    out = subprocess.run(pinned(cpu) + [f"{bindir}/volley", "pingpong", "-p", port, "--json", *args],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"volley pingpong {args}: {out.stderr}")
    return json.loads(out.stdout)


def group1_count(size):
    return max(64, min(20000, (256 << 20) // max(size, 1) // 4))


def congestion_control():
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def group1(bindir, record, sizes=SIZES):
    print("## Group 1: one message at a time, true round trip per message (median of "
          f"{SAMPLES} interleaved samples; TCP congestion control: {congestion_control()})\n")
    placements = (("server CPU 1, client CPU 0", "1", "0", False),
                  ("server CPU 1, client CPU 0, both --busy-poll", "1", "0", True),
                  ("both on CPU 0", "0", "0", False))
    raw_counts = {}  # round trips of the last checked raw sample per size: the busy-poll rows' sample length
    for name, server_cpu, client_cpu, busy in placements:
        print(f"### {name}\n")
        print("| payload | volley min | volley avg | volley p50 | volley p99 | volley max | raw p50 | raw checked p50 "
              "| raw checked p99 | p50 ratio | p99 ratio |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        server = pingpong_server(bindir, server_cpu, ["--busy-poll"] if busy else [])
        try:
            for size in sizes:
                vs, rs, cs = [], [], []
                # Large payloads vary more between runs (how the stream splits into reads): more samples.
                for _ in range(SAMPLES if size < 100000 else 2 * SAMPLES + 1):
                    count = raw_counts.get(size, group1_count(size))
                    if not busy:
                        rs.append(raw_pingpong(bindir, server_cpu, client_cpu, 1.0, size + 5, size + 5))
                        cs.append(raw_pingpong(bindir, server_cpu, client_cpu, 1.0, size + 5, size + 5, checked=True))
                        # As many round trips as the checked raw run just made: samples of equal length. With
                        # BBR (this VM's default) a connection's 1 MB round trips go through slow phases
                        # of pacing; a 64-round-trip sample lands in one a third of the time, a one-second
                        # sample averages over them, raw or Volley alike (BENCHMARKS.md).
                        count = raw_counts[size] = max(group1_count(size), cs[-1]["round_trips"])
                    args = ["-g", "1", "--sizes", str(size), "-n", str(count), "--warmup", "50",
                            "--max-bytes", str(max(1, size) * (count + 50))]
                    vs.append(volley(bindir, server.port, client_cpu, args + (["--busy-poll"] if busy else []))["results"][0])
                record.append({"group": 1, "placement": name, "payload": size, "congestion_control": congestion_control(),
                               "volley": vs, "raw": rs, "raw_checked": cs})
                v = {k: median([x[k] for x in vs]) for k in ("min_us", "avg_us", "p50_us", "p99_us", "max_us")}
                if rs:
                    r50 = median([x["p50_us"] for x in rs])
                    c50, c99 = median([x["p50_us"] for x in cs]), median([x["p99_us"] for x in cs])
                    raw_cols = f"{r50:.1f} | {c50:.1f} | {c99:.1f} | {v['p50_us'] / c50:.2f} | {v['p99_us'] / c99:.2f}"
                else:
                    raw_cols = "- | - | - | - | -"
                print(f"| {size} | {v['min_us']:.1f} | {v['avg_us']:.1f} | {v['p50_us']:.1f} | {v['p99_us']:.1f} "
                      f"| {v['max_us']:.1f} | {raw_cols} |", flush=True)
        finally:
            server.stop()
        print()
    print("Times in microseconds. raw = bench/raw/raw_pingpong with frames of payload + 5 bytes each way "
          "(checked: XOR computed by each sender, verified by each receiver; the ratios are against it); "
          "the busy-poll rows have no raw column (compare with the rows above).\n")


def group2_and_3(bindir, record):
    server = pingpong_server(bindir, "1")
    try:
        print("## Group 2: one client bursting 1000 messages per payload size (server CPU 1, client CPU 0)\n")
        r = volley(bindir, server.port, "0", ["-g", "2", "-n", "1000", "--warmup", "100"])
        record.append({"group": 2, "result": r})
        print("| payload | messages | min | avg | p50 | p99 | max | burst total |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in r["results"]:
            print(f"| {row['payload_bytes']} | {row['messages']} | {row['min_us'] / 1e3:.3f} | {row['avg_us'] / 1e3:.3f} "
                  f"| {row['p50_us'] / 1e3:.3f} | {row['p99_us'] / 1e3:.3f} | {row['max_us'] / 1e3:.3f} "
                  f"| {row['total_ms']:.3f} |")
        print("\nTimes in milliseconds; a message's round trip runs from its send to its echo, so in a burst "
              "it includes the wait behind the messages before it.\n")
        print("## Group 3: several clients bursting \"hi\" (server CPU 1, clients CPU 0)\n")
        print("| clients | queries per client | time (ms) | QPS | p50 (ms) | p99 (ms) |")
        print("|---:|---:|---:|---:|---:|---:|")
        # The last row bursts past both high-water marks: input pauses and resumes all along.
        for clients, messages in ((5, 10000), (5, 100000), (10, 100000), (2, 5000000)):
            r = volley(bindir, server.port, "0", ["-g", "3", "-c", str(clients), "-m", str(messages)])
            record.append({"group": 3, "result": r})
            print(f"| {clients} | {messages} | {r['total_ms']:.1f} | {r['qps']:.0f} | {r['p50_us'] / 1e3:.2f} "
                  f"| {r['p99_us'] / 1e3:.2f} |", flush=True)
    finally:
        server.stop()
    print()


def main():
    # pingpong_bench.py [BINDIR] [--group1 [SIZE ...]]: --group1 runs group 1 only, for the sizes given.
    args = sys.argv[1:]
    bindir = args.pop(0) if args and not args[0].startswith("--") else "build/bin"
    record = []
    if args and args[0] == "--group1":
        group1(bindir, record, [int(a) for a in args[1:]] or SIZES)
    else:
        group1(bindir, record)
        group2_and_3(bindir, record)
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/pingpong.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
