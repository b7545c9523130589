#!/usr/bin/python3
"""The WebSocket echo benchmark: Volley's echo server and client over
WebSocket (ws) and WebSocket over TLS (wss) next to plain TCP and TLS in the
same run, samples interleaved. Pipelined echo, 32-byte messages, 1000 in
flight per client, 1 and 100 clients. Two baselines: the same echo client on
Volley's own connection (--on-connection: only the transport differs) and the
plain Asio-stream client of the TCP and TLS figures elsewhere. Markdown on
stdout, every sample in bench/results/websocket.json."""
import json
import os
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, median, pinned

SAMPLES = 3
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
CROSS = ("server CPU 1, client CPU 0", "1", "0")
SHARED = ("unpinned (2 CPUs shared)", None, None)


def server(bindir, cpu, proto, threads, certs):
    argv = [f"{bindir}/volley", "echo-server", "--proto", proto, "-p", "0", "-t", str(threads), "--no-progress"]
    if proto in ("tls", "wss"):
        argv += ["--cert", f"{certs}/server.pem", "--key", f"{certs}/server.key"]
    return ServerProcess(argv, cpu, port_from_stdout=True)


def client(bindir, cpu, port, proto, args, certs):
    argv = [f"{bindir}/volley", "echo-client", "--proto", proto, "-p", str(port), "-z", str(SECONDS), "--json",
            "--no-progress", *args]
    if proto in ("tls", "wss"):
        argv += ["--ca", f"{certs}/ca.pem"]
    out = subprocess.run(pinned(cpu) + argv, capture_output=True, text=True, timeout=SECONDS + 120)
    if out.returncode != 0:
        sys.exit(f"echo-client {proto} {args} failed: {out.stderr}")
    return json.loads(out.stdout)


def sample(bindir, place, proto, threads, args, certs):
    _, scpu, ccpu = place
    s = server(bindir, scpu, proto, threads, certs)
    try:
        return client(bindir, ccpu, s.port, proto, args, certs)
    finally:
        s.stop()


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    record = []
    cases = [
        ("ws, 1 client, 1 thread", CROSS, "ws", "tcp", 1, ["-c", "1", "-t", "1"]),
        ("ws, 100 clients, 2 threads", SHARED, "ws", "tcp", 2, ["-c", "100", "-t", "2"]),
        ("wss (TLS 1.3), 1 client, 1 thread", CROSS, "wss", "tls", 1, ["-c", "1", "-t", "1"]),
        ("wss (TLS 1.3), 100 clients, 2 threads", SHARED, "wss", "tls", 2, ["-c", "100", "-t", "2"]),
    ]
    print(f"## WebSocket echo, 32-byte messages, 1000 in flight per client ({SECONDS:g} s per sample, "
          f"median of {SAMPLES})\n")
    print("| case | placement | WebSocket msgs/s | under it | same client msgs/s | ratio | "
          "Asio-stream client msgs/s | ratio |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as certs:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/../scripts/make-test-certs.sh", certs], check=True, stdout=subprocess.DEVNULL)
        for name, place, proto, base, threads, args in cases:
            ws, same, plain = [], [], []
            for _ in range(SAMPLES):
                ws.append(sample(bindir, place, proto, threads, args, certs))
                same.append(sample(bindir, place, base, threads, args + ["--on-connection"], certs))
                plain.append(sample(bindir, place, base, threads, args, certs))
            for x in ws + same + plain:
                if x["errors"]:
                    print(f"<!-- {name}: {x['errors']} errors in a sample -->")
            w, s, p = (median([x["msgs_per_s"] for x in xs]) for xs in (ws, same, plain))
            record.append({"case": name, "placement": place[0], "websocket": ws, "same_client": same, "asio_client": plain})
            print(f"| {name} | {place[0]} | {w:,.0f} | {base} | {s:,.0f} | {w / s:.2f} | {p:,.0f} | {w / p:.2f} |",
                  flush=True)
    print()
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/websocket.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
