#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Property test for byte ranges (RFC 9110 §14): random files, random Range headers (up to the
range limit and a little past it), sent to vega-serve on keep-alive connections (sometimes
pipelined), and every answer checked against what the RFC and vega-serve's documented choices
say it must be, byte for byte. Multipart bodies are parsed back with Python's email package
(a real MIME parser, not ours).

  ranges_prop.py VEGA_SERVE [-n CASES] [--seed N] [--driver uring|epoll]

Runs the server twice (file cache on, --no-cache), at its default worker count. Exit 0 when
every case held; otherwise prints the first failures with the seed and the request, exit 1.
Only loopback. Standard library only: run it with Debian's /usr/bin/python3."""

import argparse
import email.parser
import email.policy
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

RANGES_MAX = 16  # VEGA_HTTP_RANGES_MAX
SIZES = [1, 2, 100, 4096, 16383, 16384, 16385, 65535, 65537, 200_000, 1_000_003]


def make_tree(d, rng):
    files = {}
    for i, n in enumerate(SIZES):
        data = bytes(rng.getrandbits(8) for _ in range(min(n, 4096)))
        data = (data * (n // len(data) + 1))[:n]  # random enough, fast to make
        name = f"f{i}.bin"
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        files[name] = data
    return files


def gen_range(rng, size):
    """A Range value and the spec list it stands for (('ab', a, b) / ('a-', a) / ('-n', n))."""
    specs = []
    if size > 40000 and rng.random() < 0.5:
        # Many small ranges, pipelined: part heads and bytes pile up in the server's 16 KiB
        # output buffer and cross its end at every possible offset (where a room check that
        # wraps would write past it).
        for _ in range(rng.randrange(10, RANGES_MAX + 1)):
            a = rng.randrange(0, size - 4000)
            specs.append(("ab", a, a + rng.randrange(0, 1000)))
        return "bytes=" + ",".join(f"{s[1]}-{s[2]}" for s in specs), specs
    for _ in range(rng.choice([1, 1, 2, 3, 5, 8, RANGES_MAX, RANGES_MAX + 1, rng.randrange(1, 20)])):
        k = rng.random()
        edge = rng.choice([0, 1, size - 1, size, size + 1, size // 2, 16383, 16384, 65536])
        a = max(0, edge + rng.randrange(-3, 4)) if rng.random() < 0.5 else rng.randrange(0, size + 10)
        if k < 0.6:
            b = a + rng.choice([0, 1, rng.randrange(0, 3000), rng.randrange(0, size + 10)])
            specs.append(("ab", a, b))
        elif k < 0.8:
            specs.append(("a-", a))
        else:
            specs.append(("-n", rng.choice([0, 1, rng.randrange(1, size + 10)])))
    text = []
    for s in specs:
        if s[0] == "ab":
            text.append(f"{s[1]}-{s[2]}")
        elif s[0] == "a-":
            text.append(f"{s[1]}-")
        else:
            text.append(f"-{s[1]}")
    sep = rng.choice([",", ", ", " ,"]) if rng.random() < 0.3 else ","
    return "bytes=" + sep.join(text), specs


def expected(specs, size):
    """('full',) / ('416',) / ('one', (a, b)) / ('multi', [(a, b), ...]) per http.h's contract."""
    if len(specs) > RANGES_MAX:
        return ("full",)
    out = []
    for s in specs:
        if s[0] == "ab":
            if s[1] < size:
                out.append((s[1], min(s[2], size - 1)))
        elif s[0] == "a-":
            if s[1] < size:
                out.append((s[1], size - 1))
        elif s[1] > 0:
            out.append((max(0, size - s[1]), size - 1))
    if not out:
        return ("416",)
    if len(out) == 1:
        return ("one", out[0])
    if sum(b - a + 1 for a, b in out) > size:
        return ("full",)  # more than the file: vega-serve sends it whole (RFC 9110 §17.15)
    return ("multi", out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("server closed the connection")
        self.buf += d

    def response(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        fields = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            fields[k.strip().lower()] = v.strip()
        n = int(fields.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, fields, body

    def close(self):
        self.s.close()


def check(status, fields, body, want, data):
    size = len(data)
    if want[0] == "full":
        return status == 200 and body == data or f"want 200 and the whole file, got {status}"
    if want[0] == "416":
        ok = status == 416 and fields.get("content-range") == f"bytes */{size}"
        return ok or f"want 416 with bytes */{size}, got {status} {fields.get('content-range')}"
    if want[0] == "one":
        a, b = want[1]
        if status != 206 or fields.get("content-range") != f"bytes {a}-{b}/{size}":
            return f"want 206 bytes {a}-{b}/{size}, got {status} {fields.get('content-range')}"
        return body == data[a:b + 1] or "single range: wrong bytes"
    if status != 206:
        return f"want a 206 multipart, got {status}"
    ctype = fields.get("content-type", "")
    m = re.match(r'multipart/byteranges; boundary=("?)([^";]+)\1$', ctype)
    if not m:
        return f"bad Content-Type {ctype!r}"
    boundary = m.group(2).encode()
    # RFC 2046 §5.1.1: the body ends with the close delimiter.
    if not body.rstrip(b"\r\n").endswith(b"--" + boundary + b"--"):
        return "multipart body does not end with its close delimiter"
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        return "the email package does not see a multipart body"
    parts = list(msg.iter_parts())
    if len(parts) != len(want[1]):
        return f"want {len(want[1])} parts, the email package found {len(parts)}"
    for i, (part, (a, b)) in enumerate(zip(parts, want[1])):
        cr = part.get("Content-Range", "")
        if cr != f"bytes {a}-{b}/{size}":
            return f"part {i}: Content-Range {cr!r}, want bytes {a}-{b}/{size}"
        got = part.get_payload(decode=True)
        if got != data[a:b + 1]:
            return f"part {i} ({a}-{b}): {len(got)} bytes that are not the file's {b - a + 1}"
    return True


def start_server(serve, root, extra, driver):
    cmd = [serve, "-p", "0"] + extra + [root]
    if driver:
        cmd[1:1] = ["--driver", driver]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    line = p.stdout.readline().decode()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError(f"vega-serve did not start: {line!r}")
    return p, int(m.group(1))


def run(serve, files, root, extra, n, rng, driver, failures):
    p, port = start_server(serve, root, extra, driver)
    try:
        names = sorted(files)
        done = 0
        while done < n:
            c = Conn(port)
            for _ in range(rng.randrange(1, 40)):  # requests on this connection
                batch = []
                for _ in range(rng.choice([1, 1, 2, 3, 4, 6])):  # pipelined
                    name = rng.choice(names)
                    value, specs = gen_range(rng, len(files[name]))
                    batch.append((name, value, specs))
                c.send(b"".join(
                    f"GET /{nm} HTTP/1.1\r\nHost: x\r\nRange: {v}\r\n\r\n".encode()
                    for nm, v, _ in batch))
                for name, value, specs in batch:
                    data = files[name]
                    status, fields, body = c.response()
                    verdict = check(status, fields, body, expected(specs, len(data)), data)
                    done += 1
                    if verdict is not True:
                        failures.append(f"{' '.join(extra) or 'cache'}: GET /{name} "
                                        f"({len(data)} bytes) Range: {value}: {verdict}")
                        if len(failures) > 10:
                            return
            c.close()
        if p.poll() is not None:
            failures.append(f"vega-serve {' '.join(extra)} exited with {p.returncode}")
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        out = p.stdout.read().decode(errors="replace")
        if "ERROR: AddressSanitizer" in out or "runtime error:" in out or p.returncode not in (0, None):
            failures.append(f"vega-serve {' '.join(extra)} (exit {p.returncode}):\n{out[-4000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("serve")
    ap.add_argument("-n", "--cases", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--driver")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    root = tempfile.mkdtemp(prefix="vega-ranges-")
    failures = []
    try:
        files = make_tree(root, rng)
        for extra in ([], ["--no-cache"]):
            run(a.serve, files, root, extra, a.cases, rng, a.driver, failures)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(f"ranges_prop: FAILED (seed {a.seed}):")
        for f in failures[:10]:
            print("  " + f)
        return 1
    print(f"ranges_prop: {2 * a.cases} cases held (seed {a.seed}; files of {len(SIZES)} sizes, "
          f"cache on and off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
