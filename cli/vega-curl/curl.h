/* SPDX-License-Identifier: MIT */
/* vega-curl: the options, one transfer's state and the pieces shared by its files (request
 * bodies, output sinks, the progress meter, --write-out). */
#ifndef VEGA_CURL_H
#define VEGA_CURL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

/* curl's exit codes (CURLcode), for the situations vega-curl can meet. */
enum {
    CE_OK = 0,
    CE_UNSUPPORTED_PROTOCOL = 1,
    CE_FAILED_INIT = 2,
    CE_URL_MALFORMAT = 3,
    CE_COULDNT_RESOLVE_PROXY = 5,
    CE_COULDNT_RESOLVE_HOST = 6,
    CE_COULDNT_CONNECT = 7,
    CE_WEIRD_SERVER_REPLY = 8,
    CE_HTTP2 = 16, /* a problem in the HTTP/2 framing layer (a connection error, GOAWAY) */
    CE_PARTIAL_FILE = 18,
    CE_HTTP_RETURNED_ERROR = 22,
    CE_WRITE_ERROR = 23,
    CE_READ_ERROR = 26,
    CE_OUT_OF_MEMORY = 27,
    CE_OPERATION_TIMEDOUT = 28,
    CE_RANGE_ERROR = 33, /* -C: the server does not support byte ranges */
    CE_SSL_CONNECT_ERROR = 35,
    CE_INTERFACE_FAILED = 45, /* --interface or --local-port could not be bound */
    CE_TOO_MANY_REDIRECTS = 47,
    CE_GOT_NOTHING = 52,
    CE_SEND_ERROR = 55,
    CE_RECV_ERROR = 56,
    CE_SSL_CERTPROBLEM = 58,
    CE_SSL_CIPHER = 59, /* couldn't use the specified cipher */
    CE_PEER_FAILED_VERIFICATION = 60,
    CE_BAD_CONTENT_ENCODING = 61,
    CE_FILESIZE_EXCEEDED = 63,
    CE_SEND_FAIL_REWIND = 65,
    CE_SSL_CACERT_BADFILE = 77,
    CE_SSL_PINNEDPUBKEYNOTMATCH = 90, /* --pinnedpubkey: the server's key is not pinned */
    CE_HTTP2_STREAM = 92,             /* an HTTP/2 stream reset */
    CE_HTTP3 = 95, /* a problem in the HTTP/3 layer (a stream reset, a connection error) */
    CE_PROXY = 97, /* a proxy handshake failed (SOCKS replies, a malformed answer) */
};

/* Limits on what the command line may ask for. */
#define CURL_MAX_HEADERS      256
#define CURL_MAX_HEADER_FILE  (1 << 20) /* -H @FILE */
#define CURL_MAX_URLS         4096
#define CURL_MAX_RESOLVE      64
#define CURL_MAX_URL_LEN      8192
#define CURL_MAX_DATA         (1024ull * 1024 * 1024) /* -d / --data-binary held in memory */
#define CURL_MAX_NETRC        (64 * 1024)             /* bytes of a .netrc file (curl 8's bound) */
#define CURL_MAX_CONFIG       (1024 * 1024)           /* bytes of one -K file or ~/.curlrc */
#define CURL_MAX_CONFIG_DEPTH 16                      /* -K inside -K files */
#define CURL_MAX_CONFIG_WORDS 100000 /* words of the command line and its -K files */
#define CURL_MAX_FORM_PARTS   1000   /* -F / --form-string parts */

/* Where the body of one URL goes: the n-th -o/-O belongs to the n-th URL, as in curl. */
struct curl_outspec {
    const char *file; /* -o FILE ("-" = stdout) */
    bool remote_name; /* -O */
};

struct curl_resolve {
    char host[256];
    uint16_t port;
    vega_addr addr;
};

/* Every option, as parsed; read-only once the transfers start. */
struct curl_opts {
    const char *method; /* -X */
    vega_http_field headers[CURL_MAX_HEADERS];
    size_t nheaders;
    bool no_content_type; /* -H "Content-Type:" */
    bool no_referer;
    const char *user_agent; /* -A; "" = none */
    const char *referer;

