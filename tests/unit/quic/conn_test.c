/* SPDX-License-Identifier: MIT */
/* QUIC connections, client and server cores linked by the seeded in-memory network: handshakes
 * (v1, v2, each suite, Retry, resumption, 0-RTT), streams and flow control, datagrams, key
 * update, closing and timeouts, and bulk transfers under loss, reordering, duplication and
 * corruption with the bytes checked. */
#include <string.h>

#include "conn_int.h"
#include "qtls_certs.h"
#include "quic_pair.h"
#include "quic_pkt.h"
#include "vtest.h"

#define MS 1000000ull
#define S  1000000000ull

static void setup(struct qp *q, const vega_test_net_opts *net, uint64_t seed)
{
    VCHECK_EQ(qp_init(q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, net, seed), 0);
}

static void handshake(struct qp *q)
{
    VCHECK_EQ(qp_client_start(q), 0);
    VCHECK(qp_run(q, qp_handshaken, 10 * S));
    VCHECK(!q->stuck);
}

static vega_test_net_opts link_ms(uint64_t delay_ms)
{
    vega_test_net_opts o = {.seed = 7, .delay_ns = delay_ms * MS};
    return o;
}

static bool confirmed(struct qp *q)
{
    vega_quic_conn_info a, b;
    if (!q->side[0].c || !q->side[1].c)
        return false;
    vega_quic_conn_get_info(q->side[0].c, &a);
    vega_quic_conn_get_info(q->side[1].c, &b);
    return a.handshake_confirmed && b.handshake_confirmed;
}

VTEST(handshake_v1)
{
    struct qp q;
    vega_test_net_opts o = link_ms(10);
    setup(&q, &o, 1);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    vega_quic_conn_info ci, si;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK_EQ(ci.version, VEGA_QUIC_V1);
    VCHECK_STR(ci.alpn, "hq-interop");
    VCHECK_STR(si.alpn, "hq-interop");
    VCHECK_EQ(ci.suite, VEGA_QUIC_TLS_AES_128_GCM_SHA256);
    VCHECK(!ci.resumed);
    /* One round trip of 20 ms plus processing: the RTT estimate is close to it. */
    VCHECK(ci.smoothed_rtt_ns >= 20 * MS && ci.smoothed_rtt_ns < 60 * MS);
    qp_fini(&q);
}

static bool three_scids(struct qp *q)
{
    const uint8_t *ids[8];
    size_t lens[8];
    return q->side[1].c && vega_quic_conn_scids(q->side[1].c, ids, lens, 8) >= 3;
}

/* vega_quic_opts.scid_prefix (layout 5): every ID the server issues, the first (which the
 * client's Handshake and 1-RTT packets carry) and those of NEW_CONNECTION_ID, starts with the
 * prefix, whatever the random generator draws; the client's own IDs do not. A prefix as long
 * as the ID, or longer than VEGA_QUIC_MAX_SCID_PREFIX, is refused. */
VTEST(scid_prefix_on_every_server_id)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 3);
    q.scfg.scid_prefix[0] = 0xab;
    q.scfg.scid_prefix[1] = 0x07;
    q.scfg.scid_prefix_len = 2;
    handshake(&q);
    VCHECK(qp_run(&q, three_scids, 5 * S));
    const uint8_t *ids[8];
    size_t lens[8];
    size_t n = vega_quic_conn_scids(q.side[1].c, ids, lens, 8);
    VCHECK(n >= 3);
    for (size_t i = 0; i < n && i < 8; i++) {
        VCHECK_EQ(lens[i], 8);
        VCHECK_EQ(ids[i][0], 0xab);
        VCHECK_EQ(ids[i][1], 0x07);
    }
    /* the client's IDs: random (with this seed, none starts with the prefix) */
    n = vega_quic_conn_scids(q.side[0].c, ids, lens, 8);
    VCHECK(n >= 1);
    size_t prefixed = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        prefixed += ids[i][0] == 0xab && ids[i][1] == 0x07;
    VCHECK_EQ(prefixed, 0);
    qp_fini(&q);

    vega_quic_opts c;
    vega_quic_opts_init(&c);
    vega_quic_path path;
    memset(&path, 0, sizeof path);
    qp_set_addr(&path.remote, &path.remote_len, 443);
    qp_set_addr(&path.local, &path.local_len, 5000);
    vega_quic_conn *qc = NULL;
    c.scid_len = 4;
    c.scid_prefix_len = 4; /* nothing random left */
    VCHECK_EQ(vega_quic_conn_client_new(&qc, &c, &path, 0), -EINVAL);
    c.scid_len = 8;
    c.scid_prefix_len = VEGA_QUIC_MAX_SCID_PREFIX + 1;
    VCHECK_EQ(vega_quic_conn_client_new(&qc, &c, &path, 0), -EINVAL);
    VCHECK(qc == NULL);
}

VTEST(handshake_v2_chacha)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 2);
    q.ccfg.version = VEGA_QUIC_V2;
    q.ccfg.tls.suites[0] = VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256;
    q.ccfg.tls.n_suites = 1;
    handshake(&q);
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[1].c, &ci);
    VCHECK_EQ(ci.version, VEGA_QUIC_V2);
    VCHECK_EQ(ci.suite, VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256);
    qp_fini(&q);
}

VTEST(handshake_aes256_ed25519)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    VCHECK_EQ(qp_init(&q, QT_SRV_ED_PEM, QT_SRV_ED_KEY, QT_CA_PEM, &o, 3), 0);
    q.scfg.tls.suites[0] = VEGA_QUIC_TLS_AES_256_GCM_SHA384;
    q.scfg.tls.n_suites = 1;
    handshake(&q);
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK_EQ(ci.suite, VEGA_QUIC_TLS_AES_256_GCM_SHA384);
    qp_fini(&q);
}

VTEST(handshake_bad_ca_closes_with_crypto_error)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_OTHER_CA_PEM, &o, 4), 0);
    VCHECK_EQ(qp_client_start(&q), 0);
    qp_run(&q, qp_handshaken, 2 * S);
    VCHECK(!q.side[0].handshake_done);
    VCHECK(q.side[0].closed && q.side[0].closed_local);
    VCHECK_EQ(q.side[0].close_code, VEGA_QUIC_CRYPTO_ERROR + 48); /* unknown_ca */
    /* The server learns it from the client's CONNECTION_CLOSE. */
    VCHECK(q.side[1].closed && !q.side[1].closed_local);
    VCHECK_EQ(q.side[1].close_code, VEGA_QUIC_CRYPTO_ERROR + 48);
    qp_fini(&q);
}

VTEST(handshake_no_common_alpn)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    setup(&q, &o, 5);
    q.scfg.tls.alpn[0] = "h3";
    VCHECK_EQ(qp_client_start(&q), 0);
    qp_run(&q, qp_handshaken, 2 * S);
    VCHECK(q.side[0].closed);
    VCHECK_EQ(q.side[0].close_code, VEGA_QUIC_CRYPTO_ERROR + 120);
    qp_fini(&q);
}

static bool stream_echoed(struct qp *q)
{
    struct qp_side *c = &q->side[0];
    return c->nst > 0 && c->st[0].fin;
}

VTEST(stream_echo)
{
    struct qp q;
    vega_test_net_opts o = link_ms(10);
    setup(&q, &o, 6);
    handshake(&q);
    q.side[1].echo = true;
    static uint8_t data[200000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 31 + i / 251);
    int64_t id = qp_upload(&q.side[0], true, data, sizeof data);
    VCHECK_EQ(id, 0);
    VCHECK(qp_run(&q, stream_echoed, 30 * S));
    VCHECK_EQ(q.side[0].st[0].len, sizeof data);
    VCHECK(memcmp(q.side[0].st[0].data, data, sizeof data) == 0);
    VCHECK_EQ(q.side[1].opened, 1);
    qp_fini(&q);
}

/* A one-way bulk transfer from side `from` on a unidirectional stream; checks every byte. */
static size_t bulk_len;
static int bulk_to;
static bool bulk_done(struct qp *q)
{
    struct qp_side *r = &q->side[bulk_to];
    return r->nst > 0 && r->st[0].fin;
}

