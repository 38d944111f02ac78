/* SPDX-License-Identifier: MIT */
/* The connection allocator hook (vega_quic_opts.mem): a counting allocator proves every block
 * goes through it and comes back, and a failing one sweeps each allocation of a handshake and a
 * transfer, checking that every call then fails cleanly and nothing leaks or hangs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qtls_certs.h"
#include "quic_pair.h"
#include "tmem.h"
#include "vtest.h"

#define MS 1000000ull
#define S  1000000000ull

/* ---- a scenario with every return value checked ---------------------------------------------- */

/* What a scenario exercises besides the handshake and the upload. */
struct sc_opts {
    unsigned loss_pct;
    bool extras;            /* DATAGRAMs both ways are allowed, the client sends two and starts
                               a key update */
    const uint8_t *session; /* resume this session, with the upload in 0-RTT */
    size_t session_len;
    bool by_ref; /* the upload alternates referenced (vega_quic_stream_write_ref) and copied
                    pieces */
};

struct run {
    struct qp q;
    struct tmem m;
    vega_quic_mem mem;
    const uint8_t *up;
    size_t up_len, up_off;
    bool up_open, up_fin, closing;
    bool by_ref;
    size_t refs_taken, refs_released; /* referenced writes that took bytes, releases seen */
    bool bad_release;                 /* a release that matched no write, or came twice */
    uint64_t up_id;
    size_t got; /* bytes the server read */
    bool got_fin;
    bool closed[2]; /* the application learnt of the close: event or VEGA_ERR_CLOSED */
    bool early;     /* the upload may start before the handshake (0-RTT) */
    size_t dgrams_sent, dgrams_got;
    bool key_updated;
    bool resumed; /* the client's vega_quic_conn_info at HANDSHAKE_DONE */
    vega_quic_early_data early_data;
    uint8_t session[4096]; /* the client's latest session */
    size_t session_len;
    bool handshake[2];
    char reason[2][64];    /* the CLOSED events' reasons */
    uint64_t code[2];      /* and error codes (UINT64_MAX: no CLOSED event) */
    size_t enomem;         /* -ENOMEM returns seen */
    size_t enomem_at_last; /* enomem when time last moved */
    bool refused;          /* vega_quic_conn_client_new said -ENOMEM */
    bool bad;              /* a call returned something else than success or a clean error */
    const char *end;       /* why the run stopped */
    char why[160];
};

/* A clean error: -ENOMEM or one of the library's codes. */
static bool clean(struct run *r, long rc, const char *call)
{
    if (rc >= 0)
        return true;
    if (rc == -ENOMEM) {
        r->enomem++;
        return true;
    }
    if (rc <= VEGA_ERR_BASE)
        return true;
    if (rc == -EAGAIN) /* key_update: not allowed yet */
        return true;
    if (!r->bad)
        snprintf(r->why, sizeof r->why, "%s returned %ld", call, rc);
    r->bad = true;
    return false;
}

static void note_closed(struct run *r, int i, long rc)
{
    if (rc == VEGA_ERR_CLOSED)
        r->closed[i] = true;
}

/* release for the referenced pieces: each must be one the upload wrote, released once; the
 * pieces are the upload's 1500-byte slots (see pump_upload), so the offset names the slot. */
static void on_release(void *user, const void *data, size_t len)
{
    struct run *r = user;
    size_t off = (size_t)((const uint8_t *)data - r->up);
    if (off >= r->up_len || off % 3000 != 0 || len == 0 || len > 1500 || r->up_off < off + len)
        r->bad_release = true;
    r->refs_released++;
}

