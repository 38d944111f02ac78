/* SPDX-License-Identifier: MIT */
/* vega-load: a load generator. One session file per protocol (echo.c, http.c for HTTP/1.1,
 * h2.c for HTTP/2 with h2_req.c building its request, h3.c for HTTP/3 with h3_run.c setting up
 * its request and endpoint, ws.c for WebSocket); run.c drives a run, report.c prints the result. */
#ifndef VEGA_LOAD_H
#define VEGA_LOAD_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <vega/quic_ep.h>
#include <vega/vega.h>

#include "cli.h"
#include "hdrlog.h"
#include "hist.h"

/* Limits. */
#define LOAD_MAX_SIZE       (16u << 20)  /* -s */
#define LOAD_MAX_UDP_SIZE   65507u       /* -s with -u: the largest UDP/IPv4 payload */
#define LOAD_MAX_CONNS      1000000u     /* -c */
#define LOAD_MAX_BUFFERS    (1ull << 30) /* receive buffers of all connections together */
#define LOAD_CHUNK          65536u       /* receive buffer per connection, at most */
#define LOAD_HIST_MAX_US    60000000ull  /* latencies are kept from 1 us to 60 s ... */
#define LOAD_HIST_DIGITS    3            /* ... to 3 significant digits */
#define LOAD_MAX_ADDRS      8
#define LOAD_MAX_HEADERS    64           /* -H */
#define LOAD_MAX_HEAD       (64u << 10)  /* the serialized request head; also -H @FILE */
#define LOAD_MAX_CONNECT_TO 16u          /* --connect-to options */
#define LOAD_MAX_STAGES     64u          /* --stages */
#define LOAD_MAX_PATHS      100000u      /* -i: URLs */
#define LOAD_MAX_PATH       8192u        /* -i, --random-query: one request-target */
#define LOAD_MAX_INPUT_FILE (16u << 20)  /* -i: the file */
#define LOAD_RANDOM_DIGITS  16           /* --random-query: hex digits of the value */
#define LOAD_MAX_PIPELINE   256u         /* --pipeline */
#define LOAD_MAX_REQ_BATCH  (64u << 20)  /* a request times --pipeline */
#define LOAD_MAX_RATE       100000000ull /* -R, requests per second */
#define LOAD_HTTP_BUF_MIN   4096u        /* receive buffer per HTTP connection, at least */
#define LOAD_STATUS_MAX     1000         /* status codes 100..999 are counted one by one */
#define LOAD_MAX_STREAMS    1024u /* -m: HTTP/2 and HTTP/3 requests in flight per connection */
#define LOAD_MAX_H3_CONNS   4096u /* -c with HTTP/3: a UDP socket and ~256 KiB each */
#define LOAD_MAX_FAIL_IF    32    /* --fail-if conditions */
#define LOAD_EXIT_THRESHOLD 3     /* exit code: a --fail-if condition failed */
#define LOAD_MAX_WS_PROTOS  16    /* --ws-protocol names */
#define LOAD_MAX_WS_PROTO   128   /* ... each at most this long */

/* --alpn-list: the protocol its first entry picks. */
enum load_alpn {
    LOAD_ALPN_NONE,
    LOAD_ALPN_H3,
    LOAD_ALPN_H2,
    LOAD_ALPN_HTTP11,
};

/* One --fail-if condition: METRIC OP VALUE. */
enum load_metric {
    LOAD_M_PCT,      /* pNN: a latency percentile (arg) */
    LOAD_M_MIN,      /* latency */
    LOAD_M_MEAN,     /* latency */
    LOAD_M_MAX,      /* latency */
    LOAD_M_RPS,      /* requests per second */
    LOAD_M_REQUESTS, /* requests (round trips) completed */
    LOAD_M_ERRORS,   /* errors of every kind (connect, read, write, timeout, parse, mismatch) */
    LOAD_M_NON2XX,   /* HTTP: responses whose status is not 2xx */
    LOAD_M_ERROR_PCT /* errors and non-2xx responses, in percent of requests + errors */
};

enum load_cmp {
    LOAD_LT,
    LOAD_LE,
    LOAD_GT,
    LOAD_GE,
    LOAD_EQ,
    LOAD_NE
};

struct load_cond {
    enum load_metric metric;
    enum load_cmp cmp;
    double arg;    /* the percentile of LOAD_M_PCT */
    double value;  /* latency in microseconds; counts and rates as they are */
    char text[64]; /* as written, for messages (cut at 63 characters) */
};