static void bulk(struct qp *q, int from, size_t len, uint64_t max_ns)
{
    uint8_t *data = malloc(len);
    VCHECK(data);
    uint64_t x = 0x1234567 + len;
    for (size_t i = 0; i < len; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = (uint8_t)(x >> 56);
    }
    bulk_len = len;
    bulk_to = !from;
    VCHECK(qp_upload(&q->side[from], false, data, len) >= 0);
    bool ok = qp_run(q, bulk_done, max_ns);
    struct qp_side *r = &q->side[!from];
    if (!ok) {
        vega_quic_conn_info ci;
        vega_quic_conn_get_info(q->side[from].c, &ci);
        vtest_fail(__FILE__, __LINE__,
                   "transfer incomplete: %zu of %zu bytes, stuck %d, closed %d/%d code %llu, "
                   "sent %llu pkts, lost %llu, cwnd %llu",
                   r->nst ? r->st[0].len : 0, len, q->stuck, q->side[0].closed, q->side[1].closed,
                   (unsigned long long)q->side[0].close_code, (unsigned long long)ci.pkts_sent,
                   (unsigned long long)ci.pkts_lost, (unsigned long long)ci.cwnd);
    }
    VCHECK_EQ(r->st[0].len, len);
    VCHECK(memcmp(r->st[0].data, data, len) == 0);
    free(data);
}

static void bulk_both_ways(unsigned loss, uint64_t seed, size_t len, vega_quic_cc cc)
{
    struct qp q;
    vega_test_net_opts o = {.seed = seed,
                            .delay_ns = 10 * MS,
                            .jitter_ns = 2 * MS,
                            .loss_pct = loss,
                            .rate_bps = 200000000};
    setup(&q, &o, seed);
    q.ccfg.cc = q.scfg.cc = cc;
    q.ccfg.idle_timeout_ms = q.scfg.idle_timeout_ms = 600000;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(qp_run(&q, qp_handshaken, 60 * S));
    bulk(&q, 0, len, 3600 * S);
    /* and back, on a fresh stream record */
    for (size_t j = 0; j < q.side[1].nst; j++)
        free(q.side[1].st[j].data);
    q.side[1].nst = 0;
    bulk(&q, 1, len, 3600 * S);
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[1].c, &ci);
    if (loss)
        VCHECK(ci.pkts_lost > 0);
    qp_fini(&q);
}

VTEST(transfer_10mib_clean)
{
    bulk_both_ways(0, 11, 10u << 20, VEGA_QUIC_CC_CUBIC);
}

VTEST(transfer_10mib_loss5_newreno)
{
    bulk_both_ways(5, 14, 10u << 20, VEGA_QUIC_CC_NEWRENO);
}

VTEST(transfer_10mib_loss5)
{
    bulk_both_ways(5, 12, 10u << 20, VEGA_QUIC_CC_CUBIC);
}

VTEST(transfer_10mib_loss30)
{
    bulk_both_ways(30, 13, 10u << 20, VEGA_QUIC_CC_CUBIC);
}

VTEST(transfer_reorder_dup_corrupt)
{
    struct qp q;
    vega_test_net_opts o = {.seed = 21,
                            .delay_ns = 5 * MS,
                            .jitter_ns = 5 * MS,
                            .dup_pct = 10,
                            .corrupt_pct = 5,
                            .reorder_pct = 10,
                            .loss_pct = 3};
    setup(&q, &o, 21);
    handshake(&q);
    bulk(&q, 0, 2u << 20, 600 * S);
    qp_fini(&q);
}

static void ecn_run(const vega_test_net_opts *o, bool *ecn_ok, uint64_t *ce)
{
    struct qp q;
    setup(&q, o, o->seed);
    handshake(&q);
    bulk(&q, 0, 2u << 20, 60 * S);
    *ecn_ok = vega__quic_recovery_ecn_ok(q.side[0].c->rec);
    *ce = vega__quic_recovery_stats(q.side[0].c->rec)->ecn_ce;
    qp_fini(&q);
}

VTEST(ecn_validated_and_ce_reacts)
{
    bool ok;
    uint64_t ce;
    vega_test_net_opts o = {.seed = 31, .delay_ns = 5 * MS, .rate_bps = 100000000};
    ecn_run(&o, &ok, &ce);
    VCHECK(ok);
    VCHECK_EQ(ce, 0);
    o.ce_pct = 2; /* an AQM marking instead of dropping */
    ecn_run(&o, &ok, &ce);
    VCHECK(ok);
    VCHECK(ce > 0);
    o.ce_pct = 0;
    o.ecn_bleach = true; /* a middlebox clears the marks: validation fails, ECN is off */
    ecn_run(&o, &ok, &ce);
    VCHECK(!ok);
}

static bool never(struct qp *q)
{
    (void)q;
    return false;
}

static bool path_changed(struct qp *q, int side, uint16_t port)
{
    vega_quic_path p;
    vega_quic_conn_get_path(q->side[side].c, &p);
    return qp_port(side ? &p.remote : &p.local) == port;
}

VTEST(nat_rebinding_mid_transfer)
{
    struct qp q;
    vega_test_net_opts o = {.seed = 33, .delay_ns = 5 * MS, .rate_bps = 100000000};
    setup(&q, &o, 33);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    /* Half a megabyte in, a NAT gives the client a new port: the server follows it after
     * validating the new path, and the transfer completes with every byte. */
    static uint8_t data[2 << 20];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 13 + 5);
    VCHECK(qp_upload(&q.side[0], false, data, sizeof data) >= 0);
    qp_run(&q, bulk_done, 20 * MS);
    q.nat_port = 50123;
    bulk_to = 1;
    VCHECK(qp_run(&q, bulk_done, 30 * S));
    VCHECK_EQ(q.side[1].st[0].len, sizeof data);
    VCHECK(memcmp(q.side[1].st[0].data, data, sizeof data) == 0);
    VCHECK(path_changed(&q, 1, 50123));
    vega_quic_conn_info si;
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK_EQ(si.migrations, 1);
    VCHECK(q.side[1].c->paths.validated);
    qp_fini(&q);
}

static bool client_migrated(struct qp *q)
{
    return q->side[0].c->paths.validated && !q->side[0].c->paths.migrating;
}

VTEST(client_migration_with_new_cid)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 34);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 200 * MS); /* NEW_CONNECTION_IDs arrive */
    vega_quic_path np = q.path;
    qp_set_addr(&np.local, &np.local_len, 40002);
    size_t before = q.side[0].c->cids.dcid_idx;
    VCHECK_EQ(vega_quic_conn_migrate(q.side[0].c, &np), 0);
    VCHECK(q.side[0].c->cids.dcid_idx != before); /* a fresh connection ID on the new path */
    VCHECK_EQ(vega_quic_conn_migrate(q.side[0].c, &np), -EINVAL); /* pending */
    VCHECK(qp_run(&q, client_migrated, 5 * S));
    VCHECK(path_changed(&q, 0, 40002));
    bulk(&q, 0, 300000, 30 * S);
    VCHECK(path_changed(&q, 1, 40002));
    VCHECK(q.side[1].c->paths.validated);
    /* Both moved off the connection IDs of the old path (sequence 0, §9.5), retired them, and
     * issued replacements. */
    vega_quic_conn *cc = q.side[0].c, *sc = q.side[1].c;
    VCHECK(cc->cids.peer[cc->cids.dcid_idx].seq != 0);
    VCHECK(sc->cids.peer[sc->cids.dcid_idx].seq != 0);
    for (size_t i = 0; i < sc->cids.nlocal; i++)
        VCHECK(sc->cids.local[i].seq != 0 || sc->cids.local[i].retired);
    qp_fini(&q);
}

static bool migration_failed(struct qp *q)
{
    return !q->side[0].c->paths.migrating && q->side[0].c->paths.migrations == 1;
}

