/* SPDX-License-Identifier: MIT */
/* vega-serve: the request handler: method check, the path made safe, and the choice between a
 * file, a directory's index.html, a listing and an error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"

static int answer_error(vega_http_exchange *x, int err)
{
    switch (err) {
    case -EACCES:
    case -EPERM:
        return serve_simple(x, 403, NULL, 0);
    case -ENAMETOOLONG:
        return serve_simple(x, 414, NULL, 0);
    case -EMFILE:
    case -ENFILE:
    case -ENOMEM:
    case VEGA_ERR_FULL: /* the blocking pool's queue (epoll: every open and stat, realpath) */
        return serve_unavailable(x);
    default:
        return serve_simple(x, 404, NULL, 0);
    }
}

/* 301 to the same path with a "/" (built from the normalised path, so that a target such as
 * "//evil.example" can never become a redirect to another host). */
static int redirect_slash(vega_http_exchange *x, const char *norm, size_t n)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    struct sbuf b;
    sbuf_init(&b, 3 * SERVE_PATH_MAX + 32);
    sbuf_add(&b, serve_o.route, serve_o.route_len);
    sbuf_url(&b, norm, n);
    sbuf_adds(&b, "/");
    if (req->query.ptr && req->query.len) {
        sbuf_adds(&b, "?");
        sbuf_add(&b, req->query.ptr, req->query.len);
    }
    int e;
    if (b.failed) {
        e = serve_simple(x, 414, NULL, 0);
    } else {
        vega_http_field loc = {{"Location", 8}, {b.p, b.len}};
        e = serve_simple(x, 301, &loc, 1);
    }
    sbuf_free(&b);
    return e;
}

/* Opens rel as serve_open does; *plain tells whether the path had no symlink (cacheable). */
static int open_path(const char *rel, size_t len, bool *plain)
{
    *plain = false;
    if (serve_o.cache) {
        int fd = serve_open_plain(rel, len);
        if (fd != -ELOOP) {
            *plain = fd >= 0;
            return fd;
        }
    }
    return serve_open(rel, len);
}

/* An entry with a precompressed sibling answers only requests that cannot take it (the
 * sibling's content is not cached: it is looked for on the way without the cache). */
static bool entry_fits(vega_http_exchange *x, const struct serve_cache_entry *ce)
{
    return !ce->has_sibling ||
           !serve_req_field(vega_http_exchange_request(x), "Accept-Encoding", &(size_t){0});
}

/* Serves the regular file fd (taken) at file for the request path key, through the cache when
 * it can be kept there. */
static int answer_file(vega_http_exchange *x, int fd, const struct stat *st, bool plain,
                       const char *key, size_t key_len, const char *file, size_t file_len)
{
    const struct serve_cache_entry *ce =
        plain ? serve_cache_add(key, key_len, file, file_len, fd, st) : NULL;
    if (ce && !entry_fits(x, ce)) {
        serve_cache_put(ce);
        ce = NULL;
    }
    if (!ce)
        return serve_file(x, fd, st, file, file_len);
    close(fd);
    int e = serve_file_cached(x, ce);
    serve_cache_put(ce);
    return e;
}

/* Opens the first --index name (index.html by default) found in the directory norm (n bytes,
 * ending with "/"; room for a name after it) as a regular file. Returns its fd, with *in the
 * length of its path (written after norm) and *iplain as open_path sets it; or -1. */
static int open_index(char *norm, size_t n, size_t *in, bool *iplain, struct stat *st)
{
    static const char *const def[] = {"index.html"};
    const char *const *names = serve_o.nindex ? serve_o.index : def;
    size_t count = serve_o.nindex ? serve_o.nindex : 1;
    for (size_t i = 0; i < count; i++) {
        size_t nl = strlen(names[i]);
        if (n + nl >= SERVE_PATH_MAX + 16)
            continue;
        memcpy(norm + n, names[i], nl);
        *in = n + nl;
        int ifd = open_path(norm, *in, iplain);
        if (ifd >= 0 && serve_fstat(ifd, st) == 0 && S_ISREG(st->st_mode))
            return ifd;
        if (ifd >= 0)
            close(ifd);
    }
    return -1;
}

