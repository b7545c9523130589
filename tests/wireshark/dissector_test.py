"""The Wireshark dissectors (tools/wireshark/volley.lua) against captures of
known bytes: every message type of every protocol, the byte-exact examples of
docs/PROTOCOL.md, frames split across segments and several in one, malformed
frames (expert info, no Lua error), and a fuzzed capture; and `volley netem
--pcap` carrying ARQ traffic, its packet counts against the relay's counters.
Usage: dissector_test.py LUA_SCRIPT WORK_DIR VOLLEY_BIN_DIR"""
import os
import json
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from captures import Capture, TcpStream, crc32c  # noqa: E402

LUA, BIN = sys.argv[1], sys.argv[3]
os.makedirs(sys.argv[2], exist_ok=True)
WORK = tempfile.mkdtemp(dir=sys.argv[2])  # fresh each run: no port file of an earlier run is ever read
failures = []
checks = 0


def tshark(path, *args):
    out = subprocess.run(["tshark", "-n", "-r", path, "-X", f"lua_script:{LUA}", *args], capture_output=True,
                         text=True, timeout=120)
    if out.returncode != 0 or "Lua Error" in out.stdout or "Lua Error" in out.stderr:
        failures.append(f"{os.path.basename(path)}: tshark failed or a Lua error: {out.stderr[-2000:]}{out.stdout[-2000:]}")
    return out.stdout


def fields(path, names, *args):
    """{frame number: [value of each field]} for frames where any field is set."""
    cmd = ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"]
    for n in names:
        cmd += ["-e", n]
    rows = {}
    for line in tshark(path, *cmd, *args).splitlines():
        parts = line.split("\t")
        if any(parts[1:]):
            rows[int(parts[0])] = parts[1:]
    return rows


def expect(what, got, want):
    global checks
    checks += 1
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def gnb_frame(type_, body):
    return struct.pack("!HI", type_, len(body)) + body


def gnb_capture():
    cap = Capture()
    s = TcpStream(cap, 32101)
    control = struct.pack("!I", 0x01020304) + bytes(60)
    s.send(gnb_frame(0x1001, control))                                               # 4: control, 64-byte example
    s.send(bytes.fromhex("10 02 00 00 00 04 01 02 03 04"), to_server=False)          # 5: ack example
    c7 = struct.pack("!I", 7) + b"123456789"
    s.send(gnb_frame(0x1001, c7))                                                    # 6
    s.send(gnb_frame(0x1004, struct.pack("!II", 7, crc32c(c7))), to_server=False)   # 7: good checksum
    c8 = struct.pack("!I", 8) + b"volley"
    s.send(gnb_frame(0x1001, c8))                                                    # 8
    s.send(gnb_frame(0x1004, struct.pack("!II", 8, crc32c(c8) ^ 1)), to_server=False)  # 9: bad checksum
    s.send(bytes.fromhex("10 03 00 00 00 06 00 00 00 2a 00 02"), to_server=False)    # 10: nack example
    data = gnb_frame(0x8001, bytes(range(256)) * 4 + bytes(176))                     # 1200-byte data
    assert data[:6] == bytes.fromhex("80 01 00 00 04 b0")
    s.send(data, cuts=(3, 700))                                                      # 11, 12, 13: one frame, 3 segments
    s.send(bytes(6) + gnb_frame(0x1002, struct.pack("!I", 9)) + gnb_frame(0x8001, b""))  # 14: three frames
    s.send(gnb_frame(0x1001, struct.pack("!I", 10) + bytes(61)))                     # 15: control over 64
    s.send(gnb_frame(0x1002, b"abc"))                                                # 16: ack under 4
    s.send(gnb_frame(0x7777, bytes(10)))                                             # 17: unknown type
    # A second connection: docs/PROTOCOL.md's ack-with-checksum example (its
    # control message is not in the capture) and the largest legal data message.
    t = TcpStream(cap, 32101, client_port=40002)                                     # 18, 19, 20
    t.send(bytes.fromhex("10 04 00 00 00 08 00 00 00 07 e3 06 92 83"), to_server=False)  # 21
    t.send(bytes.fromhex("80 01 00 01 00 00") + bytes(65536), cuts=(1400, 30000))    # 22, 23, 24
    path = f"{WORK}/gnb.pcap"
    cap.write(path)
    return path