struct load_h2_req; /* h2_req.c: the HTTP/2 request's fields */
struct load_h3_req; /* h3_run.c: the HTTP/3 request's parts */
struct load_h3;     /* h3_run.c: a run's QUIC endpoint */

/* One -H header, as given: name and value borrowed from argv. */
struct load_header {
    const char *name, *value;
    size_t name_len, value_len;
};

struct load_opts {
    const char *mode;        /* "echo" or "http" */
    const char *target;      /* as the user wrote it, for messages: HOST:PORT or the -U path */
    const char *host, *port; /* TCP/UDP */
    const char *connect_host, *connect_port; /* --connect-to: where to connect (NULL: host) */
    const char *unix_path;                   /* -U */
    bool udp;                                /* -u */
    int family;                              /* AF_UNSPEC, AF_INET (-4), AF_INET6 (-6) */
    uint64_t conns;                          /* -c */
    uint64_t duration_ns;                    /* -d: 0 = bounded by -n alone */
    uint64_t round_trips;                    /* -n: 0 = bounded by -d alone */
    uint64_t warmup_ns;                      /* --warm-up */
    uint64_t timeout_ns;                     /* --timeout: per connect and per round trip */
    size_t size;                             /* -s */
    unsigned workers;                        /* -t */
    vega_driver_kind driver;
    bool json;
    bool progress;         /* a live line on stderr (a terminal, no --no-progress) */
    bool tls;              /* --tls */
    bool insecure;         /* -k: no certificate verification */
    const char *cacert;    /* --cacert */
    const char *sni;       /* --sni: the name to send and verify (default: HOST) */
    sigset_t stop_signals; /* SIGINT, SIGTERM: stop early, report what was done */
    /* HTTP mode. */
    bool http;
    const char *url; /* as given */
    char *path;      /* the request-target: path and query (owned) */
    /* -i FILE and --random-query NAME (paths.c): the request-targets each connection takes in
     * turn, with --random-query's placeholder digits at their end (owned) */
    const char *input_file, *random_query;
    char *input_buf, *input_rest; /* -i: the file's text; the lines after the first */
    char **paths;
    unsigned npaths, paths_cap;
    const char *path_longest; /* the one the builders check and size requests with */
    bool paths_vary;          /* npaths > 1 or --random-query */
    char *host_header;        /* the Host field from the URL (owned) */
    const char *method;       /* --method; NULL = GET, or POST with --body */
    struct load_header headers[LOAD_MAX_HEADERS];
    unsigned nheaders;
    const char *body_file; /* --body */
    unsigned char *body;   /* its content (owned) */
    size_t body_len;
    unsigned pipeline; /* --pipeline: requests in flight per connection */
    uint64_t rate;     /* -R: requests per second over all connections (--stages: the highest
                        * stage's); 0 = closed loop */
    /* --stages: the rate ramps linearly from the previous stage's (the first: from 0) to each
     * stage's over its duration; the stages add up to the run (warm-up included) */
    struct load_stage {
        uint64_t ns;
        double rate;
    } stages[LOAD_MAX_STAGES];
    unsigned nstages;
    bool head_method;   /* HEAD: responses have no body */
    unsigned char *req; /* the serialized request, repeated --pipeline times (owned) */
    /* paths_vary: a serialized request per path (--random-query's digits at rand_at), the
     * longest's length (owned) */
    struct load_variant {
        unsigned char *req;
        size_t len, rand_at;
    } * variants;
    size_t variant_max;
    size_t req_len;  /* one request */
    size_t http_buf; /* receive buffer per connection */
    /* WebSocket (a ws:// or wss:// URL; url, path, host_header, rate as in HTTP mode, size and
     * the report as in echo mode). */
    bool ws;
    bool ws_binary; /* --binary: binary messages (default: text) */
    /* --ws-protocol: the subprotocols offered, in order (owned) */
    char *ws_protocols[LOAD_MAX_WS_PROTOS];
    unsigned nws_protocols;
    bool ws_compress; /* --ws-compress: offer permessage-deflate (RFC 7692) */
    size_t ws_key_at; /* req is the Upgrade request; its Sec-WebSocket-Key value is here */
    /* HTTP/3 (--h3, --alpn-list h3, mode h3). */
    bool h3;
    unsigned streams;           /* -m: requests in flight per connection (HTTP/2 and HTTP/3) */
    struct load_h3_req *h3_req; /* the request's pseudo-header and regular fields (owned) */
    /* HTTP/2 (--h2, --alpn-list h2, mode h2): ALPN h2 over TLS, prior knowledge (h2c) on
     * http:// URLs. */
    bool h2;
    struct load_h2_req *h2_req; /* the request's fields (owned) */
    size_t h2_buf;              /* receive and send buffer per HTTP/2 connection, each */
    /* Reports. */
    const char *latency_log; /* --latency-log FILE: HdrHistogram interval log */
    const char *html;        /* --html FILE: a self-contained HTML report */
    bool json_lines;         /* --json-lines: a JSON object per second on stdout */
    struct load_cond fail_if[LOAD_MAX_FAIL_IF]; /* --fail-if */
    unsigned nfail_if;
};

