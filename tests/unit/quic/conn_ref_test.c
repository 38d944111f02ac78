/* SPDX-License-Identifier: MIT */
/* Zero-copy stream writes (vega_quic_stream_write_ref) between a client and a server core:
 * transfers read straight from the application's bytes under loss, each piece released exactly
 * once and never while still needed (released bytes are overwritten, so a late retransmission
 * would corrupt the stream), releases on reset, STOP_SENDING and free, the argument errors and
 * the short write with its STREAM_WRITABLE. */
#include <string.h>

#include "qtls_certs.h"
#include "quic_pair.h"
#include "vtest.h"

#define MS 1000000ull
#define S  1000000000ull

static void setup(struct qp *q, const vega_test_net_opts *net, uint64_t seed)
{
    VCHECK_EQ(qp_init(q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, net, seed), 0);
    VCHECK_EQ(qp_client_start(q), 0);
    VCHECK(qp_run(q, qp_handshaken, 10 * S));
}

/* The application's side of a referenced upload: the bytes (a private copy per piece, so a
 * released piece can be wiped), what was taken and what came back. */
#define PIECE   (16 * 1024)
#define NPIECES 512

struct upload {
    vega_quic_conn *c;
    uint64_t id;
    uint8_t *pieces[NPIECES];
    size_t taken[NPIECES];    /* bytes each piece's referenced writes took */
    unsigned writes[NPIECES]; /* and how many of them took bytes */
    size_t next, off;         /* the piece being written, and the offset inside it */
    size_t npieces;
    unsigned released[NPIECES];
    size_t releases, bad; /* bad: a release that matched no write, or the wrong length */
    bool fin, copy_odd;   /* copy_odd: every odd piece goes by vega_quic_stream_write */
};

static uint8_t byte_at(uint64_t off)
{
    return (uint8_t)(off * 131 + (off >> 9) + 3);
}

static void on_release(void *user, const void *data, size_t len)
{
    struct upload *u = user;
    for (size_t i = 0; i < u->npieces; i++) {
        if (data >= (const void *)u->pieces[i] && data < (const void *)(u->pieces[i] + PIECE)) {
            size_t at = (size_t)((const uint8_t *)data - u->pieces[i]);
            /* one release per write: the pointer and count that write passed and took */
            if (u->taken[i] == 0 || len == 0 || at + len > PIECE)
                u->bad++;
            u->released[i]++;
            u->releases++;
            memset((void *)data, 0xee, len); /* the library must never read it again */
            return;
        }
    }
    u->bad++;
}

static void upload_init(struct upload *u, vega_quic_conn *c, uint64_t id, size_t npieces)
{
    memset(u, 0, sizeof *u);
    u->c = c;
    u->id = id;
    u->npieces = npieces;
    for (size_t i = 0; i < npieces; i++) {
        u->pieces[i] = malloc(PIECE);
        VCHECK(u->pieces[i] != NULL);
        for (size_t j = 0; j < PIECE; j++)
            u->pieces[i][j] = byte_at((uint64_t)i * PIECE + j);
    }
}

static void upload_fini(struct upload *u)
{
    for (size_t i = 0; i < u->npieces; i++)
        free(u->pieces[i]);
}

/* Writes as much as the stream takes. */
static void upload_pump(struct upload *u)
{
    while (!u->fin && u->next < u->npieces) {
        size_t i = u->next, n = PIECE - u->off;
        bool fin = i + 1 == u->npieces;
        vega_ssize w;
        if (u->copy_odd && i % 2)
            w = vega_quic_stream_write(u->c, u->id, u->pieces[i] + u->off, n, fin);
        else
            w = vega_quic_stream_write_ref(u->c, u->id, u->pieces[i] + u->off, n, fin, on_release,
                                           u);
        VCHECK(w >= 0);
        if (w <= 0)
            return;
        if (!(u->copy_odd && i % 2)) {
            u->taken[i] += (size_t)w;
            u->writes[i]++;
        }
        u->off += (size_t)w;
        if (u->off == PIECE) {
            u->next++;
            u->off = 0;
            u->fin = fin;
        }
        if ((size_t)w < n)
            return;
    }
}

/* STREAM_DONE on the client: everything it sent on a stream was acknowledged. */
static bool send_done(struct qp *q)
{
    return q->side[0].done > 0;
}

static struct upload *g_up;
static bool upload_done(struct qp *q)
{
    upload_pump(g_up); /* after each step: room may have come back */
    struct qp_side *s = &q->side[1];
    return s->nst > 0 && s->st[0].fin;
}