VTEST(client_migration_to_dead_path_falls_back)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 35);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 200 * MS);
    vega_quic_path np = q.path;
    qp_set_addr(&np.local, &np.local_len, 40003);
    VCHECK_EQ(vega_quic_conn_migrate(q.side[0].c, &np), 0);
    /* Everything the client sends on the new path is lost. */
    vega_test_net_free(q.net);
    vega_test_net_opts dead = {.seed = 1, .delay_ns = 5 * MS, .loss_pct = 100};
    VCHECK_EQ(vega_test_net_new(&q.net, &dead), 0);
    VCHECK(qp_run(&q, migration_failed, 10 * S));
    VCHECK(path_changed(&q, 0, 40001)); /* back on the old path */
    vega_test_net_free(q.net);
    VCHECK_EQ(vega_test_net_new(&q.net, &o), 0);
    bulk(&q, 0, 100000, 30 * S);
    qp_fini(&q);
}

VTEST(migration_refused_before_confirmation_or_when_disabled)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 36);
    q.scfg.disable_active_migration = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    vega_quic_path np = q.path;
    qp_set_addr(&np.local, &np.local_len, 40004);
    VCHECK_EQ(vega_quic_conn_migrate(q.side[0].c, &np), -EINVAL);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    VCHECK_EQ(vega_quic_conn_migrate(q.side[0].c, &np), -EINVAL);
    VCHECK_EQ(vega_quic_conn_migrate(q.side[1].c, &np), -EINVAL); /* server */
    qp_fini(&q);
}

static size_t pmtu_after(size_t net_mtu, size_t pmtu_max)
{
    struct qp q;
    vega_test_net_opts o = {.seed = 37, .delay_ns = 5 * MS, .mtu = net_mtu};
    setup(&q, &o, 37);
    if (pmtu_max)
        q.ccfg.pmtu_max = q.scfg.pmtu_max = pmtu_max;
    handshake(&q);
    bulk(&q, 0, 1u << 20, 30 * S);
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK_EQ(ci.pkts_lost, vega__quic_recovery_stats(q.side[0].c->rec)->lost);
    qp_fini(&q);
    return ci.pmtu;
}

VTEST(pmtu_discovery)
{
    VCHECK_EQ(pmtu_after(0, 0), 1452); /* nothing in the way: the configured ceiling */
    size_t m = pmtu_after(1400, 0);    /* a 1400-byte link: found within 16 bytes */
    VCHECK(m <= 1400 && m > 1400 - 16);
    VCHECK_EQ(pmtu_after(0, 1200), 1200); /* off */
    VCHECK_EQ(pmtu_after(1200, 0), 1200); /* every probe lost: stays at the minimum */
}

VTEST(gso_batches_equal_segments)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 38);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    static uint8_t data[200000];
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, false, &id), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id, data, sizeof data, true), sizeof data);
    static uint8_t out[64 * 1500];
    size_t seg = 0;
    long n = vega_quic_conn_write_gso(q.side[0].c, NULL, NULL, out, sizeof out, 64, &seg, q.now);
    VCHECK(n > 0);
    if (seg < 1200)
        vtest_fail(__FILE__, __LINE__, "n %ld seg %zu", n, seg);
    VCHECK((size_t)n > seg); /* several datagrams in one batch */
    /* Each segment is a whole datagram the server accepts. */
    for (size_t off = 0; off < (size_t)n; off += seg) {
        size_t len = (size_t)n - off < seg ? (size_t)n - off : seg;
        qp_server_recv(&q, out + off, len, 0, 40001);
    }
    VCHECK(q.side[1].c->stats.pkts_recv > 2);
    qp_fini(&q);
}

/* Sends frames to the server as the client's next 1-RTT packet (its keys, CID and packet
 * number), padded to min_payload, from client port `from`. Returns the datagram's length. */
static size_t client_sends(struct qp *q, const vega_quic_frame *fs, size_t n, size_t min_payload,
                           uint16_t from)
{
    struct qpkt p;
    qpkt_from_conn(&p, q->side[0].c);
    p.min_payload = min_payload;
    uint8_t pkt[1500];
    vega_ssize len = qpkt_build(&p, fs, n, pkt, sizeof pkt);
    VCHECK(len > 0);
    qp_server_recv(q, pkt, (size_t)len, 0, from);
    return (size_t)len;
}

/* Opens a 1-RTT datagram the server wrote to the client, with the client's keys, and returns
 * the PATH_RESPONSE it carries (NULL for none); *pn receives its packet number. */
static const vega_quic_frame *path_response_in(struct qp *q, uint8_t *dgram, size_t len,
                                               vega_quic_frame *fs, size_t max, uint64_t *pn)
{
    int64_t largest;
    vega_quic_keys *k = qpkt_conn_rx_keys(q->side[0].c, &largest);
    vega_ssize n = qpkt_open(k, dgram, len, q->ccfg.scid_len, largest, fs, max, pn);
    VCHECK(n > 0);
    return qpkt_find(fs, (size_t)n, VEGA_QUIC_FT_PATH_RESPONSE);
}

VTEST(path_response_elsewhere_then_acked)
{
    /* A probe from a new address gets its PATH_RESPONSE there, in a packet of its own; the
     * peer's ACK of that packet is no violation (seen with ngtcp2's gtlsclient). */
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 39);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 200 * MS);
    vega_quic_conn *sv = q.side[1].c;
    static const uint8_t chal[8] = {1, 2, 3, 4, 5, 6, 7, 8}, chal2[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    vega_quic_frame probe = qf_path_challenge(chal), fs[8];
    client_sends(&q, &probe, 1, 1100, 40099); /* the rest is PADDING */
    uint8_t out[1500];
    vega_quic_path p;
    long w = vega_quic_conn_write(sv, &p, NULL, out, sizeof out, q.now);
    VCHECK(w >= 1200);
    VCHECK_EQ(qp_port(&p.remote), 40099);
    VCHECK_EQ(q.side[1].c->paths.migrations, 0); /* a probe does not move the connection */
    uint64_t resp_pn;
    const vega_quic_frame *resp = path_response_in(&q, out, (size_t)w, fs, 8, &resp_pn);
    VCHECK(resp && memcmp(resp->u.path.data, chal, 8) == 0);
    /* A small challenge datagram gets a response within 3x its size, not 1200 bytes: an
     * unvalidated address is no reflection target (found by review). */
    probe = qf_path_challenge(chal2);
    size_t sn = client_sends(&q, &probe, 1, 16, 40098);
    long sw = vega_quic_conn_write(sv, &p, NULL, out, sizeof out, q.now);
    VCHECK(sw > 0 && (size_t)sw <= 3 * sn);
    VCHECK_EQ(qp_port(&p.remote), 40098);
    uint64_t pn2;
    resp = path_response_in(&q, out, (size_t)sw, fs, 8, &pn2);
    VCHECK(resp && memcmp(resp->u.path.data, chal2, 8) == 0);
    /* The ACK of the first response alone, from the usual address. */
    vega_quic_frame ack = qf_ack(resp_pn, 0);
    client_sends(&q, &ack, 1, 32, 40001);
    VCHECK(sv->state < VEGA__QUIC_ST_CLOSING);
    qp_fini(&q);
}

VTEST(stateless_reset_after_server_restart)
{
    /* The server's tokens come from a static key: after it lost the connection, its endpoint
     * answers the client's next datagram with a reset the client recognises. */
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 41);
    static const uint8_t key[32] = {7, 7, 7};
    q.scfg.reset_key = key;
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 200 * MS);
    vega_quic_conn_free(q.side[1].c); /* the server restarts */
    q.side[1].c = NULL;
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &id), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id, "hello?", 6, false), 6);
    uint8_t dg[1500], reset[1500];
    long n = vega_quic_conn_write(q.side[0].c, NULL, NULL, dg, sizeof dg, q.now);
    VCHECK(n > 0);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, dg, (size_t)n, 8), 0);
    VCHECK_EQ(h.type, VEGA_QUIC_PKT_1RTT);
    uint8_t tok[16];
    VCHECK_EQ(vega_quic_reset_token(key, h.dcid, h.dcid_len, tok), 0);
    long rn = vega_quic_reset_write(reset, sizeof reset, (size_t)n, tok);
    VCHECK(rn >= 21);
    /* A reset with a wrong token is just an undecryptable packet. */
    uint8_t bad[1500];
    memcpy(bad, reset, (size_t)rn);
    bad[rn - 1] ^= 1;
    VCHECK_EQ(vega_quic_conn_read(q.side[0].c, &q.path, 0, bad, (size_t)rn, q.now), 0);
    qp_events(&q, &q.side[0]);
    VCHECK(!q.side[0].closed);
    VCHECK_EQ(vega_quic_conn_read(q.side[0].c, &q.path, 0, reset, (size_t)rn, q.now), 0);
    qp_events(&q, &q.side[0]);
    VCHECK(q.side[0].closed);
    VCHECK(vega_quic_conn_is_closed(q.side[0].c));
    qp_fini(&q);
}