/* Error kinds, as wrk counts them (plus mismatch: the echo differs from what was sent). */
enum load_kind {
    LOAD_ERR_CONNECT,
    LOAD_ERR_READ,
    LOAD_ERR_WRITE,
    LOAD_ERR_TIMEOUT,
    LOAD_ERR_MISMATCH,
    LOAD_ERR_PARSE, /* HTTP: a malformed response */
    LOAD_ERR_KINDS,
};

/* Counters of one runtime worker. Only tasks running on that worker write them (tasks never
 * run in parallel on one worker and recording never suspends), so no locks: the counters are
 * atomics only so that the progress line may read them; the histogram is read after the run. */
struct load_worker {
    _Alignas(64) atomic_uint_fast64_t round_trips;
    atomic_uint_fast64_t connects;
    atomic_uint_fast64_t errors[LOAD_ERR_KINDS];
    struct cli_hist hist; /* microseconds */
    /* HTTP mode (the histograms are set up only there). */
    atomic_uint_fast64_t bytes;      /* read during the measured period */
    atomic_uint_fast64_t reconnects; /* connects after the first of a connection */
    atomic_uint_fast64_t status[LOAD_STATUS_MAX];
    struct cli_hist hist_unc; /* -R: latency from the actual send */
    struct cli_hist connect_hist, tls_hist, first_byte_hist;
    /* HTTP/3: QUIC packets of the connections that ended (all do by the end of the run) */
    atomic_uint_fast64_t quic_sent, quic_recv, quic_lost;
    /* HTTP/3: requests the server provably did not process (at or above a GOAWAY's id, on a
     * connection refused after its handshake, or H3_REQUEST_REJECTED): retried, not errors;
     * GOAWAY frames received */
    atomic_uint_fast64_t h3_retried, h3_goaway;
    /* HTTP/2, over the whole run: header block bytes on the wire (HEADERS and CONTINUATION
     * payloads without padding and priority) and decoded (names + values, as h2load counts
     * them), both ways; DATA payload received; streams the server refused (REFUSED_STREAM, or
     * above a GOAWAY's last id: retried) or reset otherwise (errors) */
    atomic_uint_fast64_t h2_head_in, h2_head_in_decoded, h2_head_out, h2_head_out_decoded;
    atomic_uint_fast64_t h2_data_in, h2_refused, h2_reset, h2_goaway;
    /* WebSocket, over the whole run: bytes on the wire after the handshakes (frames, masks,
     * control frames, compressed payloads; TLS records not), and message payload bytes sent and
     * received (before compression) */
    atomic_uint_fast64_t ws_wire_out, ws_wire_in, ws_msg_out, ws_msg_in;
    uint64_t sample_last; /* run.c's Req/Sec sampler only */
    /* --latency-log, --json-lines: the current interval's latencies, slot by slot as in hist
     * (added to by this worker's tasks, taken by the interval task); NULL when neither */
    _Atomic uint64_t *ivl;
};

/* One second of the run, for --html. */
struct load_sec {
    double t, len;                 /* start (since the measured period began) and length, s */
    uint64_t requests, errors;     /* in the interval */
    uint64_t p50, p99, max, count; /* its latencies, us */
};

#define LOAD_HTML_MAX_SECONDS 86400u /* seconds kept for --html (a day; the rest is left out) */

#define LOAD_DASH_SECONDS 60u /* seconds of requests/s the terminal dashboard plots */

/* The terminal dashboard's view of the run (dash.c): the last whole interval and the rates of
 * the latest seconds. Written by the interval tick, read by the progress line; both run in the
 * run's main task. */
struct load_dash {
    bool have; /* an interval has ended */
    double rps;
    uint64_t p50, p99, max, count, errors; /* the last interval's */
    uint64_t status[6];                    /* ... responses by status class (HTTP) */
    double rates[LOAD_DASH_SECONDS];       /* ring of requests/s, oldest at head */
    unsigned nrates, head;
};

