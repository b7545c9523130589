#!/usr/bin/python3
"""A round trip's client side: its p50 and the client's CPU a round trip
(user and system, from wait4), against the same Volley pingpong-server on
CPU 1, for raw_pingpong's blocking client, its epoll client (a sleep in
epoll_wait before each read) and the Volley ping-pong client of each BINDIR,
on CPU 0, checked frames of 37 bytes, interleaved rounds; medians and
samples (docs/BENCHMARKS.md, "One thread for a one-loop client").
Usage: bench/client_cost.py BINDIR[,BINDIR...] [ROUNDS]
(the first BINDIR's server and raw client serve every row)."""
import json
import os
import resource
import statistics
import subprocess
import sys
if len(sys.argv) < 2:
    sys.exit(__doc__)
BINS = sys.argv[1].split(",")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
RAW = BINS[0]
ENV = dict(os.environ, SPDLOG_LEVEL="warn")
def start_server():
    p = subprocess.Popen(["taskset", "-c", "1", f"{BINS[0]}/volley", "pingpong-server", "-p", "0", "--no-progress",
                          "--heartbeat", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    for line in p.stdout:
        if "listening" in line:
            port = line.strip().rsplit(":", 1)[1].split()[0]
            return p, port
    sys.exit("no listening line")
def timed(argv):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", "0"] + argv, capture_output=True, text=True, env=ENV, timeout=120)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return json.loads(out.stdout), (r1.ru_utime - r0.ru_utime), (r1.ru_stime - r0.ru_stime)
res = {}
def add(k, v): res.setdefault(k, []).append(v)
for rnd in range(ROUNDS):
    for kind in ["rawblock", "rawepoll"] + [f"volley{i}" for i in range(len(BINS))]:
        s, port = start_server()
        if kind.startswith("raw"):
            mode = "checked-client" if kind == "rawblock" else "epoll-checked-client"
            j, u, st = timed([f"{RAW}/raw_pingpong", mode, port, "2", "37", "37"])
            n = j["round_trips"]; p50 = j["p50_us"]
        else:
            b = BINS[int(kind[6:])]
            n = 100000
            j, u, st = timed([f"{b}/volley", "pingpong", "-p", port, "--sizes", "32", "-n", str(n), "--warmup", "1000",
                              "--heartbeat", "0", "--json", "--no-progress"])
            n += 1000
            p50 = j["results"][0]["p50_us"]
        s.terminate(); s.wait()
        add(kind + "_p50", p50); add(kind + "_usr", u / n * 1e6); add(kind + "_sys", st / n * 1e6)
for k, v in res.items():
    print(f"{k:18s} median {statistics.median(v):7.3f}  " + " ".join(f"{x:.3f}" for x in v))
