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

  floors.py TRACE WARM_SECS LOAD_SECS"""
import sys

rows = [list(map(int, line.split("\t")))
        for line in open(sys.argv[1]).read().splitlines()[1:] if line.strip()]
warm, dur = int(sys.argv[2]), int(sys.argv[3])


def floor(lo, hi, col):
    v = [r[col] for r in rows if lo <= r[0] <= hi]
    return min(v) if v else 0


print(*[floor(warm, warm + 9, c) for c in (1, 2, 4, 5)],
      *[floor(dur - 9, dur - 1, c) for c in (1, 2, 4, 5)])