/* --latency-log, --json-lines, --html and the dashboard: the per-second intervals (ivl.c). */
struct load_ivl {
    bool on;
    FILE *log; /* --latency-log, or NULL */
    struct hdrlog_writer w;
    struct cli_hist h;              /* the interval being taken */
    vega_tstamp at;                 /* when the current interval began */
    double wall_at;                 /* ... in seconds since the epoch */
    int64_t wall_offset_ns;         /* CLOCK_REALTIME minus vega_now() */
    uint64_t n;                     /* intervals taken */
    uint64_t rt, errors, status[6]; /* the counters at the end of the previous interval */
    int error;                      /* the first write error (the log stops there) */
    struct load_sec *secs;          /* --html: the intervals so far ... */
    size_t nsecs, secs_cap;         /* ... (at most LOAD_HTML_MAX_SECONDS) */
    bool secs_cut;                  /* more intervals than that, or no memory for them */
    struct load_dash dash;          /* the dashboard (a terminal, no --no-progress) */
};

/* Mean, standard deviation and maximum of a series of samples. */
struct load_series {
    uint64_t n;
    double sum, sumsq, max;
};

struct load_run {
    const struct load_opts *o;
    vega_addr addrs[LOAD_MAX_ADDRS];
    unsigned naddrs;
    atomic_uint good_addr;                /* the address the latest connect succeeded with */
    const unsigned char *payload;         /* o->size bytes, shared read-only by every connection */
    vega_tstamp start;                    /* connections start */
    vega_tstamp measure_start;            /* start + warm-up */
    vega_deadline end;                    /* measure_start + duration, or VEGA_DEADLINE_NEVER */
    atomic_int_fast64_t tickets;          /* -n: measured round trips still to start */
    atomic_uint_fast64_t gave_up;         /* connections that stopped before the end */
    atomic_uint_fast64_t never_connected; /* ... of which never connected at all */
    atomic_bool reported[LOAD_ERR_KINDS];
    unsigned nworkers;
    struct load_worker *w;
    vega_tls_config *tls;          /* --tls: shared by every connection (and its session cache) */
    struct load_h3 *h3;            /* HTTP/3: the QUIC endpoint every connection is made on */
    atomic_uint next_index;        /* connections take 0, 1, 2 ... (-R staggers them) */
    atomic_flag tls_seen;          /* the first TLS handshake filled tls_info (h2load prints it) */
    char tls_info[128];            /* "TLSv1.3, TLS_AES_256_GCM_SHA384, ALPN h2" */
    struct load_series thread_rps; /* Req/Sec per worker, sampled every 100 ms ... */
    vega_tstamp sample_at;         /* ... the latest at this time */
    struct load_ivl ivl;           /* --latency-log, --json-lines */
    /* WebSocket: the tasks that do the close handshake of connections a signal cancelled */
    vega_group *closers;
    /* ... and what the first handshake negotiated (--ws-protocol, --ws-compress): the
     * subprotocol and the Sec-WebSocket-Extensions answer, "" when none */
    atomic_flag ws_seen;
    bool ws_negotiated;
    char ws_proto[LOAD_MAX_WS_PROTO + 2];
    char ws_ext[192];
    vega_ws_deflate_params ws_deflate;
};

/* Totals after a run. */
struct load_totals {
    uint64_t round_trips, connects, errors[LOAD_ERR_KINDS], error_sum;
    uint64_t gave_up, never_connected;
    double elapsed_s; /* measured time */
    struct cli_hist hist;
    const char *driver;
    unsigned workers;
    int signo;            /* the signal that stopped the run early, 0 if none */
    const char *tls_info; /* the first TLS handshake's version, cipher and ALPN; NULL if none */
    /* HTTP mode. */
    uint64_t bytes, reconnects, status[LOAD_STATUS_MAX];
    struct cli_hist hist_unc, connect_hist, tls_hist, first_byte_hist;
    struct load_series thread_rps;
    uint64_t quic_sent, quic_recv, quic_lost, h3_retried, h3_goaway;           /* HTTP/3 */
    uint64_t h2_head_in, h2_head_in_decoded, h2_head_out, h2_head_out_decoded; /* HTTP/2 */
    uint64_t h2_data_in, h2_refused, h2_reset, h2_goaway;
    uint64_t ws_wire_out, ws_wire_in, ws_msg_out, ws_msg_in; /* WebSocket */
    /* ... negotiated (NULL: nothing asked, or no connection) */
    const char *ws_proto, *ws_ext;
    const vega_ws_deflate_params *ws_deflate;
};

/* ---- run.c ---------------------------------------------------------------------------------- */

/* The runtime's main task body for every mode: returns the exit code. */
int load_run_main(const struct load_opts *o);

