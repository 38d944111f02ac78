/* SPDX-License-Identifier: MIT */
/* The QUIC endpoint under attack, on loopback UDP (RFC 9000 §8, §21): Initial floods with and
 * without Retry, amplification, stream-count and flow-control abuse, a client that never reads,
 * close and reset storms, a peer that never acknowledges, and 100,000 junk datagrams. Through
 * each, a normal client keeps getting byte-exact answers; after each, the server holds no
 * connection and its allocator's live bytes are back to where they were once it listened. */
#include <poll.h>

#include "attack_util.h"

#define SOCKS_FLOOD 32

/* Sends n client Initials (each a fresh client core's first datagram: new random connection
 * IDs) to the server from SOCKS_FLOOD sockets that never read, noting the most handshakes the
 * server had in progress. With m, goes on past n until m did two more round trips. */
struct flood {
    vega_sock *u[SOCKS_FLOOD];
    long sent;
    uint64_t peak_hs;
};

static void flood_open(struct flood *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < SOCKS_FLOOD; i++) {
        vega_addr any = loopback(0);
        VCHECK_EQ(vega_udp_bind(&f->u[i], &any, 0), 0);
    }
}

static void flood_close(struct flood *f)
{
    for (int i = 0; i < SOCKS_FLOOD; i++)
        vega_sock_close(f->u[i]);
}

static void flood_send(struct flood *f, struct creds *k, struct asrv *v, long n, struct victim *m)
{
    uint8_t d[1500];
    int from = m ? atomic_load(&m->rounds) : 0;
    for (long i = 0; i < n || (m && atomic_load(&m->rounds) < from + 2 && i < 40 * n); i++) {
        size_t len = client_initial(k, &v->addr, d, sizeof d);
        (void)vega_udp_send_to(f->u[f->sent % SOCKS_FLOOD], d, len, &v->addr, DL(1000));
        f->sent++;
        if (i % 8 == 0) {
            vega_quic_endpoint_stats st = srv_stats(v);
            if (st.handshakes > f->peak_hs)
                f->peak_hs = st.handshakes;
            VCHECK(vega_yield() == 0);
        }
    }
}

/* §8.1.2: above retry_threshold handshakes in progress, Initials without a token get a Retry
 * and hold nothing; a normal client that connects in the middle of the flood follows the Retry
 * and is served. Half-open connections end at the handshake's idle timeout. */
VTEST_MT(initial_flood_retry, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.retry = VEGA_QUIC_RETRY_AUTO;
    so.retry_threshold = 8;
    so.max_handshakes = 64;
    so.quic.idle_timeout_ms = flood_idle_ms();    /* the handshakes' timeout, and the victim's */
    so.quic.initial_rtt_ns = 20 * VEGA_NS_PER_MS; /* 3 PTO under the idle timeout */
    struct asrv v;
    srv_start(&v, &so);
    long n = test_scaled(3000, 200);
    struct flood f;
    flood_open(&f);
    flood_send(&f, &k, &v, n / 3, NULL);
    struct victim m;
    victim_start(&m, &k, &v.addr, 30000);
    flood_send(&f, &k, &v, n - n / 3, &m);
    vega_quic_endpoint_stats st = srv_stats(&v);
    size_t peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr,
            "flood (retry): %ld Initials, %" PRIu64 " in, %" PRIu64 " Retry, %" PRIu64
            " accepted, peak %" PRIu64 " handshakes, peak %zu bytes held\n",
            f.sent, st.dgrams_in, st.retries_sent, st.conns_accepted, f.peak_hs, peak);
    VCHECK(atomic_load(&m.connected));
    VCHECK(st.retries_sent > 0);
    /* each socket's receive task may let one more in between reading the count and adding
     * to it (two workers, two sockets) */
    VCHECK(f.peak_hs <= so.retry_threshold + 2);
    VCHECK(f.peak_hs <= so.max_handshakes);
    /* every Initial got its connection or its Retry (the kernel may drop some before) */
    VCHECK(st.retries_sent + st.conns_accepted + st.dgrams_dropped <= st.dgrams_in);
    /* what is held is the half-open connections' (and the victim's) and nothing per Retry */
    VCHECK(peak <= (f.peak_hs + 2) * 256 * 1024);
    victim_stop(&m);
    flood_close(&f);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* Without Retry, max_handshakes bounds the half-open connections: the rest of the flood is
 * dropped. A client connected before the flood is served through it. */
