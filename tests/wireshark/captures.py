"""Writes pcap files from known bytes: TCP streams (with real sequence numbers,
so Wireshark reassembles them) and UDP datagrams, IPv4 between two test
addresses (198.18.0.1 client, 198.18.0.2 server)."""
import struct

CLIENT, SERVER = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])
LINKTYPE_IPV4 = 228


def crc32c(data, zero_at=None):
    crc = 0xFFFFFFFF
    for i, b in enumerate(data):
        if zero_at is not None and zero_at <= i < zero_at + 4:
            b = 0
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _ip(src, dst, proto, payload):
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0, src, dst)
    checksum = sum(struct.unpack("!10H", header))
    while checksum >> 16:
        checksum = (checksum & 0xFFFF) + (checksum >> 16)
    header = header[:10] + struct.pack("!H", ~checksum & 0xFFFF) + header[12:]
    return header + payload


class Capture:
    def __init__(self):
        self.packets = []
        self.time_us = 0

    def _add(self, ip_packet):
        self.time_us += 1000
        self.packets.append((self.time_us, ip_packet))

    def udp(self, payload, to_server=True, client_port=40001, server_port=9001):
        src, dst, sport, dport = (CLIENT, SERVER, client_port, server_port) if to_server else \
            (SERVER, CLIENT, server_port, client_port)
        self._add(_ip(src, dst, 17, struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, LINKTYPE_IPV4))
            for t, p in self.packets:
                f.write(struct.pack("<IIII", t // 1000000, t % 1000000, len(p), len(p)) + p)


class TcpStream:
    """One TCP connection in a Capture: handshake, then segments either way."""

    def __init__(self, capture, server_port, client_port=40000):
        self.capture, self.ports = capture, (client_port, server_port)
        self.seq = {True: 1000, False: 5000}  # next sequence number, by "sent to the server"
        self._segment(True, b"", 0x02)
        self.seq[True] += 1
        self._segment(False, b"", 0x12)
        self.seq[False] += 1
        self._segment(True, b"", 0x10)

    def _segment(self, to_server, payload, flags=0x18):
        sport, dport = self.ports if to_server else self.ports[::-1]
        src, dst = (CLIENT, SERVER) if to_server else (SERVER, CLIENT)
        tcp = struct.pack("!HHIIBBHHH", sport, dport, self.seq[to_server], self.seq[not to_server], 5 << 4, flags,
                          65535, 0, 0)
        self.capture._add(_ip(src, dst, 6, tcp + payload))
        self.seq[to_server] += len(payload)

    def send(self, data, to_server=True, cuts=()):
        """`data` in one segment, or cut at the given offsets into several."""
        edges = [0, *cuts, len(data)]
        for a, b in zip(edges, edges[1:]):
            self._segment(to_server, data[a:b])