static int serve_dir(vega_http_exchange *x, int fd, bool plain, char *norm, size_t n)
{
    if (n == 0 || norm[n - 1] != '/') {
        close(fd);
        return redirect_slash(x, norm, n);
    }
    enum serve_archive ak = serve_archive_wanted(vega_http_exchange_request(x));
    if (ak != SERVE_ARCHIVE_NONE) {
        if (!serve_o.listing) { /* an archive shows what a listing would */
            close(fd);
            return serve_simple(x, 403, NULL, 0);
        }
        return serve_archive(x, fd, norm, n, ak);
    }
    /* The directory's path is kept as the key: norm itself becomes the file's path. */
    char key[SERVE_PATH_MAX + 16];
    memcpy(key, norm, n);
    size_t in;
    bool iplain;
    struct stat st;
    int ifd = open_index(norm, n, &in, &iplain, &st);
    if (ifd >= 0) {
        close(fd);
        return answer_file(x, ifd, &st, plain && iplain, key, n, norm, in);
    }
    if (!serve_o.listing) {
        close(fd);
        return serve_simple(x, 403, NULL, 0);
    }
    return serve_listing(x, fd, norm, n);
}

/* --spa: a path whose last segment has no "." (a client-side route, not a missing asset) is
 * answered with the root's index file. */
static bool looks_like_route(const char *norm, size_t n)
{
    size_t i = n;
    while (i > 0 && norm[i - 1] != '/')
        i--;
    return memchr(norm + i, '.', n - i) == NULL;
}

static int serve_spa(vega_http_exchange *x)
{
    char norm[SERVE_PATH_MAX + 16] = "/";
    size_t in;
    bool iplain;
    struct stat st;
    int ifd = open_index(norm, 1, &in, &iplain, &st);
    if (ifd < 0)
        return serve_simple(x, 404, NULL, 0);
    /* Never cached under the route's key: the key is the root's. */
    return answer_file(x, ifd, &st, iplain, "/", 1, norm, in);
}

/* --cors: the answer to a preflight (an OPTIONS with Access-Control-Request-Method; Fetch
 * standard, CORS protocol) or to a plain OPTIONS. */
static int answer_options(vega_http_exchange *x)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    vega_http_field f[5];
    size_t n = 0;
    const char *methods = serve_o.upload  ? "GET, HEAD, OPTIONS, PUT, POST"
                          : serve_o.mkdir ? "GET, HEAD, OPTIONS, POST"
                                          : "GET, HEAD, OPTIONS";
    size_t ml = strlen(methods);
    f[n++] = (vega_http_field){{"Allow", 5}, {methods, ml}};
    if (serve_req_field(req, "Access-Control-Request-Method", &(size_t){0})) {
        static const char hdrs[] = "Authorization, Content-Type, Range, If-Match, If-None-Match, "
                                   "If-Modified-Since, If-Unmodified-Since, If-Range";
        f[n++] = (vega_http_field){{"Access-Control-Allow-Methods", 28}, {methods, ml}};
        /* The fields the client asks for are allowed when they are a valid list (no request
         * field reaches anything but the file's answer). */
        size_t hl;
        const char *h = serve_req_field(req, "Access-Control-Request-Headers", &hl);
        if (h && hl && hl <= 1024 && vega_http_field_value_is_valid(h, hl))
            f[n++] = (vega_http_field){{"Access-Control-Allow-Headers", 28}, {h, hl}};
        else
            f[n++] =
                (vega_http_field){{"Access-Control-Allow-Headers", 28}, {hdrs, sizeof hdrs - 1}};
        f[n++] = (vega_http_field){{"Access-Control-Max-Age", 22}, {"86400", 5}};
    }
    return serve_simple(x, 204, f, n);
}

/* --random-route: the path below the prefix, or NULL (404) when it is not under it; a path
 * that is the prefix itself redirects to its "/" form (*redirect). */
static const char *strip_route(const char *path, size_t *plen, bool *redirect)
{
    size_t rl = serve_o.route_len;
    *redirect = false;
    if (*plen < rl || memcmp(path, serve_o.route, rl) != 0)
        return NULL;
    if (*plen == rl) {
        *redirect = true;
        return path;
    }
    if (path[rl] != '/')
        return NULL;
    *plen -= rl;
    return path + rl;
}