def test_gnb():
    path = gnb_capture()
    rows = fields(path, ["volley_gnb.type", "volley_gnb.length", "volley_gnb.transaction_id",
                         "volley_gnb.nack_cause", "volley_gnb.crc32c.status", "_ws.expert.message"])
    expect("gnb control", rows.get(4, [])[:3], ["0x1001", "64", "16909060"])
    expect("gnb ack example", rows.get(5, [])[:3], ["0x1002", "4", "16909060"])
    expect("gnb ack-checksum good", [rows.get(7, [""] * 5)[i] for i in (0, 2, 4)], ["0x1004", "7", "good"])
    expect("gnb ack-checksum bad", [rows.get(9, [""] * 5)[i] for i in (0, 2, 4)], ["0x1004", "8", "bad"])
    expect("gnb bad checksum expert", "CRC-32C" in rows.get(9, [""] * 6)[5], True)
    expect("gnb nack example", rows.get(10, [])[:4], ["0x1003", "6", "42", "2"])
    expect("gnb data split over 3 segments", (11 in rows, 12 in rows, rows.get(13, [])[:2]), (False, False, ["0x8001", "1200"]))
    expect("gnb three frames in one segment", rows.get(14, [])[:2], ["0x0000,0x1002,0x8001", "0,4,0"])
    expect("gnb control over its limit", "limit" in rows.get(15, [""] * 6)[5], True)
    expect("gnb ack under its minimum", "minimum" in rows.get(16, [""] * 6)[5], True)
    expect("gnb unknown type", "Unknown message type" in rows.get(17, [""] * 6)[5], True)
    expect("gnb ack-with-checksum example", [rows.get(21, [""] * 5)[i] for i in (0, 1, 2, 4)],
           ["0x1004", "8", "7", "unverified (control message not in the capture)"])
    expect("gnb largest legal data message", (22 in rows, 23 in rows, rows.get(24, [])[:2], rows.get(24, [""] * 6)[5]),
           (False, False, ["0x8001", "65536"], ""))


def test_gnb_info_and_fatal_frames():
    """The Info column keeps its separator when a reassembled frame completes in
    a segment that carries more; after a fatal frame the rest of that direction
    is data after the error, not more (falsely broken) messages."""
    cap = Capture()
    s = TcpStream(cap, 32101)
    data = gnb_frame(0x8001, bytes(1200))
    ack = gnb_frame(0x1002, struct.pack("!I", 9))
    s.send(data + ack + data, cuts=(700, 1300))                                      # 4, 5, 6
    s.send(gnb_frame(0x8001, b"\x5a" * 100)[:2] + struct.pack("!I", 70000) + b"\x5a" * 200)  # 7: length over 65536
    s.send(b"\x5a" * 300)                                                            # 8: the rest of its body
    s.send(gnb_frame(0x1002, struct.pack("!I", 11)))                                 # 9: looks like a frame, after the end
    s.send(gnb_frame(0x1002, struct.pack("!I", 12)), to_server=False)                # 10: the other direction goes on
    path = f"{WORK}/gnb_info.pcap"
    cap.write(path)
    rows = fields(path, ["_ws.col.Info", "_ws.expert.message", "volley_gnb.type"])
    expect("gnb info: a reassembled frame then another, with a separator", rows.get(5, [""])[0],
           "data 1200 bytes, ack id 9")
    expect("gnb info: the frame completed in the segment after", rows.get(6, [""])[0], "data 1200 bytes")
    expect("gnb fatal frame", "over 65536" in rows.get(7, ["", ""])[1], True)
    expect("gnb after the fatal frame: no false errors, no frames", [rows.get(n, ["", "", ""])[1:] for n in (8, 9)],
           [["", ""], ["", ""]])
    expect("gnb after the fatal frame: shown as data after it",
           [rows.get(n, [""])[0].startswith("data after a fatal error") for n in (8, 9)], [True, True])
    expect("gnb the other direction is still parsed", rows.get(10, ["", "", ""])[2], "0x1002")