static bool got_token(struct qp *q)
{
    return q->side[0].token_len > 0;
}

VTEST(new_token_for_the_next_connection)
{
    struct qp q;
    vega_test_net_opts o = {.seed = 42, .delay_ns = 5 * MS, .loss_pct = 20};
    setup(&q, &o, 42);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 10 * S));
    VCHECK_EQ(vega_quic_conn_new_token(q.side[0].c, (const uint8_t *)"x", 1),
              -EINVAL); /* clients do not issue tokens */
    VCHECK_EQ(vega_quic_conn_new_token(q.side[1].c, (const uint8_t *)"token-1", 7), 0);
    VCHECK(qp_run(&q, got_token, 10 * S)); /* resent through 20% loss until acknowledged */
    VCHECK_EQ(q.side[0].token_len, 7);
    VCHECK(memcmp(q.side[0].token, "token-1", 7) == 0);
    qp_fini(&q);
}

VTEST(stop_sending_returns_connection_credit)
{
    /* Streams the client stops mid-flight: what the server had already sent counts against
     * the connection window until the final size is known, then is credited back; a window
     * that leaked would starve the last stream (found by review). */
    struct qp q;
    vega_test_net_opts o = {.seed = 36, .delay_ns = 20 * MS};
    setup(&q, &o, 36);
    q.ccfg.max_data = q.ccfg.max_data_max = 256 * 1024;
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    static uint8_t data[200000];
    for (int i = 0; i < 10; i++) {
        q.side[1].up_active = false;
        int64_t id = qp_upload(&q.side[1], false, data, sizeof data);
        VCHECK(id >= 0);
        qp_run(&q, never, 25 * MS);
        VCHECK_EQ(vega_quic_stream_stop(q.side[0].c, (uint64_t)id, 7), 0);
        qp_run(&q, never, 1 * S);
    }
    VCHECK(q.side[1].stops >= 10);
    q.side[1].up_active = false;
    for (size_t j = 0; j < q.side[0].nst; j++)
        free(q.side[0].st[j].data);
    q.side[0].nst = 0;
    int64_t last = qp_upload(&q.side[1], false, data, 100000);
    VCHECK(last >= 0);
    bulk_to = 0;
    VCHECK(qp_run(&q, bulk_done, 10 * S));
    VCHECK_EQ(qp_stream(&q.side[0], (uint64_t)last)->len, 100000);
    qp_fini(&q);
}

VTEST(nat_rebinding_then_small_request)
{
    /* A 7-byte request from a rebound address: the server's budget on the new path (3x) is
     * small, so it must send smaller datagrams, not stall with its ACK due (found by review). */
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 43);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 1 * S);
    q.nat_port = 50124;
    static const uint8_t req[] = "GET /\r\n";
    VCHECK(qp_upload(&q.side[0], false, req, sizeof req - 1) >= 0);
    bulk_to = 1;
    VCHECK(qp_run(&q, bulk_done, 3 * S));
    VCHECK(!q.stuck);
    qp_run(&q, never, 3 * S);
    VCHECK(!q.stuck);
    VCHECK(q.side[1].c->paths.validated);
    VCHECK(path_changed(&q, 1, 50124));
    qp_fini(&q);
}

VTEST(junk_zero_rtt_not_kept_by_client)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 44);
    handshake(&q);
    vega_quic_conn *cl = q.side[0].c;
    for (int i = 0; i < 10; i++) {
        uint8_t pkt[64] = {0};
        size_t n = 0;
        pkt[n++] = 0xc0 | (1 << 4) | 3; /* long header, 0-RTT (v1), 4-byte packet number */
        pkt[n++] = 0, pkt[n++] = 0, pkt[n++] = 0, pkt[n++] = 1;
        pkt[n++] = cl->cids.local[0].len;
        memcpy(pkt + n, cl->cids.local[0].id, cl->cids.local[0].len);
        n += cl->cids.local[0].len;
        pkt[n++] = 0;
        pkt[n++] = 0x40, pkt[n++] = 30;
        n += 30;
        VCHECK_EQ(vega_quic_conn_read(cl, &q.path, 0, pkt, n, q.now), 0);
    }
    VCHECK_EQ(cl->rx.npending, 0);
    qp_fini(&q);
}

static bool server_saw_reset(struct qp *q)
{
    return q->side[1].resets > 0;
}

VTEST(stream_data_past_a_reset_final_size)
{
    struct qp q;
    vega_test_net_opts o = link_ms(2);
    setup(&q, &o, 45);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &id), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id, "hello", 5, false), 5);
    VCHECK_EQ(vega_quic_stream_reset(q.side[0].c, id, 1), 0);
    VCHECK(qp_run(&q, server_saw_reset, 5 * S));
    /* The same stream, 10 bytes from offset 0: beyond the final size the reset fixed (5). */
    static const uint8_t zeros[10];
    vega_quic_frame beyond = qf_stream(id, 0, zeros, sizeof zeros, false);
    client_sends(&q, &beyond, 1, 16, 40001);
    qp_events(&q, &q.side[1]);
    VCHECK(q.side[1].closed);
    VCHECK_EQ(q.side[1].close_code, VEGA_QUIC_FINAL_SIZE_ERROR);
    qp_fini(&q);
}

VTEST(peer_frame_violations_close_with_their_code)
{
    /* Frames a client must not send the server, each in a 1-RTT packet of its own after a
     * handshake: the server closes with the code RFC 9000 gives (§19.7, §19.8, §19.10, §19.16,
     * §19.20, §4.1, §4.6; RFC 9221 §3). */
    static const uint8_t data[4] = "abc", tok[1] = {'t'};
    const struct {
        const char *what;
        vega_quic_frame f;
        uint64_t code;
    } cases[] = {
        {"HANDSHAKE_DONE from a client", qf_handshake_done(), VEGA_QUIC_PROTOCOL_VIOLATION},
        {"NEW_TOKEN from a client", qf_new_token(tok, 1), VEGA_QUIC_PROTOCOL_VIOLATION},
        {"RETIRE_CONNECTION_ID never issued", qf_retire_cid(1000), VEGA_QUIC_PROTOCOL_VIOLATION},
        {"STREAM on the server's unidirectional stream", qf_stream(3, 0, data, 4, false),
         VEGA_QUIC_STREAM_STATE_ERROR},
        {"MAX_STREAM_DATA on the client's unidirectional stream", qf_max_stream_data(2, 9),
         VEGA_QUIC_STREAM_STATE_ERROR},
        {"STREAM beyond the stream limit", qf_stream(4 * 1000, 0, data, 4, false),
         VEGA_QUIC_STREAM_LIMIT_ERROR},
        {"STREAM beyond the stream's window", qf_stream(0, 300000, data, 4, false),
         VEGA_QUIC_FLOW_CONTROL_ERROR},
        {"DATAGRAM not negotiated", qf_datagram(data, 4), VEGA_QUIC_PROTOCOL_VIOLATION},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp q;
        vega_test_net_opts o = link_ms(2);
        setup(&q, &o, 60 + i);
        handshake(&q);
        VCHECK(qp_run(&q, confirmed, 5 * S));
        client_sends(&q, &cases[i].f, 1, 0, 40001);
        qp_events(&q, &q.side[1]);
        if (!q.side[1].closed || !q.side[1].closed_local || q.side[1].close_code != cases[i].code)
            vtest_fail(__FILE__, __LINE__, "%s: closed %d, code 0x%llx", cases[i].what,
                       q.side[1].closed, (unsigned long long)q.side[1].close_code);
        qp_fini(&q);
    }
}

