/* SPDX-License-Identifier: MIT */
/* The peer of vega-quic-bulk: the same in-memory QUIC bulk transfer (client and server in one
 * thread, one unidirectional stream client->server over bench/quic/bench_link.h, the link both
 * benchmarks share) driven through ngtcp2 + GnuTLS, so bench/run-quic-peers.sh can print the two
 * stacks' MB per CPU second side by side. Written against ngtcp2 0.12 (Debian 12), whose API
 * differs from later releases. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID under -std=c17 */
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "bench_link.h" /* the link both benchmarks time their transfer over */

#define DGRAM_MAX    BL_DGRAM_MAX /* the datagram size vega's bench settles on */
#define CHUNK        (1u << 20) /* the stream repeats this pattern; ngtcp2 keeps pointers into it */
#define SIM_LIMIT_NS (600ull * NGTCP2_SECONDS)

static const char ALPN[] = "hq-interop";

/* ---- endpoints ---------------------------------------------------------------------------- */

struct ep {
    ngtcp2_conn *conn;
    gnutls_session_t tls;
    ngtcp2_crypto_conn_ref ref;
    struct sockaddr_in local, remote;
    ngtcp2_path path;
    struct bl_link *out;
    bool server;
    /* the client's stream */
    int64_t sid;
    uint64_t sent_off;
    bool fin_sent, blocked;
    /* the server's receive side */
    uint64_t got;
    bool fin, bad;
};

static uint8_t pattern[CHUNK];
static uint64_t want;
static uint64_t now = NGTCP2_SECONDS;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((struct ep *)ref->user_data)->conn;
}

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
    (void)ctx;
    gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *user)
{
    (void)conn;
    (void)user;
    uint8_t b[NGTCP2_MAX_CIDLEN];
    if (gnutls_rnd(GNUTLS_RND_RANDOM, b, cidlen) < 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) < 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    ngtcp2_cid_init(cid, b, cidlen);
    return 0;
}

/* The sink: compares against the pattern, as vega's bench does with the bytes it peeks, and
 * returns the credit at once, as an application that consumes immediately would. */
static int recv_stream_cb(ngtcp2_conn *conn, uint32_t flags, int64_t sid, uint64_t off,
                          const uint8_t *data, size_t len, void *user, void *suser)
{
    (void)suser;
    struct ep *e = user;
    size_t done = 0;
    while (done < len) {
        size_t p = (size_t)((off + done) % CHUNK);
        size_t n = len - done < CHUNK - p ? len - done : CHUNK - p;
        if (memcmp(data + done, pattern + p, n) != 0)
            e->bad = true;
        done += n;
    }
    e->got += len;
    if (flags & NGTCP2_STREAM_DATA_FLAG_FIN)
        e->fin = true;
    ngtcp2_conn_extend_max_stream_offset(conn, sid, len);
    ngtcp2_conn_extend_max_offset(conn, len);
    return 0;
}

static void set_addr(struct sockaddr_in *a, uint16_t port)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void ep_path(struct ep *e)
{
    e->path.local.addr = (ngtcp2_sockaddr *)&e->local;
    e->path.local.addrlen = sizeof e->local;
    e->path.remote.addr = (ngtcp2_sockaddr *)&e->remote;
    e->path.remote.addrlen = sizeof e->remote;
    e->path.user_data = NULL;
}

static void common_settings(ngtcp2_settings *s, ngtcp2_transport_params *p)
{
    ngtcp2_settings_default(s);
    s->initial_ts = now;
    s->cc_algo = NGTCP2_CC_ALGO_CUBIC; /* the default in 0.12; vega runs CUBIC too */
    s->max_tx_udp_payload_size = DGRAM_MAX;
    s->no_tx_udp_payload_size_shaping = 1; /* 1452 at once, as vega ends up */
    s->no_pmtud = 1;
    /* auto-tuned windows up to what vega's bench allows (32 MiB stream, 64 MiB conn) */
    s->max_stream_window = 32u << 20;
    s->max_window = 64u << 20;
    ngtcp2_transport_params_default(p);
    p->initial_max_stream_data_uni = 16u << 20;
    p->initial_max_data = 32u << 20;
    p->initial_max_streams_uni = 4;
    p->initial_max_streams_bidi = 0;
    p->max_idle_timeout = 30 * NGTCP2_SECONDS;
    p->max_udp_payload_size = DGRAM_MAX;
    p->active_connection_id_limit = 7;
}

