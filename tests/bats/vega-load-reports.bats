#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-load's reports over time, against vega-serve on loopback: --latency-log read back by
# HdrHistogram's own HistogramLogProcessor (Debian's libhdrhistogram-java), `vega-load merge`
# adding logs up, --json-lines, and --fail-if's exit code. Runs use -n (an exact count of
# requests), so every count compared is exact; each run lasts a second or two.

load helpers

PY=/usr/bin/python3
HDR_JAR=/usr/share/java/hdrhistogram.jar

setup() {
    LOAD="$(vega_bin vega-load)"
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
    mkdir -p "$T/www"
    head -c 1024 /dev/zero | tr '\0' 'x' >"$T/www/1k.bin"
}

teardown() {
    stop_bg_all
}

serve() {
    start_bg "$T/serve.log" "$SERVE" -p 0 "$T/www"
    wait_for_line "$T/serve.log" 'listening on'
    local p
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    [ -n "$p" ]
    URL="http://127.0.0.1:$p/1k.bin"
}

load_run() {
    timeout 60 "$LOAD" "$@"
}

@test "--latency-log is an HdrHistogram interval log that HistogramLogProcessor reads, every request in it" {
    command -v java >/dev/null && [ -f "$HDR_JAR" ] || skip "java or libhdrhistogram-java missing"
    serve
    run load_run -c 4 -n 3000 --latency-log "$T/a.hlog" --json "$URL"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/a.json"
    head -n 1 "$T/a.hlog" | grep -qF '#[Histogram log format version 1.3]'
    grep -q '^"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"$' "$T/a.hlog"
    grep -qE '^[0-9]+\.[0-9]{3},[0-9]+\.[0-9]{3},[0-9]+\.[0-9]{3},HISTF' "$T/a.hlog"
    java -cp "$HDR_JAR" org.HdrHistogram.HistogramLogProcessor -i "$T/a.hlog" -csv \
        -outputValueUnitRatio 1 >"$T/a.csv"
    # Every request, and the same distribution: the processor's median and maximum are
    # vega-load's.
    [ "$(tail -n 1 "$T/a.csv" | cut -d, -f3)" = 3000 ]
    "$PY" - "$T/a.csv" "$T/a.json" <<'PYEOF'
import csv, json, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0][0].isdigit()]
j = json.load(open(sys.argv[2]))
lat = j["latency_us"]
p50 = next(float(r[0]) for r in rows if float(r[1]) >= 0.5)
mx = int(float(rows[-1][0]))
assert int(p50) == lat["p50"], (p50, lat)
# the processor reports the top of the slot of the maximum (3 significant digits)
assert lat["max"] <= mx <= lat["max"] + lat["max"] // 1000 + 1, (mx, lat)
PYEOF
}

@test "vega-load merge adds logs up: counts, and the distribution of the same log twice" {
    serve
    run load_run -c 2 -n 1000 --latency-log "$T/a.hlog" --json "$URL"
    [ "$status" -eq 0 ]
    run load_run -c 3 -n 1500 --latency-log "$T/b.hlog" --json "$URL"
    [ "$status" -eq 0 ]
    run "$LOAD" merge --json "$T/a.hlog" "$T/b.hlog"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/m.json"
    "$PY" -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert m["logs"] == 2 and m["requests"] == 2500, m
assert sum(s["requests"] for s in m["per_second"]) == 2500, m["per_second"]' "$T/m.json"
    run "$LOAD" merge --json "$T/a.hlog"
    printf '%s\n' "$output" >"$T/one.json"
    run "$LOAD" merge --json "$T/a.hlog" "$T/a.hlog"
    printf '%s\n' "$output" >"$T/two.json"
    "$PY" -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b["requests"] == 2 * a["requests"] == 2000
for k in ("p50", "p90", "p99", "max", "min"):
    assert a["latency_us"][k] == b["latency_us"][k], k' "$T/one.json" "$T/two.json"
    run "$LOAD" merge "$T/a.hlog" "$T/b.hlog"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Merged 2 logs"*"2500 requests"* ]]
}

