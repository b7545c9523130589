#!/usr/bin/python3
"""The WebSocket echo benchmark: Volley's echo server and client over
WebSocket (ws) and WebSocket over TLS (wss) next to plain TCP and TLS in the
same run, samples interleaved. Pipelined echo, 32-byte messages, 1000 in
flight per client, 1 and 100 clients. Two baselines: the same echo client on
Volley's own connection (--on-connection: only the transport differs) and the
plain Asio-stream client of the TCP and TLS figures elsewhere. Markdown on
stdout, every sample in bench/results/websocket.json.

    websocket_bench.py [BINDIR] [--against OLD_BINDIR] [--certs DIR]

--against: the WebSocket rows of BINDIR beside those of another build (the
previous commit, say), their samples interleaved, instead of the baselines.
--certs: test certificates made already (scripts/make-test-certs.sh), for a
machine without the openssl program."""
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


def against(bindir, old, cases, certs):
    """The WebSocket rows of two builds, samples interleaved (old, new, old, ...)."""
    print(f"## WebSocket echo, this build ({bindir}) against {old}, 32-byte messages, 1000 in flight per client "
          f"({SECONDS:g} s per sample, median of {SAMPLES}, samples interleaved)\n")
    print("| case | placement | before msgs/s | after msgs/s | after / before |")
    print("|---|---|---:|---:|---:|")
    record = []
    for name, place, proto, _, threads, args in cases:
        before, after = [], []
        for _ in range(SAMPLES):
            before.append(sample(old, place, proto, threads, args, certs))
            after.append(sample(bindir, place, proto, threads, args, certs))
        b, a = (median([x["msgs_per_s"] for x in xs]) for xs in (before, after))
        record.append({"case": name, "placement": place[0], "before": before, "after": after})
        print(f"| {name} | {place[0]} | {b:,.0f} | {a:,.0f} | {a / b:.2f} |", flush=True)
    return record


def main():
    argv = sys.argv[1:]
    old = certs_dir = None
    if "--against" in argv:
        i = argv.index("--against")
        old = argv[i + 1]
        del argv[i:i + 2]
    if "--certs" in argv:
        i = argv.index("--certs")
        certs_dir = argv[i + 1]
        del argv[i:i + 2]
    bindir = argv[0] if argv else "build/bin"
    record = []
    cases = [
        ("ws, 1 client, 1 thread", CROSS, "ws", "tcp", 1, ["-c", "1", "-t", "1"]),
        ("ws, 100 clients, 2 threads", SHARED, "ws", "tcp", 2, ["-c", "100", "-t", "2"]),
        ("wss (TLS 1.3), 1 client, 1 thread", CROSS, "wss", "tls", 1, ["-c", "1", "-t", "1"]),
        ("wss (TLS 1.3), 100 clients, 2 threads", SHARED, "wss", "tls", 2, ["-c", "100", "-t", "2"]),
    ]
    with tempfile.TemporaryDirectory() as made:
        certs = certs_dir or made
        if not certs_dir:
            here = os.path.dirname(os.path.abspath(__file__))
            subprocess.run([f"{here}/../scripts/make-test-certs.sh", certs], check=True, stdout=subprocess.DEVNULL)
        if old:
            record = against(bindir, old, cases, certs)
            cases = []
        else:
            print(f"## WebSocket echo, 32-byte messages, 1000 in flight per client ({SECONDS:g} s per sample, "
                  f"median of {SAMPLES})\n")
            print("| case | placement | WebSocket msgs/s | under it | same client msgs/s | ratio | "
                  "Asio-stream client msgs/s | ratio |")
            print("|---|---|---:|---|---:|---:|---:|---:|")
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
    with open("bench/results/websocket_against.json" if old else "bench/results/websocket.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
