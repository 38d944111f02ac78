/* SPDX-License-Identifier: MIT */
/* vega-serve: command line, the served directory, listeners, the runtime, and a graceful stop
 * on SIGINT/SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "passwd.h"
#include "serve.h"

static const char usage_text[] =
    "Usage: vega-serve [options] [DIR] [PORT]\n"
    "Serves the files of DIR (default: the current directory) over HTTP/1.1, by default on\n"
    "http://127.0.0.1:8080/; with TLS over HTTP/2 (ALPN h2) and HTTP/3 (QUIC, UDP) too, on\n"
    "the same port.\n"
    "\n"
    "Where:\n"
    "  -p, --port PORT         the port (default 8080; 0 picks a free one, shown at start)\n"
    "  -b, --bind ADDR         the address (default 127.0.0.1; 0.0.0.0 or :: for every\n"
    "                          interface)\n"
    "  -l, --listen ADDR:PORT  listen there (repeatable; [v6]:PORT for IPv6); with -l, -b and\n"
    "                          -p add one more listener only when given\n"
    "      --tls               HTTPS (a fresh self-signed certificate for localhost unless\n"
    "                          --cert is given)\n"
    "      --cert FILE         PEM certificate chain (implies --tls)\n"
    "      --key FILE          its PEM private key (default: in the --cert file)\n"
    "      --no-http3          with TLS, no HTTP/3 (by default HTTP/3 is served on UDP on the\n"
    "                          first listener's port and announced with Alt-Svc)\n"
    "      --http3-port PORT   HTTP/3 on this UDP port instead\n"
    "      --no-http2          with TLS, no HTTP/2 (ALPN offers http/1.1 alone)\n"
    "      --h2c               cleartext HTTP/2 on plain TCP: a client that starts with the\n"
    "                          HTTP/2 preface (curl --http2-prior-knowledge, h2load), or asks\n"
    "                          for it with \"Upgrade: h2c\" (curl --http2)\n"
    "      --tls-ciphers LIST  TLS 1.3 cipher suites, in order, for HTTPS and HTTP/3\n"
    "                          (TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256 ...)\n"
    "      --quic-retry        answer every new QUIC connection with a Retry (address\n"
    "                          validation, RFC 9000 8.1.2; by default only under a flood)\n"
    "      --qlog-dir DIR      write a qlog trace of each QUIC connection into DIR\n"
    "                          (<ODCID>_server.sqlog, JSON-SEQ; for debugging)\n"
    "\n"
    "What is served:\n"
    "      --no-listing        no directory listings (403); index.html is still served\n"
    "      --hidden            serve and list dotfiles (default: 404, not listed)\n"
    "      --no-symlinks       refuse every symlink (symlinks leaving DIR are always refused)\n"
    "      --compress, --no-compress  compression on the fly (default on: text types of at\n"
    "                          least --compress-min bytes, as br, zstd or gzip per\n"
    "                          Accept-Encoding; never for ranges)\n"
    "      --compress-min SIZE the smallest file compressed on the fly (default 1K)\n"
    "      --cache-size SIZE   memory for cached files (default 64M); a small file is read\n"
    "                          once and then answered from memory, kept exact by inotify\n"
    "      --cache-max-file SIZE  the largest file cached (default 64K)\n"
    "      --no-cache          no file cache\n"
    "      --index NAME        a directory's index file (repeatable, tried in order; default\n"
    "                          index.html)\n"
    "      --spa, --try-files  single-page apps: a missing path whose last segment has no '.'\n"
    "                          (a client-side route) is answered with the root's index file,\n"
    "                          200; a missing /x.js stays 404\n"
    "      --cors              Access-Control-Allow-Origin: * on every answer, and OPTIONS\n"
    "                          preflights answered 204 (methods, the asked headers, max-age 1 "
    "day)\n"
    "      --no-etag           send no ETag (If-None-Match/If-Match then match only '*')\n"
    "      --no-last-modified  send no Last-Modified (date conditions are then ignored)\n"
    "      --tar               a folder's ?download=tar is the folder as a tar archive,\n"
    "                          streamed (regular files and folders; no symlinks; dotfiles\n"
    "                          only with --hidden); listings link to it\n"
    "      --tar-gz            the same for ?download=tar.gz (gzip-compressed tar)\n"
    "      --zip               the same for ?download=zip (deflated; ZIP64 past 4 GiB or\n"
    "                          65535 entries; already-compressed types and files of 2 GiB\n"
    "                          and more are stored)\n"
    "      --random-route      serve only under a random /XXXXXX/ prefix (printed at start;\n"
    "                          everything else 404)\n"
    "  -H, --header 'NAME: VALUE'  add this field to every response (repeatable)\n"
    "      --max-conns N       open connections at most (default 10000)\n"
    "      --keepalive-timeout SECS  close a connection idle this long between requests\n"
    "                          (nginx's keepalive_timeout; 1..86400, default 60)\n"
    "\n"
    "Precompressed siblings FILE.br, FILE.zst and FILE.gz are sent instead of FILE when the\n"
    "client accepts them (with Content-Encoding and Vary: Accept-Encoding). Directories answer\n"
    "with their index.html, else a listing: HTML, or JSON for \"Accept: application/json\".\n"
    "\n"
    "Access:\n"
    "  -a, --auth USER:PASS    HTTP Basic auth: this user may (repeatable); PASS may also be\n"
    "                          a hash as in --auth-file\n"
    "      --auth-file FILE    users from FILE, one 'USER:HASH' a line ('#' comments): bcrypt\n"
    "                          ($2y$/$2b$, htpasswd -B), sha512-crypt ($6$, mkpasswd, openssl\n"
    "                          passwd -6), sha256-crypt ($5$), yescrypt ($y$),\n"
    "                          $pbkdf2-sha256$ROUNDS$SALT$HASH and\n"
    "                          $scrypt$ln=L,r=R,p=P$SALT$HASH (passlib), or sha256:HEX\n"
    "                          (unsalted); plain passwords are refused\n"
    "      --hash-password USER  read a password from stdin, print 'USER:HASH' for\n"
    "                          --auth-file, and exit\n"
    "      --hash-scheme S     its scheme: bcrypt (default, cost 10), pbkdf2 (600000 rounds),\n"
    "                          yescrypt or sha512-crypt\n"
    "      --auth-cache N      slow hashes are checked on the blocking pool; this many recent\n"
    "                          (user, password) successes are kept so that each request does\n"
    "                          not run one again (default 256; 0: none)\n"
    "      --realm TEXT        the realm of the 401 challenge (default vega-serve)\n"
    "                          With users, every request (files, listings, --ws-echo) needs\n"
    "                          them, else 401; not the --metrics listener. Over plain HTTP the\n"
    "                          password travels in clear: a warning at start (use --tls).\n"
    "\n"
    "Uploads (off by default):\n"
    "      --upload            PUT /PATH/NAME writes a file, and listings get an upload form\n"
    "                          (a multipart/form-data POST to the folder); 201 new, 409 when\n"
    "                          NAME exists; written to a hidden temporary file in the same\n"
    "                          folder and renamed into place once complete\n"
    "      --upload-max SIZE   the largest request body (default 1G; beyond: 413)\n"
    "      --overwrite         an upload may replace an existing file (200)\n"
    "      --mkdir             listings get a create-folder form (a POST of mkdir=NAME)\n"
    "                          Names: no dotfiles, no '/', '\\' or control characters, at most\n"
    "                          255 bytes; the folder is found as for reads (symlinks never\n"
    "                          leave DIR). A form from another origin is refused (403).\n"
    "\n"
    "WebSocket:\n"
    "      --ws-echo PATH      a WebSocket echo endpoint at PATH (e.g. /ws): every message comes\n"
    "                          back as it was sent (permessage-deflate when the client offers "
    "it);\n"
    "                          over HTTP/1.1 (Upgrade), HTTP/2 and HTTP/3 (RFC 8441, RFC 9220\n"
    "                          extended CONNECT: SETTINGS_ENABLE_CONNECT_PROTOCOL is then\n"
    "                          advertised)\n"
    "\n"
    "Logs:\n"
    "      --access-log FILE   one line per request to FILE (appended; '-' = stdout),\n"
    "                          buffered and written every 100 ms; when FILE cannot keep up,\n"
    "                          lines are dropped and counted (stderr, --metrics), requests\n"
    "                          never wait for it\n"
    "      --log-format FMT    combined (default, as Apache and nginx) or json\n"
    "  -v, --verbose           more messages; without --access-log, the access log on stderr\n"
    "  -q, --quiet             no start-up lines\n"
    "\n"
    "Metrics:\n"
    "      --metrics ADDR:PORT  Prometheus metrics of the server and the runtime at\n"
    "                          http://ADDR:PORT/metrics (plain HTTP, a listener of its own;\n"
    "                          ':PORT' is 127.0.0.1; port 0 picks a free one, shown at start;\n"
    "                          with --shards, any shard answers with the sum over all shards)\n"
    "      --metrics-public    allow a --metrics address that is not loopback (by default\n"
    "                          refused: the counters would be public)\n"
    "      --metrics-log FILE  append one JSON line per interval to FILE with what the\n"
    "                          runtime did in it (tasks spawned, polls, steals, parks, I/O\n"
    "                          operations and completions, blocking jobs, requests; summed and\n"
    "                          per worker; with --shards the supervisor writes the sum and each\n"
    "                          shard's in per_shard)\n"
    "      --metrics-every MS  the --metrics-log interval (default 1000, 10..3600000)\n"
    "\n"
    "Runtime:\n"
    "      --workers N         worker threads (per shard with --shards; default: the CPUs)\n"
    "      --blocking-threads N  most threads of the blocking pool (file opens and stats\n"
    "                          under --driver epoll, realpath, listing scans, slow hashes;\n"
    "                          1..1024, default 64)\n"
    "      --blocking-queue N  most jobs waiting for those threads (1..1000000, default\n"
    "                          1024); one more is answered 503 with Retry-After: 1\n"
    "      --shards N          N server processes under a supervisor that restarts a crashed\n"
    "                          or stuck one, reloads them without refusing a connection on\n"
    "                          SIGHUP and drains them on SIGTERM (0: one process, the default).\n"
    "                          HTTP/3: one UDP socket per shard, packets steered by connection\n"
    "                          ID (at most 85 shards). SIGUSR2 upgrades the binary, keeping\n"
    "                          the sockets (TCP and UDP)\n"
    "      --shard-watchdog MS a shard that sends no heartbeat (a timer task, every\n"
    "                          second or MS/4) for MS is killed and replaced (default 10000)\n"
    "      --driver NAME       I/O driver: uring or epoll (default: $VEGA_DRIVER, else uring\n"
    "                          where the kernel allows it)\n"
    "  -h, --help              this help\n"
    "      --version           the version\n"
    "  SSLKEYLOGFILE=FILE      append the TLS secrets of HTTPS and HTTP/3 connections to FILE\n"
    "                          (for Wireshark; created with mode 0600)\n"
    "\n"
    "With --shards, SIGHUP starts new shards (re-reading the certificate and the tree) and drains\n"
    "the old ones once the new ones serve; SIGUSR2 runs the binary again (the file now at the\n"
    "path it was started by) on the same sockets and, once its shards serve, drains and exits.\n"
    "SIGINT and SIGTERM stop it gracefully (requests in progress get up to 5 s) with exit 0.\n"
    "Exit codes: 0 success, 1 cannot listen (or another network error), 2 usage error (also a\n"
    "DIR that is not a directory, an unusable certificate, an access log that cannot be opened,\n"
    "a --metrics address that is not loopback without --metrics-public).\n"
    "\n"
    "Examples:\n"
    "  vega-serve                          the current directory on http://127.0.0.1:8080/\n"
    "  vega-serve site 9000                ./site on port 9000\n"
    "  vega-serve -b 0.0.0.0 -p 80 /srv    every interface\n"
    "  vega-serve --tls -p 8443 .          HTTPS (HTTP/1.1 and HTTP/2) and HTTP/3 with a\n"
    "                                      self-signed certificate (curl -k; vega-curl\n"
    "                                      --http3 -k)\n"
    "  vega-serve --h2c .                  cleartext HTTP/2 too (h2load http://...)\n"
    "  vega-serve -p 0 --access-log - .    a free port, access log on stdout\n"
    "  vega-serve -H 'Cache-Control: max-age=60' --no-listing dist\n"
    "  vega-serve --metrics :9100 .        Prometheus metrics on http://127.0.0.1:9100/metrics\n";

enum {
    OPT_VERSION = 256,
    OPT_TLS,
    OPT_CERT,
    OPT_KEY,
    OPT_WORKERS,
    OPT_BLOCKING_THREADS,
    OPT_BLOCKING_QUEUE,
    OPT_SHARDS,
    OPT_SHARD_WATCHDOG,
    OPT_DRIVER,
    OPT_NO_LISTING,
    OPT_HIDDEN,
    OPT_NO_SYMLINKS,
    OPT_COMPRESS,
    OPT_NO_COMPRESS,
    OPT_COMPRESS_MIN,
    OPT_ACCESS_LOG,
    OPT_LOG_FORMAT,
    OPT_MAX_CONNS,
    OPT_KEEPALIVE_TIMEOUT,
    OPT_CACHE_SIZE,
    OPT_CACHE_MAX_FILE,
    OPT_NO_CACHE,
    OPT_NO_HTTP3,
    OPT_HTTP3_PORT,
    OPT_QUIC_RETRY,
    OPT_QLOG_DIR,
    OPT_NO_HTTP2,
    OPT_H2C,
    OPT_TLS_CIPHERS,
    OPT_WS_ECHO,
    OPT_METRICS,
    OPT_METRICS_PUBLIC,
    OPT_METRICS_LOG,
    OPT_METRICS_EVERY,
    OPT_AUTH_FILE,
    OPT_REALM,
    OPT_INDEX,
    OPT_SPA,
    OPT_CORS,
    OPT_NO_ETAG,
    OPT_NO_LAST_MODIFIED,
    OPT_RANDOM_ROUTE,
    OPT_UPLOAD,
    OPT_UPLOAD_MAX,
    OPT_OVERWRITE,
    OPT_MKDIR,
    OPT_TAR,
    OPT_TAR_GZ,
    OPT_ZIP,
    OPT_AUTH_CACHE,
    OPT_HASH_PASSWORD,
    OPT_HASH_SCHEME,
};

static const struct option long_opts[] = {
    {"port", required_argument, NULL, 'p'},
    {"bind", required_argument, NULL, 'b'},
    {"listen", required_argument, NULL, 'l'},
    {"header", required_argument, NULL, 'H'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"tls", no_argument, NULL, OPT_TLS},
    {"ws-echo", required_argument, NULL, OPT_WS_ECHO},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"no-http3", no_argument, NULL, OPT_NO_HTTP3},
    {"http3-port", required_argument, NULL, OPT_HTTP3_PORT},
    {"quic-retry", no_argument, NULL, OPT_QUIC_RETRY},
    {"qlog-dir", required_argument, NULL, OPT_QLOG_DIR},
    {"no-http2", no_argument, NULL, OPT_NO_HTTP2},
    {"h2c", no_argument, NULL, OPT_H2C},
    {"tls-ciphers", required_argument, NULL, OPT_TLS_CIPHERS},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"blocking-threads", required_argument, NULL, OPT_BLOCKING_THREADS},
    {"blocking-queue", required_argument, NULL, OPT_BLOCKING_QUEUE},
    {"shards", required_argument, NULL, OPT_SHARDS},
    {"shard-watchdog", required_argument, NULL, OPT_SHARD_WATCHDOG},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"no-listing", no_argument, NULL, OPT_NO_LISTING},
    {"hidden", no_argument, NULL, OPT_HIDDEN},
    {"no-symlinks", no_argument, NULL, OPT_NO_SYMLINKS},
    {"compress", no_argument, NULL, OPT_COMPRESS},
    {"no-compress", no_argument, NULL, OPT_NO_COMPRESS},
    {"compress-min", required_argument, NULL, OPT_COMPRESS_MIN},
    {"access-log", required_argument, NULL, OPT_ACCESS_LOG},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"keepalive-timeout", required_argument, NULL, OPT_KEEPALIVE_TIMEOUT},
    {"cache-size", required_argument, NULL, OPT_CACHE_SIZE},
    {"cache-max-file", required_argument, NULL, OPT_CACHE_MAX_FILE},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"metrics-public", no_argument, NULL, OPT_METRICS_PUBLIC},
    {"metrics-log", required_argument, NULL, OPT_METRICS_LOG},
    {"metrics-every", required_argument, NULL, OPT_METRICS_EVERY},
    {"auth", required_argument, NULL, 'a'},
    {"auth-file", required_argument, NULL, OPT_AUTH_FILE},
    {"realm", required_argument, NULL, OPT_REALM},
    {"index", required_argument, NULL, OPT_INDEX},
    {"spa", no_argument, NULL, OPT_SPA},
    {"try-files", no_argument, NULL, OPT_SPA},
    {"cors", no_argument, NULL, OPT_CORS},
    {"no-etag", no_argument, NULL, OPT_NO_ETAG},
    {"no-last-modified", no_argument, NULL, OPT_NO_LAST_MODIFIED},
    {"random-route", no_argument, NULL, OPT_RANDOM_ROUTE},
    {"upload", no_argument, NULL, OPT_UPLOAD},
    {"upload-max", required_argument, NULL, OPT_UPLOAD_MAX},
    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
    {"mkdir", no_argument, NULL, OPT_MKDIR},
    {"tar", no_argument, NULL, OPT_TAR},
    {"tar-gz", no_argument, NULL, OPT_TAR_GZ},
    {"zip", no_argument, NULL, OPT_ZIP},
    {"auth-cache", required_argument, NULL, OPT_AUTH_CACHE},
    {"hash-password", required_argument, NULL, OPT_HASH_PASSWORD},
    {"hash-scheme", required_argument, NULL, OPT_HASH_SCHEME},
    {NULL, 0, NULL, 0},
};

static size_t max_conns;
static unsigned keepalive_s; /* --keepalive-timeout; 0: the library's default */