/* The calling task's worker counters. */
struct load_worker *load_worker_self(struct load_run *r);

/* Connects to the target. Until one address worked, each is tried in turn (localhost may be
 * ::1 then 127.0.0.1); a connection that was up before (ever) tries only the good one.
 * Returns 0 or the last connect error. */
int load_connect(struct load_run *r, vega_sock **out, bool ever, vega_deadline dl);

/* Adds d to a counter that only the calling worker writes. */
static inline void load_bump(atomic_uint_fast64_t *c, uint64_t d)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

/* Counts an error of kind (code: a negative libvega code, or 0 for "closed by the peer") and
 * reports the first of each kind on stderr (every one with -v). */
void load_error(struct load_run *r, enum load_kind kind, int code);
/* load_error with a message of its own (NULL: the code's), e.g. a TLS failure's. */
void load_error_msg(struct load_run *r, enum load_kind kind, int code, const char *msg);

/* -n: takes one round trip to do; false when none are left. load_ticket_return gives back the
 * ticket of a round trip that did not complete, so that exactly N complete. */
bool load_ticket_take(struct load_run *r);
void load_ticket_return(struct load_run *r);

/* -R's timers, with the kernel's resolution (the runtime's timers tick in milliseconds, which
 * would add up to 1 ms of send lateness to every corrected latency). load_timer_open returns a
 * timerfd (or -1) and the offset of CLOCK_MONOTONIC from vega_now(); load_timer_arm makes it
 * fire at t (a vega_now() time; VEGA_DEADLINE_NEVER disarms it), load_timer_fire at once (a
 * wake-up from another task). Both return 0 or -errno / -EINVAL. Read the fd with
 * vega_fd_read. */
int load_timer_open(int64_t *mono_offset);
int load_timer_arm(int fd, int64_t mono_offset, vega_tstamp t);
int load_timer_fire(int fd);

/* Keeps the TLS version, cipher and ALPN protocol of the first handshake for the report. */
void load_tls_seen(struct load_run *r, vega_stream *tls);

/* min(now + --timeout, end); *at_end tells whether the end of the run is the nearer one. */
vega_deadline load_step_deadline(const struct load_run *r, vega_tstamp now, bool *at_end);

/* -R and --stages: when the k-th request of the connection with this index (0..conns-1) is
 * due. The schedule interleaves the connections: the run's n-th request, n = k * conns +
 * index, is due when n requests have been asked for by the rate since the start.
 * VEGA_DEADLINE_NEVER when the stages end before it. */
vega_tstamp load_pace(const struct load_run *r, uint64_t k, unsigned index);

/* Records a measured latency (the corrected one with -R) of a round trip in w's histogram and,
 * with --latency-log or --json-lines, in the current interval. */
static inline void load_latency(struct load_worker *w, uint64_t us)
{
    cli_hist_record(&w->hist, us);
    if (w->ivl)
        atomic_fetch_add_explicit(&w->ivl[cli_hist_index(&w->hist, us)], 1, memory_order_relaxed);
}

/* ---- paths.c -------------------------------------------------------------------------------- */

/* A connection's walk over o->paths and its random digits. */
struct load_pathgen {
    uint64_t next, rng;
};

/* -i FILE: reads the file (at most LOAD_MAX_INPUT_FILE) and returns its first URL; the other
 * lines are kept for load_paths_setup. Usage errors exit. */
char *load_input_file(struct load_opts *o, const char *file);
/* Once the URL is parsed: the paths of -i and --random-query (nothing to do without them),
 * each checked; usage errors exit. */
void load_paths_setup(struct load_opts *o);
void load_paths_start(struct load_pathgen *g, const struct load_opts *o, unsigned index);
/* Frees the paths, the -i file's text and the requests built per path. */
void load_paths_free(struct load_opts *o);
/* The index in o->paths of the next request's path. */
unsigned load_paths_pick(struct load_pathgen *g, const struct load_opts *o);
/* Writes LOAD_RANDOM_DIGITS fresh hex digits at at. */
void load_random_digits(struct load_pathgen *g, char *at);

/* ---- dash.c --------------------------------------------------------------------------------- */

/* Keeps an interval that ended for the dashboard: its requests/s, latency percentiles from h,
 * errors and responses by status class. */
void load_dash_keep(struct load_dash *d, double rps, const struct cli_hist *h, uint64_t errors,
                    const uint64_t status[6]);
/* Appends the dashboard's lines below the progress line to buf (each as "\n" + erase line +
 * text, at most cols - 1 columns wide). Returns how many lines it appended (0 before the first
 * interval ends, or when the terminal is too narrow). */