@test "vega-load merge refuses a malformed log with its line, and a missing one" {
    printf '#[StartTime: 1.000 (seconds since epoch), x]\n0.000,1.000,1.0,notbase64!\n' >"$T/bad.hlog"
    run "$LOAD" merge "$T/bad.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"bad.hlog:2: the histogram is not base64"* ]]
    # base64 of a histogram whose zero run claims more slots than it has
    "$PY" -c '
import base64, struct, sys, zlib
def zz(v):
    v = (v << 1) ^ (v >> 63)
    out = b""
    while v >> 7:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
payload = zz(5) + zz(-(1 << 40))
plain = struct.pack(">iiiiqqd", 0x1c849313, len(payload), 0, 3, 1, 60000000, 1.0) + payload
z = zlib.compress(plain)
blob = struct.pack(">ii", 0x1c849314, len(z)) + z
print("0.000,1.000,1.0," + base64.b64encode(blob).decode())' >"$T/run.hlog"
    run "$LOAD" merge "$T/run.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"run.hlog:1: histogram counts run past its last slot"* ]]
    run "$LOAD" merge "$T/none.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"none.hlog: No such file"* ]]
    run "$LOAD" merge
    [ "$status" -eq 2 ]
}

@test "--json-lines: an object per second, then the summary; the intervals add up to it" {
    serve
    run load_run -c 2 -n 2000 -R 1500 --json-lines "$URL"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/lines"
    "$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
iv = [l for l in lines if l["type"] == "interval"]
assert lines[-1]["type"] == "summary" and len(iv) == len(lines) - 1, lines
s = lines[-1]
assert len(iv) >= 2, len(iv)  # 2000 requests at 1500/s take more than a second
assert sum(l["requests"] for l in iv) == s["requests"] == 2000, (iv, s)
assert sum(l["latency_us"]["count"] for l in iv) == 2000
assert [l["second"] for l in iv] == list(range(len(iv)))
# an interval keeps 3 significant digits (the top of the slot of the maximum); the summary the exact one
mx, smx = max(l["latency_us"]["max"] for l in iv), s["latency_us"]["max"]
assert smx <= mx <= smx + smx // 1000 + 1, (mx, smx)
assert sum(l["status_classes"]["2xx"] for l in iv) == 2000' "$T/lines"
    run "$LOAD" --json --json-lines -n 1 "$URL"
    [ "$status" -eq 2 ]
}

@test "--fail-if: exit 3 naming each failed condition; 0 when all hold; 2 for a bad one" {
    serve
    run load_run -c 2 -n 500 --fail-if 'p50<1us,requests=500,errors=0,rps<1' "$URL"
    [ "$status" -eq 3 ]
    [[ "$output" == *"'p50<1us' failed: it was "* ]]
    [[ "$output" == *"'rps<1' failed: it was "* ]]
    [[ "$output" != *"'requests=500' failed"* ]]
    [[ "$output" != *"'errors=0' failed"* ]]
    run load_run -c 2 -n 500 --fail-if 'p99<60s,max<=60s,requests>=500,non2xx=0,error%<1%' --fail-if 'rps>1' "$URL"
    [ "$status" -eq 0 ]
    run "$LOAD" -n 1 --fail-if 'p99<fast' "$URL"
    [ "$status" -eq 2 ]
    [[ "$output" == *"'fast' is not a duration"* ]]
    run "$LOAD" -n 1 --fail-if 'latency<5ms' "$URL"
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown metric 'latency'"* ]]
}