VTEST(idle_timer_restarts_on_first_send_after_receipt)
{
    struct qp q;
    vega_test_net_opts o = link_ms(2);
    setup(&q, &o, 46);
    q.ccfg.idle_timeout_ms = q.scfg.idle_timeout_ms = 2000;
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    qp_run(&q, never, 100 * MS);
    vega_quic_conn *cl = q.side[0].c;
    uint64_t d0 = cl->timers.idle_deadline;
    /* Nothing arrives; 1 s later the client sends: its idle period starts again (§10.1). */
    q.now += 1 * S;
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(cl, true, &id), 0);
    VCHECK_EQ(vega_quic_stream_write(cl, id, "a", 1, false), 1);
    uint8_t buf[1500];
    VCHECK(vega_quic_conn_write(cl, NULL, NULL, buf, sizeof buf, q.now) > 0);
    uint64_t d1 = cl->timers.idle_deadline;
    VCHECK(d1 >= d0 + 1 * S);
    /* A second send without anything received in between does not push it further. */
    q.now += 500 * MS;
    VCHECK_EQ(vega_quic_stream_write(cl, id, "b", 1, false), 1);
    VCHECK(vega_quic_conn_write(cl, NULL, NULL, buf, sizeof buf, q.now) > 0);
    VCHECK_EQ(cl->timers.idle_deadline, d1);
    qp_fini(&q);
}

VTEST(retry)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 8);
    q.retry = true;
    handshake(&q);
    VCHECK_EQ(q.retries_sent, 1);
    q.side[1].echo = true;
    static const uint8_t msg[] = "after retry";
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(qp_run(&q, stream_echoed, 5 * S));
    VCHECK_EQ(q.side[0].st[0].len, sizeof msg);
    qp_fini(&q);
}

VTEST(handshake_under_loss_with_and_without_retry)
{
    /* Seeds where the post-Retry ClientHello or server flights are lost: the Initial space
     * restarted by the Retry must still recover them. */
    for (uint64_t seed = 40; seed < 72; seed++) {
        struct qp q;
        vega_test_net_opts o = {.seed = seed, .delay_ns = 5 * MS, .loss_pct = 30};
        setup(&q, &o, seed);
        q.retry = seed % 2;
        VCHECK_EQ(qp_client_start(&q), 0);
        VCHECK(qp_run(&q, qp_handshaken, 120 * S));
        VCHECK(qp_run(&q, confirmed, 120 * S));
        qp_fini(&q);
    }
}

VTEST(key_update_both_directions)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 9);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    VCHECK_EQ(vega_quic_conn_key_update(q.side[0].c), 0);
    /* A second update must wait until the first is acknowledged. */
    VCHECK_EQ(vega_quic_conn_key_update(q.side[0].c), -EAGAIN);
    bulk(&q, 0, 300000, 30 * S);
    vega_quic_conn_info ci, si;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK_EQ(ci.key_updates, 1);
    VCHECK_EQ(si.key_updates, 1);
    /* The server updates next, once 3 PTO passed since the last update (RFC 9001 §6.5). */
    VCHECK_EQ(vega_quic_conn_key_update(q.side[1].c), -EAGAIN);
    qp_run(&q, never, 2 * S);
    VCHECK_EQ(vega_quic_conn_key_update(q.side[1].c), 0);
    for (size_t j = 0; j < q.side[0].nst; j++)
        free(q.side[0].st[j].data);
    q.side[0].nst = 0;
    bulk(&q, 1, 300000, 30 * S);
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK_EQ(ci.key_updates, 2);
    qp_fini(&q);
}

static bool closed_both(struct qp *q)
{
    return q->side[0].closed && q->side[1].closed;
}

VTEST(close_with_reason)
{
    struct qp q;
    vega_test_net_opts o = link_ms(3);
    setup(&q, &o, 10);
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    VCHECK_EQ(vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_APPLICATION, 0x42, "bye now"), 0);
    VCHECK_EQ(vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_APPLICATION, 0x42, "again"),
              VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_quic_conn_close(q.side[0].c, (vega_quic_close_kind)7, 0, NULL), -EINVAL);
    VCHECK(qp_run(&q, closed_both, 5 * S));
    VCHECK(q.side[1].closed_app);
    VCHECK_EQ(q.side[1].close_code, 0x42);
    VCHECK_STR(q.side[1].close_reason, "bye now");
    /* Both reach the end of the closing/draining period. */
    qp_run(&q, closed_both, 10 * S);
    for (int i = 0; i < 10 && !vega_quic_conn_is_closed(q.side[0].c); i++) {
        q.now += S;
        vega_quic_conn_handle_expiry(q.side[0].c, q.now);
        vega_quic_conn_handle_expiry(q.side[1].c, q.now);
    }
    VCHECK(vega_quic_conn_is_closed(q.side[0].c));
    VCHECK(vega_quic_conn_is_closed(q.side[1].c));
    uint8_t buf[1500];
    VCHECK_EQ(vega_quic_conn_write(q.side[0].c, NULL, NULL, buf, sizeof buf, q.now),
              VEGA_ERR_CLOSED);
    qp_fini(&q);
}

VTEST(idle_timeout)
{
    struct qp q;
    vega_test_net_opts o = link_ms(3);
    setup(&q, &o, 11);
    q.ccfg.idle_timeout_ms = 2000;
    q.scfg.idle_timeout_ms = 5000;
    handshake(&q);
    uint64_t start = q.now;
    VCHECK(qp_run(&q, closed_both, 60 * S));
    VCHECK_STR(q.side[0].close_reason, "idle timeout");
    /* The smaller of the two advertised timeouts applies. */
    VCHECK(q.now - start >= 2 * S && q.now - start < 3 * S);
    qp_fini(&q);
}

VTEST(datagrams)
{
    struct qp q;
    vega_test_net_opts o = link_ms(3);
    setup(&q, &o, 12);
    q.scfg.max_datagram_frame_size = 1200;
    q.ccfg.max_datagram_frame_size = 1200;
    handshake(&q);
    VCHECK(qp_run(&q, confirmed, 5 * S));
    uint8_t d[1000];
    memset(d, 0xab, sizeof d);
    for (int i = 0; i < 10; i++)
        VCHECK_EQ(vega_quic_datagram_send(q.side[0].c, d, 100 + (size_t)i), 0);
    VCHECK_EQ(vega_quic_datagram_send(q.side[0].c, d, 2000), -EINVAL);
    qp_run(&q, confirmed, 1 * S);
    qp_run(&q, closed_both, 200 * MS);
    VCHECK_EQ(q.side[1].datagrams, 10);
    VCHECK_EQ(q.side[1].datagram_bytes, 10 * 100 + 45);
    qp_fini(&q);
}

VTEST(datagram_refused_when_not_negotiated)
{
    struct qp q;
    vega_test_net_opts o = link_ms(3);
    setup(&q, &o, 13);
    handshake(&q);
    uint8_t d[10] = {0};
    VCHECK_EQ(vega_quic_datagram_send(q.side[0].c, d, sizeof d), -EINVAL);
    qp_fini(&q);
}

VTEST(flow_control_small_windows)
{
    struct qp q;
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 14);
    q.scfg.max_stream_data = 4096;
    q.scfg.max_stream_data_max = 65536;
    q.scfg.max_data = 8192;
    q.scfg.max_data_max = 131072;
    q.ccfg.stream_send_buffer = 16384;
    handshake(&q);
    bulk(&q, 0, 1u << 20, 120 * S);
    VCHECK(q.side[0].writable > 0); /* the sender waited for room */
    qp_fini(&q);
}

static bool streams_available(struct qp *q)
{
    return q->side[0].streams_available > 0;
}

VTEST(stream_limit_and_available)
{
    struct qp q;
    vega_test_net_opts o = link_ms(2);
    setup(&q, &o, 15);
    q.scfg.max_streams_bidi = 2;
    handshake(&q);
    uint64_t a, b, c;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &a), 0);
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &b), 0);
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &c), VEGA_ERR_FULL);
    q.side[1].echo = true;
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, a, "x", 1, true), 1);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, b, "y", 1, true), 1);
    VCHECK(qp_run(&q, streams_available, 5 * S));
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &c), 0);
    VCHECK_EQ(c, 8);
    qp_fini(&q);
}

