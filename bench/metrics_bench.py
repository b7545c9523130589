#!/usr/bin/python3
"""What a Prometheus scrape of /metrics costs a server (issue 15: scraping every 100 ms must cost the served
traffic less than 2%). Two measurements of `volley echo-server --metrics`:

1. CPU per scrape: the server (2 worker loops, so every scrape visits both) is scraped as fast as one
   keep-alive connection allows, with no other traffic; its CPU time (user + system, from /proc) over the
   scrapes, divided by their number, is what one scrape costs. At one scrape per 100 ms that is a share of
   one CPU a second, which bounds what scraping can take from the traffic.
2. The traffic itself: pipelined echo (1 client, 1000 32-byte messages in flight) with no scraper, with a
   scrape every 100 ms, and with a scrape every 1 ms (a hundred times the rate, so a cost too small to see
   at 100 ms shows a hundredfold), samples interleaved.
Markdown on stdout, every sample in bench/results/metrics.json."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

from bench_common import ServerProcess, median, pinned

SAMPLES = int(os.environ.get("BENCH_SAMPLES", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
SCRAPES = int(os.environ.get("BENCH_SCRAPES", "5000"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU time of a process and all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server(bindir, cpu, threads, metrics_port):
    return ServerProcess([f"{bindir}/volley", "echo-server", "-p", "0", "-t", str(threads), "--no-progress",
                          "--metrics", f"127.0.0.1:{metrics_port}"], cpu, port_from_stdout=True)


def scrape(conn):
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"/metrics answered {response.status}")
    return len(body)


class Scraper(threading.Thread):
    """Scrapes every `period` seconds on one keep-alive connection until stopped."""

    def __init__(self, port, period):
        super().__init__(daemon=True)
        self.port, self.period, self.count = port, period, 0
        self.done = threading.Event()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        next_at = time.monotonic()
        while not self.done.is_set():
            scrape(conn)
            self.count += 1
            next_at += self.period
            delay = next_at - time.monotonic()
            if delay > 0:
                self.done.wait(delay)
            else:
                next_at = time.monotonic()
        conn.close()


def cpu_per_scrape(bindir, record):
    metrics_port = free_port()
    s = server(bindir, "1", 2, metrics_port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
        size = scrape(conn)  # the first one sets the connection up
        idle0 = cpu_seconds(s.proc.pid)
        time.sleep(1.0)
        idle = cpu_seconds(s.proc.pid) - idle0  # what the server spends doing nothing for a second
        before, t0 = cpu_seconds(s.proc.pid), time.monotonic()
        for _ in range(SCRAPES):
            scrape(conn)
        spent, wall = cpu_seconds(s.proc.pid) - before, time.monotonic() - t0
        conn.close()
    finally:
        s.stop()
    per_scrape_us = max(0.0, spent - idle * wall) / SCRAPES * 1e6
    record.append({"part": "cpu per scrape", "scrapes": SCRAPES, "server_cpu_s": spent, "wall_s": wall,
                   "idle_cpu_s_per_s": idle, "bytes": size, "cpu_us_per_scrape": per_scrape_us})
    print("## CPU per scrape (`volley echo-server -t 2 --metrics`, server CPU 1, scraper on one keep-alive "
          "connection)\n")
    print("| scrapes | body bytes | server CPU | wall | CPU per scrape | at one scrape per 100 ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {SCRAPES} | {size} | {spent:.2f} s | {wall:.2f} s | {per_scrape_us:.1f} us "
          f"| {per_scrape_us * 10 / 1e6 * 100:.4f}% of one CPU |\n", flush=True)


def echo_rate(bindir, port):
    argv = [f"{bindir}/volley", "echo-client", "-p", str(port), "-c", "1", "-t", "1", "-z", str(SECONDS), "--json",
            "--no-progress"]
    out = subprocess.run(pinned("0") + argv, capture_output=True, text=True, timeout=SECONDS + 60)
    if out.returncode != 0:
        sys.exit(f"echo-client failed: {out.stderr}")
    return json.loads(out.stdout)["msgs_per_s"]


def traffic_under_scrapes(bindir, record):
    cases = (("no scrapes", None), ("a scrape every 100 ms", 0.1), ("a scrape every 1 ms", 0.001))
    rates = {name: [] for name, _ in cases}
    scrapes = {name: [] for name, _ in cases}
    metrics_port = free_port()
    s = server(bindir, "1", 1, metrics_port)
    try:
        for _ in range(SAMPLES):
            for name, period in cases:
                scraper = Scraper(metrics_port, period) if period else None
                if scraper:
                    scraper.start()
                rates[name].append(echo_rate(bindir, s.port))
                if scraper:
                    scraper.done.set()
                    scraper.join()
                    scrapes[name].append(scraper.count)
    finally:
        s.stop()
    record.append({"part": "pipelined echo under scrapes", "rates": rates, "scrapes": scrapes})
    print(f"## Pipelined echo while scraped (1 client, 1000 x 32 B in flight, server CPU 1, client CPU 0, scraper "
          f"unpinned; {SECONDS:g} s samples, median of {SAMPLES}, interleaved)\n")
    print("| case | msgs/s (median) | samples | / no scrapes |")
    print("|---|---:|---|---:|")
    base = median(rates["no scrapes"])
    for name, _ in cases:
        m = median(rates[name])
        shown = ", ".join(f"{r / 1e6:.2f} M" for r in rates[name])
        print(f"| {name} | {m:,.0f} | {shown} | {m / base:.3f} |", flush=True)
    print()


def main():
    bindir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    record = []
    cpu_per_scrape(bindir, record)
    traffic_under_scrapes(bindir, record)
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/metrics.json", "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
