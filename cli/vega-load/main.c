/* SPDX-License-Identifier: MIT */
/* vega-load: command line, limits, runtime setup. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load.h"

static const char usage_text[] =
    "Usage: vega-load echo [options] HOST:PORT     load an echo server (also HOST PORT)\n"
    "       vega-load echo [options] -U PATH       ... over a Unix socket\n"
    "       vega-load [http] [options] URL          load an HTTP/1.1 server (http://, https://)\n"
    "       vega-load --h2 [options] URL            load an HTTP/2 server (https://: ALPN h2;\n"
    "                                               http://: cleartext h2c, prior knowledge)\n"
    "       vega-load --h3 [options] URL            load an HTTP/3 server (https://, QUIC)\n"
    "       vega-load [options] ws://HOST:PORT/PATH load a WebSocket echo server (also wss://)\n"
    "       vega-load merge [--json] LOG...          one report from --latency-log files\n"
    "\n"
    "HTTP: keep-alive connections each write the request (pre-serialized once; --pipeline\n"
    "copies at a time), read the responses and repeat (a closed loop), reconnecting when the\n"
    "server closes. With -R the connections send on a schedule instead, and latency is\n"
    "measured from when each request should have been sent (no coordinated omission).\n"
    "HTTP/2: each connection keeps -m requests in flight, each on a stream of its own, and\n"
    "starts the next one as a response ends (with -R: when it is due and a stream is free);\n"
    "windows are opened wide (2^30-1, as h2load) and HPACK's dynamic table is used.\n"
    "HTTP/3: each connection is a QUIC connection to the URL's UDP port that keeps -m\n"
    "requests in flight, each on a stream of its own, and starts the next one as a response\n"
    "ends (with -R: when it is due and a stream is free).\n"
    "WebSocket: each connection does the HTTP/1.1 Upgrade, sends a message of -s bytes (text,\n"
    "or binary with --binary), waits for its echo, checks it (a different one is a mismatch\n"
    "error), and repeats (with -R: when it is due); at the end it closes with the close\n"
    "handshake (1000; 1001, going away, when SIGINT or SIGTERM stops the run: each connection\n"
    "waits at most 1s for the server's answer before the report). The report is echo mode's\n"
    "(round trips), with the bytes on the wire after the handshakes against the messages'.\n"
    "Echo: each connection sends a message, waits until all of it came back, checks it, and\n"
    "repeats. The result: requests (round trips) per second, bytes per second, latency\n"
    "percentiles (HdrHistogram, 1 us to 60 s, 3 significant digits) and errors.\n"
    "\n"
    "HTTP:\n"
    "  -H, --header 'Name: value'  add a request header (up to 64; Host replaces the URL's);\n"
    "                          -H @FILE: a header per line from FILE (- for stdin)\n"
    "  -i, --input-file FILE   the URLs from FILE, one per line, instead of a URL argument\n"
    "                          (h2load's): the first a whole URL, the others paths or URLs\n"
    "                          of the same scheme, host and port; each connection takes\n"
    "                          them in turn\n"
    "      --random-query NAME add NAME=<16 random hex digits> to every request's query (a\n"
    "                          fresh value each time: no cache answers)\n"
    "      --method METHOD     the request method (default GET, or POST with --body)\n"
    "      --body FILE         send FILE's content as the request body (at most 16M)\n"
    "      --pipeline N        requests written at once per connection, 1..256 (default 1)\n"
    "      --h2                HTTP/2: over TLS with ALPN h2 (https://), or cleartext with prior\n"
    "                          knowledge (http://, h2c, as h2load); also --http2,\n"
    "                          --alpn-list h2, or the mode 'h2'\n"
    "      --h3                HTTP/3 over QUIC (an https:// URL; its port is a UDP port); also\n"
    "                          --alpn-list h3, or the mode 'h3'\n"
    "      --h1                HTTP/1.1 (the default; h2load's spelling)\n"
    "  -m, --max-concurrent-streams N\n"
    "                          --h2, --h3: requests in flight per connection, 1..1024\n"
    "                          (default 1, as h2load; HTTP/2: at most what the server allows)\n"
    "      --alpn-list LIST    h2load's protocol list: its first entry picks the protocol, h2,\n"
    "                          h3 or http/1.1\n"
    "  -R, --rate N            constant rate: N requests/s over all connections (k, M\n"
    "                          suffixes); reports corrected and uncorrected latency\n"
    "      --stages LIST       a rate that changes (k6's ramping arrival rate): DUR:RATE,...\n"
    "                          each stage ramps linearly from the previous stage's rate (the\n"
    "                          first from 0) to RATE over DUR, e.g. 10s:1k,30s:1k,10s:0;\n"
    "                          the stages add up to the run (instead of -d and -R)\n"
    "  -k, --insecure          https: do not verify the server's certificate\n"
    "      --cacert FILE       https: CAs to verify the server with (default: the system's)\n"
    "      --sni NAME          https: the name to send and verify (default: the URL's host)\n"
    "  -U, --unix-socket PATH  connect to this Unix socket instead of the URL's host\n"
    "      --connect-to H1:P1:H2:P2  connect to H2:P2 when the URL's host and port are H1:P1\n"
    "                          (an empty part matches any, or keeps the URL's); the URL\n"
    "                          still names the server (Host, TLS); the first match applies\n"
    "The summary adds status codes, reconnects (not errors: servers close keep-alive\n"
    "connections), and connection times over the whole run: connect, TLS handshake (HTTP/3:\n"
    "the QUIC handshake, which is also its connect), and first byte (from the start of the\n"
    "connect to the first byte of the first response; HTTP/2: of the server's first frame).\n"
    "Over TLS it names the first handshake's version, cipher and ALPN protocol (as h2load).\n"
    "HTTP/2 adds header compression (header block bytes on the wire against their decoded\n"
    "size, both ways, as h2load's \"space savings\"), DATA bytes, and the streams the server\n"
    "refused (retried) or reset (read errors); HTTP/3 adds the QUIC packets sent, received and\n"
    "declared lost, the GOAWAYs received and the requests the server provably did not process\n"
    "(at or above a GOAWAY's id, H3_REQUEST_REJECTED, or on a connection it refused after the\n"
    "handshake): retried, not errors; a handshake the server refused or closed is retried\n"
    "(a fourth refusal in a row with no response in between is an error: a server reloaded\n"
    "again and again may refuse a few).\n"
    "\n"
    "Load:\n"
    "  -c, --connections N     connections to keep busy (default 10; k suffix: 1k = 1000;\n"
    "                          HTTP/3: at most 4096); also --clients, as h2load\n"
    "  -d, --duration TIME     how long to measure (default 10s unless -n is given; also -z,\n"
    "                          and -D as h2load)\n"
    "  -n, --requests N        stop after exactly N measured requests or round trips (also\n"
    "                          --round-trips); with -d too, whichever comes first\n"
    "  -s, --size SIZE         echo, WebSocket: bytes per message (default 64; K, M\n"
    "                          suffixes; at most 16M, and 65507 with -u)\n"
    "      --warm-up TIME      run this long first without counting (also --warm-up-time)\n"
    "      --timeout TIME      per connect and per request (default 2s); a request that\n"
    "                          takes longer counts as a timeout error and its connection\n"
    "                          reconnects\n"
    "\n"
    "WebSocket:\n"
    "      --binary            send binary messages (default: text)\n"
    "      --body FILE         the message: FILE's bytes (at most 16M; UTF-8 unless --binary)\n"
    "                          instead of -s bytes of a repeated pattern\n"
    "  -H, --header 'Name: value'  add a field to the Upgrade request (-H @FILE too, as in\n"
    "                          HTTP mode; Host and User-Agent replace vega-load's; the\n"
    "                          handshake's own fields may not be given)\n"
    "      --ws-protocol A[,B] offer these subprotocols (Sec-WebSocket-Protocol, in order; may\n"
    "                          be repeated, at most 16); the server's choice is reported, and\n"
    "                          one that was not offered fails the handshake (a parse error)\n"
    "      --ws-compress       offer permessage-deflate (RFC 7692; client_max_window_bits):\n"
    "                          messages are compressed both ways when the server accepts; the\n"
    "                          parameters are reported, and the wire bytes show the ratio\n"
    "  -R, --rate N            as in HTTP mode (corrected latency, the uncorrected beside it)\n"
    "  -k, --cacert, --sni     with wss:// URLs, as for https://\n"
    "\n"
    "Echo transport:\n"
    "  -u, --udp               UDP: one datagram per round trip, no reconnects\n"
    "  -U, --unix-socket PATH  a Unix stream socket (@NAME = abstract namespace)\n"
    "  -4 / -6                 resolve HOST to IPv4 / IPv6 only\n"
    "      --tls               TLS over the stream (each connection's handshake counts as its\n"
    "                          connect; reconnects resume the session); also --ssl\n"
    "  -k, --insecure          with --tls: do not verify the server's certificate\n"
    "      --cacert FILE       with --tls: CAs to verify the server with (default: the system's)\n"
    "      --sni NAME          with --tls: the name to send and verify (default: HOST)\n"
    "\n"
    "Runtime:\n"
    "  -t, --threads N         worker threads the connections are spread over (default 1, as\n"
    "                          h2load; also --workers)\n"
    "      --driver NAME       I/O driver: uring or epoll (default: $VEGA_DRIVER, else uring\n"
    "                          where the kernel allows it)\n"
    "\n"
    "Output:\n"
    "      --json              one JSON object on stdout instead of the summary (keys: rps,\n"
    "                          requests, latency_us{p50,p90,p99,p999,p9999,max,min,mean,\n"
    "                          stdev}, errors, status{\"200\": N}, connect_us, ...)\n"
    "      --json-lines        a JSON object per second on stdout while running (type\n"
    "                          \"interval\": requests, rps, errors, status_classes, latency_us\n"
    "                          {count,min,p50,p90,p99,p999,max,mean}), then the --json report\n"
    "                          as one line with type \"summary\"\n"
    "      --latency-log FILE  write the latencies of every second of the measured period to\n"
    "                          FILE as an HdrHistogram interval log (the format\n"
    "                          HdrHistogram's HistogramLogProcessor reads; values in\n"
    "                          microseconds, corrected with -R); combine the logs of several\n"
    "                          runs or machines with 'vega-load merge'\n"
    "      --html FILE         write a self-contained HTML report (no network): the latency\n"
    "                          percentile spectrum (corrected and uncorrected with -R),\n"
    "                          requests, errors and latency per second, as inline SVG plots\n"
    "      --fail-if LIST      conditions the run must meet, comma-separated, e.g.\n"
    "                          'p99<5ms,errors=0,rps>10k': exit 3 naming each that failed.\n"
    "                          Metrics: pNN (p50, p99, p99.9...), min, mean, max (us, ms, s;\n"
    "                          a bare number is ms), rps, requests (k, M), errors, non2xx,\n"
    "                          error% (errors and non-2xx in percent of requests + errors);\n"
    "                          operators <, <=, >, >=, = (or ==), !=\n"
    "      --no-progress       no live progress line and dashboard on stderr (shown only\n"
    "                          when stderr is a terminal)\n"
    "  -v, --verbose           report every error, not only the first of each kind\n"
    "  -h, --help              this help\n"
    "      --version           the version\n"
    "\n"
    "Durations take ns, us, ms, s, m, h (a bare number is seconds). The run stops at the end\n"
    "of -d: requests still in flight then are dropped, not counted as errors. Responses of\n"
    "any status count as requests (4xx/5xx are not errors; they are listed by code). Errors:\n"
    "connect (TLS or QUIC handshake included), read (HTTP/2 and HTTP/3: also a stream the\n"
    "server reset), write, timeout, parse (a malformed response; WebSocket: a refused or\n"
    "invalid handshake, or a protocol error), mismatch (echo, WebSocket). A connection\n"
    "that cannot connect at the start gives up; one that fails later reconnects (backing\n"
    "off after failed connects); without -d it gives up after 20 failures in a row. Errors\n"
    "are counted over the whole run, warm-up included. SIGINT or SIGTERM stops the run early\n"
    "and prints what was measured so far.\n"
    "\n"
    "Exit codes: 0 success; 1 nothing completed, every connection failed, or fewer than -n\n"
    "completed; 2 usage error; 3 a --fail-if condition failed; 128+N stopped by signal N\n"
    "(after the report).\n"
    "\n"
    "Examples:\n"
    "  vega-load -c 64 -d 5s http://127.0.0.1:8080/\n"
    "  vega-load -t 2 -c 100 -R 20k -d 10s --json https://localhost:8443/api -k\n"
    "  vega-load -c 8 -n 10k --pipeline 16 -H 'Accept: */*' http://127.0.0.1:8080/1k.bin\n"
    "  vega-load --method PUT --body data.json -c 4 -d 3s http://127.0.0.1:8080/upload\n"
    "  vega-load --h2 -c 64 -m 10 -d 5s -k https://127.0.0.1:8443/1k.bin\n"
    "  vega-load h2 -c 4 -m 100 -n 100k --json http://127.0.0.1:8080/   (h2c)\n"
    "  vega-load --h3 -c 64 -m 10 -d 5s -k https://127.0.0.1:8443/1k.bin\n"
    "  vega-load --alpn-list=h3 -c 4 -m 16 -n 100k --json https://localhost:4433/\n"
    "  vega-load -c 32 -d 5s -s 1k --binary ws://127.0.0.1:8080/ws\n"
    "  vega-load -c 8 -R 5k -d 10s -k wss://localhost:8443/ws\n"
    "  vega-load -c 16 -d 5s --ws-compress --ws-protocol chat -H @hdrs ws://127.0.0.1:8080/\n"
    "  vega-echo -l 7000 &   then:\n"
    "  vega-load echo -c 64 -d 5s 127.0.0.1:7000\n"
    "  vega-load echo -c 100 -t 2 -s 1K --warm-up 1s -d 10s --json 127.0.0.1:7000\n"
    "  vega-load echo -c 4 -n 100k --driver epoll localhost:7000\n"
    "  vega-load echo -u -c 8 -d 5s 127.0.0.1:7000\n"
    "  vega-load echo -U /tmp/echo.sock -c 16 -d 3s\n"
    "  vega-echo -l --tls 7443 &   then:  vega-load echo --tls -k -n 1000 127.0.0.1:7443\n";