@test "--html: a self-contained page that headless Chromium renders, a plotted point per second" {
    command -v chromium >/dev/null || skip "chromium missing"
    serve
    run load_run -c 2 -n 2500 -R 1000 --html "$T/r.html" --json-lines "$URL"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/lines"
    # No network: nothing in the page loads from elsewhere.
    ! grep -qiE '(src|href)=' "$T/r.html"
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$T/profile" --window-size=800,1600 --dump-dom "file://$T/r.html" \
        >"$T/dom.html" 2>"$T/chromium.log"
    "$PY" - "$T/dom.html" "$T/lines" <<'PYEOF'
import json, sys
from html.parser import HTMLParser
secs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
iv = [s for s in secs if s["type"] == "interval"]
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = {}
        self.cur = None
        self.pts = {}
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "svg" and "id" in a:
            self.cur = a["id"]
            self.svg[self.cur] = int(a.get("data-points", -1))
            self.pts[self.cur] = []
        if tag == "circle" and "pt" in a.get("class", "").split():
            self.pts[self.cur].append((a["data-series"], float(a["data-v"])))
p = P()
p.feed(open(sys.argv[1]).read())
assert set(p.svg) == {"spectrum-svg", "rps-svg", "errors-svg", "lat-svg"}, p.svg
# a point per second in the per-second plots, as many as --json-lines printed intervals
assert len(iv) >= 2, iv
assert p.svg["rps-svg"] == len(p.pts["rps-svg"]) == len(iv), (p.svg, len(iv))
assert p.svg["errors-svg"] == len(iv)
assert p.svg["lat-svg"] == 3 * len(iv)
rps = [v for _, v in p.pts["rps-svg"]]
want = [s["requests"] / s["length_s"] for s in iv]
assert all(abs(a - b) <= 0.01 * b + 1 for a, b in zip(rps, want)), (rps, want)
# -R: the spectrum has corrected and uncorrected series, each ending at its maximum
series = {s for s, _ in p.pts["spectrum-svg"]}
assert series == {"corrected", "uncorrected"}, series
summary = secs[-1]
corr = [v for s, v in p.pts["spectrum-svg"] if s == "corrected"]
assert corr[-1] == summary["latency_us"]["max"], (corr[-1], summary["latency_us"])
assert corr == sorted(corr)
PYEOF
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$T/profile" --window-size=800,1600 --screenshot="$T/r.png" \
        "file://$T/r.html" >/dev/null 2>>"$T/chromium.log"
    [ -s "$T/r.png" ]
}

@test "vega-load merge: the reader's limits (a histogram of another unit, an inflate bomb, an overlong line) and 33 --fail-if conditions" {
    # hist LOWEST HIGHEST PAYLOAD_REPEAT: one interval line of a crafted compressed histogram
    hist() {
        "$PY" -c '
import base64, struct, sys, zlib
lowest, highest, rep = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
payload = bytes([10]) * rep  # count 5 (ZigZag), rep slots
plain = struct.pack(">iiiiqqd", 0x1c849313, len(payload), 0, 3, lowest, highest, 1.0) + payload
z = zlib.compress(plain, 9)
blob = struct.pack(">ii", 0x1c849314, len(z)) + z
print("0.000,1.000,1.0," + base64.b64encode(blob).decode())' "$@"
    }
    hist 1000 60000000 1 >"$T/unit.hlog"
    run "$LOAD" merge "$T/unit.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"unit.hlog:1: histogram with a lowest discernible value other than 1"* ]]
    hist 1 "$((1 << 60))" 1 >"$T/high.hlog"
    run "$LOAD" merge "$T/high.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"highest trackable value out of range"* ]]
    hist 1 60000000 $((9 << 20)) >"$T/bomb.hlog"
    run "$LOAD" merge "$T/bomb.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"bomb.hlog:1: compressed histogram inflates past 8 MiB"* ]]
    "$PY" -c 'print("0.000,1.000,1.0," + "A" * (1 << 20))' >"$T/long.hlog"
    run "$LOAD" merge "$T/long.hlog"
    [ "$status" -eq 1 ]
    [[ "$output" == *"long.hlog:1: line longer than 1 MiB"* ]]
    conds="$(printf 'errors=0,%.0s' $(seq 33))"
    run "$LOAD" -n 1 --fail-if "${conds%,}" http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--fail-if: at most 32 conditions"* ]]
}

# The dashboard is drawn on stderr only when it is a terminal: `script` gives the run a
# pseudo-terminal (a fixed width, so lines are cut to it).
in_pty() {
    local cmd
    printf -v cmd '%q ' "$@"
    LANG=C.UTF-8 timeout 60 script -qfec "stty cols 90; $cmd" /dev/null
}

