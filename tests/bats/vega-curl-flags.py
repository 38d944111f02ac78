# SPDX-License-Identifier: MIT
# A small HTTP/1.1 server for vega-curl-flags.bats: /echo answers with the request head it got,
# /away?to=URL redirects there (302), /flaky/N answers 503 with "Retry-After: 0" to its first N
# requests and 200 "ok" after, /later answers 503 with "Retry-After: 100", /lm answers with a fixed Last-Modified whatever the conditions.
# /c/ANY/PATH?set=SET-COOKIE&set=...&to=URL answers with one Set-Cookie per set= (and a 302 to
# URL with to=; "@N@" in a set= value stands for N bytes of "v"), the body the Cookie fields it got; /cd?name=NAME answers with a
# Content-Disposition naming NAME (percent-decoded, sent as given); /form answers with the parts
# of a multipart/form-data body. For interop/curl-diff: /r/CODE?to=URL redirects with CODE,
# /chain/N redirects (302) to /chain/N-1 down to /echo, /status/CODE answers CODE with a body,
# /auth answers 401 with a Basic challenge unless an Authorization field came (then echoes it),
# /digest/ALGS/QOP checks HTTP Digest answers (see digest()),
# /echolen is /echo with an X-Echo-Body field (the body's length and SHA-256) for the body,
# /stall waits 5 s before answering, /deflate answers a zlib "deflate" body, /ct answers
# Content-Type: text/x-curl-diff; charset=utf-8, /etag?e=TAG answers 200 with "ETag: TAG" (304
# when an If-None-Match field names it; without e= no ETag), /peer answers with the client's
# address and port, /peer?in=LO-HI with its address and whether its port is in LO-HI. Each
# argument is a Unix socket ("@NAME": abstract) served too. A name server on a UDP port ("dns
# port N", printed after "port N") answers names under "vega-test" with 127.0.0.1, others with
# NXDOMAIN (--dns-servers).
import email.parser, email.policy, hashlib, http.server, re, socket, socketserver, sys, threading
import time
import urllib.parse, zlib

counts = {}