static void add_header(char *arg)
{
    char *colon = strchr(arg, ':');
    if (!colon || colon == arg)
        cli_usage_error("--header: expected 'NAME: VALUE', got '%s'", arg);
    size_t nl = (size_t)(colon - arg);
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (!vega_http_token_is_valid(arg, nl) || !vega_http_field_value_is_valid(v, vl))
        cli_usage_error("--header: '%s' is not a valid field", arg);
    /* Fields the server or the file decides: a second copy would contradict them. */
    static const char *const framing[] = {
        "content-length", "transfer-encoding", "connection",   "date",
        "server",         "content-range",     "content-type", "etag",
        "last-modified",  "content-encoding",  "location",     "allow",
        "accept-ranges"};
    for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++)
        if (strlen(framing[i]) == nl && strncasecmp(arg, framing[i], nl) == 0)
            cli_usage_error("--header: %.*s is set by the server", (int)nl, arg);
    if (serve_o.nheaders == SERVE_MAX_HEADERS)
        cli_usage_error("--header: at most %d", SERVE_MAX_HEADERS);
    vega_http_field *f = &serve_o.headers[serve_o.nheaders++];
    f->name.ptr = arg;
    f->name.len = nl;
    f->value.ptr = v;
    f->value.len = vl;
}

static void add_listen(const char *spec)
{
    if (serve_o.nlisten == SERVE_MAX_LISTEN)
        cli_usage_error("-l: at most %d listeners", SERVE_MAX_LISTEN);
    struct serve_listen *l = &serve_o.listen[serve_o.nlisten];
    if (cli_split_hostport(spec, l->host, sizeof(l->host), l->port, sizeof(l->port)) < 0 ||
        !cli_is_port(l->port))
        cli_usage_error("-l: expected ADDR:PORT, got '%s'", spec);
    if (!l->host[0])
        snprintf(l->host, sizeof(l->host), "0.0.0.0");
    l->spec = spec;
    serve_o.nlisten++;
}

