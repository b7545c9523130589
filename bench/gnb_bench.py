#!/usr/bin/python3
"""End-to-end benchmarks of the gNB target and generator (`make bench`).

1. The gNB handler table: virtual, variant and dummy handlers, the 1200 and
   8000 byte scenarios, 5 samples each, drop min and max, average the other 3,
   and the speed-up formula 1 - (variant - dummy) / (virtual - dummy).
2. Volley against the raw baseline (blocking send/recv, no Volley code) on the
   1200 mix: bytes per second as a ratio measured in the same run, and each
   side's CPU time (user + system, from wait4) per byte: the target's against
   the raw sink's, the generator's against the raw sender's.
3. Scaling: 1 against 4 connections on 2 worker threads.

Samples of the things compared are interleaved, so drift on a shared machine
hits them alike. Every run checks that the target received exactly what the
generator sent. Results go to stdout (markdown) and bench/results/*.json.
"""
import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

from bench_common import finish, start

MIXES = {
    "1200": ["-m", "1001:64:25", "-m", "1002:16:25", "-m", "8001:1200:50"],
    "8000": ["-m", "1001:64:25", "-m", "1002:16:25", "-m", "8001:8000:50"],
}
RAW_MIX = {"1200": ["1001:64:25", "1002:16:25", "8001:1200:50"]}


def pinned(cpus):
    return ["taskset", "-c", cpus] if cpus else []


def wait_for_file(path, proc, what, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return open(path).read().strip()
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    sys.exit(f"bench: {what} did not start")


def run_volley(bindir, handler, mix, seconds, connections, target_threads, target_cpus, gen_cpus, gen_threads=None,
               io="reactor"):
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        target = start(pinned(target_cpus) + [f"{bindir}/volley", "target", "--bind", "127.0.0.1", "--port", "0",
                                              "--port-file", port_file, "--handler", handler, "--threads",
                                              str(target_threads), "--json", "--no-progress", "--io", io])
        try:
            port = wait_for_file(port_file, target, "volley target")
            gen_cmd = pinned(gen_cpus) + [f"{bindir}/traffic_generator", *MIXES[mix], "-t", str(seconds), "--port",
                                          port, "-c", str(connections), "--json", "--no-progress"]
            if gen_threads:
                gen_cmd += ["--threads", str(gen_threads)]
            gen_status, gen_out, gen_err, gen_cpu = finish(start(gen_cmd), seconds + 60)
        finally:  # a failure above must not leave the target running
            target.send_signal(signal.SIGTERM)
        _, out, _, target_cpu = finish(target, 60)
    if gen_status != 0:
        sys.exit(f"bench: generator failed: {gen_err}")
    g, t = json.loads(gen_out), json.loads(out[out.index("{"):])  # after the "listening" line
    if g["frames"] != t["frames"] or g["bytes"] != t["bytes"]:
        sys.exit(f"bench: target received {t['frames']} frames, generator sent {g['frames']}")
    return {"ns_per_msg": g["ns_per_msg_inverse_throughput"], "msgs_per_s": g["msgs_per_s"],
            "mb_per_s": g["mb_per_s"], "frames": g["frames"], "target_cpu_ns": t["cpu_ns_per_frame"],
            "receiver_ns_per_kb": target_cpu / g["bytes"] * 1e12, "sender_ns_per_kb": gen_cpu / g["bytes"] * 1e12}


def run_raw(bindir, mix, seconds, connections, sink_cpus, sender_cpus, port):
    sink = start(pinned(sink_cpus) + [f"{bindir}/raw_sink", str(port), str(connections)])
    time.sleep(0.2)
    try:
        sender_status, sender_out, sender_err, sender_cpu = finish(
            start(pinned(sender_cpus) + [f"{bindir}/raw_sender", str(port), str(seconds), str(connections),
                                         *RAW_MIX[mix]]), seconds + 60)
    except BaseException:
        sink.kill()  # a failure here must not leave the sink running
        raise
    sink_status, _, sink_err, sink_cpu = finish(sink, 60)
    if sender_status != 0 or sink_status != 0:
        sys.exit(f"bench: raw baseline failed: {sender_err} {sink_err}")
    s = json.loads(sender_out)
    return {"mb_per_s": s["bytes"] / s["seconds"] / 1e6, "receiver_ns_per_kb": sink_cpu / s["bytes"] * 1e12,
            "sender_ns_per_kb": sender_cpu / s["bytes"] * 1e12}


def seed_average(values):
    """The classic method: drop the min and the max, average the rest."""
    v = sorted(values)
    inner = v[1:-1] if len(v) > 2 else v
    return sum(inner) / len(inner)


def machine():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}


