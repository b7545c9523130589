#!/usr/bin/python3
"""Soak: a session server holding many heartbeating sessions for a long time.

Runs `volley pingpong-server` with heartbeats and `volley session-load`
against it (N sessions, heartbeats both ways, an optional trickle of echoed
messages), samples both processes' resident memory every --sample seconds,
and writes the curve as CSV and PNG with a JSON summary. The load tool
reports whether every session was heard on time (no silence longer than the
heartbeat interval and a quarter) and whether any ended early.

  bench/soak.py --connections 10000 --seconds 3600 --sample 60   # the hour-long soak
  bench/soak.py --connections 1000 --seconds 60 --check --no-timing   # the CI version

--check exits non-zero unless: no session failed or ended early, no echo
differed, no silence was late (unless --no-timing), and the server's resident memory after the
warm-up (the first sample at or after --warmup seconds) grew by at most
--margin-kib plus --margin-percent by the end.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time


def resident_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_for_port(path, proc, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return int(open(path).read().strip())
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    sys.exit("soak: the server did not start")


def plot(samples, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("soak: matplotlib not available, no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    t = [s["t"] for s in samples]
    ax.plot(t, [s["server_kib"] / 1024 for s in samples], label="server (pingpong-server)")
    ax.plot(t, [s["client_kib"] / 1024 for s in samples], label="client (session-load)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bindir", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--sample", type=float, default=5, help="seconds between memory samples")
    p.add_argument("--heartbeat-ms", type=int, default=1000)
    p.add_argument("--rate", type=float, default=1000, help="echoed messages per second over all sessions")
    p.add_argument("--server-threads", type=int, default=1)
    p.add_argument("--client-threads", type=int, default=1)
    p.add_argument("--warmup", type=float, default=10)
    p.add_argument("--margin-kib", type=int, default=4096)
    p.add_argument("--margin-percent", type=float, default=5)
    p.add_argument("--check", action="store_true")
    p.add_argument("--no-timing", action="store_true",
                   help="with --check, do not fail on late heartbeats (for shared machines: a test asserts no timing)")
    p.add_argument("--out", default=None, help="folder for soak.csv, soak.png, soak.json (default: a temporary one)")
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="volley-soak-")
    os.makedirs(out, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        server = subprocess.Popen(
            [f"{args.bindir}/volley", "--log-level", "warn", "pingpong-server", "-p", "0", "--port-file", port_file,
             "-t", str(args.server_threads), "--heartbeat", f"{args.heartbeat_ms}ms", "--json", "--no-progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        port = wait_for_port(port_file, server)
        client = subprocess.Popen(
            [f"{args.bindir}/volley", "session-load", "-p", str(port), "-c", str(args.connections), "-z",
             str(args.seconds), "-t", str(args.client_threads), "--heartbeat", f"{args.heartbeat_ms}ms", "-r",
             str(args.rate), "--json", "--no-progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        start = time.time()
        samples = []
        while client.poll() is None:
            samples.append({"t": round(time.time() - start, 1), "server_kib": resident_kib(server.pid),
                            "client_kib": resident_kib(client.pid)})
            deadline = time.time() + args.sample
            while client.poll() is None and time.time() < deadline:
                time.sleep(0.1)
        load_out, load_err = client.communicate()
        server.send_signal(2)
        server_out, server_err = server.communicate(timeout=60)

    if client.returncode not in (0, 3):
        sys.exit(f"soak: session-load failed ({client.returncode}): {load_err}")
    load = json.loads(load_out)
    server_report = json.loads(server_out[server_out.index("{"):])
    with open(os.path.join(out, "soak.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["t", "server_kib", "client_kib"])
        w.writeheader()
        w.writerows(samples)
    plot(samples, os.path.join(out, "soak.png"),
         f"{args.connections} heartbeating sessions ({args.heartbeat_ms} ms), {args.rate:g} msgs/s, "
         f"{args.seconds:g} s")

    warm = next((s for s in samples if s["t"] >= args.warmup), samples[-1] if samples else None)
    last = samples[-1] if samples else None
    growth = (last["server_kib"] - warm["server_kib"]) if warm and last else 0
    allowed = args.margin_kib + (warm["server_kib"] if warm else 0) * args.margin_percent / 100
    summary = {
        "connections": args.connections, "seconds": args.seconds, "heartbeat_ms": args.heartbeat_ms,
        "rate": args.rate, "samples": len(samples),
        "server_kib_after_warmup": warm["server_kib"] if warm else 0, "server_kib_at_end": last["server_kib"] if last else 0,
        "server_growth_kib": growth, "allowed_growth_kib": allowed,
        "sessions_opened": load["sessions_opened"], "sessions_ended_early": load["sessions_ended_early"],
        "connect_failures": load["connect_failures"], "connect_seconds": load["connect_seconds"],
        "late_silences": load["late_silences"],
        "silence_ms": load["silence_ms"], "bad_echoes": load["bad_echoes"], "echoes": load["echoes"],
        "server_heartbeat_timeouts": server_report["closes"].get("heartbeat timeout", 0),
    }
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"soak: {load['sessions_opened']} sessions for {args.seconds:g} s, heartbeats every {args.heartbeat_ms} ms; "
          f"silence max {load['silence_ms']['max']:.1f} ms, late {load['late_silences']}; "
          f"ended early {load['sessions_ended_early']}, connect failures {load['connect_failures']}, "
          f"bad echoes {load['bad_echoes']}; server RSS {summary['server_kib_after_warmup']} -> "
          f"{summary['server_kib_at_end']} KiB (growth {growth} KiB, allowed {allowed:.0f}); files in {out}")
    if not args.check:
        return 0
    problems = []
    if load["connect_failures"] or load.get("handshake_failures", 0):
        problems.append("sessions failed to open")
    if load["sessions_opened"] != args.connections:
        problems.append("not every session opened")
    if load["sessions_ended_early"]:
        problems.append("sessions ended early")
    if load["bad_echoes"]:
        problems.append("echoes differed")
    if load["late_silences"] and not args.no_timing:
        problems.append("heartbeats arrived late")
    if summary["server_heartbeat_timeouts"]:
        problems.append("the server timed sessions out")
    if growth > allowed:
        problems.append(f"the server's memory grew {growth} KiB (allowed {allowed:.0f})")
    if problems:
        print("soak: FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