static void add_index(const char *name)
{
    size_t nl = strlen(name);
    if (nl == 0 || nl > 255 || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        cli_usage_error("--index: expected a file name (no '/', 1 to 255 bytes), got '%s'", name);
    if (serve_o.nindex == SERVE_INDEX_MAX)
        cli_usage_error("--index: at most %d names", SERVE_INDEX_MAX);
    serve_o.index[serve_o.nindex++] = name;
}

static void set_realm(const char *realm)
{
    size_t n = strlen(realm);
    if (n == 0 || n > SERVE_REALM_MAX)
        cli_usage_error("--realm: 1 to %d bytes", SERVE_REALM_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)realm[i] < 0x20 || realm[i] == 0x7f || realm[i] == '"' ||
            realm[i] == '\\')
            cli_usage_error("--realm: no quotes, backslashes or control characters");
    serve_o.realm = realm;
}

/* --random-route: "/" and SERVE_ROUTE_LEN letters and digits from the CSPRNG (36^6: about
 * 2 * 10^9 prefixes to guess). */
static void make_route(void)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    /* A binary upgrade (SIGUSR2, --shards) runs us again: the route it had is handed over in
     * the environment, so that the URL stays. */
    const char *env = getenv("VEGA_SERVE_ROUTE");
    if (env && strlen(env) == SERVE_ROUTE_LEN + 1 && env[0] == '/' &&
        strspn(env + 1, alphabet) == SERVE_ROUTE_LEN) {
        memcpy(serve_o.route, env, SERVE_ROUTE_LEN + 2);
        serve_o.route_len = SERVE_ROUTE_LEN + 1;
        return;
    }
    size_t k = 0;
    serve_o.route[k++] = '/';
    while (k < SERVE_ROUTE_LEN + 1) {
        uint8_t b[16];
        if (vega_crypto_random(b, sizeof b) < 0) {
            cli_err("--random-route", "no random bytes");
            exit(CLI_EXIT_USAGE);
        }
        for (size_t i = 0; i < sizeof b && k < SERVE_ROUTE_LEN + 1; i++)
            if (b[i] < 252) /* 7 * 36: no bias */
                serve_o.route[k++] = alphabet[b[i] % 36];
    }
    serve_o.route[k] = '\0';
    serve_o.route_len = k;
    setenv("VEGA_SERVE_ROUTE", serve_o.route, 1);
}

