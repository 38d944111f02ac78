#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UDP ends for interop/h3/relay-test.sh: an echo server and a sender that reports what came back.

  udptool.py echo PORTFILE [--family 4|6] [--addr] [--factor F] [--secs S]
      binds a free port (written to PORTFILE), answers every datagram: the same bytes, or with
      --addr "IP PORT|" before them (the source it saw), or with --factor F a datagram of
      F times the size (a server ignoring the amplification limit); marks replies ECT(0) and
      replaces the first byte of a reply with the ECN codepoint it received when --ecn.
  udptool.py send HOST PORT COUNT [--size N] [--gap-ms G] [--ecn] [--quic-initial] [--wait S]
                 [--addr]
      sends COUNT datagrams (8-byte sequence number + filler), then prints one JSON object:
      sent, received, seqs (in arrival order), sources (distinct "IP PORT" from --addr echoes),
      flipped (bits that differ from what was sent, per reply), ecn (codepoints the echo saw).
"""
import json
import select
import socket
import struct
import sys
import time


def opt(args, name, default=None, flag=False):
    if name in args:
        i = args.index(name)
        if flag:
            del args[i]
            return True
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return False if flag else default


def payload(seq, size, quic_initial):
    body = struct.pack(">Q", seq) + bytes((seq + i) & 0xFF for i in range(max(0, size - 8)))
    if quic_initial:
        # A v1 long header of type Initial with an empty token whose Length covers the rest:
        # the relay's census counts it and it proves no address (RFC 9000 section 17.2.2).
        hdr = b"\xc0\x00\x00\x00\x01\x08" + b"\xaa" * 8 + b"\x00\x00"
        rest = body
        hdr += struct.pack(">H", 0x4000 | len(rest))
        return hdr + rest
    return body


def echo(args):
    fam = socket.AF_INET6 if opt(args, "--family", "4") == "6" else socket.AF_INET
    show_addr = opt(args, "--addr", flag=True)
    ecn = opt(args, "--ecn", flag=True)
    factor = float(opt(args, "--factor", "0"))
    secs = float(opt(args, "--secs", "30"))
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind(("::1" if fam == socket.AF_INET6 else "127.0.0.1", 0))
    if ecn:
        if fam == socket.AF_INET:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
        else:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 2)
    with open(args[0], "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([s], [], [], 0.2)
        if not r:
            continue
        data, anc, _, src = s.recvmsg(65536, 64)
        if factor:
            s.sendto(b"\xc0" + b"\x00" * (int(len(data) * factor) - 1), src)
            continue
        if ecn:
            tos = anc[0][2][0] if anc else 0
            data = bytes([tos & 3]) + data[1:]
        if show_addr:
            data = ("%s %d|" % (src[0], src[1])).encode() + data
        s.sendto(data, src)


def send(args):
    size = int(opt(args, "--size", "100"))
    gap = float(opt(args, "--gap-ms", "0.5")) / 1000
    ecn = opt(args, "--ecn", flag=True)
    quic = opt(args, "--quic-initial", flag=True)
    wait = float(opt(args, "--wait", "0.5"))
    addr = opt(args, "--addr", flag=True)
    host, port, count = args[0], int(args[1]), int(args[2])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if ecn:
        if fam == socket.AF_INET:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
        else:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 2)
    sent = {}
    out = {"sent": 0, "received": 0, "seqs": [], "sources": [], "flipped": [], "ecn": []}
    off = 18 if quic else 0

    def drain(deadline):
        while True:
            left = deadline - time.time()
            if left <= 0:
                return
            r, _, _ = select.select([s], [], [], left)
            if not r:
                return
            data = s.recv(65536)
            out["received"] += 1
            if addr and b"|" in data[:64]:
                src, data = data.split(b"|", 1)
                if src.decode() not in out["sources"]:
                    out["sources"].append(src.decode())
            if len(data) < off + 8:
                continue
            seq = struct.unpack(">Q", data[off:off + 8])[0]
            if ecn:
                out["ecn"].append(data[0])
                continue
            out["seqs"].append(seq)
            # Bits that differ from the datagram sent in the same position (meaningful when
            # nothing is lost or reordered: the corruption check).
            want = sent.get(len(out["seqs"]) - 1)
            if want is not None and len(want) == len(data):
                out["flipped"].append(sum(bin(a ^ b).count("1") for a, b in zip(want, data)))

    for i in range(count):
        p = payload(i, size, quic)
        sent[i] = p
        s.sendto(p, (host, port))
        out["sent"] += 1
        drain(time.time() + gap)
    drain(time.time() + wait)
    print(json.dumps(out))


if __name__ == "__main__":
    a = sys.argv[1:]
    if not a or a[0] not in ("echo", "send"):
        print(__doc__)
        sys.exit(2)
    (echo if a[0] == "echo" else send)(a[1:])
