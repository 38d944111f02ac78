/* SPDX-License-Identifier: MIT */
/* The HTTP/2 request (RFC 9113 §8.3.1 pseudo-header fields, §8.2.1 lowercase names, §8.2.2 no
 * connection-specific fields), built once per run and checked by the HTTP/2 core itself; every
 * connection's core encodes it on each stream with HPACK (RFC 7541). The session is h2.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

void load_h2_opts_free(struct load_opts *o)
{
    if (!o->h2_req)
        return;
    free(o->h2_req->fields);
    free(o->h2_req->names);
    free(o->h2_req);
    o->h2_req = NULL;
}

/* Submits the request on a fresh client core: it checks every field as each connection's core
 * will (-EINVAL for a malformed request). */
static int h2_trial(const struct load_h2_req *q, char *err, size_t ecap)
{
    static const vega_h2_callbacks none;
    vega_h2_conn *h;
    int e = vega_h2_conn_client_new(&h, &none, NULL, NULL);
    if (e == 0) {
        int32_t sid;
        e = vega_h2_submit_request(h, q->fields, q->nfields, VEGA_H2_FLAG_END_STREAM, NULL, &sid);
        vega_h2_conn_free(h);
    }
    if (e == -ENOMEM) {
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    if (e < 0) {
        snprintf(err, ecap,
                 "invalid HTTP/2 request: check --method (a token such as GET), the URL's path, "
                 "and -H (valid values; no connection-specific fields such as Connection, "
                 "Keep-Alive, Proxy-Connection, Transfer-Encoding or Upgrade; TE only "
                 "'trailers')");
        return -EINVAL;
    }
    return 0;
}

/* RFC 9110 §5.6.2: tchar. */
static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool alnum =
            (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
        if (!alnum && !strchr("!#$%&'*+-.^_`|~", ch))
            return false;
    }
    return true;
}

int load_h2_build(struct load_opts *o, char *err, size_t ecap)
{
    const char *method = load_req_method(o);
    if (!is_token(method)) { /* §9.1: a method is a token */
        snprintf(err, ecap, "--method: '%s' is not a method name (a token such as GET)", method);
        return -EINVAL;
    }
    if (load_req_check_framing(o, "HTTP/2", err, ecap) < 0)
        return -EINVAL;
    struct load_h2_req *q = calloc(1, sizeof(*q));
    if (q) {
        q->fields = calloc(o->nheaders + 5u, sizeof(*q->fields));
        q->names = malloc(load_req_names_size(o));
    }
    o->h2_req = q;
    if (!q || !q->fields || !q->names) {
        load_h2_opts_free(o);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    /* §8.3.1: :authority from -H Host when given (a client that generates HTTP/2 requests
     * directly uses :authority, not Host), else the URL's. The request is the same on every
     * stream, so :path and :authority are indexed (RFC 7541 §6.2.1): after the first request
     * a connection sends them as one byte each. */
    vega_http_str auth = load_req_authority(o);
    vega_hpack_field *f = q->fields;
    size_t n = 0;
    f[n++] = (vega_hpack_field){{":method", 7}, {method, strlen(method)}, VEGA_HPACK_INDEX_AUTO};
    f[n++] = (vega_hpack_field){
        {":scheme", 7}, {o->tls ? "https" : "http", o->tls ? 5u : 4u}, VEGA_HPACK_INDEX_AUTO};
    f[n++] = (vega_hpack_field){{":authority", 10}, auth, VEGA_HPACK_INDEX_YES};
    f[n++] = (vega_hpack_field){
        {":path", 5}, {load_req_path(o), strlen(load_req_path(o))}, VEGA_HPACK_INDEX_YES};
    char *names = q->names;
    for (unsigned i = 0; i < o->nheaders; i++) {
        const struct load_header *h = &o->headers[i];
        const char *nm = load_req_lower_name(h, &names);
        if (!nm)
            continue;
        /* AUTO: the encoder keeps secrets (authorization, cookies) out of the table. */
        f[n++] =
            (vega_hpack_field){{nm, h->name_len}, {h->value, h->value_len}, VEGA_HPACK_INDEX_AUTO};
    }
    if (load_req_content_length(o, method, q->cl)) {
        f[n++] = (vega_hpack_field){
            {"content-length", 14}, {q->cl, strlen(q->cl)}, VEGA_HPACK_INDEX_YES};
    }
    q->nfields = n;
    for (size_t i = 0; i < n; i++)
        q->decoded_bytes += f[i].name.len + f[i].value.len;
    int e = h2_trial(q, err, ecap);
    if (e < 0)
        load_h2_opts_free(o);
    return e;
}
