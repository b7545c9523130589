#!/usr/bin/python3
"""What `volley netem` costs with no impairment, against plain sockets in the same run:
1. round trips: datagrams per second it relays and the round trip it adds, against
   the same UDP echo reached directly. Echo on CPU 1, client and relay on CPU 0.
2. one way, saturated: a sender that sends as fast as its socket takes
   (sendmmsg) through the relay to a sink, against the same sender straight to
   the sink. Sender on CPU 0, relay and sink on CPU 1.
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


def relay_process(bindir, pin, forward_port, tmp, name):
    ready = os.path.join(tmp, name)
    relay = subprocess.Popen(pin + [f"{bindir}/volley", "netem", "--port", "0", "--forward",
                                    f"127.0.0.1:{forward_port}", "--port-file", ready, "--json", "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for _ in range(200):
        if os.path.exists(ready) and open(ready).read().strip():
            break
        time.sleep(0.05)
    return relay, int(open(ready).read().strip())


def stop_relay(relay):
    relay.send_signal(signal.SIGTERM)
    out = relay.communicate(timeout=30)[0]
    return json.loads(out[out.index("{"):])  # after the "listening" line


def one_way(bindir, seconds, pin_sender, pin_relay, port, target_port=None):
    """Blast to `target_port` (the sink itself when None) and return (sink report, blast report)."""
    sink = subprocess.Popen(pin_relay + [f"{bindir}/udp_load", "sink", str(port), str(seconds + 2)],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    blast = run(pin_sender + [f"{bindir}/udp_load", "blast", str(target_port or port), str(seconds), "64"])
    return json.loads(sink.communicate(timeout=seconds + 30)[0].strip().splitlines()[-1]), blast


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
        relay, relay_port = relay_process(bindir, pin_client, echo_port, tmp, "ready")
        rows = {}
        for name, port in (("direct", echo_port), ("through volley netem", relay_port)):
            flood = run(pin_client + [f"{bindir}/udp_load", "flood", str(port), str(seconds), "32", "64"])
            ping = run(pin_client + [f"{bindir}/udp_load", "ping", str(port), "5000", "64"])
            rows[name] = (flood, ping)
        report = stop_relay(relay)
        echo.kill()

        sink_port = echo_port + 1
        direct_sink, direct_blast = one_way(bindir, seconds, pin_client, pin_echo, sink_port)
        relay, relay_port = relay_process(bindir, pin_echo, sink_port, tmp, "ready-one-way")
        relayed_sink, relayed_blast = one_way(bindir, seconds, pin_client, pin_echo, sink_port, relay_port)
        one_way_report = stop_relay(relay)
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

    print("\n# one way, saturated (64-byte datagrams; sender on CPU 0, relay and sink on CPU 1)\n")
    print("| path | sent/s | received by the sink/s |")
    print("|---|---:|---:|")
    print(f"| direct | {direct_blast['sent_per_s']:.0f} | {direct_sink['received_per_s']:.0f} |")
    print(f"| through volley netem | {relayed_blast['sent_per_s']:.0f} | {relayed_sink['received_per_s']:.0f} |")
    b = one_way_report.get("batches", {})
    per_call = b.get("datagrams_received", 0) / max(1, b.get("receive_calls", 0))
    print(f"\nrelay: {relayed_sink['received_per_s']:.0f} datagrams/s relayed one way; "
          f"{one_way_report['kernel_drops']} dropped by the kernel at its socket (receive buffer full); "
          f"{per_call:.1f} datagrams per receive call; send failures {one_way_report['send_failures']}")


if __name__ == "__main__":
    main()
