/* SPDX-License-Identifier: MIT */
/* A request that goes over HTTP/3: a pooled connection to its origin, else a new one; with a
 * fallback (curl's --http3, or an Alt-Svc alternative, RFC 7838 §2.4: the origin stays
 * reachable), QUIC gets a head start and then races TCP + TLS, the first connected wins; one
 * more try on a new connection for a request the server did not process (RFC 9114 §5.2). */
#include <errno.h>
#include <string.h>

#include "client_int.h"

struct race {
    vega_http_client *c;
    const struct hc_req *rq;
    bool fresh;
    vega_deadline dl;
    pthread_mutex_t mu;
    vega_notify wake;
    bool quic_done, tcp_done;
    int quic_err, tcp_err;
    struct hc_h3 *h;
    struct hc_conn *tcp;
    vega_http_client_info tinfo;
    vega_http_client_wire_error werr; /* why QUIC failed */
};

static void *quic_task(void *arg)
{
    struct race *r = arg;
    struct hc_h3 *h = NULL;
    vega_http_client_wire_error werr = {0};
    int rc = vega__hc_h3_connect(r->c, r->rq, r->fresh, r->dl, &h, &werr);
    pthread_mutex_lock(&r->mu);
    r->quic_done = true;
    r->quic_err = rc;
    r->werr = werr;
    r->h = h;
    pthread_mutex_unlock(&r->mu);
    vega_notify_one(&r->wake);
    return NULL;
}

static void *tcp_task(void *arg)
{
    struct race *r = arg;
    struct hc_conn *conn = NULL;
    int rc =
        vega__hc_connect(r->c, &r->rq->key, r->rq->host_for_tls, true, &r->tinfo, r->dl, &conn);
    pthread_mutex_lock(&r->mu);
    r->tcp_done = true;
    r->tcp_err = rc;
    r->tcp = conn;
    pthread_mutex_unlock(&r->mu);
    vega_notify_one(&r->wake);
    return NULL;
}

static void join_hard(vega_task *t)
{
    if (!t || vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) == 0)
        return;
    while (!vega_task_is_finished(t))
        (void)vega_yield();
    (void)vega_task_join(t, NULL, VEGA_DEADLINE_NEVER);
}

/* Drops a connection that lost the race. */
static void drop_h3(vega_http_client *c, struct hc_h3 *h)
{
    (void)vega_quic_ep_conn_close(h->qe, VEGA_QUIC_CLOSE_APPLICATION, VEGA_H3_NO_ERROR, NULL);
    pthread_mutex_lock(&c->mu);
    if (h->mux.active)
        h->mux.active--;
    pthread_mutex_unlock(&c->mu);
    vega__hc_h3_release(h);
}

/* Runs the race: *h or *tcp (with its connect times in *tinfo) on 0. */
static int race(vega_http_client *c, const struct hc_req *rq, bool fresh, vega_deadline dl,
                struct hc_h3 **h, struct hc_conn **tcp, vega_http_client_info *tinfo,
                vega_http_client_wire_error *werr)
{
    struct race r = {.c = c, .rq = rq, .fresh = fresh, .dl = dl};
    pthread_mutex_init(&r.mu, NULL);
    vega_notify_init(&r.wake);
    vega_task *qt = NULL, *tt = NULL;
    int rc = vega_task_spawn(&qt, quic_task, &r);
    vega_deadline head_start = vega_deadline_in_ns(c->o.h3_head_start_ns);
    while (rc == 0) {
        pthread_mutex_lock(&r.mu);
        bool quic_ok = r.quic_done && r.quic_err == 0, quic_bad = r.quic_done && r.quic_err;
        bool tcp_ok = r.tcp_done && r.tcp_err == 0, tcp_bad = r.tcp_done && r.tcp_err;
        pthread_mutex_unlock(&r.mu);
        if (quic_ok || tcp_ok || (quic_bad && tcp_bad))
            break;
        if (!tt && (quic_bad || vega_now() >= head_start) &&
            (rc = vega_task_spawn(&tt, tcp_task, &r)) < 0)
            break;
        if (quic_bad && !tt)
            break;
        rc = vega_notify_wait(&r.wake, tt ? dl : hc_dl_min(dl, head_start));
        if (rc == -ETIMEDOUT && vega_now() < dl)
            rc = 0;
    }
    /* The loser, or both on a deadline or a cancel, stop; each is joined before r goes. */
    pthread_mutex_lock(&r.mu);
    bool quic_won = r.quic_done && r.quic_err == 0;
    pthread_mutex_unlock(&r.mu);
    if (qt && !quic_won)
        vega_task_cancel(qt);
    if (tt && quic_won)
        vega_task_cancel(tt);
    join_hard(qt);
    join_hard(tt);
    vega_notify_fini(&r.wake);
    pthread_mutex_destroy(&r.mu);
    if (quic_won) {
        if (r.tcp)
            vega__hc_conn_close(r.tcp);
        *h = r.h;
        return 0;
    }
    if (r.h) /* connected after it was cancelled */
        drop_h3(c, r.h);
    if (r.tcp) {
        *tcp = r.tcp;
        *tinfo = r.tinfo;
        return 0;
    }
    if (rc < 0)
        return rc;
    /* Both failed: TCP's reason is the one a user of curl --http3 expects to read. */
    if (!r.tcp_done)
        *werr = r.werr;
    return r.tcp_done ? r.tcp_err : r.quic_err ? r.quic_err : -ETIMEDOUT;
}

