/* SPDX-License-Identifier: MIT */
/* HTTP/3 (RFC 9114) set up once per run: the request (§4.3.1 pseudo-header fields, §4.2
 * lowercase names) checked and sized with the HTTP/3 core, the QUIC endpoint every connection is
 * made on with its trust store (RFC 9001 §4.4: -k skips verification), and why handshakes
 * failed. The session itself is h3.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_ep.h>

#include "load.h"

/* At the end the endpoint gives its connections this long to send their CONNECTION_CLOSE. */
#define CLOSE_GRACE_MS 100

/* ---- the request ----------------------------------------------------------------------------- */

void load_h3_opts_free(struct load_opts *o)
{
    if (!o->h3_req)
        return;
    free(o->h3_req->fields);
    free(o->h3_req->names);
    free(o->h3_req);
    o->h3_req = NULL;
}

/* Encodes the request once with a fresh core, which checks every field as each connection's
 * core will, and finds the room a HEADERS frame needs: the core asks for room for its worst case
 * (whatever the QPACK table holds), more than the frame takes, and says VEGA_ERR_NOBUF without
 * changing anything when there is less. */
static int h3_trial(struct load_h3_req *q, char *err, size_t ecap)
{
    static const vega_h3_callbacks none;
    vega_h3_conn *h;
    uint8_t *buf = malloc(LOAD_MAX_HEAD);
    int e = buf ? vega_h3_conn_client_new(&h, &none, NULL, NULL) : -ENOMEM;
    if (e < 0) {
        free(buf);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    vega_ssize n = VEGA_ERR_NOBUF;
    size_t cap = 256;
    for (; n == VEGA_ERR_NOBUF && cap <= LOAD_MAX_HEAD; cap *= 2)
        n = vega_h3_conn_write_request_head(h, 0, &q->rq, q->fields, q->nfields, buf, cap);
    vega_h3_conn_free(h);
    free(buf);
    if (n == -ENOMEM) {
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    if (n == VEGA_ERR_NOBUF) {
        snprintf(err, ecap, "the request head is over %u KiB", LOAD_MAX_HEAD >> 10);
        return -EINVAL;
    }
    if (n < 0) {
        snprintf(err, ecap,
                 "invalid HTTP/3 request: check --method (a token such as GET), the URL's path, "
                 "and -H (valid values; no connection-specific fields such as Connection, "
                 "Keep-Alive, Proxy-Connection, Transfer-Encoding or Upgrade; TE only "
                 "'trailers')");
        return -EINVAL;
    }
    q->head_cap = cap / 2;
    return 0;
}

int load_h3_build(struct load_opts *o, char *err, size_t ecap)
{
    const char *method = load_req_method(o);
    if (load_req_check_framing(o, "HTTP/3", err, ecap) < 0)
        return -EINVAL;
    struct load_h3_req *q = calloc(1, sizeof(*q));
    if (q) {
        q->fields = calloc(o->nheaders + 1u, sizeof(*q->fields));
        q->names = malloc(load_req_names_size(o));
    }
    o->h3_req = q;
    if (!q || !q->fields || !q->names) {
        load_h3_opts_free(o);
        snprintf(err, ecap, "out of memory");
        return -ENOMEM;
    }
    /* §4.3.1: a request carries :authority (or Host; with both they must agree): -H Host
     * becomes :authority, the URL's authority otherwise. */
    vega_http_str auth = load_req_authority(o);
    char *names = q->names;
    for (unsigned i = 0; i < o->nheaders; i++) {
        const struct load_header *h = &o->headers[i];
        const char *nm = load_req_lower_name(h, &names);
        if (!nm)
            continue;
        q->fields[q->nfields++] = (vega_http_field){{nm, h->name_len}, {h->value, h->value_len}};
    }
    if (load_req_content_length(o, method, q->cl)) {
        q->fields[q->nfields++] = (vega_http_field){{"content-length", 14}, {q->cl, strlen(q->cl)}};
    }
    q->rq = (vega_h3_request){.method = {method, strlen(method)},
                              .scheme = {"https", 5},
                              .authority = auth,
                              .path = {load_req_path(o), strlen(load_req_path(o))}};
    int e = h3_trial(q, err, ecap);
    if (e < 0)
        load_h3_opts_free(o);
    return e;
}

/* ---- the endpoint ---------------------------------------------------------------------------- */

int load_h3_setup(struct load_run *r)
{
    const struct load_opts *o = r->o;
    struct load_h3 *g = calloc(1, sizeof(*g));
    if (!g) {
        cli_err_code("setup", -ENOMEM);
        return -ENOMEM;
    }
    g->kind = LOAD_H3_USER_RUN;
    atomic_flag_clear(&g->lock);
    r->h3 = g;
    int e = 0;
    if (!o->insecure) {
        /* No --cacert: the system's store (OpenSSL's default file and directory). */
        e = vega_crypto_cert_store_new(&g->ca, o->cacert, NULL);
        if (e < 0) {
            cli_err(o->cacert ? o->cacert : "system CA certificates", "%s",
                    e == VEGA_ERR_CRYPTO_CA_LOAD ? "cannot load (unreadable, or no PEM "
                                                   "certificate in it)"
                                                 : vega_strerror(e));
            return e;
        }
    }
    vega_quic_endpoint_opts eo;
    vega_quic_endpoint_opts_init(&eo);
    eo.quic.tls.alpn[0] = "h3";
    eo.quic.tls.n_alpn = 1;
    eo.quic.tls.ca = g->ca;
    eo.quic.tls.insecure = o->insecure;
    eo.cb.on_event = load_h3_on_event;
    e = vega_quic_endpoint_new(&g->ep, &eo);
    if (e < 0)
        cli_err_code("QUIC endpoint", e);
    return e;
}

void load_h3_teardown(struct load_run *r)
{
    struct load_h3 *g = r->h3;
    if (!g)
        return;
    if (g->ep) {
        vega_quic_endpoint_shutdown(g->ep, vega_deadline_in_ms(CLOSE_GRACE_MS));
        vega_quic_endpoint_free(g->ep);
    }
    vega_crypto_cert_store_free(g->ca);
    free(g);
    r->h3 = NULL;
}

void load_h3_describe_close(char *buf, size_t cap, bool app, uint64_t code, const uint8_t *reason,
                            size_t len)
{
    size_t n = 0;
    if (app)
        cli_appendf(buf, cap, &n, "%s", vega_h3_error_name(code));
    else if (code >= VEGA_QUIC_CRYPTO_ERROR && code <= 0x1ff)
        cli_appendf(buf, cap, &n, "TLS alert %u", (unsigned)(code - VEGA_QUIC_CRYPTO_ERROR));
    else
        cli_appendf(buf, cap, &n, "%s", vega_quic_transport_error_name(code));
    if (len && n + 3 < cap) {
        buf[n++] = ':';
        buf[n++] = ' ';
        for (size_t i = 0; i < len && n + 1 < cap; i++)
            buf[n++] = reason[i] >= 0x20 && reason[i] < 0x7f ? (char)reason[i] : '?';
        buf[n] = '\0';
    }
}

void load_h3_run_event(struct load_h3 *g, const vega_quic_event *ev)
{
    if (ev->type != VEGA_QUIC_EV_CLOSED)
        return;
    char why[sizeof(g->reason)];
    load_h3_describe_close(why, sizeof(why), ev->app, ev->error_code, ev->data, ev->len);
    while (atomic_flag_test_and_set_explicit(&g->lock, memory_order_acquire))
        ;
    memcpy(g->reason, why, sizeof(why));
    atomic_flag_clear_explicit(&g->lock, memory_order_release);
}

const char *load_h3_connect_msg(struct load_h3 *g, int e, char *buf, size_t cap)
{
    const char *what = e == VEGA_ERR_QUIC_EP_HANDSHAKE ? "the QUIC handshake failed"
                       : e == VEGA_ERR_QUIC_EP_REFUSED ? "the server refused the connection"
                       : e == VEGA_ERR_QUIC_EP_CLOSED ? "the connection closed during the handshake"
                                                      : NULL;
    if (!what)
        return NULL; /* the code's own message */
    while (atomic_flag_test_and_set_explicit(&g->lock, memory_order_acquire))
        ;
    snprintf(buf, cap, "%s%s%s", what, g->reason[0] ? ": " : "", g->reason);
    atomic_flag_clear_explicit(&g->lock, memory_order_release);
    return buf;
}
