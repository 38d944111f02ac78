/* SPDX-License-Identifier: MIT */
/* Streaming HTTP/1.1 message parser (RFC 9112 §2-§7): start line, field sections, framing
 * (§6.3), chunked coding with trailers (§7.1); strict about everything that enables request
 * smuggling. Lines are handed out zero-copy when whole in the input, else from a bounded
 * buffer; bodies are always zero-copy. */
#include <vega/http1.h>

#include "base.h"
#include "http1_int.h"

enum {
    ST_START,
    ST_HEADERS,
    ST_BODY_LENGTH,
    ST_BODY_CLOSE,
    ST_CHUNK_SIZE,
    ST_CHUNK_DATA,
    ST_CHUNK_CR,
    ST_CHUNK_LF,
    ST_TRAILERS,
    ST_UPGRADED,
    ST_ERROR
};

static int fail(vega_http1_parser *p, vega_http1_error e, int ret)
{
    p->state = ST_ERROR;
    p->error = e;
    p->ret = ret;
    return ret;
}

static int proto(vega_http1_parser *p, vega_http1_error e)
{
    return fail(p, e, VEGA_ERR_PROTO);
}

/* A character failed validation: a CR there is always a bare CR (lines end at LF). */
static int bad_char(vega_http1_parser *p, uint8_t c, vega_http1_error e)
{
    return proto(p, c == '\r' ? VEGA_HTTP1_E_BARE_CR : e);
}

#define EMIT(p, name, args)                                                                        \
    do {                                                                                           \
        if ((p)->cb->name && (p)->cb->name args != 0)                                              \
            return fail((p), VEGA_HTTP1_E_CALLBACK, VEGA_ERR_CALLBACK);                            \
    } while (0)

static vega_http1_span span(const char *s, size_t n)
{
    return (vega_http1_span){s, n};
}

int vega_http1_parser_init(vega_http1_parser *p, vega_http1_kind kind, const vega_http1_limits *lim,
                           const vega_http1_callbacks *cb, void *user_data)
{
    if (!p || !cb || (kind != VEGA_HTTP1_REQUEST && kind != VEGA_HTTP1_RESPONSE))
        return -EINVAL;
    vega_http1_limits l = lim ? *lim : (vega_http1_limits){0};
    l.max_start_line = l.max_start_line ? l.max_start_line : 8192;
    l.max_field_line = l.max_field_line ? l.max_field_line : 8192;
    l.max_field_section = l.max_field_section ? l.max_field_section : 65536;
    l.max_fields = l.max_fields ? l.max_fields : 100;
    if (l.max_start_line > VEGA_HTTP1_LINE_BUF || l.max_field_line > VEGA_HTTP1_LINE_BUF ||
        l.max_start_line < 2 || l.max_field_line < 2)
        return -EINVAL;
    memset(p, 0, offsetof(vega_http1_parser, buf));
    p->cb = cb;
    p->user_data = user_data;
    p->lim = l;
    p->kind = kind;
    p->state = ST_START;
    return 0;
}

/* Finds the next CRLF-terminated line of at most limit bytes (CRLF included). Returns 1 with
 * the line in line and n (CRLF excluded), 0 when the input ran out (the partial line is
 * buffered), or an error. RFC 9112 §2.2: bare LF line endings are rejected, not tolerated. */
static int take_line(vega_http1_parser *p, const uint8_t *in, size_t len, size_t *pos, size_t limit,
                     vega_http1_error too_long, const char **line, size_t *n)
{
    const uint8_t *s = in + *pos;
    /* A partial line is buffered only while it stays below limit, and limit only changes with
     * the state, after a whole line: buf_len < limit here. */
    VEGA_ASSERT(*pos < len && p->buf_len < limit);
    size_t avail = len - *pos, room = vega__room(p->buf_len, limit);
    const uint8_t *lf = memchr(s, '\n', avail < room ? avail : room);
    if (!lf) {
        if (avail >= room)
            return proto(p, too_long);
        memcpy(p->buf + p->buf_len, s, avail);
        p->buf_len += avail;
        *pos = len;
        return 0;
    }
    size_t k = (size_t)(lf - s) + 1;
    *pos += k;
    if (p->buf_len) {
        memcpy(p->buf + p->buf_len, s, k);
        *line = (const char *)p->buf;
        *n = p->buf_len + k;
        p->buf_len = 0;
    } else {
        *line = (const char *)s;
        *n = k;
    }
    if (*n < 2 || (*line)[*n - 2] != '\r')
        return proto(p, VEGA_HTTP1_E_BARE_LF);
    *n -= 2;
    return 1;
}