/* --cors: the fields of every answer (after the --header ones). */
static void add_cors_headers(void)
{
    static vega_http_field cors[] = {
        {{"Access-Control-Allow-Origin", 27}, {"*", 1}},
        {{"Access-Control-Expose-Headers", 29},
         {"Content-Range, Content-Encoding, ETag, Last-Modified, Accept-Ranges", 67}},
    };
    for (size_t i = 0; i < serve_o.nheaders; i++)
        if (strncasecmp(serve_o.headers[i].name.ptr, "access-control-", 15) == 0)
            cli_usage_error("--cors: the Access-Control fields are set by --cors, not -H");
    if (serve_o.nheaders + 2 > SERVE_MAX_HEADERS)
        cli_usage_error("--header: at most %d with --cors", SERVE_MAX_HEADERS - 2);
    serve_o.headers[serve_o.nheaders++] = cors[0];
    serve_o.headers[serve_o.nheaders++] = cors[1];
}

/* --metrics ADDR:PORT, where ":PORT" alone is loopback (the safe default). */
static void set_metrics(const char *spec)
{
    if (cli_split_listen(spec, serve_o.metrics_host, sizeof serve_o.metrics_host,
                         serve_o.metrics_port, sizeof serve_o.metrics_port) < 0)
        cli_usage_error("--metrics: expected ADDR:PORT, got '%s'", spec);
    serve_o.metrics = spec;
}

