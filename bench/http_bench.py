#!/usr/bin/python3
"""The HTTP request-rate benchmark: wrk (Debian's HTTP load tool) drives
Volley's HTTP/1.1 server (examples/http_server: http::ConnectionHandler on a
net::Server with 2 worker loops) with keep-alive, GET /hello, at 1 and 100
connections. Beside it, in the same run, the same wrk drives a raw baseline
(bench/raw/raw_http_server: plain epoll, 2 threads, answering every request
head with the same response bytes and parsing nothing else).
Markdown on stdout, every sample in bench/results/http.json."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from bench_common import ServerProcess, median, pinned

SAMPLES = 3
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
CROSS = ("server CPU 1, wrk CPU 0", "1", "0")
SHARED = ("unpinned (2 CPUs shared)", None, None)


def wrk(cpu, port, connections, path="/hello"):
    out = subprocess.run(pinned(cpu) + ["wrk", "-t1", f"-c{connections}", f"-d{SECONDS:g}s", "--latency",
                                        f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, timeout=SECONDS + 60)
    if out.returncode != 0:
        sys.exit(f"wrk failed: {out.stderr}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out.stdout).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out.stdout)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out.stdout)
    scale = {"us": 1, "ms": 1e3, "s": 1e6}
    return {"requests_per_s": rate, "p50_us": float(p50.group(1)) * scale[p50.group(2)] if p50 else None,
            "errors": errors.group(0) if errors else "", "output": out.stdout}


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    if shutil.which("wrk") is None:
        print("## HTTP request rate: skipped, wrk is not installed (scripts/install-deps.sh installs it)\n")
        return
    record = []
    print(f"## HTTP/1.1 request rate, keep-alive, GET /hello, wrk with 1 thread ({SECONDS:g} s per sample, "
          f"median of {SAMPLES})\n")
    print("| connections | placement | Volley HTTP server req/s | p50 | raw epoll server req/s | ratio |")
    print("|---:|---|---:|---:|---:|---:|")
    for connections, (place, scpu, ccpu) in ((1, CROSS), (100, CROSS), (100, SHARED)):
        hs, es = [], []
        for _ in range(SAMPLES):
            s = ServerProcess([f"{bindir}/http_server", "0"], scpu, port_from_stdout=True)
            hs.append(wrk(ccpu, s.port, connections))
            s.stop()
            r = ServerProcess([f"{bindir}/raw_http_server", "32233", "2"], scpu)
            es.append(wrk(ccpu, 32233, connections))
            r.stop()
            time.sleep(0.1)
        for x in hs:
            if x["errors"]:
                print(f"<!-- {connections} connections: {x['errors']} -->")
        h, e = median([x["requests_per_s"] for x in hs]), median([x["requests_per_s"] for x in es])
        p50 = median([x["p50_us"] for x in hs])
        record.append({"connections": connections, "placement": place, "http": hs, "echo": es})
        print(f"| {connections} | {place} | {h:,.0f} | {p50:.0f} us | {e:,.0f} | {h / e:.2f} |", flush=True)
    print()
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/http.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