    char *data; /* -d / --data-binary, joined with '&'; owned */
    size_t data_len;
    bool has_data;
    bool get;   /* -G: the data goes in the query of a GET */
    bool json;  /* --json: pieces joined with nothing between, JSON Content-Type and Accept */
    char *form; /* -F: the multipart body being built (owned; moved to data at the end) */
    size_t form_len, form_parts;
    char form_boundary[48];
    char form_type[320];    /* "multipart/form-data; boundary=..." once a -F is given */
    int netrc;              /* 0, CURL_NETRC_OPTIONAL or CURL_NETRC_REQUIRED */
    char unix_path[110];    /* --unix-socket PATH, --abstract-unix-socket NAME ("@NAME") */
    const char *netrc_file; /* --netrc-file (else ~/.netrc) */

    const char *range;    /* -r: "bytes=" + this */
    char *auth;           /* -u or --oauth2-bearer: the Authorization value (owned) */
    int ip_family;        /* -4 AF_INET, -6 AF_INET6, else AF_UNSPEC */
    unsigned keepalive_s; /* TCP keep-alive probes (curl: 60 s; --no-keepalive 0) */
    bool tcp_nagle;       /* --no-tcp-nodelay */
    bool fail_early;      /* --fail-early: stop after the first failed URL */
    uint64_t limit_rate;  /* --limit-rate: body bytes per second on average; 0 = none */

    /* --retry and its companions (curl's rules, transfer.c) */
    long retry;              /* attempts after the first */
    uint64_t retry_delay_ns; /* --retry-delay; 0 with !retry_delay_set = backoff */
    bool retry_delay_set;
    uint64_t retry_max_ns; /* --retry-max-time; 0 = no bound */
    bool retry_all, retry_connrefused;

    /* files */
    bool create_dirs;          /* --create-dirs */
    const char *output_dir;    /* --output-dir */
    bool resume;               /* -C given */
    bool resume_auto;          /* -C -: from the output file's size */
    uint64_t resume_from;      /* -C OFFSET */
    bool remote_time;          /* -R */
    const char *time_cond;     /* -z DATE|FILE as given */
    char *cookie_str;          /* -b NAME=VALUE strings, joined with "; " (owned) */
    const char **cookie_files; /* -b FILE (owned array) */
    size_t ncookie_files;
    const char *cookie_jar;    /* -c FILE ("-" = stdout) */
    bool junk_session;         /* -j: session cookies of -b files are not loaded */
    bool remote_header_name;   /* -J: -O takes Content-Disposition's filename */
    int64_t time_cond_at;      /* its Unix time */
    bool time_cond_unmodified; /* a leading '-': If-Unmodified-Since */
    bool time_cond_lastmod;    /* a leading '=': curl's TIMECOND_LASTMOD, a Last-Modified field
                                  (checked on the answer as If-Modified-Since is) */

    const char **urls;
    size_t nurls;
    struct curl_outspec *outs;
    size_t nouts;
    const char **uploads; /* -T FILE per URL, in order */
    size_t nuploads;
    bool remote_name_all;

