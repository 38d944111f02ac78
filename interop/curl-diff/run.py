# SPDX-License-Identifier: MIT
"""Differential test of vega-curl against Debian's curl (issue 18).

Runs every row of table.txt twice, with curl and with vega-curl, against the same local servers
(vega-serve over http and https, tests/bats/vega-curl-flags.py over TCP and a Unix socket), each
run in a folder of its own, and compares the exit code, stdout (the body and the -w output) and
every file the run left in its folder. A row whose results differ must carry a reason; a row
with a reason whose results agree fails too (the reason is stale). Prints TAP; exits 1 if any row
fails, 77 if curl is not installed.

    command -p python3 interop/curl-diff/run.py [BUILD_DIR] [-j N] [-k REGEX] [-v]
"""
import argparse, base64, concurrent.futures, hashlib, os, re, shlex, shutil, socket, subprocess, sys, tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY_SERVER = os.path.join(ROOT, "tests", "bats", "vega-curl-flags.py")
RUN_TIMEOUT = 20  # seconds per tool run; rows that stall use -m far below it


class Row:
    def __init__(self, line_no, name, opts, args, reason):
        self.line_no, self.name, self.args, self.reason = line_no, name, args, reason
        self.seed, self.stdin, self.skip_out, self.mtime = [], None, False, False
        for o in opts:
            if o.startswith("seed:"):
                src, _, dst = o[5:].partition(">")
                self.seed.append((src, dst or src))
            elif o.startswith("stdin:"):
                self.stdin = o[6:]
            elif o == "noout":
                self.skip_out = True
            elif o == "mtime":
                self.mtime = True
            elif o:
                raise ValueError("line %d: unknown option %r" % (line_no, o))


def read_table(path):
    rows, names = [], set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = [c.strip() for c in line.split(" | ")]
            if len(cols) not in (3, 4):
                raise ValueError("line %d: want NAME | OPTIONS | ARGS [| REASON]" % n)
            name, opts, args = cols[:3]
            if name in names:
                raise ValueError("line %d: row %r twice" % (n, name))
            names.add(name)
            reason = cols[3] if len(cols) == 4 else ""
            rows.append(Row(n, name, [o for o in opts.split(",") if o and o != "-"], args,
                            reason))
    return rows


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_line(proc_log, pattern, secs=15):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        with open(proc_log, errors="replace") as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.05)
    with open(proc_log, errors="replace") as f:
        raise RuntimeError("no %r in %s after %ds:\n%s" % (pattern, proc_log, secs, f.read()))


def wait_port(port, secs=15):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on port %d after %ds" % (port, secs))


def tool(build, name):
    for p in (os.path.join(build, "cli", name), os.path.join(build, "cli", name, name),
              os.path.join(build, "bin", name)):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    sys.exit("curl-diff: no %s under %s (build it first)" % (name, build))