unsigned load_dash_lines(const struct load_run *r, char *buf, size_t cap, size_t *len,
                         unsigned cols);

/* ---- ivl.c ---------------------------------------------------------------------------------- */

/* Sets up the intervals (the file, the workers' slots) before the run. Returns 0 or a negative
 * code (reported). */
int load_ivl_setup(struct load_run *r);
/* Starts the first interval at the start of the measured period. */
void load_ivl_start(struct load_run *r);
/* Takes the interval when a second has passed since it began (or, with last, whatever there
 * is: the end of the run), writing its log line and JSON line. */
void load_ivl_tick(struct load_run *r, vega_tstamp now, bool last);
void load_ivl_fini(struct load_run *r);

/* --fail-if: parses the conditions of one argument into o (usage error on a bad one), and
 * checks them against a run's totals: returns the failed count, each named on stderr. */
void load_fail_if_parse(struct load_opts *o, const char *arg);
unsigned load_fail_if_check(const struct load_opts *o, const struct load_totals *t);

/* --html: writes the report (html.c). Returns 0 or a negative code (reported). */
int load_html_write(const struct load_run *r, const struct load_totals *t);

/* vega-load merge FILE...: the mode's main. */
int load_merge_main(int argc, char **argv);

/* ---- conn.c --------------------------------------------------------------------------------- */

/* What a step of a stream session's connection came to. */
enum load_step {
    LOAD_STEP_OK,
    LOAD_STEP_FAIL,  /* counted as an error; reconnect */
    LOAD_STEP_CLOSE, /* HTTP: the server closed the connection as it may: reconnect, no error */
    LOAD_STEP_STOP,  /* the run is over (end of -d, or cancelled) */
};

/* A connection's history for the retry rules. */
struct load_retry {
    bool ever;      /* connected at least once (UDP: a round trip completed) */
    unsigned fails; /* failures in a row */
};

/* Opens with open(conn) until it works, pausing between tries (load_backoff). A connection
 * that never connected gives up after its first failure; without -d one gives up after 20
 * failures in a row. Returns true when open; false when the connection is done for good: the
 * run is over, or it gave up (counted in r->gave_up and r->never_connected). */
bool load_conn_open_retry(struct load_run *r, struct load_retry *rt,
                          enum load_step (*open)(void *conn), void *conn);
/* Counts a failed round trip: false when the connection gives up (without -d, 20 failures in a
 * row; counted in r->gave_up). */
bool load_conn_failed(struct load_run *r, struct load_retry *rt);
/* Waits before the next try after fails failures in a row (10 ms doubling up to 1 s): false when
 * the run ends meanwhile. */
bool load_backoff(struct load_run *r, unsigned fails);

/* A multiplexed session's connection (h2.c, h3.c), as load_mux_loop drives it. */
struct load_mux_ops {
    bool (*is_open)(const void *conn);
    enum load_step (*open)(void *conn);  /* one try, as load_conn_open_retry's open */
    enum load_step (*serve)(void *conn); /* requests until the connection is done with */
    /* Closes the connection; ended: serve came to LOAD_STEP_STOP or LOAD_STEP_CLOSE (the
     * connection may say goodbye), not to a failure. */
    void (*close)(void *conn, bool ended);
    uint64_t (*responses)(const void *conn); /* responses on the connection just closed */
};

/* One connection task's life: opens (load_conn_open_retry) when not open, serves, closes, and
 * again, until the run is over or the connection gives up. A connection the server closed as it
 * may (LOAD_STEP_CLOSE) reconnects at once; a failed one counts (load_conn_failed), and one that
 * failed before any response waits first (load_backoff). A connection that got a response ends
 * the failures in a row. */
void load_mux_loop(struct load_run *r, struct load_retry *rt, const struct load_mux_ops *ops,
                   void *conn);

/* What a failed call with code comes to: LOAD_STEP_STOP when the run is over (cancelled, or a
 * timeout at its end), else LOAD_STEP_FAIL, to be counted as *kind (a timeout outside connecting
 * becomes LOAD_ERR_TIMEOUT). Counts nothing itself. */
enum load_step load_step_failed(int code, bool at_end, enum load_kind *kind);

/* --tls: a client TLS stream over sock (borrowed) named server_name (the certificate's name and
 * SNI; NULL: none) with the URL's port, and its handshake within dl. Returns 0 with *tls set, or
 * a negative code with *tls set or NULL (the caller closes it; vega_tls_last_error says more). */
int load_tls_handshake(struct load_run *r, vega_sock *sock, const char *server_name,
                       vega_stream **tls, vega_deadline dl);
