/* SPDX-License-Identifier: MIT */
/* vega_quic_opts layouts 2 (the key log hook appended), 3 (the qlog hook), 4 (pinned keys) and
 * 5 (the ID prefix), docs/ARCHITECTURE.md "API rules: ABI": a program built against an older
 * layout passes the shorter struct; the library reads only its prefix, and a layout it does not
 * know is refused. That no init writes past its layout: tests/unit/base/compat_test.c. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "abi_old.h"
#include "qtls_certs.h"
#include "quic_pair.h"
#include "vtest.h"

/* What each layout's init writes within it (that it writes nothing past it: the layout table,
 * tests/unit/base/compat_test.c). */
VTEST(v1_init_sets_the_defaults)
{
    struct quic_opts_v1 a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)&a, 1);
    VCHECK_EQ(a.version, VEGA_QUIC_V1);
    VCHECK_EQ(a.idle_timeout_ms, 30000);
    VCHECK_EQ(a.scid_len, 8);
    VCHECK(a.reset_key == NULL);
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.keylog == NULL && cur.keylog_user == NULL);
    VCHECK(cur.qlog == NULL && cur.qlog_user == NULL);
}

/* Layout 2 ends where the qlog hook starts. */
VTEST(v2_init_sets_the_defaults)
{
    _Alignas(vega_quic_opts) unsigned char a[QUIC_OPTS_V2_SIZE];
    memset(a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)(void *)a, 2);
    vega_quic_opts got;
    memcpy(&got, a, sizeof a);
    VCHECK_EQ(got.idle_timeout_ms, 30000);
    VCHECK(got.keylog == NULL);
}

/* Layout 3 ends where the pinned keys start: a connection made with it, junk after it (0xff: a
 * count of pins read from there would be refused or crash), pins nothing. */
VTEST(v3_connection_pins_nothing)
{
    _Alignas(vega_quic_opts) unsigned char a[QUIC_OPTS_V3_SIZE];
    memset(a, 0xa5, sizeof a);
    vega_quic_opts_init_versioned((vega_quic_opts *)(void *)a, 3);
    vega_quic_opts got;
    memcpy(&got, a, sizeof a);
    VCHECK_EQ(got.idle_timeout_ms, 30000);
    VCHECK(got.qlog == NULL);
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.pinned_keys == NULL && cur.n_pinned_keys == 0);
    struct qp q;
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, NULL, 10), 0);
    struct {
        _Alignas(vega_quic_opts) unsigned char o[QUIC_OPTS_V3_SIZE];
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

/* Layout 4 stops before the ID prefix: a layout-4 config with junk after it (0xff: a prefix
 * length read from there would be refused) makes a connection whose IDs have no prefix. */
VTEST(v4_connection_has_no_id_prefix)
{
    vega_quic_opts cur;
    memset(&cur, 0xa5, sizeof cur);
    vega_quic_opts_init(&cur);
    VCHECK(cur.scid_prefix_len == 0);
    struct {
        _Alignas(vega_quic_opts) unsigned char o[QUIC_OPTS_V4_SIZE];
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
        struct quic_opts_v1 o;
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