VTEST_MT(initial_flood_max_handshakes, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.max_handshakes = 16;
    so.quic.idle_timeout_ms = flood_idle_ms();
    so.quic.initial_rtt_ns = 20 * VEGA_NS_PER_MS;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 30000);
    victim_wait(&m, 0, 1);
    long n = test_scaled(3000, 200);
    struct flood f;
    flood_open(&f);
    flood_send(&f, &k, &v, n, &m);
    vega_quic_endpoint_stats st = srv_stats(&v);
    fprintf(stderr,
            "flood (no retry): %ld Initials, %" PRIu64 " in, %" PRIu64 " accepted, %" PRIu64
            " dropped, peak %" PRIu64 " handshakes, peak %zu bytes held\n",
            f.sent, st.dgrams_in, st.conns_accepted, st.dgrams_dropped, f.peak_hs,
            atomic_load(&v.mem.peak) - v.base);
    VCHECK(f.peak_hs <= so.max_handshakes + 1); /* the same race, at most once per socket */
    VCHECK(st.dgrams_dropped > 0);
    VCHECK_EQ(st.retries_sent, 0);
    victim_stop(&m);
    flood_close(&f);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* The same at the default max_handshakes (1,000), the most half-open connections a server
 * keeps: 1,500 Initials make 1,000 of them (each costs its connection's memory until the
 * handshake times out), the rest is dropped, and all of it goes after the timeout. */
VTEST_MT(initial_flood_default_limits, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.idle_timeout_ms = flood_idle_ms();
    so.quic.initial_rtt_ns = 20 * VEGA_NS_PER_MS;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 30000);
    victim_wait(&m, 0, 1);
    /* the victim's round trips must go on through the flood; its connection, though, may end by
     * the server's idle timeout when a starved machine (a sanitizer's, a loaded CI box) takes
     * longer than that to get through the handshakes queued before its packets: then it
     * connects again (counted and printed; that is the timing, not the guarantee, and a
     * connection lost for any other reason still fails) */
    atomic_store(&m.idle_ok, true);
    long n = test_scaled(1500, 150);
    struct flood f;
    flood_open(&f);
    /* a fixed flood: that many handshakes at once can take every cycle of a slow machine (a
     * sanitizer's) for longer than the victim's idle timeout, which is what Retry is for */
    flood_send(&f, &k, &v, n, NULL);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    vega_quic_endpoint_stats st = srv_stats(&v);
    size_t peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr,
            "flood (defaults): %ld Initials, %" PRIu64 " accepted, %" PRIu64
            " dropped, peak %" PRIu64 " handshakes, peak %zu bytes held, victim reconnected %d\n",
            f.sent, st.conns_accepted, st.dgrams_dropped, f.peak_hs, peak,
            atomic_load(&m.reconnects));
    VCHECK(f.peak_hs <= 1000 + 1);
    /* at most 256 KiB per half-open connection: counted by the connections accepted (the
     * flood samples the handshake gauge between its sends, so a slow machine's peak of it can
     * be far below how many were alive at once) */
    uint64_t alive = st.conns_accepted < 1001 ? st.conns_accepted : 1001;
    VCHECK(peak <= (alive + 2) * 256 * 1024);
    victim_stop(&m);
    flood_close(&f);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* ---- the receive task's turn, driven by hand --------------------------------------------------
 */

static void turn_msg(vega_udp_msg *m, uint8_t *buf, size_t len, const vega_addr *from)
{
    memset(m, 0, sizeof *m);
    m->buf = buf;
    m->len = len;
    m->cap = len;
    m->addr = *from;
}

static uint64_t srv_conn_pkts_recv(struct vega_quic_ep_conn *c)
{
    VCHECK_EQ(vega__ep_conn_lock(c), 0);
    vega_quic_conn_info info;
    vega_quic_conn_get_info(c->qc, &info);
    vega__ep_conn_unlock(c, false);
    return info.pkts_recv;
}

/* Datagrams of a connection the server has go before new connections' Initials read in the same
 * batch, and a turn of the receive task opens EP_OPEN_PER_TURN of those at most
 * (EP_OPEN_PER_BUSY_TURN after a full batch); the rest wait, oldest first, EP_DEFER_MAX at
 * most (then dropped, counted). The turns are driven by hand on the server's socket, to which
 * nothing is sent (its receive task only waits), on one runtime thread: exact counts. */
