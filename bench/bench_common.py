"""Shared by the benchmark drivers: CPU pinning, the raw blocking (or
busy-polling) ping-pong baseline, medians, whether a port listens, and
programs run with their CPU time taken from wait4."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def listening(port):
    """Whether a TCP socket listens on `port` (read from /proc: a probe connection would be a client)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(path).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def pinned(cpu):
    """taskset prefix for a CPU ("0", "1"), or nothing when unpinned or on one CPU."""
    return ["taskset", "-c", cpu] if cpu is not None and (os.cpu_count() or 1) >= 2 else []


def median(xs):
    return sorted(xs)[len(xs) // 2]


def finish(proc, timeout):
    """Waits for a Popen'd program (killed after `timeout` s); returns (returncode, stdout, stderr, CPU seconds).
    Its output must go to files (stdout/stderr given as temporary files), read here once it ended."""
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    outputs = []
    for f in proc.output_files:
        f.seek(0)
        outputs.append(f.read().decode(errors="replace"))
        f.close()
    return proc.returncode, outputs[0], outputs[1], usage.ru_utime + usage.ru_stime


def start(argv):
    """Starts a program whose output finish() reads."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=out, stderr=err)
    proc.output_files = (out, err)
    return proc


def raw_pingpong(bindir, server_cpu, client_cpu, seconds, ping=None, pong=None, busy=False, port=32212,
                 checked=False, epoll_server=False):
    """bench/raw/raw_pingpong: one round trip at a time; returns its JSON (mean/p50/p99/max in us).
    checked: checked frames, the XOR computed by each sender and verified by each receiver.
    epoll_server: the server sleeps in epoll_wait before each read (the client blocks as usual)."""
    prefix = ("busy-" if busy else "") + ("checked-" if checked else "")
    sizes = [str(ping), str(pong)] if ping is not None else []
    server = subprocess.Popen(pinned(server_cpu) + [f"{bindir}/raw_pingpong", "epoll-server" if epoll_server
                                                    else prefix + "server", str(port), *sizes],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
    out = raw_pingpong_client(bindir, client_cpu, port, seconds, ping, pong, prefix)
    server.wait(timeout=30)
    return out


def raw_pingpong_client(bindir, cpu, port, seconds, ping=None, pong=None, prefix=""):
    """bench/raw/raw_pingpong's client alone, against whatever serves `port`; returns its JSON."""
    sizes = [str(ping), str(pong)] if ping is not None else []
    out = subprocess.run(pinned(cpu) + [f"{bindir}/raw_pingpong", prefix + "client", str(port), str(seconds),
                                        *sizes], capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"raw ping-pong failed: {out.stderr}")
    return json.loads(out.stdout)


class ServerProcess:
    """A server under test, stopped with SIGTERM. With port_from_stdout its first line
    is Volley's "listening ... ADDRESS:PORT"; otherwise it gets a moment to bind."""

    def __init__(self, argv, cpu, port_from_stdout=False):
        self.proc = subprocess.Popen(pinned(cpu) + argv, stdout=subprocess.PIPE if port_from_stdout else subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, text=True)
        self.port = None
        if port_from_stdout:
            line = self.proc.stdout.readline()  # "listening PROTO ADDR:PORT"
            if not line.startswith("listening "):
                sys.exit(f"{argv[0]} did not start: {line!r}")
            self.port = line.strip().rsplit(":", 1)[1]
        else:
            time.sleep(0.3)

    def stop(self):
        """Stops it; returns the CPU time it used (user + system seconds, from wait4)."""
        self.proc.terminate()
        try:
            _, _, usage = os.wait4(self.proc.pid, 0)
        except ChildProcessError:  # reaped already
            return 0.0
        self.proc.returncode = 0
        return usage.ru_utime + usage.ru_stime


def ns_per_message(cpu_seconds, client_json):
    """A server's CPU per message echoed, in ns, from its CPU time and the client's message count."""
    return cpu_seconds / max(client_json["total_messages"], 1) * 1e9