static bool got_reset(struct qp *q)
{
    return q->side[1].resets > 0;
}

static bool got_stop(struct qp *q)
{
    return q->side[0].stops > 0;
}

VTEST(reset_and_stop_sending)
{
    struct qp q;
    vega_test_net_opts o = link_ms(2);
    setup(&q, &o, 16);
    handshake(&q);
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &id), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id, "hello", 5, false), 5);
    VCHECK_EQ(vega_quic_stream_reset(q.side[0].c, id, 77), 0);
    VCHECK(qp_run(&q, got_reset, 5 * S));
    struct qp_stream *st = qp_stream(&q.side[1], id);
    VCHECK(st->reset);
    VCHECK_EQ(st->reset_code, 77);
    /* The server asks the client to stop on a new stream: the client gets STREAM_STOP. */
    uint64_t id2;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, true, &id2), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id2, "more", 4, false), 4);
    qp_run(&q, got_stop, 200 * MS);
    VCHECK_EQ(vega_quic_stream_stop(q.side[1].c, id2, 99), 0);
    VCHECK(qp_run(&q, got_stop, 5 * S));
    VCHECK_EQ(q.side[0].stop_code, 99);
    VCHECK_EQ(vega_quic_stream_write(q.side[0].c, id2, "x", 1, false), -EINVAL);
    qp_fini(&q);
}

static bool have_session(struct qp *q)
{
    return q->side[0].session != NULL;
}

VTEST(resumption_and_zero_rtt)
{
    struct qp q;
    vega_test_net_opts o = link_ms(10);
    setup(&q, &o, 17);
    q.scfg.tls.early_data = true;
    q.ccfg.tls.early_data = true;
    handshake(&q);
    VCHECK(qp_run(&q, have_session, 5 * S));
    vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_TRANSPORT, 0, NULL);
    qp_run(&q, closed_both, 2 * S);

    qp_reset_conns(&q);
    q.ccfg.tls.session = q.side[0].session;
    q.ccfg.tls.session_len = q.side[0].session_len;
    q.side[1].echo = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    /* Stream data written before any packet left goes in 0-RTT. */
    static const uint8_t msg[] = "GET /early";
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(qp_run(&q, stream_echoed, 5 * S));
    VCHECK(qp_run(&q, qp_handshaken, 5 * S));
    vega_quic_conn_info ci, si;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    vega_quic_conn_get_info(q.side[1].c, &si);
    VCHECK(ci.resumed && si.resumed);
    VCHECK(q.side[1].st[0].len == sizeof msg);
    VCHECK_EQ(ci.early_data, VEGA_QUIC_EARLY_ACCEPTED);
    VCHECK_EQ(q.side[0].st[0].len, sizeof msg);
    qp_fini(&q);
}

VTEST(zero_rtt_rejected_is_resent)
{
    struct qp q;
    vega_test_net_opts o = link_ms(10);
    setup(&q, &o, 18);
    q.scfg.tls.early_data = true;
    q.ccfg.tls.early_data = true;
    handshake(&q);
    VCHECK(qp_run(&q, have_session, 5 * S));
    qp_reset_conns(&q);
    q.scfg.tls.early_data = false; /* the server changed its mind */
    q.ccfg.tls.session = q.side[0].session;
    q.ccfg.tls.session_len = q.side[0].session_len;
    q.side[1].echo = true;
    VCHECK_EQ(qp_client_start(&q), 0);
    static const uint8_t msg[] = "GET /early-rejected";
    VCHECK(qp_upload(&q.side[0], true, msg, sizeof msg) >= 0);
    VCHECK(qp_run(&q, stream_echoed, 10 * S));
    VCHECK_EQ(q.side[0].early_rejected, 1);
    VCHECK_EQ(q.side[0].st[0].len, sizeof msg);
    VCHECK(memcmp(q.side[0].st[0].data, msg, sizeof msg) == 0);
    qp_fini(&q);
}

VTEST(anti_amplification_limit)
{
    struct qp q;
    /* Everything after the client's first datagram is lost on the way to the server: the
     * server may only send 3x what it received until the address is validated. */
    vega_test_net_opts o = link_ms(5);
    setup(&q, &o, 19);
    VCHECK_EQ(qp_client_start(&q), 0);
    qp_step(&q);
    q.now += 6 * MS;
    qp_step(&q); /* the server got the first Initial */
    VCHECK(q.side[1].c);
    for (int i = 0; i < 200; i++) {
        q.now += 100 * MS;
        /* drop what the client sends */
        uint8_t buf[1500];
        while (vega_quic_conn_write(q.side[0].c, NULL, NULL, buf, sizeof buf, q.now) > 0) {
        }
        vega_quic_conn_handle_expiry(q.side[1].c, q.now);
        long n;
        while ((n = vega_quic_conn_write(q.side[1].c, NULL, NULL, buf, sizeof buf, q.now)) > 0)
            q.srv_bytes_out += (uint64_t)n;
    }
    VCHECK(q.srv_bytes_out > 0);
    VCHECK(q.srv_bytes_out <= 3 * q.srv_bytes_in);
    qp_fini(&q);
}

VTEST(version_negotiation_closes_client)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    setup(&q, &o, 20);
    VCHECK_EQ(qp_client_start(&q), 0);
    uint8_t buf[1500], vn[256];
    long n = vega_quic_conn_write(q.side[0].c, NULL, NULL, buf, sizeof buf, q.now);
    VCHECK(n >= 1200);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, buf, (size_t)n, 0), 0);
    uint32_t versions[] = {0x1a2a3a4a, 0xff00001d};
    long vl = vega_quic_vn_write(vn, sizeof vn, 0x11, h.scid, h.scid_len, h.dcid, h.dcid_len,
                                 versions, 2);
    VCHECK(vl > 0);
    VCHECK_EQ(vega_quic_conn_read(q.side[0].c, &q.path, 0, vn, (size_t)vl, q.now), 0);
    qp_events(&q, &q.side[0]);
    VCHECK(q.side[0].closed);
    VCHECK_EQ(q.side[0].close_code, VEGA_QUIC_VERSION_NEGOTIATION_ERROR);
    VCHECK_STR(q.side[0].close_reason, "server offers 0x1a2a3a4a 0xff00001d");
    VCHECK(vega_quic_conn_is_closed(q.side[0].c));
    qp_fini(&q);
}

/* Same seeds, same everything: with a deterministic signature (Ed25519) two runs send the same
 * bytes. */
static uint64_t run_hash(uint64_t seed)
{
    struct qp q;
    vega_test_net_opts o = {.seed = seed, .delay_ns = 3 * MS, .jitter_ns = 3 * MS, .loss_pct = 10};
    VCHECK_EQ(qp_init(&q, QT_SRV_ED_PEM, QT_SRV_ED_KEY, QT_CA_PEM, &o, seed), 0);
    q.ccfg.wall_ms = q.scfg.wall_ms = 0; /* no tickets: nothing time-dependent */
    handshake(&q);
    bulk(&q, 0, 100000, 60 * S);
    vega_test_net_stats a, b;
    vega_test_net_get_stats(q.net, 0, &a);
    vega_test_net_get_stats(q.net, 1, &b);
    uint64_t h = a.sent * 1000003 ^ a.bytes * 31 ^ b.sent * 7 ^ b.bytes ^ q.now;
    qp_fini(&q);
    return h;
}

VTEST(reproducible_by_seed)
{
    VCHECK_EQ(run_hash(5), run_hash(5));
    VCHECK(run_hash(5) != run_hash(6));
}

VTEST(config_checked)
{
    vega_quic_opts c;
    vega_quic_opts_init(&c);
    vega_quic_conn *conn = NULL;
    vega_quic_path p = {0};
    c.scid_len = 0;
    VCHECK_EQ(vega_quic_conn_client_new(&conn, &c, &p, 1), -EINVAL);
    vega_quic_opts_init(&c);
    c.version = 0x12345678;
    VCHECK_EQ(vega_quic_conn_client_new(&conn, &c, &p, 1), -EINVAL);
    vega_quic_opts_init(&c); /* no ALPN, no CA: TLS refuses */
    VCHECK_EQ(vega_quic_conn_client_new(&conn, &c, &p, 1), -EINVAL);
    VCHECK(conn == NULL);
}