/* HTTP-version = "HTTP/" DIGIT "." DIGIT (§2.3); only major 1. */
static int parse_version(vega_http1_parser *p, const char *s, size_t n)
{
    if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || s[5] < '0' || s[5] > '9' || s[6] != '.' ||
        s[7] < '0' || s[7] > '9') {
        for (size_t i = 0; i < n; i++)
            if (s[i] == '\r')
                return proto(p, VEGA_HTTP1_E_BARE_CR);
        return proto(p, VEGA_HTTP1_E_START_LINE);
    }
    if (s[5] != '1')
        return proto(p, VEGA_HTTP1_E_VERSION);
    p->m.version = s[7] == '0' ? 10 : 11;
    return 0;
}

/* request-line = method SP request-target SP HTTP-version (§3); single spaces only. */
static int parse_request_line(vega_http1_parser *p, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && vega__http1_is_tchar((uint8_t)s[i]))
        i++;
    if (i == 0 || i >= n || s[i] != ' ')
        return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_START_LINE);
    vega_http1_span method = span(s, i);
    size_t t0 = ++i;
    while (i < n && (uint8_t)s[i] > 0x20 && (uint8_t)s[i] < 0x7f)
        i++;
    if (i == t0 || i >= n || s[i] != ' ')
        return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_START_LINE);
    vega_http1_span target = span(s + t0, i - t0);
    int rc = parse_version(p, s + i + 1, n - i - 1);
    if (rc)
        return rc;
    p->m.is_connect = method.len == 7 && memcmp(method.ptr, "CONNECT", 7) == 0;
    EMIT(p, on_request_line, (p->user_data, method, target, p->m.version));
    return 0;
}

/* status-line = HTTP-version SP status-code SP [ reason-phrase ] (§4); a missing SP after an
 * empty reason is tolerated. */
static int parse_status_line(vega_http1_parser *p, const char *s, size_t n)
{
    int rc = parse_version(p, s, n < 8 ? n : 8);
    if (rc)
        return rc;
    if (n < 12 || s[8] != ' ' || s[9] < '1' || s[9] > '9' || s[10] < '0' || s[10] > '9' ||
        s[11] < '0' || s[11] > '9' || (n > 12 && s[12] != ' ')) {
        for (size_t i = 8; i < n && i < 13; i++)
            if (s[i] == '\r')
                return proto(p, VEGA_HTTP1_E_BARE_CR);
        return proto(p, VEGA_HTTP1_E_START_LINE);
    }
    p->m.status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    size_t r0 = n > 12 ? 13 : 12;
    for (size_t i = r0; i < n; i++)
        if (!vega__http1_is_field_char((uint8_t)s[i]))
            return bad_char(p, (uint8_t)s[i], VEGA_HTTP1_E_START_LINE);
    EMIT(p, on_status, (p->user_data, p->m.version, p->m.status, span(s + r0, n - r0)));
    return 0;
}

