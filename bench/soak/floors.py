#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reads a soak trace (bench/soak/run.sh's trace.tsv) and prints, for the columns rss_plain,
anon_plain, rss_tls, anon_tls, the median of the samples around the end of warm-up and of
the last five seconds of the load: one large transfer in flight at the moment of a sample is
then not read as growth.

  medians.py TRACE WARM_SECS LOAD_SECS"""
import statistics
import sys

rows = [list(map(int, line.split("\t")))
        for line in open(sys.argv[1]).read().splitlines()[1:] if line.strip()]
warm, dur = int(sys.argv[2]), int(sys.argv[3])


def med(lo, hi, col):
    v = [r[col] for r in rows if lo <= r[0] <= hi]
    return int(statistics.median(v)) if v else 0


print(*[med(warm - 2, warm + 2, c) for c in (1, 2, 4, 5)],
      *[med(dur - 5, dur - 1, c) for c in (1, 2, 4, 5)])