static void pump_upload(struct run *r)
{
    vega_quic_conn *c = r->q.side[0].c;
    if (!c || !(r->handshake[0] || r->early) || r->closed[0] || r->up_fin)
        return;
    if (!r->up_open) {
        int rc = vega_quic_stream_open(c, true, &r->up_id);
        clean(r, rc, "stream_open");
        if (rc < 0)
            return; /* no memory now: try again on the next step */
        r->up_open = true;
    }
    while (r->up_off < r->up_len || !r->up_fin) {
        size_t n = r->up_len - r->up_off;
        vega_ssize w;
        if (r->by_ref && n > 0) {
            /* 1500-byte slots, the even ones referenced, the odd ones copied; a short write
             * ends the call, so a referenced piece always starts a slot. */
            size_t slot = r->up_off / 1500, in_slot = 1500 - r->up_off % 1500;
            if (n > in_slot)
                n = in_slot;
            bool fin = r->up_off + n == r->up_len;
            if (slot % 2 == 0 && r->up_off % 1500 == 0) {
                w = vega_quic_stream_write_ref(c, r->up_id, r->up + r->up_off, n, fin, on_release,
                                               r);
                r->refs_taken += w > 0;
            } else {
                w = vega_quic_stream_write(c, r->up_id, r->up + r->up_off, n, fin);
            }
        } else {
            w = vega_quic_stream_write(c, r->up_id, r->up + r->up_off, n, true);
        }
        clean(r, (long)w, r->by_ref ? "stream_write(_ref)" : "stream_write");
        note_closed(r, 0, (long)w);
        if (w < 0)
            return;
        r->up_off += (size_t)w;
        if (r->up_off == r->up_len)
            r->up_fin = true;
        if ((size_t)w < n || n == 0)
            return;
    }
}

static void drain_events(struct run *r, int i)
{
    vega_quic_conn *c = r->q.side[i].c;
    vega_quic_event ev;
    while (c && vega_quic_conn_next_event(c, &ev)) {
        switch (ev.type) {
        case VEGA_QUIC_EV_HANDSHAKE_DONE:
            r->handshake[i] = true;
            if (i == 0) {
                vega_quic_conn_info info;
                vega_quic_conn_get_info(c, &info);
                r->resumed = info.resumed;
                r->early_data = info.early_data;
            }
            break;
        case VEGA_QUIC_EV_STREAM_READABLE:
            for (;;) {
                uint8_t buf[16384];
                bool fin = false;
                vega_ssize n = vega_quic_stream_read(c, ev.stream_id, buf, sizeof buf, &fin);
                clean(r, (long)n, "stream_read");
                if (n < 0)
                    break;
                if (i == 1 && ev.stream_id == 0) {
                    for (vega_ssize k = 0; k < n; k++)
                        if (buf[k] != (uint8_t)(r->got + (size_t)k)) {
                            r->bad = true;
                            snprintf(r->why, sizeof r->why, "wrong byte at %zu", r->got);
                            break;
                        }
                    r->got += (size_t)n;
                    r->got_fin |= fin;
                }
                if (fin || n == 0)
                    break;
            }
            break;
        case VEGA_QUIC_EV_DATAGRAM:
            r->dgrams_got += i == 1;
            break;
        case VEGA_QUIC_EV_SESSION:
            if (i == 0 && ev.len <= sizeof r->session) {
                memcpy(r->session, ev.data, ev.len);
                r->session_len = ev.len;
            }
            break;
        case VEGA_QUIC_EV_CLOSED:
            r->closed[i] = true;
            r->code[i] = ev.error_code;
            snprintf(r->reason[i], sizeof r->reason[i], "%.*s", (int)ev.len,
                     ev.data ? (const char *)ev.data : "");
            break;
        default:
            break;
        }
    }
}

