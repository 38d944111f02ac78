#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Purity check of a sans-I/O core: no clock, sockets, threads, file I/O, environment or
randomness inside, as a test rather than a convention (docs/STYLE.md, "Sans-I/O cores").

Two checks, each a CTest test per core (tests/purity/CMakeLists.txt):

  symbols   What the core's object files need from outside: `nm --undefined-only` of every
            object of the core, less what the core and the layers it may use (its manifest:
            base, crypto for quic, http for http1, ...) define. Each remaining symbol must be
            in tests/purity/<core>.allow (or toolchain.allow). A symbol of the FORBIDDEN table
            below fails with its reason even when listed, unless its allow-list line carries a
            "VIOLATION: <why, where>" comment (a known violation, listed until fixed).
            The functions of the lower layers that the core calls are followed too (function by
            function, from `objdump -dr`), so that calling vega_now() (lib/base/clock.c, the
            clock) counts as reading the clock.
  includes  No file of lib/<core>/ includes, directly or through the public and lower-layer
            headers it includes, a header of the runtime, I/O or TLS layers (<vega/rt.h>,
            <vega/io.h>, <vega/stream.h>, <vega/tls.h>, <vega/sync.h>, <vega/fs.h>, ...,
            "rt_int.h", ...) or a system header that exists only for threads, files, event loops
            or randomness (<pthread.h>, <unistd.h>, ...). Exceptions: an allow-list line
            "include lib/<core>/<file> <header>  # VIOLATION: ...".

Usage: check.py symbols|includes --manifest FILE --allow-dir DIR [--source-root DIR]
                [--expect-fail "SYM|HEADER ..."]
The manifest is written by CMake (file(GENERATE)) with one line per layer, the core first:
    core <name>
    sanitized 0|1
    layer <name> <source dir> <object>;<object>;...