static void transfer(unsigned loss, uint64_t seed, bool copy_odd)
{
    struct qp q;
    vega_test_net_opts o = {.seed = seed, .delay_ns = 5 * MS, .loss_pct = loss, .reorder_pct = 2};
    setup(&q, &o, seed);
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(q.side[0].c, false, &id), 0);
    struct upload *u = malloc(sizeof *u);
    VCHECK(u != NULL);
    upload_init(u, q.side[0].c, id, 256); /* 4 MiB, in 16 KiB pieces, 1 MiB send buffer */
    u->copy_odd = copy_odd;
    g_up = u;
    upload_pump(u);
    VCHECK(qp_run(&q, upload_done, 600 * S));
    struct qp_stream *st = &q.side[1].st[0];
    VCHECK_EQ(st->len, (size_t)256 * PIECE);
    for (size_t i = 0; i < st->len; i++)
        if (st->data[i] != byte_at(i)) {
            VCHECK_EQ(st->data[i], byte_at(i)); /* a piece read after its release */
            break;
        }
    /* Everything acknowledged: every referenced write came back, once; copies never. */
    VCHECK(qp_run(&q, send_done, 10 * S));
    size_t writes = 0;
    for (size_t i = 0; i < u->npieces; i++) {
        VCHECK_EQ(u->released[i], u->writes[i]);
        writes += u->writes[i];
    }
    VCHECK_EQ(u->releases, writes);
    VCHECK_EQ(u->bad, 0);
    VCHECK(writes >= (copy_odd ? 128u : 256u));
    qp_fini(&q);
    VCHECK_EQ(u->releases, writes); /* nothing more at free */
    upload_fini(u);
    free(u);
}

VTEST(transfer_by_reference_clean)
{
    transfer(0, 3, false);
}

VTEST(transfer_by_reference_under_loss)
{
    transfer(5, 4, false);
}

VTEST(transfer_mixed_copies_and_references_under_loss)
{
    transfer(10, 5, true);
}

/* ---- releases without acknowledgement ------------------------------------------------------- */

struct counter {
    size_t n, bytes;
};

static void count_release(void *user, const void *data, size_t len)
{
    struct counter *k = user;
    (void)data;
    k->n++;
    k->bytes += len;
}

static bool client_stopped(struct qp *q)
{
    return q->side[0].stops > 0;
}

VTEST(released_on_reset_stop_sending_and_free)
{
    static const uint8_t blob[3000] = {1, 2, 3};
    struct qp q;
    vega_test_net_opts o = {.seed = 9, .delay_ns = 2 * MS};
    setup(&q, &o, 9);
    vega_quic_conn *c = q.side[0].c;
    struct counter ka = {0}, kb = {0}, kc = {0};
    /* Reset by us: every piece comes back inside vega_quic_stream_reset. */
    uint64_t a;
    VCHECK_EQ(vega_quic_stream_open(c, true, &a), 0);
    for (int i = 0; i < 3; i++)
        VCHECK_EQ(vega_quic_stream_write_ref(c, a, blob, 1000, false, count_release, &ka), 1000);
    VCHECK_EQ(vega_quic_stream_write(c, a, blob, 10, false), 10);
    VCHECK_EQ(ka.n, 0);
    VCHECK_EQ(vega_quic_stream_reset(c, a, 5), 0);
    VCHECK_EQ(ka.n, 3);
    VCHECK_EQ(ka.bytes, 3000);
    VCHECK_EQ(vega_quic_stream_write_ref(c, a, blob, 1, false, count_release, &ka), -EINVAL);
    /* Stopped by the peer: back when its STOP_SENDING is read. */
    uint64_t b;
    VCHECK_EQ(vega_quic_stream_open(c, true, &b), 0);
    VCHECK_EQ(vega_quic_stream_write_ref(c, b, blob, 3000, false, count_release, &kb), 3000);
    qp_run(&q, client_stopped, 50 * MS); /* the server learns of the stream */
    VCHECK_EQ(vega_quic_stream_stop(q.side[1].c, b, 7), 0);
    VCHECK(qp_run(&q, client_stopped, 5 * S));
    VCHECK_EQ(kb.n, 1);
    VCHECK_EQ(kb.bytes, 3000);
    /* Still held when the connection goes: back inside vega_quic_conn_free. */
    uint64_t d;
    VCHECK_EQ(vega_quic_stream_open(c, false, &d), 0);
    VCHECK_EQ(vega_quic_stream_write_ref(c, d, blob, 2000, false, count_release, &kc), 2000);
    VCHECK_EQ(vega_quic_stream_write_ref(c, d, blob + 2000, 1000, false, NULL, NULL), 1000);
    qp_step(&q); /* sent, not yet acknowledged */
    VCHECK_EQ(kc.n, 0);
    qp_fini(&q);
    VCHECK_EQ(kc.n, 1);
    VCHECK_EQ(kc.bytes, 2000);
    VCHECK_EQ(ka.n, 3);
    VCHECK_EQ(kb.n, 1);
}