static int tls_session(struct ep *e, gnutls_certificate_credentials_t cred, const char *prio)
{
    unsigned fl = (e->server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_END_OF_EARLY_DATA;
    if (gnutls_init(&e->tls, fl) < 0)
        return -1;
    const char *where = NULL;
    int rv = gnutls_priority_set_direct(e->tls, prio, &where);
    if (rv < 0) {
        fprintf(stderr, "ngtcp2-bulk: priority %s: %s at '%s'\n", prio, gnutls_strerror(rv),
                where ? where : "?");
        return -1;
    }
    if ((e->server ? ngtcp2_crypto_gnutls_configure_server_session(e->tls)
                   : ngtcp2_crypto_gnutls_configure_client_session(e->tls)) != 0)
        return -1;
    e->ref.get_conn = get_conn;
    e->ref.user_data = e;
    gnutls_session_set_ptr(e->tls, &e->ref);
    if (gnutls_credentials_set(e->tls, GNUTLS_CRD_CERTIFICATE, cred) < 0)
        return -1;
    gnutls_datum_t alpn = {(unsigned char *)ALPN, sizeof ALPN - 1};
    if (gnutls_alpn_set_protocols(e->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY) < 0)
        return -1;
    if (!e->server && gnutls_server_name_set(e->tls, GNUTLS_NAME_DNS, "localhost", 9) < 0)
        return -1;
    return 0;
}

static int client_new(struct ep *c, gnutls_certificate_credentials_t cred, const char *prio)
{
    ngtcp2_callbacks cb = {
        .client_initial = ngtcp2_crypto_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .encrypt = ngtcp2_crypto_encrypt_cb,
        .decrypt = ngtcp2_crypto_decrypt_cb,
        .hp_mask = ngtcp2_crypto_hp_mask_cb,
        .recv_retry = ngtcp2_crypto_recv_retry_cb,
        .rand = rand_cb,
        .get_new_connection_id = new_cid_cb,
        .update_key = ngtcp2_crypto_update_key_cb,
        .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
        .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
        .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
        .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
    };
    ngtcp2_settings s;
    ngtcp2_transport_params p;
    common_settings(&s, &p);
    uint8_t b[38];
    gnutls_rnd(GNUTLS_RND_RANDOM, b, sizeof b);
    ngtcp2_cid dcid, scid;
    ngtcp2_cid_init(&dcid, b, 18);
    ngtcp2_cid_init(&scid, b + 18, 17);
    ep_path(c);
    int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &c->path, NGTCP2_PROTO_VER_V1, &cb, &s,
                                    &p, NULL, c);
    if (rv != 0) {
        fprintf(stderr, "ngtcp2-bulk: client_new: %s\n", ngtcp2_strerror(rv));
        return -1;
    }
    if (tls_session(c, cred, prio) < 0)
        return -1;
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    return 0;
}

/* The server side is created from the client's first Initial, as a real server would. */
static int server_new(struct ep *sv, const uint8_t *pkt, size_t len,
                      gnutls_certificate_credentials_t cred, const char *prio)
{
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, pkt, len) != 0) {
        fprintf(stderr, "ngtcp2-bulk: server: first packet not acceptable\n");
        return -1;
    }
    ngtcp2_callbacks cb = {
        .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .encrypt = ngtcp2_crypto_encrypt_cb,
        .decrypt = ngtcp2_crypto_decrypt_cb,
        .hp_mask = ngtcp2_crypto_hp_mask_cb,
        .recv_stream_data = recv_stream_cb,
        .rand = rand_cb,
        .get_new_connection_id = new_cid_cb,
        .update_key = ngtcp2_crypto_update_key_cb,
        .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
        .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
        .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
        .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
    };
    ngtcp2_settings s;
    ngtcp2_transport_params p;
    common_settings(&s, &p);
    p.original_dcid = hd.dcid;
    p.stateless_reset_token_present = 1;
    gnutls_rnd(GNUTLS_RND_RANDOM, p.stateless_reset_token, sizeof p.stateless_reset_token);
    uint8_t b[18];
    gnutls_rnd(GNUTLS_RND_RANDOM, b, sizeof b);
    ngtcp2_cid scid;
    ngtcp2_cid_init(&scid, b, sizeof b);
    ep_path(sv);
    int rv = ngtcp2_conn_server_new(&sv->conn, &hd.scid, &scid, &sv->path, hd.version, &cb, &s, &p,
                                    NULL, sv);
    if (rv != 0) {
        fprintf(stderr, "ngtcp2-bulk: server_new: %s\n", ngtcp2_strerror(rv));
        return -1;
    }
    if (tls_session(sv, cred, prio) < 0)
        return -1;
    ngtcp2_conn_set_tls_native_handle(sv->conn, sv->tls);
    return 0;
}