def print_handler_table(title, table, average, raise_, overhead):
    print(f"\n## {title}\n")
    print("| scenario | virtual | variant | dummy | 1-(variant-dummy)/(virtual-dummy) | variant over dummy |")
    print("|---|---:|---:|---:|---:|---:|")
    for mix, row in table.items():
        a = row[average]
        print(f"| max data {mix} B | {a['virtual']:.1f} | {a['variant']:.1f} | {a['dummy']:.1f} | "
              f"{row[raise_] * 100:.0f}% | {row[overhead] * 100:+.1f}% |")


def verdict(ok):
    return "met" if ok else "NOT met"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bindir", nargs="?", default="build/bin")
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_SECONDS", "3")))
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--port", type=int, default=32199, help="port of the raw sink")
    args = ap.parse_args()
    two_cpus = (os.cpu_count() or 1) >= 2
    target_cpus, gen_cpus = ("1", "0") if two_cpus else (None, None)
    results = {"machine": machine(), "seconds": args.seconds, "samples": args.samples,
               "placement": f"target on CPU {target_cpus}, generator on CPU {gen_cpus}" if two_cpus else "unpinned"}
    print(f"# gNB benchmarks, {results['machine']['date']}, {results['machine']['cpu']}, "
          f"{results['machine']['cores']} cores; {args.seconds:g} s per run; {results['placement']}\n")

    # 1. The gNB handler table.
    handlers = ["virtual", "variant", "dummy"]
    table = {}
    for mix in ("1200", "8000"):
        samples = {h: [] for h in handlers}
        cpu = {h: [] for h in handlers}
        for i in range(args.samples):
            for h in handlers:
                run = run_volley(args.bindir, h, mix, args.seconds, 1, 1, target_cpus, gen_cpus)
                samples[h].append(run["ns_per_msg"])
                cpu[h].append(run["target_cpu_ns"])
            print(f"  scenario {mix}, sample {i + 1}/{args.samples}: " +
                  ", ".join(f"{h} {samples[h][-1]:.1f} ns/msg, target cpu {cpu[h][-1]:.1f} ns/frame" for h in handlers),
                  file=sys.stderr)
        avg = {h: seed_average(samples[h]) for h in handlers}
        cpu_avg = {h: seed_average(cpu[h]) for h in handlers}
        denominator = avg["virtual"] - avg["dummy"]
        raise_ = 1 - (avg["variant"] - avg["dummy"]) / denominator if denominator else float("nan")
        cpu_den = cpu_avg["virtual"] - cpu_avg["dummy"]
        cpu_raise = 1 - (cpu_avg["variant"] - cpu_avg["dummy"]) / cpu_den if cpu_den else float("nan")
        table[mix] = {"samples_ns": samples, "average_ns": avg, "performance_raise": raise_,
                      "variant_over_dummy": avg["variant"] / avg["dummy"] - 1,
                      "target_cpu_samples_ns": cpu, "target_cpu_average_ns": cpu_avg,
                      "target_cpu_performance_raise": cpu_raise,
                      "target_cpu_variant_over_dummy": cpu_avg["variant"] / cpu_avg["dummy"] - 1}
    results["handlers"] = table
    print_handler_table("Handlers (ns per message, inverse throughput; 5 samples, drop min and max, "
                        "average 3)", table, "average_ns", "performance_raise", "variant_over_dummy")
    print_handler_table("Handlers: the target's own CPU time per frame (user+system, same runs, same method)", table,
                        "target_cpu_average_ns", "target_cpu_performance_raise", "target_cpu_variant_over_dummy")

    # 2. Against the raw baseline.
    volley_runs, raw_runs = [], []
    for i in range(args.samples):
        volley_runs.append(run_volley(args.bindir, "variant", "1200", args.seconds, 1, 1, target_cpus, gen_cpus))
        raw_runs.append(run_raw(args.bindir, "1200", args.seconds, 1, target_cpus, gen_cpus, args.port))
        print(f"  raw comparison sample {i + 1}: volley {volley_runs[-1]['mb_per_s']:.0f} MB/s, "
              f"raw {raw_runs[-1]['mb_per_s']:.0f} MB/s", file=sys.stderr)
    avg = lambda runs, key: seed_average([r[key] for r in runs])
    ratio = avg(volley_runs, "mb_per_s") / avg(raw_runs, "mb_per_s")
    receiver_ratio = avg(volley_runs, "receiver_ns_per_kb") / avg(raw_runs, "receiver_ns_per_kb")
    sender_ratio = avg(volley_runs, "sender_ns_per_kb") / avg(raw_runs, "sender_ns_per_kb")
    results["raw_baseline"] = {"volley": volley_runs, "raw": raw_runs, "ratio": ratio,
                               "receiver_cpu_ratio": receiver_ratio, "sender_cpu_ratio": sender_ratio}
    print("\n## Volley against the raw baseline (1200 mix, 1 connection)\n")
    print("CPU time (user + system) per KB of frames, beside the rate: what a byte costs each side.\n")
    print("| | Volley (generator -> target, variant) | raw (raw_sender -> raw_sink) | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| MB/s | {avg(volley_runs, 'mb_per_s'):.0f} | {avg(raw_runs, 'mb_per_s'):.0f} | {ratio:.2f} |")
    print(f"| receiver CPU per KB | {avg(volley_runs, 'receiver_ns_per_kb'):.0f} ns | "
          f"{avg(raw_runs, 'receiver_ns_per_kb'):.0f} ns | {receiver_ratio:.2f} |")
    print(f"| sender CPU per KB | {avg(volley_runs, 'sender_ns_per_kb'):.0f} ns | "
          f"{avg(raw_runs, 'sender_ns_per_kb'):.0f} ns | {sender_ratio:.2f} |")

    # 3. Connections.
    one, four, raw_four = [], [], []
    for i in range(3):
        one.append(run_volley(args.bindir, "variant", "1200", args.seconds, 1, 2, None, None, 1)["mb_per_s"])
        four.append(run_volley(args.bindir, "variant", "1200", args.seconds, 4, 2, None, None, 2)["mb_per_s"])
        raw_four.append(run_raw(args.bindir, "1200", args.seconds, 4, None, None, args.port)["mb_per_s"])
    med = lambda v: sorted(v)[len(v) // 2]
    scaling = med(four) / med(one)
    results["connections"] = {"one_mb_per_s": one, "four_mb_per_s": four, "raw_four_mb_per_s": raw_four,
                              "scaling": scaling}
    print("\n## Connections (1200 mix, target --threads 2, unpinned, median of 3, MB/s)\n")
    print("| 1 connection | 4 connections | 4 / 1 | raw, 4 connections | volley 4 / raw 4 |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {med(one):.0f} | {med(four):.0f} | {scaling:.2f} | {med(raw_four):.0f} | {med(four) / med(raw_four):.2f} |")

    print("\n## Targets\n")
    worst_overhead = max(row["variant_over_dummy"] for row in table.values())
    worst_cpu = max(row["target_cpu_variant_over_dummy"] for row in table.values())
    print(f"- volley >= 0.85 x raw bytes/s on the 1200 mix: {ratio:.2f} ({verdict(ratio >= 0.85)})")
    print(f"- variant costs at most 5% over dummy, inverse throughput: worst {worst_overhead * 100:+.1f}% "
          f"({verdict(worst_overhead <= 0.05)})")
    print(f"- variant costs at most 5% over dummy, target CPU per frame: worst {worst_cpu * 100:+.1f}% "
          f"({verdict(worst_cpu <= 0.05)})")
    print(f"- 4 connections do not collapse (>= 0.9 x 1 connection): {scaling:.2f} ({verdict(scaling >= 0.9)})")

    os.makedirs("bench/results", exist_ok=True)
    path = f"bench/results/gnb-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\n(raw samples in {path})")


if __name__ == "__main__":
    main()