VTEST_CT(rx_turn_order)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    struct cmem mem;
    cmem_init(&mem);
    so.mem = &mem.mem;
    vega_quic_endpoint *ep;
    VCHECK_EQ(vega_quic_endpoint_new(&ep, &so), 0);
    vega_addr any = loopback(0), srv, at, other_at;
    VCHECK_EQ(vega_quic_endpoint_listen(ep, &any, 0, &srv), 0);
    struct ep_sock *s = ep->socks[0];
    VCHECK_EQ(s->rx_n, (size_t)EP_RX_BATCH);
    vega_sock *sink, *other;
    VCHECK_EQ(vega_udp_bind(&sink, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(sink, &at), 0);
    VCHECK_EQ(vega_udp_bind(&other, &any, 0), 0); /* where the flood's answers go */
    VCHECK_EQ(vega_sock_local_addr(other, &other_at), 0);

    /* one connection, made through the turns */
    vega_quic_opts co;
    vega_quic_opts_init(&co);
    co.tls.ca = k.ca;
    co.tls.server_name = "localhost";
    co.tls.alpn[0] = "vega-test";
    co.tls.n_alpn = 1;
    vega_quic_path p;
    memset(&p, 0, sizeof p);
    memcpy(&p.local, &at.ss, at.len);
    p.local_len = at.len;
    memcpy(&p.remote, &srv.ss, srv.len);
    p.remote_len = srv.len;
    vega_quic_conn *qc;
    VCHECK_EQ(vega_quic_conn_client_new(&qc, &co, &p, vega_now()), 0);
    enum {
        B = EP_RX_BATCH
    };
    static uint8_t bufs[B][1500];
    static uint8_t in[65536];
    vega_udp_msg msgs[B];
    vega_quic_conn_info ci = {0};
    for (int r = 0; r < 200 && !ci.handshake_confirmed; r++) {
        int n = 0;
        vega_ssize w;
        while (n < B && (w = vega_quic_conn_write(qc, NULL, NULL, bufs[n], sizeof bufs[n],
                                                  vega_now())) > 0) {
            turn_msg(&msgs[n], bufs[n], (size_t)w, &at);
            n++;
        }
        (void)vega__ep_rx_turn(s, msgs, n, vega_now());
        while (s->defer_len)
            (void)vega__ep_rx_turn(s, msgs, 0, vega_now());
        for (int i = 0; i < 8; i++)
            VCHECK(vega_yield() == 0); /* the send task answers */
        vega_ssize got;
        while ((got = vega_udp_recv_from(sink, in, sizeof in, NULL, DL(20))) > 0)
            (void)vega_quic_conn_read(qc, &p, 0, in, (size_t)got, vega_now());
        vega_quic_event ev;
        while (vega_quic_conn_next_event(qc, &ev))
            ;
        vega_quic_conn_get_info(qc, &ci);
    }
    VCHECK(ci.handshake_confirmed);
    vega_quic_endpoint_stats st;
    vega_quic_endpoint_get_stats(ep, &st);
    VCHECK_EQ(st.conns_accepted, 1);

    /* 10 Initials, then a short-header packet of the connection: it is served in this turn,
     * and EP_OPEN_PER_TURN of the Initials are opened */
    for (int i = 0; i < 10; i++)
        turn_msg(&msgs[i], bufs[i], client_initial(&k, &srv, bufs[i], sizeof bufs[i]), &other_at);
    uint64_t sid;
    VCHECK_EQ(vega_quic_stream_open(qc, true, &sid), 0);
    VCHECK_EQ(vega_quic_stream_write(qc, sid, "x", 1, false), 1);
    vega_ssize w = vega_quic_conn_write(qc, NULL, NULL, bufs[10], sizeof bufs[10], vega_now());
    VCHECK(w > 0 && !(bufs[10][0] & 0x80));
    turn_msg(&msgs[10], bufs[10], (size_t)w, &at);
    struct vega_quic_ep_conn *est = ep->conns; /* the one connection (the receive task's) */
    VCHECK(est && !est->next);
    uint64_t before = srv_conn_pkts_recv(est);
    VCHECK_EQ(vega__ep_rx_turn(s, msgs, 11, vega_now()), (size_t)EP_OPEN_PER_TURN);
    vega_quic_endpoint_get_stats(ep, &st);
    VCHECK_EQ(st.conns_accepted, 1 + EP_OPEN_PER_TURN);
    VCHECK_EQ(s->defer_len, (size_t)(10 - EP_OPEN_PER_TURN));
    VCHECK_EQ(srv_conn_pkts_recv(est), before + 1);
    /* turns with nothing read open the rest, EP_OPEN_PER_TURN at a time */
    VCHECK_EQ(vega__ep_rx_turn(s, msgs, 0, vega_now()), (size_t)EP_OPEN_PER_TURN);
    VCHECK_EQ(vega__ep_rx_turn(s, msgs, 0, vega_now()), (size_t)(10 - 2 * EP_OPEN_PER_TURN));
    VCHECK_EQ(s->defer_len, 0);
    VCHECK_EQ(vega__ep_rx_turn(s, msgs, 0, vega_now()), 0);
    vega_quic_endpoint_get_stats(ep, &st);
    VCHECK_EQ(st.conns_accepted, 11);

    /* full batches of Initials: one opened per turn, the queue holds EP_DEFER_MAX, the rest is
     * dropped; every Initial is one of the three */
    uint64_t dropped0 = st.dgrams_dropped;
    size_t fed = 0, opened = 0, turns = EP_DEFER_MAX / (B - EP_OPEN_PER_BUSY_TURN) + 2;
    for (size_t t = 0; t < turns; t++) {
        for (int i = 0; i < B; i++)
            turn_msg(&msgs[i], bufs[i], client_initial(&k, &srv, bufs[i], sizeof bufs[i]),
                     &other_at);
        fed += B;
        size_t o = vega__ep_rx_turn(s, msgs, B, vega_now());
        VCHECK_EQ(o, (size_t)EP_OPEN_PER_BUSY_TURN);
        opened += o;
        VCHECK(s->defer_len <= EP_DEFER_MAX);
        VCHECK(s->defer_bytes <= EP_DEFER_BYTES);
    }
    vega_quic_endpoint_get_stats(ep, &st);
    VCHECK_EQ(s->defer_len, (size_t)EP_DEFER_MAX - EP_OPEN_PER_BUSY_TURN);
    VCHECK_EQ(st.conns_accepted, 11 + opened);
    VCHECK_EQ(st.dgrams_dropped - dropped0, fed - opened - s->defer_len);
    fprintf(stderr,
            "turns: %zu Initials in full batches, %zu opened, %zu queued, %" PRIu64 " dropped\n",
            fed, opened, s->defer_len, st.dgrams_dropped - dropped0);

    /* what waits is freed with the endpoint */
    vega_quic_conn_free(qc);
    vega_quic_endpoint_free(ep);
    VCHECK_EQ(cmem_live(&mem), 0);
    vega_sock_close(sink);
    vega_sock_close(other);
    creds_free(&k);
}

