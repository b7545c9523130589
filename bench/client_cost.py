#!/usr/bin/python3
"""A round trip's client side: its p50 and the client's CPU a round trip
(user and system), against the same Volley pingpong-server on CPU 1, for
raw_pingpong's blocking client, its epoll client (a sleep in epoll_wait
before each read) and the Volley ping-pong client of each BINDIR, on CPU 0;
checked frames, a 32-byte payload; interleaved rounds, medians and samples
(docs/BENCHMARKS.md, "One thread for a one-loop client").

Usage: bench/client_cost.py BINDIR[,BINDIR...] [ROUNDS]
(the first BINDIR's server and raw client serve every row)."""
import json
import resource
import statistics
import subprocess
import sys

from bench_common import ServerProcess, pinned, raw_pingpong_client

SERVER_CPU, CLIENT_CPU = "1", "0"
VOLLEY_ROUND_TRIPS, VOLLEY_WARMUP = 100_000, 1_000


def client_cpu(run):
    """run()'s result and the CPU (user, system seconds) of the child it ran and reaped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def volley_client(bindir, port):
    out = subprocess.run(pinned(CLIENT_CPU) + [
        f"{bindir}/volley", "pingpong", "-p", port, "--sizes", "32", "-n", str(VOLLEY_ROUND_TRIPS), "--warmup",
        str(VOLLEY_WARMUP), "--heartbeat", "0", "--json", "--no-progress"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"volley pingpong failed: {out.stderr}")
    return json.loads(out.stdout)


def one_sample(bins, kind):
    """(p50 us, user us, system us) a round trip of one client run."""
    server = ServerProcess([f"{bins[0]}/volley", "pingpong-server", "-p", "0", "--no-progress", "--heartbeat", "0"],
                           SERVER_CPU, port_from_stdout=True)
    try:
        if kind in ("rawblock", "rawepoll"):
            prefix = "checked-" if kind == "rawblock" else "epoll-checked-"
            out, user, system = client_cpu(
                lambda: raw_pingpong_client(bins[0], CLIENT_CPU, int(server.port), 2, 37, 37, prefix))
            trips, p50 = out["round_trips"], out["p50_us"]
        else:
            out, user, system = client_cpu(lambda: volley_client(bins[int(kind[len("volley"):])], server.port))
            trips, p50 = VOLLEY_ROUND_TRIPS + VOLLEY_WARMUP, out["results"][0]["p50_us"]
    finally:
        server.stop()
    return p50, user / trips * 1e6, system / trips * 1e6


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bins = sys.argv[1].split(",")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    kinds = ["rawblock", "rawepoll"] + [f"volley{i}" for i in range(len(bins))]
    samples = {}
    for _ in range(rounds):
        for kind in kinds:
            for what, value in zip(("p50", "usr", "sys"), one_sample(bins, kind)):
                samples.setdefault(f"{kind}_{what}", []).append(value)
    for key, values in samples.items():
        print(f"{key:18s} median {statistics.median(values):7.3f}  " + " ".join(f"{x:.3f}" for x in values))


if __name__ == "__main__":
    main()
