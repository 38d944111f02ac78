/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the whole HTTP/1.1 server (lib/http_server) with vega-serve's real
 * handler (cli/vega-serve: cache, files, ranges and multipart/byteranges, conditional requests,
 * compression, listings, the access log) on a fixed tree, over in-memory connections.
 *
 * Input: byte 0 and byte 1 are option bits (see struct opts), byte 2 seeds the split points
 * (and pads the user header, when there is one, so that answers shift in the output buffer),
 * the rest is request bytes: one segment per connection, split at the first NULs (a byte no
 * request may hold). Each connection's bytes are written in pieces, with pauses when asked,
 * then half-closed. A reader per connection parses everything the server sends with
 * vega_http1_parser (RESPONSE, told which requests were HEAD by a wrapper around the handler)
 * and aborts on any violation (RFC 9112 §6, RFC 9110 §14/§15, RFC 2046 §5.1.1):
 *  - every response parses; nothing follows a response that said Connection: close;
 *  - the body a response announced is the body sent: complete unless the exchange failed, the
 *    same status and body byte count as the server's own access log entry;
 *  - a file's 200 body is its content (or decompresses to it), a 206 body is the bytes of its
 *    Content-Range, a multipart/byteranges body is delimited by its boundary, every part with a
 *    Content-Range that matches its length and content, and ends with the closing delimiter;
 *  - a 416 says "bytes * /length"; a redirect stays on this host;
 *  - the server answers or closes within bounded (virtual) time; no memory error, no leak.
 * The runtime runs on the paused clock (current thread), so timeouts cost no wall time.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vega/compress.h>
#include <vega/http1.h>
#include <vega/http_server.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "fuzz_target.h"
#include "serve.h"

#define MAX_CONNS  4
#define MAX_INPUT  (64 * 1024)
#define MAX_EX     4096          /* exchanges per connection: more than 64 KiB can hold */
#define BODY_CAP   (2u << 20)    /* body bytes kept per response for the content checks */
#define READ_CAP   (8u << 20)    /* then the reader stops reading (SHUT_RD) */
#define SILENCE_MS 120000        /* the server answers or closes within this (virtual) */
#define INPUT_MS   (3600 * 1000) /* a whole input ends within this (virtual) */
#define MTIME      1700000000    /* every file's mtime: Last-Modified is known */

_Noreturn static void fail(const char *why, int conn, size_t resp)
{
    fprintf(stderr, "http_server_fuzz: connection %d, response %zu: %s\n", conn, resp, why);
    abort();
}

/* ---- file contents -------------------------------------------------------------------------- */

/* Every served file holds pat(0..size): a byte that depends on its offset (so a range from
 * the wrong place shows), printable (text types compress), and never '-' (a boundary cannot
 * appear in a part). */
static uint8_t pat(uint64_t i)
{
    static const char a[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n._";
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull; /* splitmix64's finaliser: no short period */
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return (uint8_t)a[(h ^ (h >> 31)) & 63];
}

static bool is_pat(const uint8_t *b, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(off + i))
            return false;
    return true;
}

/* The precompressed siblings of /pre.txt: their bytes are what a range of them must give. */
#define PRE_SIZE 5000
static struct {
    vega_compress_kind kind;
    const char *suffix;
    uint8_t *data;
    size_t len;
} sib[] = {{VEGA_COMPRESS_GZIP, ".gz", NULL, 0},
           {VEGA_COMPRESS_BROTLI, ".br", NULL, 0},
           {VEGA_COMPRESS_ZSTD, ".zst", NULL, 0}};

/* ---- the tree ------------------------------------------------------------------------------- */

static char root[64];

static void put_file(const char *rel, const void *data, size_t len)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

static void put_pat(const char *rel, size_t len)
{
    uint8_t *b = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++)
        b[i] = pat(i);
    put_file(rel, b, len);
    free(b);
}

/* A fixed mtime (so If-Modified-Since can match) and atime now (so a read never updates it,
 * which inotify would report and the cache would act on). */
static int set_times(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)type, (void)f;
    struct timespec ts[2] = {{.tv_nsec = UTIME_NOW}, {.tv_sec = MTIME}};
    utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)type, (void)f;
    return remove(p);
}