    bool location, include, head, silent, show_error, verbose, fail, fail_with_body;
    bool location_trusted; /* credentials follow redirects to other origins */
    bool insecure, compressed, progress_bar, no_progress;
    long max_redirs;       /* -1 = unlimited */
    int http_version;      /* 0 (HTTP/2 on https by ALPN, else HTTP/1.1; or HTTP/3 by
                              --alt-svc), 10, 11, 20 (--http2), 21 (--http2-prior-knowledge),
                              or 30 (HTTP/3) */
    bool h3_fallback;      /* --http3: race TCP when QUIC is slow or fails (else --http3-only) */
    uint32_t quic_version; /* --quic-version: 0 (v1), VEGA_QUIC_V1, VEGA_QUIC_V2 */
    bool quic_key_update;  /* --quic-key-update */
    bool quic_migrate;     /* --quic-migrate */
    uint64_t quic_migrate_after_ms;
    const char *alt_svc;       /* --alt-svc FILE ("" = in memory only) */
    const char *session_file;  /* --tls-session-file FILE */
    const char *tls13_ciphers; /* --tls13-ciphers LIST (TCP and QUIC) */
    int earlydata;             /* --tls-earlydata 1, --no-tls-earlydata 0, -1 unset (0-RTT
                                  with a session file) */
    char *alt_svc_text;        /* their contents when they existed (owned) */
    size_t alt_svc_len;
    char *session_text;
    size_t session_len;
    const char *cacert, *cert, *key;
    struct curl_resolve resolve[CURL_MAX_RESOLVE];
    size_t nresolve;
    uint64_t connect_timeout_ns, max_time_ns, max_filesize;
    const char *write_out;
    const char *dump_header; /* -D FILE ("-" = stdout): the response heads */
    bool parallel;           /* -Z: the URLs at once (over multiplexed streams on HTTP/2) */
    unsigned parallel_max;   /* --parallel-max: transfers at once; default 50, at most 300 */
    /* proxies (proxy.c) */
    const char *proxy;          /* -x URL ("" = none, even from the environment) */
    const char *proxy_user;     /* -U user[:password] */
    const char *noproxy;        /* --noproxy LIST (else NO_PROXY/no_proxy) */
    const char *proxy_cacert;   /* --proxy-cacert FILE */
    bool proxytunnel;           /* -p: CONNECT for http:// too */
    bool proxy_insecure;        /* --proxy-insecure */
    vega_proxy_kind proxy_kind; /* --socks5 & co: the kind their HOST:PORT means */
    bool proxy_kind_from_flag;
    /* WebSocket (ws.c) */
    bool ws_any;              /* a ws:// or wss:// URL is given: TLS offers http/1.1 only */
    bool ws_binary;           /* --binary: stdin in chunks as binary messages */
    uint64_t ws_ping_ms;      /* --ws-ping SECS; 0 = none */
    uint64_t ws_max_messages; /* --max-messages N; 0 = no limit */
    /* TLS versions, ciphers, groups, pinning; DNS servers, Happy Eyeballs (netopts.c) */
    int tls_min, tls_max;     /* --tlsv1.x / --tls-max: 0x0301..0x0304, 0 = default */
    const char *ciphers;      /* --ciphers LIST (TLS 1.2, OpenSSL syntax) */
    const char *curves;       /* --curves LIST (key-exchange groups) */
    const char *pinnedpubkey; /* --pinnedpubkey sha256//B64[;sha256//...] or FILE */
    vega_addr dns_servers[VEGA_DNS_MAX_NAMESERVERS]; /* --dns-servers (netopts.c) */
    size_t ndns_servers;
    unsigned happy_eyeballs_ms;  /* --happy-eyeballs-timeout-ms; 0 = libvega's 250 */
    int authmode;                /* --basic (0), --digest, --anyauth: CURL_AUTH_* */
    char *auth_user, *auth_pass; /* -u's, kept for --digest/--anyauth (owned) */
    /* --trace, --trace-ascii, --trace-time (trace.c) */
    const char *trace_file; /* "-" = stdout; NULL = none (-v after it wins, as in curl) */
    bool trace_ascii;
    bool trace_time;
    const char *etag_save;    /* --etag-save FILE ("-" = stdout) */
    const char *etag_compare; /* --etag-compare FILE */
    /* --interface, --local-port (bound in make_client: local.c) */
    const char *interface;   /* as given: NAME, ADDR, host!NAME or if!NAME */
    uint16_t local_port_min; /* --local-port N[-M]; 0 = none */
    uint16_t local_port_max;
};

/* ---- TLS and name resolution options (netopts.c)
 * ------------------------------------------------------------------
 */

/* The options netopts.c parses: main.c's getopt values for them (above main.c's own OPT_*), and
 * the short -1 (--tlsv1), -2 (--sslv2), -3 (--sslv3). */
enum {
    CURL_OPT_TLS_FIRST = 1000,
    CURL_OPT_TLSV10 = CURL_OPT_TLS_FIRST,
    CURL_OPT_TLSV11,
    CURL_OPT_TLSV12,
    CURL_OPT_TLSV13,
    CURL_OPT_TLS_MAX,
    CURL_OPT_CIPHERS,
    CURL_OPT_CURVES,
    CURL_OPT_PINNEDPUBKEY,
    CURL_OPT_DNS_SERVERS,
    CURL_OPT_HAPPY_EYEBALLS,
    CURL_OPT_BASIC,
    CURL_OPT_DIGEST,
    CURL_OPT_ANYAUTH,
    CURL_OPT_TLS_LAST = CURL_OPT_ANYAUTH,
};

enum {
    CURL_AUTH_BASIC = 0,
    CURL_AUTH_DIGEST,
    CURL_AUTH_ANY
};

