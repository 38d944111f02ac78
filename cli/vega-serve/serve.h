/* SPDX-License-Identifier: MIT */
/* vega-serve: the settings every part of the static file server reads, and the parts' entry
 * points (path resolution, files, listings, MIME types, access log). */
#ifndef VEGA_SERVE_H
#define VEGA_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <vega/http_server.h>
#include <vega/shard.h>

#include "cli.h"
#include "prom.h"

#define SERVE_MAX_LISTEN  16
#define SERVE_MAX_HEADERS 32
/* Longest request path accepted (bytes as sent, escapes included): beyond, 414. */
#define SERVE_PATH_MAX 4000
/* Files below this size are read into a stack buffer and sent with the head in one write. */
#define SERVE_SMALL_FILE (16 * 1024)
/* Entries shown in one directory listing at most (the rest is reported as cut). */
#define SERVE_LIST_MAX 20000
/* --index names at most, and the longest. */
#define SERVE_INDEX_MAX 16
/* Basic auth: users, a user name, a password (bytes), an --auth-file (bytes, one line), the
 * --realm. */
#define SERVE_AUTH_NAME_MAX 64
#define SERVE_AUTH_PASS_MAX 256
#define SERVE_AUTH_FILE_MAX (1 << 20)
#define SERVE_AUTH_LINE_MAX 1024
#define SERVE_REALM_MAX     128
/* --random-route: the length of the random prefix's segment. */
#define SERVE_ROUTE_LEN 6

enum serve_log_format {
    SERVE_LOG_COMBINED,
    SERVE_LOG_JSON
};

struct serve_listen {
    const char *spec; /* as given ("ADDR:PORT"), for messages */
    char host[256];
    char port[8];
};

/* Read-only once the server runs: shared by every connection task. */
struct serve_opts {
    const char *dir; /* as given */
    char root[4096]; /* realpath of dir */
    size_t root_len;
    int root_fd;      /* O_PATH|O_DIRECTORY on root */
    bool use_openat2; /* the kernel resolves beneath root_fd for us */

    struct serve_listen listen[SERVE_MAX_LISTEN];
    size_t nlisten;
    const char *bind_host; /* -b */
    const char *port;      /* -p or the positional PORT */

    bool tls;
    const char *cert, *key;
    bool http3;                /* with TLS: HTTP/3 on UDP too (--no-http3 turns off) */
    const char *http3_port;    /* --http3-port; NULL: the first listener's port */
    bool quic_retry;           /* --quic-retry: every new QUIC connection proves its address */
    const char *qlog_dir;      /* --qlog-dir: a qlog trace per QUIC connection there */
    bool http2;                /* with TLS: HTTP/2 by ALPN (--no-http2 turns off) */
    bool h2c;                  /* --h2c: cleartext HTTP/2 (prior knowledge, Upgrade: h2c) */
    const char *tls13_ciphers; /* --tls-ciphers: TLS 1.3 suites, over TCP and QUIC */
    unsigned workers;
    unsigned blocking_threads;  /* --blocking-threads (0: the runtime's 64) */
    unsigned blocking_queue;    /* --blocking-queue (0: the runtime's 1024) */
    unsigned shard_watchdog_ms; /* --shard-watchdog: 0 = the library's default (10 s) */
    unsigned shards; /* --shards N: processes under a supervisor; 0: one process, no supervisor */
    vega_driver_kind driver;

    bool listing;          /* --no-listing turns off */
    bool hidden;           /* --hidden: serve and list dotfiles */
    bool symlinks;         /* --no-symlinks turns off */
    bool compress;         /* on-the-fly compression of text types */
    uint64_t compress_min; /* smallest file compressed on the fly */
    bool etag;             /* --no-etag turns off */
    bool last_modified;    /* --no-last-modified turns off (and date conditions with it) */
    const char *index[SERVE_INDEX_MAX]; /* --index names, in order (default: index.html) */
    size_t nindex;
    bool spa;                        /* --spa: a missing route answers the root's index with 200 */
    bool cors;                       /* --cors: Access-Control-Allow-Origin: * and preflights */
    const char *realm;               /* --realm for Basic auth (users: auth.c) */
    size_t auth_cache;               /* --auth-cache: slow-hash successes kept (0: none) */
    char route[SERVE_ROUTE_LEN + 2]; /* --random-route: "/XXXXXX"; "" when off */
    size_t route_len;
    bool upload;             /* --upload: PUT and multipart POST write files */
    bool mkdir;              /* --mkdir: a POST makes a folder */
    bool overwrite;          /* --overwrite: an upload may replace a file */
    uint64_t upload_max;     /* --upload-max: one request body at most */
    bool tar;                /* --tar: ?download=tar on a folder streams it as a tar */
    bool tar_gz;             /* --tar-gz: ?download=tar.gz, the same through gzip */
    bool zip;                /* --zip: ?download=zip, a streamed ZIP */
    bool cache;              /* --no-cache turns off */
    uint64_t cache_size;     /* --cache-size: all entries together */
    uint64_t cache_max_file; /* --cache-max-file: the largest file cached */

