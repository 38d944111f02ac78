#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reads a soak trace (bench/soak/run.sh's trace.tsv) and prints, for the columns rss_plain,
anon_plain, rss_tls, anon_tls, the floor (the smallest sample) of the 9 seconds after warm-up
and of the last 9 seconds of the load: both windows under the same steady load (one across
the end of warm-up would catch the ramp).

A leak raises the floor: every sample after it carries it. A large transfer, a multi-range
body or a chaos client's buffers in flight at the moment of one sample raise that sample only
(the working set of this soak swings by about 1 MiB from one second to the next), so floors
compare what stays, and a median of a few samples did not (it failed on swings).

Where the trace has the server's heap (heap_*_kb, mapped_*_kb from --metrics; "-" when not),
it prints the floors of the heap in use too, and for the last window the smallest number of
KiB malloc held free (mapped - in use); "-" for each when there are none.

  floors.py TRACE WARM_SECS LOAD_SECS
prints: warm rss_plain anon_plain rss_tls anon_tls heap_plain heap_tls, the same at the end,
then free_plain free_tls"""
import sys

lines = open(sys.argv[1]).read().splitlines()
cols = lines[0].split("\t")
rows = [line.split("\t") for line in lines[1:] if line.strip()]
warm, dur = int(sys.argv[2]), int(sys.argv[3])


def val(r, name):
    """The column's value in row r as an int, or None (no column, "-", a short row)."""
    k = cols.index(name) if name in cols else -1
    return int(r[k]) if 0 <= k < len(r) and r[k].lstrip("-").isdigit() else None


def floor(lo, hi, f):
    v = [x for x in (f(r) for r in rows if lo <= int(r[0]) <= hi) if x is not None]
    return str(min(v)) if v else "-"


def col(name):
    return lambda r: val(r, name)


def free(s):
    def f(r):
        i, m = val(r, f"heap_{s}_kb"), val(r, f"mapped_{s}_kb")
        return None if i is None or m is None else max(m - i, 0)
    return f


names = ("rss_plain_kb", "anon_plain_kb", "rss_tls_kb", "anon_tls_kb", "heap_plain_kb",
         "heap_tls_kb")
print(*[floor(warm, warm + 9, col(c)) for c in names],
      *[floor(dur - 9, dur - 1, col(c)) for c in names],
      floor(dur - 9, dur - 1, free("plain")), floor(dur - 9, dur - 1, free("tls")))
