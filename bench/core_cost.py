#!/usr/bin/python3
"""The connection core's cost, one build against another and against raw
sockets, samples interleaved, processes pinned:
- rtt: 32-byte payload round trips, one in flight: bench/raw/raw_pingpong
  (checked frames, blocking or busy-polling), then each build's pingpong-server and
  pingpong; blocking and --busy-poll, p50. Then the NEW build's pingpong-server
  with raw_pingpong's client (rtt_*_new_rawclient): the server's part alone,
  the client the same as the raw row's. And raw_pingpong sleeping in
  epoll_wait before each read, as an event loop does, on the server's side
  (rtt_block_rawepollserver) and on both (rtt_block_rawepoll): the least any
  event-driven server, and pair, pays over the blocking one.
- echo: pipelined 32-byte echo (1 and 100 clients): the server's CPU time
  (user + system, from wait4 after SIGTERM) per message echoed, for
  raw_echo_server and each build's echo-server (1 thread); the client is
  the NEW build's echo-client for all three.
Usage: bench/core_cost.py OLD_BINDIR NEW_BINDIR [ROUNDS] [rtt,echo]
       [SERVER_CPU,CLIENT_CPU,ECHO_CLIENT_CPUS]  (default 1,0,0: a 2-core machine)
       [--io uring]  (Volley's servers receive through io_uring; their clients
       and the busy-poll rows stay on the reactor)
The raw programs come from NEW_BINDIR. Prints each sample, then medians."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from bench_common import listening

SERVER_IO = []
if "--io" in sys.argv:
    at = sys.argv.index("--io")
    SERVER_IO = ["--io", sys.argv[at + 1]]
    del sys.argv[at:at + 2]
if len(sys.argv) < 3:
    sys.exit(__doc__)
BUILDS = {"old": os.path.abspath(sys.argv[1]), "new": os.path.abspath(sys.argv[2])}
ENV = dict(os.environ)
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
WHAT = sys.argv[4] if len(sys.argv) > 4 else "rtt,echo"
SCPU, CCPU, ECPU = (sys.argv[5] if len(sys.argv) > 5 else "1,0,0").split(",", 2)
NEW = BUILDS["new"]
res = {}


def add(key, v):
    res.setdefault(key, []).append(v)
    print(key, round(v, 4), flush=True)


def start(argv, cpu):
    """A Volley server on port 0, once it says where it listens: the process and its port."""
    p = subprocess.Popen(["taskset", "-c", cpu] + argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=ENV)
    line = p.stdout.readline()
    return p, line.strip().rsplit(":", 1)[1]


def stop(p):
    p.send_signal(signal.SIGTERM)
    _, _, u = os.wait4(p.pid, 0)
    return u.ru_utime + u.ru_stime


def run(argv, cpu, timeout=120):
    out = subprocess.run(["taskset", "-c", cpu] + argv, capture_output=True, text=True, env=ENV, timeout=timeout)
    return json.loads(out.stdout)


def rtt(build, busy):
    b = f"{BUILDS[build]}/volley"
    p, port = start([b, "pingpong-server", "-p", "0", "--no-progress", "--heartbeat", "0"] +
                    (["--busy-poll"] if busy else SERVER_IO), SCPU)
    r = run([b, "pingpong", "-p", port, "--sizes", "32", "-n", "100000", "--warmup", "1000", "--heartbeat", "0",
             "--json", "--no-progress"] + (["--busy-poll"] if busy else []), CCPU)
    stop(p)
    return r["results"][0]["p50_us"]


def start_raw(argv_of_port, first_port):
    """A raw server (which takes its port as an argument) once it listens: the
    process and its port. A port another socket holds (the raw programs exit
    when bind fails) is skipped for the next one."""
    for port in range(first_port, first_port + 50):
        if listening(port):
            continue
        p = subprocess.Popen(["taskset", "-c", SCPU] + argv_of_port(port), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=ENV)
        deadline = time.time() + 5
        while p.poll() is None and not listening(port) and time.time() < deadline:
            time.sleep(0.01)
        if p.poll() is None and listening(port):
            return p, port
        p.kill()
        p.wait()
    sys.exit(f"core_cost: no raw server would listen on ports {first_port}-{first_port + 49}")


def raw_mode(busy, epoll):
    """raw_pingpong's mode prefix: checked frames, spinning, sleeping in epoll_wait, or blocking."""
    return "busy-checked-" if busy else "epoll-checked-" if epoll else "checked-"