/* The request body, for Digest's qop=auth-int: len bytes at data (NULL: none), or with fd >= 0
 * flen bytes of that file from off (read with pread); unhashable: a body from stdin or a pipe. */
struct curl_auth_body {
    const void *data;
    size_t len;
    int fd;
    uint64_t off, flen;
    bool unhashable;
};
/* --digest/--anyauth (auth.c): the Authorization value answering a 401's WWW-Authenticate
 * fields f for method and target (the request-target, path and query), into out; body: what the
 * request sends (qop=auth-int hashes it). Returns 0, -1 when no challenge can be answered (none
 * offered, an algorithm or value it cannot use), -2 when qop=auth-int is the only choice and
 * the body cannot be hashed. */
int curl_auth_answer(const struct curl_opts *o, const vega_http_fields *f, const char *method,
                     const char *target, const struct curl_auth_body *body, char *out, size_t cap);

/* Whether c (a getopt value) is one of netopts.c's options. */
static inline bool curl_tls_opt(int c)
{
    return (c >= CURL_OPT_TLS_FIRST && c <= CURL_OPT_TLS_LAST) || c == '1' || c == '2' || c == '3';
}

/* Parses one of those options (c: its getopt value); exits 2 on a bad value. */
void curl_tls_option(struct curl_opts *o, int c, const char *arg);
/* Sets the versions, ciphers, groups and pins on cfg. Returns 0 or curl's exit code (35 no
 * version left, 59 a list OpenSSL rejects) after saying why. */
int curl_tls_apply(const struct curl_opts *o, vega_tls_config *cfg);
/* --dns-servers and --happy-eyeballs-timeout-ms into the client's options (co borrows o's
 * servers for vega_http_client_new). */
void curl_net_apply(const struct curl_opts *o, vega_http_client_opts *co);

/* ---- --interface, --local-port (local.c) ------------------------------------------------------
 */

/* --local-port N[-M]: 0..65535 (0: any), M >= N; exits 2 ("is badly used here") otherwise. */
void curl_local_port_parse(struct curl_opts *o, const char *arg);
/* The client's local side from --interface and --local-port (an interface name by
 * SO_BINDTODEVICE, an address resolved now). Returns 0, or 45 after printing why (an unknown
 * interface or host, as curl); 2 with a proxy, --unix-socket or HTTP/3, where nothing is bound. */
int curl_local_setup(const struct curl_opts *o, vega_tcp_local *out);

/* ---- --trace, --etag-* (trace.c) -------------------------------------------------------------
 */

