#!/usr/bin/python3
"""What TLS costs the echo server beyond its cipher (issue 38): the server's
CPU time per echoed message over TCP and over TLS 1.3, beside what AES-256-GCM
alone costs for that message's bytes, measured on the same CPU in the same run.

- Pipelined echo, 32-byte messages, 1000 in flight per client, 1 and 100
  clients; `volley echo-server -t 1` pinned to SERVER_CPU, Volley's echo client
  (on Volley's connection, TCP and TLS alike) pinned to CLIENT_CPU.
- Server CPU: user + system from wait4 after SIGTERM, over the messages echoed.
- Cipher: `openssl speed -evp aes-256-gcm` (16 KiB blocks) on SERVER_CPU; a
  message is encrypted once and decrypted once by the server, so its cipher
  cost is 2 x size / rate.
- The target: TLS <= TCP + 1.5 x cipher.
With OLD_BINDIR, that build's TLS server is measured too, interleaved.

Usage: bench/tls_cost.py BINDIR [OLD_BINDIR] [--rounds N] [--seconds S] [--cpus SERVER,CLIENT]
Prints every sample, then the medians as a Markdown table; JSON with --json FILE."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_common import ServerProcess, ns_per_message, pinned

SIZE = 32


def cipher_rate(cpu):
    """AES-256-GCM bytes per second on `cpu`, from openssl speed's 16 KiB column."""
    out = subprocess.run(pinned(cpu) + ["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", "16384", "-seconds", "2"],
                         capture_output=True, text=True, timeout=60).stdout
    line = next(l for l in out.splitlines() if l.lower().startswith("aes-256-gcm"))
    kbytes_per_s = float(re.findall(r"([\d.]+)k", line)[-1])
    return kbytes_per_s * 1000.0


def echo(bindir, proto, clients, certs, args):
    argv = [f"{bindir}/volley", "echo-server", "--proto", proto, "-p", "0", "-t", "1", "--no-progress"]
    if proto == "tls":
        argv += ["--cert", f"{certs}/server.pem", "--key", f"{certs}/server.key"]
    server = ServerProcess(argv, args.server_cpu, port_from_stdout=True)
    client = [f"{args.bindir}/volley", "echo-client", "--proto", proto, "-p", server.port, "-c", str(clients),
              "-t", "1", "-s", str(SIZE), "-z", f"{args.seconds}s", "--on-connection", "--json", "--no-progress"]
    if proto == "tls":
        client += ["--ca", f"{certs}/ca.pem", "--tls-version", "1.3"]
    out = subprocess.run(pinned(args.client_cpu) + client, capture_output=True, text=True, timeout=args.seconds + 60)
    cpu = server.stop()
    if out.returncode != 0:
        sys.exit(f"echo-client failed: {out.stderr}")
    report = json.loads(out.stdout)
    return ns_per_message(cpu, report), report["msgs_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bindir")
    p.add_argument("old_bindir", nargs="?")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--cpus", default="1,0")
    p.add_argument("--json", dest="json_file")
    args = p.parse_args()
    args.bindir = os.path.abspath(args.bindir)
    args.server_cpu, args.client_cpu = args.cpus.split(",")
    builds = [("tcp", args.bindir, "tcp"), ("tls", args.bindir, "tls")]
    if args.old_bindir:
        builds.append(("tls_old", os.path.abspath(args.old_bindir), "tls"))

    samples = {}

    def add(key, value):
        samples.setdefault(key, []).append(value)
        print(key, round(value, 2), flush=True)

    with tempfile.TemporaryDirectory() as certs:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/../scripts/make-test-certs.sh", certs], check=True, stdout=subprocess.DEVNULL)
        for _ in range(args.rounds):
            add("cipher_bytes_per_s", cipher_rate(args.server_cpu))
            for clients in (1, 100):
                for name, bindir, proto in builds:
                    ns, rate = echo(bindir, proto, clients, certs, args)
                    add(f"{name}_{clients}_ns", ns)
                    add(f"{name}_{clients}_msgs_per_s", rate)

    med = {k: statistics.median(v) for k, v in samples.items()}
    cipher_ns = 2 * SIZE / med["cipher_bytes_per_s"] * 1e9
    print(f"\nAES-256-GCM on CPU {args.server_cpu}: {med['cipher_bytes_per_s'] / 1e9:.2f} GB/s; "
          f"a {SIZE}-byte message encrypted and decrypted: {cipher_ns:.1f} ns\n")
    old = " | old TLS ns/msg" if args.old_bindir else ""
    print(f"| clients | TCP ns/msg | TLS ns/msg{old} | cipher ns/msg | (TLS - TCP) / cipher | target TLS <= |")
    print("|---:|---:|---:|" + ("---:|" if old else "") + "---:|---:|---:|")
    for clients in (1, 100):
        tcp, tls = med[f"tcp_{clients}_ns"], med[f"tls_{clients}_ns"]
        old_cell = f" | {med[f'tls_old_{clients}_ns']:.1f}" if old else ""
        print(f"| {clients} | {tcp:.1f} | {tls:.1f}{old_cell} | {cipher_ns:.1f} | {(tls - tcp) / cipher_ns:.2f} | "
              f"{tcp + 1.5 * cipher_ns:.1f} |")
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump({"samples": samples, "medians": med, "cipher_ns_per_msg": cipher_ns}, f, indent=1)


if __name__ == "__main__":
    main()
