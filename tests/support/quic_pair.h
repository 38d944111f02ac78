/* SPDX-License-Identifier: MIT */
/* Two QUIC cores, a client and a server, joined by the in-memory network of libvega-test, with
 * a simulated clock: the harness the connection tests, fuzzers and the bulk benchmark share.
 * Header-only (static functions): include it in one file per program. */
#ifndef VEGA_TEST_QUIC_PAIR_H
#define VEGA_TEST_QUIC_PAIR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vega/quic.h>
#include <vega/quic_wire.h>
#include <vega/test.h>

#define QP_FN          static __attribute__((unused))
#define QP_MAX_STREAMS 16
#define QP_TIME_INF    UINT64_MAX

struct qp_stream {
    uint64_t id;
    uint8_t *data; /* received */
    size_t len, cap;
    bool fin, reset;
    uint64_t reset_code;
};

struct qp_side {
    vega_quic_conn *c;
    int idx; /* 0 client, 1 server */
    uint64_t rng;
    bool handshake_done, closed, closed_app, closed_local, stream_done;
    uint64_t close_code;
    char close_reason[128];
    struct qp_stream st[QP_MAX_STREAMS];
    size_t nst;
    bool echo;        /* write back what arrives on bidirectional streams */
    size_t datagrams; /* DATAGRAM events */
    size_t datagram_bytes;
    uint8_t *session; /* client: the latest session */
    size_t session_len;
    uint8_t token[512]; /* client: the latest NEW_TOKEN */
    size_t token_len;
    size_t opened, writable, streams_available, early_rejected, stops, resets, done;
    uint64_t stop_code;
    /* Bytes to upload on a stream of ours, written as room allows. */
    uint64_t up_id;
    const uint8_t *up;
    size_t up_len, up_off;
    bool up_active;
};

struct qp {
    vega_quic_opts ccfg, scfg;
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
    uint8_t ticket_key[32];
    vega_test_net *net;
    struct qp_side side[2];
    uint64_t now;
    vega_quic_path path;  /* the client's view: local = client, remote = server */
    vega_quic_path spath; /* the server's view */
    uint16_t nat_port;    /* non-zero: client datagrams reach the server from this port */
    /* Server endpoint policy: answer a token-less Initial with a Retry. */
    bool retry;
    size_t retries_sent;
    uint64_t srv_bytes_in, srv_bytes_out; /* before the server's first Handshake packet */
    bool srv_got_handshake;
    size_t steps;
    bool borrowed_creds; /* chain, key and ca belong to the caller (qp_init_with) */
    bool stuck;          /* qp_run stopped: time did not advance for too long (a bug) */
};

QP_FN int qp_rand(void *ud, void *buf, size_t len)
{
    uint64_t *s = ud;
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        p[i] = (uint8_t)(z ^ (z >> 31));
    }
    return 0;
}