def make_fixtures(work):
    """The served folder (www/) and the read-only inputs rows refer to as {D}/NAME."""
    www, d = os.path.join(work, "www"), os.path.join(work, "data")
    os.makedirs(os.path.join(www, "dir"))
    os.makedirs(d)
    with open(os.path.join(www, "f.txt"), "w") as f:
        f.write("0123456789abcdefghij")
    with open(os.path.join(www, "dir", "g.txt"), "w") as f:
        f.write("in a folder\n")
    with open(os.path.join(www, "text.txt"), "w") as f:
        f.write("".join("line %d of some very repetitive text\n" % i for i in range(1, 2001)))
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(bytes(range(256)) * 256)  # 64 KiB, not a text type: never compressed
    open(os.path.join(www, "empty.txt"), "w").close()
    with open(os.path.join(www, "pre.txt"), "w") as f:
        f.write("precompressed " * 200)
    src = os.path.join(www, "pre.txt")
    subprocess.run(["gzip", "-k", "-n", src], check=True)
    subprocess.run(["brotli", "-k", src], check=True)
    subprocess.run(["zstd", "-q", "-k", src], check=True)
    when = time.mktime(time.strptime("2020-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")) - time.timezone
    for name in ("f.txt", "text.txt", "big.bin"):
        os.utime(os.path.join(www, name), (when, when))
    files = {
        "post.txt": "a=1\r\nb=2\n",
        "bin.dat": "x\0y\r\nz",
        "up.txt": "uploaded body\n",
        "json.txt": '{"k": [1, 2]}',
        "partial.txt": "0123456789",
        "complete.txt": "0123456789abcdefghij",
        "old.txt": "old\n",
        "jar.txt": "# Netscape HTTP Cookie File\n"
                   "127.0.0.1\tFALSE\t/\tFALSE\t0\tjarred\tyes\n"
                   "127.0.0.1\tFALSE\t/c/\tFALSE\t0\tdeeper\tpath\n"
                   "127.0.0.1\tFALSE\t/nope/\tFALSE\t0\tother\tpath\n"
                   "#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\thonly\t1\n"
                   "127.0.0.1\tFALSE\t/\tFALSE\t1\texpired\tgone\n",
        "netrc": "machine 127.0.0.1 login nuser password npass\n",
        "netrc-default": "machine example.com login a password b\ndefault login duser password dpass\n",
        "netrc-quoted": 'machine 127.0.0.1 login "q user" password "p\\"w"\n',
        "config.txt": "# a -K file\nsilent\nheader = \"X-From-Config: yes\"\n-A cfg-agent\n",
        "config-url.txt": "url = \"{P}/echo\"\noutput = fromcfg.txt\n",
        "config-data.txt": "data = \"a=b c\"\nrequest: PUT\n",
        "form.txt": "file body\n",
        "form.html": "<p>x</p>\n",
        "hdr.txt": "X-From-File: 1\n",
        "empty.txt": "",
        "big-post.txt": "0123456789abcde\n" * 70000,  # over curl's 1 MiB Expect threshold
        "etag.txt": '"abc"\n',
        "etag-lines.txt": '"x1"\r\n"x2"\n',
    }
    for name, body in files.items():
        with open(os.path.join(d, name), "w", newline="") as f:
            f.write(body)
    old = time.time() - 86400 * 365 * 20
    os.utime(os.path.join(d, "old.txt"), (old, old))
    # A file newer than everything served (-z FILE: nothing modified since).
    new = time.time() + 3600
    with open(os.path.join(d, "new.txt"), "w") as f:
        f.write("new\n")
    os.utime(os.path.join(d, "new.txt"), (new, new))
    return www, d