/* Splits a #list element off [*s, end): trims OWS, skips empty elements. False at the end. */
static bool list_next(const char **s, const char *end, const char **e, size_t *n)
{
    for (;;) {
        while (*s < end && (**s == ' ' || **s == '\t' || **s == ','))
            (*s)++;
        if (*s >= end)
            return false;
        const char *b = *s;
        while (*s < end && **s != ',')
            (*s)++;
        const char *t = *s;
        while (t > b && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        *e = b;
        *n = (size_t)(t - b);
        return true;
    }
}

/* Content-Length = 1*DIGIT (RFC 9110 §8.6). No sign, no list: "1, 2" and "+1" are errors.
 * Repeated field lines with the identical value are accepted as one. */
static int content_length(vega_http1_parser *p, const char *v, size_t n)
{
    uint64_t x = 0;
    if (n == 0)
        return proto(p, VEGA_HTTP1_E_CONTENT_LENGTH);
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
            return proto(p, VEGA_HTTP1_E_CONTENT_LENGTH);
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (p->m.cl_seen && p->m.cl != x)
        return proto(p, VEGA_HTTP1_E_CONTENT_LENGTH);
    p->m.cl_seen = true;
    p->m.cl = x;
    return 0;
}

/* Transfer-Encoding (RFC 9112 §6.1): chunked must be the final coding and appear once. */
static int transfer_encoding(vega_http1_parser *p, const char *v, size_t n)
{
    const char *s = v, *e;
    size_t k;
    bool any = false;
    while (list_next(&s, v + n, &e, &k)) {
        for (size_t i = 0; i < k; i++)
            if (!vega__http1_is_tchar((uint8_t)e[i]))
                return proto(p, VEGA_HTTP1_E_TRANSFER_ENCODING);
        if (p->m.te_chunked)
            p->m.te_bad = true; /* something after chunked */
        p->m.te_chunked = vega__http1_ieq(e, k, "chunked");
        any = true;
    }
    if (!any)
        return proto(p, VEGA_HTTP1_E_TRANSFER_ENCODING);
    p->m.te_seen = true;
    return 0;
}

static void connection(vega_http1_parser *p, const char *v, size_t n)
{
    const char *s = v, *e;
    size_t k;
    while (list_next(&s, v + n, &e, &k)) {
        if (vega__http1_ieq(e, k, "close"))
            p->m.conn_close = true;
        else if (vega__http1_ieq(e, k, "keep-alive"))
            p->m.conn_keep = true;
    }
}

/* field-line = field-name ":" OWS field-value OWS (§5). */
static int parse_field(vega_http1_parser *p, const char *s, size_t n, bool trailer)
{
    if (s[0] == ' ' || s[0] == '\t') /* §5.2: obs-fold is rejected, as is leading space */
        return proto(p, VEGA_HTTP1_E_OBS_FOLD);
    if (++p->m.fields > p->lim.max_fields)
        return proto(p, VEGA_HTTP1_E_TOO_MANY_FIELDS);
    p->m.section += n + 2;
    if (p->m.section > p->lim.max_field_section)
        return proto(p, VEGA_HTTP1_E_SECTION_TOO_LARGE);
    size_t i = 0;
    while (i < n && vega__http1_is_tchar((uint8_t)s[i]))
        i++;
    /* §5.1: "No whitespace is allowed between the field name and colon." */
    if (i == 0 || i >= n || s[i] != ':')
        return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_FIELD_NAME);
    vega_http1_span name = span(s, i);
    i++;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t v0 = i, v1 = i;
    for (; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (!vega__http1_is_field_char(c))
            return bad_char(p, c, VEGA_HTTP1_E_FIELD_VALUE);
        if (c != ' ' && c != '\t')
            v1 = i + 1;
    }
    vega_http1_span value = span(s + v0, v1 - v0);
    if (trailer) {
        EMIT(p, on_trailer, (p->user_data, name, value));
        return 0;
    }
    int rc = 0;
    if (vega__http1_ieq(name.ptr, name.len, "content-length"))
        rc = content_length(p, value.ptr, value.len);
    else if (vega__http1_ieq(name.ptr, name.len, "transfer-encoding"))
        rc = transfer_encoding(p, value.ptr, value.len);
    else if (vega__http1_ieq(name.ptr, name.len, "connection"))
        connection(p, value.ptr, value.len);
    else if (vega__http1_ieq(name.ptr, name.len, "host"))
        p->m.host_count++;
    if (rc)
        return rc;
    EMIT(p, on_header, (p->user_data, name, value));
    return 0;
}