enum curl_trace_kind {
    CURL_TRACE_HEADER_OUT,
    CURL_TRACE_HEADER_IN,
    CURL_TRACE_DATA_OUT,
    CURL_TRACE_DATA_IN,
    CURL_TRACE_SSL_OUT,
    CURL_TRACE_SSL_IN,
};
/* Opens --trace's file ("%" = stderr; one that cannot be made: stderr, as curl 7.88). */
int curl_trace_open(const struct curl_opts *o);
void curl_trace_close(void);
/* Whether a --trace file is being written. */
bool curl_trace_on(void);
/* --trace-time's "HH:MM:SS.uuuuuu " (or "") into buf. */
void curl_trace_stamp(char *buf, size_t cap);
/* A record: "=> Send header, N bytes (0xN)" and its dump. */
void curl_trace_data(enum curl_trace_kind k, const void *p, size_t len);
/* A head: sent as one record, a received one a record per line (as curl's). */
void curl_trace_head(enum curl_trace_kind k, const void *head, size_t len);
/* "== Info: TEXT". */
void curl_trace_info(const char *text, size_t len);
void curl_trace_infof(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* vega_tls_msg_fn for -v and --trace (user: the curl_opts): curl's "TLSv1.3 (OUT), TLS
 * handshake, Client hello (1):" notes, and in --trace each message as "SSL data". */
void curl_trace_tls(void *user, vega_tls_msg_dir dir, int version, int type, const void *buf,
                    size_t len);
/* vega_http_client_opts.h2_frame for --trace: "[HTTP/2] [1] <- FRAME[HEADERS, len=N, hend=1,
 * eos=0]", curl 8's notes of the frames. */
void curl_trace_h2_frame(void *user, const vega_http_h2_frame *f);
/* From now on curl_trace_tls and curl_trace_h2_frame show nothing (the transfers are over). */
void curl_trace_conn_notes_end(void);
/* --etag-compare's If-None-Match value into out (the file's lines joined; '""' when empty, or
 * missing with --etag-save). 0, or 26 after printing why (missing without --etag-save; over
 * cap - 1 bytes). */
int curl_etag_compare_value(const struct curl_opts *o, char *out, size_t cap);
/* Opens (empties) --etag-save's file for a transfer: *out NULL without the option. 0, or 26
 * after printing why. */
int curl_etag_save_open(const struct curl_opts *o, FILE **out);
/* Appends each ETag field's value of a response head, a line each (curl writes every hop's). */
void curl_etag_save_fields(FILE *f, const vega_http_fields *fields);

/* ---- WebSocket (ws.c) -------------------------------------------------------------------------
 */

/* Whether url is ws:// or wss://. */
bool curl_ws_url(const char *url);
struct curl_ctx;
/* Runs WebSocket URL number idx: stdin to messages, messages to stdout. Returns its exit code. */
int curl_ws_transfer(struct curl_ctx *cx, size_t idx);

/* ---- proxies (proxy.c) ------------------------------------------------------------------------
 */

/* Picks the proxy for the run (options, then the environment, NO_PROXY) and sets co->proxy.
 * Returns 0 or a curl exit code after printing why. */
int curl_proxy_setup(const struct curl_opts *o, vega_http_client_opts *co);
void curl_proxy_free(void);
/* The proxy in use, or NULL. */
const vega_proxy_opts *curl_proxy_active(void);
/* The last CONNECT reply's status (%{http_connect}), 0 = none. */
int curl_proxy_http_connect(void);
/* curl's exit code and message (into msg) for a failure at the proxy; 0 when e is not one. */
int curl_proxy_failed(int e, char *msg, size_t cap);

/* ---- output (output.c) ----------------------------------------------------------------------- */

/* Body bytes are gathered in a sink's buffer and written in pieces of up to CURL_SINK_BUF:
 * when the buffer is full (less than CURL_SINK_MIN left, a response read's largest answer),
 * when no more body is waiting on the connection, and at the end. */
#define CURL_SINK_BUF (256u * 1024)
#define CURL_SINK_MIN (16u * 1024)

/* A body destination: stdout (shared by every transfer) or a file opened on the first write.
 * The descriptor's kind (cli_stdio) says how bytes leave: a regular file by kernel operations
 * on the worker (io_uring; the blocking pool under epoll), a pipe or socket by the runtime's
 * readiness waits, /dev/null not at all, a terminal by the blocking pool. */
struct curl_sink {
    cli_stdio io;
    bool is_stdout;
    bool opened;
    bool tty;     /* stdout is a terminal: refuse binary bodies as curl does */
    bool checked; /* the first bytes were checked for binary data */
    char path[4096];
    bool create_dirs; /* --create-dirs: make the missing directories of path */
    bool append;      /* -C: the body is added after what the file holds */
    bool exclusive;   /* -J: never over an existing file (O_EXCL) */
    bool trim;        /* a retry of -C: first cut the file back to append_at bytes */
    uint64_t append_at;
    int err;      /* the first write or open failure (-errno) */
    uint8_t *buf; /* CURL_SINK_BUF bytes (made on first use), len of them not written */
    size_t len;
};

/* The process-wide stdout sink (set up by the main task, restored at its end). */
extern struct curl_sink curl_stdout;

void curl_stdout_init(void);
void curl_stdout_fini(void);

/* A sink for path (NULL or "-": stdout). */
void curl_sink_init(struct curl_sink *s, const char *path);

/* Writes all of buf (through the buffer when it fits); 0 or a curl exit code (23) after
 * printing why. */
int curl_sink_write(struct curl_sink *s, const struct curl_opts *o, const void *buf, size_t len,
                    bool body);

/* The free end of the sink's buffer, for a read to land in: *room bytes (at least
 * CURL_SINK_MIN). NULL when the buffer cannot be allocated. */
uint8_t *curl_sink_space(struct curl_sink *s, size_t *room);

/* n body bytes were put at curl_sink_space: keeps them (opening the file on the first byte,
 * refusing binary data on a terminal), writes the buffer once it is full. 0 or 23. */
int curl_sink_commit(struct curl_sink *s, const struct curl_opts *o, size_t n);

/* True when bytes wait in the buffer. */
bool curl_sink_pending(const struct curl_sink *s);

/* -Z: transfers run at once and may write to stdout together: its writes (and the flushes
 * inside them) then take a lock, and a body read for stdout lands in the transfer's own buffer
 * first (curl_sink_space/commit are not used for it). */
void curl_stdout_set_shared(bool on);

/* Writes what the buffer holds. 0 or 23 (after printing why when o is not NULL). */
int curl_sink_flush(struct curl_sink *s, const struct curl_opts *o);

/* Writes what is left, creates the file if nothing was written (an empty body), closes it.
 * 0 or 23. */
int curl_sink_finish(struct curl_sink *s, const struct curl_opts *o);

/* Writes what is buffered (a failed transfer keeps what it received, as curl's does) and
 * closes without creating anything. */
void curl_sink_abort(struct curl_sink *s);

/* The progress meter (curl's table, or the -# bar) on stderr. */
struct curl_progress {
    bool on, bar, drawn;
    vega_tstamp start, last;
    uint64_t total; /* 0 = unknown */
    uint64_t now, up_total, up_now;
    uint64_t last_bytes;
    vega_tstamp last_speed_at;
    double speed;
};

void curl_progress_start(struct curl_progress *p, const struct curl_opts *o, bool to_file);
void curl_progress_update(struct curl_progress *p, bool final);
void curl_progress_end(struct curl_progress *p);

/* ---- errors ---------------------------------------------------------------------------------- */

/* "vega-curl: (code) message" unless -s without -S; returns code. */
int curl_fail(const struct curl_opts *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- request bodies (body.c) ----------------------------------------------------------------- */

/* -d / --data-binary / --data-raw: appends a part (with '&' between parts). arg: "@file",
 * "@-" or the data itself; strip_newlines for -d's @file. Exits 2 or 26 on failure. */
void curl_data_add(struct curl_opts *o, const char *arg, bool at_file, bool strip_newlines);

/* --json: as --data-binary (@file, @- read as they are), but a piece follows the previous one
 * with nothing between (curl 7.82+: "concatenated"); sets o->json. */
void curl_data_add_json(struct curl_opts *o, const char *arg);

/* --data-urlencode: "content", "=content", "name=content", "@file", "name@file"; the content
 * is percent-encoded (all but ALPHA DIGIT - . _ ~) as curl does. */
void curl_data_add_urlencoded(struct curl_opts *o, const char *arg);

/* The contents of path ("-" = stdin), at most 1 GiB; exits 26 when it cannot be read. */
char *curl_read_file(const struct curl_opts *o, const char *path, size_t *len);

/* -F (literal false) / --form-string (true): appends a part (form.c). Exits 2 or 26. */
void curl_form_add(struct curl_opts *o, const char *arg, bool literal);
/* After the command line: closes the form and makes it the request body (-d and -F: exit 2). */
void curl_form_finish(struct curl_opts *o);

/* ---- -K and ~/.curlrc (config.c) ------------------------------------------------------------ */

struct option;
/* Replaces *argv by the words of ~/.curlrc (unless the first argument is -q) followed by the
 * command line, each -K FILE in it replaced by that file's options. Exits 26 for a file that
 * cannot be read, is over CURL_MAX_CONFIG bytes or nests over CURL_MAX_CONFIG_DEPTH. */
void curl_config_expand(int *argc, char ***argv, const struct option *longs, const char *shorts);
/* The expanded argv, held for the process's life (the options point into it). */
extern char **curl_config_argv;

/* ---- .netrc (netrc.c) ---------------------------------------------------------------------- */

enum {
    CURL_NETRC_OPTIONAL = 1,
    CURL_NETRC_REQUIRED = 2
};
/* Reads the netrc file when o->netrc asks for one (missing: no credentials; not a regular file
 * or over CURL_MAX_NETRC bytes: exit 26). */
void curl_netrc_load(struct curl_opts *o);
void curl_netrc_free(void);
/* The login and password of host's machine entry (or of default), with want_login (not NULL)
 * only an entry of that login. Returns whether one was found. */
bool curl_netrc_find(const char *host, const char *want_login, char *login, size_t lcap, char *pass,
                     size_t pcap);

/* -T FILE as a streamed body. */
struct curl_upload {
    cli_stdio io;
    int fd;
    bool is_stdin, seekable;
    uint64_t length; /* VEGA_HTTP_LENGTH_UNKNOWN when not a regular file */
    uint64_t sent;
    int err; /* a read failure (fails the transfer with 26) */
    vega_deadline dl;
    uint8_t *ra; /* read ahead (CURL_SINK_BUF, made on first use): [ra_pos, ra_len) */
    size_t ra_pos, ra_len;
    uint64_t skip;       /* -C: the bytes of the file before this offset are not sent */
    uint64_t limit_rate; /* --limit-rate: bytes a second on average, 0 = none */
    vega_tstamp started; /* when the first byte was asked for (0 = not yet) */
};

/* Opens path ("-" or "." = stdin). 0 or a curl exit code after printing why. */
int curl_upload_open(struct curl_upload *u, const struct curl_opts *o, const char *path);
void curl_upload_close(struct curl_upload *u);

/* -C with -T: the upload starts at byte at of the file (length becomes what is left). 0, or
 * -ESPIPE (not a regular file: stdin, a pipe), -ERANGE (at is not before the file's end). */
int curl_upload_skip(struct curl_upload *u, uint64_t at);

/* Starts the body again (a 307/308 redirect): 0, or -ESPIPE for stdin. */
int curl_upload_rewind(struct curl_upload *u);

vega_ssize curl_upload_read(void *user, void *buf, size_t len);

/* ---- one transfer (transfer.c) ------------------------------------------------------------- */

/* What --write-out reports about a transfer. */
struct curl_result {
    int exit_code;
    char errmsg[512];
    int status;
    int http_version;
    const char *method;
    char url[CURL_MAX_URL_LEN]; /* the effective URL */
    char redirect_url[CURL_MAX_URL_LEN];
    char filename[4096];
    long num_redirects;
    unsigned num_connects;
    uint64_t size_download, size_upload, size_header, size_request;
    vega_tstamp t_begin, t_namelookup, t_connect, t_appconnect, t_pretransfer, t_starttransfer,
        t_redirect, t_end;
    char remote_ip[VEGA_ADDR_STRLEN];
    unsigned remote_port;
    char content_type[256];
    char scheme[16];
    unsigned num_headers;
};

struct curl_ctx {
    const struct curl_opts *o;
    vega_http_client *client;
    /* --http2 wss:// falling back to the HTTP/1.1 Upgrade: a client whose TLS offers http/1.1
     * alone (the main one offers h2 too, which a server that speaks HTTP/2 without RFC 8441
     * would choose again); made on first use by h1_client, freed with the main one */
    vega_http_client *client_h1;
    vega_http_client *(*h1_client)(struct curl_ctx *cx);
};

/* ---- HTTP/3 settings and files (quic.c) --------------------------------------------------------
 */

/* What the QUIC side of the client trusts and shows (--cacert, --cert/--key as libvega's crypto
 * objects, which QUIC's own TLS 1.3 uses instead of OpenSSL's configuration). */
struct curl_quic {
    vega_crypto_cert_store *ca;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    bool keylog_open; /* SSLKEYLOGFILE, opened for appending QUIC's secrets */
    int keylog_fd;
};

/* Reads --alt-svc and --tls-session-file when they exist (while the command line is parsed);
 * exits 26 when one exists but cannot be read. */
void curl_files_load(struct curl_opts *o);

/* Fills co's QUIC fields from o (with q's objects). Returns 0 or a curl exit code after
 * printing why (77: --cacert, 58: --cert or --key). */
int curl_quic_setup(const struct curl_opts *o, struct curl_quic *q, vega_http_client_opts *co);
void curl_quic_free(struct curl_quic *q);

/* Loads the files' contents into the client (a malformed session file is reported, not
 * fatal). */
void curl_files_apply(const struct curl_opts *o, vega_http_client *c);

/* The client's caches as the files' new contents (malloc'd, NULL when not asked for). */
struct curl_saved {
    char *alt_svc, *sessions;
    size_t alt_svc_len, sessions_len;
};
void curl_files_take(const struct curl_opts *o, vega_http_client *c, struct curl_saved *s);

/* Writes them (outside the runtime: plain blocking writes; a temporary file renamed over the
 * old one, the session file private). Returns 0, or 23 after printing why. */
int curl_files_store(const struct curl_opts *o, struct curl_saved *s);

/* ---- cookies (cookie.c) ------------------------------------------------------------------- */

/* Loads the -b files; the engine is on with -c or any -b file (even one not there). */
void curl_cookie_init(const struct curl_opts *o);
/* The jar's cookies for a request to url, "n=v; n2=v2" into out (at most cap bytes with the
 * NUL); returns the length, 0 when none (or the engine is off). *capped: some did not fit
 * (curl then sends no -b string either). */
size_t curl_cookie_header(const char *url, char *out, size_t cap, bool *capped);
/* The Set-Cookie fields of a response to a request for url. */
void curl_cookie_take(const char *url, const vega_http_fields *f);
/* Writes the -c jar (at the end of the run) and frees the jar. Returns 0, or -1 after a
 * warning (curl's exit code does not change). */
int curl_cookie_save(const struct curl_opts *o);

/* Runs URL number idx (its -o/-O, -T) and prints --write-out. Returns its exit code. */
int curl_transfer(struct curl_ctx *cx, size_t idx);
/* Closes the -D file (at the end of the run). */
void curl_dump_close(void);

/* A growing buffer with a hard cap; bytes past the cap are dropped and counted. */
struct tbuf {
    char *p;
    size_t len, cap, max;
    bool dropped;
};

/* One URL's state, from its request to its last redirect (transfer.c, errors.c). */
struct xfer {
    const struct curl_opts *o;
    struct curl_result res;
    char url[CURL_MAX_URL_LEN], next[CURL_MAX_URL_LEN];
    char host[256];
    unsigned port;
    const char *method;
    bool send_data;
    bool has_upload;
    struct curl_upload up;
    struct curl_sink sink;
    struct curl_progress prog;
    struct tbuf trace; /* -v lines of the request in flight */
    struct tbuf heads; /* raw response heads for -i */
    /* -H and what the options add (build_fields: at most 9 of Content-Type, Accept,
     * Authorization, If-(Un)Modified-Since, Content-Range or Range, If-None-Match, Referer,
     * Cookie twice: the jar's and -b's string) */
    vega_http_field fields[CURL_MAX_HEADERS + 10];
    char range[512];         /* the Range value ("" = none) */
    uint64_t resume_at;      /* -C: the offset asked for (0 = none) */
    char url_auth[704];      /* Basic credentials of the URL's userinfo
                                ("" = none; -u wins) */
    char hop_auth[704];      /* -n: the netrc credentials of a redirect's other host */
    char auth_answer[2048];  /* --digest/--anyauth: the answer to this hop's 401 ("" = none) */
    bool auth_tried;         /* this hop was answered once (a second 401 is final) */
    char time_cond[64];      /* -z: the If-(Un)Modified-Since value */
    char cookie[16384];      /* the Cookie value: the jar's (up to 8190 bytes, curl's cap)
                                and -b's strings (up to 8190) */
    char content_range[600]; /* -r or -C with a body ("" = none) */
    int64_t retry_after;     /* the response's Retry-After in seconds,
                                -1 = none */
    int send_err;            /* vega_http_client_send's failure */
    int64_t last_modified;   /* the final response's, -1 = none */
    long attempt;            /* 0, then 1, 2 ... for --retry */
    vega_tstamp body_start;  /* --limit-rate counts from here */
    size_t nfields;
    vega_deadline dl;
    uint8_t *buf;
    char origin[CURL_MAX_URL_LEN];    /* scheme://host:port of the URL the user gave */
    bool foreign;                     /* this hop's origin is another one */
    vega_http_client_wire_error werr; /* what an HTTP/3 failure was on the wire */
    char inm[1024];                   /* --etag-compare's If-None-Match value ("" = none) */
    FILE *etag_fp;                    /* --etag-save's file for this transfer (or stdout) */
};

/* ---- failures (errors.c) ------------------------------------------------------------------- */

/* The exit code and message for a failed vega_http_client_send, after printing it. */
int curl_send_failed(struct xfer *x, int e);
/* The same for a failed vega_http_client_response_read. */
int curl_read_failed(struct xfer *x, const vega_http_client_info *in, int e);
/* A failure with this code and message (kept for -w %{errormsg}). */
int curl_fail_msg(struct xfer *x, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- --write-out (writeout.c) ------------------------------------------------------------- */

void curl_write_out(const struct curl_opts *o, const struct curl_result *r);

#endif