    vega_http_field headers[SERVE_MAX_HEADERS]; /* --header */
    size_t nheaders;

    const char *access_log; /* NULL: none ("-" = stdout) */
    const char *ws_echo;    /* --ws-echo PATH: a WebSocket echo endpoint there; NULL: none */
    int log_fd;             /* -1: none */
    enum serve_log_format log_format;
    bool quiet;
    const char *metrics; /* --metrics ADDR:PORT: the Prometheus listener; NULL: none */
    char metrics_host[256], metrics_port[16]; /* its parts (":PORT" is 127.0.0.1) */
    bool metrics_public;       /* --metrics-public: a metrics address that is not loopback */
    const char *metrics_log;   /* --metrics-log FILE: runtime deltas, a JSON line each; NULL */
    unsigned metrics_every_ms; /* --metrics-every MS: its interval; 0 = 1000 */

    sigset_t stop_signals;
};

extern struct serve_opts serve_o;

/* ---- setup.c ------------------------------------------------------------------------------ */

/* Fills serve_o with the defaults of the command line (before parsing it). */
void serve_defaults(void);

/* Opens serve_o.dir as the root (its realpath, an O_PATH descriptor, whether openat2 works).
 * Returns 0, or -1 after saying why on stderr. */
int serve_open_root(void);

/* The server options for the handler (and the access log when serve_o.log_fd is open). */
void serve_server_opts(vega_http_server_opts *so);

/* ---- metrics.c ---------------------------------------------------------------------------- */

struct serve_metrics {
    struct cli_prom prom;          /* the metrics listener (cli/common/prom.h) */
    const vega_http_server *files; /* whose counters it shows */
    vega_task *publisher;          /* --shards: publishes them for the other shards' sums */
    vega_task *sampler;            /* --metrics-log: the runtime's deltas to log */
    FILE *log;                     /* --metrics-log's file */
    const vega_http_server *srv;   /* whose request count --metrics-log shows */
    uint64_t log_requests;         /* the request count the last line took */
    vega_task *log_publisher;      /* --metrics-log with --shards: copies to the shared slot */
};

/* --metrics: checks the address (loopback unless --metrics-public), listens, prints
 * "vega-serve: metrics on http://ADDR:PORT/metrics" and serves srv's and the runtime's metrics
 * in a task of its own. --metrics-log: opens the file and starts the sampler that appends a
 * line to it every --metrics-every ms. Without either, m is left empty. Returns 0 or an exit code
 * (after saying why). Context: inside a task. */
int serve_metrics_start(vega_http_server *srv, struct serve_metrics *m);

/* Stops and frees what serve_metrics_start made (nothing: a no-op). In a shard, also hands
 * this shard's final counters to the others' sums (serve_shard_metrics_detach). */
void serve_metrics_stop(struct serve_metrics *m);

/* --metrics with --shards, in the supervisor (inside a task, before the first fork): checks the
 * address as serve_metrics_start does, makes the shared listening sockets
 * (serve_shard_metrics_fds), prints where. Returns 0 or an exit code (after saying why). */
int serve_metrics_listen_shared(void);

/* One worker's runtime counters (or their sum) as JSON members, no braces: the --metrics-log
 * lines of one process and of the supervisor share the spelling. */
void serve_json_worker(FILE *f, const vega_worker_metrics *w);
/* serve_json_worker of d's sum, then "per_worker": the first workers' own, as a JSON array. */
void serve_json_counters(FILE *f, const vega_rt_counters *d);

/* ---- shard_metrics.c ---------------------------------------------------------------------- */

#define SERVE_SHARD_METRICS_MAX_FDS 4
extern int serve_shard_metrics_fds[SERVE_SHARD_METRICS_MAX_FDS];
extern size_t serve_shard_metrics_nfds;

/* Supervisor, before the first fork: maps the region where the shards publish their metrics
 * (a slot each, and a retired total), or the one a binary upgrade handed over ($VEGA_SERVE_
 * METRICS_FD), and names it for the next upgrade. Returns 0 or -errno. */
