#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# vega-serve --metrics: the Prometheus listener. curl makes requests over HTTP/1.1 and
# cleartext HTTP/2; the scrape is parsed by the real Prometheus parser (Debian's
# python3-prometheus-client, in vega-serve-metrics.py), and the counters must move by exactly
# the requests made, status classes and histograms included. A metrics address that is not
# loopback is refused without --metrics-public. Loopback only, ephemeral ports.

load helpers

PY=/usr/bin/python3 # Debian's, with python3-prometheus-client (the first python3 on PATH may be another)

setup() {
    SERVE="$(vega_bin vega-serve)"
    T="$BATS_TEST_TMPDIR"
    mkdir -p "$T/root"
    printf 'hello world\n' >"$T/root/hello.txt"
    CHECK=("$PY" "$BATS_TEST_DIRNAME/vega-serve-metrics.py")
}

teardown() {
    stop_bg_all
}

# serve ARGS...: vega-serve on free ports with --metrics; sets URL and MURL.
serve() {
    start_bg "$T/serve.log" "$SERVE" -p 0 --metrics 127.0.0.1:0 "$@" "$T/root"
    wait_for_line "$T/serve.log" 'metrics on http://'
    local p m
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    m="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$T/serve.log" | head -n1)"
    [ -n "$p" ]
    [ -n "$m" ]
    URL="http://127.0.0.1:$p" MURL="$m"
}

@test "counters move by exactly the requests made, over HTTP/1.1 and h2c" {
    "$PY" -c 'from prometheus_client.parser import text_string_to_metric_families' 2>/dev/null ||
        skip "python3-prometheus-client is not installed"
    serve --h2c
    run "${CHECK[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    for _ in 1 2 3; do
        curl -sS -f -o /dev/null "$URL/hello.txt"
    done
    run curl -sS -o /dev/null -w '%{http_code}' "$URL/missing.txt"
    [ "$output" = 404 ]
    for _ in 1 2; do
        curl -sS -f --http2-prior-knowledge -o /dev/null "$URL/hello.txt"
    done
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_requests_total{code="2xx",proto="http1"}=3' \
        'vega_http_server_requests_total{code="4xx",proto="http1"}=1' \
        'vega_http_server_requests_total{code="2xx",proto="h2"}=2' \
        'vega_http_server_request_duration_seconds_count{proto="http1"}=4' \
        'vega_http_server_request_duration_seconds_bucket{le="+Inf",proto="http1"}=4' \
        'vega_http_server_request_duration_seconds_count{proto="h2"}=2' \
        'vega_http_server_response_body_bytes_total{proto="h2"}=24' \
        'vega_http_server_connections_accepted_total=6' \
        'vega_http_server_tls_handshakes_total{result="ok"}=0'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "TLS handshakes: one done, one failed (plain HTTP to the TLS port)" {
    "$PY" -c 'from prometheus_client.parser import text_string_to_metric_families' 2>/dev/null ||
        skip "python3-prometheus-client is not installed"
    serve --tls --no-http3
    run "${CHECK[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    curl -sS -f -k -o /dev/null "https://${URL#http://}/hello.txt"
    run curl -sS -o /dev/null "$URL/hello.txt"
    [ "$status" -ne 0 ]
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_tls_handshakes_total{result="ok"}=1' \
        'vega_http_server_tls_handshakes_total{result="failed"}=1' \
        'vega_http_server_requests_total{code="2xx",proto="h2"}=1' \
        'vega_http_server_request_duration_seconds_count{proto="h2"}=1'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "HTTP/3: the QUIC counters move by the connections made (Retry, 0-RTT, a failed handshake)" {
    "$PY" -c 'from prometheus_client.parser import text_string_to_metric_families' 2>/dev/null ||
        skip "python3-prometheus-client is not installed"
    local curl p
    curl="$(vega_bin vega-curl)"
    serve --tls --quic-retry
    p="${URL##*:}"
    run "${CHECK[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # a full handshake after a Retry; then a resumption with the session and the NEW_TOKEN
    # token it saved (no Retry), its request in 0-RTT
    run timeout 20 "$curl" -sv --http3-only -k --tls-session-file "$T/sess" -o /dev/null \
        "https://127.0.0.1:$p/hello.txt"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ "$output" == *"QUIC: full handshake"* ]]
    run timeout 20 "$curl" -sv --http3-only -k --tls-session-file "$T/sess" -o /dev/null \
        "https://127.0.0.1:$p/hello.txt"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ "$output" == *"0-RTT accepted"* ]]
    # the self-signed certificate refused: the client closes during the handshake
    run timeout 20 "$curl" -s --http3-only -o /dev/null "https://127.0.0.1:$p/hello.txt"
    [ "$status" -eq 60 ]
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_quic_connections_accepted_total=3' \
        'vega_quic_retry_packets_sent_total=2' \
        'vega_quic_handshakes_total{result="ok"}=2' \
        'vega_quic_handshakes_total{result="failed"}=1' \
        'vega_quic_connections_closed_total{reason="peer"}=2' \
        'vega_quic_connections_closed_total{reason="handshake_failed"}=1' \
        'vega_quic_connections_closed_total{reason="local"}=0' \
        'vega_quic_connections_closed_total{reason="idle_timeout"}=0' \
        'vega_quic_early_data_total{result="accepted"}=1' \
        'vega_quic_early_data_total{result="rejected"}=0' \
        'vega_quic_handshake_duration_seconds_count=2' \
        'vega_quic_connections_open=0' \
        'vega_quic_handshakes_in_progress=0' \
        'vega_quic_packets_sent_total>=3' \
        'vega_quic_packets_received_total>=3' \
        'vega_quic_datagrams_received_total>=3' \
        'vega_quic_datagrams_sent_total>=3' \
        'vega_quic_received_bytes_total>=3600' \
        'vega_quic_sent_bytes_total>=1' \
        'vega_http_server_requests_total{code="2xx",proto="h3"}=2' \
        'vega_http_server_request_duration_seconds_count{proto="h3"}=2'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "no QUIC families without HTTP/3" {
    serve --tls --no-http3
    run curl -sS -f "$MURL"
    [ "$status" -eq 0 ]
    [[ "$output" == *"vega_http_server_requests_total"* ]]
    [[ "$output" != *"vega_quic_"* ]]
}

