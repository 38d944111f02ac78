# SPDX-License-Identifier: MIT
# Scrapes vega-serve --metrics and parses it with the real Prometheus parser
# (python3-prometheus-client), for tests/bats/vega-serve-metrics.bats.
#
#   vega-serve-metrics.py snapshot URL FILE        the samples, as JSON, into FILE
#   vega-serve-metrics.py expect URL FILE KEY=N... until every KEY moved by N since FILE (5 s at
#       most), then: every listed KEY moved by exactly N, every other request counter and
#       histogram count not at all, histograms well formed. KEY>=N: moved by N or more.
# A KEY is a sample name with its labels: 'vega_http_server_requests_total{code="2xx",proto="h2"}'
# (labels sorted by name).
import json
import os
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

WANT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def fail(msg):
    print("vega-serve-metrics.py: " + msg, file=sys.stderr)
    sys.exit(1)


def key(s):
    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
    return s.name + ("{" + labels + "}" if labels else "")


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        ctype = r.headers.get("Content-Type")
        text = r.read().decode("utf-8")
    if ctype != WANT_TYPE:
        fail("Content-Type %r, want %r" % (ctype, WANT_TYPE))
    # every family announces its help and type before its samples
    helped, typed = set(), {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split(" ")[2])
        elif line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ")
            typed[name] = typ
    samples, hist = {}, []
    for fam in text_string_to_metric_families(text):
        if fam.type not in ("counter", "gauge", "histogram"):
            fail("family %s has type %s" % (fam.name, fam.type))
        # the parser drops a counter's _total from the family name, not from the TYPE line
        tname = fam.name + "_total" if fam.type == "counter" else fam.name
        if tname not in typed or tname not in helped or not fam.documentation:
            fail("family %s lacks # HELP or # TYPE" % fam.name)
        for s in fam.samples:
            samples[key(s)] = s.value
        if fam.type == "histogram":
            hist.append(fam)
    for fam in hist:
        check_histogram(fam)
    return samples


def check_histogram(fam):
    series = {}
    for s in fam.samples:
        rest = {k: v for k, v in s.labels.items() if k != "le"}
        series.setdefault(tuple(sorted(rest.items())), []).append(s)
    for labels, ss in series.items():
        buckets = [s for s in ss if s.name.endswith("_bucket")]
        count = [s.value for s in ss if s.name.endswith("_count")]
        if not buckets or buckets[-1].labels["le"] != "+Inf" or len(count) != 1:
            fail("%s%s: buckets must end with le=+Inf, one _count" % (fam.name, labels))
        vals = [b.value for b in buckets]
        if vals != sorted(vals):
            fail("%s%s: buckets not cumulative: %s" % (fam.name, labels, vals))
        if vals[-1] != count[0]:
            fail("%s%s: +Inf bucket %s != _count %s" % (fam.name, labels, vals[-1], count[0]))


def moved(before, after, k):
    return after.get(k, 0) - before.get(k, 0)


def main():
    mode, url, path = sys.argv[1:4]
    if mode == "snapshot":
        with open(path, "w") as f:
            json.dump(scrape(url), f)
        return
    with open(path) as f:
        before = json.load(f)
    want, least = {}, set()
    for a in sys.argv[4:]:
        k, n = a.rsplit("=", 1)
        if k.endswith(">"):
            k = k[:-1]
            least.add(k)
        want[k] = float(n)
    deadline = time.monotonic() + 5
    while True:
        # a request is counted once its response is out: the client may see it first
        after = scrape(url)
        if all(moved(before, after, k) >= n for k, n in want.items()):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for k in want:
        if k not in after:
            fail("no sample %s" % k)
    for k in after:
        counted = k.startswith(
            (
                "vega_http_server_requests_total",
                "vega_http_server_request_duration_seconds_count",
                "vega_quic_connections_accepted_total",
                "vega_quic_handshakes_total",
                "vega_quic_connections_closed_total",
                "vega_quic_early_data_total",
            )
        )
        n = moved(before, after, k)
        if k in least and n < want[k]:
            fail("%s moved by %s, want %s or more" % (k, n, want[k]))
        if k in want and k not in least and n != want[k]:
            fail("%s moved by %s, want %s" % (k, n, want[k]))
        if k not in want and counted and n != 0:
            fail("%s moved by %s, want 0" % (k, n))
    # the allocator's account (glibc): something in use, and no more than malloc holds; a
    # sanitizer build's malloc is not glibc's, and the server leaves the two out there
    inuse, mapped = after.get("vega_heap_inuse_bytes"), after.get("vega_heap_mapped_bytes")
    if (inuse is None or mapped is None) and os.environ.get("VEGA_TEST_SCALE", "1") != "1":
        print("ok: %d samples (no heap account: sanitizer build)" % len(after))
        return
    if inuse is None or mapped is None:
        fail("no vega_heap_inuse_bytes or vega_heap_mapped_bytes")
    if not 0 < inuse <= mapped:
        fail("heap in use %s, mapped %s: want 0 < in use <= mapped" % (inuse, mapped))
    print("ok: %d samples" % len(after))


main()