/* 127.0.0.1:port. */
QP_FN void qp_set_addr(struct sockaddr_storage *ss, socklen_t *len, uint16_t port)
{
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    memset(ss, 0, sizeof *ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *len = sizeof *a;
}

QP_FN uint16_t qp_port(const struct sockaddr_storage *ss)
{
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Sets both configs' defaults around the given server chain and key and client trust store,
 * borrowed (they must outlive q). Returns 0 or a negative code. */
QP_FN int qp_init_with(struct qp *q, vega_crypto_cert_chain *chain, vega_crypto_key *key,
                       vega_crypto_cert_store *ca, const vega_test_net_opts *net, uint64_t seed)
{
    memset(q, 0, sizeof *q);
    q->chain = chain;
    q->key = key;
    q->ca = ca;
    q->borrowed_creds = true;
    int rc = vega_test_net_new(&q->net, net);
    if (rc < 0)
        return rc;
    for (int i = 0; i < 32; i++)
        q->ticket_key[i] = (uint8_t)(i * 7 + 1);
    q->side[0].idx = 0;
    q->side[1].idx = 1;
    q->side[0].rng = seed * 2 + 1;
    q->side[1].rng = seed * 2 + 2;
    uint64_t wall = (uint64_t)time(NULL) * 1000;
    vega_quic_opts *c = &q->ccfg, *s = &q->scfg;
    vega_quic_opts_init(c);
    vega_quic_opts_init(s);
    c->wall_ms = s->wall_ms = wall;
    c->rand = s->rand = qp_rand;
    c->rand_ud = &q->side[0].rng;
    s->rand_ud = &q->side[1].rng;
    c->tls.ca = q->ca;
    c->tls.server_name = "localhost";
    c->tls.alpn[0] = s->tls.alpn[0] = "hq-interop";
    c->tls.n_alpn = s->tls.n_alpn = 1;
    s->tls.chain = q->chain;
    s->tls.key = q->key;
    s->tls.ticket_key = q->ticket_key;
    q->now = 1000000000ull; /* 1 s: any positive start */
    qp_set_addr(&q->path.local, &q->path.local_len, 40001);
    qp_set_addr(&q->path.remote, &q->path.remote_len, 443);
    qp_set_addr(&q->spath.local, &q->spath.local_len, 443);
    qp_set_addr(&q->spath.remote, &q->spath.remote_len, 40001);
    return 0;
}

/* Loads the credentials (PEM) into objects q owns, then as qp_init_with. Returns 0. */
QP_FN int qp_init(struct qp *q, const char *cert_pem, const char *key_pem, const char *ca_pem,
                  const vega_test_net_opts *net, uint64_t seed)
{
    vega_crypto_cert_chain *chain = NULL;
    vega_crypto_key *key = NULL;
    vega_crypto_cert_store *ca = NULL;
    int rc = vega_crypto_cert_chain_new(&chain);
    if (rc == 0)
        rc = vega_crypto_cert_chain_add(chain, cert_pem, strlen(cert_pem));
    if (rc == 0)
        rc = vega_crypto_key_load_private(&key, key_pem, strlen(key_pem));
    if (rc == 0)
        rc = vega_crypto_cert_store_new(&ca, NULL, NULL);
    if (rc == 0)
        rc = vega_crypto_cert_store_add_pem(ca, ca_pem, strlen(ca_pem));
    if (rc == 0)
        rc = qp_init_with(q, chain, key, ca, net, seed);
    if (rc < 0) {
        vega_crypto_cert_chain_free(chain);
        vega_crypto_key_free(key);
        vega_crypto_cert_store_free(ca);
        return rc;
    }
    q->borrowed_creds = false;
    return 0;
}

QP_FN void qp_fini(struct qp *q)
{
    for (int i = 0; i < 2; i++) {
        struct qp_side *s = &q->side[i];
        vega_quic_conn_free(s->c);
        for (size_t j = 0; j < s->nst; j++)
            free(s->st[j].data);
        free(s->session);
    }
    vega_test_net_free(q->net);
    if (!q->borrowed_creds) {
        vega_crypto_cert_chain_free(q->chain);
        vega_crypto_key_free(q->key);
        vega_crypto_cert_store_free(q->ca);
    }
}

/* Resets the pair for a new connection (same certificates, configs and network). */
QP_FN void qp_reset_conns(struct qp *q)
{
    for (int i = 0; i < 2; i++) {
        struct qp_side *s = &q->side[i];
        vega_quic_conn_free(s->c);
        for (size_t j = 0; j < s->nst; j++)
            free(s->st[j].data);
        uint8_t *sess = s->session;
        size_t sess_len = s->session_len;
        uint64_t rng = s->rng;
        memset(s, 0, sizeof *s);
        s->idx = i;
        s->rng = rng;
        s->session = sess;
        s->session_len = sess_len;
    }
    q->retries_sent = 0;
    q->srv_bytes_in = q->srv_bytes_out = 0;
    q->srv_got_handshake = false;
}

QP_FN int qp_client_start(struct qp *q)
{
    return vega_quic_conn_client_new(&q->side[0].c, &q->ccfg, &q->path, q->now);
}

QP_FN struct qp_stream *qp_stream(struct qp_side *s, uint64_t id)
{
    for (size_t i = 0; i < s->nst; i++)
        if (s->st[i].id == id)
            return &s->st[i];
    if (s->nst == QP_MAX_STREAMS)
        return NULL;
    struct qp_stream *st = &s->st[s->nst++];
    memset(st, 0, sizeof *st);
    st->id = id;
    return st;
}

QP_FN void qp_upload_pump(struct qp_side *s)
{
    while (s->up_active && s->c) {
        size_t n = s->up_len - s->up_off;
        long w = vega_quic_stream_write(s->c, s->up_id, s->up + s->up_off, n, true);
        if (w < 0) {
            s->up_active = false;
            return;
        }
        s->up_off += (size_t)w;
        if (s->up_off == s->up_len)
            s->up_active = false;
        if ((size_t)w < n)
            return;
    }
}

/* Starts sending data on a new stream of side's (bidi or uni), with FIN at the end.
 * data must outlive the transfer. Returns the stream id, or a negative code. */
QP_FN int64_t qp_upload(struct qp_side *s, bool bidi, const uint8_t *data, size_t len)
{
    uint64_t id;
    int rc = vega_quic_stream_open(s->c, bidi, &id);
    if (rc < 0)
        return rc;
    s->up_id = id;
    s->up = data;
    s->up_len = len;
    s->up_off = 0;
    s->up_active = true;
    qp_upload_pump(s);
    return (int64_t)id;
}

QP_FN void qp_events(struct qp *q, struct qp_side *s)
{
    vega_quic_event ev;
    while (s->c && vega_quic_conn_next_event(s->c, &ev)) {
        switch (ev.type) {
        case VEGA_QUIC_EV_HANDSHAKE_DONE:
            s->handshake_done = true;
            break;
        case VEGA_QUIC_EV_STREAM_OPENED:
            s->opened++;
            break;
        case VEGA_QUIC_EV_STREAM_READABLE: {
            struct qp_stream *st = qp_stream(s, ev.stream_id);
            uint8_t buf[16384];
            for (;;) {
                bool fin = false;
                long n = vega_quic_stream_read(s->c, ev.stream_id, buf, sizeof buf, &fin);
                if (n < 0)
                    break;
                if (st && n > 0) {
                    if (st->len + (size_t)n > st->cap) {
                        size_t cap = st->cap ? st->cap * 2 : 65536;
                        while (cap < st->len + (size_t)n)
                            cap *= 2;
                        st->data = realloc(st->data, cap);
                        st->cap = cap;
                    }
                    memcpy(st->data + st->len, buf, (size_t)n);
                    st->len += (size_t)n;
                }
                if (s->echo && n > 0 && (ev.stream_id & 2) == 0)
                    vega_quic_stream_write(s->c, ev.stream_id, buf, (size_t)n, false);
                if (fin) {
                    if (st)
                        st->fin = true;
                    if (s->echo && (ev.stream_id & 2) == 0)
                        vega_quic_stream_write(s->c, ev.stream_id, NULL, 0, true);
                    break;
                }
                if (n == 0)
                    break;
            }
            break;
        }
        case VEGA_QUIC_EV_STREAM_WRITABLE:
            s->writable++;
            qp_upload_pump(s);
            break;
        case VEGA_QUIC_EV_STREAM_RESET: {
            struct qp_stream *st = qp_stream(s, ev.stream_id);
            s->resets++;
            if (st) {
                st->reset = true;
                st->reset_code = ev.error_code;
            }
            break;
        }
        case VEGA_QUIC_EV_STREAM_STOP:
            s->stops++;
            s->stop_code = ev.error_code;
            break;
        case VEGA_QUIC_EV_STREAM_DONE:
            s->done++;
            break;
        case VEGA_QUIC_EV_STREAMS_AVAILABLE:
            s->streams_available++;
            break;
        case VEGA_QUIC_EV_DATAGRAM:
            s->datagrams++;
            s->datagram_bytes += ev.len;
            break;
        case VEGA_QUIC_EV_SESSION:
            free(s->session);
            s->session = malloc(ev.len);
            memcpy(s->session, ev.data, ev.len);
            s->session_len = ev.len;
            break;
        case VEGA_QUIC_EV_NEW_TOKEN:
            if (ev.len <= sizeof s->token) {
                memcpy(s->token, ev.data, ev.len);
                s->token_len = ev.len;
            }
            break;
        case VEGA_QUIC_EV_EARLY_REJECTED:
            s->early_rejected++;
            break;
        case VEGA_QUIC_EV_CLOSED:
            s->closed = true;
            s->closed_app = ev.app;
            s->closed_local = ev.local;
            s->close_code = ev.error_code;
            snprintf(s->close_reason, sizeof s->close_reason, "%.*s", (int)ev.len,
                     ev.data ? (const char *)ev.data : "");
            break;
        default:
            break;
        }
    }
    (void)q;
}

/* The server endpoint's part: create the connection on a first Initial (with the Retry policy),
 * then feed it. */
QP_FN void qp_server_recv(struct qp *q, uint8_t *buf, size_t len, uint8_t ecn, uint16_t from)
{
    vega_quic_path path = q->spath;
    qp_set_addr(&path.remote, &path.remote_len, from);
    struct qp_side *s = &q->side[1];
    if (!s->c) {
        vega_quic_hdr h;
        if (vega_quic_hdr_parse(&h, buf, len, 0) < 0 || h.type != VEGA_QUIC_PKT_INITIAL ||
            len < VEGA_QUIC_MIN_INITIAL_SIZE)
            return;
        vega_quic_server_params sp = {.version = h.version,
                                      .dcid = h.dcid,
                                      .dcid_len = h.dcid_len,
                                      .scid = h.scid,
                                      .scid_len = h.scid_len};
        uint8_t odcid[VEGA_QUIC_MAX_CID_LEN];
        if (q->retry) {
            /* The test's token: "T" + the original DCID (a real server seals it). */
            if (h.token_len == 0) {
                uint8_t tok[1 + VEGA_QUIC_MAX_CID_LEN], out[256];
                tok[0] = 'T';
                memcpy(tok + 1, h.dcid, h.dcid_len);
                uint8_t new_cid[8];
                qp_rand(&s->rng, new_cid, sizeof new_cid);
                vega_quic_hdr r = {.type = VEGA_QUIC_PKT_RETRY,
                                   .version = h.version,
                                   .dcid = h.scid,
                                   .dcid_len = h.scid_len,
                                   .scid = new_cid,
                                   .scid_len = 8,
                                   .token = tok,
                                   .token_len = 1 + h.dcid_len};
                long n = vega_quic_retry_write(out, sizeof out, &r, 0, h.dcid, h.dcid_len);
                if (n > 0) {
                    vega_test_net_send(q->net, 1, out, (size_t)n, q->now);
                    q->retries_sent++;
                }
                return;
            }
            if (h.token[0] != 'T' || h.token_len < 2)
                return;
            memcpy(odcid, h.token + 1, h.token_len - 1);
            sp.original_dcid = odcid;
            sp.original_dcid_len = h.token_len - 1;
            sp.address_validated = true;
        }
        if (vega_quic_conn_server_new(&s->c, &q->scfg, &q->spath, &sp, q->now) < 0)
            return;
    }
    if (!q->srv_got_handshake) {
        vega_quic_hdr h;
        if (vega_quic_hdr_parse(&h, buf, len, 8) == 0 && h.type == VEGA_QUIC_PKT_HANDSHAKE)
            q->srv_got_handshake = true;
        else
            q->srv_bytes_in += len;
    }
    vega_quic_conn_read(s->c, &path, ecn, buf, len, q->now);
}

/* Delivers what is due, handles events, then sends what both sides have (a driver's order:
 * what arrived may open the window or ask for an answer). */
QP_FN void qp_step(struct qp *q)
{
    uint8_t buf[2048];
    q->steps++;
    for (int to = 0; to < 2; to++) {
        long n;
        uint8_t ecn = 0, *d;
        uint64_t tag = 0;
        /* Read in place (the core decrypts there): no copy out of the network. */
        while ((n = vega_test_net_peek(q->net, to, &d, &ecn, &tag, q->now)) > 0) {
            if (to == 1)
                qp_server_recv(q, d, (size_t)n, ecn, (uint16_t)tag);
            else if (q->side[0].c)
                vega_quic_conn_read(q->side[0].c, &q->path, ecn, d, (size_t)n, q->now);
        }
    }
    for (int i = 0; i < 2; i++)
        qp_events(q, &q->side[i]);
    for (int i = 0; i < 2; i++) {
        struct qp_side *s = &q->side[i];
        for (int guard = 0; s->c && guard < 10000; guard++) {
            uint8_t ecn = 0;
            vega_quic_path p;
            long n = vega_quic_conn_write(s->c, &p, &ecn, buf, sizeof buf, q->now);
            if (n <= 0)
                break;
            if (i == 1 && !q->srv_got_handshake)
                q->srv_bytes_out += (uint64_t)n;
            /* The tag carries the client's source port; a NAT may rewrite it. */
            uint16_t port =
                i == 0 ? (q->nat_port ? q->nat_port : qp_port(&p.local)) : qp_port(&p.local);
            vega_test_net_sendx(q->net, i, buf, (size_t)n, ecn, port, q->now);
        }
    }
}

QP_FN uint64_t qp_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Runs until done(q) holds or the simulated clock passes max_ns from now. Returns done(q). */
QP_FN bool qp_run(struct qp *q, bool (*done)(struct qp *), uint64_t max_ns)
{
    uint64_t end = q->now + max_ns, last = 0;
    unsigned spins = 0;
    for (;;) {
        qp_step(q);
        if (done(q))
            return true;
        spins = q->now == last ? spins + 1 : 0;
        last = q->now;
        if (spins > 100000) {
            q->stuck = true;
            return false;
        }
        uint64_t next = qp_min(vega_test_net_next(q->net, 0), vega_test_net_next(q->net, 1));
        for (int i = 0; i < 2; i++)
            if (q->side[i].c)
                next = qp_min(next, vega_quic_conn_expiry(q->side[i].c));
        if (next == QP_TIME_INF || next > end)
            return done(q);
        if (next > q->now)
            q->now = next;
        for (int i = 0; i < 2; i++)
            if (q->side[i].c && vega_quic_conn_expiry(q->side[i].c) <= q->now)
                vega_quic_conn_handle_expiry(q->side[i].c, q->now);
    }
}

QP_FN bool qp_handshaken(struct qp *q)
{
    return q->side[0].handshake_done && q->side[1].handshake_done;
}

#endif
