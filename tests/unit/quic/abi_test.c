/* SPDX-License-Identifier: MIT */
/* vega_quic_opts layouts 2 (the key log hook appended) and 3 (the qlog hook), docs/ARCHITECTURE.md
 * "API rules: ABI": a program built against layout 1 or 2 passes the shorter struct; the
 * library reads only its prefix, writes nothing past it, and a layout it does not know is
 * refused. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "qtls_certs.h"
#include "quic_pair.h"
#include "vtest.h"

/* Layout 1 as 0.1 shipped it: what a program built then has. */
struct opts_v1 {
    uint32_t version;
    vega_quic_tls_opts tls;
    uint64_t wall_ms;
    uint64_t idle_timeout_ms;
    uint64_t max_data;
    uint64_t max_data_max;
    uint64_t max_stream_data;
    uint64_t max_stream_data_max;
    uint64_t max_streams_bidi;
    uint64_t max_streams_uni;
    uint64_t stream_send_buffer;
    uint64_t max_datagram_frame_size;
    size_t max_datagram_queue;
    uint64_t ack_delay_exponent;
    uint64_t max_ack_delay_ms;
    uint64_t active_connection_id_limit;
    size_t scid_len;
    size_t pmtu_max;
    bool disable_active_migration;
    vega_quic_cc cc;
    uint64_t initial_rtt_ns;
    const uint8_t *token;
    size_t token_len;
    int (*rand)(void *ud, void *buf, size_t len);
    void *rand_ud;
    const vega_quic_mem *mem;
    const uint8_t *reset_key;
};

VTEST(v1_layout_is_a_prefix)
{
    VCHECK_EQ(VEGA_QUIC_OPTS_VERSION, 5);
    VCHECK_EQ(sizeof(struct opts_v1), offsetof(vega_quic_opts, keylog));
    VCHECK_EQ(offsetof(struct opts_v1, reset_key), offsetof(vega_quic_opts, reset_key));
    VCHECK_EQ(offsetof(struct opts_v1, cc), offsetof(vega_quic_opts, cc));
}

VTEST(v1_init_writes_the_prefix_only)
{
    struct {
        struct opts_v1 o;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)&a.o, 1);
    VCHECK_EQ(a.o.version, VEGA_QUIC_V1);
    VCHECK_EQ(a.o.idle_timeout_ms, 30000);
    VCHECK_EQ(a.o.scid_len, 8);
    VCHECK(a.o.reset_key == NULL);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.keylog == NULL && cur.keylog_user == NULL);
    VCHECK(cur.qlog == NULL && cur.qlog_user == NULL);
}

/* Layout 2 ends where the qlog hook starts; its init writes no further. */
VTEST(v2_init_writes_the_prefix_only)
{
    struct {
        unsigned char o[offsetof(vega_quic_opts, qlog)];
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)(void *)a.o, 2);
    vega_quic_opts got;
    memcpy(&got, a.o, sizeof a.o);
    VCHECK_EQ(got.idle_timeout_ms, 30000);
    VCHECK(got.keylog == NULL);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
}

/* Layout 3 ends where the pinned keys start; its init writes no further, and a connection made
 * with it, junk after it (0xff: a count of pins read from there would be refused or crash),
 * pins nothing. */
/* Layout 4 stops before the ID prefix: init writes no further, and a layout-4 config with junk
 * after it (0xff: a prefix length read from there would be refused) makes a connection whose
 * IDs have no prefix. */
VTEST(v4_init_writes_the_prefix_only)
{
    struct {
        unsigned char o[offsetof(vega_quic_opts, scid_prefix)];
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)(void *)a.o, 4);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.scid_prefix_len == 0);
    struct {
        unsigned char o[offsetof(vega_quic_opts, scid_prefix)];
        unsigned char junk[64];
    } b;
    memset(&b, 0xff, sizeof b);
    struct qp q;
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 10), 0);
    memcpy(b.o, &q.ccfg, sizeof b.o);
    vega_quic_conn *c = NULL;
    VCHECK_EQ(
        vega_quic_conn_client_new_versioned(&c, (vega_quic_opts *)(void *)b.o, &q.path, q.now, 4),
        0);
    vega_quic_conn_free(c);
    qp_fini(&q);
}