static void remove_tree(void)
{
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Small and tiny text (cached; above and below compress_min), a file above SERVE_SMALL_FILE
 * but cacheable, files above the cache limit (binary: sendfile; text: compressed as a stream),
 * an empty one, precompressed siblings, directories with and without index.html, dotfiles,
 * odd names, a FIFO and symlinks that stay inside or leave. */
static void make_tree(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/vega-serve-fuzz-XXXXXX",
             tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(root))
        abort();
    atexit(remove_tree);
    char p[256];
    static const char *const dirs[] = {"dir", "dir/sub", "site", "dir/sub/deeper"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        if (mkdir(p, 0755) < 0)
            abort();
    }
    static const struct {
        const char *name;
        size_t len;
    } files[] = {{"tiny.txt", 100},     {"small.txt", 3000},       {"mid.bin", 20000},
                 {"big.bin", 100000},   {"big.txt", 270000},       {"empty.txt", 0},
                 {"pre.txt", PRE_SIZE}, {"style.css", 1500},       {"dir/a.txt", 50},
                 {"dir/b.html", 2000},  {"dir/.hidden", 10},       {"dir/sp ace&<x>.txt", 10},
                 {".secret", 10},       {"site/index.html", 1500}, {"dir/sub/deeper/c.json", 700}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        put_pat(files[i].name, files[i].len);
    uint8_t plain[PRE_SIZE];
    for (size_t i = 0; i < PRE_SIZE; i++)
        plain[i] = pat(i);
    for (size_t i = 0; i < sizeof sib / sizeof sib[0]; i++) {
        if (vega_compress_buffer(sib[i].kind, VEGA_COMPRESS_LEVEL_DEFAULT, plain, PRE_SIZE, 0,
                                 &sib[i].data, &sib[i].len) < 0)
            abort();
        snprintf(p, sizeof p, "pre.txt%s", sib[i].suffix);
        put_file(p, sib[i].data, sib[i].len);
    }
    snprintf(p, sizeof p, "%s/fifo", root);
    mkfifo(p, 0644);
    static const char *const links[][2] = {{"small.txt", "link.txt"},
                                           {"../big.bin", "dir/up.bin"},
                                           {"/etc", "escape"},
                                           {"..", "dir/sub/parent"},
                                           {"missing", "dangling"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", root, links[i][1]);
        if (symlink(links[i][0], p) < 0)
            abort();
    }
    char target[128];
    snprintf(target, sizeof target, "%s/tiny.txt", root); /* absolute, inside: openat2 EXDEV */
    snprintf(p, sizeof p, "%s/abs.txt", root);
    if (symlink(target, p) < 0)
        abort();
    nftw(root, set_times, 16, FTW_PHYS);
}

/* ---- options -------------------------------------------------------------------------------- */

struct opts {
    bool no_cache, no_compress, no_listing, hidden, no_symlinks, user_header, small_duplex, json;
    unsigned nconns;
    bool one_pipelined, small_limits, pauses, small_reads, small_cache_file, reqs_per_conn;
    uint64_t seed;
    unsigned pad; /* bytes added to the user header's value */
};

static struct opts parse_opts(const uint8_t *d)
{
    struct opts o = {
        .no_cache = d[0] & 1,
        .no_compress = d[0] & 2,
        .no_listing = d[0] & 4,
        .hidden = d[0] & 8,
        .no_symlinks = d[0] & 16,
        .user_header = d[0] & 32,
        .small_duplex = d[0] & 64,
        .json = d[0] & 128,
        .nconns = 1 + (d[1] & 3),
        .one_pipelined = d[1] & 4,
        .small_limits = d[1] & 8,
        .pauses = d[1] & 16,
        .small_reads = d[1] & 32,
        .small_cache_file = d[1] & 64,
        .reqs_per_conn = d[1] & 128,
        .seed = (uint64_t)d[2] * 0x9E3779B97F4A7C15ull + 1,
        .pad = d[2] & 127,
    };
    return o;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* ---- one connection ------------------------------------------------------------------------- */

/* The response being parsed: what the checks need of its head, and its body. */
struct cur {
    int status;
    bool head;        /* it answers a HEAD request */
    bool date, close; /* Date seen; Connection: close */
    char ctype[128], crange[96], cenc[32], etag[96], location[64], clen[24];
    vega_http1_framing framing;
    uint64_t body; /* body bytes received */
    size_t kept;   /* of which in the body buffer */
};

/* One final response as the client saw it. */
struct seen {
    int status;
    bool complete;
    bool close;
    uint64_t body;
};

struct logent {
    int status, error;
    uint64_t body;
};

struct fconn {
    int idx;
    struct opts *o;
    vega_stream *cli, *srv_end;
    const uint8_t *req;
    size_t req_len;
    uint64_t seed;
    /* what the server did, in exchange order (the handler and log wrappers) */
    bool heads[MAX_EX];
    size_t nheads;
    struct logent logs[MAX_EX];
    size_t nlogs;
    /* what the client saw */
    vega_http1_parser p;
    struct cur c;
    bool in_interim, in_msg, closed;
    struct seen seen[MAX_EX + 1];
    size_t nseen;
    uint64_t got;
    bool capped;
    uint8_t *bodybuf;
    uint8_t rbuf[16384];
};

static struct fconn conns[MAX_CONNS];
static vega_http_server *fz_srv;

_Noreturn static void cfail(const struct fconn *fc, const char *why)
{
    fail(why, fc->idx, fc->nseen);
}

static void copy_field(char *dst, size_t cap, vega_http1_span v)
{
    size_t n = v.len < cap - 1 ? v.len : cap - 1;
    memcpy(dst, v.ptr, n);
    dst[n] = '\0';
}

static int on_status(void *ud, int version, int status, vega_http1_span reason)
{
    struct fconn *fc = ud;
    (void)version, (void)reason;
    if (fc->closed)
        cfail(fc, "bytes after a response with Connection: close");
    if (status < 100 || status == 101 || status > 599)
        cfail(fc, "a status the server never sends");
    memset(&fc->c, 0, sizeof fc->c);
    fc->c.status = status;
    fc->in_msg = true;
    fc->in_interim = status < 200;
    if (fc->in_interim) {
        if (status != 100)
            cfail(fc, "an interim response other than 100");
        return 0;
    }
    /* Responses come in request order; one that no handler call made is the server's own
     * error answer, never to a HEAD it accepted. */
    fc->c.head = fc->nseen < fc->nheads && fc->heads[fc->nseen];
    vega_http1_parser_set_head(&fc->p, fc->c.head);
    return 0;
}

static int on_header(void *ud, vega_http1_span n, vega_http1_span v)
{
    struct fconn *fc = ud;
    struct cur *c = &fc->c;
    if (fc->in_interim)
        return 0;
#define IS(s) (n.len == sizeof(s) - 1 && strncasecmp(n.ptr, s, n.len) == 0)
    if (IS("content-type"))
        copy_field(c->ctype, sizeof c->ctype, v);
    else if (IS("content-range"))
        copy_field(c->crange, sizeof c->crange, v);
    else if (IS("content-encoding"))
        copy_field(c->cenc, sizeof c->cenc, v);
    else if (IS("etag"))
        copy_field(c->etag, sizeof c->etag, v);
    else if (IS("location"))
        copy_field(c->location, sizeof c->location, v);
    else if (IS("content-length"))
        copy_field(c->clen, sizeof c->clen, v);
    else if (IS("date"))
        c->date = true;
    else if (IS("connection") && v.len == 5 && strncasecmp(v.ptr, "close", 5) == 0)
        c->close = true;
#undef IS
    return 0;
}

static int on_headers_complete(void *ud, const vega_http1_head *h)
{
    struct fconn *fc = ud;
    struct cur *c = &fc->c;
    if (fc->in_interim)
        return 0;
    c->framing = h->framing;
    if (!c->date)
        cfail(fc, "no Date");
    if (h->framing == VEGA_HTTP1_BODY_CLOSE && !c->close)
        cfail(fc, "a body delimited by the close without Connection: close");
    return 0;
}

static int on_body(void *ud, vega_http1_span d)
{
    struct fconn *fc = ud;
    struct cur *c = &fc->c;
    if (fc->in_interim)
        cfail(fc, "a body in an interim response");
    size_t room = BODY_CAP - c->kept;
    size_t k = d.len < room ? d.len : room;
    memcpy(fc->bodybuf + c->kept, d.ptr, k);
    c->kept += k;
    c->body += d.len;
    return 0;
}

/* ---- content checks ------------------------------------------------------------------------- */

/* The bytes of [off, off+n) of a representation of total length `total` with content coding
 * cenc ("" = identity): the pattern, or the precompressed sibling of that coding. */
static bool content_ok(const char *cenc, uint64_t total, uint64_t off, const uint8_t *b, size_t n)
{
    if (!cenc[0])
        return is_pat(b, n, off);
    vega_compress_kind k;
    if (vega_compress_kind_parse(cenc, strlen(cenc), &k) < 0)
        return false;
    for (size_t i = 0; i < sizeof sib / sizeof sib[0]; i++)
        if (sib[i].kind == k)
            return total == sib[i].len && off + n <= total && memcmp(sib[i].data + off, b, n) == 0;
    return false;
}

/* "bytes FIRST-LAST/LENGTH" with FIRST <= LAST < LENGTH. */
static bool parse_crange(const char *s, uint64_t *first, uint64_t *last, uint64_t *len)
{
    char tail;
    if (sscanf(s, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64 "%c", first, last, len, &tail) != 3)
        return false;
    return *first <= *last && *last < *len;
}

/* The size in vega-serve's ETag, "INODE-SIZE-MTIME[-CODING]" in hex. */
static bool etag_size(const char *etag, uint64_t *size)
{
    const char *dash = strchr(etag, '-');
    return dash && sscanf(dash + 1, "%" SCNx64, size) == 1;
}

static const char *find(const uint8_t *b, size_t n, size_t from, const char *s)
{
    size_t sl = strlen(s);
    for (size_t i = from; i + sl <= n; i++)
        if (memcmp(b + i, s, sl) == 0)
            return (const char *)b + i;
    return NULL;
}

static bool eat(const uint8_t *b, size_t n, size_t *at, const char *s, size_t sl)
{
    if (n - *at < sl || memcmp(b + *at, s, sl) != 0)
        return false;
    *at += sl;
    return true;
}

/* One part of a multipart/byteranges body at *at (after its delimiter line): its head with a
 * Content-Range, then exactly that many bytes of the representation. */
static void check_part(const struct fconn *fc, const uint8_t *b, size_t n, size_t *at)
{
    const char *end = find(b, n, *at, "\r\n\r\n");
    if (!end)
        cfail(fc, "a part head without its blank line");
    size_t hl = (size_t)(end - (const char *)b) - *at;
    char head[512];
    if (hl >= sizeof head)
        cfail(fc, "a part head too long");
    memcpy(head, b + *at, hl);
    head[hl] = '\0';
    const char *cr = strcasestr(head, "Content-Range: ");
    uint64_t first, last, total;
    char val[96];
    if (!cr || sscanf(cr + 15, "%95[^\r]", val) != 1 || !parse_crange(val, &first, &last, &total))
        cfail(fc, "a part without a valid Content-Range");
    if (!strcasestr(head, "Content-Type: "))
        cfail(fc, "a part without Content-Type");
    *at += hl + 4;
    uint64_t len = last - first + 1;
    if (n - *at < len)
        cfail(fc, "a part shorter than its Content-Range");
    if (!content_ok(fc->c.cenc, total, first, b + *at, (size_t)len))
        cfail(fc, "a part's bytes are not those of its Content-Range");
    *at += (size_t)len;
}

/* RFC 2046 §5.1.1 as RFC 9110 §14.6 uses it: "--B" CRLF part, then CRLF "--B" CRLF part ...,
 * and CRLF "--B--" CRLF as the very end. */
static void check_multipart(const struct fconn *fc)
{
    const struct cur *c = &fc->c;
    const char *bp = strstr(c->ctype, "boundary=");
    if (!bp || c->kept != c->body)
        cfail(fc, "multipart without a boundary (or too large to check)");
    char delim[96];
    int dl = snprintf(delim, sizeof delim, "--%s", bp + 9);
    const uint8_t *b = fc->bodybuf;
    size_t n = c->kept, at = 0;
    unsigned parts = 0;
    for (;;) {
        if (parts && !eat(b, n, &at, "\r\n", 2))
            cfail(fc, "a part not followed by CRLF and a delimiter");
        if (!eat(b, n, &at, delim, (size_t)dl))
            cfail(fc, "the boundary does not delimit the part");
        if (parts && eat(b, n, &at, "--\r\n", 4)) {
            if (at != n)
                cfail(fc, "bytes after the closing delimiter");
            return;
        }
        if (!eat(b, n, &at, "\r\n", 2))
            cfail(fc, "a delimiter line not ended by CRLF");
        check_part(fc, b, n, &at);
        parts++;
    }
}

static void check_206(const struct fconn *fc)
{
    const struct cur *c = &fc->c;
    if (strncasecmp(c->ctype, "multipart/byteranges", 20) == 0) {
        if (!c->head)
            check_multipart(fc);
        return;
    }
    uint64_t first, last, total;
    if (!parse_crange(c->crange, &first, &last, &total))
        cfail(fc, "206 without a valid Content-Range");
    if (c->head)
        return;
    if (c->body != last - first + 1)
        cfail(fc, "206 body length differs from its Content-Range");
    if (c->kept == c->body && !content_ok(c->cenc, total, first, fc->bodybuf, c->kept))
        cfail(fc, "206 body is not the bytes of its Content-Range");
}

/* A file's 200: the file itself, a precompressed sibling, or the file compressed on the fly. */
static void check_200_file(const struct fconn *fc)
{
    const struct cur *c = &fc->c;
    uint64_t size;
    if (!etag_size(c->etag, &size))
        cfail(fc, "an ETag that is not vega-serve's");
    if (!c->cenc[0]) {
        if (c->head && c->clen[0] && strtoull(c->clen, NULL, 10) != size)
            cfail(fc, "HEAD Content-Length is not the file's size");
        if (!c->head &&
            (c->body != size || (c->kept == c->body && !is_pat(fc->bodybuf, c->kept, 0))))
            cfail(fc, "200 body is not the file");
        return;
    }
    if (c->head || c->kept != c->body || content_ok(c->cenc, c->body, 0, fc->bodybuf, c->kept))
        return;
    vega_compress_kind k;
    uint8_t *out = NULL;
    size_t out_len = 0;
    if (vega_compress_kind_parse(c->cenc, strlen(c->cenc), &k) < 0 ||
        vega_decompress_buffer(k, fc->bodybuf, c->kept, 4u << 20, &out, &out_len) < 0)
        cfail(fc, "a compressed body that does not decompress");
    bool ok = out_len == size && is_pat(out, out_len, 0);
    free(out);
    if (!ok)
        cfail(fc, "a compressed body that is not the file");
}

static void check_final(const struct fconn *fc)
{
    const struct cur *c = &fc->c;
    if (c->framing == VEGA_HTTP1_BODY_LENGTH && c->body != strtoull(c->clen, NULL, 10))
        cfail(fc, "body length differs from Content-Length");
    if (c->status == 206)
        check_206(fc);
    else if (c->status == 200 && c->etag[0])
        check_200_file(fc);
    else if (c->status == 416 && strncmp(c->crange, "bytes */", 8) != 0)
        cfail(fc, "416 without Content-Range: bytes */length");
    else if (c->status == 301 &&
             (c->location[0] != '/' || c->location[1] == '/' || c->location[1] == '\\'))
        cfail(fc, "a redirect that may leave this host");
}

static int on_message_complete(void *ud)
{
    struct fconn *fc = ud;
    fc->in_msg = false;
    if (fc->in_interim) {
        fc->in_interim = false;
        return 0;
    }
    check_final(fc);
    if (fc->nseen >= MAX_EX)
        cfail(fc, "more responses than requests can be");
    fc->seen[fc->nseen++] = (struct seen){fc->c.status, true, fc->c.close, fc->c.body};
    fc->closed = fc->c.close;
    return 0;
}

static const vega_http1_callbacks resp_cb = {
    .on_status = on_status,
    .on_header = on_header,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- the tasks of a connection -------------------------------------------------------------- */

static void *writer_main(void *arg)
{
    struct fconn *fc = arg;
    uint64_t s = fc->seed;
    size_t at = 0;
    unsigned pauses = 0;
    while (at < fc->req_len) {
        uint64_t r = rnd(&s);
        size_t k = r & 1 ? fc->req_len - at : 1 + (size_t)(r >> 8) % (r & 2 ? 8 : 512);
        k = k < fc->req_len - at ? k : fc->req_len - at;
        if (vega_stream_write(fc->cli, fc->req + at, k, NULL, vega_deadline_in_ms(SILENCE_MS)) < 0)
            break;
        at += k;
        /* Stalls around the server's timeouts (1 s): a slow client, a request cut by them. */
        if (fc->o->pauses && (r >> 40) % 4 == 0 && pauses++ < 8)
            vega_sleep_ms((r >> 44) % 3 == 0 ? 1500 : 300);
        else if ((r >> 50) & 1)
            vega_yield();
    }
    vega_stream_shutdown(fc->cli, SHUT_WR, vega_deadline_in_ms(SILENCE_MS));
    return NULL;
}

static void feed(struct fconn *fc, const uint8_t *b, size_t n)
{
    size_t used = 0;
    int rc = vega_http1_parser_read(&fc->p, b, n, &used);
    if (rc < 0) {
        fprintf(stderr, "parse: %s\n", vega_http1_error_name(vega_http1_parser_get_error(&fc->p)));
        cfail(fc, "a response that does not parse");
    }
}

/* The end of the connection: a response cut short is kept, to be judged against the log. */
static void reader_end(struct fconn *fc)
{
    if (vega_http1_parser_finish(&fc->p) == 0 && !fc->in_msg)
        return;
    if (fc->in_msg && fc->in_interim)
        cfail(fc, "an interim response cut short");
    fc->seen[fc->nseen++] = (struct seen){fc->in_msg ? fc->c.status : 0, false, false, fc->c.body};
}

static void *reader_main(void *arg)
{
    struct fconn *fc = arg;
    uint64_t s = fc->seed ^ 0x5555;
    for (;;) {
        size_t want = fc->o->small_reads ? 1 + (size_t)(rnd(&s) % 700) : sizeof fc->rbuf;
        vega_ssize n = vega_stream_read(fc->cli, fc->rbuf, want, vega_deadline_in_ms(SILENCE_MS));
        if (n == -ETIMEDOUT)
            cfail(fc, "the server neither answered nor closed");
        if (n < 0)
            cfail(fc, "a read error on the client's end");
        if (n == 0)
            break;
        fc->got += (uint64_t)n;
        feed(fc, fc->rbuf, (size_t)n);
        if (fc->got > READ_CAP) {
            /* Enough checked: a client that goes away (the server's writes now fail). */
            fc->capped = true;
            vega_stream_shutdown(fc->cli, SHUT_RD, 0);
            return NULL;
        }
        if (fc->o->small_reads && (rnd(&s) & 3) == 0)
            vega_yield();
    }
    reader_end(fc);
    return NULL;
}

static void *server_main(void *arg)
{
    struct fconn *fc = arg;
    vega_addr peer;
    char a[32];
    snprintf(a, sizeof a, "127.0.0.1:%d", 1000 + fc->idx);
    vega_addr_parse(&peer, a, NULL);
    vega_http_server_serve(fz_srv, fc->srv_end, &peer, NULL);
    return NULL;
}

/* ---- the server side: vega-serve's handler and log, watched -------------------------------- */

static struct fconn *conn_of(const vega_http_request *req)
{
    int i = (int)vega_addr_port(req->peer) - 1000;
    if (i < 0 || i >= MAX_CONNS)
        abort();
    return &conns[i];
}

static int fz_handle(vega_http_exchange *x, void *user)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    struct fconn *fc = conn_of(req);
    if (fc->nheads == MAX_EX)
        cfail(fc, "more exchanges than requests can be");
    fc->heads[fc->nheads++] = req->method == VEGA_HTTP_METHOD_HEAD;
    return serve_handle(x, user);
}

static void fz_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    struct fconn *fc = conn_of(req);
    if (fc->nlogs == MAX_EX)
        cfail(fc, "more log entries than exchanges can be");
    fc->logs[fc->nlogs++] = (struct logent){e->status, e->error, e->body_bytes};
    serve_on_log(user, req, e);
}

/* With HTTP_SERVER_FUZZ_TRACE set: one line per response, to see what an input does. */
static void trace(const struct fconn *fc)
{
    static int on = -1;
    if (on < 0)
        on = getenv("HTTP_SERVER_FUZZ_TRACE") != NULL;
    if (!on)
        return;
    fprintf(stderr, "conn %d: %zu bytes in, %" PRIu64 " out%s, %zu exchanges\n", fc->idx,
            fc->req_len, fc->got, fc->capped ? " (capped)" : "", fc->nheads);
    for (size_t k = 0; k < fc->nseen || k < fc->nlogs; k++) {
        const struct seen *s = k < fc->nseen ? &fc->seen[k] : NULL;
        const struct logent *l = k < fc->nlogs ? &fc->logs[k] : NULL;
        fprintf(stderr, "  %zu: seen %d %s%s body %" PRIu64 " | log %d error %d body %" PRIu64 "\n",
                k, s ? s->status : -1, s && s->complete ? "complete" : "cut",
                s && s->close ? " close" : "", s ? s->body : 0, l ? l->status : -1,
                l ? l->error : 0, l ? l->body : 0);
    }
}

/* After the connection: what the client saw against what the server says it did. */
static void check_against_log(struct fconn *fc)
{
    trace(fc);
    if (fc->nlogs != fc->nheads)
        fail("handler calls and log entries differ", fc->idx, 0);
    if (fc->capped)
        return;
    size_t h = fc->nheads;
    for (size_t k = 0; k < fc->nseen; k++) {
        const struct seen *s = &fc->seen[k];
        if (k >= h) {
            /* the server's own error answer: the last thing on the connection */
            if (k != h || k + 1 != fc->nseen || !s->complete || !s->close || s->status < 400)
                fail("a response no request asked for", fc->idx, k);
            continue;
        }
        const struct logent *l = &fc->logs[k];
        if (!s->complete) {
            if (l->error == 0 || k + 1 != fc->nseen)
                fail("a response cut short though its exchange succeeded", fc->idx, k);
            continue;
        }
        if (l->status != s->status)
            fail("status differs from the log's", fc->idx, k);
        if (l->error == 0 && l->body != s->body)
            fail("body length differs from what the server wrote", fc->idx, k);
    }
    for (size_t k = fc->nseen; k < h; k++)
        if (fc->logs[k].error == 0)
            fail("a response the server sent never came", fc->idx, k);
}

/* ---- one input ------------------------------------------------------------------------------ */

struct input {
    struct opts o;
    const uint8_t *data;
    size_t size;
};

static void set_serve_opts(const struct opts *o)
{
    serve_o.cache = !o->no_cache;
    serve_o.compress = !o->no_compress;
    serve_o.listing = !o->no_listing;
    serve_o.hidden = o->hidden;
    serve_o.symlinks = !o->no_symlinks;
    serve_o.cache_max_file = o->small_cache_file ? 2048 : 64u << 10;
    serve_o.log_format = o->json ? SERVE_LOG_JSON : SERVE_LOG_COMBINED;
    /* Its length moves where every file answer's head ends in the output buffer: one byte of
     * input reaches every alignment of the parts and ranges that follow it. */
    static char hname[] = "Cache-Control", hval[160] = "max-age=60, x-pad=";
    if (!hval[sizeof hval - 2])
        memset(hval + 18, 'p', sizeof hval - 19);
    size_t vlen = 10 + (o->pad ? 8 + o->pad : 0);
    serve_o.headers[0] = (vega_http_field){{hname, sizeof hname - 1}, {hval, vlen}};
    serve_o.nheaders = o->user_header ? 1 : 0;
}

static vega_http_server *make_server(const struct opts *o)
{
    vega_http_server_opts so;
    serve_server_opts(&so);
    so.handler = fz_handle;
    so.on_log = fz_log;
    /* Short timeouts; on the paused clock they cost nothing, but they do fire. */
    so.header_timeout_ns = so.body_timeout_ns = so.idle_timeout_ns = VEGA_NS_PER_S;
    so.write_timeout_ns = 5 * VEGA_NS_PER_S;
    if (o->one_pipelined)
        so.max_pipelined = 1;
    if (o->reqs_per_conn)
        so.max_requests_per_conn = 3;
    if (o->small_limits)
        so.limits = (vega_http1_limits){.max_start_line = 300,
                                        .max_field_line = 200,
                                        .max_field_section = 1200,
                                        .max_fields = 8};
    vega_http_server *srv;
    if (vega_http_server_new(&srv, &so) < 0)
        abort();
    return srv;
}

/* Splits the request bytes into one segment per connection at the first NULs. */
static void split_conns(struct input *in)
{
    const uint8_t *d = in->data;
    size_t left = in->size;
    for (unsigned i = 0; i < in->o.nconns; i++) {
        struct fconn *fc = &conns[i];
        uint8_t *keep = fc->bodybuf;
        memset(fc, 0, sizeof *fc);
        fc->bodybuf = keep ? keep : malloc(BODY_CAP);
        fc->idx = (int)i;
        fc->o = &in->o;
        fc->seed = in->o.seed + i;
        const uint8_t *z = i + 1 < in->o.nconns ? memchr(d, 0, left) : NULL;
        fc->req = d;
        fc->req_len = z ? (size_t)(z - d) : left;
        d += fc->req_len + (z ? 1 : 0);
        left -= fc->req_len + (z ? 1 : 0);
    }
}

static void join_or_fail(vega_task *t, vega_deadline dl)
{
    if (vega_task_join(t, NULL, dl) < 0)
        fail("the exchange did not end (a hang)", -1, 0);
}

static void *input_main(void *arg)
{
    struct input *in = arg;
    set_serve_opts(&in->o);
    fz_srv = make_server(&in->o);
    split_conns(in);
    vega_task *t[MAX_CONNS][3];
    size_t cap = in->o.small_duplex ? 1 + (size_t)(in->o.seed % 3000) : 0;
    for (unsigned i = 0; i < in->o.nconns; i++) {
        struct fconn *fc = &conns[i];
        if (vega_duplex_new(&fc->cli, &fc->srv_end, cap) < 0 ||
            vega_http1_parser_init(&fc->p, VEGA_HTTP1_RESPONSE, NULL, &resp_cb, fc) < 0 ||
            vega_task_spawn(&t[i][0], server_main, fc) < 0 ||
            vega_task_spawn(&t[i][1], writer_main, fc) < 0 ||
            vega_task_spawn(&t[i][2], reader_main, fc) < 0)
            abort();
    }
    vega_deadline dl = vega_deadline_in_ms(INPUT_MS);
    for (unsigned i = 0; i < in->o.nconns; i++)
        for (int k = 0; k < 3; k++)
            join_or_fail(t[i][k], dl);
    for (unsigned i = 0; i < in->o.nconns; i++) {
        vega_stream_close(conns[i].cli, 0);
        check_against_log(&conns[i]);
    }
    vega_http_server_free(fz_srv);
    fz_srv = NULL;
    serve_cache_flush(); /* each input starts with an empty cache: runs are reproducible */
    return NULL;
}

/* The cache and its inotify task live as long as the process: closing an inotify instance
 * costs a grace period (~10 ms), more than a whole input. */
static void *cache_start_main(void *arg)
{
    (void)arg;
    serve_cache_start();
    if (!serve_o.cache)
        fprintf(stderr, "http_server_fuzz: no openat2 or inotify here: the cache is off\n");
    return NULL;
}

/* Once per process: the tree, vega-serve's settings on it, and the runtime. */
static vega_rt *setup(void)
{
    make_tree();
    serve_defaults();
    serve_o.dir = root;
    if (serve_open_root() < 0)
        abort();
    serve_o.log_fd =
        open("/dev/null", O_WRONLY | O_CLOEXEC); /* the log is formatted, then dropped */
    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_CURRENT_THREAD;
    ro.paused_clock = true;
    ro.stack_guard = true;
#ifdef VEGA_ASAN
    ro.stack_size = 256 * 1024; /* instrumented frames are larger than vega-serve's real ones */
#endif
    vega_rt *rt;
    if (vega_rt_new(&rt, &ro) < 0 || vega_rt_block_on(rt, cache_start_main, NULL, NULL) < 0)
        abort();
    return rt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vega_rt *rt;
    if (!rt)
        rt = setup();
    if (size < 3)
        return 0;
    struct input in = {.o = parse_opts(data), .data = data + 3, .size = size - 3};
    if (in.size > MAX_INPUT)
        in.size = MAX_INPUT;
    if (vega_rt_block_on(rt, input_main, &in, NULL) < 0)
        abort();
    return 0;
}