def test_checked():
    cap = Capture()
    s = TcpStream(cap, 7777)
    for hex_ in ("00 00 07 01 01 68 69", "00 00 05 00 00", "00 00 05 01 00", "00 00 0c 01 7e 63 6c 6f 73 65 6d 65",
                 "00 00 07 01 00 68 69", "00 00 03 01 00"):
        s.send(bytes.fromhex(hex_))                                                  # frames 4 .. 9
    s.send(bytes.fromhex("00 00 07 01 01 68 69" "00 00 05 00 00"), cuts=(2,))        # 10, 11
    path = f"{WORK}/checked.pcap"
    cap.write(path)
    rows = fields(path, ["volley_checked.length", "volley_checked.type", "volley_checked.xor.status",
                         "volley_checked.payload", "_ws.expert.message"])
    expect("checked 'hi'", rows.get(4, [])[:4], ["7", "1", "good", "6869"])
    expect("checked heartbeat", rows.get(5, [])[:3], ["5", "0", "good"])
    expect("checked empty message", rows.get(6, [])[:3], ["5", "1", "good"])
    expect("checked 'closeme'", rows.get(7, [])[:4], ["12", "1", "good", "636c6f73656d65"])
    expect("checked bad xor", (rows.get(8, [""] * 5)[2], "XOR" in rows.get(8, [""] * 5)[4]), ("bad", True))
    expect("checked length under 5", "under 5" in rows.get(9, [""] * 5)[4], True)
    expect("checked across segments", (10 in rows, rows.get(11, [])[:2]), (False, ["7,5", "1,0"]))


def test_rpc():
    cap = Capture()
    s = TcpStream(cap, 32102)
    s.send(struct.pack("!III", 5, 8, 1) + struct.pack("!q", 1234))                   # 4: request
    s.send(struct.pack("!III", 0, 0, 0xFFFFFFFE))                                    # 5: keepalive
    s.send(struct.pack("!III", 5, 17, 2) + struct.pack("!qqc", -1234, 1234, b"X"), to_server=False)  # 6: reply
    s.send(struct.pack("!III", 9, 0, 77))                                            # 7: unknown id
    s.send(bytes.fromhex("00 00 00 09 00 00 00 09 ff ff ff ff 00 00 00 01 00 00 00 01 78"), to_server=False)  # 8
    s.send(struct.pack("!III", 10, 0, 1) + struct.pack("!III", 11, 0, 3), cuts=(14,))  # 9, 10: two requests
    # A second connection: docs/PROTOCOL.md's error reply example, byte for byte, and the keepalive's bytes.
    t = TcpStream(cap, 32102, client_port=40003)                                     # 11, 12, 13
    t.send(struct.pack("!III", 5, 0, 77))                                            # 14
    t.send(bytes.fromhex("00 00 00 05 00 00 00 09 ff ff ff ff 00 00 00 01 00 00 00 01 78"), to_server=False)  # 15
    t.send(bytes.fromhex("00 00 00 00 00 00 00 00 ff ff ff fe"), to_server=False)    # 16
    path = f"{WORK}/rpc.pcap"
    cap.write(path)
    rows = fields(path, ["volley_rpc.sequence", "volley_rpc.message_id", "volley_rpc.kind", "volley_rpc.request_in",
                         "volley_rpc.error.code", "volley_rpc.error.message"])
    expect("rpc request", rows.get(4, [])[:3], ["5", "1", "request"])
    expect("rpc keepalive", rows.get(5, [])[:3], ["0", "4294967294", "keepalive"])
    expect("rpc reply matched", rows.get(6, [])[:4], ["5", "2", "reply", "4"])
    expect("rpc error reply", rows.get(8, []), ["9", "4294967295", "error reply", "7", "1", "x"])
    expect("rpc two requests over two segments", (rows.get(9, [])[:1], rows.get(10, [])[:3]), (["10"], ["11", "3", "request"]))
    expect("rpc error reply example", rows.get(15, []), ["5", "4294967295", "error reply", "14", "1", "x"])
    expect("rpc keepalive example", rows.get(16, [])[:3], ["0", "4294967294", "keepalive"])
    times = fields(path, ["volley_rpc.response_time"])
    expect("rpc response time", times.get(6), ["0.002"])


