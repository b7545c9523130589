#!/usr/bin/python3
"""User-space instructions a ping-pong server executes per message, counted
by valgrind's callgrind: exact and the same on a busy machine as on a quiet
one, where CPU time and round trips are not. The kernel's share (the system
calls) is not counted: compare system-call counts with strace -c.

Each server (each build's pingpong-server, raw_pingpong's epoll and blocking
servers) runs under callgrind twice, against raw_pingpong's blocking client
(32-byte checked frames, one in flight) for a short and a long run; the
difference in instructions over the difference in round trips is the cost of
one message, start-up and shut-down cancelled out.

Usage: bench/server_instructions.py BINDIR [BINDIR ...] [--short S] [--long S]
The raw programs come from the first BINDIR. Prints a markdown table."""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

from bench_common import listening


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=60.0):
    deadline = time.time() + timeout  # valgrind starts slowly, the more on a busy machine
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited before listening on {port}")
        if listening(port):
            return
        time.sleep(0.1)
    sys.exit(f"nothing listens on {port} after {timeout:g} s")


def count(server_argv, port, raw_bindir, seconds):
    """(round trips, instructions) of one callgrind run of the server."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
                                 f"--log-file={log}"] + server_argv,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(port, proc)
            out = subprocess.run([f"{raw_bindir}/raw_pingpong", "checked-client", str(port), str(seconds), "37", "37"],
                                 capture_output=True, text=True, timeout=seconds + 120)
            if out.returncode != 0:
                sys.exit(f"client failed: {out.stderr}")
            round_trips = json.loads(out.stdout)["round_trips"]
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        m = re.search(r"Collected : (\d+)", open(log).read())
        if not m:
            sys.exit("callgrind reported no count")
        return round_trips, int(m.group(1))


def per_message(server_argv_for, raw_bindir, short, long_):
    port = free_port()
    n1, i1 = count(server_argv_for(port), port, raw_bindir, short)
    port = free_port()
    n2, i2 = count(server_argv_for(port), port, raw_bindir, long_)
    if n2 <= n1:
        sys.exit("the long run made no more round trips than the short one")
    return (i2 - i1) / (n2 - n1), n2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bindirs", nargs="+")
    ap.add_argument("--short", type=float, default=2)
    ap.add_argument("--long", type=float, default=6)
    args = ap.parse_args()
    raw = os.path.abspath(args.bindirs[0])
    rows = [("raw blocking server (recv, send)",
             lambda p: [f"{raw}/raw_pingpong", "checked-server", str(p), "37", "37"]),
            ("raw epoll server (epoll_wait, recv, send)",
             lambda p: [f"{raw}/raw_pingpong", "epoll-server", str(p), "37", "37"])]
    for b in args.bindirs:
        b = os.path.abspath(b)
        rows.append((f"volley pingpong-server ({b})",
                     lambda p, b=b: [f"{b}/volley", "pingpong-server", "-p", str(p), "--no-progress",
                                     "--heartbeat", "0"]))
    print("| server | instructions per message | round trips (long run) |")
    print("|---|---:|---:|")
    for name, argv in rows:
        ir, n = per_message(argv, raw, args.short, args.long)
        print(f"| {name} | {ir:.0f} | {n} |", flush=True)


if __name__ == "__main__":
    main()