enum {
    OPT_VERSION = 256,
    OPT_WORKERS,
    OPT_DRIVER,
    OPT_WARMUP,
    OPT_TIMEOUT,
    OPT_JSON,
    OPT_NO_PROGRESS,
    OPT_TLS,
    OPT_CACERT,
    OPT_SNI,
    OPT_METHOD,
    OPT_BODY,
    OPT_PIPELINE,
    OPT_H3,
    OPT_ALPN,
    OPT_H2,
    OPT_H1,
    OPT_LATENCY_LOG,
    OPT_JSON_LINES,
    OPT_FAIL_IF,
    OPT_HTML,
    OPT_BINARY,
    OPT_CONNECT_TO,
    OPT_STAGES,
    OPT_RANDOM_QUERY,
    OPT_WS_PROTOCOL,
    OPT_WS_COMPRESS,
};

static const struct option long_opts[] = {
    {"connections", required_argument, NULL, 'c'},
    {"duration", required_argument, NULL, 'd'},
    {"round-trips", required_argument, NULL, 'n'},
    {"requests", required_argument, NULL, 'n'},
    {"size", required_argument, NULL, 's'},
    {"threads", required_argument, NULL, 't'},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"warm-up", required_argument, NULL, OPT_WARMUP},
    {"warm-up-time", required_argument, NULL, OPT_WARMUP},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"udp", no_argument, NULL, 'u'},
    {"unix-socket", required_argument, NULL, 'U'},
    {"unixsock", required_argument, NULL, 'U'},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"connect-to", required_argument, NULL, OPT_CONNECT_TO},
    {"stages", required_argument, NULL, OPT_STAGES},
    {"input-file", required_argument, NULL, 'i'},
    {"random-query", required_argument, NULL, OPT_RANDOM_QUERY},
    {"no-tui", no_argument, NULL, OPT_NO_PROGRESS},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"tls", no_argument, NULL, OPT_TLS},
    {"ssl", no_argument, NULL, OPT_TLS},
    {"insecure", no_argument, NULL, 'k'},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"sni", required_argument, NULL, OPT_SNI},
    {"header", required_argument, NULL, 'H'},
    {"method", required_argument, NULL, OPT_METHOD},
    {"body", required_argument, NULL, OPT_BODY},
    {"pipeline", required_argument, NULL, OPT_PIPELINE},
    {"rate", required_argument, NULL, 'R'},
    {"h3", no_argument, NULL, OPT_H3},
    {"h2", no_argument, NULL, OPT_H2},
    {"http2", no_argument, NULL, OPT_H2},
    {"h1", no_argument, NULL, OPT_H1},
    {"clients", required_argument, NULL, 'c'},
    {"http3", no_argument, NULL, OPT_H3},
    {"alpn-list", required_argument, NULL, OPT_ALPN},
    {"npn-list", required_argument, NULL, OPT_ALPN},
    {"max-concurrent-streams", required_argument, NULL, 'm'},
    {"latency-log", required_argument, NULL, OPT_LATENCY_LOG},
    {"json-lines", no_argument, NULL, OPT_JSON_LINES},
    {"fail-if", required_argument, NULL, OPT_FAIL_IF},
    {"html", required_argument, NULL, OPT_HTML},
    {"binary", no_argument, NULL, OPT_BINARY},
    {"ws-protocol", required_argument, NULL, OPT_WS_PROTOCOL},
    {"ws-compress", no_argument, NULL, OPT_WS_COMPRESS},
    {NULL, 0, NULL, 0},
};

