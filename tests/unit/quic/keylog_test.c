/* SPDX-License-Identifier: MIT */
/* The key log hook (vega_quic_opts.keylog): both sides log every TLS traffic secret in the NSS
 * key log format (SSLKEYLOGFILE), named by the ClientHello's random, and those secrets are the
 * ones the connection protects its packets with: keys derived from each logged line decrypt the
 * captured Handshake, 0-RTT and 1-RTT packets of their direction (RFC 9001 §5.1), for every
 * suite. */
#include <stdio.h>
#include <string.h>

#include "qtls_certs.h"
#include "quic_pair.h"
#include "vtest.h"

#define MS 1000000ull

/* ---- the log -------------------------------------------------------------------------------- */

#define KL_MAX 16
struct klog {
    char line[KL_MAX][256];
    size_t n;
    size_t overflow;
};

static void klog_cb(void *user, const char *line)
{
    struct klog *k = user;
    if (k->n == KL_MAX || strlen(line) >= sizeof k->line[0]) {
        k->overflow++;
        return;
    }
    snprintf(k->line[k->n++], sizeof k->line[0], "%s", line);
}

static int unhex(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* The line of k labelled label: its random (32 bytes) and secret (*len bytes). Checks the
 * format: exactly "LABEL <64 lowercase hex> <2*hash_len lowercase hex>". Returns false when
 * there is no such line (or two). */
static bool klog_find(const struct klog *k, const char *label, uint8_t random[32], uint8_t *secret,
                      size_t *len)
{
    const char *found = NULL;
    size_t ll = strlen(label);
    for (size_t i = 0; i < k->n; i++)
        if (strncmp(k->line[i], label, ll) == 0 && k->line[i][ll] == ' ') {
            if (found)
                return false;
            found = k->line[i];
        }
    if (!found)
        return false;
    const char *r = found + ll + 1, *s = r + 65;
    size_t slen = strlen(found) - ll - 1 - 65;
    VCHECK(strspn(r, "0123456789abcdef") == 64 && r[64] == ' ');
    VCHECK(strspn(s, "0123456789abcdef") == slen);
    VCHECK(slen == 64 || slen == 96);
    *len = slen / 2;
    return unhex(r, 32, random) == 0 && unhex(s, *len, secret) == 0;
}

/* ---- a capturing driver --------------------------------------------------------------------- */

#define CAP_MAX 256
struct cap {
    uint8_t d[CAP_MAX][1500];
    size_t len[CAP_MAX];
    int from[CAP_MAX];
    size_t n;
};

/* Runs the pair without a network: every datagram goes straight to the other side, a copy of
 * each (the first CAP_MAX) kept in cap. The clock moves 1 ms a round; stops when done(q) holds
 * or after max rounds. */
static bool pump(struct qp *q, struct cap *cap, bool (*done)(struct qp *), int max)
{
    uint8_t buf[1500];
    for (int round = 0; round < max; round++) {
        for (int i = 0; i < 2; i++) {
            struct qp_side *s = &q->side[i];
            for (int guard = 0; s->c && guard < 1000; guard++) {
                vega_quic_path p;
                uint8_t ecn = 0;
                vega_ssize n = vega_quic_conn_write(s->c, &p, &ecn, buf, sizeof buf, q->now);
                if (n <= 0)
                    break;
                if (cap->n < CAP_MAX) {
                    memcpy(cap->d[cap->n], buf, (size_t)n);
                    cap->len[cap->n] = (size_t)n;
                    cap->from[cap->n++] = i;
                }
                if (i == 0)
                    qp_server_recv(q, buf, (size_t)n, ecn, 40001);
                else if (q->side[0].c)
                    vega_quic_conn_read(q->side[0].c, &q->path, ecn, buf, (size_t)n, q->now);
            }
            qp_events(q, &q->side[0]);
            qp_events(q, &q->side[1]);
        }
        if (done(q))
            return true;
        q->now += MS;
        for (int i = 0; i < 2; i++)
            if (q->side[i].c && vega_quic_conn_expiry(q->side[i].c) <= q->now)
                vega_quic_conn_handle_expiry(q->side[i].c, q->now);
    }
    return done(q);
}

/* The ClientHello random, from the client's first Initial (public Initial keys, RFC 9001
 * §5.2): the CRYPTO frame at offset 0 holds the ClientHello, its random after the 4-byte
 * header and the 2-byte legacy_version. */
static bool client_random(const struct cap *cap, uint8_t random[32])
{
    uint8_t d[1500];
    size_t len = cap->len[0];
    if (cap->n == 0 || cap->from[0] != 0)
        return false;
    memcpy(d, cap->d[0], len);
    vega_quic_hdr h;
    if (vega_quic_hdr_parse(&h, d, len, 0) < 0 || h.type != VEGA_QUIC_PKT_INITIAL)
        return false;
    vega_quic_keys *k = NULL;
    if (vega_quic_keys_new_initial(&k, h.version, h.dcid, h.dcid_len, false) < 0)
        return false;
    vega_quic_unprotected u;
    uint64_t werr = 0;
    int rc = vega_quic_packet_unprotect(k, d, h.pkt_len, h.pn_offset, -1, &u, &werr);
    vega_quic_keys_free(k);
    if (rc < 0)
        return false;
    const uint8_t *p = d + u.payload_off;
    size_t left = u.payload_len;
    while (left) {
        vega_quic_frame f;
        uint64_t fe = 0;
        vega_ssize n = vega_quic_frame_decode(&f, p, left, &fe);
        if (n <= 0)
            return false;
        if (f.type == VEGA_QUIC_FT_CRYPTO && f.u.crypto.offset == 0 && f.u.crypto.len >= 38 &&
            f.u.crypto.data[0] == 1) {
            memcpy(random, f.u.crypto.data + 6, 32);
            return true;
        }
        p += n;
        left -= (size_t)n;
    }
    return false;
}

static vega_crypto_aead_alg suite_aead(uint16_t suite)
{
    return suite == VEGA_QUIC_TLS_AES_256_GCM_SHA384         ? VEGA_CRYPTO_AES_256_GCM
           : suite == VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256 ? VEGA_CRYPTO_CHACHA20_POLY1305
                                                             : VEGA_CRYPTO_AES_128_GCM;
}

/* How many captured packets of type t sent by side from open with keys made from secret; the
 * payload of each must also be a valid frame sequence for its type. *others: packets of that
 * type and side that did not open. */
static size_t decrypt_count(const struct cap *cap, int from, vega_quic_pkt_type t, uint32_t version,
                            vega_crypto_aead_alg aead, const uint8_t *secret, size_t len,
                            size_t *others)
{
    vega_quic_keys *k = NULL;
    VCHECK_EQ(vega_quic_keys_new(&k, version, aead, secret, len), 0);
    size_t ok = 0;
    *others = 0;
    for (size_t i = 0; k && i < cap->n; i++) {
        if (cap->from[i] != from)
            continue;
        uint8_t d[1500];
        memcpy(d, cap->d[i], cap->len[i]);
        vega_quic_hdr hs[8];
        /* both sides' connection IDs are 8 bytes (vega_quic_opts.scid_len's default) */
        vega_ssize np = vega_quic_dgram_split(d, cap->len[i], 8, hs, 8);
        size_t off = 0; /* coalesced packets follow each other (RFC 9000 §12.2) */
        for (vega_ssize j = 0; j < np; off += hs[j].pkt_len, j++) {
            if (hs[j].type != t)
                continue;
            uint8_t *pkt = d + off;
            vega_quic_unprotected u;
            uint64_t werr = 0;
            if (vega_quic_packet_unprotect(k, pkt, hs[j].pkt_len, hs[j].pn_offset, -1, &u, &werr) ==
                    0 &&
                vega_quic_payload_check(pkt + u.payload_off, u.payload_len, t, &werr) == 0)
                ok++;
            else
                (*others)++;
        }
    }
    vega_quic_keys_free(k);
    return ok;
}

/* label's line in k decrypts at least one packet of type t from side from, and every such
 * packet; and its random is the ClientHello's. */
static void check_secret(const struct klog *k, const char *label, const struct cap *cap,
                         const uint8_t random[32], int from, vega_quic_pkt_type t, uint32_t version,
                         uint16_t suite)
{
    uint8_t r[32], secret[64];
    size_t len = 0, others = 0;
    VCHECK(klog_find(k, label, r, secret, &len));
    VCHECK(memcmp(r, random, 32) == 0);
    VCHECK_EQ(len, suite == VEGA_QUIC_TLS_AES_256_GCM_SHA384 ? 48u : 32u);
    size_t ok = decrypt_count(cap, from, t, version, suite_aead(suite), secret, len, &others);
    VCHECK(ok >= 1);
    VCHECK_EQ(others, 0);
    /* The same secret does not open the other direction's packets: the check can fail. */
    if (t != VEGA_QUIC_PKT_0RTT) {
        size_t wrong =
            decrypt_count(cap, 1 - from, t, version, suite_aead(suite), secret, len, &others);
        VCHECK_EQ(wrong, 0);
    }
}

/* ---- cases ------------------------------------------------------------------------------------
 */

/* The echo of the client's latest stream came back whole. */
static bool echoed(struct qp *q)
{
    return q->side[0].nst > 0 && q->side[0].st[q->side[0].nst - 1].fin;
}

static void setup(struct qp *q, struct klog *kc, struct klog *ks, uint64_t seed)
{
    VCHECK_EQ(qp_init(q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, seed), 0);
    memset(kc, 0, sizeof *kc);
    memset(ks, 0, sizeof *ks);
    q->ccfg.keylog = klog_cb;
    q->ccfg.keylog_user = kc;
    q->scfg.keylog = klog_cb;
    q->scfg.keylog_user = ks;
    q->side[1].echo = true;
}

/* Both sides log the same four lines, in the order the secrets appear, and each decrypts its
 * direction's Handshake or 1-RTT packets. */
static void full_handshake(uint16_t suite, uint32_t version, uint64_t seed)
{
    struct qp q;
    struct klog kc, ks;
    static struct cap cap;
    memset(&cap, 0, sizeof cap);
    setup(&q, &kc, &ks, seed);
    q.ccfg.tls.suites[0] = suite;
    q.ccfg.tls.n_suites = 1;
    q.ccfg.version = version;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK_EQ(kc.n, 0); /* no 0-RTT: nothing to log before the ServerHello */
    static const uint8_t msg[] = "hello over 1-RTT";
    VCHECK(pump(&q, &cap, qp_handshaken, 200));
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(pump(&q, &cap, echoed, 200));
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK_EQ(ci.suite, suite);

    VCHECK_EQ(kc.n, 4);
    VCHECK_EQ(ks.n, 4);
    VCHECK_EQ(kc.overflow + ks.overflow, 0);
    /* The order each side derives them in (RFC 9001 §4 through the engine's callbacks). */
    static const char *const corder[] = {"SERVER_HANDSHAKE_TRAFFIC_SECRET ",
                                         "CLIENT_HANDSHAKE_TRAFFIC_SECRET ",
                                         "CLIENT_TRAFFIC_SECRET_0 ", "SERVER_TRAFFIC_SECRET_0 "};
    static const char *const sorder[] = {"CLIENT_HANDSHAKE_TRAFFIC_SECRET ",
                                         "SERVER_HANDSHAKE_TRAFFIC_SECRET ",
                                         "SERVER_TRAFFIC_SECRET_0 ", "CLIENT_TRAFFIC_SECRET_0 "};
    for (size_t i = 0; i < 4; i++) {
        VCHECK(strncmp(kc.line[i], corder[i], strlen(corder[i])) == 0);
        VCHECK(strncmp(ks.line[i], sorder[i], strlen(sorder[i])) == 0);
        /* what the client logged, the server logged too */
        bool same = false;
        for (size_t j = 0; j < 4; j++)
            same |= strcmp(kc.line[i], ks.line[j]) == 0;
        VCHECK(same);
    }
    uint8_t random[32];
    VCHECK(client_random(&cap, random));
    const struct klog *logs[2] = {&kc, &ks};
    for (int side = 0; side < 2; side++) {
        const struct klog *k = logs[side];
        check_secret(k, "CLIENT_HANDSHAKE_TRAFFIC_SECRET", &cap, random, 0, VEGA_QUIC_PKT_HANDSHAKE,
                     version, suite);
        check_secret(k, "SERVER_HANDSHAKE_TRAFFIC_SECRET", &cap, random, 1, VEGA_QUIC_PKT_HANDSHAKE,
                     version, suite);
        check_secret(k, "CLIENT_TRAFFIC_SECRET_0", &cap, random, 0, VEGA_QUIC_PKT_1RTT, version,
                     suite);
        check_secret(k, "SERVER_TRAFFIC_SECRET_0", &cap, random, 1, VEGA_QUIC_PKT_1RTT, version,
                     suite);
    }
    qp_fini(&q);
}

VTEST(lines_decrypt_both_directions_aes128)
{
    full_handshake(VEGA_QUIC_TLS_AES_128_GCM_SHA256, VEGA_QUIC_V1, 1);
}

VTEST(lines_decrypt_both_directions_aes256_sha384)
{
    full_handshake(VEGA_QUIC_TLS_AES_256_GCM_SHA384, VEGA_QUIC_V1, 2);
}

VTEST(lines_decrypt_both_directions_chacha20_v2)
{
    full_handshake(VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256, VEGA_QUIC_V2, 3);
}

static bool have_session(struct qp *q)
{
    return q->side[0].session != NULL;
}

static bool closed_both(struct qp *q)
{
    return q->side[0].closed && q->side[1].closed;
}

/* A resumed connection with 0-RTT: the client logs CLIENT_EARLY_TRAFFIC_SECRET as it creates
 * the connection, the server as it accepts the early data; it decrypts the 0-RTT packets. */
VTEST(early_secret_decrypts_zero_rtt)
{
    struct qp q;
    struct klog kc, ks;
    static struct cap cap;
    memset(&cap, 0, sizeof cap);
    setup(&q, &kc, &ks, 4);
    q.scfg.tls.early_data = true;
    q.ccfg.tls.early_data = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(pump(&q, &cap, have_session, 400));
    vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_TRANSPORT, 0, NULL);
    pump(&q, &cap, closed_both, 50);

    qp_reset_conns(&q);
    memset(&cap, 0, sizeof cap);
    memset(&kc, 0, sizeof kc);
    memset(&ks, 0, sizeof ks);
    q.side[1].echo = true;
    q.ccfg.tls.session = q.side[0].session;
    q.ccfg.tls.session_len = q.side[0].session_len;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK_EQ(kc.n, 1);
    VCHECK(strncmp(kc.line[0], "CLIENT_EARLY_TRAFFIC_SECRET ", 28) == 0);
    static const uint8_t msg[] = "GET /early";
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(pump(&q, &cap, echoed, 200));
    VCHECK(pump(&q, &cap, qp_handshaken, 200));
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK(ci.resumed);
    VCHECK_EQ(ci.early_data, VEGA_QUIC_EARLY_ACCEPTED);
    VCHECK_EQ(kc.n, 5);
    VCHECK_EQ(ks.n, 5);
    VCHECK(strncmp(ks.line[0], "CLIENT_EARLY_TRAFFIC_SECRET ", 28) == 0);
    VCHECK_STR(kc.line[0], ks.line[0]);
    uint8_t random[32];
    VCHECK(client_random(&cap, random));
    for (int side = 0; side < 2; side++) {
        const struct klog *k = side ? &ks : &kc;
        check_secret(k, "CLIENT_EARLY_TRAFFIC_SECRET", &cap, random, 0, VEGA_QUIC_PKT_0RTT,
                     VEGA_QUIC_V1, ci.suite);
        check_secret(k, "SERVER_HANDSHAKE_TRAFFIC_SECRET", &cap, random, 1, VEGA_QUIC_PKT_HANDSHAKE,
                     VEGA_QUIC_V1, ci.suite);
        check_secret(k, "CLIENT_TRAFFIC_SECRET_0", &cap, random, 0, VEGA_QUIC_PKT_1RTT,
                     VEGA_QUIC_V1, ci.suite);
    }
    qp_fini(&q);
}