/* ---- zero-copy receive: vega_quic_stream_peek + vega_quic_stream_consume ---- */

/* The server's side of a peek/consume reader: what it took, in order, and what it saw. */
struct pc_reader {
    uint8_t *got;
    size_t len, cap;
    bool fin, reset, error;
    bool hold;     /* only note what a peek shows (the test consumes by hand) */
    size_t seen;   /* hold: the last peek's length */
    bool seen_fin; /* hold: and its fin */
};

/* Takes at most half of each peek (at least 1 byte) so partial consumes are exercised, and
 * checks *fin is only ever said with the last bytes. */
static void pc_read(struct qp *q, struct pc_reader *r, uint64_t id)
{
    vega_quic_conn *c = q->side[1].c;
    for (;;) {
        const uint8_t *p;
        size_t n;
        bool fin;
        int rc = vega_quic_stream_peek(c, id, &p, &n, &fin);
        if (rc == VEGA_ERR_PROTO) {
            r->reset = true;
            return;
        }
        if (rc < 0) {
            r->error = true;
            return;
        }
        if (r->hold) {
            r->seen = n;
            r->seen_fin = fin;
            return;
        }
        if (n == 0 && !fin)
            return;
        VCHECK(n == 0 || p != NULL);
        size_t take = n > 1 ? n / 2 : n;
        bool last = fin && take == n;
        if (take > r->cap - r->len) {
            r->error = true;
            return;
        }
        memcpy(r->got + r->len, p, take);
        r->len += take;
        VCHECK_EQ(vega_quic_stream_consume(c, id, take), 0);
        if (last) {
            r->fin = true;
            return;
        }
    }
}

/* qp_run with the server's events handled here: READABLE goes to pc_read, not to a read. */
static bool pc_run(struct qp *q, struct pc_reader *r, bool (*done)(struct pc_reader *),
                   uint64_t max_ns)
{
    uint64_t end = q->now + max_ns;
    for (unsigned guard = 0; guard < 1000000; guard++) {
        uint8_t buf[2048], *d;
        long n;
        while ((n = vega_test_net_peek(q->net, 1, &d, NULL, NULL, q->now)) > 0)
            vega_quic_conn_read(q->side[1].c, &q->spath, 0, d, (size_t)n, q->now);
        while ((n = vega_test_net_peek(q->net, 0, &d, NULL, NULL, q->now)) > 0)
            vega_quic_conn_read(q->side[0].c, &q->path, 0, d, (size_t)n, q->now);
        qp_events(q, &q->side[0]);
        vega_quic_event ev;
        while (vega_quic_conn_next_event(q->side[1].c, &ev)) {
            if (ev.type == VEGA_QUIC_EV_STREAM_READABLE)
                pc_read(q, r, ev.stream_id);
            else if (ev.type == VEGA_QUIC_EV_STREAM_RESET)
                r->reset = true;
        }
        if (done(r))
            return true;
        for (int i = 0; i < 2; i++)
            while ((n = vega_quic_conn_write(q->side[i].c, NULL, NULL, buf, sizeof buf, q->now)) >
                   0)
                vega_test_net_send(q->net, i, buf, (size_t)n, q->now);
        uint64_t next = qp_min(vega_test_net_next(q->net, 0), vega_test_net_next(q->net, 1));
        for (int i = 0; i < 2; i++)
            next = qp_min(next, vega_quic_conn_expiry(q->side[i].c));
        if (next == QP_TIME_INF || next > end)
            return done(r);
        if (next > q->now)
            q->now = next;
        for (int i = 0; i < 2; i++)
            if (vega_quic_conn_expiry(q->side[i].c) <= q->now)
                vega_quic_conn_handle_expiry(q->side[i].c, q->now);
    }
    return done(r);
}

static bool pc_fin(struct pc_reader *r)
{
    return r->fin || r->error;
}

static bool pc_reset(struct pc_reader *r)
{
    return r->reset || r->error;
}

/* A transfer read only through peek and partial consumes, with windows far smaller than the
 * data: it completes only if consume returns credit as read does. */
VTEST(stream_peek_consume_transfer)
{
    struct qp q;
    vega_test_net_opts o = {.seed = 21, .delay_ns = 2 * MS, .loss_pct = 3};
    setup(&q, &o, 21);
    q.scfg.max_stream_data = 4096;
    q.scfg.max_stream_data_max = 65536;
    q.scfg.max_data = 8192;
    q.scfg.max_data_max = 131072;
    handshake(&q);
    size_t len = 300000;
    uint8_t *data = malloc(len);
    VCHECK(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 7 + i / 253);
    struct pc_reader r = {.got = malloc(len), .cap = len};
    VCHECK(r.got);
    int64_t id = qp_upload(&q.side[0], false, data, len);
    VCHECK(id >= 0);
    VCHECK(pc_run(&q, &r, pc_fin, 60 * S));
    VCHECK(!r.error);
    VCHECK(r.fin);
    VCHECK_EQ(r.len, len);
    VCHECK(memcmp(r.got, data, len) == 0);
    /* Done and freed on the receive side, like a read that saw the end. */
    const uint8_t *p;
    size_t n;
    bool fin;
    VCHECK_EQ(vega_quic_stream_peek(q.side[1].c, (uint64_t)id, &p, &n, &fin), -EINVAL);
    VCHECK_EQ(vega_quic_stream_consume(q.side[1].c, (uint64_t)id, 0), -EINVAL);
    free(r.got);
    free(data);
    qp_fini(&q);
}

static size_t pc_want;
static bool pc_seen(struct pc_reader *r)
{
    return r->seen >= pc_want || r->seen_fin || r->error;
}

/* Partial consumes, a lone FIN taken with consume(0), a reset stream, and bad calls. */
VTEST(stream_peek_consume_fin_reset_errors)
{
    struct qp q;
    vega_test_net_opts o = link_ms(2);
    setup(&q, &o, 22);
    handshake(&q);
    vega_quic_conn *cl = q.side[0].c, *sv = q.side[1].c;
    const uint8_t *p;
    size_t n;
    bool fin;
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(cl, false, &id), 0);
    /* The client's own unidirectional stream cannot be read; unknown streams neither. */
    VCHECK_EQ(vega_quic_stream_peek(cl, id, &p, &n, &fin), -EINVAL);
    VCHECK(p == NULL && n == 0 && !fin);
    VCHECK_EQ(vega_quic_stream_consume(cl, id, 0), -EINVAL);
    VCHECK_EQ(vega_quic_stream_peek(sv, 1002, &p, &n, &fin), -EINVAL);
    VCHECK_EQ(vega_quic_stream_write(cl, id, "abcdef", 6, false), 6);
    struct pc_reader r = {.hold = true};
    pc_want = 6;
    VCHECK(pc_run(&q, &r, pc_seen, 5 * S));
    VCHECK_EQ(vega_quic_stream_peek(sv, id, &p, &n, &fin), 0);
    VCHECK_EQ(n, 6);
    VCHECK(!fin);
    VCHECK(memcmp(p, "abcdef", 6) == 0);
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 7), -EINVAL); /* beyond readable */
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 2), 0);
    VCHECK_EQ(vega_quic_stream_peek(sv, id, &p, &n, &fin), 0);
    VCHECK_EQ(n, 4);
    VCHECK(!fin);
    VCHECK(memcmp(p, "cdef", 4) == 0);
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 4), 0);
    VCHECK_EQ(vega_quic_stream_peek(sv, id, &p, &n, &fin), 0);
    VCHECK(n == 0 && !fin);
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 0), 0); /* nothing: a no-op */
    /* The FIN alone: peek says so with no bytes, consume(0) ends the stream. */
    VCHECK_EQ(vega_quic_stream_write(cl, id, NULL, 0, true), 0);
    r.seen = 0;
    pc_want = 1;
    VCHECK(pc_run(&q, &r, pc_seen, 5 * S));
    VCHECK_EQ(vega_quic_stream_peek(sv, id, &p, &n, &fin), 0);
    VCHECK(n == 0 && fin);
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 1), -EINVAL);
    VCHECK_EQ(vega_quic_stream_consume(sv, id, 0), 0);
    VCHECK_EQ(vega_quic_stream_peek(sv, id, &p, &n, &fin), -EINVAL); /* freed */
    /* A reset stream: data that was readable is gone, both calls say VEGA_ERR_PROTO. */
    uint64_t id2;
    VCHECK_EQ(vega_quic_stream_open(cl, true, &id2), 0); /* bidi: kept while ours is open */
    VCHECK_EQ(vega_quic_stream_write(cl, id2, "hello", 5, false), 5);
    r = (struct pc_reader){.hold = true};
    pc_want = 5;
    VCHECK(pc_run(&q, &r, pc_seen, 5 * S));
    VCHECK_EQ(vega_quic_stream_peek(sv, id2, &p, &n, &fin), 0);
    VCHECK_EQ(n, 5);
    VCHECK_EQ(vega_quic_stream_consume(sv, id2, 1), 0);
    VCHECK_EQ(vega_quic_stream_reset(cl, id2, 5), 0);
    r.hold = false;
    VCHECK(pc_run(&q, &r, pc_reset, 5 * S));
    VCHECK(r.reset);
    VCHECK_EQ(vega_quic_stream_peek(sv, id2, &p, &n, &fin), VEGA_ERR_PROTO);
    VCHECK(p == NULL && n == 0 && !fin);
    VCHECK_EQ(vega_quic_stream_consume(sv, id2, 0), VEGA_ERR_PROTO);
    qp_fini(&q);
}