static uint64_t duration_arg(const char *opt, const char *v, bool zero_ok)
{
    uint64_t ns;
    if (cli_parse_duration(v, VEGA_NS_PER_S, &ns) < 0 || (!zero_ok && ns == 0))
        cli_usage_error("%s: invalid duration '%s' (try 5s, 1.5s, 500ms, 2m)", opt, v);
    if (ns > 365 * 24 * 3600 * VEGA_NS_PER_S)
        cli_usage_error("%s: '%s' is longer than a year", opt, v);
    return ns;
}

static unsigned workers_arg(const char *opt, const char *v)
{
    uint64_t n;
    if (cli_parse_uint(v, 1, 1024, &n) < 0)
        cli_usage_error("%s: expected 1..1024, got '%s'", opt, v);
    return (unsigned)n;
}

/* True for what looks like a URL or an HTTP mode name. */
static bool is_http(const char *a)
{
    return strstr(a, "://") || strcmp(a, "http") == 0 || strcmp(a, "https") == 0 ||
           strcmp(a, "h1") == 0 || strcmp(a, "h2") == 0 || strcmp(a, "h3") == 0;
}

/* HTTP mode: [http|https|h1] URL. */
static void positional_http(struct load_opts *o, int n, char **a, char *hbuf, size_t hcap,
                            char *pbuf, size_t pcap)
{
    char **argv0 = a;
    if (strcmp(a[0], "h2") == 0)
        o->h2 = true;
    if (strcmp(a[0], "h3") == 0)
        o->h3 = true;
    if (!strstr(a[0], "://")) {
        a++;
        n--;
    }
    if (n == 0)
        cli_usage_error("no URL: try 'vega-load -c 10 -d 5s http://127.0.0.1:8080/'");
    if (n > 1)
        cli_usage_error("unexpected argument '%s' after the URL", a[1]);
    char err[512];
    int e = load_url_parse(o, a[0], hbuf, hcap, pbuf, pcap, err, sizeof(err));
    if (e == -ENOMEM) {
        cli_err(NULL, "%s", err);
        exit(CLI_EXIT_NET);
    }
    if (e < 0)
        cli_usage_error("%s", err);
    o->target = a[0];
    if (o->ws) {
        if (o->h2 || o->h3 || a != argv0)
            cli_usage_error("a ws:// or wss:// URL takes no mode (WebSocket runs over HTTP/1.1)");
        o->mode = "ws";
        return;
    }
    o->mode = "http";
    o->http = true;
}