/* Without the hook nothing is logged and nothing changes; a key update logs nothing either
 * (updated secrets follow from *_TRAFFIC_SECRET_0). */
VTEST(no_hook_no_lines_and_key_update_logs_nothing)
{
    struct qp q;
    struct klog kc, ks;
    static struct cap cap;
    memset(&cap, 0, sizeof cap);
    setup(&q, &kc, &ks, 5);
    q.scfg.keylog = NULL;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(pump(&q, &cap, qp_handshaken, 200));
    static const uint8_t msg[] = "x";
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(pump(&q, &cap, echoed, 200));
    VCHECK_EQ(ks.n, 0);
    VCHECK_EQ(kc.n, 4);
    q.now += 1000 * MS; /* past 3 PTO, so the update is allowed */
    VCHECK_EQ(vega_quic_conn_key_update(q.side[0].c), 0);
    static const uint8_t msg2[] = "after the update";
    (void)qp_stream(&q.side[0], 4); /* the next stream's echo must come back */
    VCHECK(qp_upload(&q.side[0], true, msg2, sizeof msg2) >= 0);
    VCHECK(pump(&q, &cap, echoed, 200));
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK_EQ(ci.key_updates, 1);
    VCHECK_EQ(kc.n, 4);
    qp_fini(&q);
}