/* Writes what the connection will send now: stream data while the client has some and flow
 * control allows, then ACKs and control frames; stops when congestion or pacing says so, or
 * after one send quantum (ngtcp2_conn_get_send_quantum, as ngtcp2's own examples do: the burst
 * its pacer allows before ngtcp2_conn_update_pkt_tx_time sets the next transmission time). */
static int ep_write(struct ep *e)
{
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    size_t max_pkts = ngtcp2_conn_get_send_quantum(e->conn) / DGRAM_MAX, npkts = 0;
    if (max_pkts == 0)
        max_pkts = 1;
    for (;;) {
        int64_t sid = -1;
        ngtcp2_vec v = {NULL, 0};
        size_t nv = 0;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (!e->server && e->sid >= 0 && !e->fin_sent && !e->blocked) {
            size_t p = (size_t)(e->sent_off % CHUNK);
            uint64_t left = want - e->sent_off;
            v.base = pattern + p;
            v.len = left < CHUNK - p ? (size_t)left : CHUNK - p;
            nv = 1;
            sid = e->sid;
            if (e->sent_off + v.len == want)
                flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        }
        ngtcp2_ssize dlen = -1;
        uint8_t *buf = bl_reserve(e->out); /* written in place, as vega's bench does */
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(e->conn, &ps.path, &pi, buf, DGRAM_MAX, &dlen,
                                                   flags, sid, nv ? &v : NULL, nv, now);
        if (dlen > 0 || (dlen == 0 && (flags & NGTCP2_WRITE_STREAM_FLAG_FIN))) {
            e->sent_off += (uint64_t)dlen;
            if (e->sent_off == want && (flags & NGTCP2_WRITE_STREAM_FLAG_FIN))
                e->fin_sent = true;
        }
        if (n == NGTCP2_ERR_WRITE_MORE)
            continue;
        if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR) {
            e->blocked = true;
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "ngtcp2-bulk: %s write: %s\n", e->server ? "server" : "client",
                    ngtcp2_strerror((int)n));
            return -1;
        }
        if (n == 0)
            break;
        bl_commit(e->out, (size_t)n, now);
        if (++npkts == max_pkts)
            break;
    }
    ngtcp2_conn_update_pkt_tx_time(e->conn, now);
    return 0;
}

static int ep_read(struct ep *e, struct bl_link *in, gnutls_certificate_credentials_t cred,
                   const char *prio)
{
    struct bl_dgram *d;
    while ((d = bl_peek(in, now)) != NULL) {
        if (!e->conn && server_new(e, d->data, d->len, cred, prio) < 0)
            return -1;
        ngtcp2_pkt_info pi = {0};
        int rv = ngtcp2_conn_read_pkt(e->conn, &e->path, &pi, d->data, d->len, now);
        bl_pop(in);
        if (rv != 0) {
            fprintf(stderr, "ngtcp2-bulk: %s read: %s\n", e->server ? "server" : "client",
                    ngtcp2_strerror(rv));
            return -1;
        }
    }
    /* the client's stream may send again once MAX_STREAM_DATA/MAX_DATA arrived */
    e->blocked = false;
    return 0;
}

/* A self-signed P-256 certificate made at startup: the client verifies nothing, as in
 * ngtcp2's gtlsclient example, so only the key type matters (vega's bench signs with P-256). */