/* A handshake that failed with e: LOAD_STEP_STOP when the run is over (cancelled, or a timeout
 * at its end), else LOAD_STEP_FAIL, counted as a connect error with TLS's reason (tls may be
 * NULL). */
enum load_step load_tls_failed(struct load_run *r, int e, vega_stream *tls, bool at_end);

/* A connection task that cannot have its memory: counted as a connect error (-ENOMEM) of a
 * connection that gave up without ever connecting. */
void load_conn_no_memory(struct load_run *r);

/* -R, --stages: a connection's share of the schedule (load_pace) and its timer. */
struct load_pacer {
    struct load_run *r;
    unsigned index;
    uint64_t sent;
    vega_tstamp next;
    int tfd;             /* the timer (load_timer_open), or -1 */
    int64_t mono_offset; /* CLOCK_MONOTONIC minus vega_now() */
};

/* Sets p up for the connection with this index (without -R: no timer, nothing due). */
void load_pacer_init(struct load_pacer *p, struct load_run *r, unsigned index);
/* Waits until the next send is due: true with its *intended time, false when the schedule
 * ends before the run (or the task is cancelled). */
bool load_pacer_wait(struct load_pacer *p, vega_tstamp *intended);
void load_pacer_fini(struct load_pacer *p);

/* ---- echo.c --------------------------------------------------------------------------------- */

/* One connection of the echo mode; arg is a struct load_run. Returns NULL. */
void *load_echo_conn(void *arg);

/* ---- http.c --------------------------------------------------------------------------------- */

/* Parses an http://, https://, ws:// or wss:// URL into o (host, port, path, Host field, tls;
 * ws for the last two) with host and port copied into hbuf / pbuf. Returns 0, or -EINVAL / -ENOMEM
 * with a message in err. */
int load_url_parse(struct load_opts *o, const char *url, char *hbuf, size_t hcap, char *pbuf,
                   size_t pcap, char *err, size_t ecap);

/* Serializes the request into o->req. Returns 0, or -EINVAL / -ENOMEM with a message in err. */
int load_http_build(struct load_opts *o, char *err, size_t ecap);

/* One connection of the HTTP mode; arg is a struct load_run. Returns NULL. */
void *load_http_conn(void *arg);

/* ---- req.c: what the HTTP/2 and HTTP/3 requests share --------------------------------------- */

/* The path the request is built and checked with: the longest of -i and --random-query's. */
const char *load_req_path(const struct load_opts *o);
/* True when -H gave a field of this name (any case), *at (when not NULL) its index. */
bool load_req_has_header(const struct load_opts *o, const char *name, size_t *at);
/* --method, else POST with --body, else GET; sets o->head_method. */
const char *load_req_method(struct load_opts *o);
/* Refuses -H Content-Length and Transfer-Encoding: 0, or -EINVAL with a message in err naming
 * proto ("HTTP/2", "HTTP/3"). */
int load_req_check_framing(const struct load_opts *o, const char *proto, char *err, size_t ecap);
/* :authority: -H Host's value when given, else the URL's (spans into the options). */
vega_http_str load_req_authority(const struct load_opts *o);
/* The bytes every -H name takes back to back, plus one. */
size_t load_req_names_size(const struct load_opts *o);
/* Writes h's name in lowercase at *names and moves *names past it: the copy, or NULL for Host
 * (the request carries it as :authority), which takes no room. */
const char *load_req_lower_name(const struct load_header *h, char **names);
/* The content-length value, into cl, when the request has one (--body, POST or PUT): true then,
 * false without. */
bool load_req_content_length(const struct load_opts *o, const char *method, char cl[24]);

/* ---- h2_req.c, h2.c ------------------------------------------------------------------------ */

/* The HTTP/2 request, built once; every connection's core encodes it on each stream (HPACK's
 * dynamic table makes the repeats a few bytes). */
struct load_h2_req {
    vega_hpack_field *fields; /* pseudo-header fields first, then -H (lowercase), content-length */
    size_t nfields;
    char *names;            /* the -H names in lowercase (RFC 9113 §8.2.1), back to back */
    char cl[24];            /* the content-length value */
    uint64_t decoded_bytes; /* names + values of all fields: one request's decoded size */
};

/* Builds o->h2_req from the URL, --method, -H and --body and checks it with the HTTP/2 core's
 * own rules (lowercase names, no connection-specific fields). Returns 0, or -EINVAL / -ENOMEM
 * with a message in err. */
int load_h2_build(struct load_opts *o, char *err, size_t ecap);
void load_h2_opts_free(struct load_opts *o);