/* vega_quic_endpoint_new_pending: an Initial the kernel holds on the server's socket counts
 * until the receive task read it (it was not seen empty since), and then the connection it
 * opened is a handshake. One runtime thread: the receive task runs only when this one yields. */
VTEST_CT(new_pending)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    vega_quic_endpoint *ep;
    VCHECK_EQ(vega_quic_endpoint_new(&ep, &so), 0);
    vega_addr any = loopback(0), srv;
    VCHECK_EQ(vega_quic_endpoint_listen(ep, &any, 0, &srv), 0);
    for (int i = 0; i < 8; i++)
        VCHECK(vega_yield() == 0); /* the receive task waits in its first read */
    uint64_t t = vega_now();
    VCHECK_EQ(vega_quic_endpoint_new_pending(ep, t), 0);
    VCHECK_EQ(vega_quic_endpoint_new_pending(NULL, t), 0);
    vega_sock *u;
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    uint8_t d[1500];
    size_t len = client_initial(&k, &srv, d, sizeof d);
    VCHECK_EQ(vega_udp_send_to(u, d, len, &srv, DL(1000)), (vega_ssize)len);
    /* until the kernel queued it (this thread blocks: the receive task cannot take it) */
    struct pollfd pf = {.fd = vega_sock_fd(ep->socks[0]->sock), .events = POLLIN};
    VCHECK_EQ(poll(&pf, 1, 10000), 1);
    VCHECK_EQ(vega_quic_endpoint_new_pending(ep, t), 1);
    vega_quic_endpoint_stats st;
    for (int i = 0; i < 10000; i++) {
        vega_quic_endpoint_get_stats(ep, &st);
        if (vega_quic_endpoint_new_pending(ep, t) == 0 && st.conns_accepted == 1)
            break;
        VCHECK(vega_yield() == 0);
    }
    VCHECK_EQ(vega_quic_endpoint_new_pending(ep, t), 0);
    VCHECK_EQ(st.conns_accepted, 1);
    VCHECK_EQ(st.handshakes, 1);
    vega_sock_close(u);
    vega_quic_endpoint_free(ep);
    creds_free(&k);
}

/* §8.1: before the client's address is validated, a server sends at most three times the bytes
 * it received. A client that sends one Initial and nothing more, to a server whose first flight
 * is larger than that (a long certificate chain), gets at most 3 x 1200 bytes, retransmissions
 * included, until the connection times out. */
VTEST_MT(amplification_limit, 2)
{
    struct creds k;
    creds_load(&k);
    static const char *const extra[] = {QT_SRV_RSA_PEM, QT_SRV_ED_PEM, QT_CLIENT_PEM, QT_CA_PEM,
                                        QT_OTHER_CA_PEM};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        VCHECK_EQ(vega_crypto_cert_chain_add(k.chain, extra[i], strlen(extra[i])), 0);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.idle_timeout_ms = 600;
    so.quic.initial_rtt_ns = 20 * VEGA_NS_PER_MS; /* several PTOs before the timeout */
    struct asrv v;
    srv_start(&v, &so);
    /* a real client receives more than 3 x 1200 bytes in its handshake: the limit binds */
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &v.addr, &cc, &c, DL(20000)), 0);
    roundtrip(c, 5000, 1);
    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK(info.bytes_recv > 3 * 1200);
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL), 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    srv_check_clean(&v);
    /* the attacker: one Initial, then only listening */
    vega_sock *u;
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    uint8_t d[1500];
    size_t len = client_initial(&k, &v.addr, d, sizeof d);
    VCHECK_EQ(len, 1200);
    VCHECK_EQ(vega_udp_send_to(u, d, len, &v.addr, DL(1000)), (vega_ssize)len);
    uint64_t accepted0 = srv_stats(&v).conns_accepted;
    size_t got = 0, dgrams = 0;
    vega_deadline dl = DL(20000);
    for (;;) {
        vega_quic_endpoint_stats st = srv_stats(&v);
        bool gone = st.conns_accepted > accepted0 && st.conns_open == 0;
        vega_ssize r = vega_udp_recv_from(u, d, sizeof d, NULL, gone ? vega_now() : DL(5));
        if (r > 0) {
            got += (size_t)r;
            dgrams++;
        } else if (gone || vega_now() >= dl) {
            break;
        }
    }
    fprintf(stderr, "amplification: 1200 bytes in, %zu bytes in %zu datagrams out\n", got, dgrams);
    VCHECK_EQ(srv_stats(&v).conns_open, 0);
    VCHECK(got > 0);
    VCHECK(got <= 3 * len);
    vega_sock_close(u);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* §4.6: a stream beyond the limit the server advertised is a connection error
 * STREAM_LIMIT_ERROR; the server closes that connection alone. */