static int make_cred(gnutls_certificate_credentials_t *out)
{
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    uint8_t serial[8];
    time_t t = time(NULL);
    gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial);
    serial[0] &= 0x7f;
    if (gnutls_x509_privkey_init(&key) < 0 ||
        gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
        gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_crt_set_version(crt, 3) < 0 ||
        gnutls_x509_crt_set_serial(crt, serial, sizeof serial) < 0 ||
        gnutls_x509_crt_set_activation_time(crt, t - 3600) < 0 ||
        gnutls_x509_crt_set_expiration_time(crt, t + 86400) < 0 ||
        gnutls_x509_crt_set_dn(crt, "CN=localhost", NULL) < 0 ||
        gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
                                             GNUTLS_FSAN_SET) < 0 ||
        gnutls_x509_crt_set_key(crt, key) < 0 ||
        gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0 ||
        gnutls_certificate_allocate_credentials(out) < 0 ||
        gnutls_certificate_set_x509_key(*out, &crt, 1, key) < 0) {
        fprintf(stderr, "ngtcp2-bulk: cannot make a certificate\n");
        return -1;
    }
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return 0;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* One harness step, as vega's bench does it: deliver what is due, write what each side will
 * send, then move the clock to the next event and fire expired timers. Returns -1 on a
 * connection error, 1 if nothing is pending anywhere. */
static int step(struct ep *c, struct ep *sv, struct bl_link *l, gnutls_certificate_credentials_t cc,
                gnutls_certificate_credentials_t sc, const char *prio)
{
    if (ep_read(sv, &l[0], sc, prio) < 0 || ep_read(c, &l[1], cc, prio) < 0)
        return -1;
    if (ep_write(c) < 0 || (sv->conn && ep_write(sv) < 0))
        return -1;
    uint64_t next = min64(bl_next(&l[0]), bl_next(&l[1]));
    next = min64(next, ngtcp2_conn_get_expiry(c->conn));
    if (sv->conn)
        next = min64(next, ngtcp2_conn_get_expiry(sv->conn));
    if (next == UINT64_MAX)
        return 1;
    if (next > now)
        now = next;
    struct ep *eps[2] = {c, sv};
    for (int i = 0; i < 2; i++) {
        ngtcp2_conn *conn = eps[i]->conn;
        if (conn && ngtcp2_conn_get_expiry(conn) <= now) {
            int rv = ngtcp2_conn_handle_expiry(conn, now);
            if (rv != 0) {
                fprintf(stderr, "ngtcp2-bulk: expiry: %s\n", ngtcp2_strerror(rv));
                return -1;
            }
        }
    }
    return 0;
}

/* The timed transfer, in a function of its own so a profiler can count it alone (valgrind
 * --tool=callgrind --collect-atstart=no --toggle-collect=transfer). */
static __attribute__((noinline)) void transfer(struct ep *c, struct ep *sv, struct bl_link *l,
                                               gnutls_certificate_credentials_t cc,
                                               gnutls_certificate_credentials_t sc,
                                               const char *prio)
{
    uint64_t sim0 = now;
    int st = 0;
    while (!sv->fin && !sv->bad && st == 0 && now - sim0 < SIM_LIMIT_NS)
        st = step(c, sv, l, cc, sc, prio);
}

