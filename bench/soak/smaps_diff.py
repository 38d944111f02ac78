#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compares two /proc/PID/smaps snapshots and prints the mappings whose resident anonymous
memory grew the most: where to look when the soak's "anonymous rss flat" check fails. A mapping
of the second snapshot is compared with the mappings of the first that overlap it (anonymous
mappings grow and merge: a malloc arena grows up, adjacent mmaps merge down).

  smaps_diff.py BEFORE AFTER [N]"""
import re
import sys

HEAD = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$")


def read(path):
    maps = []
    for line in open(path):
        m = HEAD.match(line)
        if m:
            maps.append([int(m.group(1), 16), int(m.group(2), 16), m.group(3) or "[anon]", 0])
        elif maps and line.startswith("Anonymous:"):
            maps[-1][3] = int(line.split()[1])
    return maps


a, b = read(sys.argv[1]), read(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 8
rows = []
for lo, hi, name, anon in b:
    was = sum(x[3] for x in a if x[0] < hi and lo < x[1])
    rows.append((anon - was, lo, hi, name, was, anon))
total = sum(x[3] for x in b) - sum(x[3] for x in a)
print(f"        anonymous KiB by mapping, end of warm-up -> end of load (total {total:+d}):")
for d, lo, hi, name, was, now in sorted(rows, reverse=True)[:n]:
    if d <= 0:
        break
    print(f"          {lo:x}-{hi:x} {(hi - lo) >> 10:>8} KiB  {name:<20} {was:>6} -> {now:>6} ({d:+d})")