VTEST_MT(stream_limit_abuse, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.max_streams_bidi = 8;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    struct rawc r;
    rawc_open(&r, &k, &v.addr, NULL);
    /* client bidirectional streams 0, 4, ... 28 are the 8 allowed: 32 is the ninth */
    vega_quic_frame f = qf_stream(32, 0, "Ehello", 6, true);
    rawc_forge(&r, &f, 1);
    rawc_wait_closed(&r);
    VCHECK_EQ(r.close_code, VEGA_QUIC_STREAM_LIMIT_ERROR);
    VCHECK(!r.close_app && !r.close_local);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    victim_stop(&m);
    rawc_close(&r);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* §4.1: data beyond a stream's flow-control limit is a connection error FLOW_CONTROL_ERROR. */
VTEST_MT(flow_control_stream_abuse, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.max_stream_data = 16384;
    so.quic.max_stream_data_max = 16384;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    struct rawc r;
    rawc_open(&r, &k, &v.addr, NULL);
    vega_quic_frame f = qf_stream(0, 16384, "x", 1, false); /* byte 16385 of the stream */
    rawc_forge(&r, &f, 1);
    rawc_wait_closed(&r);
    VCHECK_EQ(r.close_code, VEGA_QUIC_FLOW_CONTROL_ERROR);
    VCHECK(!r.close_app && !r.close_local);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    victim_stop(&m);
    rawc_close(&r);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* §4.1: the connection's limit counts the highest offset of every stream, gaps included:
 * three streams each within their own limit but together beyond max_data are a
 * FLOW_CONTROL_ERROR, sent in one small packet. */
VTEST_MT(flow_control_conn_abuse, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.max_data = 65536;
    so.quic.max_data_max = 65536;
    so.quic.max_stream_data = 32768;
    so.quic.max_stream_data_max = 32768;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    struct rawc r;
    rawc_open(&r, &k, &v.addr, NULL);
    vega_quic_frame f[3];
    for (int i = 0; i < 3; i++)
        f[i] = qf_stream((uint64_t)i * 4, 30000, "xxxx", 4, false);
    rawc_forge(&r, f, 3);
    rawc_wait_closed(&r);
    VCHECK_EQ(r.close_code, VEGA_QUIC_FLOW_CONTROL_ERROR);
    VCHECK(!r.close_app && !r.close_local);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    victim_stop(&m);
    rawc_close(&r);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* A client that opens 100 streams asking for 1 MiB each and never reads: the server holds at
 * most stream_send_buffer per stream (and what the client's windows took), its writers wait,
 * and all of it goes when the client leaves. */
VTEST_MT(client_never_reads, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.stream_send_buffer = 64 * 1024;
    so.quic.idle_timeout_ms = 30000;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &v.addr, &cc, &c, DL(20000)), 0);
    enum {
        N = 100
    };
    static vega_stream *s[N];
    const uint8_t ask[5] = {'S', 0, 0x10, 0, 0}; /* 1 MiB */
    for (int i = 0; i < N; i++) {
        VCHECK_EQ(vega_quic_ep_stream_open(c, true, &s[i], NULL, DL(20000)), 0);
        VCHECK_EQ(vega_stream_write(s[i], ask, sizeof ask, NULL, DL(20000)), 5);
        VCHECK_EQ(vega_stream_shutdown(s[i], SHUT_WR, 0), 0);
    }
    /* the server fills what it may: the client's windows, then its send buffers */
    size_t want = (size_t)N * 40 * 1024;
    vega_deadline dl = DL(30000);
    while (atomic_load(&v.written) < want && vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK(atomic_load(&v.written) >= want);
    int from = atomic_load(&m.rounds);
    victim_wait(&m, from, 2);
    size_t held = cmem_live(&v.mem) - v.base, peak = atomic_load(&v.mem.peak) - v.base;
    fprintf(stderr, "never reads: %zu bytes written by the server, %zu held, peak %zu\n",
            atomic_load(&v.written), held, peak);
    VCHECK(held >= (size_t)N * 32 * 1024); /* the buffers are really full */
    VCHECK(peak <= (size_t)N * (64 + 16) * 1024 + 2 * 1024 * 1024);
    /* the streams go first (closing them after the connection ended: finding 2) */
    for (int i = 0; i < N; i++)
        vega_stream_close(s[i], 0);
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, DL(CLOSE_WAIT_MS)), 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    victim_stop(&m);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* A client's vega_stream closed after its connection ended (the peer closed it, or a timeout)
 * must not touch the connection's socket, which the endpoint freed when the connection ended:
 * a quarantining allocator catches the write after free without ASan. */
VTEST_CT(stream_close_after_conn_end)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    struct asrv v;
    srv_start(&v, &so);
    struct cmem cm;
    cmem_init(&cm);
    cmem_quarantine_on(&cm);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    co.mem = &cm.mem;
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &v.addr, &cc, &c, DL(20000)), 0);
    vega_stream *s;
    VCHECK_EQ(vega_quic_ep_stream_open(c, true, &s, NULL, DL(20000)), 0);
    VCHECK_EQ(vega_stream_write(s, "Ehello", 6, NULL, DL(20000)), 6);
    uint8_t buf[16];
    VCHECK_EQ(vega_stream_read(s, buf, sizeof buf, DL(20000)), 6);
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, DL(CLOSE_WAIT_MS)), 0);
    /* the connection's socket and its tasks are gone */
    vega_deadline dl = DL(10000);
    while (atomic_load(&cep->client_socks) > 0 && vega_now() < dl)
        vega_sleep_ms(2);
    VCHECK_EQ(atomic_load(&cep->client_socks), 0);
    VCHECK_EQ(vega_stream_read(s, buf, sizeof buf, DL(1000)), VEGA_ERR_QUIC_EP_CLOSED);
    vega_stream_close(s, 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    VCHECK_EQ(cmem_quarantine_check(&cm), 0);
    VCHECK_EQ(cmem_live(&cm), 0);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* Many clients connect, each does a round trip, and all close at once (half of them by closing,
 * half by freeing their endpoint): the server forgets every one of them. */
struct storm {
    struct creds *k;
    vega_addr addr;
    vega_barrier *all;
    int idx;
};

static void *storm_client(void *arg)
{
    struct storm *a = arg;
    vega_quic_endpoint_opts co;
    client_opts(&co, a->k);
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &a->addr, &cc, &c, DL(30000)), 0);
    roundtrip(c, 3000, (uint32_t)a->idx);
    VCHECK(vega_barrier_wait(a->all, DL(60000)) >= 0);
    if (a->idx % 2)
        VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 7, "storm"), 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    return NULL;
}