/* Mode and target from the positional arguments. */
static void positional(struct load_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap, char *tbuf, size_t tcap)
{
    int n = argc - optind;
    char **a = argv + optind;
    if (o->input_file) {
        /* -i gives the URLs: at most a mode word beside it (h2load takes none) */
        if (n > 1 || (n == 1 && (strstr(a[0], "://") || !is_http(a[0]))))
            cli_usage_error("-i gives the URLs: no URL or mode other than http, h1, h2 or h3 "
                            "beside it (got '%s')",
                            a[0]);
        char *args[2];
        int k = 0;
        if (n == 1)
            args[k++] = a[0];
        args[k++] = load_input_file(o, o->input_file);
        if (!strstr(args[k - 1], "://"))
            cli_usage_error("-i %s: the first line must be a whole URL (http:// or https://), "
                            "got '%s'",
                            o->input_file, args[k - 1]);
        positional_http(o, k, args, hbuf, hcap, pbuf, pcap);
        if (o->ws)
            cli_usage_error("-i is for HTTP URLs, not WebSocket");
        return;
    }
    if (n == 0)
        cli_usage_error("no mode: try 'vega-load -c 10 -d 5s http://HOST:PORT/' or "
                        "'vega-load echo -c 10 -d 5s HOST:PORT'");
    if (is_http(a[0])) {
        positional_http(o, n, a, hbuf, hcap, pbuf, pcap);
        return;
    }
    if (strcmp(a[0], "echo") != 0) {
        char h[8], p[8];
        if (cli_split_hostport(a[0], h, sizeof(h), p, sizeof(p)) != -EINVAL)
            cli_usage_error("no mode before '%s': try 'vega-load echo %s'", a[0], a[0]);
        cli_usage_error("unknown mode '%s' (the modes: http, h2, h3, echo; or give a URL)", a[0]);
    }
    o->mode = a[0];
    a++;
    n--;
    if (o->unix_path) {
        if (n > 0)
            cli_usage_error("unexpected argument '%s' with -U", a[0]);
        o->target = o->unix_path;
        return;
    }
    if (n == 0)
        cli_usage_error("no target: expected HOST:PORT (or -U PATH)");
    if (n > 2)
        cli_usage_error("too many arguments");
    if (n == 2) {
        o->host = a[0];
        o->port = a[1];
        if (strchr(a[0], ':'))
            snprintf(tbuf, tcap, "[%s]:%s", a[0], a[1]);
        else
            snprintf(tbuf, tcap, "%s:%s", a[0], a[1]);
        o->target = tbuf;
    } else {
        if (strstr(a[0], "://"))
            cli_usage_error("'echo' takes HOST:PORT, not a URL ('%s'); for HTTP leave out "
                            "'echo'",
                            a[0]);
        if (cli_split_hostport(a[0], hbuf, hcap, pbuf, pcap) < 0)
            cli_usage_error("'%s': expected HOST:PORT", a[0]);
        o->host = hbuf;
        o->port = pbuf;
        o->target = a[0];
    }
    if (!*o->host)
        cli_usage_error("empty host in '%s'", o->target);
    if (!cli_is_port(o->port) || strcmp(o->port, "0") == 0)
        cli_usage_error("invalid port '%s'", o->port);
}

/* -H "Name: value": the value without the whitespace around it (RFC 9110 section 5.5). */
static void header_arg(struct load_opts *o, const char *v)
{
    const char *colon = strchr(v, ':');
    if (!colon || colon == v)
        cli_usage_error("-H: expected 'Name: value', got '%s'", v);
    if (o->nheaders >= LOAD_MAX_HEADERS)
        cli_usage_error("-H: at most %u headers", LOAD_MAX_HEADERS);
    const char *val = colon + 1, *end = val + strlen(val);
    while (*val == ' ' || *val == '\t')
        val++;
    while (end > val && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    struct load_header *h = &o->headers[o->nheaders++];
    h->name = v;
    h->name_len = (size_t)(colon - v);
    h->value = val;
    h->value_len = (size_t)(end - val);
}

/* --ws-protocol A[,B...]: subprotocol names (RFC 6455 §4.1: tokens, no repeats), each kept in
 * order; the option may be given again. */
static void ws_protocol_arg(struct load_opts *o, const char *v)
{
    const char *p = v;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, ",");
        size_t len = n;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0)
            cli_usage_error("--ws-protocol: an empty name in '%s'", v);
        if (len > LOAD_MAX_WS_PROTO)
            cli_usage_error("--ws-protocol: a name over %u bytes", LOAD_MAX_WS_PROTO);
        for (size_t i = 0; i < len; i++) {
            unsigned char ch = (unsigned char)p[i];
            if (ch <= 0x20 || ch >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", ch))
                cli_usage_error("--ws-protocol: '%.*s' is not a token (RFC 6455 §4.1)", (int)len,
                                p);
        }
        for (unsigned i = 0; i < o->nws_protocols; i++)
            if (strlen(o->ws_protocols[i]) == len && memcmp(o->ws_protocols[i], p, len) == 0)
                cli_usage_error("--ws-protocol: '%.*s' is offered twice", (int)len, p);
        if (o->nws_protocols >= LOAD_MAX_WS_PROTOS)
            cli_usage_error("--ws-protocol: at most %u names", LOAD_MAX_WS_PROTOS);
        char *name = strndup(p, len);
        if (!name)
            cli_usage_error("--ws-protocol: %s", strerror(ENOMEM));
        o->ws_protocols[o->nws_protocols++] = name;
        if (!p[n])
            break;
        p += n + 1;
    }
}

/* The -H @FILE contents, kept for the whole process (the headers point into them). */
#define HEADER_FILES_MAX 8u
static char *header_bufs[HEADER_FILES_MAX];
static unsigned nheader_bufs;

static void header_buf_keep(char *buf)
{
    if (nheader_bufs >= HEADER_FILES_MAX)
        cli_usage_error("-H @FILE: at most %u files", HEADER_FILES_MAX);
    header_bufs[nheader_bufs++] = buf;
}

/* -H @FILE: a header per line, as curl reads them (line ends LF or CRLF; empty lines are
 * skipped). The file is read whole, at most LOAD_MAX_HEAD bytes, and kept for the run. */
static void header_file_arg(struct load_opts *o, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f)
        cli_usage_error("-H @%s: %s", path, strerror(errno));
    char *buf = malloc(LOAD_MAX_HEAD + 1);
    if (!buf)
        cli_usage_error("-H @%s: %s", path, strerror(ENOMEM));
    size_t n = fread(buf, 1, LOAD_MAX_HEAD + 1, f);
    bool failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (failed)
        cli_usage_error("-H @%s: cannot read", path);
    if (n > LOAD_MAX_HEAD)
        cli_usage_error("-H @%s: over %u KiB (the limit of a request head)", path,
                        LOAD_MAX_HEAD >> 10);
    if (memchr(buf, '\0', n))
        cli_usage_error("-H @%s: a NUL byte", path);
    buf[n] = '\0';
    header_buf_keep(buf);
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len > 0)
            header_arg(o, line);
    }
}