Under sanitizer and fuzz builds (sanitized 1) the instrumentation's symbols (__asan_, __ubsan_,
__tsan_, __sanitizer_, __sancov_ ...) are allowed.
--expect-fail (the checker's own test) inverts the result: the check must fail, and report each
listed symbol or header.
Exit status: 0 pass, 1 fail, 2 usage or environment error.
"""
import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys

# ---- what a core must never need --------------------------------------------------------------

FORBIDDEN = [
    ("the clock", "time comes in as the `now` argument of every call",
     "clock_gettime clock_getres gettimeofday time clock timespec_get ftime times "
     "nanosleep clock_nanosleep sleep usleep"),
    ("sockets", "the driver owns the sockets; a core reads and writes caller buffers",
     "socket socketpair connect bind listen accept accept4 send sendto sendmsg sendmmsg recv "
     "recvfrom recvmsg recvmmsg setsockopt getsockopt shutdown getaddrinfo getnameinfo "
     "gethostbyname gethostbyname2 gethostbyaddr res_* "),
    ("file I/O", "a core sees bytes, never files or descriptors",
     "read readv pread pread64 preadv preadv2 write writev pwrite pwrite64 pwritev pwritev2 "
     "open open64 openat openat64 openat2 creat creat64 close close_range dup dup2 dup3 pipe "
     "pipe2 fopen fopen64 fdopen freopen fclose fread fwrite fgets fputs fscanf "
     "stat stat64 fstat fstat64 lstat lstat64 fstatat fstatat64 statx __xstat __xstat64 "
     "__fxstat __fxstat64 __lxstat __lxstat64 access faccessat opendir fdopendir readdir "
     "readdir64 closedir unlink unlinkat rename mkdir rmdir sendfile sendfile64 splice tee "
     "ioctl fcntl fcntl64 fsync fdatasync ftruncate truncate mmap64 syscall"),
    ("file I/O (through libcrypto)", "loading certificates or keys from files is the caller's job",
     "X509_STORE_load_* X509_STORE_set_default_paths X509_LOOKUP_* BIO_new_file BIO_new_fp "
     "BIO_read_filename PEM_read_X509 PEM_read_PrivateKey PEM_read_PUBKEY"),
    ("threads", "a core is used by one task at a time and keeps no thread state",
     "pthread_* thrd_* mtx_* cnd_* tss_* call_once sem_* __tls_get_addr"),
    ("event loops", "waiting is the driver's job",
     "epoll_* io_uring_* __io_uring_* poll ppoll select pselect eventfd signalfd timerfd_* "
     "inotify_*"),
    ("the environment", "configuration comes in through the core's settings",
     "getenv secure_getenv setenv unsetenv putenv"),
    ("randomness", "randomness must come from hooks (callbacks or caller bytes)",
     "rand rand_r random random_r srand srandom drand48 erand48 lrand48 nrand48 mrand48 jrand48 "
     "getrandom getentropy arc4random arc4random_buf arc4random_uniform RAND_bytes "
     "RAND_bytes_ex RAND_priv_bytes RAND_priv_bytes_ex"),
]

# Lower layers a core may build on; the I/O layers never.
IO_LAYERS = {"rt", "io", "tls", "http_server", "http_client", "test", "drive"}

# Headers a core must not include (directly or through the headers it includes).
FORBIDDEN_PUBLIC = {
    "vega/rt.h": "the runtime", "vega/sync.h": "task synchronisation",
    "vega/io.h": "sockets", "vega/dns.h": "the resolver", "vega/fs.h": "files",
    "vega/process.h": "processes", "vega/stream.h": "streams", "vega/codec.h": "framed streams",
    "vega/tls.h": "TLS streams", "vega/http_server.h": "the HTTP server",
    "vega/http_client.h": "the HTTP client", "vega/test.h": "libvega-test",
    "vega/vega.h": "the umbrella header (it includes the runtime and I/O)",
}
FORBIDDEN_SYSTEM = {
    "pthread.h": "threads", "threads.h": "threads", "semaphore.h": "threads",
    "sys/epoll.h": "event loops", "liburing.h": "event loops", "poll.h": "event loops",
    "sys/select.h": "event loops", "sys/eventfd.h": "event loops", "sys/timerfd.h": "timers",
    "sys/signalfd.h": "signals", "signal.h": "signals", "sys/random.h": "randomness",
    "unistd.h": "system calls", "sys/syscall.h": "system calls", "fcntl.h": "file I/O",
    "sys/stat.h": "file I/O", "dirent.h": "file I/O", "sys/sendfile.h": "file I/O",
}

SANITIZER_PREFIXES = ("__asan_", "__ubsan_", "__tsan_", "__msan_", "__lsan_", "__sanitizer_",
                      "__sancov_", "__start___sancov", "__stop___sancov")

CODE_SECTION = re.compile(r"^\.text(\.|$)")
SKIP_SECTION = re.compile(r"^\.(debug|eh_frame|note|comment|rela|group|llvm_addrsig|stack)")


def forbidden_reason(sym):
    """(category, reason) when sym is forbidden, else None."""
    for cat, why, pats in FORBIDDEN:
        for p in pats.split():
            if fnmatch.fnmatchcase(sym, p):
                return cat, why
    return None


def normalize(sym):
    """The libc function behind a fortified or versioned alias: __memcpy_chk -> memcpy."""
    m = re.fullmatch(r"__(\w+)_chk", sym)
    if m:
        return m.group(1)
    m = re.fullmatch(r"__isoc(?:99|23)_(\w+)", sym)
    if m:
        return m.group(1)
    return sym


# ---- allow-lists ------------------------------------------------------------------------------

class Entry:
    def __init__(self, pattern, comment, where, header=None):
        self.pattern, self.comment, self.where, self.header = pattern, comment, where, header
        self.violation = "VIOLATION:" in comment
        self.used = False

    def matches(self, name):
        return fnmatch.fnmatchcase(name, self.pattern)


def read_allow(path, errors):
    """Symbol entries and include entries of one allow-list file."""
    syms, incs = [], []
    with open(path, encoding="utf-8") as f:
        comment_block = ""
        for n, raw in enumerate(f, 1):
            line, _, comment = raw.rstrip("\n").partition("#")
            comment = comment.strip()
            words = line.split()
            if not words:
                # A comment line gives its text to the entries right below it.
                comment_block = (comment_block + " " + comment).strip() if comment else ""
                continue
            where = "%s:%d" % (os.path.relpath(path, SOURCE_ROOT), n)
            text = (comment_block + " " + comment).strip()
            if words[0] == "include":
                if len(words) != 3:
                    errors.append("%s: expected `include lib/<core>/<file> <header>`" % where)
                    continue
                incs.append(Entry(words[1], text, where, header=words[2].strip("<>\"")))
            else:
                for w in words:
                    syms.append(Entry(w, text, where))
    return syms, incs


# ---- object files -----------------------------------------------------------------------------

SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NM = os.environ.get("NM") or "nm"
OBJDUMP = os.environ.get("OBJDUMP") or "objdump"


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p.stdout


def nm_object(path):
    """(defined global symbols, undefined symbols) of one object file."""
    defined, undefined = set(), set()
    for line in run([NM, "-P", path]).splitlines():
        parts = line.split()  # "name type [value size]"
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):  # undefined, weak undefined
            undefined.add(name)
        elif kind.isupper() or kind in ("u", "i"):
            defined.add(name)
    return defined, undefined


class ObjGraph:
    """Function-level references of one object file, from `objdump -t -dr` and `objdump -r`.

    refs: node -> the names it references. A node is a function, or a data section (its
    relocations: tables of function pointers); global functions are named as they are, local
    (static) ones and sections "<object>::<name>", so that they never clash between objects.
    data: global data symbol -> the node of its section."""

    SYM = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\s+[0-9a-f]+\s+(?:\.(?:hidden|protected|internal)"
                     r"\s+)?(\S+)$")
    FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
    RELOC = re.compile(r"^\s+[0-9a-f]+:\s+R_\S+\s+(\S+)")  # GNU and LLVM objdump
    # A direct call or jump inside the object needs no relocation: take the target objdump shows.
    TARGET = re.compile(r"\s(?:0x)?[0-9a-f]+ <([^>+]+)(?:\+0x[0-9a-f]+)?>\s*$")

    def __init__(self, path):
        self.path = path
        self.refs = {}
        self.data = {}
        self.local = set()
        self.sym_section = {}
        self.func_at = {}       # (section, offset) -> function
        self.func_names = set()
        self._parse()

    def key(self, name):
        return self.path + "::" + name if name in self.local else name

    def section_node(self, section):
        return self.path + "::" + section

    def _resolve(self, ref):
        """A relocation's symbol (with its addend) as a node or symbol name; None for nothing."""
        m = re.fullmatch(r"(.+?)([+-]0x[0-9a-f]+)?", ref)
        name, off = m.group(1), int(m.group(2) or "0", 16)
        if name.startswith("."):
            if SKIP_SECTION.match(name):
                return None
            if CODE_SECTION.match(name):
                # PC-relative addends point a few bytes before the target.
                for o in (off, off + 4, off + 8):
                    f = self.func_at.get((name, o))
                    if f:
                        return self.key(f)
                return None
            if name in self.sym_section and self.sym_section[name] != name:
                return self.section_node(self.sym_section[name])  # a local label: .LC0
            return self.section_node(name)
        sec = self.sym_section.get(name)
        if sec and not CODE_SECTION.match(sec) and not SKIP_SECTION.match(sec):
            return self.section_node(sec)
        return self.key(name)

    def _parse(self):
        out = run([OBJDUMP, "-t", "-dr", "--no-show-raw-insn", self.path]).splitlines()
        in_table = False
        for line in out:
            if line.startswith("SYMBOL TABLE:"):
                in_table = True
                continue
            if in_table and not line.strip():
                break
            m = self.SYM.match(line) if in_table else None
            if not m or m.group(3) in ("*UND*", "*ABS*"):
                continue
            value, flags, section, name = int(m.group(1), 16), m.group(2), m.group(3), m.group(4)
            if flags[0] == "l":
                self.local.add(name)
            self.sym_section[name] = section
            if "F" in flags:
                self.func_at[(section, value)] = name
                self.func_names.add(name)
            elif flags[0] != "l" and not CODE_SECTION.match(section):
                self.data[name] = self.section_node(section)
        section, cur = None, None
        for line in out:
            m = re.match(r"^Disassembly of section (\S+):", line)
            if m:
                section, cur = m.group(1), None
                continue
            m = self.FUNC.match(line)
            if m:
                name = self.func_at.get((section, int(m.group(1), 16)), m.group(2))
                cur = self.key(name)
                self.refs.setdefault(cur, set())
                continue
            if cur is None:
                continue
            m = self.RELOC.match(line)
            if m:
                r = self._resolve(m.group(1))
                if r and r != cur:
                    self.refs[cur].add(r)
                continue
            m = self.TARGET.search(line)
            if m and m.group(1) in self.func_names:
                r = self.key(m.group(1))
                if r != cur:
                    self.refs[cur].add(r)
        sec = None
        for line in run([OBJDUMP, "-r", self.path]).splitlines():
            m = re.match(r"^RELOCATION RECORDS FOR \[(\S+)\]:", line)
            if m:
                sec = m.group(1)
                if CODE_SECTION.match(sec) or SKIP_SECTION.match(sec):
                    sec = None
                continue
            m = re.match(r"^[0-9a-f]+\s+R_\S+\s+(\S+)", line)
            if sec and m:
                node = self.section_node(sec)
                r = self._resolve(m.group(1))
                s = self.refs.setdefault(node, set())
                if r and r != node:
                    s.add(r)


# ---- the symbol check -------------------------------------------------------------------------

def short(path):
    """The object's name under lib/: quic/conn.c.o."""
    return os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)