static int complete(vega_http1_parser *p)
{
    bool upgrade = (p->kind == VEGA_HTTP1_RESPONSE && p->m.status == 101) ||
                   (p->kind == VEGA_HTTP1_REQUEST && p->m.is_connect);
    if (p->kind == VEGA_HTTP1_RESPONSE && p->m.status >= 200)
        p->head_response = false;
    memset(&p->m, 0, sizeof p->m);
    p->state = upgrade ? ST_UPGRADED : ST_START;
    EMIT(p, on_message_complete, (p->user_data));
    return 0;
}

/* Message body length, RFC 9112 §6.3. */
static int headers_done(vega_http1_parser *p)
{
    vega_http1_head h = {.version = p->m.version, .status = p->m.status};
    /* §6.3 (3): "a server MAY reject a request that contains both Content-Length and
     * Transfer-Encoding" - we always do, in both directions. */
    if (p->m.te_seen && p->m.cl_seen)
        return proto(p, VEGA_HTTP1_E_CL_AND_TE);
    bool te_ok = p->m.te_chunked && !p->m.te_bad;
    if (p->kind == VEGA_HTTP1_REQUEST) {
        /* §6.1: TE in HTTP/1.0 means faulty framing; §6.3 (4): not-final chunked is 400. */
        if (p->m.te_seen && (!te_ok || p->m.version == 10))
            return proto(p, VEGA_HTTP1_E_TRANSFER_ENCODING);
        /* §3.2: 400 for an HTTP/1.1 request lacking Host or with more than one. */
        if (p->m.host_count > 1 || (p->m.version >= 11 && p->m.host_count != 1))
            return proto(p, VEGA_HTTP1_E_HOST);
        h.framing = p->m.te_seen   ? VEGA_HTTP1_BODY_CHUNKED
                    : p->m.cl_seen ? VEGA_HTTP1_BODY_LENGTH
                                   : VEGA_HTTP1_BODY_NONE;
        h.upgrade = p->m.is_connect;
    } else {
        int st = p->m.status;
        if (st < 200 || st == 204 || st == 304 || p->head_response)
            h.framing = VEGA_HTTP1_BODY_NONE;
        else if (p->m.te_seen)
            h.framing = te_ok ? VEGA_HTTP1_BODY_CHUNKED : VEGA_HTTP1_BODY_CLOSE;
        else
            h.framing = p->m.cl_seen ? VEGA_HTTP1_BODY_LENGTH : VEGA_HTTP1_BODY_CLOSE;
        h.upgrade = st == 101;
    }
    if (h.framing == VEGA_HTTP1_BODY_LENGTH)
        h.content_length = p->m.cl;
    h.keep_alive = p->m.version >= 11 ? !p->m.conn_close : p->m.conn_keep && !p->m.conn_close;
    if (h.framing == VEGA_HTTP1_BODY_CLOSE || h.upgrade)
        h.keep_alive = false;
    EMIT(p, on_headers_complete, (p->user_data, &h));
    switch (h.framing) {
    case VEGA_HTTP1_BODY_CHUNKED:
        p->state = ST_CHUNK_SIZE;
        return 0;
    case VEGA_HTTP1_BODY_CLOSE:
        p->state = ST_BODY_CLOSE;
        return 0;
    case VEGA_HTTP1_BODY_LENGTH:
        if (h.content_length) {
            p->remaining = h.content_length;
            p->state = ST_BODY_LENGTH;
            return 0;
        }
        return complete(p);
    default:
        return complete(p);
    }
}

/* chunk-size [ chunk-ext ] CRLF (§7.1, §7.1.1):
 * chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ), ext-val = token /
 * quoted-string. Extensions are validated and ignored. */
static int parse_chunk_line(vega_http1_parser *p, const char *s, size_t n)
{
    size_t i = 0;
    uint64_t x = 0;
    for (; i < n; i++) {
        uint8_t c = (uint8_t)s[i], d;
        if (c >= '0' && c <= '9')
            d = (uint8_t)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (uint8_t)((c | 0x20) - 'a' + 10);
        else
            break;
        if (x >> 60)
            return proto(p, VEGA_HTTP1_E_CHUNK_SIZE);
        x = x << 4 | d;
    }
    if (i == 0)
        return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_CHUNK_SIZE);