/* --connect-to HOST1:PORT1:HOST2:PORT2 (curl's): when the URL's host and port are HOST1 and
 * PORT1 (either empty: any), connect to HOST2:PORT2 instead (either empty: the URL's); the URL
 * still names the server (Host, SNI, certificate). The first that matches applies. IPv6
 * addresses go in brackets. */
static void connect_to_arg(struct load_opts *o, const char *arg)
{
    static char host[256], port[256];
    char part[4][256];
    const char *p = arg;
    for (int i = 0; i < 4; i++) {
        const char *end;
        if (*p == '[' && (i == 0 || i == 2)) {
            end = strchr(p, ']');
            if (!end)
                cli_usage_error("--connect-to: an unclosed '[' in '%s'", arg);
            p++;
        } else {
            end = i == 3 ? p + strlen(p) : strchr(p, ':');
            if (!end)
                cli_usage_error("--connect-to: expected HOST1:PORT1:HOST2:PORT2, got '%s'", arg);
        }
        size_t len = (size_t)(end - p);
        if (len + 1 > sizeof(part[i]))
            cli_usage_error("--connect-to: a part over %zu bytes in '%s'", sizeof(part[i]) - 1,
                            arg);
        memcpy(part[i], p, len);
        part[i][len] = '\0';
        p = end + (*end == ']');
        if (i < 3) {
            if (*p != ':')
                cli_usage_error("--connect-to: expected HOST1:PORT1:HOST2:PORT2, got '%s'", arg);
            p++;
        } else if (*p) {
            cli_usage_error("--connect-to: expected HOST1:PORT1:HOST2:PORT2, got '%s'", arg);
        }
    }
    for (int i = 1; i < 4; i += 2)
        if (part[i][0] && (!cli_is_port(part[i]) || strcmp(part[i], "0") == 0))
            cli_usage_error("--connect-to: invalid port '%s' in '%s'", part[i], arg);
    if (!o->host || !o->port)
        return;
    if ((part[0][0] && strcasecmp(part[0], o->host) != 0) ||
        (part[1][0] && strcmp(part[1], o->port) != 0))
        return;
    snprintf(host, sizeof(host), "%s", part[2][0] ? part[2] : o->host);
    snprintf(port, sizeof(port), "%s", part[3][0] ? part[3] : o->port);
    o->connect_host = host;
    o->connect_port = port;
}

/* --stages DUR:RATE,...: k6's ramping arrival rate (each stage ramps linearly from the
 * previous stage's rate, the first from 0, to its own over DUR). */
static void stages_arg(struct load_opts *o, const char *arg)
{
    char buf[4096];
    if (strlen(arg) + 1 > sizeof(buf))
        cli_usage_error("--stages: over %zu bytes", sizeof(buf) - 1);
    memcpy(buf, arg, strlen(arg) + 1);
    o->nstages = 0;
    uint64_t total = 0;
    for (char *st = buf, *next; st; st = next) {
        next = strchr(st, ',');
        if (next)
            *next++ = '\0';
        char *colon = strchr(st, ':');
        if (!colon)
            cli_usage_error("--stages: expected DURATION:RATE, got '%s' (e.g. 10s:1k,30s:1k,5s:0)",
                            st);
        *colon = '\0';
        if (o->nstages >= LOAD_MAX_STAGES)
            cli_usage_error("--stages: at most %u stages", LOAD_MAX_STAGES);
        uint64_t ns = duration_arg("--stages", st, false), v;
        if (cli_parse_count(colon + 1, &v) < 0 || v > LOAD_MAX_RATE)
            cli_usage_error("--stages: expected a rate of 0..%llu requests per second, got '%s'",
                            LOAD_MAX_RATE, colon + 1);
        if (ns > 365 * 24 * 3600 * VEGA_NS_PER_S - total)
            cli_usage_error("--stages: longer than a year in all");
        total += ns;
        o->stages[o->nstages++] = (struct load_stage){.ns = ns, .rate = (double)v};
        if (v > o->rate)
            o->rate = v;
    }
    if (o->nstages == 0)
        cli_usage_error("--stages: no stage in '%s'", arg);
    if (o->rate == 0)
        cli_usage_error("--stages: every stage has rate 0");
}

/* --body FILE: read whole before the run (a usage error when it cannot be). */
static void read_body(struct load_opts *o)
{
    const char *path = o->body_file;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        cli_usage_error("--body: cannot open '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > LOAD_MAX_SIZE) {
        close(fd);
        cli_usage_error("--body: '%s' is %s", path,
                        S_ISREG(st.st_mode) ? "larger than 16M" : "not a regular file");
    }
    size_t len = (size_t)st.st_size, got = 0;
    o->body = malloc(len ? len : 1);
    if (!o->body) {
        close(fd);
        cli_err(path, "out of memory");
        exit(CLI_EXIT_NET);
    }
    while (got < len) {
        ssize_t k = read(fd, o->body + got, len - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : 0;
            close(fd);
            cli_usage_error("--body: cannot read '%s': %s", path,
                            e ? strerror(e) : "it shrank while being read");
        }
        got += (size_t)k;
    }
    close(fd);
    o->body_len = len;
}

/* --alpn-list (h2load's): a comma-separated list whose first entry picks the protocol, as
 * h2load's does (h3 first: QUIC; anything else: TCP). h2, h3 and http/1.1 can be picked. */
static enum load_alpn alpn_arg(const char *v)
{
    size_t n = strcspn(v, ",");
    if (n == 2 && strncmp(v, "h3", 2) == 0)
        return LOAD_ALPN_H3;
    if (n == 2 && strncmp(v, "h2", 2) == 0)
        return LOAD_ALPN_H2;
    if (n == 8 && strncmp(v, "http/1.1", 8) == 0)
        return LOAD_ALPN_HTTP11;
    if (n == 0)
        cli_usage_error("--alpn-list: expected protocol names such as h2, h3 or http/1.1, got '%s'",
                        v);
    cli_usage_error("--alpn-list: '%.*s' is not supported: vega-load speaks h2, h3 and http/1.1, "
                    "and the list's first entry picks the protocol",
                    (int)n, v);
}