def check_symbols(man, allow, tool_allow, report):
    core = man["core"]
    layers = man["layers"]
    for name, _, _ in layers[1:]:
        if name in IO_LAYERS:
            report.fail(name, "layering: the core %s sees lib/%s, an I/O layer (its include "
                        "paths in lib/CMakeLists.txt); a core may use only base and other cores"
                        % (core, name))
    core_objs = layers[0][2]
    dep_objs = [o for _, _, objs in layers[1:] for o in objs]
    missing = [o for o in core_objs + dep_objs if not os.path.exists(o)]
    if missing:
        report.error("object files missing (build first): " + " ".join(missing[:5]))
        return
    defined_by = {}
    undef = {}
    for o in core_objs + dep_objs:
        d, u = nm_object(o)
        for s in d:
            defined_by.setdefault(s, o)
        undef[o] = u

    # What the core's objects need from outside the core and its layers.
    external = {}
    into_deps = {}
    for o in core_objs:
        for s in undef[o]:
            if s in defined_by:
                if defined_by[s] in dep_objs:
                    into_deps.setdefault(s, set()).add(o)
                continue
            external.setdefault(s, set()).add(o)

    # Function-level reachability through the lower layers: which external symbols a lower
    # layer's function that the core calls ends up needing.
    graphs = {}
    use_objdump = shutil.which(OBJDUMP) is not None
    if not use_objdump:
        report.note("objdump not found: lower-layer functions are not followed")
    reached = {}  # external symbol -> (dep function path)
    if use_objdump and into_deps:
        for o in dep_objs:
            graphs[o] = ObjGraph(o)
        refs, data = {}, {}
        for g in graphs.values():
            for k, v in g.refs.items():
                refs.setdefault(k, set()).update(v)
            data.update(g.data)
        for root in sorted(into_deps):
            start = data.get(root, root)
            seen = {start}
            stack = [(start, [root])]
            while stack:
                node, path = stack.pop()
                for r in sorted(refs.get(node, ())):
                    r = data.get(r, r)
                    if r in seen:
                        continue
                    seen.add(r)
                    if r in refs:
                        stack.append((r, path + [r]))
                    elif "::" not in r and r not in defined_by:
                        reached.setdefault(r, (root, path))
    sanitized = man["sanitized"]
    n_total = sum(len(undef[o]) for o in core_objs)

    def allowed(sym):
        hits = [e for e in allow + tool_allow if e.matches(sym) or e.matches(normalize(sym))]
        for e in hits:
            e.used = True
        return hits

    def where_of(objs):
        names = sorted(short(o) for o in objs)
        return ", ".join(names[:4]) + (" and %d more" % (len(names) - 4) if len(names) > 4 else "")

    violations = []
    for sym in sorted(external):
        if sanitized and sym.startswith(SANITIZER_PREFIXES):
            continue
        base = normalize(sym)
        hits = allowed(sym)
        bad = forbidden_reason(base)
        where = where_of(external[sym])
        v = [e for e in hits if e.violation]
        if v:
            violations.append((sym, v[0]))
            continue
        if bad:
            report.fail(sym, "FORBIDDEN: %s: %s (%s); needed by %s" % (sym, bad[0], bad[1], where))
            if hits:
                report.fail(sym, "  %s allows it without a `VIOLATION: <why, where>` comment"
                            % hits[0].where)
        elif sym.startswith("vega_") or sym.startswith("vega__"):
            report.fail(sym, "layering: %s is defined neither by %s nor by the layers it may use "
                        "(%s); needed by %s" % (sym, core, ", ".join(n for n, _, _ in layers[1:])
                                                or "none", where))
        elif not hits:
            report.fail(sym, "not in the allow-list: %s, needed by %s. If it is pure (no clock, "
                        "I/O, threads, environment or randomness), add it to "
                        "tests/purity/%s.allow with the reason" % (sym, where, core))
    for sym in sorted(set(reached) - set(external)):
        root, path = reached[sym]
        bad = forbidden_reason(normalize(sym))
        if not bad or (sanitized and sym.startswith(SANITIZER_PREFIXES)):
            continue
        hits = [e for e in allowed(sym) if e.violation]
        chain = " -> ".join(p.split("::")[-1] for p in path)
        if hits:
            violations.append((sym, hits[0]))
            continue
        report.fail(sym, "FORBIDDEN: %s: %s (%s); reached through a lower layer: %s calls %s "
                    "(%s), which needs %s" % (sym, bad[0], bad[1], where_of(into_deps[root]),
                                              chain, short(defined_by.get(root, "?")),
                                              sym))
    by_entry = {}
    for sym, e in violations:
        by_entry.setdefault((e.where.rsplit(":", 1)[0], e.comment), []).append(sym)
    for (where, comment), syms in sorted(by_entry.items()):
        report.note("known VIOLATION (%s): %s. %s" % (where, " ".join(syms), comment))
    unused = [e.pattern for e in allow if not e.used and not e.header]
    if unused:
        report.note("allow-list entries this build does not need: " + " ".join(unused))
    report.summary = ("%s: %d objects, %d undefined symbols, %d from outside the core and its "
                      "layers (%s), %d lower-layer functions followed; %d known violation(s)"
                      % (core, len(core_objs), n_total, len(external),
                         ", ".join(n for n, _, _ in layers[1:]) or "none", len(into_deps),
                         len(violations)))