/* ---- public key pinning (vega_quic_opts.pinned_keys) ------------------------------------------
 */

/* The SHA-256 of a certificate's SubjectPublicKeyInfo (curl's sha256// pin). */
static void spki_sha256(const char *cert_pem, uint8_t out[32])
{
    vega_crypto_key *k;
    VCHECK_EQ(vega_crypto_key_from_cert(&k, cert_pem, strlen(cert_pem)), 0);
    uint8_t der[1024];
    vega_ssize n = vega_crypto_key_public_der(k, der, sizeof der);
    VCHECK(n > 0);
    VCHECK_EQ(vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, der, (size_t)n, out), 0);
    vega_crypto_key_free(k);
}

VTEST(pinned_key_matches_one_of_several)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    setup(&q, &o, 41);
    uint8_t pins[3][32];
    memset(pins, 0x11, sizeof pins);
    spki_sha256(QT_SRV_P256_PEM, pins[1]);
    q.ccfg.pinned_keys = pins[0];
    q.ccfg.n_pinned_keys = 3;
    handshake(&q);
    VCHECK(q.side[0].handshake_done);
    qp_fini(&q);
}

/* A key not pinned: the client closes at the server's Certificate with bad_certificate and the
 * documented reason, with a trusted chain and with verification off alike. */
VTEST(pinned_key_mismatch_fails_the_handshake)
{
    for (int insecure = 0; insecure < 2; insecure++) {
        struct qp q;
        vega_test_net_opts o = link_ms(1);
        setup(&q, &o, 42 + (uint64_t)insecure);
        uint8_t pin[32];
        spki_sha256(QT_SRV_ED_PEM, pin); /* another certificate's key */
        q.ccfg.pinned_keys = pin;
        q.ccfg.n_pinned_keys = 1;
        q.ccfg.tls.insecure = insecure;
        VCHECK_EQ(qp_client_start(&q), 0);
        qp_run(&q, qp_handshaken, 2 * S);
        VCHECK(!q.side[0].handshake_done);
        VCHECK(q.side[0].closed && q.side[0].closed_local);
        VCHECK_EQ(q.side[0].close_code, VEGA_QUIC_CRYPTO_ERROR + 42); /* bad_certificate */
        VCHECK(q.side[1].closed && !q.side[1].closed_local);
        VCHECK_EQ(q.side[1].close_code, VEGA_QUIC_CRYPTO_ERROR + 42);
        VCHECK_STR(q.side[1].close_reason, VEGA_QUIC_PIN_MISMATCH);
        qp_fini(&q);
    }
}

/* A resumed handshake shows no certificate: a pinned client does not offer its session. */
VTEST(pinned_client_does_not_resume)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    setup(&q, &o, 44);
    handshake(&q);
    VCHECK(qp_run(&q, have_session, 5 * S));
    vega_quic_conn_close(q.side[0].c, VEGA_QUIC_CLOSE_TRANSPORT, 0, NULL);
    qp_run(&q, closed_both, 2 * S);
    qp_reset_conns(&q);
    uint8_t pin[32];
    spki_sha256(QT_SRV_P256_PEM, pin);
    q.ccfg.pinned_keys = pin;
    q.ccfg.n_pinned_keys = 1;
    q.ccfg.tls.session = q.side[0].session;
    q.ccfg.tls.session_len = q.side[0].session_len;
    handshake(&q);
    vega_quic_conn_info ci;
    vega_quic_conn_get_info(q.side[0].c, &ci);
    VCHECK(!ci.resumed);
    qp_fini(&q);
}

VTEST(pinned_keys_bounds_checked)
{
    struct qp q;
    vega_test_net_opts o = link_ms(1);
    setup(&q, &o, 45);
    vega_quic_conn *c = NULL;
    q.ccfg.pinned_keys = NULL;
    q.ccfg.n_pinned_keys = 1;
    VCHECK_EQ(vega_quic_conn_client_new(&c, &q.ccfg, &q.path, q.now), -EINVAL);
    static uint8_t many[VEGA_QUIC_MAX_PINNED_KEYS + 1][32];
    q.ccfg.pinned_keys = many[0];
    q.ccfg.n_pinned_keys = VEGA_QUIC_MAX_PINNED_KEYS + 1;
    VCHECK_EQ(vega_quic_conn_client_new(&c, &q.ccfg, &q.path, q.now), -EINVAL);
    VCHECK(c == NULL);
    q.ccfg.n_pinned_keys = VEGA_QUIC_MAX_PINNED_KEYS;
    VCHECK_EQ(vega_quic_conn_client_new(&c, &q.ccfg, &q.path, q.now), 0);
    vega_quic_conn_free(c);
    qp_fini(&q);
}

/* API rules, ABI: vega_quic_conn_info and vega_test_net_stats are versioned as options are. A
 * layout this library does not know (or a direction that is not 0 or 1) is refused and the
 * struct left as it was; the current one is filled to its end and not past it. */
VTEST(info_layouts)
{
    struct qp q;
    vega_test_net_opts o = link_ms(10);
    setup(&q, &o, 1);
    handshake(&q);
    struct {
        vega_quic_conn_info info;
        vega_test_net_stats st;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_conn *c = q.side[0].c;
    VCHECK_EQ(vega_quic_conn_get_info_versioned(c, &a.info, VEGA_QUIC_CONN_INFO_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_quic_conn_get_info_versioned(c, &a.info, 0), -EINVAL);
    VCHECK_EQ(vega_quic_conn_get_info_versioned(NULL, &a.info, 1), -EINVAL);
    VCHECK_EQ(vega_quic_conn_get_info_versioned(c, NULL, 1), -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats_versioned(q.net, 0, &a.st, VEGA_TEST_NET_STATS_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats_versioned(q.net, 0, &a.st, 0), -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats_versioned(NULL, 0, &a.st, 1), -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats_versioned(q.net, 0, NULL, 1), -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats(q.net, 2, &a.st), -EINVAL);
    VCHECK_EQ(vega_test_net_get_stats(q.net, -1, &a.st), -EINVAL);
    for (size_t i = 0; i < sizeof a; i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_quic_conn_get_info(c, &a.info), 0);
    VCHECK(a.info.handshake_done);
    VCHECK_EQ(a.info.version, VEGA_QUIC_V1);
    VCHECK_STR(a.info.alpn, "hq-interop");
    VCHECK_EQ(vega_test_net_get_stats(q.net, 0, &a.st), 0);
    VCHECK(a.st.sent > 0 && a.st.bytes > 0); /* the client's Initial at least */
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    qp_fini(&q);
}