def test_goodbyes():
    """docs/PROTOCOL.md's goodbye of each framing, byte for byte, beside near
    misses that stay what they were: unknown type, fatal, a request."""
    cap = Capture()
    g = TcpStream(cap, 32101)
    g.send(bytes.fromhex("00 00 00 00 00 01 01"), to_server=False)                   # 4: gNB goodbye
    c = TcpStream(cap, 7777, client_port=40011)                                      # 5, 6, 7
    c.send(bytes.fromhex("00 00 05 02 00"), to_server=False)                         # 8: checked goodbye
    c.send(bytes.fromhex("00 00 06 02 00 00"), to_server=False)                      # 9: type 2 with a payload
    r = TcpStream(cap, 32102, client_port=40012)                                     # 10, 11, 12
    r.send(bytes.fromhex("00 00 00 00 00 00 00 00 ff ff ff fd"), to_server=False)    # 13: RPC goodbye
    g.send(bytes.fromhex("00 00 00 00 00 01 02"), to_server=False)                   # 14: gNB type 0, other body
    path = f"{WORK}/goodbyes.pcap"
    cap.write(path)
    rows = fields(path, ["_ws.col.Info", "_ws.expert.message", "volley_checked.type", "volley_rpc.kind"])
    expect("gnb goodbye", (rows.get(4, [""])[0].startswith("goodbye"), rows.get(4, ["", ""])[1]), (True, ""))
    expect("checked goodbye", (rows.get(8, [""])[0].startswith("goodbye"), rows.get(8, ["", "", ""])[1:3]),
           (True, ["", "2"]))
    expect("checked type 2 with a payload", "Unknown type" in rows.get(9, ["", ""])[1], True)
    expect("rpc goodbye", (rows.get(13, [""])[0].startswith("goodbye"), rows.get(13, [""] * 4)[3]), (True, "goodbye"))
    expect("gnb type 0 with another body", "other than the goodbye" in rows.get(14, ["", ""])[1], True)


def arq_data(conversation, sequence, payload, flags=0):
    p = bytearray(struct.pack("!IBBIHI", conversation, 1, flags, sequence, len(payload), 0) + payload)
    p[12:16] = struct.pack("!I", crc32c(bytes(p), 12))
    return bytes(p)


def test_arq():
    cap = Capture()
    example = bytes.fromhex("01 02 03 04 01 00 ff ff ff fe 00 02 51 f6 ab 9b 68 69")
    assert arq_data(0x01020304, 0xFFFFFFFE, b"hi") == example
    cap.udp(example)                                                                 # 1
    cap.udp(bytes.fromhex("00 00 00 07 02 00 00 00 00 64 00 20 00 00 00 00 00 00 00 01"
                          "00 00 00 00 00 00 00 00 df 2e 72 0c"), to_server=False)   # 2
    cap.udp(arq_data(7, 3, b"", flags=1))                                            # 3: end of stream
    corrupt = bytearray(arq_data(7, 4, b"abc"))
    corrupt[17] ^= 0x40
    cap.udp(bytes(corrupt))                                                          # 4
    cap.udp(b"\x00\x00\x00\x07\x01not an ARQ packet")                                # 5
    path = f"{WORK}/arq.pcap"
    cap.write(path)
    rows = fields(path, ["volley_arq.conversation", "volley_arq.type", "volley_arq.sequence", "volley_arq.length",
                         "volley_arq.crc32c.status", "volley_arq.payload", "volley_arq.end_of_stream"])
    expect("arq data example (heuristic)", rows.get(1), ["16909060", "1", "4294967294", "2", "good", "6869", "0"])
    expect("arq end of stream", [rows.get(3, [""] * 7)[i] for i in (2, 4, 6)], ["3", "good", "1"])
    expect("arq heuristic leaves corrupt and foreign datagrams alone", (4 in rows, 5 in rows), (False, False))
    acks = fields(path, ["volley_arq.cumulative", "volley_arq.window", "volley_arq.sack.held", "volley_arq.crc32c.status"])
    expect("arq ack example", acks.get(2), ["100", "32", "101", "good"])
    forced = fields(path, ["volley_arq.crc32c.status", "_ws.expert.message"], "-d", "udp.port==9001,volley_arq")
    expect("arq corrupt packet with Decode As", forced.get(4, [""])[0], "bad")


