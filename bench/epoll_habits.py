#!/usr/bin/python3
"""What each kernel-visible habit of an event loop costs a blocking round trip
(issue 36): `raw_epoll_habits` (a raw epoll echo server) with one habit on at
a time, answering raw_pingpong's blocking checked client; the server's CPU a
round trip (user + system, from wait4) and the client's p50, the variants'
runs interleaved round by round.

Usage: bench/epoll_habits.py BINDIR [--rounds N] [--habits none,r,i,m,s,t] [--cpus SERVER,CLIENT]
Habits: see bench/raw/raw_epoll_habits.cpp ("none": none)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_common import listening, pinned


def one(bindir, habits, port, args):
    server = subprocess.Popen(pinned(args.server_cpu) + [f"{bindir}/raw_epoll_habits", str(port), "" if habits == "none" else habits])
    for _ in range(200):
        if server.poll() is not None or listening(port):
            break
        time.sleep(0.01)
    if server.poll() is not None:
        sys.exit(f"raw_epoll_habits exited with {server.returncode} (port {port} taken?)")
    client = subprocess.run(pinned(args.client_cpu) + [f"{bindir}/raw_pingpong", "checked-client", str(port),
                                                       str(args.seconds), "37", "37"], capture_output=True, text=True)
    if client.returncode != 0:
        server.kill()
        os.wait4(server.pid, 0)
        sys.exit(f"raw_pingpong failed: {client.stderr}")
    _, _, usage = os.wait4(server.pid, 0)
    report = json.loads(client.stdout)
    n = report["round_trips"]
    return (usage.ru_utime + usage.ru_stime) * 1e6 / n, report["p50_us"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bindir")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=2)
    p.add_argument("--habits", default="none,r,i,m,s,t")
    p.add_argument("--cpus", default="1,0")
    args = p.parse_args()
    args.server_cpu, args.client_cpu = args.cpus.split(",")
    habits = args.habits.split(",")
    samples = {h: [] for h in habits}
    port = 34600
    for r in range(args.rounds):
        for h in habits if r % 2 == 0 else habits[::-1]:
            port += 1
            samples[h].append(one(args.bindir, h, port, args))
            print(r, h, "cpu %.3f us p50 %.2f us" % samples[h][-1], flush=True)
    base = samples[habits[0]]
    print("\n| habits | server CPU a round trip | p50 | CPU over the first | p50 over the first |")
    print("|---|---:|---:|---:|---:|")
    for h in habits:
        cpu = statistics.median(x[0] for x in samples[h])
        p50 = statistics.median(x[1] for x in samples[h])
        print("| %s | %.2f us | %.2f us | %+.2f | %+.2f |" % (h, cpu, p50, cpu - statistics.median(x[0] for x in base),
                                                           p50 - statistics.median(x[1] for x in base)))


if __name__ == "__main__":
    main()