def form_parts(ctype, body):
    # The parts of a multipart/form-data body, parsed back with the email parser, boundary left
    # out: the request's type, then per part its Content-Disposition parameters, its
    # Content-Type and its bytes.
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
    out = ["type %s" % msg.get_content_type(),
           "ends-ok %s" % body.endswith(b"--" + msg.get_boundary().encode() + b"--\r\n")]
    for part in msg.iter_parts():
        out.append("part cd=%r ct=%r data=%r" % (
            part.get("Content-Disposition"), part.get("Content-Type"),
            part.get_payload(decode=True)))
    return ("\n".join(out) + "\n").encode()
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, extra=()):
        self.send_response(code)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        # A Content-Length body, or a chunked one (at most 1 MiB in all, 64 KiB a chunk).
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""
        body = b""
        while True:
            size = int(self.rfile.readline(100).split(b";")[0].strip() or b"0", 16)
            if size > 65536 or len(body) + size > 1 << 20:
                raise ValueError("chunk too large")
            if size == 0:
                while self.rfile.readline(1000) not in (b"\r\n", b"\n", b""):
                    pass
                return body
            body += self.rfile.read(size)
            self.rfile.readline(10)

    def do_GET(self):
        self.answer(self.read_body())

    def answer(self, body):
        p = self.path
        if p.startswith("/echolen"):
            # the head as /echo writes it, then the body's length and SHA-256 (large bodies)
            self.path = "/echo" + p[len("/echolen"):]
            self.headers["X-Echo-Body"] = "%d %s" % (len(body), hashlib.sha256(body).hexdigest())
            return self.answer(b"")
        if p.startswith("/echo"):
            # The tools' own User-Agent (their names and versions differ) reads "TOOL".
            head = "%s %s\n" % (self.command, p) + "".join(
                "%s: %s\n" % (k, re.sub(r"^(curl|vega-curl)/\S+$", "TOOL", v)
                               if k.lower() == "user-agent" else v)
                for k, v in self.headers.items())
            self.send(200, head.encode() + body)
        elif p.startswith("/away?to="):
            self.send(302, b"", [("Location", p[len("/away?to="):])])
        elif p.startswith("/flaky/"):
            with lock:
                counts[p] = counts.get(p, 0) + 1
                seen = counts[p]
            if seen <= int(p.split("/")[2]):
                self.send(503, b"busy\n", [("Retry-After", "0")])
            else:
                self.send(200, b"ok\n")
        elif p == "/later":
            self.send(503, b"busy\n", [("Retry-After", "100")])
        elif p.startswith("/c/"):
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(p).query)
            extra = [("Set-Cookie", re.sub(r"@(\d+)@", lambda m: "v" * int(m.group(1)), v))
                     for v in q.get("set", [])]
            got = "".join("cookie: %s\n" % v for v in self.headers.get_all("Cookie") or [])
            if "to" in q:
                self.send(302, b"", extra + [("Location", q["to"][0])])
            else:
                self.send(200, (got or "no cookie\n").encode(), extra)
        elif p.startswith("/cd?"):
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(p).query)
            self.send(200, b"cd body\n",
                      [("Content-Disposition", q["v"][0])] if "v" in q else [])
        elif p == "/form":
            self.send(200, form_parts(self.headers.get("Content-Type", ""), body))
        elif p.startswith("/r/"):
            code, _, to = p[len("/r/"):].partition("?to=")
            self.send(int(code), b"moved\n", [("Location", urllib.parse.unquote(to))])
        elif p.startswith("/chain/"):
            n = int(p.split("/")[2])
            self.send(302, b"", [("Location", "/chain/%d" % (n - 1) if n > 1 else "/echo")])
        elif p.startswith("/status/"):
            code = int(p.split("/")[2])
            self.send(code, b"" if code in (204, 304) else b"status %d\n" % code)
        elif p == "/auth":
            if "Authorization" in self.headers:
                self.send(200, ("auth %s\n" % self.headers["Authorization"]).encode())
            else:
                self.send(401, b"who?\n", [("WWW-Authenticate", 'Basic realm="diff"')])
        elif p.startswith("/digest/"):
            self.digest(p, body)
        elif p == "/stall":
            time.sleep(5)
            self.send(200, b"late\n")
        elif p == "/deflate":
            self.send(200, zlib.compress(b"deflated text\n" * 50),
                      [("Content-Encoding", "deflate"), ("Content-Type", "text/plain")])
        elif p == "/ct":
            self.send(200, b"typed\n", [("Content-Type", "text/x-curl-diff; charset=utf-8")])
        elif p.startswith("/etag"):
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(p).query, keep_blank_values=True)
            tag = q["e"][0] if "e" in q else None
            inm = self.headers.get("If-None-Match")
            if tag is not None and inm is not None and tag in [t.strip() for t in inm.split(",")]:
                self.send(304, b"", [("ETag", tag)])
            else:
                self.send(200, ("etag body; if-none-match: %s\n" % inm).encode(),
                          [("ETag", tag)] if tag is not None else [])
        elif p == "/peer":
            self.send(200, ("peer %s %d\n" % self.client_address[:2]).encode())
        elif p.startswith("/peer?in="):
            lo, _, hi = p[len("/peer?in="):].partition("-")
            port = self.client_address[1]
            self.send(200, ("peer %s, port %s %s-%s\n" % (
                self.client_address[0], "in" if int(lo) <= port <= int(hi) else "NOT in", lo,
                hi)).encode())
        elif p == "/lm":
            self.send(200, b"lm\n", [("Last-Modified", "Thu, 02 Jan 2020 03:04:05 GMT")])
        else:
            self.send(404, b"no\n")

    def digest(self, p, body):
        """/digest/ALGS/QOP[?...]: HTTP Digest (RFC 7616) with the password "Circle of Life",
        one challenge per algorithm in ALGS ("+"-separated, "basic" for a Basic one), qop
        QOP ("none": RFC 2069's form); "long=1" in the query: a 630-byte nonce. Answers 200
        with what it checked, else 401 again. QOP "auth-int" (or "auth,auth-int") checks
        H(entity-body) in A2 (RFC 7616 3.4.3); "userhash=1" in the query asks for the user name
        hashed (3.4.4)."""
        algs, qop = p.split("?")[0].split("/")[2:4]
        nonce, opaque, realm = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", "FQhe/qaU925k", \
            "http-auth@example.org"
        if "long=1" in p:  # a nonce over vega-curl's 512-byte bound
            nonce = (nonce + "A") * 14
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Digest "):
            f = dict((m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3))
                     for m in re.finditer(r'([\w-]+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))',
                                          auth[7:]))
            alg = f.get("algorithm", "MD5")
            hname = "sha256" if alg.upper().startswith("SHA-256") else "md5"
            h = lambda t: hashlib.new(hname, t.encode()).hexdigest()
            user = f.get("username")
            userhash = "userhash=1" in p
            if userhash:  # the answer names H(user:realm); ours is Mufasa
                ok_user = f.get("userhash") == "true" and user == h("Mufasa:" + realm)
                user = "Mufasa" if ok_user else "?"
            elif f.get("userhash", "false") != "false":
                user = "?"
            ha1 = h("%s:%s:%s" % (user, realm, "Circle of Life"))
            if alg.lower().endswith("-sess"):
                ha1 = h("%s:%s:%s" % (ha1, nonce, f.get("cnonce")))
            ha2 = h("%s:%s" % (self.command, f.get("uri")))
            if f.get("qop") == "auth-int":
                ha2 = h("%s:%s:%s" % (self.command, f.get("uri"),
                                      hashlib.new(hname, body).hexdigest()))
            if "qop" in f and f["qop"] not in qop.split(","):
                ha2 = "a qop not offered"
            if "qop" in f:
                want = h(":".join([ha1, nonce, f.get("nc", ""), f.get("cnonce", ""), f["qop"], ha2]))
            else:
                want = h("%s:%s:%s" % (ha1, nonce, ha2))
            ok = (f.get("response") == want and f.get("uri") == p and f.get("nonce") == nonce
                  and f.get("opaque") == opaque and (qop == "none") == ("qop" not in f))
            if ok:
                return self.send(200, b"digest ok %s %s %s %s [%s]\n" % (
                    user.encode(), alg.encode(), self.command.encode(),
                    f.get("qop", "-").encode(), body))
        elif auth.startswith("Basic ") and "basic" in algs:
            return self.send(200, b"basic ok %s [%s]\n" % (auth[6:].encode(), body))
        ch = []
        for a in algs.split("+"):
            if a == "basic":
                ch.append(("WWW-Authenticate", 'Basic realm="%s"' % realm))
                continue
            ch.append(("WWW-Authenticate", 'Digest realm="%s", %snonce="%s", %sopaque="%s"%s' % (
                realm, "" if qop == "none" else 'qop="%s", ' % qop, nonce,
                "" if a == "default" else "algorithm=%s, " % a, opaque,
                ", userhash=true" if "userhash=1" in p else "")))
        self.send(401, b"who? (%d bytes came)\n" % len(body), ch)

    do_POST = do_GET
    do_PUT = do_GET
    do_HEAD = do_GET
    do_DELETE = do_GET
    do_PATCH = do_GET
    do_OPTIONS = do_GET


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