@test "--metrics-log: a JSON line per interval, the sum of the workers' deltas" {
    start_bg "$T/serve.log" "$SERVE" -p 0 --metrics-log "$T/m.jsonl" --metrics-every 20 "$T/root"
    wait_for_line "$T/serve.log" 'listening on'
    local p
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    [ -n "$p" ]
    for _ in 1 2 3 4 5; do
        curl -sS -f -o /dev/null "http://127.0.0.1:$p/hello.txt"
    done
    # every line valid; each counter of the line the sum of its per-worker values; the
    # connections' tasks seen in some interval (bounded: 10 s)
    run "$PY" - "$T/m.jsonl" <<'PYEOF'
import json, sys, time
path = sys.argv[1]
keys = ["spawned", "polls", "steals", "steal_ops", "parks", "unparks", "injects",
        "budget_yields", "lifo_hits", "overflows", "timers_fired", "io_ops", "io_completions",
        "local_queue"]
deadline = time.monotonic() + 10
while True:
    lines = open(path).read().splitlines()
    recs = [json.loads(l) for l in lines if l.endswith("]}")]  # complete lines
    if sum(r["spawned"] for r in recs) >= 5 and len(recs) >= 2 or time.monotonic() > deadline:
        break
    time.sleep(0.02)
assert len(recs) >= 2, "%d lines" % len(recs)
for r in recs:
    assert r["workers"] == len(r["per_worker"]) >= 1, r
    assert r["interval_ms"] > 0, r
    for k in keys:
        assert r[k] == sum(w[k] for w in r["per_worker"]), (k, r)
# a connection is a task: 5 connections spawned at least 5
assert sum(r["spawned"] for r in recs) >= 5, [r["spawned"] for r in recs]
print("ok: %d lines" % len(recs))
PYEOF
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "--metrics-log: the stop writes the last, partial interval" {
    # an hour's interval: the only line is the one the stop writes, with everything done
    start_bg "$T/serve.log" "$SERVE" -p 0 --metrics-log "$T/m.jsonl" --metrics-every 3600000 \
        "$T/root"
    wait_for_line "$T/serve.log" 'listening on'
    local p
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    for _ in 1 2 3; do
        curl -sS -f -o /dev/null "http://127.0.0.1:$p/hello.txt"
    done
    [ ! -s "$T/m.jsonl" ]
    kill -TERM "$BG_PID"
    wait_pid_exit "$BG_PID" 20
    [ "$BG_STATUS" -eq 0 ]
    run "$PY" -c 'import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 1, recs
assert recs[0]["spawned"] >= 3, recs  # a task per connection
assert recs[0]["requests"] == 3, recs
print("ok")' "$T/m.jsonl"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "--metrics-log --shards 2: the supervisor's lines sum the shards', requests exactly, across a reload and an upgrade" {
    start_bg "$T/serve.log" "$SERVE" --shards 2 -p 0 --metrics-log "$T/m.jsonl" \
        --metrics-every 50 "$T/root"
    local sup=$BG_PID
    wait_for_line "$T/serve.log" 'shard 1 ready' 10
    wait_for_line "$T/serve.log" 'shard 0 ready' 10
    local p i
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$T/serve.log" | head -n1)"
    for ((i = 0; i < 9; i++)); do
        curl -sS -f -o /dev/null "http://127.0.0.1:$p/hello.txt"
    done
    # a reload: the old shards' last counters are in some line too, not lost
    kill -HUP "$sup"
    wait_for_line "$T/serve.log" 'generation 2 ready, older shards drain' 10
    for ((i = 0; i < 4; i++)); do
        curl -sS -f -o /dev/null "http://127.0.0.1:$p/hello.txt"
    done
    # lines appear while it runs (bounded: 10 s)
    for ((i = 0; i < 200; i++)); do
        [ "$(wc -l <"$T/m.jsonl")" -ge 3 ] && break
        sleep 0.05
    done
    [ "$(wc -l <"$T/m.jsonl")" -ge 3 ]
    # a binary upgrade: the old supervisor writes its last line when its shards are gone, the
    # new one appends its own
    kill -USR2 "$sup"
    wait_for_line "$T/serve.log" 'upgrade: new supervisor pid [0-9]+ ready' 15
    local new
    new="$(sed -nE 's/.*upgrade: new supervisor pid ([0-9]+) ready.*/\1/p' "$T/serve.log")"
    [ -n "$new" ]
    VEGA_BG_PIDS+=("$new") # killed by teardown if the test fails
    wait_pid_exit "$sup" 20
    [ "$BG_STATUS" -eq 0 ]
    for ((i = 0; i < 3; i++)); do
        curl -sS -f -o /dev/null "http://127.0.0.1:$p/hello.txt"
    done
    kill -TERM "$new"
    for ((i = 0; i < 300; i++)); do
        kill -0 "$new" 2>/dev/null || break
        sleep 0.05
    done
    ! kill -0 "$new" 2>/dev/null
    run "$PY" - "$T/m.jsonl" <<'PYEOF'
import json, sys
keys = ["spawned", "polls", "steals", "steal_ops", "parks", "unparks", "injects",
        "budget_yields", "lifo_hits", "overflows", "timers_fired", "io_ops", "io_completions",
        "local_queue", "requests", "blocking_jobs", "live_tasks"]
recs = [json.loads(l) for l in open(sys.argv[1])]
gens = set()
for r in recs:
    assert r["interval_ms"] >= 0, r
    live = [s for s in r["per_shard"] if not s["ended"]]
    assert r["ended_unlisted"] == 0, r
    assert r["shards"] == len(live), r
    assert r["workers"] == sum(s["workers"] for s in live), r
    for k in keys:  # the line is the sum of its shards
        assert r[k] == sum(s[k] for s in r["per_shard"]) + 0, (k, r)
    for s in r["per_shard"]:
        gens.add(s["generation"])
        assert s["shard"] in (0, 1), s
        if s["ended"]:
            assert s["live_tasks"] == 0 and s["local_queue"] == 0, s
        assert len(s["per_worker"]) == min(s["workers"], 64), s
        for k in keys[:14]:
            assert s[k] == sum(w[k] for w in s["per_worker"]), (k, s)
# 16 requests, each counted once, over the generations of both supervisors (the new one's
# first is 3); the last line, written after the stop, holds no live shard
assert sum(r["requests"] for r in recs) == 16, [r["requests"] for r in recs]
assert gens == {1, 2, 3}, gens
assert recs[-1]["shards"] == 0, recs[-1]
print("ok", len(recs))
PYEOF
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "--metrics-log, --metrics-every: usage errors" {
    run "$SERVE" --metrics-every 100 "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--metrics-every needs --metrics-log"* ]]
    run "$SERVE" --metrics-log "$T/m.jsonl" --metrics-every 5 "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"10..3600000"* ]]
    run "$SERVE" -p 0 --metrics-log "$T/no/such/dir/m.jsonl" "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--metrics-log"* ]]
}

