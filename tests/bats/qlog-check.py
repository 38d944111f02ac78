#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks qlog JSON-SEQ files (RFC 7464; draft-ietf-quic-qlog-main-schema, qlog 0.3) and prints
per file one JSON line: {"file", "group_id", "type", "counts": {event name: n}}.

Every record must start with 0x1E and end with a newline and parse as JSON; the first is the
header ("qlog_format": "JSON-SEQ", a trace with a vantage point); every later one has a numeric
"time", a "name" and a "data" object. With --strict, event names must be those the QUIC event
definitions name (the set below, which is what libvega writes); other writers (ngtcp2) are
checked with the same rules but may use any "category:event" name."""
import json
import sys

SCHEMA = {
    "connectivity:connection_started", "connectivity:connection_closed",
    "connectivity:connection_state_updated", "transport:parameters_set",
    "transport:packet_sent", "transport:packet_received", "transport:packet_dropped",
    "recovery:packet_lost", "recovery:metrics_updated", "recovery:congestion_state_updated",
    "security:key_updated", "loglevel:warning",
}


def check(path, strict):
    data = open(path, "rb").read()
    if not data.startswith(b"\x1e"):
        raise SystemExit(f"{path}: does not start with a record separator")
    recs = data.split(b"\x1e")[1:]
    hdr = json.loads(recs[0])
    if hdr.get("qlog_format") != "JSON-SEQ" or "trace" not in hdr:
        raise SystemExit(f"{path}: bad header {hdr}")
    counts = {}
    for r in recs[1:]:
        if not r.endswith(b"\n"):
            raise SystemExit(f"{path}: a record without its newline: {r[:80]!r}")
        ev = json.loads(r)
        name = ev["name"]
        if not isinstance(ev["time"], (int, float)) or not isinstance(ev["data"], dict):
            raise SystemExit(f"{path}: bad record {ev}")
        if ":" not in name or (strict and name not in SCHEMA):
            raise SystemExit(f"{path}: unknown event name {name}")
        counts[name] = counts.get(name, 0) + 1
    tr = hdr["trace"]
    return {"file": path, "group_id": tr.get("common_fields", {}).get("group_id"),
            "type": tr.get("vantage_point", {}).get("type"), "counts": counts}


def main():
    args = sys.argv[1:]
    strict = "--strict" in args
    for p in (a for a in args if a != "--strict"):
        print(json.dumps(check(p, strict), sort_keys=True))


main()