def test_arq_fec():
    # docs/PROTOCOL.md's FEC examples: a repair for "hi" and "yo!", and a report.
    cap = Capture()
    cap.udp(bytes.fromhex("00 00 00 01 03 00 00 00 00 00 02 01 00 00 00 15 38 77 17 d8 00 00 00 00 00 00 00 01"
                          "00 f3 00 00 00 7a 7a 00 00 00 00 f4 00 00 2d 4a 10 93 e8 9f 1f"))          # 1
    cap.udp(bytes.fromhex("00 00 00 01 04 00 00 00 00 08 00 00 00 28 00 00 00 03 2f c5 e2 6a"),
            to_server=False)                                                                    # 2
    truncated = bytes.fromhex("00 00 00 01 03 00 00 00 00 00 02 01 00 00 00 15 38 77 17 d8 00 00 00 00")
    cap.udp(truncated)                                                                          # 3
    path = f"{WORK}/arq_fec.pcap"
    cap.write(path)
    rows = fields(path, ["volley_arq.type", "volley_arq.fec.group", "volley_arq.fec.k", "volley_arq.fec.m",
                         "volley_arq.fec.index", "volley_arq.fec.symbol_length", "volley_arq.fec.protects",
                         "volley_arq.crc32c.status"])
    expect("arq FEC repair example (heuristic)", rows.get(1), ["3", "0", "2", "1", "0", "21", "0,1", "good"])
    expect("arq heuristic leaves a truncated repair alone", 3 in rows, False)
    reports = fields(path, ["volley_arq.fec.groups", "volley_arq.fec.expected", "volley_arq.fec.lost",
                            "volley_arq.crc32c.status"])
    expect("arq FEC report example", reports.get(2), ["8", "40", "3", "good"])


def test_fuzzed():
    rng = random.Random(7)
    cap = Capture()
    for port in (32101, 7777, 32102):
        s = TcpStream(cap, port, client_port=41000 + port % 1000)
        for _ in range(150):
            kind = rng.random()
            if kind < 0.4:
                blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
            elif port == 32101:
                t = rng.choice([0x1001, 0x1002, 0x1003, 0x1004, 0x8001, 0, 0x1234])
                blob = gnb_frame(t, bytes(rng.randrange(0, 80)))[: rng.randrange(1, 90)]
            elif port == 7777:
                blob = struct.pack("!I", rng.randrange(0, 64))[1:] + bytes([rng.randrange(3)]) + bytes(rng.randrange(0, 60))
            else:
                blob = struct.pack("!III", rng.randrange(20), rng.randrange(0, 64), rng.choice([1, 2, 0xFFFFFFFF, 0xFFFFFFFE])) + \
                    bytes(rng.randrange(0, 70))
            s.send(blob, to_server=rng.random() < 0.6)
    for _ in range(200):
        n = rng.choice([0, 1, 15, 16, 17, 31, 32, 33, 100])
        blob = bytearray(rng.randrange(256) for _ in range(n))
        if n >= 5 and rng.random() < 0.5:
            blob[4] = rng.choice([1, 2])
        cap.udp(bytes(blob))
    path = f"{WORK}/fuzzed.pcap"
    cap.write(path)
    text = tshark(path, "-V", "-d", "udp.port==9001,volley_arq")
    expect("fuzzed capture dissected", "Volley" in text, True)