# ---- the include check ------------------------------------------------------------------------

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check_includes(man, src_root, inc_allow, report):
    core = man["core"]
    layers = man["layers"]
    core_dir = layers[0][1]
    lib_dir = os.path.join(src_root, "lib")
    public = os.path.join(lib_dir, "include")
    search = [d for _, d, _ in layers]
    io_headers = {}
    for layer in sorted(IO_LAYERS):
        d = os.path.join(lib_dir, layer)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.endswith(".h"):
                    io_headers[f] = layer

    def resolve(kind, name, from_dir):
        if name.startswith("vega/"):
            p = os.path.join(public, name)
            return p if os.path.exists(p) else None
        dirs = ([from_dir] if kind == '"' else []) + search
        for d in dirs:
            p = os.path.join(d, name)
            if os.path.exists(p):
                return p
        return None

    def includes(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = INCLUDE_RE.match(line)
                if m:
                    yield m.group(1), m.group(2)

    def why(kind, name):
        if name in FORBIDDEN_PUBLIC:
            return FORBIDDEN_PUBLIC[name]
        first = name.split("/")[0]
        if "/" in name and first in IO_LAYERS:
            return "a header of lib/%s" % first
        if kind == '"' and os.path.basename(name) in io_headers:
            return "a header of lib/%s" % io_headers[os.path.basename(name)]
        if kind == "<" and name in FORBIDDEN_SYSTEM:
            return FORBIDDEN_SYSTEM[name]
        return None

    files = []
    for dirpath, _, names in os.walk(core_dir):
        for n in sorted(names):
            if n.endswith((".c", ".h", ".S")):
                files.append(os.path.join(dirpath, n))
    files.sort()
    nviol = 0
    for path in files:
        rel = os.path.relpath(path, src_root)
        seen = set()
        stack = [(path, [])]
        while stack:
            cur, chain = stack.pop()
            for kind, name in includes(cur):
                shown = ("<%s>" if kind == "<" else '"%s"') % name
                reason = why(kind, name)
                if reason:
                    hits = [e for e in inc_allow if fnmatch.fnmatchcase(rel, e.pattern) and
                            e.header == name]
                    route = " (through %s)" % " -> ".join(chain) if chain else ""
                    if hits and hits[0].violation:
                        hits[0].used = True
                        nviol += 1
                        report.note("known VIOLATION: %s includes %s%s (%s): %s"
                                    % (rel, shown, route, hits[0].where, hits[0].comment))
                    else:
                        report.fail(name, "FORBIDDEN include: %s includes %s%s: %s; a core may "
                                    "include only base, its own headers, the headers of the "
                                    "cores it builds on and their public headers"
                                    % (rel, shown, route, reason))
                    continue
                target = resolve(kind, name, os.path.dirname(cur))
                # Follow the project's own headers (public, and the layers the core may use).
                if target and target not in seen and target.startswith(lib_dir):
                    seen.add(target)
                    stack.append((target, chain + [shown]))
    for e in inc_allow:
        if not e.used:
            report.note("include allow-list entry not needed: %s %s (%s)" % (e.pattern,
                                                                             e.header, e.where))
    report.summary = ("%s: %d files of %s checked, with the headers they include; %d known "
                      "violation(s)" % (core, len(files), os.path.relpath(core_dir, src_root),
                                        nviol))


# ---- main -------------------------------------------------------------------------------------

class Report:
    def __init__(self):
        self.failures, self.notes, self.errors = [], [], []
        self.failed_names = set()
        self.summary = ""

    def fail(self, name, msg):
        self.failures.append(msg)
        self.failed_names.add(name)

    def note(self, msg):
        self.notes.append(msg)

    def error(self, msg):
        self.errors.append(msg)


def read_manifest(path):
    man = {"core": None, "sanitized": False, "layers": []}
    with open(path, encoding="utf-8") as f:
        for line in f:
            w = line.rstrip("\n").split(" ", 3)
            if w[0] == "core":
                man["core"] = w[1]
            elif w[0] == "sanitized":
                man["sanitized"] = w[1] not in ("0", "", "OFF", "FALSE")
            elif w[0] == "layer":
                objs = [o for o in (w[3] if len(w) > 3 else "").split(";") if o]
                man["layers"].append((w[1], w[2], objs))
    if not man["core"] or not man["layers"] or man["layers"][0][0] != man["core"]:
        raise RuntimeError("%s: malformed manifest" % path)
    return man


def main():
    global SOURCE_ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("symbols", "includes"))
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--allow-dir", required=True)
    ap.add_argument("--source-root", default=SOURCE_ROOT)
    ap.add_argument("--expect-fail", default=None,
                    help="the checker's self-test: must fail and report each of these names")
    a = ap.parse_args()
    SOURCE_ROOT = os.path.abspath(a.source_root)
    try:
        man = read_manifest(a.manifest)
    except (OSError, RuntimeError) as e:
        print("purity: %s" % e)
        return 2
    core = man["core"]
    report = Report()
    allow_path = os.path.join(a.allow_dir, core + ".allow")
    allow, inc_allow, errors = [], [], []
    if os.path.exists(allow_path):
        allow, inc_allow = read_allow(allow_path, errors)
    elif a.expect_fail is None:
        print("purity %s %s: FAIL: no allow-list for the core %s: create %s listing each symbol "
              "it needs from outside, with the reason it is pure (see tests/purity/README.md)"
              % (a.mode, core, core, os.path.relpath(allow_path, SOURCE_ROOT)))
        return 1
    tool_allow = []
    tool_path = os.path.join(a.allow_dir, "toolchain.allow")
    if os.path.exists(tool_path):
        tool_allow, _ = read_allow(tool_path, errors)
    for e in errors:
        report.error(e)
    try:
        if a.mode == "symbols":
            check_symbols(man, allow, tool_allow, report)
        else:
            check_includes(man, os.path.abspath(a.source_root), inc_allow, report)
    except (OSError, RuntimeError) as e:
        report.error(str(e))
    for n in report.notes:
        print("  note: " + n)
    for f in report.failures:
        print("  FAIL: " + f)
    for e in report.errors:
        print("  ERROR: " + e)
    if report.errors:
        print("purity %s %s: ERROR" % (a.mode, core))
        return 2
    if a.expect_fail is not None:
        want = a.expect_fail.split()
        missing = [w for w in want if w not in report.failed_names]
        if not report.failures or missing:
            print("purity self-test %s: FAIL: the checker should have reported %s"
                  % (a.mode, " ".join(missing or want)))
            return 1
        print("purity self-test %s: ok, the checker caught %s" % (a.mode, " ".join(want)))
        return 0
    print("purity %s %s" % (a.mode, report.summary))
    if report.failures:
        print("purity %s %s: FAIL (%d problem(s); allow-lists in tests/purity/)"
              % (a.mode, core, len(report.failures)))
        return 1
    print("purity %s %s: ok" % (a.mode, core))
    return 0


if __name__ == "__main__":
    sys.exit(main())