int serve_shard_metrics_init(unsigned shards);
/* Whether that region exists (in a shard: --metrics with --shards). */
bool serve_shard_metrics_on(void);
/* A shard takes a slot (folding the counters of a dead shard's slot into the retired total). */
void serve_shard_metrics_attach(void);
/* Replaces this shard's text in its slot. */
void serve_shard_metrics_publish(const char *text, size_t len);
/* A shard that ends cleanly: its final text's counters go to the retired total; slot freed. */
void serve_shard_metrics_detach(const char *text, size_t len);
/* Writes to out the sum, sample by sample, of own (this shard's fresh text), every other slot
 * (only counters and histograms of shards that are gone) and the retired total. Returns 0,
 * -ENOMEM or -EIO. */
int serve_shard_metrics_sum(const char *own, size_t len, FILE *out);

/* ---- shard_log.c -------------------------------------------------------------------------- */

/* --metrics-every's default. */
#define SERVE_METRICS_EVERY_MS 1000

/* Supervisor, before the first fork (--metrics-log with --shards): opens the log file and maps
 * the region where the shards copy their counters. Returns 0 or an exit code (after saying
 * why). */
int serve_shard_log_init(unsigned shards, unsigned every_ms);
/* Whether that region exists (in a shard: --metrics-log with --shards). */
bool serve_shard_log_on(void);
/* A shard takes a slot. */
void serve_shard_log_attach(void);
/* A shard copies its counters (rt's, and its server's request count) to its slot; final: it
 * has stopped, these are its last. */
void serve_shard_log_publish(const vega_rt *rt, uint64_t requests, bool final);
/* Supervisor (vega_shard_opts.on_tick): takes the ended shards' last counters and, once an
 * interval has passed, appends the line. */
void serve_shard_log_tick(void *arg);
/* Supervisor, after the last shard ended: the last, partial interval's line; closes the file. */
void serve_shard_log_finish(void);

/* ---- handler.c ---------------------------------------------------------------------------- */

/* The vega_http_server handler. */
int serve_handle(vega_http_exchange *x, void *user);

/* ---- auth.c ------------------------------------------------------------------------------- */

/* -a USER:PASSWORD or USER:HASH (passwd.h's forms). Returns 0, or -1 after saying why. */
int serve_auth_add(const char *spec);
/* --auth-file: lines USER:HASH ('#' comments, blank lines): sha256:HEX, crypt(3) hashes
 * (bcrypt, sha512-crypt, sha256-crypt, yescrypt), $pbkdf2-sha256$, $scrypt$; plain passwords
 * refused. Returns 0, or -1 after saying why (with the line). */
int serve_auth_load_file(const char *path);
/* After the users are read: the cache of slow-hash successes (serve_o.auth_cache entries) when
 * some user has a slow hash. Returns 0, or -1 after saying why. */
int serve_auth_cache_init(void);
/* How many users there are (0: no auth). */
size_t serve_auth_users(void);
/* Whether the request carries the Basic credentials of a user (always 1 without users): 1
 * yes, 0 no, negative: a slow hash could not be run (the blocking pool is full: 503). May
 * suspend (a slow hash runs on the blocking pool). Context: inside a task. */
int serve_auth_check(const vega_http_request *req);
/* --hash-password USER: reads a password (one line) from stdin, without echo on a terminal,
 * and prints "USER:HASH" of scheme (cli_pw_hash). Returns the exit code. */
int serve_hash_password(const char *user, const char *scheme);
/* Answers 401 with WWW-Authenticate: Basic realm="--realm". */
int serve_auth_challenge(vega_http_exchange *x);

/* ---- upload.c ----------------------------------------------------------------------------- */

/* --upload: a PUT to norm (normalised, n bytes): 201 (new), 200 (replaced), 409 (exists, no
 * --overwrite), 413 (over --upload-max), 400 (a bad name), 404 (no such folder). */
int serve_put(vega_http_exchange *x, const char *norm, size_t n);
/* --upload/--mkdir: a POST to the folder norm: a multipart/form-data form's files, or
 * "mkdir=NAME"; 303 to the listing when done. */
int serve_post(vega_http_exchange *x, const char *norm, size_t n);

/* ---- archive.c (tar.c, zip.c) -------------------------------------------------------------- */

enum serve_archive {
    SERVE_ARCHIVE_NONE,
    SERVE_ARCHIVE_TAR,
    SERVE_ARCHIVE_TAR_GZ,
    SERVE_ARCHIVE_ZIP
};

/* The archive a request asks for its folder as ("download=tar", "download=tar.gz",
 * "download=zip" in the query) when --tar, --tar-gz or --zip turned that format on; else
 * SERVE_ARCHIVE_NONE. */
