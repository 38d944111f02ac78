/* SPDX-License-Identifier: MIT */
/* A request's header section as HTTP/2 and HTTP/3 send it alike: the pseudo-header fields
 * (RFC 9113 §8.3.1, RFC 9114 §4.3.1; an extended CONNECT's, RFC 8441 §4, RFC 9220 §3), and the
 * regular fields lowercased, without the connection-specific ones (RFC 9113 §8.2.2, RFC 9114
 * §4.2); and the pieces of a body that body_fn or a file gives. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "client_int.h"

bool vega__hc_field_is(const vega_http_field *f, const char *lname)
{
    size_t n = strlen(lname);
    if (f->name.len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)f->name.ptr[i]) != lname[i])
            return false;
    return true;
}

const vega_http_field *vega__hc_user_field(const vega_http_client_request *req, const char *lname)
{
    for (size_t i = 0; i < req->nfields; i++)
        if (vega__hc_field_is(&req->fields[i], lname))
            return &req->fields[i];
    return NULL;
}

/* Connection-specific fields are malformed (RFC 9113 §8.2.2, RFC 9114 §4.2); Host becomes
 * :authority (§8.3.1, §4.3.1); the framing is the client's; TE only as "trailers". */
static bool dropped(const vega_http_field *f)
{
    static const char *const names[] = {"connection",        "keep-alive", "proxy-connection",
                                        "transfer-encoding", "upgrade",    "host",
                                        "content-length",    "expect"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (vega__hc_field_is(f, names[i]))
            return true;
    return vega__hc_field_is(f, "te") &&
           !(f->value.len == 8 && !strncasecmp(f->value.ptr, "trailers", 8));
}

void vega__hc_mux_pseudo(const struct hc_req *rq, bool ws, struct hc_mux_pseudo *p)
{
    /* RFC 8441 §4, RFC 9220 §3: a WebSocket is an extended CONNECT -- ":method" CONNECT,
     * ":protocol" websocket, and (unlike a plain CONNECT) ":scheme" and ":path" of the target */
    const char *method = ws ? "CONNECT" : rq->method;
    const char *scheme = rq->key.tls ? "https" : "http";
    *p = (struct hc_mux_pseudo){
        .method = {method, strlen(method)},
        .scheme = {scheme, strlen(scheme)},
        .authority = {rq->authority, strlen(rq->authority)},
        .path = {rq->target, strlen(rq->target)},
        .protocol = ws ? (vega_http_str){"websocket", 9} : (vega_http_str){NULL, 0},
    };
    const vega_http_field *host = vega__hc_user_field(rq->req, "host");
    if (host && host->value.ptr && host->value.len)
        p->authority = (vega_http_str){host->value.ptr, host->value.len};
}

char *vega__hc_mux_names_new(vega_http_client *c, const vega_http_client_request *req)
{
    size_t names = 0;
    for (size_t i = 0; i < req->nfields; i++)
        names += req->fields[i].name.len;
    return vega__mem_malloc(c->o.mem, names + 1);
}

void vega__hc_mux_fields(vega_http_client *c, const struct hc_req *rq, bool ws, char *names,
                         char cl[HC_MUX_CL], hc_mux_add_fn *add, void *u)
{
    const vega_http_client_request *req = rq->req;
    if (c->user_agent[0] && !vega__hc_user_field(req, "user-agent"))
        add(u, "user-agent", 10, c->user_agent, strlen(c->user_agent));
    if (!ws && !vega__hc_user_field(req, "accept"))
        add(u, "accept", 6, "*/*", 3);
    if (req->decompress && !vega__hc_user_field(req, "accept-encoding"))
        add(u, "accept-encoding", 15, "br, zstd, gzip, deflate", 23);
    size_t used = 0;
    for (size_t i = 0; i < req->nfields; i++) {
        const vega_http_field *uf = &req->fields[i];
        if (!uf->value.ptr || dropped(uf))
            continue;
        /* RFC 8441 §5: "Sec-WebSocket-Key and Sec-WebSocket-Accept header fields are not used"
         * (an HTTP/1.1 WebSocket request that ALPN sent over HTTP/2 carries one) */
        if (ws && vega__hc_field_is(uf, "sec-websocket-key"))
            continue;
        char *nm = names + used;
        for (size_t k = 0; k < uf->name.len; k++)
            nm[k] = (char)tolower((unsigned char)uf->name.ptr[k]);
        used += uf->name.len;
        add(u, nm, uf->name.len, uf->value.ptr, uf->value.len);
    }
    bool known = req->body || req->body_file || (req->body_fn && !rq->chunked);
    if (known || (!rq->has_body && (!strcmp(rq->method, "POST") || !strcmp(rq->method, "PUT") ||
                                    !strcmp(rq->method, "PATCH")))) {
        uint64_t len = req->body                          ? req->body_len
                       : (req->body_fn || req->body_file) ? req->body_length
                                                          : 0;
        int n = snprintf(cl, HC_MUX_CL, "%llu", (unsigned long long)len);
        add(u, "content-length", 14, cl, (size_t)n);
    }
}

vega_ssize vega__hc_body_piece(const struct hc_req *rq, uint8_t *buf, size_t want, uint64_t *off,
                               bool *used)
{
    const vega_http_client_request *req = rq->req;
    vega_ssize n;
    if (req->body_fn) {
        *used = true;
        n = req->body_fn(req->body_user, buf, want);
        if (n >= 0 && ((size_t)n > want || (n == 0 && !rq->chunked)))
            n = VEGA_ERR_CALLBACK; /* more than asked, or shorter than body_length */
    } else {
        n = pread(req->body_fd, buf, want, (off_t)*off);
        if (n < 0)
            n = -errno;
        else if (n == 0)
            n = -ENODATA; /* the file ended before body_length */
        *off += (uint64_t)(n > 0 ? n : 0);
    }
    return n;
}
