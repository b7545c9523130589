#!/usr/bin/python3
"""What `volley netem` costs with no impairment: datagrams per second it relays
and the round trip it adds, against the same UDP echo reached directly, in the
same run. Placement: echo on CPU 1, client and relay on CPU 0 (2 cores).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def run(cmd, timeout=120):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"netem bench: {' '.join(cmd)} failed: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    seconds = float(os.environ.get("BENCH_SECONDS", "3"))
    echo_port = 32201
    pin_echo, pin_client = (["taskset", "-c", "1"], ["taskset", "-c", "0"]) if (os.cpu_count() or 1) >= 2 else ([], [])
    total = 4 * seconds + 30
    echo = subprocess.Popen(pin_echo + [f"{bindir}/udp_load", "echo", str(echo_port), str(total)],
                            stdout=subprocess.DEVNULL)
    time.sleep(0.2)
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        relay = subprocess.Popen(pin_client + [f"{bindir}/volley", "netem", "--listen", "127.0.0.1:0", "--forward",
                                               f"127.0.0.1:{echo_port}", "--ready-file", ready, "--json",
                                               "--no-progress"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(200):
            if os.path.exists(ready) and open(ready).read().strip():
                break
            time.sleep(0.05)
        relay_port = int(open(ready).read().strip())
        rows = {}
        for name, port in (("direct", echo_port), ("through volley netem", relay_port)):
            flood = run(pin_client + [f"{bindir}/udp_load", "flood", str(port), str(seconds), "32", "64"])
            ping = run(pin_client + [f"{bindir}/udp_load", "ping", str(port), "5000", "64"])
            rows[name] = (flood, ping)
        relay.send_signal(signal.SIGTERM)
        out = relay.communicate(timeout=30)[0]
        report = json.loads(out[out.index("{"):])  # after the "listening" line
    echo.kill()
    print("# netem relay overhead (no impairment, 64-byte datagrams; echo on CPU 1, client and relay on CPU 0)\n")
    print("| path | round trips/s (32 in flight) | ping p50 | p90 | p99 |")
    print("|---|---:|---:|---:|---:|")
    for name, (flood, ping) in rows.items():
        print(f"| {name} | {flood['round_trips_per_s']:.0f} | {ping['p50_us']:.1f} us | {ping['p90_us']:.1f} us | "
              f"{ping['p99_us']:.1f} us |")
    d, r = rows["direct"], rows["through volley netem"]
    # Each round trip crosses the relay twice (up and down).
    print(f"\nrelay: {2 * r[0]['round_trips_per_s']:.0f} datagrams/s relayed; round trips/s through it = "
          f"{r[0]['round_trips_per_s'] / d[0]['round_trips_per_s']:.2f} x direct; "
          f"adds {r[1]['p50_us'] - d[1]['p50_us']:.1f} us to the median round trip")
    print(f"relay counters: up in {report['up']['packets_in']} out {report['up']['packets_out']}, "
          f"down in {report['down']['packets_in']} out {report['down']['packets_out']}, "
          f"send failures {report['send_failures']}")


if __name__ == "__main__":
    main()