def wait_for_port(path, process, what):
    for _ in range(1000):
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        if process.poll() is not None:
            break
        time.sleep(0.01)
    failures.append(f"{what} did not start")
    return 0


def test_netem_capture():
    """ARQ through `volley netem --pcap` with loss, corruption and reordering."""
    pcap = f"{WORK}/relay.pcapng"
    recv = subprocess.Popen([f"{BIN}/volley", "arq-recv", "--listen", "127.0.0.1:0", "--json",
                             "--port-file", f"{WORK}/recv.port"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    recv_port = wait_for_port(f"{WORK}/recv.port", recv, "arq-recv")
    relay = subprocess.Popen([f"{BIN}/volley", "netem", "--listen", "127.0.0.1:0", "--forward", f"127.0.0.1:{recv_port}",
                              "--up", "delay 2ms loss 10% corrupt 5%", "--down", "delay 2ms 1ms loss 10% reorder 20%",
                              "--seed", "3", "--pcap", pcap, "--json", "--no-progress", "--port-file", f"{WORK}/relay.port"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    relay_port = wait_for_port(f"{WORK}/relay.port", relay, "volley netem")
    send = subprocess.run([f"{BIN}/volley", "arq-send", "--to", f"127.0.0.1:{relay_port}", "--count", "300",
                           "--interval", "1", "--size", "100", "--json"], capture_output=True, text=True, timeout=120)
    expect("arq-send through the relay", send.returncode, 0)
    try:
        recv.wait(timeout=60)
        relay.send_signal(signal.SIGTERM)
        out = relay.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        recv.kill()
        relay.kill()
        failures.append("the ARQ transfer through the relay did not finish")
        return
    report = json.loads(out[out.index("{"):])
    up, down = report["up"], report["down"]
    rows = fields(pcap, ["frame.interface_name", "frame.comment", "volley_arq.crc32c.status"])
    counted = {}
    for iface, comment, status in rows.values():
        key = (iface, comment)
        counted[key] = counted.get(key, 0) + 1
    total = lambda name: sum(n for (i, _), n in counted.items() if i == name)  # noqa: E731
    marked = lambda name, text: sum(n for (i, c), n in counted.items() if i == name and text in c)  # noqa: E731
    expect("capture: packets received = the relay's packets in", total("received"), up["packets_in"] + down["packets_in"])
    expect("capture: packets sent = the relay's packets out", total("sent"), up["packets_out"] + down["packets_out"])
    expect("capture: marked lost = the relay's losses", marked("received", "netem: lost"), up["lost"] + down["lost"])
    expect("capture: marked corrupted = the relay's corruptions", marked("sent", "corrupted"), up["corrupted"])
    expect("capture: marked reordered = the relay's reorders", marked("sent", "reordered"), down["reordered"])
    expect("capture: the relay lost and corrupted something", (up["lost"] > 0, up["corrupted"] > 0), (True, True))
    expect("capture: the relay's own count", report["pcap"]["packets"], total("received") + total("sent"))
    good = sum(1 for _, _, status in rows.values() if status == "good")
    # A corrupted copy fails its CRC-32C (one flipped bit always does), so the heuristic leaves it alone.
    expect("capture: every packet but the corrupted copies is ARQ with a good CRC", good,
           total("received") + total("sent") - up["corrupted"])


for test in (test_gnb, test_gnb_info_and_fatal_frames, test_checked, test_rpc, test_goodbyes, test_arq, test_arq_fec, test_fuzzed, test_netem_capture):
    test()
for f in failures:
    print("FAIL", f)
if not failures:
    shutil.rmtree(WORK)
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