/* ---- arguments and short writes ------------------------------------------------------------ */

static bool client_writable(struct qp *q)
{
    return q->side[0].writable > 0;
}

static struct counter *g_k;
static size_t g_released;
static bool released_enough(struct qp *q)
{
    (void)q;
    return g_k->n >= g_released;
}

VTEST(arguments_short_writes_and_writable)
{
    static uint8_t big[100 * 1024];
    struct qp q;
    vega_test_net_opts o = {.seed = 10, .delay_ns = 2 * MS};
    VCHECK_EQ(qp_init(&q, QT_SRV_P256_PEM, QT_SRV_P256_KEY, QT_CA_PEM, &o, 10), 0);
    q.ccfg.stream_send_buffer = 64 * 1024;
    VCHECK_EQ(qp_client_start(&q), 0);
    VCHECK(qp_run(&q, qp_handshaken, 10 * S));
    vega_quic_conn *c = q.side[0].c;
    struct counter k = {0};
    /* No such stream; a stream the peer opened for its own sending only. */
    VCHECK_EQ(vega_quic_stream_write_ref(c, 1000, big, 1, false, count_release, &k), -EINVAL);
    uint64_t su;
    VCHECK_EQ(vega_quic_stream_open(q.side[1].c, false, &su), 0);
    VCHECK_EQ(vega_quic_stream_write(q.side[1].c, su, "x", 1, false), 1);
    qp_run(&q, client_writable, 50 * MS);
    VCHECK_EQ(vega_quic_stream_write_ref(c, su, big, 1, false, count_release, &k), -EINVAL);
    /* The send buffer takes 64 KiB of the 100: a short count, then nothing, then
     * STREAM_WRITABLE once acknowledgements made room. */
    uint64_t id;
    VCHECK_EQ(vega_quic_stream_open(c, false, &id), 0);
    VCHECK_EQ(vega_quic_stream_write_ref(c, id, big, sizeof big, true, count_release, &k),
              64 * 1024);
    VCHECK_EQ(vega_quic_stream_write_ref(c, id, big + 65536, 100, true, count_release, &k), 0);
    VCHECK_EQ(vega_quic_stream_write(c, id, big + 65536, 100, true), 0);
    VCHECK(qp_run(&q, client_writable, 5 * S));
    g_k = &k;
    g_released = 1;
    VCHECK(qp_run(&q, released_enough, 5 * S)); /* the whole write, once all acknowledged */
    VCHECK_EQ(k.n, 1);
    VCHECK_EQ(k.bytes, 64 * 1024);
    vega_ssize w =
        vega_quic_stream_write_ref(c, id, big + 65536, sizeof big - 65536, true, count_release, &k);
    VCHECK_EQ(w, (vega_ssize)(sizeof big - 65536));
    /* Finished: nothing more, not even an empty write. */
    VCHECK_EQ(vega_quic_stream_write_ref(c, id, big, 0, false, count_release, &k), -EINVAL);
    /* An empty write with fin on a fresh stream takes nothing and releases nothing. */
    uint64_t e;
    VCHECK_EQ(vega_quic_stream_open(c, false, &e), 0);
    VCHECK_EQ(vega_quic_stream_write_ref(c, e, NULL, 0, true, count_release, &k), 0);
    g_released = 2;
    VCHECK(qp_run(&q, released_enough, 5 * S));
    VCHECK_EQ(k.n, 2);
    VCHECK_EQ(k.bytes, sizeof big);
    /* Closing: VEGA_ERR_CLOSED. */
    uint64_t f;
    VCHECK_EQ(vega_quic_stream_open(c, false, &f), 0);
    VCHECK_EQ(vega_quic_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL), 0);
    VCHECK_EQ(vega_quic_stream_write_ref(c, f, big, 1, false, count_release, &k), VEGA_ERR_CLOSED);
    qp_fini(&q);
    VCHECK_EQ(k.n, 2);
}