static void parse_args(int argc, char **argv)
{
    uint64_t v;
    int c;
    bool want_tls = false;
    const char *hash_user = NULL, *hash_scheme = "bcrypt";
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:b:l:H:a:vqh", long_opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_is_port(optarg))
                cli_usage_error("invalid port '%s'", optarg);
            serve_o.port = optarg;
            break;
        case 'b':
            if (!*optarg)
                cli_usage_error("-b: empty address");
            serve_o.bind_host = optarg;
            break;
        case 'l':
            add_listen(optarg);
            break;
        case 'H':
            add_header(optarg);
            break;
        case 'v':
            cli_verbose++;
            break;
        case 'q':
            serve_o.quiet = true;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(CLI_EXIT_OK);
        case OPT_VERSION:
            printf("vega-serve %s (libvega %s)\n", VEGA_VERSION_STRING, vega_version());
            exit(CLI_EXIT_OK);
        case OPT_TLS:
            want_tls = true;
            break;
        case OPT_CERT:
            serve_o.cert = optarg;
            want_tls = true;
            break;
        case OPT_KEY:
            serve_o.key = optarg;
            break;
        case OPT_NO_HTTP3:
            serve_o.http3 = false;
            break;
        case OPT_TLS_CIPHERS:
            serve_o.tls13_ciphers = optarg;
            break;
        case OPT_NO_HTTP2:
            serve_o.http2 = false;
            break;
        case OPT_WS_ECHO:
            if (optarg[0] != '/')
                cli_usage_error("--ws-echo: expected a path starting with '/', got '%s'", optarg);
            serve_o.ws_echo = optarg;
            break;
        case OPT_H2C:
            serve_o.h2c = true;
            break;
        case OPT_QUIC_RETRY:
            serve_o.quic_retry = true;
            break;
        case OPT_QLOG_DIR:
            serve_o.qlog_dir = optarg;
            break;
        case OPT_HTTP3_PORT:
            if (!cli_is_port(optarg))
                cli_usage_error("--http3-port: invalid port '%s'", optarg);
            serve_o.http3_port = optarg;
            break;
        case OPT_WORKERS:
            if (cli_parse_uint(optarg, 1, 1024, &v) < 0)
                cli_usage_error("--workers: expected 1..1024, got '%s'", optarg);
            serve_o.workers = (unsigned)v;
            break;
        case OPT_BLOCKING_THREADS:
            if (cli_parse_uint(optarg, 1, 1024, &v) < 0)
                cli_usage_error("--blocking-threads: expected 1..1024, got '%s'", optarg);
            serve_o.blocking_threads = (unsigned)v;
            break;
        case OPT_BLOCKING_QUEUE:
            if (cli_parse_uint(optarg, 1, 1000000, &v) < 0)
                cli_usage_error("--blocking-queue: expected 1..1000000, got '%s'", optarg);
            serve_o.blocking_queue = (unsigned)v;
            break;
        case OPT_SHARDS:
            if (cli_parse_uint(optarg, 0, 1024, &v) < 0)
                cli_usage_error("--shards: expected 0..1024, got '%s'", optarg);
            serve_o.shards = (unsigned)v;
            break;
        case OPT_SHARD_WATCHDOG:
            if (cli_parse_uint(optarg, 400, 3600000, &v) < 0)
                cli_usage_error("--shard-watchdog: expected 400..3600000 (ms), got '%s'", optarg);
            serve_o.shard_watchdog_ms = (unsigned)v;
            break;
        case OPT_DRIVER:
            serve_o.driver = cli_driver_arg(optarg);
            break;
        case OPT_NO_LISTING:
            serve_o.listing = false;
            break;
        case OPT_HIDDEN:
            serve_o.hidden = true;
            break;
        case OPT_NO_SYMLINKS:
            serve_o.symlinks = false;
            break;
        case OPT_COMPRESS:
            serve_o.compress = true;
            break;
        case OPT_NO_COMPRESS:
            serve_o.compress = false;
            break;
        case OPT_COMPRESS_MIN:
            if (cli_parse_size(optarg, &v) < 0)
                cli_usage_error("--compress-min: invalid size '%s'", optarg);
            serve_o.compress_min = v;
            break;
        case OPT_CACHE_SIZE:
            if (cli_parse_size(optarg, &v) < 0 || v > ((uint64_t)1 << 40))
                cli_usage_error("--cache-size: invalid size '%s' (at most 1T)", optarg);
            serve_o.cache_size = v;
            break;
        case OPT_CACHE_MAX_FILE:
            if (cli_parse_size(optarg, &v) < 0 || v > ((uint64_t)1 << 30))
                cli_usage_error("--cache-max-file: invalid size '%s' (at most 1G)", optarg);
            serve_o.cache_max_file = v;
            break;
        case OPT_NO_CACHE:
            serve_o.cache = false;
            break;
        case OPT_ACCESS_LOG:
            serve_o.access_log = optarg;
            break;
        case OPT_LOG_FORMAT:
            if (strcmp(optarg, "combined") == 0)
                serve_o.log_format = SERVE_LOG_COMBINED;
            else if (strcmp(optarg, "json") == 0)
                serve_o.log_format = SERVE_LOG_JSON;
            else
                cli_usage_error("--log-format: expected combined or json, got '%s'", optarg);
            break;
        case OPT_MAX_CONNS:
            if (cli_parse_uint(optarg, 1, 10000000, &v) < 0)
                cli_usage_error("--max-conns: expected 1..10000000, got '%s'", optarg);
            max_conns = (size_t)v;
            break;
        case OPT_KEEPALIVE_TIMEOUT:
            if (cli_parse_uint(optarg, 1, 86400, &v) < 0)
                cli_usage_error("--keepalive-timeout: expected 1..86400 seconds, got '%s'", optarg);
            keepalive_s = (unsigned)v;
            break;
        case OPT_METRICS:
            set_metrics(optarg);
            break;
        case OPT_METRICS_PUBLIC:
            serve_o.metrics_public = true;
            break;
        case OPT_METRICS_LOG:
            if (!*optarg)
                cli_usage_error("--metrics-log: expected a file name");
            serve_o.metrics_log = optarg;
            break;
        case OPT_METRICS_EVERY:
            if (cli_parse_uint(optarg, 10, 3600000, &v) < 0)
                cli_usage_error("--metrics-every: expected 10..3600000 (ms), got '%s'", optarg);
            serve_o.metrics_every_ms = (unsigned)v;
            break;
        case 'a':
            if (serve_auth_add(optarg) < 0)
                exit(CLI_EXIT_USAGE);
            break;
        case OPT_AUTH_FILE:
            if (serve_auth_load_file(optarg) < 0)
                exit(CLI_EXIT_USAGE);
            break;
        case OPT_REALM:
            set_realm(optarg);
            break;
        case OPT_INDEX:
            add_index(optarg);
            break;
        case OPT_SPA:
            serve_o.spa = true;
            break;
        case OPT_CORS:
            serve_o.cors = true;
            break;
        case OPT_NO_ETAG:
            serve_o.etag = false;
            break;
        case OPT_NO_LAST_MODIFIED:
            serve_o.last_modified = false;
            break;
        case OPT_RANDOM_ROUTE:
            make_route();
            break;
        case OPT_UPLOAD:
            serve_o.upload = true;
            break;
        case OPT_UPLOAD_MAX:
            if (cli_parse_size(optarg, &v) < 0 || v == 0)
                cli_usage_error("--upload-max: invalid size '%s'", optarg);
            serve_o.upload_max = v;
            break;
        case OPT_OVERWRITE:
            serve_o.overwrite = true;
            break;
        case OPT_MKDIR:
            serve_o.mkdir = true;
            break;
        case OPT_TAR:
            serve_o.tar = true;
            break;
        case OPT_TAR_GZ:
            serve_o.tar_gz = true;
            break;
        case OPT_ZIP:
            serve_o.zip = true;
            break;
        case OPT_AUTH_CACHE:
            if (cli_parse_uint(optarg, 0, 100000, &v) < 0)
                cli_usage_error("--auth-cache: expected 0..100000, got '%s'", optarg);
            serve_o.auth_cache = v;
            break;
        case OPT_HASH_PASSWORD:
            hash_user = optarg;
            break;
        case OPT_HASH_SCHEME:
            if (!cli_pw_scheme_known(optarg))
                cli_usage_error("--hash-scheme: expected " CLI_PW_SCHEMES ", got '%s'", optarg);
            hash_scheme = optarg;
            break;
        case ':':
            cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                cli_usage_error("unknown option '-%c'", optopt);
            cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (hash_user)
        exit(serve_hash_password(hash_user, hash_scheme));
    if (serve_auth_cache_init() < 0)
        exit(2);
    serve_o.tls = want_tls;
    if (!want_tls)
        serve_o.http3 = false; /* QUIC is TLS: nothing to serve it with */
    if (serve_o.key && !serve_o.cert)
        cli_usage_error("--key needs --cert");
    if (serve_o.metrics_public && !serve_o.metrics)
        cli_usage_error("--metrics-public needs --metrics");
    if (serve_o.metrics_every_ms && !serve_o.metrics_log)
        cli_usage_error("--metrics-every needs --metrics-log");
    if (serve_o.overwrite && !serve_o.upload)
        cli_usage_error("--overwrite needs --upload");
    if (serve_o.cors)
        add_cors_headers();
    if (serve_auth_users() && !serve_o.tls)
        fprintf(stderr, "vega-serve: warning: Basic auth over plain HTTP: passwords cross the "
                        "network in clear text (--tls encrypts them)\n");
    int n = argc - optind;
    char **a = argv + optind;
    if (n > 2)
        cli_usage_error("too many arguments (expected [DIR] [PORT])");
    if (n == 2) {
        if (!cli_is_port(a[1]))
            cli_usage_error("invalid port '%s'", a[1]);
        if (serve_o.port)
            cli_usage_error("the port is given twice (-p and '%s')", a[1]);
        serve_o.dir = a[0];
        serve_o.port = a[1];
    } else if (n == 1) {
        /* "vega-serve 9000": a port, unless a directory has that name. */
        struct stat st;
        if (cli_is_port(a[0]) && stat(a[0], &st) < 0 && !serve_o.port)
            serve_o.port = a[0];
        else
            serve_o.dir = a[0];
    }
    if (!serve_o.dir)
        serve_o.dir = ".";
}