def raw_client(busy, port, epoll=False):
    return run([f"{NEW}/raw_pingpong", raw_mode(busy, epoll) + "client", str(port), "1.5", "37", "37"], CCPU)["p50_us"]


def raw_rtt(busy, port, epoll_server=False, epoll_client=False):
    # Checked frames either way: the XOR of the payload on both sides, the same work as Volley's.
    # epoll_*: that side sleeps in epoll_wait before each read, as any event loop does.
    prefix = raw_mode(busy, epoll_server)
    s, port = start_raw(lambda at: [f"{NEW}/raw_pingpong", prefix + "server", str(at), "37", "37"], port)
    p50 = raw_client(busy, port, epoll_client)
    s.wait(timeout=30)
    return p50


def rawclient_rtt(busy):
    """The NEW build's pingpong-server answering raw_pingpong's client."""
    p, port = start([f"{NEW}/volley", "pingpong-server", "-p", "0", "--no-progress", "--heartbeat", "0"] +
                    (["--busy-poll"] if busy else SERVER_IO), SCPU)
    p50 = raw_client(busy, port)
    stop(p)
    return p50


def echo(build, clients, port):
    if build == "raw":
        p, port = start_raw(lambda at: [f"{NEW}/raw_echo_server", str(at), "1"], port)
    else:
        p, port = start([f"{BUILDS[build]}/volley", "echo-server", "--proto", "tcp", "-p", "0", "-t", "1",
                         "--no-progress"] + SERVER_IO, SCPU)
    r = run([f"{NEW}/volley", "echo-client", "--proto", "tcp", "-p", str(port), "-c", str(clients), "-t", "2",
             "-z", "2", "--json", "--no-progress"], ECPU)
    cpu = stop(p)
    msgs = r["total_messages"]
    return cpu / msgs * 1e9, r["msgs_per_s"]


def raw_key(key):
    """The raw baseline a sample is compared with, or None."""
    parts = key.split("_")
    if key.startswith("rtt_") and parts[2] != "raw":
        return f"rtt_{parts[1]}_raw"
    if key.startswith("echo") and key.endswith("_ns_per_msg") and parts[1] != "raw":
        return f"{parts[0]}_raw_ns_per_msg"
    return None



port = 33000
for rnd in range(ROUNDS):
    if "rtt" in WHAT:
        for busy in (False, True):
            tag = "busy" if busy else "block"
            port += 1
            add(f"rtt_{tag}_raw", raw_rtt(busy, port))
            add(f"rtt_{tag}_old", rtt("old", busy))
            add(f"rtt_{tag}_new", rtt("new", busy))
            add(f"rtt_{tag}_new_rawclient", rawclient_rtt(busy))
            if not busy:  # what sleeping in epoll costs with no library: one side, both sides
                port += 1
                add("rtt_block_rawepollserver", raw_rtt(False, port, epoll_server=True))
                port += 1
                add("rtt_block_rawepoll", raw_rtt(False, port, epoll_server=True, epoll_client=True))
    if "echo" in WHAT:
        for clients in (1, 100):
            for build in ("raw", "old", "new"):
                port += 1
                ns, rate = echo(build, clients, port)
                add(f"echo{clients}_{build}_ns_per_msg", ns)
                add(f"echo{clients}_{build}_msgs_per_s", rate)

print("\nmedians:")
for k, v in res.items():
    print(f"{k} {statistics.median(v):.3f} (n={len(v)}, min {min(v):.3f}, max {max(v):.3f})")


print("\nratios to raw, round by round (median, min, max):")
for k, v in res.items():
    base = raw_key(k)
    if base in res:
        r = [a / b for a, b in zip(v, res[base])]
        print(f"{k} / {base} {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f})")
