#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks QUIC key logs (SSLKEYLOGFILE, NSS format) against a capture, without Wireshark.

  keylog-check.py record LISTEN_PORT HOST PORT OUT [SECONDS]
      a UDP relay for one client on 127.0.0.1:LISTEN_PORT to HOST:PORT that appends every
      datagram to OUT ("c" or "s", the length, the bytes), until SIGTERM or SECONDS (default 60)
  keylog-check.py check OUT KEYLOG [KEYLOG...]
      decrypts every QUIC v1 packet of the capture (RFC 9001 section 5: Initial keys from the
      client's first Destination CID, Handshake, 0-RTT and 1-RTT keys from the logged traffic
      secrets, 1-RTT key updates followed with "quic ku") and checks: every packet opens, the
      ClientHello random names the secrets, and every given log has the same line for each
      secret it holds (two peers' logs agree). Prints what opened; exit 1 on any failure.

Written from RFC 9001 sections 5.1-5.4 and 6 and RFC 8446 section 7.1 (HKDF-Expand-Label); needs
python3-cryptography.
"""
import hashlib
import hmac
import signal
import socket
import struct
import sys
import time


V1_SALT = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")


def hkdf_extract(salt, ikm, h=hashlib.sha256):
    return hmac.new(salt, ikm, h).digest()


def hkdf_expand_label(secret, label, length, h=hashlib.sha256):
    full = b"tls13 " + label.encode()
    info = struct.pack(">HB", length, len(full)) + full + b"\x00"
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(secret, t + info + bytes([i]), h).digest()
        out += t
        i += 1
    return out[:length]


class Keys:
    """Packet protection keys of one traffic secret (RFC 9001 section 5.1)."""

    def __init__(self, secret, suite):
        self.secret, self.suite = secret, suite
        h = hashlib.sha384 if suite == "aes256" else hashlib.sha256
        klen = 16 if suite == "aes128" else 32
        self.h = h
        self.key = hkdf_expand_label(secret, "quic key", klen, h)
        self.iv = hkdf_expand_label(secret, "quic iv", 12, h)
        self.hp = hkdf_expand_label(secret, "quic hp", klen, h)

    def next(self):
        """The next key phase's keys (section 6.1); the header protection key stays."""
        n = Keys(hkdf_expand_label(self.secret, "quic ku", len(self.secret), self.h), self.suite)
        n.hp = self.hp
        return n

    def mask(self, sample):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        if self.suite == "chacha20":
            c = Cipher(algorithms.ChaCha20(self.hp, sample), mode=None).encryptor()
            return c.update(b"\x00" * 5)
        c = Cipher(algorithms.AES(self.hp), modes.ECB()).encryptor()
        return c.update(sample)[:5]

    def open(self, nonce, aad, ct):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
        a = ChaCha20Poly1305(self.key) if self.suite == "chacha20" else AESGCM(self.key)
        return a.decrypt(nonce, ct, aad)


def varint(b, i):
    n = 1 << (b[i] >> 6)
    v = b[i] & 0x3F
    for k in range(1, n):
        v = v << 8 | b[i + k]
    return v, i + n


def decode_pn(trunc, nbits, largest):
    expected = largest + 1
    win = 1 << nbits
    hwin, mask = win // 2, win - 1
    cand = (expected & ~mask) | trunc
    if cand <= expected - hwin and cand < (1 << 62) - win:
        return cand + win
    if cand > expected + hwin and cand >= win:
        return cand - win
    return cand


def unprotect(pkt, pn_off, keys, largest):
    """Removes header and packet protection; returns (first byte, pn, payload) or None."""
    sample = pkt[pn_off + 4:pn_off + 20]
    if len(sample) < 16:
        return None
    m = keys.mask(sample)
    first = pkt[0] ^ (m[0] & (0x0F if pkt[0] & 0x80 else 0x1F))
    pnl = (first & 3) + 1
    pnb = bytes(pkt[pn_off + i] ^ m[1 + i] for i in range(pnl))
    pn = decode_pn(int.from_bytes(pnb, "big"), 8 * pnl, largest)
    hdr = bytes([first]) + pkt[1:pn_off] + pnb
    nonce = bytes(a ^ b for a, b in zip(keys.iv, pn.to_bytes(12, "big")))
    try:
        return first, pn, keys.open(nonce, hdr, bytes(pkt[pn_off + pnl:]))
    except Exception:
        return None


def read_capture(path):
    recs, b = [], open(path, "rb").read()
    i = 0
    while i + 3 <= len(b):
        d, n = chr(b[i]), struct.unpack(">H", b[i + 1:i + 3])[0]
        recs.append((d, b[i + 3:i + 3 + n]))
        i += 3 + n
    return recs


def read_logs(paths):
    """{(label, random): secret} of all logs, each log's own, and the lines two logs disagree
    on."""
    merged, each, bad = {}, {}, []
    for p in paths:
        each[p] = {}
        for line in open(p):
            f = line.split()
            if len(f) != 3:
                continue
            k = (f[0], f[1].lower())
            if k in merged and merged[k] != f[2].lower():
                bad.append("%s: %s differs from another log" % (p, f[0]))
            merged[k] = each[p][k] = f[2].lower()
    return merged, each, bad


def client_hello_random(payload):
    """The random of the ClientHello in a client Initial's CRYPTO frame at offset 0."""
    i = 0
    while i < len(payload):
        t = payload[i]
        if t == 0:
            i += 1
            continue
        if t == 6:
            off, i = varint(payload, i + 1)
            ln, i = varint(payload, i)
            data = payload[i:i + ln]
            if off == 0 and data[:1] == b"\x01":
                return data[6:38].hex()
            i += ln
            continue
        return None  # PING, ACK ...: a ClientHello Initial starts with CRYPTO in practice
    return None


def parse_packet(dg, i, d, cid_len):
    """The packet at dg[i:]: (type, packet bytes, packet number offset, end) or None."""
    b = dg[i]
    if not b & 0x80:  # short header: the rest of the datagram; its DCID is the peer's CID
        n = cid_len["s" if d == "c" else "c"]
        return ("1rtt", bytearray(dg[i:]), 1 + (8 if n is None else n), len(dg))
    if struct.unpack(">I", dg[i + 1:i + 5])[0] != 1:
        return None  # not v1 (Version Negotiation, v2): not checked here
    typ = ["initial", "0rtt", "handshake", "retry"][(b >> 4) & 3]
    j = i + 6 + dg[i + 5]
    if cid_len[d] is None:
        cid_len[d] = dg[j]
    j += 1 + dg[j]
    if typ == "retry":
        return None
    if typ == "initial":
        tl, j = varint(dg, j)
        j += tl
    ln, j = varint(dg, j)
    return (typ, bytearray(dg[i:j + ln]), j - i, j + ln)


def open_packet(st, d, typ, pkt, pn_off):
    """Opens one packet with the keys of its direction and level; None when it does not."""
    space = (d, "app" if typ in ("0rtt", "1rtt") else typ)
    lg = st["largest"].get(space, -1)
    cands = []
    k = st["keys"].get((d, typ))
    if k is None and st["random"]:
        label = LABELS.get((d, typ))
        sec = st["logs"].get((label, st["random"])) if label else None
        if sec is not None:
            # 0-RTT precedes the ServerHello: its suite is the session's, so try each that fits
            suites = [st["suite"]] if st["suite"] else (
                ["aes256"] if len(sec) == 96 else ["aes128", "chacha20"])
            cands = [Keys(bytes.fromhex(sec), s) for s in suites]
    elif k is not None:
        cands = [k]
        if typ == "1rtt":
            prev = st["prev"].get(d)
            cands += ([prev] if prev else []) + [k.next()]
    for c in cands:
        res = unprotect(pkt, pn_off, c, lg)
        if res is None:
            continue
        if typ == "1rtt" and k is not None and c is cands[-1] and c is not k:
            st["prev"][d], st["keys"][(d, typ)] = k, c  # a key update (RFC 9001 section 6)
            st["updates"][d] += 1
        elif k is None:
            st["keys"][(d, typ)] = c
        st["largest"][space] = max(lg, res[1])
        return res
    return None


LABELS = {("c", "handshake"): "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
          ("s", "handshake"): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
          ("c", "0rtt"): "CLIENT_EARLY_TRAFFIC_SECRET",
          ("c", "1rtt"): "CLIENT_TRAFFIC_SECRET_0",
          ("s", "1rtt"): "SERVER_TRAFFIC_SECRET_0"}


def check(cap_path, log_paths):
    recs = read_capture(cap_path)
    logs, each, problems = read_logs(log_paths)
    if not recs or recs[0][0] != "c" or not recs[0][1][0] & 0x80:
        print("keylog-check: the capture does not start with a client Initial")
        return 1
    first = recs[0][1]
    init_secret = hkdf_extract(V1_SALT, bytes(first[6:6 + first[5]]))
    st = {"logs": logs, "random": None, "suite": None, "largest": {}, "prev": {},
          "updates": {"c": 0, "s": 0},
          "keys": {("c", "initial"): Keys(hkdf_expand_label(init_secret, "client in", 32), "aes128"),
                   ("s", "initial"): Keys(hkdf_expand_label(init_secret, "server in", 32), "aes128")}}
    cid_len = {"c": None, "s": None}
    opened, failed = {}, {}
    for d, dg in recs:
        i = 0
        while i < len(dg):
            p = parse_packet(dg, i, d, cid_len)
            if p is None:
                break
            typ, pkt, pn_off, i = p
            res = open_packet(st, d, typ, pkt, pn_off)
            name = "%s %s" % ("client" if d == "c" else "server", typ)
            if res is None:
                failed[name] = failed.get(name, 0) + 1
                continue
            opened[name] = opened.get(name, 0) + 1
            if typ == "initial" and d == "c" and st["random"] is None:
                st["random"] = client_hello_random(res[2])
            if typ == "initial" and d == "s" and st["suite"] is None:
                st["suite"] = server_hello_suite(res[2])
    for name in sorted(opened):
        print("keylog-check: %-18s %5d opened" % (name, opened[name]))
    for name in sorted(failed):
        print("keylog-check: %-18s %5d did NOT open" % (name, failed[name]))
    print("keylog-check: suite %s, 1-RTT key updates: client %d, server %d" %
          (st["suite"], st["updates"]["c"], st["updates"]["s"]))
    random = st["random"]
    if random is None:
        problems.append("no ClientHello found")
    else:
        mine = sorted(l for (l, r) in logs if r == random)
        print("keylog-check: ClientHello random %s...; logged: %s" % (random[:16], ", ".join(mine)))
        # every log has the connection's four secrets (the same, as read_logs checked)
        for p, lines in each.items():
            got = {l for (l, r) in lines if r == random}
            miss = {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                    "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"} - got
            if opened.get("client 0rtt"):
                miss |= {"CLIENT_EARLY_TRAFFIC_SECRET"} - got
            if miss:
                problems.append("%s lacks %s" % (p, ", ".join(sorted(miss))))
            else:
                print("keylog-check: %s: all %d secrets, agreeing with the other logs" %
                      (p.rsplit("/", 1)[-1], len(got)))
    for name in ("client 1rtt", "server 1rtt", "client handshake", "server handshake"):
        if not opened.get(name):
            problems.append("no %s packet opened" % name)
    if failed:
        problems.append("packets that did not open: %s" % failed)
    for p in problems:
        print("keylog-check: FAIL: " + p)
    return 1 if problems else 0


SUITES = {0x1301: "aes128", 0x1302: "aes256", 0x1303: "chacha20"}


def server_hello_suite(payload):
    i = 0
    while i < len(payload):
        t = payload[i]
        if t == 0:
            i += 1
            continue
        if t in (2, 3):  # ACK: skip it
            i += 1
            _, i = varint(payload, i)
            _, i = varint(payload, i)
            n, i = varint(payload, i)
            _, i = varint(payload, i)
            for _ in range(n):
                _, i = varint(payload, i)
                _, i = varint(payload, i)
            if t == 3:
                for _ in range(3):
                    _, i = varint(payload, i)
            continue
        if t == 6:
            off, i = varint(payload, i + 1)
            ln, i = varint(payload, i)
            data = payload[i:i + ln]
            if off == 0 and data[:1] == b"\x02":
                sid = data[38]
                return SUITES.get(struct.unpack(">H", data[39 + sid:41 + sid])[0])
            i += ln
            continue
        return None
    return None


def record(listen_port, host, port, out, seconds):
    down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    down.bind(("127.0.0.1", listen_port))
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.connect((host, port))
    f = open(out, "ab", buffering=0)
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *a: stop.__setitem__(0, True))
    client = None
    end = time.time() + seconds
    import select
    while not stop[0] and time.time() < end:
        r, _, _ = select.select([down, up], [], [], 0.2)
        for s in r:
            if s is down:
                data, client = down.recvfrom(65535)
                f.write(b"c" + struct.pack(">H", len(data)) + data)
                up.send(data)
            else:
                data = up.recv(65535)
                f.write(b"s" + struct.pack(">H", len(data)) + data)
                if client:
                    down.sendto(data, client)
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "record":
        return record(int(argv[2]), argv[3], int(argv[4]), argv[5],
                      float(argv[6]) if len(argv) > 6 else 60)
    if len(argv) >= 4 and argv[1] == "check":
        return check(argv[2], argv[3:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