@test "on a terminal a dashboard below the progress line: last second's rate and latency, status classes, a sparkline; each redraw moves up exactly the lines drawn" {
    serve
    in_pty "$LOAD" -c 2 -d 4s "$URL" >"$T/pty.out" 2>&1
    grep -q 'last second: .*latency p50 .*, p99 .*, max ' "$T/pty.out"
    grep -qE 'so far: 2xx [1-9][0-9]*; no errors' "$T/pty.out"
    grep -q 'requests/s: .* max ' "$T/pty.out"
    "$PY" - "$T/pty.out" <<'PYEOF'
import re, sys
out = open(sys.argv[1], "rb").read().decode()
# frames: from the erase of the progress line to the erase below the last line drawn
starts = [m.start() for m in re.finditer(r"\r\x1b\[K[0-9.]+s of", out)]
assert len(starts) >= 2, starts
frames = [out[a:out.index("\x1b[J", a)] for a in starts]
ups = [int(m.group(1)) for m in re.finditer(r"\x1b\[(\d+)A", out)]
drawn = [f.count("\n") for f in frames]
# every move up (the redraws and the final clear) is the number of lines the frame before drew
assert ups == [d for d in drawn if d] , (ups, drawn)
assert drawn[-1] == 3, drawn
# no line wider than the terminal (90 columns): the cursor arithmetic relies on it
for f in frames:
    for line in re.sub(r"\x1b\[[0-9]*[A-Z]", "", f).replace("\r", "").split("\n"):
        assert len(line) <= 89, line
# the report comes after the dashboard was erased
assert out.rindex("\x1b[J") < out.index("Requests/sec:"), "report before the clear"
PYEOF
}

@test "--no-progress, or stderr not a terminal: no progress line and no dashboard" {
    serve
    in_pty "$LOAD" -c 2 -d 1500ms --no-progress "$URL" >"$T/pty.out" 2>&1
    grep -q 'Requests/sec:' "$T/pty.out"
    run grep -c $'\e' "$T/pty.out"
    [ "$output" = 0 ]
    load_run -c 2 -d 1500ms "$URL" >"$T/plain.out" 2>&1
    grep -q 'Requests/sec:' "$T/plain.out"
    run grep -c $'\e' "$T/plain.out"
    [ "$output" = 0 ]
}

@test "--stages ramps the rate: exactly the requests the stages add up to, over HTTP/1.1, HTTP/2 and WebSocket" {
    start_bg "$T/serve.log" "$SERVE" -p 0 --h2c --ws-echo /ws "$T/www"
    wait_for_line "$T/serve.log" 'listening on'
    local p
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    # 0 to 100/s over 1 s (50), 100 to 300/s over 0.5 s (100), 300 to 0 over 1 s (150)
    for mode in "" "--h2 -m 4" ; do
        # shellcheck disable=SC2086
        load_run -c 3 $mode --stages 1s:100,500ms:300,1s:0 --json "http://127.0.0.1:$p/1k.bin" >"$T/s.json"
        "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["requests"] == 300 and j["errors"] == 0, j' "$T/s.json"
    done
    load_run -c 3 --stages 1s:100,500ms:300,1s:0 --json "ws://127.0.0.1:$p/ws" >"$T/w.json"
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["round_trips"] == 300 and j["errors"] == 0, j' "$T/w.json"
    # the text report names the stages
    run load_run -c 2 --stages 200ms:50,200ms:0 "http://127.0.0.1:$p/1k.bin"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Stages (rate ramped linearly, from 0): 200ms to 50/s, 200ms to 0/s"* ]]
    [[ "$output" == *"uncorrected"* ]]
}

@test "--stages: malformed stages, -R or -d beside it, all rates 0: usage errors" {
    for bad in "1s" "1s:x" "x:10" "1s:10," "0s:10" "1s:0,2s:0" "1s:200000000"; do
        run "$LOAD" --stages "$bad" http://127.0.0.1:1/
        [ "$status" -eq 2 ]
        [[ "$output" == *"--stages"* ]]
    done
    run "$LOAD" --stages 1s:10 -R 5 http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--stages and -R contradict"* ]]
    run "$LOAD" --stages 1s:10 -d 2s http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--stages and -d contradict"* ]]
    run "$LOAD" --stages 1s:10 --warm-up 1s http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"nothing to measure"* ]]
}

# serve_logged: vega-serve (HTTP/1.1 and h2c) with an access log in $T/access.log; sets PORT.
serve_logged() {
    start_bg "$T/serve.log" "$SERVE" -p 0 --h2c --access-log "$T/access.log" "$T/www"
    wait_for_line "$T/serve.log" 'listening on'
    PORT="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    [ -n "$PORT" ]
}

