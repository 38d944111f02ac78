/* SPDX-License-Identifier: MIT */
/* One URL: the request from the options, redirects (-L), -v's trace, the body to its sink, and
 * libvega's error codes turned into curl's exit codes and messages. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "curl.h"

#define TRACE_MAX (4u << 20) /* -v text held while a request is in flight */
#define HEADS_MAX (1u << 20) /* response heads kept for -i */
#define DRAIN_MAX (1u << 20) /* a redirect's body read to keep its connection */
#define READ_BUF  (64u * 1024)

static void tbuf_put(struct tbuf *b, const void *s, size_t n)
{
    if (n == 0) /* (nothing to copy, and b->p may still be NULL: memcpy's arguments must not) */
        return;
    if (b->len + n > b->max) {
        b->dropped = true;
        return;
    }
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->dropped = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void tbuf_free(struct tbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ---- trace (-v) and heads (-i) ------------------------------------------------------------ */

/* Whether the connection notes are wanted: -v's "* " lines, or --trace's "== Info:". */
static bool notes(const struct curl_opts *o)
{
    return o->verbose || curl_trace_on();
}

static void trace_lines(struct tbuf *b, const char *prefix, const char *s, size_t len)
{
    char ts[32];
    curl_trace_stamp(ts, sizeof ts);
    while (len) {
        const char *nl = memchr(s, '\n', len);
        size_t n = nl ? (size_t)(nl - s) : len;
        size_t shown = n && s[n - 1] == '\r' ? n - 1 : n;
        tbuf_put(b, ts, strlen(ts));
        tbuf_put(b, prefix, 2);
        tbuf_put(b, s, shown);
        tbuf_put(b, "\n", 1);
        if (!nl)
            break;
        s += n + 1;
        len -= n + 1;
    }
}

/* Whether response heads are kept for output (-i, -I, -D). */
static bool wants_heads(const struct curl_opts *o)
{
    return o->include || o->head || o->dump_header;
}

/* The status code of a response head ("HTTP/1.1 404 ..."), 0 when it has none. */
static int head_status(const void *head, size_t len)
{
    const char *sp = memchr(head, ' ', len < 16 ? len : 16);
    const char *end = (const char *)head + len;
    if (!sp || sp + 4 > end)
        return 0;
    int code = 0;
    for (int i = 1; i <= 3; i++) {
        if (sp[i] < '0' || sp[i] > '9')
            return 0;
        code = code * 10 + (sp[i] - '0');
    }
    return code;
}

static void on_trace(void *user, bool is_request, const void *head, size_t len)
{
    struct xfer *x = user;
    if (is_request) {
        x->res.size_request += len;
    } else {
        x->res.size_header += len;
        if (wants_heads(x->o))
            tbuf_put(&x->heads, head, len);
    }
    if (x->o->verbose)
        trace_lines(&x->trace, is_request ? "> " : "< ", head, len);
    if (curl_trace_on()) {
        /* curl -f stops at a failing status before the head's empty line reaches its trace */
        const char *h = head;
        if (!is_request && x->o->fail && !x->o->fail_with_body && head_status(head, len) >= 400) {
            if (len >= 4 && memcmp(h + len - 4, "\r\n\r\n", 4) == 0)
                len -= 2;
            else if (len >= 2 && memcmp(h + len - 2, "\n\n", 2) == 0)
                len -= 1;
        }
        curl_trace_head(is_request ? CURL_TRACE_HEADER_OUT : CURL_TRACE_HEADER_IN, head, len);
        /* a -d/-F body is sent from memory whole: traced after its head (a -T body as it is
         * read, traced_upload_read) */
        if (is_request && x->send_data && x->o->data)
            curl_trace_data(CURL_TRACE_DATA_OUT, x->o->data, x->o->data_len);
    }
}

static void info_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info_line(const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + 2, sizeof(line) - 3, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 4)
        n = (int)sizeof(line) - 4;
    if (curl_trace_on()) {
        curl_trace_info(line + 2, (size_t)n);
        return;
    }
    line[0] = '*';
    line[1] = ' ';
    line[2 + n] = '\n';
    char ts[32];
    curl_trace_stamp(ts, sizeof ts);
    if (ts[0]) {
        ssize_t w = write(STDERR_FILENO, ts, strlen(ts));
        (void)w;
    }
    ssize_t w = write(STDERR_FILENO, line, (size_t)n + 3);
    (void)w;
}

static void flush_trace(struct xfer *x)
{
    if (!x->o->verbose)
        return;
    size_t off = 0;
    while (off < x->trace.len) {
        ssize_t n = write(STDERR_FILENO, x->trace.p + off, x->trace.len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    if (x->trace.dropped)
        info_line("(verbose output over %u MiB dropped)", TRACE_MAX >> 20);
    x->trace.len = 0;
    x->trace.dropped = false;
}

static const char *suite_name(uint16_t s)
{
    return s == VEGA_QUIC_TLS_AES_128_GCM_SHA256         ? "TLS_AES_128_GCM_SHA256"
           : s == VEGA_QUIC_TLS_AES_256_GCM_SHA384       ? "TLS_AES_256_GCM_SHA384"
           : s == VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256 ? "TLS_CHACHA20_POLY1305_SHA256"
                                                         : "unknown";
}

/* -v for an HTTP/3 response: the QUIC handshake's facts (once per connection). */
static void verbose_quic(struct xfer *x, const vega_http_client_info *in)
{
    if (in->reused) {
        info_line("Re-using existing HTTP/3 connection with host %s", x->host);
    } else {
        static const char *const early[] = {"not offered", "offered", "accepted", "rejected"};
        if (curl_proxy_active()) /* no peer address known (socks5h: the proxy resolves) */
            info_line("QUIC: connected to %s port %u through the proxy's UDP relay", x->host,
                      (unsigned)x->port);
        else
            info_line("QUIC: connected to %s port %u (host %s)", x->res.remote_ip,
                      x->res.remote_port, x->host);
        info_line("QUIC: version %s (0x%08x), ALPN %s, cipher %s",
                  in->quic_version == VEGA_QUIC_V2 ? "2" : "1", (unsigned)in->quic_version,
                  in->alpn ? in->alpn : "none", suite_name(in->tls_suite));
        info_line("QUIC: %s, 0-RTT %s", in->tls_resumed ? "session resumed" : "full handshake",
                  early[(unsigned)in->early_data & 3]);
    }
    info_line("using HTTP/3, stream %llu", (unsigned long long)in->stream_id);
}

/* -v with --quic-migrate over HTTP/3: what became of the migration by the end of the body. */
static void verbose_migration(const vega_http_client_info *in)
{
    char local[80] = "?";
    (void)vega_addr_format(&in->quic_local, local, sizeof local);
    switch (in->quic_migration) {
    case 0:
        info_line("QUIC: no migration: the transfer ended before it was due");
        break;
    case 1:
        info_line("QUIC: migrated to local %s; the new path is not validated yet", local);
        break;
    case 2:
        info_line("QUIC: migrated to local %s; the new path validated", local);
        break;
    case -1:
        info_line("QUIC: migration failed: the new path did not validate; back on local %s", local);
        break;
    default:
        info_line("QUIC: could not migrate: %s", in->quic_migration_err == -EINVAL
                                                     ? "the server does not allow it (or the "
                                                       "handshake was not confirmed)"
                                                     : vega_strerror(in->quic_migration_err));
        break;
    }
}

static void verbose_connection(struct xfer *x, const vega_http_client_info *in)
{
    if (!notes(x->o))
        return;
    if (in->version == 30) {
        verbose_quic(x, in);
        return;
    }
    if (in->reused)
        info_line("Re-using existing connection with host %s", x->host);
    else
        info_line("Connected to %s (%s) port %u", x->host, x->res.remote_ip, x->res.remote_port);
    if (in->tls_version && !in->reused)
        info_line("SSL connection using %s", in->tls_version);
    if (in->alpn && !in->reused)
        info_line("ALPN: server accepted %s", in->alpn);
    if (in->version == 20)
        info_line("using HTTP/2, stream %llu", (unsigned long long)in->stream_id);
}

/* -D FILE: every head of every transfer, in order (the file made on the first one). */
static FILE *dump_file;

void curl_dump_close(void)
{
    if (dump_file)
        fclose(dump_file);
    dump_file = NULL;
}

static int write_dump(struct xfer *x, const void *p, size_t len)
{
    const struct curl_opts *o = x->o;
    if (strcmp(o->dump_header, "-") == 0) {
        struct curl_sink s;
        curl_sink_init(&s, "-");
        return curl_sink_write(&s, o, p, len, false);
    }
    if (!dump_file && !(dump_file = fopen(o->dump_header, "w")))
        return curl_fail_msg(x, CE_WRITE_ERROR, "Failed to open %s: %s", o->dump_header,
                             strerror(errno));
    if (fwrite(p, 1, len, dump_file) != len || fflush(dump_file) != 0)
        return curl_fail_msg(x, CE_WRITE_ERROR, "Failure writing to %s", o->dump_header);
    return 0;
}

/* Writes a response head where -i/-I (with the body) and -D want it. */
static int put_heads(struct xfer *x, const void *p, size_t len)
{
    int code = 0;
    if (x->o->include || x->o->head)
        code = curl_sink_write(&x->sink, x->o, p, len, false);
    if (code == 0 && x->o->dump_header)
        code = write_dump(x, p, len);
    return code;
}

/* The response head for -i and -D: the raw bytes when the trace hook gave them, else rebuilt. */
static int write_heads(struct xfer *x, const vega_http_client_info *in)
{
    int code = 0;
    if (x->heads.len) {
        code = put_heads(x, x->heads.p, x->heads.len);
    } else {
        struct tbuf b = {.max = HEADS_MAX};
        char line[64];
        int n = in->version >= 20
                    ? snprintf(line, sizeof(line), "HTTP/%d %d ", in->version / 10, in->status)
                    : snprintf(line, sizeof(line), "HTTP/%d.%d %d ", in->version / 10,
                               in->version % 10, in->status);
        tbuf_put(&b, line, (size_t)n);
        tbuf_put(&b, in->reason.ptr ? in->reason.ptr : "", in->reason.len);
        tbuf_put(&b, "\r\n", 2);
        for (size_t i = 0; in->fields && i < in->fields->count; i++) {
            const vega_http_field *f = &in->fields->items[i];
            tbuf_put(&b, f->name.ptr, f->name.len);
            tbuf_put(&b, ": ", 2);
            tbuf_put(&b, f->value.ptr, f->value.len);
            tbuf_put(&b, "\r\n", 2);
        }
        tbuf_put(&b, "\r\n", 2);
        code = put_heads(x, b.p, b.len);
        tbuf_free(&b);
    }
    x->heads.len = 0;
    return code;
}

/* Whether the upload can go from the file to the socket by sendfile(2): a regular file of
 * known length (not stdin, whose position may be anywhere) over plain HTTP (through TLS the
 * library would read it with plain preads on the worker; curl_upload_read's io_uring reads
 * are better there). */
static bool upload_by_sendfile(const struct xfer *x)
{
    return x->up.length != VEGA_HTTP_LENGTH_UNKNOWN && !x->up.is_stdin && x->up.fd >= 0 &&
           strncasecmp(x->url, "http://", 7) == 0 && !x->o->limit_rate && /* no pacing there */
           !curl_trace_on(); /* nor a trace: the bytes never pass through the tool */
}

/* ---- the URL --------------------------------------------------------------------------------- */

/* "user:password@" in the URL: Basic credentials as -u's (which win when given), decoded
 * from their percent-encoding, as curl sends them. */
static int url_credentials(struct xfer *x, const vega_http_url *u)
{
    const char *ui = u->userinfo.ptr, *colon = memchr(ui, ':', u->userinfo.len);
    size_t ulen = colon ? (size_t)(colon - ui) : u->userinfo.len;
    char user[256], pass[256];
    vega_ssize un = vega_http_pct_decode(ui, ulen, user, sizeof user - 1, VEGA_HTTP_PCT_REJECT_NUL);
    vega_ssize pn = colon ? vega_http_pct_decode(colon + 1, u->userinfo.len - ulen - 1, pass,
                                                 sizeof pass - 1, VEGA_HTTP_PCT_REJECT_NUL)
                          : 0;
    if (un < 0 || pn < 0)
        return curl_fail_msg(x, CE_URL_MALFORMAT,
                             "the URL's user name or password is badly "
                             "encoded or longer than 255 bytes");
    user[un] = '\0';
    pass[pn] = '\0';
    vega_ssize n = vega_proxy_basic_auth(x->url_auth, sizeof x->url_auth, user, pass);
    memset(pass, 0, sizeof pass);
    if (n < 0)
        return curl_fail_msg(x, CE_URL_MALFORMAT, "the URL's credentials cannot be encoded");
    return 0;
}

/* -n / --netrc-optional: the host's entry of the netrc file. Required (-n, --netrc-file): the
 * URL's credentials are ignored, as curl ignores them. Optional: a URL with a password keeps its
 * own; a URL with a user name only takes the password of that login's entry. */
static int netrc_credentials(struct xfer *x, const vega_http_url *u)
{
    const struct curl_opts *o = x->o;
    char want[256] = "", login[256], pass[256];
    bool url_user = o->netrc == CURL_NETRC_OPTIONAL && u->userinfo.ptr;
    if (url_user) {
        const char *ui = u->userinfo.ptr;
        if (memchr(ui, ':', u->userinfo.len))
            return url_credentials(x, u);
        vega_ssize un = vega_http_pct_decode(ui, u->userinfo.len, want, sizeof want - 1,
                                             VEGA_HTTP_PCT_REJECT_NUL);
        if (un < 0)
            return curl_fail_msg(x, CE_URL_MALFORMAT,
                                 "the URL's user name is badly encoded or longer than 255 bytes");
        want[un] = '\0';
    }
    if (!curl_netrc_find(x->host, url_user ? want : NULL, login, sizeof login, pass, sizeof pass))
        return url_user ? url_credentials(x, u) : 0;
    vega_ssize n = vega_proxy_basic_auth(x->url_auth, sizeof x->url_auth, login, pass);
    memset(pass, 0, sizeof pass);
    if (n < 0)
        return curl_fail_msg(x, CE_URL_MALFORMAT, "the .netrc credentials cannot be encoded");
    return 0;
}

/* -n on a redirect to another origin: that host's own entry, as curl looks it up again (the
 * first URL's credentials never follow: CVE-2024-11053), or none. */
static void netrc_hop(struct xfer *x)
{
    const struct curl_opts *o = x->o;
    char login[256], pass[256];
    x->hop_auth[0] = '\0';
    if (!x->foreign || !o->netrc || o->auth || o->location_trusted)
        return;
    if (curl_netrc_find(x->host, NULL, login, sizeof login, pass, sizeof pass) &&
        vega_proxy_basic_auth(x->hop_auth, sizeof x->hop_auth, login, pass) < 0)
        x->hop_auth[0] = '\0';
    memset(pass, 0, sizeof pass);
}

/* Copies the URL, guessing http:// when it has no scheme (as curl does), adds -G's query,
 * checks the scheme and the syntax, and notes host and port for messages. */
static int prepare_url(struct xfer *x, const char *raw, const char *upload)
{
    const struct curl_opts *o = x->o;
    const char *sep = strstr(raw, "://");
    size_t rlen = strcspn(raw, "#"); /* the fragment is never sent */
    int n;
    if (o->get && o->has_data)
        n = snprintf(x->url, sizeof(x->url), "%s%.*s%s%s", sep ? "" : "http://", (int)rlen, raw,
                     memchr(raw, '?', rlen) ? "&" : "?", o->data);
    else
        n = snprintf(x->url, sizeof(x->url), "%s%s", sep ? "" : "http://", raw);
    if (n < 0 || (size_t)n >= sizeof(x->url))
        return curl_fail_msg(x, CE_URL_MALFORMAT, "URL longer than %d bytes", CURL_MAX_URL_LEN - 1);
    size_t slen = sep ? (size_t)(sep - raw) : 4;
    snprintf(x->res.scheme, sizeof(x->res.scheme), "%.*s", (int)(slen < 15 ? slen : 15),
             sep ? raw : "http");
    for (char *p = x->res.scheme; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (strcmp(x->res.scheme, "http") != 0 && strcmp(x->res.scheme, "https") != 0)
        return curl_fail_msg(x, CE_UNSUPPORTED_PROTOCOL, "Protocol \"%.*s\" not supported",
                             (int)slen, sep ? raw : "http");
    vega_http_url u;
    if (vega_http_url_parse(&u, x->url, strlen(x->url)) < 0)
        return curl_fail_msg(x, CE_URL_MALFORMAT, "URL using bad/illegal format or missing URL");
    if (upload && !u.query.ptr && (u.path.len == 0 || u.path.ptr[u.path.len - 1] == '/')) {
        /* -T with no file part in the URL: curl appends the local file's name. */
        const char *base = strrchr(upload, '/');
        base = base ? base + 1 : upload;
        size_t at = (size_t)(u.path.ptr + u.path.len - x->url);
        if (u.fragment.ptr)
            at = (size_t)(u.fragment.ptr - 1 - x->url);
        char tail[CURL_MAX_URL_LEN];
        n = snprintf(tail, sizeof(tail), "%.*s%s%s", (int)at, x->url, u.path.len ? "" : "/", base);
        if (n < 0 || (size_t)n >= sizeof(tail))
            return curl_fail_msg(x, CE_URL_MALFORMAT, "URL too long");
        memcpy(x->url, tail, (size_t)n + 1);
        if (vega_http_url_parse(&u, x->url, strlen(x->url)) < 0)
            return curl_fail_msg(x, CE_URL_MALFORMAT,
                                 "URL rejected: the upload file's name does not fit in a URL");
    }
    snprintf(x->host, sizeof(x->host), "%.*s", (int)u.host.len, u.host.ptr);
    x->port = u.port;
    if (o->auth)
        return 0;
    if (o->netrc)
        return netrc_credentials(x, &u);
    if (u.userinfo.ptr)
        return url_credentials(x, &u);
    return 0;
}

/* -O: the last segment of the URL's path. */
static int remote_name(struct xfer *x)
{
    vega_http_url u;
    if (vega_http_url_parse(&u, x->url, strlen(x->url)) < 0)
        return curl_fail_msg(x, CE_URL_MALFORMAT, "URL using bad/illegal format or missing URL");
    const char *p = u.path.ptr, *end = u.path.ptr + u.path.len, *seg = p;
    for (const char *q = p; q < end; q++)
        if (*q == '/')
            seg = q + 1;
    size_t len = (size_t)(end - seg);
    if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
        return curl_fail_msg(x, CE_WRITE_ERROR, "Remote file name has no length!");
    if (len >= sizeof(x->res.filename))
        return curl_fail_msg(x, CE_WRITE_ERROR, "Remote file name is too long");
    memcpy(x->res.filename, seg, len);
    x->res.filename[len] = '\0';
    return 0;
}

/* -J: the filename parameter of the final response's Content-Disposition, as curl 7.88 reads
 * it (quoted or up to ';'; filename* is not read), cut to what follows its last '/' or '\\'.
 * Returns 1 with the name in out, 0 when there is none (-O's URL name stays), or 23 for a
 * name that cannot be a file (empty, ".", "..", too long). */
static int disposition_name(struct xfer *x, const vega_http_client_info *in, char *out, size_t cap)
{
    const vega_http_field *f =
        in->fields ? vega_http_fields_get(in->fields, "Content-Disposition", 19) : NULL;
    if (!f)
        return 0;
    const char *v = f->value.ptr;
    size_t n = f->value.len, i = 0;
    for (;;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ';'))
            i++;
        if (i >= n)
            return 0;
        if (i + 9 < n && strncasecmp(v + i, "filename=", 9) == 0)
            break;
        while (i < n && v[i] != ';')
            i++;
    }
    i += 9;
    size_t j; /* the name is v[i, j) */
    if (v[i] == '"' || v[i] == '\'') {
        char quote = v[i++];
        for (j = i; j < n && v[j] != quote; j++)
            ;
    } else {
        for (j = i; j < n && v[j] != ';'; j++)
            ;
        while (j > i && (v[j - 1] == ' ' || v[j - 1] == '\t'))
            j--;
    }
    const char *p = v + i, *e = v + j;
    for (const char *q = p; q < e; q++)
        if (*q == '/' || *q == '\\')
            p = q + 1;
    size_t len = (size_t)(e - p);
    if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.') ||
        len >= cap)
        return curl_fail_msg(x, CE_WRITE_ERROR, "Content-Disposition names no usable file ('%.*s')",
                             (int)len, p);
    for (const char *q = p; q < e; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return curl_fail_msg(x, CE_WRITE_ERROR,
                                 "Content-Disposition's file name has control characters");
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

static bool user_has(const struct curl_opts *o, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < o->nheaders; i++)
        if (o->headers[i].name.len == n && strncasecmp(o->headers[i].name.ptr, name, n) == 0)
            return true;
    return false;
}

/* "scheme://host:port" of url (the port always written out, the host lower-cased), or "" when
 * it does not parse. */
static void url_origin(const char *url, char *out, size_t cap)
{
    vega_http_url u;
    out[0] = '\0';
    if (vega_http_url_parse(&u, url, strlen(url)) < 0)
        return;
    int n = snprintf(out, cap, "%.*s://%.*s:%u", (int)u.scheme.len, u.scheme.ptr, (int)u.host.len,
                     u.host.ptr, (unsigned)u.port);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return;
    }
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
}

/* Fields that carry credentials: a redirect to another origin must not take them along
 * (curl's rule since CVE-2018-1000007 and CVE-2022-27776), unless --location-trusted. */
static bool is_credential(const vega_http_field *f)
{
    static const char *const names[] = {"authorization", "cookie", "proxy-authorization"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (f->name.len == n && strncasecmp(f->name.ptr, names[i], n) == 0)
            return true;
    }
    return false;
}

static void build_fields(struct xfer *x)
{
    const struct curl_opts *o = x->o;
    x->nfields = 0;
    bool strip = x->foreign && !o->location_trusted;
    /* curl's Cookie field: the jar's cookies for this URL, then -b's strings (not when -H
     * gives Cookie; the jar's then go in a field of their own) */
    static const char ck[] = "Cookie";
    bool capped;
    size_t cl = curl_cookie_header(x->url, x->cookie, 8191, &capped);
    bool own = user_has(o, ck);
    if (o->cookie_str && !own && !capped)
        snprintf(x->cookie + cl, sizeof x->cookie - cl, "%s%s", cl ? "; " : "", o->cookie_str);
    if (x->cookie[0]) /* before -H's fields, as curl sends it */
        x->fields[x->nfields++] =
            (vega_http_field){{ck, sizeof(ck) - 1}, {x->cookie, strlen(x->cookie)}};
    for (size_t i = 0; i < o->nheaders; i++)
        if (!strip || !is_credential(&o->headers[i]))
            x->fields[x->nfields++] = o->headers[i];
    static const char ct[] = "Content-Type", form[] = "application/x-www-form-urlencoded";
    static const char json[] = "application/json", accept[] = "Accept";
    if (x->send_data && !o->no_content_type && !user_has(o, ct))
        x->fields[x->nfields++] =
            o->form_type[0]
                ? (vega_http_field){{ct, sizeof(ct) - 1}, {o->form_type, strlen(o->form_type)}}
            : o->json ? (vega_http_field){{ct, sizeof(ct) - 1}, {json, sizeof(json) - 1}}
                      : (vega_http_field){{ct, sizeof(ct) - 1}, {form, sizeof(form) - 1}};
    /* curl adds the JSON Accept with --json whether or not the data goes (-G) */
    if (o->json && !user_has(o, accept))
        x->fields[x->nfields++] =
            (vega_http_field){{accept, sizeof(accept) - 1}, {json, sizeof(json) - 1}};
    static const char auth[] = "Authorization";
    const char *cred = o->auth ? o->auth : x->url_auth;
    if (x->auth_answer[0] && !strip) /* --digest/--anyauth: this hop's answer */
        cred = x->auth_answer;
    if (strip && x->hop_auth[0]) /* -n: the entry of the host this hop goes to */
        cred = x->hop_auth, strip = false;
    if (cred[0] && !strip && !user_has(o, auth))
        x->fields[x->nfields++] = (vega_http_field){{auth, sizeof(auth) - 1}, {cred, strlen(cred)}};
    static const char ims[] = "If-Modified-Since", ius[] = "If-Unmodified-Since",
                      lm[] = "Last-Modified";
    const char *tc = o->time_cond_unmodified ? ius : o->time_cond_lastmod ? lm : ims;
    if (x->time_cond[0] && !user_has(o, tc))
        x->fields[x->nfields++] =
            (vega_http_field){{tc, strlen(tc)}, {x->time_cond, strlen(x->time_cond)}};
    /* curl sends Range with a request without a body only: -r with a body (and -C with -T)
     * becomes the body's Content-Range */
    static const char crange[] = "Content-Range";
    if (x->content_range[0] && (x->send_data || x->has_upload) && !user_has(o, crange))
        x->fields[x->nfields++] = (vega_http_field){{crange, sizeof(crange) - 1},
                                                    {x->content_range, strlen(x->content_range)}};
    static const char range[] = "Range";
    if (x->range[0] && !x->send_data && !x->has_upload && !user_has(o, range))
        x->fields[x->nfields++] =
            (vega_http_field){{range, sizeof(range) - 1}, {x->range, strlen(x->range)}};
    /* --etag-compare: sent beside any -H If-None-Match, as curl adds it to the -H list */
    static const char inm[] = "If-None-Match";
    if (x->inm[0])
        x->fields[x->nfields++] =
            (vega_http_field){{inm, sizeof(inm) - 1}, {x->inm, strlen(x->inm)}};
    static const char ref[] = "Referer";
    if (o->referer && *o->referer && !o->no_referer && !user_has(o, ref))
        x->fields[x->nfields++] =
            (vega_http_field){{ref, sizeof(ref) - 1}, {o->referer, strlen(o->referer)}};
}

/* ---- results --------------------------------------------------------------------------------- */

static void note_response(struct xfer *x, const vega_http_client_info *in)
{
    struct curl_result *r = &x->res;
    r->status = in->status;
    r->http_version = in->version;
    /* A hop on a reused connection did no lookup or connect: the transfer's times stay those
     * of the hop that did. */
    if (in->t_dns)
        r->t_namelookup = in->t_dns;
    if (in->t_connect)
        r->t_connect = in->t_connect;
    if (in->t_tls)
        r->t_appconnect = in->t_tls;
    r->t_pretransfer = in->t_tls ? in->t_tls : in->t_connect ? in->t_connect : in->t_start;
    r->t_starttransfer = in->t_first_byte;
    if (!in->reused)
        r->num_connects++;
    char a[VEGA_ADDR_STRLEN];
    r->remote_ip[0] = '\0';
    r->remote_port = 0;
    if (in->peer.len && vega_addr_format(&in->peer, a, sizeof(a)) > 0) {
        /* "1.2.3.4:80" / "[::1]:80" -> the IP alone. */
        char *colon = strrchr(a, ':');
        if (colon)
            *colon = '\0';
        const char *ip = a;
        if (a[0] == '[') {
            ip = a + 1;
            char *cb = strchr(a, ']');
            if (cb)
                *cb = '\0';
        }
        snprintf(r->remote_ip, sizeof(r->remote_ip), "%s", ip);
        r->remote_port = vega_addr_port(&in->peer);
    }
    r->content_type[0] = '\0';
    r->num_headers = 0;
    if (in->fields) {
        r->num_headers = (unsigned)in->fields->count;
        const vega_http_field *ct = vega_http_fields_get(in->fields, "Content-Type", 12);
        if (ct)
            snprintf(r->content_type, sizeof(r->content_type), "%.*s", (int)ct->value.len,
                     ct->value.ptr);
    }
}

/* Reads and drops a redirect's body so that its connection can serve the next hop. */
static void drain(struct xfer *x, vega_http_client_response *resp)
{
    size_t total = 0;
    while (total < DRAIN_MAX) {
        vega_ssize n = vega_http_client_response_read(resp, x->buf, READ_BUF,
                                                      x->dl ? x->dl : VEGA_DEADLINE_NEVER);
        if (n <= 0)
            return;
        curl_trace_data(CURL_TRACE_DATA_IN, x->buf, (size_t)n);
        total += (size_t)n;
    }
}

/* A failed write of the body: the sink said why. */
static int body_write_failed(struct xfer *x, int code)
{
    curl_progress_end(&x->prog);
    x->res.exit_code = code;
    snprintf(x->res.errmsg, sizeof(x->res.errmsg), "Failure writing output");
    return code;
}

/* --limit-rate: once the body is ahead of the average rate asked for, waits until it is not
 * (what is buffered is written first, so the output keeps the pace too). */
static void limit_rate(struct xfer *x, vega_deadline dl)
{
    const struct curl_opts *o = x->o;
    uint64_t bytes = x->res.size_download;
    /* the time the bytes so far may take at the rate, in ns (no overflow: 2^64 ns > 500 y) */
    long double due = (long double)bytes * VEGA_NS_PER_S / (long double)o->limit_rate;
    vega_tstamp at =
        x->body_start + (due > (long double)(UINT64_MAX / 2) ? UINT64_MAX / 2 : (uint64_t)due);
    if (at <= vega_now())
        return;
    (void)curl_sink_flush(&x->sink, o);
    (void)vega_sleep_until(dl < at ? dl : at);
}

/* The body of the final response to the sink, with the progress meter. Each read lands in the
 * sink's buffer (the client copies out of its body queue once; nothing is copied again here).
 * While the buffer holds bytes, reads do not wait: when nothing more has come yet, what came
 * is written first, so large transfers go out in large writes and a slow one as it arrives. */
static int read_body(struct xfer *x, vega_http_client_response *resp,
                     const vega_http_client_info *in)
{
    const struct curl_opts *o = x->o;
    if (o->max_filesize && in->content_length != VEGA_HTTP_LENGTH_UNKNOWN &&
        in->coding == VEGA_HTTP_CODING_IDENTITY && in->content_length > o->max_filesize)
        return curl_fail_msg(x, CE_FILESIZE_EXCEEDED, "Maximum file size exceeded");
    curl_progress_start(&x->prog, o, !x->sink.is_stdout || !curl_stdout.tty);
    x->prog.start = x->res.t_begin;
    if (in->coding == VEGA_HTTP_CODING_IDENTITY && in->content_length != VEGA_HTTP_LENGTH_UNKNOWN)
        x->prog.total = in->content_length;
    vega_deadline dl = x->dl ? x->dl : VEGA_DEADLINE_NEVER;
    x->body_start = vega_now();
    /* -Z to stdout: other transfers write there too, so the body lands in our buffer first */
    bool own = o->parallel && x->sink.is_stdout;
    for (;;) {
        size_t room = READ_BUF;
        uint8_t *p = own ? x->buf : curl_sink_space(&x->sink, &room);
        if (!p) {
            curl_progress_end(&x->prog);
            return curl_fail_msg(x, CE_OUT_OF_MEMORY, "Out of memory");
        }
        bool pending = !own && curl_sink_pending(&x->sink);
        vega_ssize n = vega_http_client_response_read(resp, p, room, pending ? 0 : dl);
        if (n == -ETIMEDOUT && pending) {
            /* Nothing more yet (or the deadline passed: the waiting read says so next). */
            int code = curl_sink_flush(&x->sink, o);
            if (code)
                return body_write_failed(x, code);
            continue;
        }
        if (n == 0)
            break;
        if (n < 0) {
            curl_progress_end(&x->prog);
            vega_http_client_response_get_error(resp, &x->werr);
            return curl_read_failed(x, in, (int)n);
        }
        curl_trace_data(CURL_TRACE_DATA_IN, p, (size_t)n);
        x->res.size_download += (uint64_t)n;
        if (in->coding != VEGA_HTTP_CODING_IDENTITY)
            /* curl counts the bytes received, before --compressed decodes them */
            x->res.size_download = in->body_wire_bytes;
        int code = own ? curl_sink_write(&x->sink, o, p, (size_t)n, true)
                       : curl_sink_commit(&x->sink, o, (size_t)n);
        if (code)
            return body_write_failed(x, code);
        x->prog.now = x->res.size_download;
        curl_progress_update(&x->prog, false);
        if (o->limit_rate)
            limit_rate(x, dl);
    }
    if (in->coding != VEGA_HTTP_CODING_IDENTITY)
        x->res.size_download = in->body_wire_bytes; /* the decoder's last input included */
    int code = curl_sink_flush(&x->sink, o);
    if (code)
        return body_write_failed(x, code);
    x->prog.now = x->res.size_download;
    curl_progress_end(&x->prog);
    return 0;
}

/* A -T body read for --trace: what is read goes in the trace as "=> Send data". */
static vega_ssize traced_upload_read(void *user, void *buf, size_t len)
{
    vega_ssize n = curl_upload_read(user, buf, len);
    if (n > 0)
        curl_trace_data(CURL_TRACE_DATA_OUT, buf, (size_t)n);
    return n;
}

/* Sends the request, following redirects with -L; leaves the final response in *out. */
static int exchange(struct xfer *x, vega_http_client *client, vega_http_client_response **out)
{
    const struct curl_opts *o = x->o;
    url_origin(x->url, x->origin, sizeof x->origin);
    x->foreign = false;
    x->hop_auth[0] = '\0';
    x->auth_answer[0] = '\0';
    x->auth_tried = false;
    for (;;) {
        build_fields(x);
        vega_http_client_request req;
        vega_http_client_request_init(&req);
        req.method = x->method;
        req.url = x->url;
        req.fields = x->fields;
        req.nfields = x->nfields;
        if (x->send_data) {
            req.body = o->data ? o->data : "";
            req.body_len = o->data_len;
        } else if (x->has_upload && upload_by_sendfile(x)) {
            /* A regular file over plain HTTP: the library hands it to sendfile(2). */
            req.body_file = true;
            req.body_fd = x->up.fd;
            req.body_offset = x->up.skip;
            req.body_length = x->up.length;
        } else if (x->has_upload) {
            req.body_fn = curl_trace_on() ? traced_upload_read : curl_upload_read;
            req.body_user = &x->up;
            req.body_length = x->up.length;
        }
        /* --digest/--anyauth before the challenge: curl's "auth negotiation" sends the method
         * with an empty body; the body goes with the answer */
        bool may_auth = o->auth_user && (!x->foreign || o->location_trusted);
        bool auth_neg = may_auth && !x->auth_tried && (x->send_data || x->has_upload);
        if (auth_neg) {
            req.body = "";
            req.body_len = 0;
            req.body_file = false;
            req.body_fn = NULL;
            req.body_length = 0;
        }
        /* curl 7.88 asks first ("Expect: 100-continue", waiting up to 1 s for 100) before a -T
         * upload that is not empty and before a -d/-F body over 1 MiB (EXPECT_100_THRESHOLD),
         * unless -H names Expect (-H 'Expect:' is curl's way to turn it off). */
        req.expect_continue =
            !user_has(o, "Expect") && !auth_neg &&
            (x->has_upload ? x->up.length != 0 : x->send_data && o->data_len > (size_t)1 << 20);
        req.decompress = o->compressed;
        req.version = o->http_version;
        req.h3_fallback = o->h3_fallback;
        req.wire_error = &x->werr;
        req.deadline = x->dl ? x->dl : VEGA_DEADLINE_NEVER;
        req.trace = on_trace;
        req.trace_user = x;
        x->res.method = x->method;
        snprintf(x->res.url, sizeof(x->res.url), "%s", x->url);

        vega_http_client_response *resp = NULL;
        int r = vega_http_client_send(client, &req, &resp);
        if (req.body_file && !auth_neg) {
            if (r == -ENODATA)
                x->up.err = r; /* the file shrank below the length announced: exit 26 */
            else if (r == 0)
                x->up.sent = x->up.length;
        }
        if (r < 0) {
            flush_trace(x);
            x->send_err = r;
            return curl_send_failed(x, r);
        }
        const vega_http_client_info *in = vega_http_client_response_info(resp);
        note_response(x, in);
        curl_etag_save_fields(x->etag_fp, in->fields);
        if (x->send_data && !auth_neg)
            x->res.size_upload += o->data_len;
        else if (x->has_upload && !auth_neg)
            x->res.size_upload += x->up.sent;
        verbose_connection(x, in);
        flush_trace(x);
        curl_cookie_take(x->url, in->fields); /* a redirect's cookies go with the next hop */

        /* --digest/--anyauth: a 401 with a challenge we can answer is asked again, once */
        if (in->status == 401 && may_auth && !x->auth_tried) {
            x->auth_tried = true;
            char target[CURL_MAX_URL_LEN];
            vega_http_url u;
            /* the body the next try sends, for qop=auth-int */
            struct curl_auth_body ab = {.fd = -1};
            if (x->send_data) {
                ab.data = o->data;
                ab.len = o->data_len;
            } else if (x->has_upload) {
                ab.unhashable =
                    x->up.is_stdin || !x->up.seekable || x->up.length == VEGA_HTTP_LENGTH_UNKNOWN;
                ab.fd = x->up.fd;
                ab.off = x->up.skip;
                ab.flen = x->up.length;
            }
            int ar = -1;
            if (vega_http_url_parse(&u, x->url, strlen(x->url)) == 0 &&
                snprintf(target, sizeof target, "%.*s%s%.*s", (int)(u.path.len ? u.path.len : 1),
                         u.path.len ? u.path.ptr : "/", u.query.ptr ? "?" : "", (int)u.query.len,
                         u.query.ptr ? u.query.ptr : "") < (int)sizeof target &&
                (ar = curl_auth_answer(o, in->fields, x->method, target, &ab, x->auth_answer,
                                       sizeof x->auth_answer)) == 0) {
                if (o->verbose)
                    info_line("Issue another request to this URL with the server's challenge "
                              "answered");
                /* (the body has not gone yet: the first try sent it empty) */
                drain(x, resp);
                vega_http_client_response_free(resp);
                continue;
            }
            if (ar == -2 && !o->silent)
                cli_err(NULL, "Warning: Digest qop=auth-int hashes the body before it is sent: "
                              "a body from stdin or a pipe cannot be, the 401 stays the answer");
            x->auth_answer[0] = '\0';
        }

        bool to_get = false;
        vega_ssize n = vega_http_client_redirect(resp, x->url, x->next, sizeof(x->next), &to_get);
        if (n >= 0 && !o->location)
            snprintf(x->res.redirect_url, sizeof(x->res.redirect_url), "%s", x->next);
        if (!o->location || n == -ENOENT) {
            *out = resp;
            return 0;
        }
        if (n < 0) {
            vega_http_client_response_free(resp);
            return curl_fail_msg(x, CE_URL_MALFORMAT,
                                 "the Location of a %d response is not a usable URL",
                                 x->res.status);
        }
        if (wants_heads(o)) {
            int code = write_heads(x, in);
            if (code) {
                vega_http_client_response_free(resp);
                return code;
            }
        }
        if (o->max_redirs >= 0 && x->res.num_redirects >= o->max_redirs) {
            vega_http_client_response_free(resp);
            return curl_fail_msg(x, CE_TOO_MANY_REDIRECTS, "Maximum (%ld) redirects followed",
                                 o->max_redirs);
        }
        drain(x, resp);
        vega_http_client_response_free(resp);
        x->res.num_redirects++;
        x->res.t_redirect = vega_now();
        if (notes(o))
            info_line("Issue another request to this URL: '%s'", x->next);
        if (to_get) {
            if (!o->head)
                x->method = "GET";
            x->send_data = false;
            x->has_upload = false;
        } else if (x->has_upload && curl_upload_rewind(&x->up) < 0) {
            return curl_fail_msg(
                x, CE_SEND_FAIL_REWIND,
                "necessary data rewind wasn't possible (the upload came from stdin)");
        }
        memcpy(x->url, x->next, (size_t)n + 1);
        x->auth_answer[0] = '\0'; /* a new hop is challenged (and answered) anew */
        x->auth_tried = false;
        char here[CURL_MAX_URL_LEN];
        url_origin(x->url, here, sizeof here);
        x->foreign = !x->origin[0] || strcmp(here, x->origin) != 0;
        if (x->foreign && notes(o) && !o->location_trusted && (o->auth || x->url_auth[0]) &&
            !user_has(o, "Authorization"))
            info_line("Not sending Authorization (-u, --oauth2-bearer) to %s: another origin "
                      "than the first URL's (--location-trusted sends it)",
                      here);
        if (x->foreign && notes(o) && !o->location_trusted)
            for (size_t i = 0; i < o->nheaders; i++)
                if (is_credential(&o->headers[i]))
                    info_line("Not sending %.*s to %s: another origin than the first URL's "
                              "(--location-trusted sends it)",
                              (int)o->headers[i].name.len, o->headers[i].name.ptr, here);
        vega_http_url u;
        if (vega_http_url_parse(&u, x->url, (size_t)n) == 0) {
            snprintf(x->host, sizeof(x->host), "%.*s", (int)u.host.len, u.host.ptr);
            x->port = u.port;
            netrc_hop(x);
            snprintf(x->res.scheme, sizeof(x->res.scheme), "%.*s",
                     (int)(u.scheme.len < 15 ? u.scheme.len : 15), u.scheme.ptr);
        }
    }
}

/* -C: the offset to ask for (-C -: the output file's size; nothing for a file not there) and
 * the file opened for appending. */
static int prepare_resume(struct xfer *x, bool to_file)
{
    const struct curl_opts *o = x->o;
    if (!o->resume)
        return 0;
    uint64_t at = o->resume_from;
    if (o->resume_auto) {
        struct stat st;
        at = to_file && stat(x->sink.path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size
                                                                            : 0;
    }
    x->resume_at = at;
    if (to_file) {
        x->sink.append = true;
        x->sink.append_at = at;
        x->sink.trim = x->attempt > 0;
    }
    if (at && !o->range)
        snprintf(x->range, sizeof x->range, "bytes=%llu-", (unsigned long long)at);
    return 0;
}

/* curl's ranges for a request body: -C N with -T sends the file from byte N with
 * "Content-Range: bytes N-LAST/SIZE" (-C -: from 0, the server's size is not asked for); -r
 * RANGE with a body sends the whole body with "Content-Range: bytes RANGE/SIZE". */
static int body_ranges(struct xfer *x)
{
    const struct curl_opts *o = x->o;
    uint64_t size = x->has_upload ? x->up.length : o->data_len;
    bool body = x->has_upload || (o->has_data && !o->get);
    if (!body)
        return 0;
    if (o->resume && x->has_upload) {
        uint64_t at = o->resume_auto ? 0 : o->resume_from;
        if (size == VEGA_HTTP_LENGTH_UNKNOWN)
            return curl_fail_msg(x, CE_READ_ERROR,
                                 "-C needs a regular file to upload (not stdin or a pipe)");
        if (at >= size && size)
            return curl_fail_msg(x, CE_PARTIAL_FILE, "File already completely uploaded");
        if (at && curl_upload_skip(&x->up, at) < 0)
            return curl_fail_msg(x, CE_READ_ERROR, "Could not seek the upload file to %llu",
                                 (unsigned long long)at);
        if (size)
            snprintf(x->content_range, sizeof x->content_range, "bytes %llu-%llu/%llu",
                     (unsigned long long)at, (unsigned long long)(size - 1),
                     (unsigned long long)size);
    } else if (o->range && !o->resume) {
        if (size == VEGA_HTTP_LENGTH_UNKNOWN)
            snprintf(x->content_range, sizeof x->content_range, "bytes %s/*", o->range);
        else
            snprintf(x->content_range, sizeof x->content_range, "bytes %s/%llu", o->range,
                     (unsigned long long)size);
    }
    return 0;
}

/* Retry-After (RFC 9110 §10.2.3) in seconds from now: delay-seconds or an HTTP-date; -1 when
 * absent or unreadable. */
static int64_t retry_after(const vega_http_client_info *in)
{
    const vega_http_field *f =
        in->fields ? vega_http_fields_get(in->fields, "Retry-After", 11) : NULL;
    if (!f || f->value.len == 0 || f->value.len > 64)
        return -1;
    char v[65];
    memcpy(v, f->value.ptr, f->value.len);
    v[f->value.len] = '\0';
    uint64_t secs;
    if (cli_parse_uint(v, 0, INT64_MAX, &secs) == 0)
        return (int64_t)secs;
    int64_t t, now = (int64_t)time(NULL);
    if (vega_http_date_parse(v, f->value.len, now, &t) < 0)
        return -1;
    return t > now ? t - now : 0;
}

static int64_t last_modified(const vega_http_client_info *in)
{
    const vega_http_field *f =
        in->fields ? vega_http_fields_get(in->fields, "Last-Modified", 13) : NULL;
    int64_t t;
    if (!f || vega_http_date_parse(f->value.ptr, f->value.len, (int64_t)time(NULL), &t) < 0)
        return -1;
    return t;
}

/* curl's checks of the final response against -z and -C: *keep false when its body is to be
 * ignored (a 304, a document not newer or older than -z's time, a 416 for a resumed file,
 * the whole document already there); 0 or a failure (33: the server ignored the range). */
static int check_conditions(struct xfer *x, const vega_http_client_info *in, bool *keep)
{
    const struct curl_opts *o = x->o;
    x->last_modified = last_modified(in);
    if (o->time_cond && in->status == 304) { /* a 412 body is written, as curl does */
        *keep = false;
        return 0;
    }
    if (o->time_cond && in->status / 100 == 2 && x->last_modified >= 0 &&
        (o->time_cond_unmodified ? x->last_modified >= o->time_cond_at /* curl's test */
                                 : x->last_modified <= o->time_cond_at)) {
        if (notes(o))
            info_line("The requested document is not %s enough",
                      o->time_cond_unmodified ? "old" : "new");
        x->res.status = 304; /* curl reports the condition's answer, as a server would */
        *keep = false;
        return 0;
    }
    if (!x->resume_at || o->range || strcmp(x->method, "GET") != 0)
        return 0;
    if (in->status == 416 && !o->fail) {
        *keep = false; /* curl: "just proceed and pretend this is no error" */
        return 0;
    }
    if (in->status == 416 || (in->fields && vega_http_fields_get(in->fields, "Content-Range", 13)))
        return 0;
    if (in->content_length == x->resume_at) {
        if (notes(o))
            info_line("The entire document is already downloaded");
        *keep = false;
        return 0;
    }
    return curl_fail_msg(x, CE_RANGE_ERROR,
                         "HTTP server doesn't seem to support byte ranges. Cannot resume.");
}

/* Reads an ignored body to its end (counted in %{size_download}, as curl counts it). */
static void drop_body(struct xfer *x, vega_http_client_response *resp)
{
    for (;;) {
        vega_ssize n = vega_http_client_response_read(resp, x->buf, READ_BUF,
                                                      x->dl ? x->dl : VEGA_DEADLINE_NEVER);
        if (n <= 0)
            return;
        curl_trace_data(CURL_TRACE_DATA_IN, x->buf, (size_t)n);
        x->res.size_download += (uint64_t)n;
    }
}

static int run(struct xfer *x, struct curl_ctx *cx, size_t idx)
{
    const struct curl_opts *o = x->o;
    const char *upload = idx < o->nuploads ? o->uploads[idx] : NULL;
    int code = prepare_url(x, o->urls[idx], upload);
    if (code)
        return code;

    struct curl_outspec spec = {.file = NULL, .remote_name = o->remote_name_all};
    if (idx < o->nouts)
        spec = o->outs[idx];
    if (spec.remote_name && (code = remote_name(x)) != 0)
        return code;
    if (spec.file)
        snprintf(x->res.filename, sizeof(x->res.filename), "%s", spec.file);
    bool to_file = spec.remote_name || (spec.file && strcmp(spec.file, "-") != 0);
    if (to_file && o->output_dir && *o->output_dir) {
        /* --output-dir: curl puts every -o and -O file there, as DIR/NAME */
        char name[sizeof x->res.filename];
        memcpy(name, x->res.filename, sizeof name);
        int n = snprintf(x->res.filename, sizeof x->res.filename, "%s/%s", o->output_dir, name);
        if (n < 0 || (size_t)n >= sizeof x->res.filename)
            return curl_fail_msg(x, CE_WRITE_ERROR, "the output file's path is too long");
    }
    curl_sink_init(&x->sink, to_file ? x->res.filename : spec.file);
    if (to_file) {
        x->sink.create_dirs = o->create_dirs;
        if (o->create_dirs && o->output_dir && *o->output_dir)
            (void)mkdir(o->output_dir, 0750); /* curl makes --output-dir itself too */
    }
    if ((code = prepare_resume(x, to_file)) != 0)
        return code;
    if (o->time_cond)
        vega_http_date_format(o->time_cond_at, x->time_cond, sizeof x->time_cond);
    if (o->etag_compare && (code = curl_etag_compare_value(o, x->inm, sizeof x->inm)) != 0)
        return x->res.exit_code = code;
    if ((code = curl_etag_save_open(o, &x->etag_fp)) != 0)
        return x->res.exit_code = code;

    if (upload) {
        if ((code = curl_upload_open(&x->up, o, upload)) != 0) {
            x->res.exit_code = code;
            snprintf(x->res.errmsg, sizeof(x->res.errmsg), "Failed to open/read %s", upload);
            return code;
        }
        x->up.dl = x->dl;
        x->up.limit_rate = o->limit_rate;
        x->has_upload = true;
    }
    if ((code = body_ranges(x)) != 0)
        return code;
    if (o->range)
        snprintf(x->range, sizeof x->range, "bytes=%s", o->range);
    x->send_data = o->has_data && !o->get;
    x->method = o->head        ? "HEAD"
                : o->method    ? o->method
                : upload       ? "PUT"
                : x->send_data ? "POST"
                               : "GET";
    vega_http_client_response *resp = NULL;
    if ((code = exchange(x, cx->client, &resp)) != 0)
        return code;
    const vega_http_client_info *in = vega_http_client_response_info(resp);
    x->retry_after = retry_after(in);
    bool keep = true;
    if ((code = check_conditions(x, in, &keep)) != 0) {
        vega_http_client_response_free(resp);
        return code;
    }
    if (!keep) {
        /* The body is ignored and makes no file; the head still goes out with -i, -I and -D,
         * as curl writes heads as they come. */
        if (wants_heads(o))
            code = write_heads(x, in);
        if (!o->head)
            drop_body(x, resp);
        vega_http_client_response_free(resp);
        if (code == 0 && (x->sink.opened || x->sink.is_stdout))
            code = curl_sink_finish(&x->sink, o);
        return code;
    }
    if (o->remote_header_name && spec.remote_name && !o->head) {
        char name[sizeof x->res.filename];
        int got = disposition_name(x, in, name, sizeof name);
        if (got == 1) {
            int n = o->output_dir && *o->output_dir
                        ? snprintf(x->res.filename, sizeof x->res.filename, "%s/%s", o->output_dir,
                                   name)
                        : snprintf(x->res.filename, sizeof x->res.filename, "%s", name);
            if (n < 0 || (size_t)n >= sizeof x->res.filename)
                got = curl_fail_msg(x, CE_WRITE_ERROR, "the output file's path is too long");
            else {
                snprintf(x->sink.path, sizeof x->sink.path, "%s", x->res.filename);
                x->sink.exclusive = true; /* curl opens the server's name with "wx" */
            }
        }
        if (got > 1) {
            vega_http_client_response_free(resp);
            return got;
        }
    }
    if (wants_heads(o) && (code = write_heads(x, in)) != 0) {
        vega_http_client_response_free(resp);
        return code;
    }
    if (o->fail && in->status >= 400 && !o->fail_with_body) {
        /* the body is dropped; a head asked for (-i, -I, -D) is out already, as curl's is */
        vega_http_client_response_free(resp);
        if (x->sink.opened || x->sink.is_stdout)
            curl_sink_finish(&x->sink, o);
        return curl_fail_msg(x, CE_HTTP_RETURNED_ERROR, "The requested URL returned error: %d",
                             x->res.status);
    }
    if (!o->head)
        code = read_body(x, resp, in);
    if (notes(o) && o->quic_migrate && in->version == 30)
        verbose_migration(in);
    vega_http_client_response_free(resp);
    if (code)
        return code;
    if ((code = curl_sink_finish(&x->sink, o)) != 0) {
        x->res.exit_code = code;
        return code;
    }
    if (o->remote_time && to_file && x->last_modified >= 0) {
        /* -R: the file's times are the document's (curl sets both) */
        struct timespec ts[2] = {{.tv_sec = (time_t)x->last_modified},
                                 {.tv_sec = (time_t)x->last_modified}};
        if (utimensat(AT_FDCWD, x->sink.path, ts, 0) < 0 && notes(o))
            info_line("Failed to set filetime %lld on '%s': %s", (long long)x->last_modified,
                      x->sink.path, strerror(errno));
    }
    if (o->fail && x->res.status >= 400)
        return curl_fail_msg(x, CE_HTTP_RETURNED_ERROR, "The requested URL returned error: %d",
                             x->res.status);
    return 0;
}

/* ---- --retry ---------------------------------------------------------------------------- */

#define RETRY_SLEEP_DEFAULT VEGA_NS_PER_S            /* curl's first backoff */
#define RETRY_SLEEP_MAX     (600ull * VEGA_NS_PER_S) /* and its ceiling, 10 minutes */

/* Why curl would try a finished transfer again: 0 = it would not, else the index of its
 * message (as in curl's "Problem %s. Will retry..."). curl's transient failures: a timeout,
 * a name that did not resolve, a refused connection with --retry-connrefused, HTTP 408, 429,
 * 500, 502, 503, 504 (a success or -f's 22); anything with --retry-all-errors. */
enum {
    RETRY_NO,
    RETRY_ALL,
    RETRY_TIMEOUT,
    RETRY_CONNREFUSED,
    RETRY_HTTP
};

static int retry_reason(const struct xfer *x, int code)
{
    const struct curl_opts *o = x->o;
    if (code == CE_OPERATION_TIMEDOUT || code == CE_COULDNT_RESOLVE_HOST ||
        code == CE_COULDNT_RESOLVE_PROXY)
        return RETRY_TIMEOUT;
    if (code == CE_COULDNT_CONNECT && o->retry_connrefused && x->send_err == -ECONNREFUSED)
        return RETRY_CONNREFUSED;
    if (code == CE_OK || code == CE_HTTP_RETURNED_ERROR) {
        switch (x->res.status) {
        case 408:
        case 429:
        case 500:
        case 502:
        case 503:
        case 504:
            return RETRY_HTTP;
        }
    }
    return code != CE_OK && o->retry_all ? RETRY_ALL : RETRY_NO;
}

struct retry {
    long left;
    uint64_t sleep_ns;
    vega_tstamp start;
};

/* Whether to go again after this attempt, and after how long (*delay_ns); warns as curl does. */
static bool should_retry(const struct xfer *x, int code, struct retry *rt, uint64_t *delay_ns)
{
    static const char *const why[] = {"", "(retrying all errors)", ": timeout",
                                      ": connection refused", ": HTTP error"};
    const struct curl_opts *o = x->o;
    int reason = retry_reason(x, code);
    if (reason == RETRY_NO || rt->left <= 0)
        return false;
    uint64_t spent = vega_now() - rt->start;
    if (o->retry_max_ns && spent >= o->retry_max_ns)
        return false;
    uint64_t delay = rt->sleep_ns;
    if (reason == RETRY_HTTP && x->retry_after >= 0) {
        uint64_t ra = (uint64_t)x->retry_after > UINT64_MAX / VEGA_NS_PER_S / 2
                          ? UINT64_MAX / 2
                          : (uint64_t)x->retry_after * VEGA_NS_PER_S;
        if (o->retry_max_ns && spent + ra > o->retry_max_ns) {
            if (!o->silent)
                cli_err(NULL, "Warning: The Retry-After: time would make this command line "
                              "exceed the maximum allowed time for retries.");
            return false;
        }
        if (ra > delay)
            delay = ra;
    }
    if (!o->silent)
        cli_err(NULL, "Warning: Problem %s. Will retry in %llu seconds. %ld retries left.",
                why[reason], (unsigned long long)(delay / VEGA_NS_PER_S), rt->left);
    rt->left--;
    if (!o->retry_delay_set) {
        rt->sleep_ns = rt->sleep_ns > RETRY_SLEEP_MAX / 2 ? RETRY_SLEEP_MAX : rt->sleep_ns * 2;
    }
    *delay_ns = delay;
    return true;
}

/* ---- one URL ------------------------------------------------------------------------------ */

/* One attempt at URL idx (x fresh, buf its read buffer, freed with it): its exit code, x's
 * result for --write-out and the retry decision. */
static int transfer_once(struct curl_ctx *cx, size_t idx, struct xfer *x, uint8_t *buf)
{
    const struct curl_opts *o = cx->o;
    x->o = o;
    x->buf = buf;
    x->up.fd = -1;
    x->sink.is_stdout = true;
    x->trace.max = TRACE_MAX;
    x->heads.max = HEADS_MAX;
    x->res.t_begin = vega_now();
    x->res.method = "GET";
    snprintf(x->res.url, sizeof(x->res.url), "%s", o->urls[idx]);
    x->retry_after = -1;
    x->last_modified = -1;
    if (o->max_time_ns)
        x->dl = vega_deadline_in_ns(o->max_time_ns);
    int code = run(x, cx, idx);
    x->res.t_end = vega_now();
    if (code) {
        x->res.exit_code = code;
        curl_sink_abort(&x->sink);
    }
    curl_upload_close(&x->up);
    if (x->etag_fp && x->etag_fp != stdout)
        fclose(x->etag_fp);
    x->etag_fp = NULL;
    return code;
}

int curl_transfer(struct curl_ctx *cx, size_t idx)
{
    const struct curl_opts *o = cx->o;
    struct retry rt = {.left = o->retry,
                       .sleep_ns = o->retry_delay_set ? o->retry_delay_ns : RETRY_SLEEP_DEFAULT,
                       .start = vega_now()};
    for (long n = 0;; n++) {
        struct xfer *x = calloc(1, sizeof(*x));
        uint8_t *buf = malloc(READ_BUF);
        if (!x || !buf) {
            free(x);
            free(buf);
            return curl_fail(o, CE_OUT_OF_MEMORY, "out of memory");
        }
        x->attempt = n;
        int code = transfer_once(cx, idx, x, buf);
        uint64_t delay = 0;
        bool again = should_retry(x, code, &rt, &delay);
        if (!again && o->write_out)
            curl_write_out(o, &x->res);
        if (again && !x->sink.is_stdout && x->sink.path[0] && x->res.size_download) {
            /* what the failed attempt wrote goes, as curl cuts the file back */
            if (!o->silent)
                cli_err(NULL, "Throwing away %llu bytes", (unsigned long long)x->res.size_download);
            (void)truncate(x->sink.path, x->sink.append ? (off_t)x->sink.append_at : 0);
        }
        tbuf_free(&x->trace);
        tbuf_free(&x->heads);
        free(x->buf);
        free(x);
        if (!again)
            return code;
        if (delay)
            (void)vega_sleep_ns(delay);
    }
}