def make_cert(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key,
                    "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


class Servers:
    def __init__(self, build, work, www):
        self.procs = []
        serve = tool(build, "vega-serve")
        cert, key = make_cert(work)
        self.cert = cert
        self.sock = os.path.join(work, "py.sock")

        def start(args, log):
            f = open(log, "w")
            p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
            self.procs.append(p)
            return log

        s_log = start([serve, "-l", "127.0.0.1:0", "--no-http3", www],
                      os.path.join(work, "serve.log"))
        t_log = start([serve, "-l", "127.0.0.1:0", "--no-http3", "--tls", "--cert", cert,
                       "--key", key, www], os.path.join(work, "serve-tls.log"))
        p_log = start([sys.executable, "-u", PY_SERVER, self.sock],
                      os.path.join(work, "py.log"))
        # OpenSSL's own server held to one TLS version (-WWW: GET /NAME answers the file
        # www/NAME over HTTP/1.0), for the version, cipher and group rows.
        self.o12_port, self.o13_port = free_port(), free_port()
        for port, flag in ((self.o12_port, "-tls1_2"), (self.o13_port, "-tls1_3")):
            f = open(os.path.join(work, "s_server%s.log" % flag), "w")
            self.procs.append(subprocess.Popen(
                ["openssl", "s_server", "-accept", "127.0.0.1:%d" % port, flag, "-WWW",
                 "-cert", cert, "-key", key, "-quiet"], cwd=www, stdout=f,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        # --pinnedpubkey: the certificate's public key, as a sha256// pin and as files
        self.pub_pem, self.pub_der = os.path.join(work, "pub.pem"), os.path.join(work, "pub.der")
        pem = subprocess.run(["openssl", "x509", "-in", cert, "-pubkey", "-noout"], check=True,
                             capture_output=True).stdout
        with open(self.pub_pem, "wb") as f:
            f.write(pem)
        subprocess.run(["openssl", "pkey", "-pubin", "-in", self.pub_pem, "-outform", "der",
                        "-out", self.pub_der], check=True)
        with open(self.pub_der, "rb") as f:
            self.pin = "sha256//" + base64.b64encode(hashlib.sha256(f.read()).digest()).decode()
        pat = r"listening on 127\.0\.0\.1:(\d+)"
        self.s_port = wait_line(s_log, pat).group(1)
        self.t_port = wait_line(t_log, pat).group(1)
        self.p_port = wait_line(p_log, r"port (\d+)").group(1)
        self.dns_port = wait_line(p_log, r"dns port (\d+)").group(1)
        self.refused = free_port()
        for port in (self.o12_port, self.o13_port):
            wait_port(port)

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


def normalise_jar(text):
    # The expiry of a Max-Age cookie is "now + N": the second each tool ran in may differ.
    out = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) == 7 and f[4] not in ("0", "1") and f[4].isdigit():
            f[4] = "EXPIRY"
        out.append("\t".join(f))
    return "\n".join(out) + "\n"


UA = re.compile(rb"^(User-Agent: )(curl/[0-9.]+|vega-curl/\S+)\r?$", re.M | re.I)
DATE = re.compile(rb"^(Date: ).*$", re.M | re.I)


FIELD = re.compile(rb"^([A-Za-z0-9!#$%&'*+.^_`|~-]+):")


def sort_fields(b):
    """Each run of "Name: value" lines (an echoed request head, a -i or -D response head) in
    the order of the names, lines of one name keeping theirs: the order of fields of different
    names carries no meaning (RFC 9110 section 5.3), and curl and libvega order some
    differently (Content-Length before or after Content-Type, a -H Host first or last)."""
    lines, out, run = b.split(b"\n"), [], []
    for line in lines:
        if FIELD.match(line):
            run.append(line)
            continue
        out += sorted(run, key=lambda x: FIELD.match(x).group(1).lower())
        run = []
        out.append(line)
    out += sorted(run, key=lambda x: FIELD.match(x).group(1).lower())
    return b"\n".join(out)


def normalise_out(b):
    b = UA.sub(rb"\1TOOL", b)
    return sort_fields(DATE.sub(rb"\1DATE", b))


TRACE_START = re.compile(rb"^(\d\d:\d\d:\d\d\.\d{6} )?(== Info: |=> Send |<= Recv )")
TRACE_TITLE = re.compile(rb"^(?:\d\d:\d\d:\d\d\.\d{6} )?(=> Send|<= Recv) (header|data|SSL data), "
                         rb"\d+ bytes \(0x[0-9a-f]+\)$")
TRACE_INFO = re.compile(rb"^(\d\d:\d\d:\d\d\.\d{6} )?== Info: ")
# curl's notes of TLS messages ("TLSv1.3 (OUT), TLS handshake, Client hello (1):"): the
# handshake's sequence is deterministic against one server, and compared; a close_notify is not
# (curl 7.88 closes its connections after the transfer's trace has ended)
TRACE_TLS = re.compile(rb"^(?:\d\d:\d\d:\d\d\.\d{6} )?== Info: ((?:SSLv3|TLSv1\.[0-3]) \((?:IN|OUT)\), "
                       rb"TLS (?:handshake|change cipher|alert), .*:)$")
TRACE_LINE = re.compile(rb"^[0-9a-f]{4}: (.*)$")
TRACE_HEX = re.compile(rb"^((?:[0-9a-f]{2} |   ){16})")


def normalise_trace(b):
    """A --trace or --trace-ascii file, as far as it is deterministic: the records' kinds and
    contents without the "== Info:" notes (each tool has its own) but for those of the TLS
    handshake's messages, without the TLS records (random), the byte counts and offsets
    (the User-Agent's length moves them) and the times; consecutive records of one kind are
    joined (how a body is cut into reads differs), and the heads normalised as stdout is."""
    records, tls = [], []
    for line in b.split(b"\n"):
        m = TRACE_TITLE.match(line)
        if m:
            title = m.group(1) + b" " + m.group(2)
            if not records or records[-1][0] != title:
                records.append([title, [], b""])
            continue
        t = TRACE_TLS.match(line)
        if t and b"close notify" not in t.group(1):
            tls.append(b"tls: " + t.group(1))  # their own sequence: where they fall among
            continue  # the other records depends on when each tool reads the socket
        if TRACE_INFO.match(line):
            records.append([b"info", [], b""])
            continue
        d = TRACE_LINE.match(line)
        if d and records:
            h = TRACE_HEX.match(d.group(1))
            if h:  # --trace: the bytes, exactly
                records[-1][2] += bytes.fromhex(h.group(1).decode().replace(" ", ""))
            else:  # --trace-ascii: the text lines
                records[-1][1].append(d.group(1))
    out = tls
    for title, lines, raw in records:
        if title != b"info" and not title.endswith(b"SSL data"):  # TLS records are random
            out.append(title + b"\n" + normalise_out(raw + b"\n".join(lines)))
    return b"\n".join(out) + b"\n"


def snapshot(folder, mtime):
    """Every file under folder: relative path -> bytes (cookie jars normalised, the User-Agent
    and Date lines of -D files too), with its modification time in seconds when mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            rel = os.path.relpath(p, folder)
            with open(p, "rb") as f:
                data = f.read()
            if data.startswith(b"# Netscape HTTP Cookie File"):
                data = normalise_jar(data.decode("utf-8", "replace")).encode()
            elif TRACE_START.match(data):
                data = normalise_trace(data)
            else:
                data = normalise_out(data)
            if mtime:
                data += b" [mtime %d]" % int(os.stat(p).st_mtime)
            out[rel] = data
        for dn in dirnames:
            rel = os.path.relpath(os.path.join(dirpath, dn), folder)
            out.setdefault(rel + "/", b"(folder)")
    return out


def run_one(row, exe, label, subst, data_dir, base):
    cwd = tempfile.mkdtemp(prefix="%s-%s." % (label, re.sub(r"\W", "_", row.name)), dir=base)
    home = os.path.join(base, "home")
    for src, dst in row.seed:
        dstp = os.path.join(cwd, dst)
        os.makedirs(os.path.dirname(dstp), exist_ok=True)
        shutil.copy2(os.path.join(data_dir, src), dstp)
    args = row.args
    for k, v in dict(subst, ID=label + "-" + str(row.line_no)).items():
        args = args.replace("{%s}" % k, v)
    argv = [exe] + shlex.split(args)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LC_ALL": "C",
           "TZ": "UTC"}
    for k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"):  # a sanitizer build's settings
        if k in os.environ:
            env[k] = os.environ[k]
    # stdin is a pipe (as in `cat FILE | curl ...`), else /dev/null.
    feed = None
    if row.stdin:
        with open(os.path.join(data_dir, row.stdin), "rb") as f:
            feed = f.read()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, input=feed,
                           stdin=None if row.stdin else subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or b"", e.stderr or b""
    files = snapshot(cwd, row.mtime)
    for src, dst in row.seed:  # an untouched seed is no result
        with open(os.path.join(data_dir, src), "rb") as f:
            if files.get(dst) == normalise_out(f.read()):
                del files[dst]
    return {"rc": rc, "out": b"" if row.skip_out else normalise_out(out), "files": files,
            "err": err, "argv": argv}


def differences(a, b):
    diffs = []
    if a["rc"] != b["rc"]:
        diffs.append("exit code: curl %s, vega-curl %s" % (a["rc"], b["rc"]))
    if a["out"] != b["out"]:
        diffs.append("stdout:\n  curl:      %r\n  vega-curl: %r" % (a["out"][:600], b["out"][:600]))
    for name in sorted(set(a["files"]) | set(b["files"])):
        x, y = a["files"].get(name), b["files"].get(name)
        if x != y:
            diffs.append("file %s:\n  curl:      %r\n  vega-curl: %r" % (
                name, None if x is None else x[:400], None if y is None else y[:400]))
    return diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.environ.get("VEGA_BUILD_DIR", "build"))
    ap.add_argument("-j", type=int, default=16, help="rows run at once (default 16)")
    ap.add_argument("-k", default="", help="only rows whose name matches REGEX")
    ap.add_argument("-v", action="store_true", help="show both runs' stderr on a failure")
    ap.add_argument("--table", default=os.path.join(HERE, "table.txt"))
    a = ap.parse_args()
    build = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
    curl = shutil.which("curl")
    if not curl:
        print("1..0 # SKIP curl is not installed")
        return 77
    vega = tool(build, "vega-curl")
    rows = [r for r in read_table(a.table) if re.search(a.k, r.name)]
    work = tempfile.mkdtemp(prefix="vega-curl-diff.")
    servers = None
    try:
        www, data_dir = make_fixtures(work)
        os.makedirs(os.path.join(work, "home"))
        servers = Servers(build, work, www)
        subst = {
            "S": "http://127.0.0.1:%s" % servers.s_port,
            "T": "https://localhost:%s" % servers.t_port,
            "TIP": "https://127.0.0.1:%s" % servers.t_port,
            "P": "http://127.0.0.1:%s" % servers.p_port,
            "PP": servers.p_port,
            "SP": servers.s_port,
            "TP": servers.t_port,
            "REFUSED": "http://127.0.0.1:%d" % servers.refused,
            "SOCK": servers.sock,
            "CA": servers.cert,
            "DNSP": servers.dns_port,
            "O12": "https://localhost:%d" % servers.o12_port,
            "O13": "https://localhost:%d" % servers.o13_port,
            "PIN": servers.pin,
            "PUBPEM": servers.pub_pem,
            "PUBDER": servers.pub_der,
            "D": data_dir,
        }
        # The fixtures may name the servers too (-K files with url =).
        for fn in os.listdir(data_dir):
            p = os.path.join(data_dir, fn)
            with open(p, "rb") as f:
                body = f.read()
            if b"{" in body:
                for k, v in subst.items():
                    body = body.replace(("{%s}" % k).encode(), v.encode())
                st = os.stat(p)
                with open(p, "wb") as f:
                    f.write(body)
                os.utime(p, (st.st_atime, st.st_mtime))
        runs = os.path.join(work, "runs")
        os.makedirs(runs)

        # A row's two runs go at once too (each has its own folder and server state).
        side = concurrent.futures.ThreadPoolExecutor(max_workers=a.j)

        def timed(row, exe, label):
            t0 = time.monotonic()
            r = run_one(row, exe, label, subst, data_dir, runs)
            r["secs"] = time.monotonic() - t0
            return r

        def both(row):
            fv = side.submit(timed, row, vega, "vega")
            return row, timed(row, curl, "curl"), fv.result()

        failed, allowed, n, times = 0, 0, 0, []
        started = time.monotonic()
        print("1..%d" % len(rows), flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as ex:
            for row, c, v in ex.map(both, rows):
                n += 1
                times.append((max(c["secs"], v["secs"]), row.name, c["secs"], v["secs"]))
                diffs = differences(c, v)
                label = "%s (line %d)" % (row.name, row.line_no)
                if not diffs and not row.reason:
                    print("ok %d - %s" % (n, label))
                elif diffs and row.reason:
                    allowed += 1
                    print("ok %d - %s # allowed: %s" % (n, label, row.reason))
                else:
                    failed += 1
                    why = ("agrees with curl but carries a reason: " + row.reason) if not diffs \
                        else "differs from curl without a reason"
                    print("not ok %d - %s: %s" % (n, label, why))
                    print("#   args: %s" % shlex.join(c["argv"][1:]))
                    for d in diffs:
                        for line in d.splitlines():
                            print("#   " + line)
                    if a.v:
                        print("#   curl stderr: %r" % c["err"][-800:])
                        print("#   vega-curl stderr: %r" % v["err"][-800:])
                sys.stdout.flush()
        side.shutdown()
        print("# %d rows: %d agree, %d differ with a reason, %d failed, in %.1f s" % (
            n, n - allowed - failed, allowed, failed, time.monotonic() - started))
        for total, name, cs, vs in sorted(times, reverse=True)[:8 if a.v else 0]:
            print("#   slowest: %s %.2f s (curl %.2f s, vega-curl %.2f s)" % (name, total, cs, vs))
        return 1 if failed else 0
    finally:
        if servers:
            servers.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