@test "only GET /metrics; the runtime's metrics are there too" {
    serve
    run curl -sS -o /dev/null -w '%{http_code}' "$MURL/x"
    [ "$output" = 404 ]
    run curl -sS -o /dev/null -w '%{http_code}' -X POST "$MURL"
    [ "$output" = 405 ]
    run curl -sS "$MURL"
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\n# TYPE vega_rt_workers gauge\n'* ]]
    [[ "$output" == *$'\n# TYPE vega_http_server_request_duration_seconds histogram\n'* ]]
}

@test "a metrics address that is not loopback is refused without --metrics-public" {
    run "$SERVE" -p 0 --metrics 0.0.0.0:0 "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"0.0.0.0:0 is not a loopback address"*"--metrics-public"* ]]
    run "$SERVE" -p 0 --metrics-public "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--metrics-public needs --metrics"* ]]
    run "$SERVE" -p 0 --metrics 127.0.0.1 "$T/root"
    [ "$status" -eq 2 ]
    [[ "$output" == *"expected ADDR:PORT"* ]]
    # allowed when asked for
    start_bg "$T/pub.log" "$SERVE" -p 0 --metrics 0.0.0.0:0 --metrics-public "$T/root"
    wait_for_line "$T/pub.log" 'metrics on http://0\.0\.0\.0:[0-9]+/metrics'
}