VTEST_MT(close_storm, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    int n = (int)test_scaled(48, 8);
    vega_barrier all;
    vega_barrier_init(&all, (unsigned)n);
    struct storm *a = calloc((size_t)n, sizeof *a);
    vega_task **t = calloc((size_t)n, sizeof *t);
    VCHECK(a && t);
    for (int i = 0; i < n; i++) {
        a[i] = (struct storm){&k, v.addr, &all, i};
        VCHECK_EQ(vega_task_spawn(&t[i], storm_client, &a[i]), 0);
    }
    for (int i = 0; i < n; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, DL(60000)), 0);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    victim_stop(&m);
    vega_quic_endpoint_stats st = srv_stats(&v);
    fprintf(stderr, "close storm: %d clients, peak %zu bytes held\n", n,
            atomic_load(&v.mem.peak) - v.base);
    VCHECK_EQ(st.conns_accepted, (uint64_t)n + 1);
    srv_check_clean(&v);
    srv_stop(&v);
    vega_barrier_fini(&all);
    free(a);
    free(t);
    creds_free(&k);
}

/* A client that opens stream after stream and resets each at once (RESET_STREAM and
 * STOP_SENDING) right after its first bytes: every server task that took one ends while the
 * connection is still open, they never number more than the stream limit, and the memory of
 * a thousand such streams is not kept. */
static void storm_event(void *user, vega_quic_ep_conn *c, vega_quic_conn *qc,
                        const vega_quic_event *ev)
{
    (void)c;
    (void)qc;
    if (ev->type == VEGA_QUIC_EV_STREAMS_AVAILABLE || ev->type == VEGA_QUIC_EV_CLOSED)
        vega_notify_all(user);
}

/* What the server holds once its stream tasks ended and the victim is between two round
 * trips (then it goes on). */