enum serve_archive serve_archive_wanted(const vega_http_request *req);
/* Answers with the folder fd (taken: closed here), rel its path ("/.../"), as an archive of
 * that kind streamed chunked. */
int serve_archive(vega_http_exchange *x, int fd, const char *rel, size_t rel_len,
                  enum serve_archive kind);

/* ---- ws_echo.c ---------------------------------------------------------------------------- */

/* --ws-echo: accepts the WebSocket handshake of x and echoes every message until the client
 * closes. Answers 426 or 400 to a request that is not a WebSocket handshake. */
int serve_ws_echo(vega_http_exchange *x);

/* ---- path.c ------------------------------------------------------------------------------- */

/*
 * Opens rel (a normalised path from vega_http_path_normalize_safe, starting with "/") under
 * the root, never leaving it: symlinks are followed only while they stay inside the root (and
 * not at all with --no-symlinks). Opened O_RDONLY|O_NONBLOCK (a FIFO does not block the open).
 * Returns an fd or -errno: -ENOENT (missing, or refused: a symlink out of the root), -EACCES.
 */
int serve_open(const char *rel, size_t len);

/* serve_open for a path with no symlink at all (else -ELOOP, as for a symlink anywhere in it):
 * what it opens stays exact under the cache's directory watches. */
int serve_open_plain(const char *rel, size_t len);

/* ---- fsio.c ------------------------------------------------------------------------------- */

/* The file system calls of a request, off the worker thread: io_uring operations (openat2,
 * statx, read) or blocking-pool jobs under epoll. Inside a task. Each returns -errno on error. */
int serve_fstat(int fd, struct stat *st);
/* fstatat below the root without following a final symlink; rel has no leading "/". */
int serve_lstat_below(const char *rel, struct stat *st);
/* The same relative to dirfd. */
int serve_lstat_at(int dirfd, const char *name, struct stat *st);
/* openat(dirfd, name, flags) as an openat2 with no RESOLVE_ flags: a descriptor or -errno. */
int serve_open_at(int dirfd, const char *name, int flags);
/* One positioned read (EINTR retried): the count, 0 at end of file, or -errno. */
vega_ssize serve_pread(int fd, void *buf, size_t len, uint64_t off);
/* Reads until len bytes or end of file: the count (short only at end of file) or -errno. */
vega_ssize serve_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* openat2(root_fd, rel, flags, resolve): a descriptor or -errno. */
int serve_openat2_beneath(const char *rel, unsigned flags, unsigned long long resolve);
/* openat(root_fd, rel, flags) on the blocking pool (kernels without openat2). */
int serve_openat_plain(const char *rel, int flags);

/* True when some segment of rel starts with "." (hidden). */
bool serve_path_is_hidden(const char *rel, size_t len);

/* ---- cache.c ------------------------------------------------------------------------------ */

/* A cached file: read-only, alive while referenced (serve_cache_get/add to serve_cache_put). */
struct serve_cache_entry {
    const uint8_t *data; /* st.st_size bytes */
    struct stat st;
    const char *name; /* the file's path below the root (for its type) */
    size_t name_len;
    bool has_sibling; /* FILE.br/.zst/.gz exists in some form: not for Accept-Encoding */
};

/* Sets up inotify and its task (inside the runtime); on failure the cache is off (said with
 * -v). Returns 0. */
int serve_cache_start(void);
void serve_cache_stop(void);

/* Drops every entry; the watches and their task stay. A fresh start without closing the
 * inotify instance, which costs an RCU grace period (the fuzz target resets per input). */
void serve_cache_flush(void);

/* The entry for a normalised request path, referenced; NULL on a miss. since: when the
 * request arrived (its vega_http_request.start): every change made before then is seen.
 * Does not allocate. */
const struct serve_cache_entry *serve_cache_get(const char *key, size_t len, vega_tstamp since);
void serve_cache_put(const struct serve_cache_entry *e);

/* Reads the regular file fd (opened by serve_open_plain at file) into a new entry under key
 * and returns it referenced (possibly not kept, when something changed meanwhile); NULL when
 * it is not cached (too big, cache off, no watch, changed). fd stays the caller's. */
const struct serve_cache_entry *serve_cache_add(const char *key, size_t key_len, const char *file,
                                                size_t file_len, int fd, const struct stat *st);

/* ---- mime.c ------------------------------------------------------------------------------- */

/* The Content-Type for a file name; *text set when the type is worth compressing. */
const char *serve_mime_type(const char *name, size_t len, bool *text);