/* The request over a TCP connection that won the race or came from the pool. */
static int over_tcp(vega_http_client *c, const struct hc_req *rq, struct hc_conn *conn, bool reused,
                    const vega_http_client_info *tinfo, vega_tstamp start, vega_deadline dl,
                    bool *used, bool *retry, vega_http_client_response **out)
{
    if (!strcmp(conn->alpn, "h2")) {
        /* a caller's TLS config offered h2 and the server took it: HTTP/2 then */
        struct hc_h2 *h;
        int rc = vega__hc_h2_from_conn(c, conn, tinfo, &h);
        return rc < 0 ? rc
                      : vega__hc_attempt_h2(c, rq, h, false, start, dl, used, retry,
                                            rq->req->wire_error, out);
    }
    vega_http_client_response *r;
    int rc = vega__hc_response_new(c, &r, rq->req);
    if (rc < 0) {
        vega__hc_conn_close(conn);
        return rc;
    }
    r->dl = dl;
    r->info.t_start = start;
    r->info.reused = reused;
    if (!reused) {
        r->info.t_dns = tinfo->t_dns;
        r->info.t_connect = tinfo->t_connect;
        r->info.t_tls = tinfo->t_tls;
    }
    bool got = false;
    rc = vega__hc_exchange_h1(c, rq, r, conn, used, &got);
    if (rc < 0) {
        *retry = reused && vega__hc_retryable(rc) && !*used && !got;
        vega_http_client_response_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int vega__hc_send_h3(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                     vega_deadline dl, vega_http_client_response **out)
{
    const vega_http_client_request *req = rq->req;
    vega_http_client_wire_error werr = {0};
    bool used = false;
    int rc = 0;
    unsigned refused = 0;
    for (int attempt = 0;; attempt++) {
        bool fresh = req->fresh_connection || attempt > 0, reused = false, retry = false;
        struct hc_h3 *h = NULL;
        struct hc_conn *tcp = NULL;
        vega_http_client_info tinfo;
        memset(&tinfo, 0, sizeof tinfo);
        if (!fresh && (rc = vega__hc_h3_pool_take(c, rq, dl, &h)) < 0)
            break;
        reused = h != NULL;
        /* A fallback that went by TCP before: its connection serves again (not a
         * WebSocket's, which has a fresh connection of its own). */
        if (!h && rq->fallback && !rq->ws_h3 && !fresh && vega__hc_pool_take(c, &rq->key, &tcp) > 0)
            reused = true;
        if (!h && !tcp) {
            vega_deadline cdl = hc_dl_min(dl, vega_deadline_in_ns(c->o.connect_timeout_ns));
            rc = rq->fallback ? race(c, rq, fresh, cdl, &h, &tcp, &tinfo, &werr)
                              : vega__hc_h3_connect(c, rq, fresh, cdl, &h, &werr);
            if (rc < 0)
                break;
        }
        if (tcp && rq->ws_h3) {
            /* no QUIC connection (it failed, or TCP connected first): the WebSocket's caller
             * makes the HTTP/1.1 Upgrade on a connection of its own (ws_connect.c) */
            vega__hc_conn_close(tcp);
            rc = -ENOTSUP;
            break;
        }
        if (tcp)
            rc = over_tcp(c, rq, tcp, reused, &tinfo, start, dl, &used, &retry, out);
        else
            rc = vega__hc_attempt_h3(c, rq, h, reused, start, dl, &used, &retry, &werr, out);
        if (rc == 0 || !retry || used)
            break;
        /* one retry, or a few in a row for refusals (HC_H3_MAX_REFUSED) */
        bool refusal = werr.kind == VEGA_HTTP_CLIENT_WIRE_QUIC && !werr.local &&
                       werr.code == VEGA_QUIC_CONNECTION_REFUSED;
        if (refusal ? ++refused > HC_H3_MAX_REFUSED : (unsigned)attempt >= 1 + refused)
            break;
    }
    if (rc < 0 && req->wire_error)
        *req->wire_error = werr;
    return rc;
}