static size_t quiet_held(struct asrv *v, struct victim *m)
{
    victim_pause(m, true);
    vega_deadline dl = DL(20000);
    while (atomic_load(&v->streams_live) > 0 && vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK_EQ(atomic_load(&v->streams_live), 0);
    size_t held = cmem_live(&v->mem) - v->base;
    victim_pause(m, false);
    return held;
}

VTEST_MT(reset_storm, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.max_streams_bidi = 32;
    so.quic.idle_timeout_ms = 30000;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    vega_notify credit;
    vega_notify_init(&credit);
    vega_quic_endpoint_opts co;
    client_opts(&co, &k);
    co.cb.on_event = storm_event;
    vega_quic_endpoint *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&cep, &co), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost", .user = &credit};
    vega_quic_ep_conn *c;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &v.addr, &cc, &c, DL(20000)), 0);
    long n = test_scaled(2000, 200);
    uint8_t body[1000];
    memset(body, 'E', sizeof body);
    int peak_tasks = 0;
    size_t held_early = 0;
    for (long i = 0; i < n;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(c);
        VCHECK(qc != NULL);
        uint64_t id;
        int rc = vega_quic_stream_open(qc, true, &id);
        if (rc == 0) {
            VCHECK_EQ(vega_quic_stream_write(qc, id, body, sizeof body, false), 1000);
            VCHECK_EQ(vega_quic_stream_reset(qc, id, 0x42), 0);
            VCHECK_EQ(vega_quic_stream_stop(qc, id, 0x42), 0);
        }
        vega_quic_ep_conn_unlock(c);
        if (rc == VEGA_ERR_FULL) {
            VCHECK(vega_notify_wait(&credit, DL(20000)) == 0);
            continue;
        }
        VCHECK_EQ(rc, 0);
        i++;
        int live = atomic_load(&v.streams_live);
        peak_tasks = live > peak_tasks ? live : peak_tasks;
        if (i == n / 4)
            held_early = quiet_held(&v, &m);
    }
    /* the server's stream tasks end with their streams, the connection still open */
    size_t held = quiet_held(&v, &m);
    VCHECK_EQ(atomic_load(&v.streams_live), 0);
    VCHECK(peak_tasks <= 32);
    /* nothing kept per stream: what the last streams still hold (until acknowledged) goes */
    victim_pause(&m, true);
    held = cmem_wait_below(&v.mem, v.base + held_early + 16 * 1024, 10000) - v.base;
    victim_pause(&m, false);
    fprintf(stderr,
            "reset storm: %ld streams, %d taken by tasks, at most %d at once, held %zu "
            "after a quarter, %zu at the end\n",
            n, atomic_load(&v.streams_total), peak_tasks, held_early, held);
    VCHECK(held <= held_early + 16 * 1024);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    VCHECK_EQ(vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL), 0);
    VCHECK_EQ(vega_quic_ep_conn_wait_closed(c, DL(CLOSE_WAIT_MS)), 0);
    vega_quic_ep_conn_release(c);
    vega_quic_endpoint_free(cep);
    vega_notify_fini(&credit);
    victim_stop(&m);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* A client that asks for data and then never sends anything again (no ACK ever): the server's
 * probes back off exponentially (RFC 9002 §6.2.1) and the connection ends at the idle timeout
 * (RFC 9000 §10.1). With a PTO of at least max_ack_delay (25 ms) doubling each time, a 1.5 s
 * timeout leaves room for at most 6 probes of two datagrams; without backoff it would be ~60. */
VTEST_MT(peer_never_acks, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.idle_timeout_ms = 1500;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 20000);
    victim_wait(&m, 0, 1);
    vega_quic_opts ro;
    vega_quic_opts_init(&ro);
    ro.idle_timeout_ms = 1500;
    struct rawc r;
    rawc_open(&r, &k, &v.addr, &ro);
    /* let the handshake's last flight be acknowledged both ways: HANDSHAKE_DONE and what came
     * with it reach the client, which answers */
    vega_deadline dl = DL(20000);
    while (srv_stats(&v).handshakes > 0 && vega_now() < dl)
        vega_sleep_ms(2);
    /* t0 before the request leaves: the server's idle timer starts when it gets the request
     * (or answers it), never earlier, so the close comes at least 1.5 s after t0; taken after,
     * a slow (sanitized, loaded) client thread could read the clock after the server had it */
    uint64_t t0 = vega_now();
    vega_quic_conn *qc = rawc_lock(&r);
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(qc, true, &id), 0);
    const uint8_t ask[5] = {'S', 0, 0x03, 0, 0}; /* 192 KiB */
    VCHECK_EQ(vega_quic_stream_write(qc, id, ask, sizeof ask, true), 5);
    rawc_unlock(&r); /* the request leaves: the last datagram the server gets */
    atomic_store(&r.silent, true);
    atomic_store(&r.deaf, true);
    size_t d0 = atomic_load(&r.rx_dgrams);
    int ended0 = atomic_load(&v.conns_ended);
    /* the victim's connection stays: the raw client's is the one that ends */
    dl = DL(30000);
    while (atomic_load(&v.conns_ended) == ended0 && vega_now() < dl)
        vega_sleep_ms(5);
    VCHECK_EQ(atomic_load(&v.conns_ended), ended0 + 1);
    uint64_t took = (vega_now() - t0) / VEGA_NS_PER_MS;
    size_t probes = atomic_load(&r.rx_dgrams) - d0;
    fprintf(stderr,
            "never acks: %zu datagrams from the server after the client went quiet, "
            "closed after %" PRIu64 " ms\n",
            probes, took);
    VCHECK_EQ(atomic_load(&v.idle_closed), 1);
    VCHECK(took + 1 >= 1500);
    /* the initial window's worth (~12 datagrams of 1200 bytes) plus two per probe */
    VCHECK(probes <= 14 + 2 * 6 + 4);
    victim_wait(&m, atomic_load(&m.rounds), 2);
    victim_stop(&m);
    rawc_close(&r);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}