/* The HTTP/3 checks, once the mode is known. */
static void finish_h3(struct load_opts *o)
{
    if (!o->tls)
        cli_usage_error("HTTP/3 needs an https:// URL (QUIC is always encrypted)");
    if (o->unix_path)
        cli_usage_error("-U cannot be used with HTTP/3 (QUIC runs over UDP)");
    if (o->pipeline > 1)
        cli_usage_error("--pipeline is for HTTP/1.1; with HTTP/3 use -m (requests in flight per "
                        "connection, each on its own stream)");
    if (o->conns > LOAD_MAX_H3_CONNS)
        cli_usage_error("-c %llu: too many HTTP/3 connections (at most %u: each has a UDP socket "
                        "and about 256 KiB of buffers of its own)",
                        (unsigned long long)o->conns, LOAD_MAX_H3_CONNS);
}

/* The HTTP/2 checks, its buffers and its request, once the mode is known. */
static void finish_h2(struct load_opts *o)
{
    if (o->pipeline > 1)
        cli_usage_error("--pipeline is for HTTP/1.1; with HTTP/2 use -m (requests in flight per "
                        "connection, each on its own stream)");
    /* A receive and a send buffer per connection, and the core (HPACK tables, streams):
     * 64 KiB buffers while all connections fit within LOAD_MAX_BUFFERS, smaller ones for many
     * connections. */
    uint64_t fixed = (32u << 10) + (uint64_t)o->streams * 512;
    uint64_t per = LOAD_MAX_BUFFERS / o->conns;
    uint64_t buf = per > fixed ? (per - fixed) / 2 : 0;
    if (buf > LOAD_CHUNK)
        buf = LOAD_CHUNK;
    if (buf < LOAD_HTTP_BUF_MIN)
        cli_usage_error("-c %llu with -m %u: too many HTTP/2 connections (each needs about %llu "
                        "KiB; the limit is %llu MiB in all)",
                        (unsigned long long)o->conns, o->streams,
                        (unsigned long long)((fixed + 2 * LOAD_HTTP_BUF_MIN) >> 10),
                        LOAD_MAX_BUFFERS >> 20);
    o->h2_buf = (size_t)buf;
    if (o->body_file)
        read_body(o);
    char err[512];
    int e = load_h2_build(o, err, sizeof(err));
    if (e == -ENOMEM) {
        cli_err(NULL, "%s", err);
        exit(CLI_EXIT_NET);
    }
    if (e < 0)
        cli_usage_error("%s", err);
}

static void finish_ws(struct load_opts *o, bool tls_flag, bool http_opt, bool size_set);

/* The HTTP mode's checks and the request, once the mode is known. */
static void finish_http(struct load_opts *o, bool size_set, bool tls_flag)
{
    if (size_set)
        cli_usage_error("-s is for echo mode; HTTP requests are what the URL, -H and --body "
                        "make");
    if (o->udp)
        cli_usage_error("-u is for echo mode (HTTP runs over TCP or -U)");
    if (tls_flag)
        cli_usage_error("--tls is for echo mode: use an https:// URL");
    if (!o->tls && (o->insecure || o->cacert || o->sni))
        cli_usage_error("%s needs an https:// URL", o->insecure ? "-k"
                                                    : o->cacert ? "--cacert"
                                                                : "--sni");
    if (o->rate && o->pipeline > 1)
        cli_usage_error("-R and --pipeline cannot be combined: a scheduled request goes out "
                        "alone");
    if (o->h2) {
        finish_h2(o);
        return;
    }
    if (o->h3)
        finish_h3(o);
    else if (o->streams > 1)
        cli_usage_error("-m is for HTTP/2 (--h2) and HTTP/3 (--h3); an HTTP/1.1 connection has "
                        "one request in flight (see --pipeline)");
    if (o->body_file)
        read_body(o);
    if (o->h3) {
        char err[512];
        int e = load_h3_build(o, err, sizeof(err));
        if (e == -ENOMEM) {
            cli_err(NULL, "%s", err);
            exit(CLI_EXIT_NET);
        }
        if (e < 0)
            cli_usage_error("%s", err);
        return;
    }
    /* Receive buffers and parsers (about 17 KiB each) of all connections within
     * LOAD_MAX_BUFFERS: 64 KiB buffers while they fit, smaller ones for many connections. */
    uint64_t fixed = sizeof(vega_http1_parser) + 1024;
    uint64_t per = LOAD_MAX_BUFFERS / o->conns;
    uint64_t buf = per > fixed ? per - fixed : 0;
    if (buf > LOAD_CHUNK)
        buf = LOAD_CHUNK;
    if (buf < LOAD_HTTP_BUF_MIN)
        cli_usage_error("-c %llu: too many HTTP connections (each needs about %llu KiB; the "
                        "limit is %llu MiB in all)",
                        (unsigned long long)o->conns,
                        (unsigned long long)((fixed + LOAD_HTTP_BUF_MIN) >> 10),
                        LOAD_MAX_BUFFERS >> 20);
    o->http_buf = (size_t)buf;
    char err[512];
    int e = load_http_build(o, err, sizeof(err));
    if (e == -ENOMEM) {
        cli_err(NULL, "%s", err);
        exit(CLI_EXIT_NET);
    }
    if (e < 0)
        cli_usage_error("%s", err);
}