#define BWS()                                                                                      \
    while (i < n && (s[i] == ' ' || s[i] == '\t'))                                                 \
    i++
    bool ext = false;
    for (;;) {
        /* BWS is allowed only around ";" and "=": "5 \r\n" or "5;a=b \r\n" are refused, as a
         * strict front proxy would refuse them, so that the two cannot disagree on framing. */
        size_t ws = i;
        BWS();
        if (i == n) {
            if (i > ws)
                return bad_char(p, (uint8_t)s[ws],
                                ext ? VEGA_HTTP1_E_CHUNK_EXT : VEGA_HTTP1_E_CHUNK_SIZE);
            break;
        }
        if (s[i] != ';')
            return bad_char(p, (uint8_t)s[i], VEGA_HTTP1_E_CHUNK_EXT);
        i++;
        ext = true;
        BWS();
        size_t k = i;
        while (i < n && vega__http1_is_tchar((uint8_t)s[i]))
            i++;
        if (i == k)
            return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_CHUNK_EXT);
        ws = i;
        BWS();
        if (i == n || s[i] != '=') {
            i = ws; /* the loop's head judges the whitespace */
            continue;
        }
        i++;
        BWS();
        if (i < n && s[i] == '"') { /* quoted-string, with quoted-pair */
            for (i++;; i++) {
                if (i >= n)
                    return proto(p, VEGA_HTTP1_E_CHUNK_EXT);
                uint8_t c = (uint8_t)s[i];
                if (c == '"')
                    break;
                if (c == '\\' && ++i >= n)
                    return proto(p, VEGA_HTTP1_E_CHUNK_EXT);
                if (!vega__http1_is_field_char((uint8_t)s[i]))
                    return bad_char(p, (uint8_t)s[i], VEGA_HTTP1_E_CHUNK_EXT);
            }
            i++;
        } else {
            k = i;
            while (i < n && vega__http1_is_tchar((uint8_t)s[i]))
                i++;
            if (i == k)
                return bad_char(p, i < n ? (uint8_t)s[i] : 0, VEGA_HTTP1_E_CHUNK_EXT);
        }
    }
#undef BWS
    if (x == 0) {
        p->state = ST_TRAILERS;
        p->m.fields = p->m.section = 0;
        return 0;
    }
    p->remaining = x;
    p->state = ST_CHUNK_DATA;
    return 0;
}

static int on_line(vega_http1_parser *p, const char *s, size_t n)
{
    switch (p->state) {
    case ST_START: {
        int rc = p->kind == VEGA_HTTP1_REQUEST ? parse_request_line(p, s, n)
                                               : parse_status_line(p, s, n);
        if (rc == 0)
            p->state = ST_HEADERS;
        return rc;
    }
    case ST_HEADERS:
        return n == 0 ? headers_done(p) : parse_field(p, s, n, false);
    case ST_TRAILERS:
        return n == 0 ? complete(p) : parse_field(p, s, n, true);
    default:
        return parse_chunk_line(p, s, n);
    }
}

static int body(vega_http1_parser *p, const uint8_t *in, size_t len, size_t *pos)
{
    size_t k = len - *pos;
    if (p->state != ST_BODY_CLOSE && k > p->remaining)
        k = (size_t)p->remaining;
    vega_http1_span d = span((const char *)in + *pos, k);
    *pos += k;
    if (p->state != ST_BODY_CLOSE)
        p->remaining -= k;
    EMIT(p, on_body, (p->user_data, d));
    if (p->state == ST_BODY_CLOSE || p->remaining)
        return 0;
    if (p->state == ST_CHUNK_DATA) {
        p->state = ST_CHUNK_CR;
        return 0;
    }
    return complete(p);
}

