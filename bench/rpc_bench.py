#!/usr/bin/python3
"""RPC round trips against the raw blocking ping-pong (bench/raw/raw_pingpong),
one call in flight, measured in the same run with samples interleaved, for two
placements: client and server on different CPUs, and on the same CPU."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from bench_common import pinned, raw_pingpong


def volley_rpc(bindir, server_cpu, client_cpu, seconds):
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        server = subprocess.Popen(pinned(server_cpu) + [f"{bindir}/volley", "rpc-server", "--port", "0", "--threads", "1",
                                                        "--port-file", port_file],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.02)
        port = open(port_file).read().strip()
        out = subprocess.run(pinned(client_cpu) + [f"{bindir}/volley", "rpc-bench", "--port", port, "--mode", "ping",
                                                   "--duration", str(seconds), "--json"],
                             capture_output=True, text=True, timeout=seconds + 60)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    if out.returncode != 0:
        sys.exit(f"rpc bench: {out.stderr}")
    r = json.loads(out.stdout)["results"][0]["rtt_ns"]
    return {"p50_us": r["p50"] / 1e3, "p99_us": r["p99"] / 1e3}


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    seconds = float(os.environ.get("BENCH_SECONDS", "3"))
    print("# RPC ping-pong round trip against the raw blocking ping-pong (one call in flight; median of 3 samples)\n")
    print("| placement | volley rpc p50 | raw p50 | ratio | volley rpc p99 | raw p99 | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, server_cpu, client_cpu in (("server CPU 1, client CPU 0", "1", "0"), ("both on CPU 0", "0", "0")):
        v, r = [], []
        for _ in range(3):
            v.append(volley_rpc(bindir, server_cpu, client_cpu, seconds))
            r.append(raw_pingpong(bindir, server_cpu, client_cpu, seconds, port=32211))
        med = lambda xs, k: sorted(x[k] for x in xs)[1]
        print(f"| {name} | {med(v, 'p50_us'):.1f} us | {med(r, 'p50_us'):.1f} us | {med(v, 'p50_us') / med(r, 'p50_us'):.2f} | "
              f"{med(v, 'p99_us'):.1f} us | {med(r, 'p99_us'):.1f} us | {med(v, 'p99_us') / med(r, 'p99_us'):.2f} |")


if __name__ == "__main__":
    main()