static void deliver(struct run *r)
{
    struct qp *q = &r->q;
    uint8_t buf[2048];
    for (int to = 0; to < 2; to++) {
        long n;
        uint8_t ecn = 0;
        uint64_t tag = 0;
        while ((n = vega_test_net_recvx(q->net, to, buf, sizeof buf, &ecn, &tag, q->now)) > 0) {
            struct qp_side *s = &q->side[to];
            if (to == 1 && !s->c) {
                vega_quic_hdr h;
                if (vega_quic_hdr_parse(&h, buf, (size_t)n, 0) < 0 ||
                    h.type != VEGA_QUIC_PKT_INITIAL)
                    continue;
                vega_quic_server_params sp = {.version = h.version,
                                              .dcid = h.dcid,
                                              .dcid_len = h.dcid_len,
                                              .scid = h.scid,
                                              .scid_len = h.scid_len};
                int rc = vega_quic_conn_server_new(&s->c, &q->scfg, &q->spath, &sp, q->now);
                clean(r, rc, "server_new");
                if (rc < 0) {
                    s->c = NULL;
                    continue; /* as an endpoint would: drop it, the client sends again */
                }
            }
            if (!s->c)
                continue;
            int rc =
                vega_quic_conn_read(s->c, to ? &q->spath : &q->path, ecn, buf, (size_t)n, q->now);
            clean(r, rc, "conn_read");
            note_closed(r, to, rc);
        }
    }
}

static void send_all(struct run *r)
{
    struct qp *q = &r->q;
    uint8_t buf[2048];
    for (int i = 0; i < 2; i++) {
        vega_quic_conn *c = q->side[i].c;
        for (int guard = 0; c && guard < 1000; guard++) {
            uint8_t ecn = 0;
            vega_quic_path p;
            vega_ssize n = vega_quic_conn_write(c, &p, &ecn, buf, sizeof buf, q->now);
            clean(r, (long)n, "conn_write");
            note_closed(r, i, (long)n);
            if (n <= 0)
                break;
            vega_test_net_sendx(q->net, i, buf, (size_t)n, ecn, i == 0 ? 40001 : 443, q->now);
        }
    }
}

/* Both connections are gone for good (closed, their closing or draining period over). */
/* The client's datagrams and key update, once the handshake allows them. */
static void extras(struct run *r)
{
    vega_quic_conn *c = r->q.side[0].c;
    if (!c || !r->handshake[0] || r->closing)
        return;
    while (r->dgrams_sent < 2) {
        int rc = vega_quic_datagram_send(c, "datagram", 8);
        clean(r, rc, "datagram_send");
        if (rc < 0)
            return;
        r->dgrams_sent++;
    }
    vega_quic_conn_info info;
    vega_quic_conn_get_info(c, &info);
    if (!r->key_updated && info.handshake_confirmed) {
        int rc = vega_quic_conn_key_update(c);
        clean(r, rc, "key_update");
        r->key_updated = rc == 0;
    }
}

static bool both_ended(const struct run *r)
{
    for (int i = 0; i < 2; i++)
        if (r->q.side[i].c && !vega_quic_conn_is_closed(r->q.side[i].c))
            return false;
    return true;
}

/* The server's credentials, loaded once: parsing them costs more than a handshake. */
static vega_crypto_cert_chain *g_chain;
static vega_crypto_key *g_key;
static vega_crypto_cert_store *g_ca;

