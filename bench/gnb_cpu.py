#!/usr/bin/python3
"""The gNB receiver's CPU per byte: the gNB target against the raw sinks.

The target (variant handler, 2 threads) on CPU 1 with the generator on CPU 0,
then the target again fed by the raw sender (the receivers compared with the
same sender: how a sender writes moves the receiver's system time), then
the raw sink on CPU 1 with the raw sender on CPU 0, twice: reading only,
and checking every frame's header and counting it per type as the target
does (`raw_sink PORT N check`: the same work, hand-written). Interleaved, the
1200-byte mix. The receiver's user and system time come from wait4's
resource usage. Prints one line per run (docs/BENCHMARKS.md, "Where the gNB
target's CPU goes"). With --senders, the other side: the traffic generator's
CPU per byte against the raw sender's, each on CPU 0 sending into the
checking raw sink on CPU 1. Usage: bench/gnb_cpu.py [BINDIR] [--connections N]
[--runs N] [--seconds S] [--senders]
"""
import argparse
import json
import os
import signal
import subprocess
import tempfile
import time

MIX = ["1001:64:25", "1002:16:25", "8001:1200:50"]


def cpu_of(proc):
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime, usage.ru_stime


def volley_run(bindir, seconds, connections, raw_sender=False):
    """The target's bytes and CPU, fed by the traffic generator, or with
    raw_sender by the raw sender that feeds the raw sinks."""
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        target = subprocess.Popen(["taskset", "-c", "1", f"{bindir}/volley", "target", "--bind", "127.0.0.1", "--port",
                                   "0", "--port-file", port_file, "--handler", "variant", "--threads", "2", "--json",
                                   "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while not (os.path.exists(port_file) and os.path.getsize(port_file)):
            if time.time() > deadline or target.poll() is not None:
                raise SystemExit("gnb_cpu: the target did not start")
            time.sleep(0.02)
        port = open(port_file).read().strip()
        if raw_sender:
            argv = [f"{bindir}/raw_sender", port, str(seconds), str(connections)] + MIX
        else:
            argv = [f"{bindir}/traffic_generator"] + sum([["-m", m] for m in MIX], []) + \
                   ["-t", str(seconds), "--port", port, "-c", str(connections), "--json", "--no-progress"]
        gen = subprocess.run(["taskset", "-c", "0"] + argv, capture_output=True, text=True, timeout=seconds + 60)
        target.send_signal(signal.SIGTERM)
        user, system = cpu_of(target)
    if gen.returncode != 0:
        raise SystemExit(f"gnb_cpu: sender failed: {gen.stderr}")
    return json.loads(gen.stdout)["bytes"], user, system


def raw_run(bindir, seconds, connections, port, check=False):
    sink = subprocess.Popen(["taskset", "-c", "1", f"{bindir}/raw_sink", str(port), str(connections)] +
                            (["check"] if check else []),
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    subprocess.run(["taskset", "-c", "0", f"{bindir}/raw_sender", str(port), str(seconds), str(connections)] + MIX,
                   capture_output=True, timeout=seconds + 60)
    out = sink.stdout.read()
    user, system = cpu_of(sink)
    return json.loads(out)["bytes"], user, system


def sender_run(bindir, seconds, connections, port, generator):
    """The sender's CPU (user, system) and bytes: the traffic generator or the
    raw sender on CPU 0, into the checking raw sink on CPU 1."""
    sink = subprocess.Popen(["taskset", "-c", "1", f"{bindir}/raw_sink", str(port), str(connections), "check"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    if generator:
        argv = [f"{bindir}/traffic_generator"] + sum([["-m", m] for m in MIX], []) + \
               ["-t", str(seconds), "--port", str(port), "-c", str(connections), "--json", "--no-progress"]
    else:
        argv = [f"{bindir}/raw_sender", str(port), str(seconds), str(connections)] + MIX
    sender = subprocess.Popen(["taskset", "-c", "0"] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    user, system = cpu_of(sender)
    out = sink.stdout.read()
    sink.wait(timeout=60)
    return json.loads(out)["bytes"], user, system


def senders(args):
    for _ in range(args.runs):
        gb, gu, gs = sender_run(args.bindir, args.seconds, args.connections, args.port, True)
        rb, ru, rs = sender_run(args.bindir, args.seconds, args.connections, args.port, False)
        print(f"generator {gb / 1e6 / args.seconds:6.0f} MB/s, {(gu + gs) * 1e9 / gb:.3f} ns/byte (user "
              f"{gu * 1e9 / gb:.3f}, system {gs * 1e9 / gb:.3f}) | raw sender {rb / 1e6 / args.seconds:6.0f} MB/s, "
              f"{(ru + rs) * 1e9 / rb:.3f} ns/byte (user {ru * 1e9 / rb:.3f}, system {rs * 1e9 / rb:.3f}) | "
              f"CPU per byte: generator / raw sender {(gu + gs) * rb / ((ru + rs) * gb):.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bindir", nargs="?", default="build/bin")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--port", type=int, default=32199, help="port of the raw sink")
    ap.add_argument("--senders", action="store_true",
                    help="the senders' CPU instead: the generator against the raw sender, both into the checking raw sink")
    args = ap.parse_args()
    if args.senders:
        return senders(args)
    def per_byte(b, u, s):
        return f"{b / 1e6 / args.seconds:6.0f} MB/s, {(u + s) * 1e9 / b:.3f} ns/byte (user {u * 1e9 / b:.3f}, " \
               f"system {s * 1e9 / b:.3f})"

    for _ in range(args.runs):
        vb, vu, vs = volley_run(args.bindir, args.seconds, args.connections)
        tb, tu, ts = volley_run(args.bindir, args.seconds, args.connections, raw_sender=True)
        rb, ru, rs = raw_run(args.bindir, args.seconds, args.connections, args.port)
        cb, cu, cs = raw_run(args.bindir, args.seconds, args.connections, args.port, check=True)
        print(f"volley {per_byte(vb, vu, vs)} | volley fed by the raw sender {per_byte(tb, tu, ts)} | "
              f"raw {per_byte(rb, ru, rs)} | raw checking {per_byte(cb, cu, cs)} | "
              f"CPU per byte: volley / raw {(vu + vs) * rb / ((ru + rs) * vb):.2f}, "
              f"volley / raw checking {(vu + vs) * cb / ((cu + cs) * vb):.2f}, "
              f"same sender: volley / raw checking {(tu + ts) * cb / ((cu + cs) * tb):.2f}", flush=True)

if __name__ == "__main__":
    main()