static void parse_args(struct load_opts *o, int argc, char **argv, char *hbuf, size_t hcap,
                       char *pbuf, size_t pcap, char *tbuf, size_t tcap)
{
    bool no_progress = false, size_set = false, tls_flag = false, http_opt = false;
    bool rate_flag = false;
    const char *connect_to[LOAD_MAX_CONNECT_TO];
    unsigned nconnect_to = 0;
    bool h3_flag = false, h2_flag = false, h1_flag = false;
    enum load_alpn alpn = LOAD_ALPN_NONE;
    uint64_t v;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:d:D:z:n:s:t:uU:46kvhH:R:m:i:", long_opts, NULL)) !=
           -1) {
        switch (c) {
        case 'c':
            if (cli_parse_count(optarg, &v) < 0 || v < 1 || v > LOAD_MAX_CONNS)
                cli_usage_error("-c: expected 1..%u connections, got '%s'", LOAD_MAX_CONNS, optarg);
            o->conns = v;
            break;
        case 'd':
        case 'D':
        case 'z':
            o->duration_ns = duration_arg("-d", optarg, false);
            break;
        case 'n':
            if (cli_parse_count(optarg, &v) < 0 || v < 1 || v > INT64_MAX)
                cli_usage_error("-n: expected a count (100, 10k, 1M), got '%s'", optarg);
            o->round_trips = v;
            break;
        case 's':
            if (cli_parse_size(optarg, &v) < 0 || v < 1)
                cli_usage_error("-s: expected a size in bytes (64, 1K, 4M), got '%s'", optarg);
            if (v > LOAD_MAX_SIZE)
                cli_usage_error("-s: %s is too large: messages are at most 16M", optarg);
            o->size = (size_t)v;
            size_set = true;
            break;
        case 't':
            o->workers = workers_arg("-t", optarg);
            break;
        case OPT_WORKERS:
            o->workers = workers_arg("--workers", optarg);
            break;
        case OPT_WARMUP:
            o->warmup_ns = duration_arg("--warm-up", optarg, true);
            break;
        case OPT_TIMEOUT:
            o->timeout_ns = duration_arg("--timeout", optarg, false);
            break;
        case 'u':
            o->udp = true;
            break;
        case 'U':
            o->unix_path = optarg;
            break;
        case '4':
            o->family = AF_INET;
            break;
        case '6':
            o->family = AF_INET6;
            break;
        case OPT_DRIVER:
            o->driver = cli_driver_arg(optarg);
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_JSON_LINES:
            o->json_lines = true;
            break;
        case OPT_LATENCY_LOG:
            if (!*optarg)
                cli_usage_error("--latency-log: empty file name");
            o->latency_log = optarg;
            break;
        case OPT_HTML:
            if (!*optarg)
                cli_usage_error("--html: empty file name");
            o->html = optarg;
            break;
        case OPT_FAIL_IF:
            load_fail_if_parse(o, optarg);
            break;
        case OPT_TLS:
            o->tls = true;
            tls_flag = true;
            break;
        case 'k':
            o->insecure = true;
            break;
        case OPT_CACERT:
            o->cacert = optarg;
            break;
        case OPT_SNI:
            if (!*optarg)
                cli_usage_error("--sni: empty name");
            o->sni = optarg;
            break;
        case 'H': /* HTTP and WebSocket */
            if (optarg[0] == '@')
                header_file_arg(o, optarg + 1);
            else
                header_arg(o, optarg);
            break;
        case OPT_METHOD:
            if (!*optarg)
                cli_usage_error("--method: empty method");
            o->method = optarg;
            http_opt = true;
            break;
        case OPT_BODY: /* HTTP and WebSocket */
            o->body_file = optarg;
            break;
        case OPT_PIPELINE:
            if (cli_parse_uint(optarg, 1, LOAD_MAX_PIPELINE, &v) < 0)
                cli_usage_error("--pipeline: expected 1..%u, got '%s'", LOAD_MAX_PIPELINE, optarg);
            o->pipeline = (unsigned)v;
            http_opt = true;
            break;
        case 'R':
            if (cli_parse_count(optarg, &v) < 0 || v < 1 || v > LOAD_MAX_RATE)
                cli_usage_error("-R: expected 1..%llu requests per second (500, 10k, 1M), got "
                                "'%s'",
                                LOAD_MAX_RATE, optarg);
            o->rate = v; /* HTTP and WebSocket */
            rate_flag = true;
            break;
        case OPT_H3:
            h3_flag = true;
            http_opt = true;
            break;
        case OPT_ALPN:
            alpn = alpn_arg(optarg);
            http_opt = true;
            break;
        case OPT_H2:
            h2_flag = true;
            http_opt = true;
            break;
        case OPT_H1:
            h1_flag = true;
            http_opt = true;
            break;
        case 'm':
            if (cli_parse_uint(optarg, 1, LOAD_MAX_STREAMS, &v) < 0)
                cli_usage_error("-m: expected 1..%u concurrent streams, got '%s'", LOAD_MAX_STREAMS,
                                optarg);
            o->streams = (unsigned)v;
            http_opt = true;
            break;
        case OPT_BINARY:
            o->ws_binary = true;
            break;
        case OPT_WS_PROTOCOL:
            ws_protocol_arg(o, optarg);
            break;
        case OPT_WS_COMPRESS:
            o->ws_compress = true;
            break;
        case OPT_NO_PROGRESS:
            no_progress = true;
            break;
        case 'i':
            o->input_file = optarg;
            http_opt = true;
            break;
        case OPT_RANDOM_QUERY: {
            size_t len = strlen(optarg);
            if (len == 0 || len > 64 ||
                strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789-._~") != len)
                cli_usage_error("--random-query: expected a name of 1..64 letters, digits, "
                                "'-', '.', '_' or '~', got '%s'",
                                optarg);
            o->random_query = optarg;
            http_opt = true;
            break;
        }
        case OPT_STAGES:
            stages_arg(o, optarg);
            break;
        case OPT_CONNECT_TO:
            if (nconnect_to >= LOAD_MAX_CONNECT_TO)
                cli_usage_error("--connect-to: at most %u", LOAD_MAX_CONNECT_TO);
            connect_to[nconnect_to++] = optarg;
            break;
        case 'v':
            cli_verbose++;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(CLI_EXIT_OK);
        case OPT_VERSION:
            printf("vega-load %s (libvega %s)\n", VEGA_VERSION_STRING, vega_version());
            exit(CLI_EXIT_OK);
        case ':':
            cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                cli_usage_error("unknown option '-%c'", optopt);
            cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    o->h3 = h3_flag || alpn == LOAD_ALPN_H3;
    o->h2 = h2_flag || alpn == LOAD_ALPN_H2;
    positional(o, argc, argv, hbuf, hcap, pbuf, pcap, tbuf, tcap);
    if (o->random_query && !o->http)
        cli_usage_error("--random-query is for HTTP URLs");
    if (o->http)
        load_paths_setup(o);
    for (unsigned i = 0; i < nconnect_to && !o->connect_host; i++)
        connect_to_arg(o, connect_to[i]);
    if (o->connect_host && o->unix_path)
        cli_usage_error("--connect-to cannot be used with -U");
    if (o->h3 && o->h2)
        cli_usage_error("HTTP/2 (--h2, --alpn-list h2 or the mode 'h2') and HTTP/3 (--h3, "
                        "--alpn-list h3 or the mode 'h3') contradict each other");
    if ((o->h3 || o->h2) && (alpn == LOAD_ALPN_HTTP11 || h1_flag))
        cli_usage_error("HTTP/%d (--h%d, --alpn-list h%d or the mode 'h%d') and %s contradict "
                        "each other",
                        o->h3 ? 3 : 2, o->h3 ? 3 : 2, o->h3 ? 3 : 2, o->h3 ? 3 : 2,
                        h1_flag ? "--h1" : "--alpn-list http/1.1");
    if (o->unix_path && o->family != AF_UNSPEC)
        cli_usage_error("-4/-6 cannot be used with -U");
    if (o->unix_path && !*o->unix_path)
        cli_usage_error("-U: empty path");
    if (o->json && o->json_lines)
        cli_usage_error("--json and --json-lines contradict each other (--json-lines ends with "
                        "the --json report as its last line)");
    if (o->nstages) {
        if (rate_flag)
            cli_usage_error("--stages and -R contradict each other (the stages give the rate)");
        if (o->duration_ns)
            cli_usage_error("--stages and -d contradict each other (the stages add up to the run)");
        uint64_t total = 0;
        for (unsigned i = 0; i < o->nstages; i++)
            total += o->stages[i].ns;
        if (o->warmup_ns >= total)
            cli_usage_error("--warm-up is as long as the stages or longer: nothing to measure");
        o->duration_ns = total - o->warmup_ns;
    }
    if (!o->duration_ns && !o->round_trips)
        o->duration_ns = 10 * VEGA_NS_PER_S;
    o->progress = !no_progress && isatty(STDERR_FILENO);
    if (!o->ws && (o->ws_binary || o->nws_protocols || o->ws_compress))
        cli_usage_error("%s is for WebSocket (a ws:// or wss:// URL)", o->ws_binary ? "--binary"
                                                                       : o->nws_protocols
                                                                           ? "--ws-protocol"
                                                                           : "--ws-compress");
    if (o->http) {
        finish_http(o, size_set, tls_flag);
        return;
    }
    if (o->ws) {
        finish_ws(o, tls_flag, http_opt, size_set);
        return;
    }
    if (http_opt || o->rate || o->nheaders || o->body_file)
        cli_usage_error("-H, --method, --body, --pipeline, -R, -m, --h1, --h2, --h3 and "
                        "--alpn-list are for HTTP mode (a URL)");
    if (o->unix_path && o->udp)
        cli_usage_error("-U and -u cannot be combined (Unix datagram sockets are not supported)");
    if (o->tls && o->udp)
        cli_usage_error("--tls cannot be used with -u (DTLS is not supported)");
    if (!o->tls && (o->insecure || o->cacert || o->sni))
        cli_usage_error("%s needs --tls", o->insecure ? "-k" : o->cacert ? "--cacert" : "--sni");
    if (o->udp && o->size > LOAD_MAX_UDP_SIZE)
        cli_usage_error("-s: %zu bytes do not fit in one UDP datagram (at most %u with -u)",
                        o->size, LOAD_MAX_UDP_SIZE);
    uint64_t cap = o->udp ? o->size + 1 : (o->size < LOAD_CHUNK ? o->size : LOAD_CHUNK);
    if (o->conns * cap > LOAD_MAX_BUFFERS)
        cli_usage_error("-c %llu with -s %zu needs %llu MiB of receive buffers; the limit is "
                        "%llu MiB",
                        (unsigned long long)o->conns, o->size,
                        (unsigned long long)(o->conns * cap >> 20), LOAD_MAX_BUFFERS >> 20);
}

/* The WebSocket mode's checks, once the mode is known. */
/* Whether p[0..n) is UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing
 * above U+10FFFF): what a text message must be (RFC 6455 §8.1). */
static bool is_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + k >= n) /* the sequence's last byte is past the end */
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static void finish_ws(struct load_opts *o, bool tls_flag, bool http_opt, bool size_set)
{
    if (http_opt)
        cli_usage_error("--method, --pipeline, -m, -i, --random-query, --h1, --h2, --h3 and "
                        "--alpn-list are for HTTP mode");
    if (o->body_file) {
        /* --body FILE: the message is the file's bytes instead of -s bytes of a pattern. */
        if (size_set)
            cli_usage_error("-s and --body contradict each other (the message is the file)");
        read_body(o);
        if (o->body_len == 0)
            cli_usage_error("--body: '%s' is empty", o->body_file);
        if (!o->ws_binary && !is_utf8(o->body, o->body_len))
            cli_usage_error("--body: '%s' is not UTF-8, which a text message must be (RFC 6455 "
                            "§8.1): send it with --binary",
                            o->body_file);
        o->size = o->body_len;
    }
    if (o->udp)
        cli_usage_error("-u is for echo mode (WebSocket runs over TCP or -U)");
    if (tls_flag)
        cli_usage_error("--tls is for echo mode: use a wss:// URL");
    if (!o->tls && (o->insecure || o->cacert || o->sni))
        cli_usage_error("%s needs a wss:// URL", o->insecure ? "-k"
                                                 : o->cacert ? "--cacert"
                                                             : "--sni");
    /* Each connection holds its received message whole. */
    if (o->conns * o->size > LOAD_MAX_BUFFERS)
        cli_usage_error("-c %llu with -s %zu needs %llu MiB of message buffers; the limit is "
                        "%llu MiB",
                        (unsigned long long)o->conns, o->size,
                        (unsigned long long)(o->conns * o->size >> 20), LOAD_MAX_BUFFERS >> 20);
    char err[512];
    int e = load_ws_build(o, err, sizeof(err));
    if (e == -ENOMEM) {
        cli_err(NULL, "%s", err);
        exit(CLI_EXIT_NET);
    }
    if (e < 0)
        cli_usage_error("%s", err);
}

/* Each connection needs a descriptor: raise the soft limit to what -c needs if the hard limit
 * allows it. */
static void fd_limit(const struct load_opts *o)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)o->conns * (o->rate ? 2 : 1) + 64; /* -R: a timer per connection */
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    rlim_t cur = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = cur;
    if (rl.rlim_cur < need)
        cli_usage_error("-c %llu needs about %llu file descriptors; the limit is %llu "
                        "(raise it with ulimit -n)",
                        (unsigned long long)o->conns, (unsigned long long)need,
                        (unsigned long long)rl.rlim_cur);
}