# requests_logged N: waits until the access log has N lines, then prints the request lines.
requests_logged() {
    local i
    for i in $(seq 1 100); do
        [ "$(wc -l <"$T/access.log")" -ge "$1" ] && break
        sleep 0.1
    done
    sed -nE 's/.*"(GET [^"]*)".*/\1/p' "$T/access.log"
}

@test "-i FILE: each connection takes the file's URLs in turn (paths, whole URLs, fragments dropped), HTTP/1.1 pipelined and HTTP/2" {
    serve_logged
    printf 'x\n' >"$T/www/b.txt"
    printf 'http://127.0.0.1:%s/1k.bin\n/b.txt?q=1\n\nhttp://127.0.0.1:%s/missing#frag\r\n' "$PORT" "$PORT" >"$T/urls"
    run load_run -c 1 -n 7 --pipeline 2 -i "$T/urls" --json
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >"$T/a.json"
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["requests"] == 7 and j["status"] == {"200": 5, "404": 2}, j' "$T/a.json"
    run requests_logged 7
    [ "$output" = "$(printf 'GET /1k.bin HTTP/1.1\nGET /b.txt?q=1 HTTP/1.1\nGET /missing HTTP/1.1\nGET /1k.bin HTTP/1.1\nGET /b.txt?q=1 HTTP/1.1\nGET /missing HTTP/1.1\nGET /1k.bin HTTP/1.1')" ]
    : >"$T/access.log"
    run load_run h2 -c 1 -m 1 -n 4 -i "$T/urls" --json
    [ "$status" -eq 0 ]
    run requests_logged 4
    [ "$output" = "$(printf 'GET /1k.bin HTTP/2.0\nGET /b.txt?q=1 HTTP/2.0\nGET /missing HTTP/2.0\nGET /1k.bin HTTP/2.0')" ]
}

@test "--random-query NAME: a fresh 16-digit value on every request, after ? or &, HTTP/1.1 and HTTP/2" {
    serve_logged
    run load_run -c 2 -n 40 --pipeline 4 --random-query cb --json "http://127.0.0.1:$PORT/1k.bin?a=b"
    [ "$status" -eq 0 ]
    run load_run --h2 -c 2 -m 4 -n 40 --random-query cb --json "http://127.0.0.1:$PORT/1k.bin"
    [ "$status" -eq 0 ]
    run requests_logged 80
    [ "$(printf '%s\n' "$output" | grep -cE '^GET /1k.bin\?a=b&cb=[0-9a-f]{16} HTTP/1.1$')" = 40 ]
    [ "$(printf '%s\n' "$output" | grep -cE '^GET /1k.bin\?cb=[0-9a-f]{16} HTTP/2.0$')" = 40 ]
    [ "$(printf '%s\n' "$output" | grep -oE 'cb=[0-9a-f]{16}' | sort -u | wc -l)" = 80 ]
}

@test "-i and --random-query: usage errors" {
    printf '/only-a-path\n' >"$T/paths"
    printf 'http://127.0.0.1:1/\nhttp://127.0.0.2:1/x\n' >"$T/two-hosts"
    printf 'http://127.0.0.1:1/\nnot a path\n' >"$T/bad-line"
    : >"$T/empty"
    run "$LOAD" -i "$T/urls-missing"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-i $T/urls-missing: No such file"* ]]
    run "$LOAD" -i "$T/paths"
    [ "$status" -eq 2 ]
    [[ "$output" == *"the first line must be a whole URL"* ]]
    run "$LOAD" -i "$T/two-hosts"
    [ "$status" -eq 2 ]
    [[ "$output" == *"every URL in the file must have the first one's scheme, host and port"* ]]
    run "$LOAD" -i "$T/bad-line"
    [ "$status" -eq 2 ]
    run "$LOAD" -i "$T/empty"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no URL in it"* ]]
    run "$LOAD" -i "$T/paths" http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"-i gives the URLs"* ]]
    run "$LOAD" --random-query 'a b' http://127.0.0.1:1/
    [ "$status" -eq 2 ]
    [[ "$output" == *"--random-query: expected a name"* ]]
    run "$LOAD" --random-query cb ws://127.0.0.1:1/
    [ "$status" -eq 2 ]
    run "$LOAD" --random-query cb echo 127.0.0.1:1
    [ "$status" -eq 2 ]
}