static void open_log(void)
{
    serve_o.log_fd = -1;
    if (serve_o.access_log && strcmp(serve_o.access_log, "-") == 0) {
        serve_o.log_fd = STDOUT_FILENO;
    } else if (serve_o.access_log) {
        serve_o.log_fd =
            open(serve_o.access_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
        if (serve_o.log_fd < 0) {
            cli_err(serve_o.access_log, "cannot open the access log: %s", strerror(errno));
            exit(CLI_EXIT_USAGE);
        }
    } else if (cli_verbose) {
        serve_o.log_fd = STDERR_FILENO;
    }
}

/* The certificate and key, as PEM text (from the files, or made fresh), for TLS over TCP and for
 * QUIC's own TLS 1.3. */
static char *cert_pem, *key_pem;
static size_t cert_pem_len, key_pem_len;

static int read_pem(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_err(path, "%s", strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        if (cap >= (1u << 20)) {
            cli_err(path, "larger than 1 MiB: not a PEM certificate or key");
            free(b);
            b = NULL;
            break;
        }
        char *nb = realloc(b, cap * 2 + 1);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    bool err = ferror(f);
    fclose(f);
    if (!b || err) {
        if (b)
            cli_err(path, "cannot read it");
        free(b);
        return -1;
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

static int load_pem(void)
{
    if (!serve_o.cert) {
        int r = vega_tls_selfsigned(&cert_pem, &key_pem);
        if (r < 0) {
            cli_err("self-signed certificate", "%s", vega_strerror(r));
            return -1;
        }
        cert_pem_len = strlen(cert_pem);
        key_pem_len = strlen(key_pem);
        return 0;
    }
    if (read_pem(serve_o.cert, &cert_pem, &cert_pem_len) < 0)
        return -1;
    if (read_pem(serve_o.key ? serve_o.key : serve_o.cert, &key_pem, &key_pem_len) < 0)
        return -1;
    return 0;
}

/* SSLKEYLOGFILE (curl's and nginx's habit): the secrets of every connection appended to it. */
static int keylog_fd = -1;

/* A QUIC key log line, appended with its newline in one write (workers log at once). */
static void keylog_line(void *user, const char *line)
{
    (void)user;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    if (n > 0 && (size_t)n < sizeof buf && write(keylog_fd, buf, (size_t)n) < 0)
        cli_log(1, "SSLKEYLOGFILE: %s", strerror(errno));
    vega_crypto_cleanse(buf, sizeof buf);
}

/* Opens SSLKEYLOGFILE (created 0600: it holds secrets) and logs TCP's TLS there too. */
static void keylog_setup(vega_tls_config *cfg)
{
    const char *path = getenv("SSLKEYLOGFILE");
    if (!path || !*path || keylog_fd >= 0)
        return;
    keylog_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    int r = keylog_fd < 0 ? -errno : vega_tls_config_set_keylog_file(cfg, path);
    if (r < 0)
        cli_err(path, "SSLKEYLOGFILE: %s (ignored)", vega_strerror(r));
}

static int tls_config(vega_tls_config **out)
{
    vega_tls_config *cfg;
    int r = vega_tls_config_new(&cfg, VEGA_TLS_SERVER);
    const char *what = serve_o.cert ? serve_o.cert : "self-signed certificate";
    if (r == 0)
        r = load_pem() < 0 ? 1 : 0;
    if (r == 1) {
        vega_tls_config_free(cfg);
        return -1;
    }
    if (r == 0)
        r = vega_tls_config_set_cert_pem(cfg, cert_pem, cert_pem_len, key_pem, key_pem_len);
    if (r == 0 && serve_o.tls13_ciphers &&
        vega_tls_config_set_ciphers(cfg, NULL, serve_o.tls13_ciphers) < 0) {
        cli_err("--tls-ciphers", "'%s': not a list of TLS 1.3 suites OpenSSL knows",
                serve_o.tls13_ciphers);
        vega_tls_config_free(cfg);
        return -1;
    }
    if (r < 0) {
        if (r == VEGA_ERR_TLS_CONFIG)
            cli_err(what, "not a usable PEM certificate or key (or they do not match)");
        else
            cli_err(what, "%s", vega_tls_strerror(r));
        if (cfg)
            vega_tls_config_free(cfg);
        return -1;
    }
    keylog_setup(cfg);
    *out = cfg;
    return 0;
}

/* HTTP/3's credentials: the same certificate and key, as libvega's crypto objects. */
static vega_crypto_cert_chain *h3_chain;
static vega_crypto_key *h3_key;
static uint8_t h3_ticket_key[32];

static int h3_credentials(void)
{
    const char *what = serve_o.cert ? serve_o.cert : "self-signed certificate";
    int r = vega_crypto_cert_chain_new(&h3_chain);
    if (r == 0)
        r = vega_crypto_cert_chain_add(h3_chain, cert_pem, cert_pem_len);
    if (r == 0)
        r = vega_crypto_key_load_private(&h3_key, key_pem, key_pem_len);
    if (r == 0 && serve_shard) /* every shard, every generation: the same tickets */
        memcpy(h3_ticket_key, serve_shard_h3_keys, sizeof h3_ticket_key);
    else if (r == 0)
        r = vega_crypto_random(h3_ticket_key, sizeof h3_ticket_key);
    if (r < 0) {
        cli_err(what, "cannot use it for HTTP/3: %s (--no-http3 serves HTTPS alone)",
                vega_strerror(r));
        return -1;
    }
    return 0;
}

/* --tls-ciphers for QUIC: the TLS 1.3 suite names it knows, in order. Returns 0 or -1. */
static int quic_suites(const char *list, vega_http_server_h3_opts *o)
{
    cli_quic_bad_suite bad;
    if (cli_quic_suites(list, o->suites, &o->n_suites, &bad) < 0) {
        cli_err("--tls-ciphers",
                "'%.*s': QUIC offers TLS_AES_128_GCM_SHA256, "
                "TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256",
                bad.len, bad.name);
        return -1;
    }
    return 0;
}

/* Serves HTTP/3 on the first listener's address (or --http3-port); first NULL: in a shard, on
 * its socket of the supervisor's group. Returns 0 or an exit code; *port receives the UDP
 * port. */
static int listen_h3(vega_http_server *srv, const vega_addr *first, uint16_t *port)
{
    vega_addr a;
    memset(&a, 0, sizeof a);
    if (first)
        a = *first;
    if (first && serve_o.http3_port)
        vega_addr_set_port(&a, (uint16_t)atoi(serve_o.http3_port));
    vega_http_server_h3_opts o;
    vega_http_server_h3_opts_init(&o);
    o.chain = h3_chain;
    o.key = h3_key;
    o.ticket_key = h3_ticket_key;
    o.early_data = true;
    if (keylog_fd >= 0)
        o.keylog = keylog_line;
    if (serve_o.quic_retry)
        o.retry = VEGA_QUIC_RETRY_ALWAYS;
    o.qlog_dir = serve_o.qlog_dir;
    /* RFC 9220: --ws-echo over HTTP/3 too (extended CONNECT), advertised only with the route */
    o.websocket = serve_o.ws_echo != NULL;
    if (quic_suites(serve_o.tls13_ciphers, &o) < 0)
        return CLI_EXIT_USAGE;
    int slot = serve_shard_udp_slot();
    if (slot >= 0) { /* --shards: this shard's socket of the group, named by our IDs */
        o.fds = &serve_shard_udp_fds[slot];
        o.n_fds = 1;
        o.cid_prefix[0] = (uint8_t)slot;
        o.cid_prefix_len = 1;
        o.static_key = serve_shard_h3_keys + 32;
    }
    vega_addr bound;
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(&a, where, sizeof(where));
    int r = vega_http_server_listen_h3(srv, slot >= 0 ? NULL : &a, 0, &o, &bound);
    if (r < 0) {
        cli_err(NULL, "cannot serve HTTP/3 on udp %s: %s (--no-http3 serves HTTPS alone)", where,
                vega_strerror(r));
        return CLI_EXIT_NET;
    }
    vega_addr_format(&bound, where, sizeof(where));
    if (!serve_o.quiet && slot < 0)
        fprintf(stderr, "vega-serve: HTTP/3 on udp %s\n", where);
    *port = vega_addr_port(&bound);
    return 0;
}

struct stopper {
    vega_http_server *srv;
};

/* How often the stopper looks whether the server went idle. */
#define SERVE_IDLE_TICK_MS 1000

/* True once a whole tick passed with no request and no connection active, after some work:
 * the moment to give the allocator's free pages back (once per idle spell). */
static bool went_idle(vega_http_server *srv, vega_http_server_stats *last, bool *trimmed)
{
    vega_http_server_stats now;
    vega_http_server_get_stats(srv, &now);
    bool quiet = now.requests == last->requests && now.conns_accepted == last->conns_accepted &&
                 now.conns_open == now.conns_parked;
    if (!quiet)
        *trimmed = false;
    *last = now;
    if (!quiet || *trimmed)
        return false;
    *trimmed = true;
    return true;
}

static void *stop_main(void *arg)
{
    struct stopper *st = arg;
    vega_http_server_stats last;
    vega_http_server_get_stats(st->srv, &last);
    bool trimmed = true; /* nothing to give back before the first request */
    for (;;) {
        int signo = 0;
        int r = vega_signal_wait(&serve_o.stop_signals, &signo,
                                 vega_deadline_in_ms(SERVE_IDLE_TICK_MS));
        if (r == -ETIMEDOUT) {
            /* Connections' blocks, TLS buffers and HTTP/2 streams were freed into glibc's
             * per-thread arenas, which keep the pages of free chunks that are not at an
             * arena's top: an idle server hands them back (RSS returns near its start), 1 to 2 s
             * after its last work. */
            if (went_idle(st->srv, &last, &trimmed))
                (void)malloc_trim(0);
            continue;
        }
        if (r == 0) {
            cli_log(1, "SIG%s: stopping (in-flight requests get 5 s)",
                    sigabbrev_np(signo) ? sigabbrev_np(signo) : "?");
            vega_http_server_shutdown(st->srv, vega_deadline_in_ms(5000));
        }
        return NULL;
    }
}

/* "http://127.0.0.1:8080/" for a bound address (a wildcard shown as loopback). */
static void url_of(const vega_addr *a, char *out, size_t cap)
{
    char where[VEGA_ADDR_STRLEN];
    vega_addr_format(a, where, sizeof(where));
    const char *scheme = serve_o.tls ? "https" : "http";
    /* --random-route: the prefix is part of every URL (with its "/") */
    char rt[SERVE_ROUTE_LEN + 2] = "";
    if (serve_o.route_len)
        snprintf(rt, sizeof rt, "%.*s/", SERVE_ROUTE_LEN, serve_o.route + 1);
    if (strncmp(where, "0.0.0.0:", 8) == 0)
        snprintf(out, cap, "%s://127.0.0.1:%s/%s", scheme, where + 8, rt);
    else if (strncmp(where, "[::]:", 5) == 0)
        snprintf(out, cap, "%s://[::1]:%s/%s", scheme, where + 5, rt);
    else
        snprintf(out, cap, "%s://%s/%s", scheme, where, rt);
}

/* Listens on every configured address; prints the lines. Returns 0 or an exit code. */
static int listen_all(vega_http_server *srv)
{
    if (serve_shard) { /* the supervisor made the sockets and printed where */
        for (size_t i = 0; i < serve_shard_nfds; i++) {
            int r = vega_http_server_listen_fd(srv, serve_shard_fds[i], VEGA_LISTEN_SHARED, NULL);
            if (r < 0) {
                cli_err(NULL, "shard %u: inherited listener: %s", vega_shard_index(serve_shard),
                        vega_strerror(r));
                return CLI_EXIT_NET;
            }
        }
        uint16_t h3_port;
        if (serve_o.http3 && serve_shard_nudp)
            return listen_h3(srv, NULL, &h3_port); /* the supervisor printed where */
        return 0;
    }
    struct serve_listen def;
    if (serve_o.nlisten == 0 || serve_o.bind_host || serve_o.port) {
        memset(&def, 0, sizeof(def));
        snprintf(def.host, sizeof(def.host), "%s",
                 serve_o.bind_host ? serve_o.bind_host : "127.0.0.1");
        snprintf(def.port, sizeof(def.port), "%s", serve_o.port ? serve_o.port : "8080");
        if (serve_o.nlisten < SERVE_MAX_LISTEN)
            serve_o.listen[serve_o.nlisten++] = def;
    }
    char urls[SERVE_MAX_LISTEN * 4][VEGA_ADDR_STRLEN + 32];
    size_t nurls = 0;
    vega_addr first;
    bool have_first = false;
    uint16_t h3_port = 0;
    for (size_t i = 0; i < serve_o.nlisten; i++) {
        struct serve_listen *l = &serve_o.listen[i];
        char what[300];
        if (strchr(l->host, ':'))
            snprintf(what, sizeof(what), "[%s]:%s", l->host, l->port);
        else
            snprintf(what, sizeof(what), "%s:%s", l->host, l->port);
        vega_addr addrs[4];
        int n = vega_addr_resolve(addrs, 4, l->host, l->port, AF_UNSPEC, VEGA_DEADLINE_NEVER);
        if (n < 0) {
            cli_err(what, "cannot resolve: %s", vega_strerror(n));
            return CLI_EXIT_NET;
        }
        for (int k = 0; k < n; k++) {
            vega_addr bound;
            char where[VEGA_ADDR_STRLEN];
            vega_addr_format(&addrs[k], where, sizeof(where));
            int r = vega_http_server_listen(srv, &addrs[k], 0, &bound);
            if (r < 0) {
                cli_err(NULL, "cannot listen on %s: %s", where, vega_strerror(r));
                return CLI_EXIT_NET;
            }
            vega_addr_format(&bound, where, sizeof(where));
            if (!have_first) {
                first = bound;
                have_first = true;
            }
            if (!serve_o.quiet)
                fprintf(stderr, "vega-serve: listening on %s\n", where);
            if (nurls < sizeof(urls) / sizeof(urls[0]))
                url_of(&bound, urls[nurls++], sizeof(urls[0]));
        }
    }
    if (serve_o.http3 && have_first) {
        int r = listen_h3(srv, &first, &h3_port);
        if (r != 0)
            return r;
    }
    if (!serve_o.quiet) {
        vega_rt *rt = vega_rt_current();
        unsigned w = vega_rt_workers(rt);
        char h3[48] = "";
        if (h3_port)
            snprintf(h3, sizeof(h3), "HTTP/3 on udp %u, ", h3_port);
        char line[4096];
        size_t len =
            (size_t)snprintf(line, sizeof(line), "vega-serve: serving %s on", serve_o.root);
        for (size_t i = 0; i < nurls && len < sizeof(line); i++)
            len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", urls[i]);
        if (len < sizeof(line))
            snprintf(line + len, sizeof(line) - len, " (%s%s%sdriver %s, %u worker%s)\n",
                     serve_o.tls ? "TLS" : "",
                     serve_o.tls && !serve_o.cert ? " self-signed, "
                     : serve_o.tls                ? ", "
                                                  : "",
                     h3, vega_rt_driver_name(rt), w, w == 1 ? "" : "s");
        fputs(line, stderr);
        fflush(stderr);
    }
    return 0;
}

static void *main_task(void *arg)
{
    int *code = arg;
    *code = CLI_EXIT_USAGE;
    vega_tls_config *tls = NULL;
    if (serve_o.tls && tls_config(&tls) < 0)
        return NULL;
    if (serve_o.http3 && h3_credentials() < 0) {
        vega_tls_config_free(tls);
        return NULL;
    }
    *code = CLI_EXIT_NET;
    if (serve_o.cache && serve_o.cache_size == 0)
        serve_o.cache = false;
    serve_cache_start();
    serve_log_start();
    vega_http_server_opts so;
    serve_server_opts(&so);
    so.tls = tls;
    if (max_conns)
        so.max_conns = max_conns;
    if (keepalive_s)
        so.idle_timeout_ns = (uint64_t)keepalive_s * VEGA_NS_PER_S;
    vega_http_server *srv;
    int r = vega_http_server_new(&srv, &so);
    vega_tls_config_free(tls); /* the server retains it */
    if (r < 0) {
        cli_err_code("server", r);
        serve_cache_stop();
        serve_log_stop();
        return NULL;
    }
    vega_http_server_h2_opts h2o;
    vega_http_server_h2_opts_init(&h2o);
    /* one kind of listener: --no-http2 is about TLS, --h2c about cleartext */
    h2o.disable = serve_o.tls ? !serve_o.http2 : !serve_o.h2c;
    h2o.h2c = serve_o.h2c;
    /* RFC 8441: an HTTP/2 client may open --ws-echo on its connection (extended CONNECT);
     * advertised only when there is a WebSocket route to answer it */
    h2o.websocket = serve_o.ws_echo != NULL;
    r = vega_http_server_set_h2(srv, &h2o);
    if (r < 0) {
        cli_err_code("server", r);
        vega_http_server_free(srv);
        serve_cache_stop();
        serve_log_stop();
        return NULL;
    }
    /* the metrics address first: a refused one stops us before anything listens */
    struct serve_metrics metrics;
    r = serve_metrics_start(srv, &metrics);
    if (r == 0 && (r = listen_all(srv)) != 0)
        serve_metrics_stop(&metrics);
    if (r != 0) {
        *code = r;
        vega_http_server_free(srv);
        serve_cache_stop();
        serve_log_stop();
        return NULL;
    }
    struct stopper st = {srv};
    vega_task *stopper;
    r = vega_task_spawn(&stopper, stop_main, &st);
    if (r < 0) {
        cli_err_code("spawn", r);
        serve_metrics_stop(&metrics);
        vega_http_server_free(srv);
        serve_cache_stop();
        serve_log_stop();
        return NULL;
    }
    if (serve_shard) {
        unsigned wd = serve_o.shard_watchdog_ms;
        r = vega_shard_heartbeat_start(serve_shard, wd && wd < 4000 ? wd / 4 : 1000);
        if (r < 0)
            cli_err_code("heartbeat", r);
        vega_shard_ready(serve_shard);
    }
    r = vega_http_server_run(srv);
    vega_task_cancel(stopper);
    vega_task_join(stopper, NULL, VEGA_DEADLINE_NEVER);
    serve_metrics_stop(&metrics); /* it reads srv: stopped before srv is freed */
    if (r < 0)
        cli_err_code("server", r);
    else
        cli_log(1, "stopped");
    vega_http_server_free(srv);
    serve_cache_stop();
    serve_log_stop(); /* every exchange has ended: every line is in the buffer */
    *code = r < 0 ? CLI_EXIT_NET : CLI_EXIT_OK;
    return NULL;
}

/* What main_task made for TLS and HTTP/3 (after the runtime is gone). */
static void free_credentials(void)
{
    vega_crypto_cert_chain_free(h3_chain);
    vega_crypto_key_free(h3_key);
    vega_crypto_cleanse(h3_ticket_key, sizeof h3_ticket_key);
    if (key_pem)
        vega_crypto_cleanse(key_pem, key_pem_len);
    free(cert_pem);
    free(key_pem);
}

int main(int argc, char **argv)
{
    cli_set_prog("vega-serve");
    serve_defaults();
    /* --shards: SIGUSR2 runs the program again with the arguments it was given (getopt may
     * reorder argv) */
    static char *argv0[256];
    for (int i = 0; i < argc && i + 1 < (int)(sizeof argv0 / sizeof argv0[0]); i++)
        argv0[i] = argv[i];
    serve_argv = argc < 255 ? argv0 : NULL;
    parse_args(argc, argv);
    if (serve_open_root() < 0)
        exit(CLI_EXIT_USAGE);
    open_log();
    /* printed even with -q: without it the files cannot be reached */
    if (serve_o.route_len)
        fprintf(stderr, "vega-serve: random route %s/ (everything else is 404)\n", serve_o.route);

    if (cli_block_signals(&serve_o.stop_signals, 0) != CLI_EXIT_OK)
        return CLI_EXIT_NET;
    if (serve_o.shards)
        return serve_shards_run();
    return serve_run();
}

int serve_run(void)
{
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = serve_o.workers;
    ro.driver = serve_o.driver;
    ro.blocking_threads = serve_o.blocking_threads; /* 0: the runtime's default */
    ro.blocking_queue = serve_o.blocking_queue;
    int code = CLI_EXIT_NET;
    if (cli_rt_run(&ro, main_task, &code) != CLI_EXIT_OK)
        code = CLI_EXIT_NET;
    free_credentials();
    if (serve_o.log_fd > STDERR_FILENO)
        close(serve_o.log_fd);
    close(serve_o.root_fd);
    return code;
}