/* 100,000 junk datagrams (random bytes, v1 long headers that look like Initials, other long
 * headers, short headers, unknown versions, runts) while a client downloads: nothing of the
 * junk makes a connection or holds memory, and the client gets every byte. */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static size_t junk(uint8_t *d, uint64_t *x)
{
    size_t kind = rng_next(x) % 6, len;
    switch (kind) {
    case 1: /* a v1 Initial's header, then noise: the server tries it */
    case 3: /* an unknown version in a 1200-byte datagram: Version Negotiation */
        len = 1200 + rng_next(x) % 200;
        break;
    case 2: /* a short header: a stateless reset, within the rate */
        len = 21 + rng_next(x) % 80;
        break;
    case 5: /* runts */
        len = 1 + rng_next(x) % 8;
        break;
    default:
        len = 1 + rng_next(x) % 1400;
    }
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = rng_next(x);
        memcpy(d + i, &w, len - i < 8 ? len - i : 8);
    }
    if (kind == 1 || kind == 3 || kind == 4) {
        d[0] = (uint8_t)(0xc0 | (kind == 4 ? 0x10 + (d[0] & 0x20) : 0) | (d[0] & 0x0f));
        d[1] = d[2] = d[3] = 0;
        d[4] = 1;
        if (kind == 3)
            d[1] = 0x7a;
        d[5] = (uint8_t)(8 + d[5] % 13);
    } else if (kind == 2) {
        d[0] = (uint8_t)(0x40 | (d[0] & 0x3f));
    }
    return len;
}

VTEST_MT(junk_100k, 2)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    srv_opts(&so, &k);
    so.quic.idle_timeout_ms = 30000;
    struct asrv v;
    srv_start(&v, &so);
    struct victim m;
    victim_start(&m, &k, &v.addr, 300000);
    victim_wait(&m, 0, 1);
    vega_quic_endpoint_stats st0 = srv_stats(&v);
    vega_sock *u;
    vega_addr any = loopback(0);
    VCHECK_EQ(vega_udp_bind(&u, &any, 0), 0);
    enum {
        B = 64
    };
    uint8_t *buf = malloc((size_t)B * 1500);
    vega_udp_msg *msg = calloc(B, sizeof *msg);
    VCHECK(buf && msg);
    long n = test_scaled(100000, 5000), sent = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int from = atomic_load(&m.rounds);
    uint64_t t0 = vega_now();
    while (sent < n) {
        for (int i = 0; i < B; i++) {
            msg[i].buf = buf + (size_t)i * 1500;
            msg[i].len = junk(msg[i].buf, &x);
            msg[i].addr = v.addr;
        }
        int w = vega_udp_send_batch(u, msg, B, DL(1000));
        sent += w > 0 ? w : 1;
        VCHECK(vega_yield() == 0);
    }
    victim_wait(&m, from, 2);
    vega_quic_endpoint_stats st = srv_stats(&v);
    fprintf(stderr,
            "junk: %ld sent, %" PRIu64 " in, %" PRIu64 " dropped, %" PRIu64 " VN, %" PRIu64
            " resets, victim %d round trips meanwhile, peak %zu bytes held\n",
            sent, st.dgrams_in - st0.dgrams_in, st.dgrams_dropped - st0.dgrams_dropped, st.vn_sent,
            st.resets_sent, atomic_load(&m.rounds) - from, atomic_load(&v.mem.peak) - v.base);
    VCHECK(st.dgrams_in > st0.dgrams_in);
    VCHECK(st.dgrams_dropped > st0.dgrams_dropped);
    VCHECK_EQ(st.conns_accepted, 1); /* the victim's alone */
    /* max_resets_per_s (1000 by default) answers without a connection, resets and Version
     * Negotiation together, in each second that began */
    VCHECK(st.resets_sent + st.vn_sent <= 1000 * ((vega_now() - t0) / VEGA_NS_PER_S + 2));
    free(buf);
    free(msg);
    vega_sock_close(u);
    victim_stop(&m);
    srv_check_clean(&v);
    srv_stop(&v);
    creds_free(&k);
}