struct main_arg {
    const struct load_opts *o;
    int code;
};

static void *main_task(void *arg)
{
    struct main_arg *m = arg;
    m->code = load_run_main(m->o);
    return NULL;
}

int main(int argc, char **argv)
{
    char hbuf[256], pbuf[8], tbuf[300];
    struct load_opts o;
    memset(&o, 0, sizeof(o));
    o.family = AF_UNSPEC;
    o.conns = 10;
    o.size = 64;
    o.workers = 1;
    o.timeout_ns = 2 * VEGA_NS_PER_S;
    o.pipeline = 1;
    o.streams = 1;
    o.driver = VEGA_DRIVER_DEFAULT;
    cli_set_prog("vega-load");
    if (argc > 1 && strcmp(argv[1], "merge") == 0)
        return load_merge_main(argc - 1, argv + 1);
    parse_args(&o, argc, argv, hbuf, sizeof(hbuf), pbuf, sizeof(pbuf), tbuf, sizeof(tbuf));
    fd_limit(&o);

    if (cli_block_signals(&o.stop_signals, 0) != CLI_EXIT_OK)
        return CLI_EXIT_NET;

    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = o.workers;
    ro.driver = o.driver;
    struct main_arg m = {.o = &o, .code = CLI_EXIT_NET};
    if (cli_rt_run(&ro, main_task, &m) != CLI_EXIT_OK)
        m.code = CLI_EXIT_NET;
    free(o.req);
    for (unsigned i = 0; i < o.nws_protocols; i++)
        free(o.ws_protocols[i]);
    load_h3_opts_free(&o);
    load_h2_opts_free(&o);
    free(o.body);
    free(o.path);
    free(o.host_header);
    load_paths_free(&o);
    return m.code;
}