int main(int argc, char **argv)
{
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
    const char *suite = argc > 2 ? argv[2] : "aes128";
    unsigned loss = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
    const char *cipher;
    if (strcmp(suite, "aes128") == 0)
        cipher = "+AES-128-GCM";
    else if (strcmp(suite, "chacha") == 0)
        cipher = "+CHACHA20-POLY1305";
    else if (strcmp(suite, "aes256") == 0)
        cipher = "+AES-256-GCM";
    else {
        fprintf(stderr, "usage: ngtcp2-bulk [MIB] [aes128|aes256|chacha] [LOSS_PCT]\n");
        return 2;
    }
    if (loss > 100) {
        fprintf(stderr, "ngtcp2-bulk: LOSS_PCT must be 0..100\n");
        return 2;
    }
    if (mib == 0 || mib > (1u << 20)) {
        fprintf(stderr, "ngtcp2-bulk: MIB must be 1..1048576\n");
        return 2;
    }
    want = mib << 20;
    /* TLS 1.3 only, one cipher suite, no middlebox-compatibility CCS (QUIC forbids it) */
    char prio[256];
    snprintf(prio, sizeof prio,
             "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:%s:%%DISABLE_TLS13_COMPAT_MODE", cipher);
    for (size_t i = 0; i < CHUNK; i++)
        pattern[i] = (uint8_t)(i * 131u + (i >> 12));

    gnutls_certificate_credentials_t scred, ccred;
    if (make_cred(&scred) < 0 || gnutls_certificate_allocate_credentials(&ccred) < 0)
        return 1;
    struct bl_link l[2]; /* l[0]: client -> server, l[1]: server -> client */
    if (bl_init(&l[0], 0, 1) < 0 || bl_init(&l[1], 0, 2) < 0)
        return 1;
    struct ep c = {.server = false, .sid = -1, .out = &l[0]};
    struct ep sv = {.server = true, .sid = -1, .out = &l[1]};
    set_addr(&c.local, 40000);
    set_addr(&c.remote, 4433);
    set_addr(&sv.local, 4433);
    set_addr(&sv.remote, 40000);
    if (client_new(&c, ccred, prio) < 0)
        return 1;

    while (!(ngtcp2_conn_get_handshake_completed(c.conn) && sv.conn &&
             ngtcp2_conn_get_handshake_completed(sv.conn))) {
        if (now > 10 * NGTCP2_SECONDS || step(&c, &sv, l, ccred, scred, prio) != 0) {
            fprintf(stderr, "ngtcp2-bulk: handshake failed\n");
            return 1;
        }
    }
    /* Quiet before the clock starts, as vega's bench: what the handshake left in flight
     * arrives (its acknowledgements too), then the loss, if any, begins. */
    while (l[0].n || l[1].n)
        if (step(&c, &sv, l, ccred, scred, prio) < 0)
            return 1;
    struct bl_link before[2] = {l[0], l[1]};
    l[0].loss_pct = l[1].loss_pct = loss;
    int rv = ngtcp2_conn_open_uni_stream(c.conn, &c.sid, NULL);
    if (rv != 0) {
        fprintf(stderr, "ngtcp2-bulk: open_uni_stream: %s\n", ngtcp2_strerror(rv));
        return 1;
    }
    uint64_t sim0 = now;
    double t0 = cpu_now();
    transfer(&c, &sv, l, ccred, scred, prio);
    double dt = cpu_now() - t0;
    bool ok = sv.fin && !sv.bad && sv.got == want;
    double mbs = (double)sv.got / dt / 1e6;
    const gnutls_cipher_algorithm_t ca = gnutls_cipher_get(c.tls);
    /* pkts/acks: datagrams the client/server sent during the transfer; dropped: client
     * datagrams the full queue dropped; lost: client datagrams the random loss took */
    printf("suite=%s loss=%u bytes=%llu ok=%d cpu_s=%.3f MB/s=%.1f pkts=%llu acks=%llu "
           "dropped=%llu lost=%llu sim_s=%.3f cipher=%s\n",
           suite, loss, (unsigned long long)sv.got, ok, dt, mbs,
           (unsigned long long)(l[0].sent - before[0].sent),
           (unsigned long long)(l[1].sent - before[1].sent),
           (unsigned long long)(l[0].dropped - before[0].dropped),
           (unsigned long long)(l[0].lost - before[0].lost), (double)(now - sim0) / 1e9,
           gnutls_cipher_get_name(ca));
    if (sv.bad)
        fprintf(stderr, "ngtcp2-bulk: stream data differs from what was sent\n");
    ngtcp2_conn_del(c.conn);
    ngtcp2_conn_del(sv.conn);
    gnutls_deinit(c.tls);
    gnutls_deinit(sv.tls);
    gnutls_certificate_free_credentials(scred);
    gnutls_certificate_free_credentials(ccred);
    bl_fini(&l[0]);
    bl_fini(&l[1]);
    return ok ? 0 : 1;
}