/* One connection of the HTTP/2 mode; arg is a struct load_run. Returns NULL. */
void *load_h2_conn(void *arg);

/* ---- ws.c ----------------------------------------------------------------------------------- */

/* Builds o->req, the Upgrade request (GET, Host, the handshake's fields, --ws-protocol's
 * Sec-WebSocket-Protocol, --ws-compress's offer, User-Agent, -H), with a placeholder key at
 * o->ws_key_at that each connection overwrites. Returns 0, or -EINVAL (a handshake field in -H,
 * an invalid field, the head over LOAD_MAX_HEAD) / -ENOMEM with a message in err. */
int load_ws_build(struct load_opts *o, char *err, size_t ecap);

/* One connection of the WebSocket mode; arg is a struct load_run. Returns NULL. SIGINT or
 * SIGTERM (the task cancelled) leaves its open connection to a task of r->closers. */
void *load_ws_conn(void *arg);

/* ---- h3_run.c, h3.c ------------------------------------------------------------------------ */

/* The HTTP/3 request, built once; every connection's core encodes it on each stream. */
struct load_h3_req {
    vega_h3_request rq; /* spans into the options and the strings below */
    vega_http_field *fields;
    size_t nfields;
    char *names;     /* the -H names in lowercase (RFC 9114 §4.2), back to back */
    char cl[24];     /* the content-length value */
    size_t head_cap; /* the room the core asks for to write one HEADERS frame */
};

/* What an endpoint callback's user pointer is. A connection's user is its struct h3conn (h3.c)
 * once it is set up; while its handshake runs, the user is the run's struct load_h3 (a connect
 * that fails leaves the connection to the endpoint, which may report on it after the task moved
 * on: only the endpoint's own struct surely lives that long). Both start with the kind. */
enum load_h3_user {
    LOAD_H3_USER_RUN = 1,
    LOAD_H3_USER_CONN = 2,
};

struct load_h3 {
    enum load_h3_user kind; /* LOAD_H3_USER_RUN */
    vega_quic_endpoint *ep;
    vega_crypto_cert_store *ca; /* NULL with -k */
    /* why the latest handshake failed: the CONNECTION_CLOSE's code and reason */
    atomic_flag lock;
    char reason[192];
};

/* Builds o->h3_req from the URL, --method, -H and --body, and checks it with the HTTP/3 core's
 * own rules (lowercase names, no connection-specific fields). Returns 0, or -EINVAL / -ENOMEM
 * with a message in err. */
int load_h3_build(struct load_opts *o, char *err, size_t ecap);
void load_h3_opts_free(struct load_opts *o);

/* The QUIC endpoint and trust store of a run, before the connections start. Returns 0 or a
 * negative code (reported). load_h3_teardown closes and frees them (inside a task). */
int load_h3_setup(struct load_run *r);
void load_h3_teardown(struct load_run *r);

/* "H3_NO_ERROR", "TLS alert 42", "IDLE_TIMEOUT"..., then ": " and the reason phrase (printable)
 * into buf. */
void load_h3_describe_close(char *buf, size_t cap, bool app, uint64_t code, const uint8_t *reason,
                            size_t len);
/* The run's events (connections in their handshake): a CLOSED event's reason is kept. */
void load_h3_run_event(struct load_h3 *g, const vega_quic_event *ev);
/* The message for a failed connect (the latest handshake failure's reason with it) into buf, or
 * NULL for the code's own message. */
const char *load_h3_connect_msg(struct load_h3 *g, int e, char *buf, size_t cap);

/* The endpoint's on_event (h3.c): a connection's streams, or load_h3_run_event. */
void load_h3_on_event(void *user, vega_quic_ep_conn *qe, vega_quic_conn *qc,
                      const vega_quic_event *ev);

/* One connection of the HTTP/3 mode; arg is a struct load_run. Returns NULL. */
void *load_h3_conn(void *arg);

/* ---- report.c ------------------------------------------------------------------------------- */

void load_report_header(const struct load_opts *o);
void load_report_text(const struct load_opts *o, const struct load_totals *t);
void load_report_json(FILE *f, const struct load_opts *o, const struct load_totals *t);
void load_report_http_text(const struct load_opts *o, const struct load_totals *t);
void load_report_http_json(FILE *f, const struct load_opts *o, const struct load_totals *t);

/* "round trips" or "requests". */
const char *load_noun(const struct load_opts *o);

/* "52.10us", "1.20ms", "2.00s" into buf. */
void load_fmt_duration(char *buf, size_t cap, double us);

#endif