VTEST(v3_init_writes_the_prefix_only)
{
    struct {
        unsigned char o[offsetof(vega_quic_opts, pinned_keys)];
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)(void *)a.o, 3);
    vega_quic_opts got;
    memcpy(&got, a.o, sizeof a.o);
    VCHECK_EQ(got.idle_timeout_ms, 30000);
    VCHECK(got.qlog == NULL);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.pinned_keys == NULL && cur.n_pinned_keys == 0);
    struct qp q;
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 10), 0);
    struct {
        unsigned char o[offsetof(vega_quic_opts, pinned_keys)];
        unsigned char junk[64];
    } c;
    memset(&c, 0xff, sizeof c);
    memcpy(c.o, &q.ccfg, sizeof c.o);
    vega_quic_conn *qc = NULL;
    VCHECK_EQ(
        vega_quic_conn_client_new_versioned(&qc, (vega_quic_opts *)(void *)c.o, &q.path, q.now, 3),
        0);
    vega_quic_conn_free(qc);
    qp_fini(&q);
}

static bool handshaken(struct qp *q)
{
    return qp_handshaken(q);
}

/* Connections made with layout 1 options, whatever bytes follow them (0xff: a keylog pointer
 * read from there would crash), handshake with each other; unknown layouts are refused. */
VTEST(v1_connections_work_and_unknown_layouts_are_refused)
{
    struct qp q;
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 9), 0);
    struct {
        struct opts_v1 o;
        unsigned char junk[64];
    } c, s;
    memset(&c, 0xff, sizeof c);
    memset(&s, 0xff, sizeof s);
    memcpy(&c.o, &q.ccfg, sizeof c.o);
    memcpy(&s.o, &q.scfg, sizeof s.o);
    VCHECK_EQ(vega_quic_conn_client_new_versioned(&q.side[0].c, (vega_quic_opts *)&c.o, &q.path,
                                                  q.now, 1),
              0);
    /* the server side through qp's driver takes q.scfg: make it the v1 struct's bytes by
     * creating the server connection here from the client's first datagram */
    uint8_t buf[1500];
    vega_quic_path p;
    uint8_t ecn = 0;
    vega_ssize n = vega_quic_conn_write(q.side[0].c, &p, &ecn, buf, sizeof buf, q.now);
    VCHECK(n >= 1200);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, buf, (size_t)n, 0), 0);
    vega_quic_server_params sp = {.version = h.version,
                                  .dcid = h.dcid,
                                  .dcid_len = h.dcid_len,
                                  .scid = h.scid,
                                  .scid_len = h.scid_len};
    vega_quic_conn *bad = NULL;
    VCHECK_EQ(
        vega_quic_conn_server_new_versioned(&bad, (vega_quic_opts *)&s.o, &q.spath, &sp, q.now, 6),
        -EINVAL);
    VCHECK_EQ(vega_quic_conn_server_new_versioned(&bad, NULL, &q.spath, &sp, q.now, 1), -EINVAL);
    VCHECK(bad == NULL);
    VCHECK_EQ(vega_quic_conn_server_new_versioned(&q.side[1].c, (vega_quic_opts *)&s.o, &q.spath,
                                                  &sp, q.now, 1),
              0);
    vega_quic_conn_read(q.side[1].c, &q.spath, ecn, buf, (size_t)n, q.now);
    VCHECK(qp_run(&q, handshaken, 5000000000ull));
    VCHECK_EQ(vega_quic_conn_client_new_versioned(&bad, &q.ccfg, &q.path, q.now, 6), -EINVAL);
    VCHECK_EQ(vega_quic_conn_client_new_versioned(&bad, &q.ccfg, &q.path, q.now, 0), -EINVAL);
    VCHECK(bad == NULL);
    qp_fini(&q);
}