static int handle(vega_http_exchange *x)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    const char *path = req->path.ptr;
    size_t plen = req->path.len;
    if (!path || plen == 0)
        path = "/", plen = 1;
    if (serve_o.route_len) {
        bool redirect;
        path = strip_route(path, &plen, &redirect);
        if (!path)
            return serve_simple(x, 404, NULL, 0);
        if (redirect)
            return redirect_slash(x, "", 0);
    }
    /* A preflight carries no credentials (Fetch standard): answered before the check. */
    if (serve_o.cors && req->method == VEGA_HTTP_METHOD_OPTIONS)
        return answer_options(x);
    int auth = serve_auth_check(req);
    if (auth < 0)
        return serve_unavailable(x);
    if (auth == 0)
        return serve_auth_challenge(x);
    if (serve_o.ws_echo && plen == strlen(serve_o.ws_echo) &&
        memcmp(path, serve_o.ws_echo, plen) == 0)
        return serve_ws_echo(x);
    vega_quic_ep_conn *qc = vega_http_exchange_quic(x);
    if (qc && req->conn_seq == 0 && cli_verbose) {
        /* -v: what the QUIC connection negotiated, once per connection */
        vega_quic_conn_info qi;
        vega_quic_ep_conn_get_info(qc, &qi);
        fprintf(stderr,
                "conn: quic version=0x%08x alpn=%s cipher=0x%04x resumed=%s early_data=%d\n",
                (unsigned)qi.version, qi.alpn, (unsigned)qi.suite, qi.resumed ? "yes" : "no",
                (int)qi.early_data);
    }
    bool put = req->method == VEGA_HTTP_METHOD_PUT && serve_o.upload;
    bool post = req->method == VEGA_HTTP_METHOD_POST && (serve_o.upload || serve_o.mkdir);
    if (req->method != VEGA_HTTP_METHOD_GET && req->method != VEGA_HTTP_METHOD_HEAD && !put &&
        !post) {
        const char *a = serve_o.upload  ? "GET, HEAD, PUT, POST"
                        : serve_o.mkdir ? "GET, HEAD, POST"
                                        : "GET, HEAD";
        vega_http_field allow = {{"Allow", 5}, {a, strlen(a)}};
        return serve_simple(x, 405, &allow, 1);
    }
    if (plen > SERVE_PATH_MAX)
        return serve_simple(x, 414, NULL, 0);
    /* Room for "index.html" after the path. */
    char norm[SERVE_PATH_MAX + 16];
    vega_ssize n = path[0] == '/' ? vega_http_path_normalize_safe(path, plen, norm, sizeof(norm))
                                  : VEGA_ERR_PROTO;
    if (n < 0)
        return serve_simple(x, 400, NULL, 0);
    if (!serve_o.hidden && serve_path_is_hidden(norm, (size_t)n))
        return serve_simple(x, 404, NULL, 0);
    if (put)
        return serve_put(x, norm, (size_t)n);
    if (post)
        return serve_post(x, norm, (size_t)n);
    if (serve_o.cache && serve_archive_wanted(req) == SERVE_ARCHIVE_NONE) {
        const struct serve_cache_entry *ce = serve_cache_get(norm, (size_t)n, req->start);
        if (ce && entry_fits(x, ce)) {
            int e = serve_file_cached(x, ce);
            serve_cache_put(ce);
            return e;
        }
        serve_cache_put(ce);
    }
    bool plain;
    int fd = open_path(norm, (size_t)n, &plain);
    if (fd == -ENOENT && serve_o.spa && looks_like_route(norm, (size_t)n))
        return serve_spa(x);
    if (fd < 0)
        return answer_error(x, fd);
    struct stat st;
    int e = serve_fstat(fd, &st);
    if (e < 0) {
        close(fd);
        return answer_error(x, e);
    }
    if (S_ISDIR(st.st_mode))
        return serve_dir(x, fd, plain, norm, (size_t)n);
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return serve_simple(x, 404, NULL, 0);
    }
    return answer_file(x, fd, &st, plain, norm, (size_t)n, norm, (size_t)n);
}

int serve_handle(vega_http_exchange *x, void *user)
{
    (void)user;
    int e = handle(x);
    /* A shortage met after the open (an fstat, a read on the blocking pool whose queue is
     * full, a descriptor for a sibling) is as passing as one met at the open: 503 with
     * Retry-After, not the server's 500, while nothing was sent yet. */
    if ((e == VEGA_ERR_FULL || e == -EMFILE || e == -ENFILE || e == -ENOMEM) &&
        !vega_http_response_is_started(x))
        return serve_unavailable(x);
    return e;
}