/* ---- file.c ------------------------------------------------------------------------------- */

/* Answers a GET or HEAD for the regular file fd (taken: closed here), rel its path. */
int serve_file(vega_http_exchange *x, int fd, const struct stat *st, const char *rel,
               size_t rel_len);

/* serve_file for a cached entry, as if its file were open: the same representation choice
 * (no sibling looked for: the caller sends requests with Accept-Encoding elsewhere when the
 * entry has one), the same validators, conditions and ranges. */
int serve_file_cached(vega_http_exchange *x, const struct serve_cache_entry *e);

/* Answers with a small text body (errors, redirects), adding the --header fields. */
int serve_simple(vega_http_exchange *x, int status, const vega_http_field *extra, size_t n);
/* 503 for a shortage that passes (the blocking pool's queue full, no descriptors or memory
 * left, a slow hash not started in time), with "Retry-After: 1" (RFC 9110 §10.2.3): clients
 * that retry (curl --retry, vega-curl --retry) wait a second, not their own backoff. */
int serve_unavailable(vega_http_exchange *x);

/* Appends the --header fields to f (capacity cap); returns the new count. */
size_t serve_add_user_headers(vega_http_field *f, size_t n, size_t cap);

/* ---- listing.c ---------------------------------------------------------------------------- */

/* Answers a GET or HEAD for the directory fd (taken: closed here), rel its path ("/.../"). */
int serve_listing(vega_http_exchange *x, int fd, const char *rel, size_t rel_len);

/* ---- util.c ------------------------------------------------------------------------------- */

/* A growing byte buffer with a hard limit. */
struct sbuf {
    char *p;
    size_t len, cap, max;
    bool failed; /* an append did not fit (or no memory); the content is cut */
};

void sbuf_init(struct sbuf *b, size_t max);
void sbuf_free(struct sbuf *b);
void sbuf_add(struct sbuf *b, const void *s, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_html(struct sbuf *b, const char *s, size_t n); /* HTML-escaped */
void sbuf_url(struct sbuf *b, const char *s, size_t n);  /* percent-encoded path segment(s) */
void sbuf_json(struct sbuf *b, const char *s, size_t n); /* JSON string body, UTF-8 checked */

/* The value of the first request field named name, or NULL (then *len is 0). */
const char *serve_req_field(const vega_http_request *req, const char *name, size_t *len);

/* The same for a list-valued field (RFC 9110 §5.3): several lines joined with ", " in buf
 * (the first line alone if they do not fit). */
const char *serve_req_list(const vega_http_request *req, const char *name, char *buf, size_t cap,
                           size_t *len);

/* ---- log.c -------------------------------------------------------------------------------- */

void serve_on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e);
/* Starts the task that writes the access log's buffer out (nothing without a log). Inside a
 * task. Returns 0 or a negative code (said on stderr; lines are then written directly). */
int serve_log_start(void);
/* Stops that task and writes every line still buffered (a clean stop loses none). */
void serve_log_stop(void);
/* Lines dropped because the buffer was full (the log file too slow). */
uint64_t serve_log_dropped(void);

/* ---- shards.c ----------------------------------------------------------------------------- */

/* Set in a shard process (--shards): the shard and the listening sockets it inherited. */
extern vega_shard *serve_shard;
/* The command line, for a binary upgrade (SIGUSR2); NULL: too long, no upgrade. */
extern char **serve_argv;
extern int serve_shard_fds[];
extern size_t serve_shard_nfds;
/* HTTP/3 with --shards: 3 sets (generations mod 3) of one UDP socket per shard, one
 * SO_REUSEPORT group; the byte that starts our connection IDs names the socket, so 3 * shards
 * must fit in it. */
#define SERVE_SHARD_UDP_SETS 3
#define SERVE_SHARD_UDP_MAX  85
extern int serve_shard_udp_fds[];
extern size_t serve_shard_nudp;
/* Keys every shard shares (made once by the supervisor): 32 bytes of session ticket key, 32 of
 * QUIC static key (Retry and NEW_TOKEN tokens, stateless resets). */
extern uint8_t serve_shard_h3_keys[64];
/* In a shard with HTTP/3: the index of the UDP socket it serves (also its connection IDs'
 * first byte); -1 otherwise. */
int serve_shard_udp_slot(void);

/* The server in this process: runtime, listeners, serving until SIGTERM. Returns the exit code. */
int serve_run(void);

/* --shards: makes the listening sockets, prints them, and supervises the shards (each runs
 * serve_run). Returns the exit code. */
int serve_shards_run(void);

#endif