static void load_creds(void)
{
    if (g_chain)
        return;
    VCHECK_EQ(vega_crypto_cert_chain_new(&g_chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(g_chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&g_key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&g_ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(g_ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
}

__attribute__((destructor)) static void free_creds(void)
{
    vega_crypto_cert_chain_free(g_chain);
    vega_crypto_key_free(g_key);
    vega_crypto_cert_store_free(g_ca);
}

/*
 * Handshake, upload len bytes on one stream, close once the server has it all, until both ends
 * closed (or the simulated limit). Returns false when the run did not end: time stood still
 * for too long, or the limit passed with a connection still open.
 */
static bool scenario(struct run *r, const uint8_t *data, size_t len, const struct sc_opts *so)
{
    struct qp *q = &r->q;
    vega_test_net_opts o = {.seed = 5, .delay_ns = 10 * MS, .loss_pct = so->loss_pct};
    load_creds();
    VCHECK_EQ(qp_init_with(q, g_chain, g_key, g_ca, &o, 11), 0);
    r->mem = (vega_quic_mem){tmem_malloc, tmem_calloc, tmem_realloc, tmem_free, &r->m};
    q->ccfg.mem = q->scfg.mem = &r->mem;
    q->ccfg.idle_timeout_ms = q->scfg.idle_timeout_ms = 3000;
    if (so->extras)
        q->ccfg.max_datagram_frame_size = q->scfg.max_datagram_frame_size = 1200;
    q->ccfg.tls.early_data = q->scfg.tls.early_data = true;
    q->ccfg.tls.session = so->session;
    q->ccfg.tls.session_len = so->session_len;
    r->early = so->session != NULL;
    r->by_ref = so->by_ref;
    r->up = data;
    r->up_len = len;
    r->code[0] = r->code[1] = UINT64_MAX;
    int rc = vega_quic_conn_client_new(&q->side[0].c, &q->ccfg, &q->path, q->now);
    clean(r, rc, "client_new");
    if (rc < 0) {
        r->refused = true;
        q->side[0].c = NULL;
        qp_fini(q);
        return true; /* refused at birth: nothing else to do */
    }
    uint64_t end = q->now + 60 * S, last = 0;
    unsigned spins = 0;
    bool ended = false;
    for (;;) {
        size_t enomem_before = r->enomem;
        deliver(r);
        for (int i = 0; i < 2; i++)
            drain_events(r, i);
        pump_upload(r);
        if (so->extras)
            extras(r);
        if (r->got_fin && (!so->extras || r->key_updated) && !r->closing && q->side[0].c) {
            rc = vega_quic_conn_close(q->side[0].c, VEGA_QUIC_CLOSE_APPLICATION, 0, "done");
            clean(r, rc, "conn_close");
            note_closed(r, 0, rc);
            r->closing = rc == 0 || rc == VEGA_ERR_CLOSED;
        }
        send_all(r);
        if (both_ended(r) && vega_test_net_next(q->net, 0) == QP_TIME_INF &&
            vega_test_net_next(q->net, 1) == QP_TIME_INF) {
            ended = true;
            break;
        }
        if (q->now != last)
            r->enomem_at_last = r->enomem;
        spins = q->now == last ? spins + 1 : 0;
        last = q->now;
        if (spins > 200) {
            /* Out of memory for good, the connections cannot move: an application gives up
             * on them (what matters then is that freeing them leaks nothing). Standing still
             * without -ENOMEM would be a busy loop the application cannot see. */
            r->end = r->enomem > r->enomem_at_last ? "stuck on -ENOMEM" : "time stood still";
            ended = r->m.fail_after && r->enomem > r->enomem_at_last;
            break;
        }
        uint64_t next = qp_min(vega_test_net_next(q->net, 0), vega_test_net_next(q->net, 1));
        for (int i = 0; i < 2; i++)
            if (q->side[i].c)
                next = qp_min(next, vega_quic_conn_expiry(q->side[i].c));
        /* After -ENOMEM an application tries again a little later, as memory may be back. */
        if (r->enomem > enomem_before)
            next = qp_min(next, q->now + MS);
        if (next == QP_TIME_INF) {
            ended = both_ended(r);
            r->end = "nothing left to do, a connection still open";
            break;
        }
        if (next > end) {
            r->end = "simulated time limit";
            break;
        }
        if (next > q->now)
            q->now = next;
        for (int i = 0; i < 2; i++) {
            vega_quic_conn *c = q->side[i].c;
            if (c && vega_quic_conn_expiry(c) <= q->now) {
                rc = vega_quic_conn_handle_expiry(c, q->now);
                clean(r, rc, "handle_expiry");
                note_closed(r, i, rc);
            }
        }
    }
    qp_fini(q); /* frees both connections */
    return ended;
}

static uint8_t *pattern(size_t len)
{
    uint8_t *p = malloc(len);
    VCHECK(p != NULL);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)i;
    return p;
}

VTEST(hook_makes_and_frees_every_block)
{
    size_t len = 100 * 1024;
    uint8_t *data = pattern(len);
    struct run *r = calloc(1, sizeof *r);
    VCHECK(r != NULL);
    struct sc_opts so = {0};
    VCHECK(scenario(r, data, len, &so));
    VCHECK(!r->bad);
    VCHECK(r->handshake[0] && r->handshake[1]);
    VCHECK_EQ(r->got, len);
    VCHECK(r->got_fin);
    VCHECK(r->closed[0] && r->closed[1]);
    VCHECK_EQ(r->enomem, 0);
    /* Streams, buffers, recovery, the handshake, keys and events all come from the hook. */
    VCHECK(r->m.blocks > 100);
    VCHECK(r->m.peak_bytes > len / 2);
    VCHECK_EQ(r->m.blocks, r->m.frees);
    VCHECK_EQ(r->m.live_blocks, 0);
    VCHECK_EQ(r->m.live_bytes, 0);
    free(r);
    free(data);
}

VTEST(hook_needs_all_four_functions)
{
    struct run *r = calloc(1, sizeof *r);
    VCHECK(r != NULL);
    struct qp *q = &r->q;
    load_creds();
    VCHECK_EQ(qp_init_with(q, g_chain, g_key, g_ca, NULL, 1), 0);
    r->mem = (vega_quic_mem){tmem_malloc, tmem_calloc, NULL, tmem_free, &r->m};
    q->ccfg.mem = &r->mem;
    VCHECK_EQ(vega_quic_conn_client_new(&q->side[0].c, &q->ccfg, &q->path, q->now), -EINVAL);
    VCHECK_EQ(r->m.calls, 0);
    r->mem.realloc = tmem_realloc;
    VCHECK_EQ(vega_quic_conn_client_new(&q->side[0].c, &q->ccfg, &q->path, q->now), 0);
    VCHECK(r->m.live_blocks > 0);
    qp_fini(q);
    VCHECK_EQ(r->m.live_blocks, 0);
    free(r);
}

/* Runs the small scenario failing call k (and every later one when after). Returns false (and
 * says why, naming k) when it hung, leaked or a call returned something unexpected. */
static bool sweep_one(const uint8_t *data, size_t len, const struct sc_opts *so, size_t k,
                      bool after)
{
    struct run *r = calloc(1, sizeof *r);
    VCHECK(r != NULL);
    r->m.fail_at = k;
    r->m.fail_after = after;
    bool ended = scenario(r, data, len, so);
    bool ok = ended && !r->bad && r->m.live_blocks == 0 && r->m.live_bytes == 0 &&
              r->m.blocks == r->m.frees;
    /* Every referenced piece went back exactly once, even when the run failed half-way. */
    if (ok && (r->bad_release || r->refs_released != r->refs_taken)) {
        ok = false;
        snprintf(r->why, sizeof r->why, "%zu referenced pieces taken, %zu releases%s",
                 r->refs_taken, r->refs_released, r->bad_release ? ", one unknown" : "");
    }
    /* One failure may cost the connection (a handshake cannot resume mid-message), but only
     * through a deliberate close: not a stall ended by the idle timeout, nor a protocol
     * violation from state the failure left inconsistent. */
    if (ok && !after && !(r->got == len && r->got_fin) && !r->refused) {
        bool deliberate = false;
        for (int i = 0; i < 2; i++) {
            uint64_t c = r->code[i];
            if (c == VEGA_QUIC_INTERNAL_ERROR || c == VEGA_QUIC_CRYPTO_ERROR + 80)
                deliberate = true;
            else if (c != UINT64_MAX) /* UINT64_MAX: that CLOSED event was lost */
                ok = false;
        }
        ok = ok && deliberate;
        if (!ok)
            snprintf(r->why, sizeof r->why, "not completed, closed with codes %llx/%llx",
                     (unsigned long long)r->code[0], (unsigned long long)r->code[1]);
    }
    if (!ok)
        fprintf(stderr,
                "loss %u%%, failing allocation %zu%s: %s, %s, %zu blocks / %zu bytes live, "
                "got %zu/%zu fin %d, closed %d/%d\n",
                so->loss_pct, k, after ? " and after" : "", ended ? "ended" : r->end,
                r->why[0] ? r->why : "clean returns", r->m.live_blocks, r->m.live_bytes, r->got,
                len, r->got_fin, r->closed[0], r->closed[1]);
    free(r);
    return ok;
}

/* Counts the calls of the clean run, then fails each in turn (one by one up to 200, then a
 * stride that keeps the sweep short). Returns how many runs went wrong. */
static size_t sweep(size_t len, const struct sc_opts *so)
{
    uint8_t *data = pattern(len);
    struct run *r = calloc(1, sizeof *r);
    VCHECK(r != NULL);
    VCHECK(scenario(r, data, len, so));
    VCHECK(!r->bad);
    VCHECK_EQ(r->got, len);
    if (so->by_ref) {
        VCHECK(r->refs_taken > 0);
        VCHECK_EQ(r->refs_released, r->refs_taken);
        VCHECK(!r->bad_release);
    }
    if (so->extras) {
        VCHECK_EQ(r->dgrams_got, 2);
        VCHECK(r->key_updated);
    }
    if (so->session) {
        VCHECK(r->resumed);
        VCHECK_EQ(r->early_data, VEGA_QUIC_EARLY_ACCEPTED);
    }
    size_t total = r->m.calls;
    free(r);
    VCHECK(total > 50);
    size_t stride = total > 1000 ? total / 400 : 1;
    size_t failures = 0;
    for (size_t k = 1; k <= total; k += k < 200 ? 1 : stride) {
        failures += !sweep_one(data, len, so, k, false);
        failures += !sweep_one(data, len, so, k, true);
    }
    free(data);
    return failures;
}

VTEST(every_allocation_may_fail)
{
    struct sc_opts so = {0};
    VCHECK_EQ(sweep(4096, &so), 0);
}

/* Loss brings retransmissions, PTOs and larger rings, with allocations of their own. */
VTEST(every_allocation_may_fail_under_loss)
{
    struct sc_opts so = {.loss_pct = 5};
    VCHECK_EQ(sweep(64 * 1024, &so), 0);
}

/* DATAGRAM queues and the next generation of 1-RTT keys. */
VTEST(every_allocation_may_fail_with_datagrams_and_key_update)
{
    struct sc_opts so = {.extras = true};
    VCHECK_EQ(sweep(4096, &so), 0);
}

/* The upload half referenced (zero-copy), half copied, under loss: segment records, their
 * releases on acknowledgement and at free, retransmissions read from the application's bytes. */
VTEST(every_allocation_may_fail_by_reference)
{
    struct sc_opts so = {.loss_pct = 5, .by_ref = true};
    VCHECK_EQ(sweep(32 * 1024, &so), 0);
}

/* A resumed handshake (ticket, PSK binder) with the upload in 0-RTT (early keys). */
VTEST(every_allocation_may_fail_resumed_with_0rtt)
{
    struct run *r = calloc(1, sizeof *r);
    VCHECK(r != NULL);
    uint8_t *data = pattern(4096);
    struct sc_opts so = {0};
    VCHECK(scenario(r, data, 4096, &so)); /* a first connection leaves a session */
    VCHECK(r->session_len > 0);
    so.session = r->session;
    so.session_len = r->session_len;
    VCHECK_EQ(sweep(4096, &so), 0);
    free(data);
    free(r);
}