# workers_are N FILE: the snapshot's vega_rt_workers (summed over live shards) is N.
workers_are() {
    "$PY" -c 'import json, sys; v = json.load(open(sys.argv[2]))["vega_rt_workers"]
sys.exit(0 if v == float(sys.argv[1]) else "vega_rt_workers %s" % v)' "$1" "$2"
}

# curls N URL: N requests, each on a connection of its own (the shards share the accept queue).
curls() {
    local i
    for ((i = 0; i < $1; i++)); do
        curl -sS -f -o /dev/null "$2"
    done
}

@test "--shards 2: summed over the shards, kept across a reload, a killed shard and an upgrade" {
    "$PY" -c 'from prometheus_client.parser import text_string_to_metric_families' 2>/dev/null ||
        skip "python3-prometheus-client is not installed"
    local log="$T/serve.log"
    start_bg "$log" "$SERVE" --shards 2 --workers 1 -p 0 --metrics 127.0.0.1:0 "$T/root"
    local sup=$BG_PID
    wait_for_line "$log" 'shard 0 ready' 10
    wait_for_line "$log" 'shard 1 ready' 10
    local p
    p="$(sed -nE 's/.*listening on [0-9.]+:([0-9]+)$/\1/p' "$log" | head -n1)"
    MURL="$(sed -nE 's|.*metrics on (http://[0-9.]+:[0-9]+/metrics)$|\1|p' "$log" | head -n1)"
    [ -n "$p" ]
    [ -n "$MURL" ]
    URL="http://127.0.0.1:$p/hello.txt"
    run "${CHECK[@]}" snapshot "$MURL" "$T/before.json"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # both shards' runtimes are in the sum (a gauge of live processes)
    workers_are 2 "$T/before.json"
    curls 6 "$URL"
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_requests_total{code="2xx",proto="http1"}=6' \
        'vega_http_server_request_duration_seconds_count{proto="http1"}=6' \
        'vega_http_server_connections_accepted_total=6'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # a reload: generation 1 drains and exits; what it counted stays in the sum
    kill -HUP "$sup"
    wait_for_line "$log" 'generation 2 ready' 10
    wait_for_line "$log" 'shard 0 pid [0-9]+ \(generation 1\) stopped' 10
    wait_for_line "$log" 'shard 1 pid [0-9]+ \(generation 1\) stopped' 10
    curls 4 "$URL"
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_requests_total{code="2xx",proto="http1"}=10' \
        'vega_http_server_request_duration_seconds_count{proto="http1"}=10' \
        'vega_http_server_connections_accepted_total=10'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # a shard killed with SIGKILL: its counters stay, its gauges go with it
    local victim
    victim="$(sed -nE 's/.*shard 0 started: pid ([0-9]+) \(generation 2\).*/\1/p' "$log" | head -n1)"
    [ -n "$victim" ]
    kill -KILL "$victim"
    wait_for_line "$log" "shard 0 pid $victim .*killed by SIGKILL" 5
    local i # the replacement is the second generation-2 shard 0 to be ready
    for ((i = 0; i < 100; i++)); do
        [ "$(grep -cE 'shard 0 ready: pid [0-9]+ \(generation 2\)' "$log")" -ge 2 ] && break
        sleep 0.05
    done
    [ "$(grep -cE 'shard 0 ready: pid [0-9]+ \(generation 2\)' "$log")" -ge 2 ]
    curls 2 "$URL"
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_requests_total{code="2xx",proto="http1"}=12' \
        'vega_http_server_request_duration_seconds_count{proto="http1"}=12' \
        'vega_http_server_connections_accepted_total=12'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    run "${CHECK[@]}" snapshot "$MURL" "$T/after.json"
    workers_are 2 "$T/after.json"
    # a binary upgrade (SIGUSR2): the new vega-serve maps the same region, the sums go on
    kill -USR2 "$sup"
    wait_for_line "$log" 'upgrade: new supervisor pid [0-9]+ ready' 15
    local new
    new="$(sed -nE 's/.*upgrade: new supervisor pid ([0-9]+) ready.*/\1/p' "$log")"
    [ -n "$new" ]
    VEGA_BG_PIDS+=("$new") # killed by teardown
    wait_pid_exit "$sup" 15
    [ "$BG_STATUS" -eq 0 ]
    curls 3 "$URL"
    run "${CHECK[@]}" expect "$MURL" "$T/before.json" \
        'vega_http_server_requests_total{code="2xx",proto="http1"}=15' \
        'vega_http_server_request_duration_seconds_count{proto="http1"}=15' \
        'vega_http_server_connections_accepted_total=15'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    run "${CHECK[@]}" snapshot "$MURL" "$T/upgraded.json"
    workers_are 2 "$T/upgraded.json"
}