# The same handler on each Unix socket named in argv ("@NAME": the abstract namespace), for
# --unix-socket and --abstract-unix-socket.
for path in sys.argv[1:]:
    u = UnixServer("\0" + path[1:] if path.startswith("@") else path, H)
    threading.Thread(target=u.serve_forever, daemon=True).start()


def dns_answer(q):
    """A name server for --dns-servers: names under "vega-test" have the A record 127.0.0.1
    (and no AAAA); every other name is NXDOMAIN. None for a query it cannot read."""
    if len(q) < 12:
        return None
    at, labels = 12, []
    while at < len(q) and q[at] != 0:
        n = q[at]
        if n > 63 or at + 1 + n > len(q):
            return None
        labels.append(q[at + 1:at + 1 + n].decode("ascii", "replace").lower())
        at += 1 + n
    if at + 5 > len(q):
        return None
    qtype = int.from_bytes(q[at + 1:at + 3], "big")
    ours = bool(labels) and labels[-1] == "vega-test"
    head = q[:2] + bytes([0x81, 0x80 if ours else 0x83]) + q[4:6]  # QR RD, RA; NXDOMAIN
    question = q[12:at + 5]
    if ours and qtype == 1:
        return head + b"\0\1\0\0\0\0" + question + bytes(
            [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1])
    return head + b"\0\0\0\0\0\0" + question


def dns_serve(sock):
    while True:
        q, peer = sock.recvfrom(512)
        a = dns_answer(q)
        if a:
            sock.sendto(a, peer)


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("port", s.server_address[1], flush=True)
dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.bind(("127.0.0.1", 0))
threading.Thread(target=dns_serve, args=(dns,), daemon=True).start()
print("dns port", dns.getsockname()[1], flush=True)
s.serve_forever()