int vega_http1_parser_read(vega_http1_parser *p, const uint8_t *in, size_t len, size_t *consumed)
{
    size_t pos = 0;
    int rc = 0;
    if (p->state == ST_ERROR) {
        *consumed = 0;
        return p->ret;
    }
    while (pos < len && rc == 0 && p->state != ST_UPGRADED) {
        const char *line = NULL;
        size_t n = 0;
        switch (p->state) {
        case ST_START:
            rc = take_line(p, in, len, &pos, p->lim.max_start_line,
                           VEGA_HTTP1_E_START_LINE_TOO_LONG, &line, &n);
            break;
        case ST_HEADERS:
        case ST_TRAILERS:
            rc = take_line(p, in, len, &pos, p->lim.max_field_line,
                           VEGA_HTTP1_E_FIELD_LINE_TOO_LONG, &line, &n);
            break;
        case ST_CHUNK_SIZE:
            rc = take_line(p, in, len, &pos, p->lim.max_field_line,
                           VEGA_HTTP1_E_CHUNK_LINE_TOO_LONG, &line, &n);
            break;
        case ST_CHUNK_CR:
        case ST_CHUNK_LF: {
            uint8_t want = p->state == ST_CHUNK_CR ? '\r' : '\n';
            if (in[pos] != want)
                rc = proto(p, VEGA_HTTP1_E_CHUNK_DATA);
            else
                pos++, p->state = p->state == ST_CHUNK_CR ? ST_CHUNK_LF : ST_CHUNK_SIZE;
            continue;
        }
        default:
            rc = body(p, in, len, &pos);
            continue;
        }
        if (rc == 1)
            rc = on_line(p, line, n);
    }
    *consumed = pos;
    return rc < 0 ? rc : 0;
}

int vega_http1_parser_finish(vega_http1_parser *p)
{
    if (p->state == ST_ERROR)
        return p->ret;
    if (p->state == ST_BODY_CLOSE)
        return complete(p);
    if (p->state == ST_UPGRADED || (p->state == ST_START && p->buf_len == 0))
        return 0;
    return proto(p, VEGA_HTTP1_E_TRUNCATED);
}

void vega_http1_parser_set_head(vega_http1_parser *p, bool head)
{
    p->head_response = head;
}

vega_http1_error vega_http1_parser_get_error(const vega_http1_parser *p)
{
    return p->error;
}

bool vega_http1_parser_is_upgraded(const vega_http1_parser *p)
{
    return p->state == ST_UPGRADED;
}

const char *vega_http1_error_name(vega_http1_error e)
{
    static const char *const names[] = {
        "VEGA_HTTP1_E_NONE",
        "VEGA_HTTP1_E_START_LINE",
        "VEGA_HTTP1_E_VERSION",
        "VEGA_HTTP1_E_FIELD_NAME",
        "VEGA_HTTP1_E_FIELD_VALUE",
        "VEGA_HTTP1_E_OBS_FOLD",
        "VEGA_HTTP1_E_BARE_CR",
        "VEGA_HTTP1_E_BARE_LF",
        "VEGA_HTTP1_E_CONTENT_LENGTH",
        "VEGA_HTTP1_E_TRANSFER_ENCODING",
        "VEGA_HTTP1_E_CL_AND_TE",
        "VEGA_HTTP1_E_HOST",
        "VEGA_HTTP1_E_CHUNK_SIZE",
        "VEGA_HTTP1_E_CHUNK_EXT",
        "VEGA_HTTP1_E_CHUNK_DATA",
        "VEGA_HTTP1_E_START_LINE_TOO_LONG",
        "VEGA_HTTP1_E_FIELD_LINE_TOO_LONG",
        "VEGA_HTTP1_E_CHUNK_LINE_TOO_LONG",
        "VEGA_HTTP1_E_SECTION_TOO_LARGE",
        "VEGA_HTTP1_E_TOO_MANY_FIELDS",
        "VEGA_HTTP1_E_TRUNCATED",
        "VEGA_HTTP1_E_CALLBACK",
    };
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "unknown";
}
