/* SPDX-License-Identifier: MIT */
/* A client core and a server core wired in memory (RFC 9113 end to end): requests with and
 * without bodies, 100 concurrent streams, flow control through tiny windows both ways,
 * trailers, informational responses, resets, the graceful GOAWAY, and whole conversations moved
 * one byte at a time. */
#include "h2_test.h"

/* ---- a small application: uploads and answers ---- */

#define MAXS 512

struct up {
    const uint8_t *data;
    size_t len, off, chunk;
    bool trailers, done;
};

static struct up ups[2][MAXS]; /* [0] the client's uploads, [1] the server's */
static uint8_t payload[8 << 20];

static struct up *up_of(struct rec *r, int32_t id)
{
    VCHECK(id > 0 && id / 2 < MAXS);
    return &ups[r->hook_ud ? 1 : 0][id / 2];
}

/* Writes the next span of the stream's body (one is pending at a time). */
static int pump(struct rec *r, int32_t id)
{
    struct up *u = up_of(r, id);
    if (u->done || !u->data)
        return 0;
    if (u->off < u->len) {
        size_t k = VEGA__MIN(u->chunk ? u->chunk : u->len, u->len - u->off);
        bool last = u->off + k == u->len && !u->trailers;
        vega_ssize n = vega_h2_stream_write(r->conn, id, u->data + u->off, k,
                                            last ? VEGA_H2_FLAG_END_STREAM : 0);
        VCHECK(n >= 0);
        u->off += (size_t)n;
        return 0;
    }
    u->done = true;
    if (u->trailers) {
        vega_hpack_field t[] = {FLD("x-checksum", "abc"), FLD("x-count", "7")};
        VCHECK_EQ(vega_h2_submit_trailers(r->conn, id, t, 2), 0);
    } else if (u->len == 0) {
        VCHECK_EQ(vega_h2_stream_write(r->conn, id, NULL, 0, VEGA_H2_FLAG_END_STREAM), 0);
    }
    return 0;
}

static int on_writable(struct rec *r, int32_t id)
{
    return pump(r, id);
}

/* The server answers every request: 200, content-length, a body of resp_len bytes. */
static size_t resp_len = 5;
static bool resp_trailers;
static bool resp_info;

static int answer(struct rec *r, int32_t id, const vega_h2_head *h)
{
    if (h->kind != VEGA_H2_HEAD_REQUEST)
        return 0;
    if (resp_info) {
        vega_hpack_field i[] = {FLD(":status", "103"), FLD("link", "</a.css>; rel=preload")};
        VCHECK_EQ(vega_h2_submit_response(r->conn, id, i, 2, 0), 0);
    }
    char cl[32];
    snprintf(cl, sizeof cl, "%zu", resp_len);
    vega_hpack_field f[] = {FLD(":status", "200"),
                            {{"content-length", 14}, {cl, strlen(cl)}, VEGA_HPACK_INDEX_AUTO}};
    bool empty = resp_len == 0 && !resp_trailers;
    VCHECK_EQ(vega_h2_submit_response(r->conn, id, f, 2, empty ? VEGA_H2_FLAG_END_STREAM : 0), 0);
    if (empty)
        return 0;
    struct up *u = up_of(r, id);
    *u = (struct up){payload, resp_len, 0, 4096, resp_trailers, false};
    return pump(r, id);
}

static void setup(struct pair *p, const vega_h2_opts *co, const vega_h2_opts *so)
{
    memset(ups, 0, sizeof ups);
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 131 + (i >> 8));
    pair_init(p, co, so);
    p->rs.hook_ud = p; /* marks the server's rec for up_of */
    p->rs.on_head = answer;
    p->rs.on_writable = on_writable;
    p->rc.on_writable = on_writable;
    resp_len = 5;
    resp_trailers = resp_info = false;
}

static int32_t request(struct pair *p, const char *method, size_t body, bool trailers)
{
    vega_hpack_field f[] = {{{":method", 7}, {method, strlen(method)}, VEGA_HPACK_INDEX_AUTO},
                            FLD(":scheme", "https"),
                            FLD(":authority", "example.com"),
                            FLD(":path", "/upload?x=1"),
                            FLD("user-agent", "vega-test")};
    int32_t id;
    bool end = body == 0 && !trailers;
    VCHECK_EQ(vega_h2_submit_request(p->cli, f, 5, end ? VEGA_H2_FLAG_END_STREAM : 0, NULL, &id),
              0);
    if (!end) {
        struct up *u = up_of(&p->rc, id);
        *u = (struct up){payload, body, 0, 10000, trailers, false};
        pump(&p->rc, id);
    }
    return id;
}

VTEST(s8_get_request_response)
{
    struct pair p;
    setup(&p, NULL, NULL);
    int32_t id = request(&p, "GET", 0, false);
    VCHECK_EQ(id, 1);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rs, "H1 req GET /upload?x=1 END"));
    VCHECK(rec_has(&p.rc, "H1 k2 s200 n1\n"));
    VCHECK(rec_has(&p.rc, "D1 END"));
    VCHECK(p.rc.body_len == 5 && memcmp(p.rc.body, payload, 5) == 0);
    VCHECK(rec_has(&p.rc, "C1 NO_ERROR how0") && rec_has(&p.rs, "C1 NO_ERROR how0"));
    /* Settings came through both ways and were acknowledged. */
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(p.cli, &ci);
    VCHECK(ci.local_settings_acked && ci.peer.max_concurrent_streams == 100);
    VCHECK_EQ(ci.peer.no_rfc7540_priorities, 1);
    VCHECK_EQ(ci.streams_open, 0);
    vega_h2_conn_get_info(p.srv, &ci);
    VCHECK(ci.local_settings_acked && ci.peer.enable_push == 0);
    pair_fini(&p);
}

/* API rules, ABI: vega_h2_conn_info and vega_h2_stream_info are versioned as options are. A
 * layout this library does not know is refused and the struct left as it was; the current one
 * is filled to its end and not past it. */
VTEST(info_layouts)
{
    struct pair p;
    setup(&p, NULL, NULL);
    int32_t id = request(&p, "GET", 0, false);
    struct {
        vega_h2_stream_info si;
        unsigned char canary[64];
    } b;
    memset(&b, 0xa5, sizeof b);
    VCHECK_EQ(vega_h2_stream_get_info_versioned(p.cli, id, &b.si, VEGA_H2_STREAM_INFO_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_h2_stream_get_info_versioned(p.cli, id, &b.si, 0), -EINVAL);
    VCHECK_EQ(vega_h2_stream_get_info_versioned(NULL, id, &b.si, 1), -EINVAL);
    VCHECK_EQ(vega_h2_stream_get_info_versioned(p.cli, id, NULL, 1), -EINVAL);
    VCHECK_EQ(vega_h2_stream_get_info(p.cli, id + 2, &b.si), VEGA_ERR_H2_STREAM_CLOSED);
    for (size_t i = 0; i < sizeof b; i++)
        VCHECK_EQ(((unsigned char *)&b)[i], 0xa5);
    VCHECK_EQ(vega_h2_stream_get_info(p.cli, id, &b.si), 0);
    /* submitted, nothing written or read yet: open, or half closed once END_STREAM went */
    VCHECK(b.si.state == VEGA_H2_STATE_OPEN || b.si.state == VEGA_H2_STATE_HALF_CLOSED_LOCAL);
    VCHECK_EQ(b.si.pending, 0);
    for (size_t i = 0; i < sizeof b.canary; i++)
        VCHECK_EQ(b.canary[i], 0xa5);
    VCHECK_EQ(pair_run(&p), 0);
    struct {
        vega_h2_conn_info ci;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(vega_h2_conn_get_info_versioned(p.cli, &a.ci, VEGA_H2_CONN_INFO_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_h2_conn_get_info_versioned(p.cli, &a.ci, 0), -EINVAL);
    VCHECK_EQ(vega_h2_conn_get_info_versioned(NULL, &a.ci, 1), -EINVAL);
    VCHECK_EQ(vega_h2_conn_get_info_versioned(p.cli, NULL, 1), -EINVAL);
    for (size_t i = 0; i < sizeof a; i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_h2_conn_get_info(p.cli, &a.ci), 0);
    VCHECK(a.ci.local_settings_acked);
    VCHECK_EQ(a.ci.streams_open, 0);
    VCHECK(a.ci.bytes_in > 0 && a.ci.bytes_out > 0);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    pair_fini(&p);
}

VTEST(s8_post_body_both_ways)
{
    struct pair p;
    setup(&p, NULL, NULL);
    resp_len = 300000;
    request(&p, "POST", 500000, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.rs.data_bytes, 500000);
    VCHECK(memcmp(p.rs.body, payload, REC_BODY) == 0);
    VCHECK_EQ(p.rc.data_bytes, 300000);
    VCHECK(memcmp(p.rc.body, payload, REC_BODY) == 0);
    VCHECK(rec_has(&p.rs, "D1 END") && rec_has(&p.rc, "D1 END"));
    VCHECK_EQ(p.rc.closes, 1);
    VCHECK_EQ(p.rs.closes, 1);
    pair_fini(&p);
}

/* 100 streams at once (the server's default limit), each with a body both ways. */
VTEST(s5_1_2_hundred_concurrent_streams)
{
    struct pair p;
    setup(&p, NULL, NULL);
    VCHECK_EQ(pair_run(&p), 0); /* settings first: the limit is known */
    resp_len = 3000;
    for (int i = 0; i < 100; i++)
        request(&p, "PUT", 2000, false);
    /* The 101st waits for the peer's limit. */
    int32_t id;
    VCHECK_EQ(vega_h2_submit_request(p.cli, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id),
              VEGA_ERR_H2_STREAM_LIMIT);
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(p.cli, &ci);
    VCHECK_EQ(ci.streams_open, 100);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.rs.data_bytes, 200000);
    VCHECK_EQ(p.rc.data_bytes, 300000);
    VCHECK_EQ(p.rc.closes, 100);
    VCHECK_EQ(p.rs.closes, 100);
    VCHECK_EQ(vega_h2_submit_request(p.cli, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id), 0);
    VCHECK_EQ(id, 201);
    pair_fini(&p);
}

/* Windows of 100 bytes both ways: bodies still arrive whole, a WINDOW_UPDATE at a time. */
VTEST(s6_9_tiny_windows)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.initial_window_size = 100;
    o.conn_window = 65535;
    o.stream_window_max = 100;
    o.conn_window_max = 65535;
    struct pair p;
    setup(&p, &o, &o);
    resp_len = 50000;
    request(&p, "POST", 40000, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.rs.data_bytes, 40000);
    VCHECK_EQ(p.rc.data_bytes, 50000);
    VCHECK(memcmp(p.rc.body, payload, 50000) == 0);
    VCHECK(rec_has(&p.rc, "D1 END"));
    pair_fini(&p);
}

/* Without consumption the windows close: the sender stalls, and says since when. */
VTEST(s6_9_stall_until_consumed)
{
    struct pair p;
    setup(&p, NULL, NULL);
    p.rc.consume = false;
    resp_len = 1u << 20;
    p.now = 1000;
    int32_t id = request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    /* The stream window (256 KiB) limits the response. */
    VCHECK_EQ(p.rc.data_bytes, 256u << 10);
    vega_h2_stream_info si;
    VCHECK_EQ(vega_h2_stream_get_info(p.srv, id, &si), 0);
    VCHECK_EQ(si.send_window, 0);
    VCHECK_EQ(si.send_stalled_since, 1000);
    VCHECK(si.pending > 0);
    VCHECK_EQ(vega_h2_stream_get_info(p.cli, id, &si), 0);
    VCHECK_EQ(si.unconsumed, 256u << 10);
    /* Consuming reopens it. */
    VCHECK_EQ(vega_h2_stream_consume(p.cli, id, (256u << 10) + 1), -EINVAL);
    p.rc.consume = true;
    VCHECK_EQ(vega_h2_stream_consume(p.cli, id, 256u << 10), 0);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.rc.data_bytes, 1u << 20);
    VCHECK(rec_has(&p.rc, "D1 END"));
    pair_fini(&p);
}

/* Windows double when drained fast (within 4 RTTs), up to their caps. */
VTEST(s6_9_windows_auto_tune)
{
    struct pair p;
    setup(&p, NULL, NULL);
    /* The SETTINGS ACK comes back after 2 ms. */
    static uint8_t buf[4096];
    vega_ssize n = vega_h2_conn_write(p.cli, buf, sizeof buf, 1);
    VCHECK_EQ(vega_h2_conn_read(p.srv, buf, (size_t)n, 1), 0);
    n = vega_h2_conn_write(p.srv, buf, sizeof buf, 1);
    p.now = 1 + 2 * VEGA_NS_PER_MS;
    VCHECK_EQ(vega_h2_conn_read(p.cli, buf, (size_t)n, p.now), 0);
    VCHECK_EQ(pair_run(&p), 0);
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(p.cli, &ci);
    VCHECK(ci.rtt_ns > 0);
    uint32_t before = ci.recv_window_target;
    resp_len = 8u << 20;
    request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.rc.data_bytes, 8u << 20);
    vega_h2_conn_get_info(p.cli, &ci);
    VCHECK(ci.recv_window_target > before);
    VCHECK(ci.recv_window_target <= 16u << 20);
    pair_fini(&p);
}

VTEST(s8_1_trailers_both_ways)
{
    struct pair p;
    setup(&p, NULL, NULL);
    resp_len = 70000;
    resp_trailers = true;
    request(&p, "POST", 30000, true);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rs, "H1 k4 s0 n2 END"));
    VCHECK(rec_has(&p.rc, "H1 k4 s0 n2 END"));
    VCHECK_EQ(p.rs.data_bytes, 30000);
    VCHECK_EQ(p.rc.data_bytes, 70000);
    VCHECK(rec_has(&p.rc, "C1 NO_ERROR how0"));
    pair_fini(&p);
}

VTEST(s8_1_informational_then_final)
{
    struct pair p;
    setup(&p, NULL, NULL);
    resp_info = true;
    request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    const char *i = strstr(p.rc.log, "H1 k3 s103 n1\n"), *f = strstr(p.rc.log, "H1 k2 s200");
    VCHECK(i && f && i < f);
    pair_fini(&p);
}

/* A HEAD response carries no body even with a content-length. */
VTEST(s8_1_1_head_response)
{
    struct pair p;
    setup(&p, NULL, NULL);
    resp_len = 0;
    vega_hpack_field f[] = {FLD(":method", "HEAD"), FLD(":scheme", "https"),
                            FLD(":authority", "example.com"), FLD(":path", "/")};
    VCHECK_EQ(vega_h2_submit_request(p.cli, f, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL), 0);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rc, "H1 k2 s200 n1 END"));
    pair_fini(&p);
}

/* A client reset: the server sees it, the stream ends on both sides. */
VTEST(s6_4_client_reset)
{
    struct pair p;
    setup(&p, NULL, NULL);
    p.rs.on_head = NULL; /* no answer */
    int32_t id = request(&p, "POST", 100000, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(vega_h2_submit_rst_stream(p.cli, id, VEGA_H2_CANCEL), 0);
    VCHECK(rec_has(&p.rc, "C1 CANCEL how2"));
    VCHECK_EQ(vega_h2_submit_rst_stream(p.cli, id, VEGA_H2_CANCEL), VEGA_ERR_H2_STREAM_CLOSED);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rs, "C1 CANCEL how1"));
    /* A stream whose HEADERS never left is dropped without a frame. */
    int32_t id2;
    VCHECK_EQ(vega_h2_submit_request(p.cli, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, &id2), 0);
    VCHECK_EQ(vega_h2_submit_rst_stream(p.cli, id2, VEGA_H2_CANCEL), 0);
    uint64_t before = p.moved;
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(p.moved, before);
    pair_fini(&p);
}

/* §6.8: the graceful shutdown: GOAWAY 2^31-1, a PING round trip, the final GOAWAY with the
 * last stream taken; the stream in flight completes, no new one starts. */
VTEST(s6_8_graceful_goaway)
{
    struct pair p;
    setup(&p, NULL, NULL);
    p.rs.on_head = NULL;
    request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(vega_h2_conn_shutdown(p.srv, p.now), 0);
    VCHECK(vega_h2_conn_get_expiry(p.srv) != VEGA_TSTAMP_MAX);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rc, "G 2147483647 NO_ERROR"));
    VCHECK(rec_has(&p.rc, "G 1 NO_ERROR"));
    VCHECK_EQ(vega_h2_conn_get_expiry(p.srv), VEGA_TSTAMP_MAX);
    VCHECK_EQ(vega_h2_submit_request(p.cli, get_root, 4, VEGA_H2_FLAG_END_STREAM, NULL, NULL),
              VEGA_ERR_H2_GOING_AWAY);
    VCHECK(vega_h2_conn_want_read(p.srv)); /* stream 1 is still open */
    vega_hpack_field f[] = {FLD(":status", "204")};
    VCHECK_EQ(vega_h2_submit_response(p.srv, 1, f, 1, VEGA_H2_FLAG_END_STREAM), 0);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rc, "H1 k2 s204 n0 END"));
    VCHECK(!vega_h2_conn_want_read(p.srv) && !vega_h2_conn_want_write(p.srv));
    VCHECK(!vega_h2_conn_want_read(p.cli));
    vega_h2_error e;
    VCHECK(!vega_h2_conn_get_error(p.cli, &e));
    pair_fini(&p);
}

/* The final GOAWAY refuses what it excludes: a request sent after the GOAWAY's last id is
 * closed REFUSED on the client, safe to retry. */
VTEST(s6_8_goaway_refuses_later_streams)
{
    struct pair p;
    setup(&p, NULL, NULL);
    p.rs.on_head = NULL;
    request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    int32_t id2 = request(&p, "GET", 0, false); /* in flight when the GOAWAY goes */
    VCHECK_EQ(vega_h2_submit_goaway(p.srv, VEGA_H2_NO_ERROR, (const uint8_t *)"bye", 3), 0);
    /* The server writes its GOAWAY before reading the second request. */
    uint8_t buf[4096];
    vega_ssize n = vega_h2_conn_write(p.srv, buf, sizeof buf, 0);
    VCHECK(n > 0);
    VCHECK_EQ(vega_h2_conn_read(p.cli, buf, (size_t)n, 0), 0);
    VCHECK(rec_has(&p.rc, "G 1 NO_ERROR bye"));
    char want[64];
    snprintf(want, sizeof want, "C%d REFUSED_STREAM how3", id2);
    VCHECK(rec_has(&p.rc, want));
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(!rec_has(&p.rs, "H3 req")); /* ignored by the server */
    pair_fini(&p);
}

/* Extended CONNECT (RFC 8441): allowed once the server enables it. */
VTEST(rfc8441_extended_connect)
{
    vega_h2_opts so;
    vega_h2_opts_init(&so);
    so.enable_connect_protocol = true;
    struct pair p;
    setup(&p, NULL, &so);
    vega_hpack_field f[] = {FLD(":method", "CONNECT"), FLD(":protocol", "websocket"),
                            FLD(":scheme", "https"), FLD(":authority", "example.com"),
                            FLD(":path", "/chat")};
    VCHECK_EQ(vega_h2_submit_request(p.cli, f, 5, 0, NULL, NULL), -EAGAIN);
    VCHECK_EQ(pair_run(&p), 0);
    int32_t id;
    VCHECK_EQ(vega_h2_submit_request(p.cli, f, 5, 0, NULL, &id), 0);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rs, "H1 req CONNECT /chat\n"));
    pair_fini(&p);

    setup(&p, NULL, NULL);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK_EQ(vega_h2_submit_request(p.cli, f, 5, 0, NULL, NULL), -EOPNOTSUPP);
    pair_fini(&p);
}

/* A PING round trip, and its RTT. */
VTEST(s6_7_ping)
{
    struct pair p;
    setup(&p, NULL, NULL);
    VCHECK_EQ(pair_run(&p), 0);
    p.now = 100;
    VCHECK_EQ(vega_h2_submit_ping(p.cli, 0x1122334455667788ull), 0);
    vega_ssize n;
    uint8_t buf[256];
    n = vega_h2_conn_write(p.cli, buf, sizeof buf, p.now);
    VCHECK_EQ(vega_h2_conn_read(p.srv, buf, (size_t)n, p.now), 0);
    p.now = 100 + 5 * VEGA_NS_PER_MS;
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rc, "P 1122334455667788"));
    vega_h2_conn_info ci;
    vega_h2_conn_get_info(p.cli, &ci);
    VCHECK(ci.rtt_ns > 0);
    pair_fini(&p);
}

/* The events of one stream, in order (streams interleave differently with the pieces). */
static void stream_events(const char *log, int id, char *out, size_t cap)
{
    char tag[3][16];
    snprintf(tag[0], sizeof tag[0], "H%d ", id);
    snprintf(tag[1], sizeof tag[1], "D%d ", id);
    snprintf(tag[2], sizeof tag[2], "C%d ", id);
    size_t n = 0;
    out[0] = 0;
    for (const char *l = log; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
        for (int t = 0; t < 3; t++)
            if (strncmp(l, tag[t], strlen(tag[t])) == 0 && n + len < cap) {
                memcpy(out + n, l, len);
                n += len;
                out[n] = 0;
            }
        l += len;
    }
}

/* Whole conversations moved one byte at a time, and in odd pieces: each stream sees the same
 * events in the same order. */
VTEST(byte_by_byte)
{
    size_t chunks[] = {1, 7, 9, 10, 4095, 16393};
    static char first[2][4096], got[4096];
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        struct pair p;
        setup(&p, NULL, NULL);
        p.chunk = chunks[i];
        resp_len = 20000;
        resp_trailers = true;
        resp_info = true;
        request(&p, "POST", 17000, true);
        request(&p, "GET", 0, false);
        VCHECK_EQ(pair_run(&p), 0);
        VCHECK_EQ(p.rs.data_bytes, 17000);
        VCHECK_EQ(p.rc.data_bytes, 40000);
        VCHECK_EQ(p.rc.closes, 2);
        for (int s = 0; s < 2; s++) {
            stream_events(p.rc.log, 1 + 2 * s, got, sizeof got);
            if (i == 0)
                memcpy(first[s], got, sizeof got);
            else
                VCHECK_STR(got, first[s]);
        }
        VCHECK(strlen(first[0]) > 20);
        pair_fini(&p);
    }
}

/* SETTINGS not acknowledged in time: SETTINGS_TIMEOUT. */
VTEST(s6_5_3_settings_timeout)
{
    vega_h2_conn *c;
    struct rec r = {0};
    VCHECK_EQ(vega_h2_conn_client_new(&c, &rec_cbs, NULL, &r), 0);
    uint8_t buf[256];
    VCHECK(vega_h2_conn_write(c, buf, sizeof buf, 1000) > 0);
    VCHECK_EQ(vega_h2_conn_get_expiry(c), 1000 + 10 * VEGA_NS_PER_S);
    VCHECK_EQ(vega_h2_conn_handle_expiry(c, 1000 + 10 * VEGA_NS_PER_S - 1), 0);
    VCHECK_EQ(vega_h2_conn_handle_expiry(c, 1000 + 10 * VEGA_NS_PER_S), VEGA_ERR_PROTO);
    vega_h2_error e;
    VCHECK(vega_h2_conn_get_error(c, &e) && e.code == VEGA_H2_SETTINGS_TIMEOUT);
    vega_ssize n = vega_h2_conn_write(c, buf, sizeof buf, 0);
    VCHECK_EQ(n, 17);
    VCHECK_EQ(buf[3], 7);
    VCHECK_EQ(buf[16], VEGA_H2_SETTINGS_TIMEOUT);
    VCHECK_EQ(vega_h2_conn_handle_expiry(c, 0), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_h2_conn_read(c, buf, 1, 0), VEGA_ERR_CLOSED);
    vega_h2_conn_free(c);
}

/* The client's whole side of a conversation, fed to a server split at every point: the same
 * events every time (the server's answers are not written back, so only reading differs). */
VTEST(split_at_every_point)
{
    struct pair p;
    setup(&p, NULL, NULL);
    p.rs.on_head = NULL;
    request(&p, "POST", 3000, true);
    request(&p, "GET", 0, false);
    static uint8_t all[65536];
    size_t n = 0;
    for (;;) {
        vega_ssize k = vega_h2_conn_write(p.cli, all + n, sizeof all - n, 0);
        VCHECK(k >= 0);
        if (k == 0)
            break;
        n += (size_t)k;
    }
    pair_fini(&p);
    VCHECK(n > 3000);
    static char want[65536];
    for (size_t cut = 0; cut <= n; cut++) {
        vega_h2_conn *s;
        struct rec r = {0};
        VCHECK_EQ(vega_h2_conn_server_new(&s, &rec_cbs, NULL, &r), 0);
        r.conn = s;
        r.consume = true;
        VCHECK_EQ(vega_h2_conn_read(s, all, cut, 0), 0);
        VCHECK_EQ(vega_h2_conn_read(s, all + cut, n - cut, 0), 0);
        if (cut == 0) {
            memcpy(want, r.log, r.len + 1);
            VCHECK(strstr(want, "H1 req POST") && strstr(want, "H1 k4 s0 n2 END") &&
                   strstr(want, "H3 req GET"));
        } else {
            VCHECK_STR(r.log, want);
        }
        VCHECK_EQ(r.data_bytes, 3000);
        vega_h2_conn_free(s);
    }
}

/* vega_h2_conn_shrink: an idle connection gives back its frame buffers (the header block's,
 * the decoded fields', the output queue's) and keeps working: the next requests are read and
 * answered exactly as before, and shrinking in the middle of a header block keeps the block. */
VTEST(shrink_idle_buffers)
{
    static struct tmem m;
    tmem_init(&m);
    vega_h2_opts so;
    vega_h2_opts_init(&so);
    so.mem = &m.mem;
    struct pair p;
    setup(&p, NULL, &so);
    request(&p, "GET", 0, false);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rc, "D1 END"));
    size_t before = m.live_bytes, blocks = m.live_blocks;
    vega_h2_conn_shrink(p.srv);
    VCHECK(m.live_bytes + 1024 < before);
    VCHECK(m.live_blocks < blocks);
    vega_h2_conn_shrink(p.srv); /* twice: nothing more to do */
    VCHECK(m.live_bytes + 1024 < before);
    for (int i = 0; i < 3; i++) {
        int32_t id = request(&p, "GET", 0, false);
        VCHECK_EQ(pair_run(&p), 0);
        char want[32];
        snprintf(want, sizeof want, "D%d END", id);
        VCHECK(rec_has(&p.rc, want));
        vega_h2_conn_shrink(p.srv);
    }
    pair_fini(&p);
    VCHECK_EQ(m.live_blocks, 0);

    /* A header block split over HEADERS and CONTINUATION, shrunk between the two. */
    struct raw r;
    tmem_init(&m);
    raw_init(&r, true, &so);
    uint8_t blk[256];
    size_t n = raw_block(&r, get_root, 4, blk, sizeof blk);
    raw_frame(&r, 1 /* HEADERS */, 1 /* END_STREAM */, 1, blk, n / 2);
    vega_h2_conn_shrink(r.c);
    raw_frame(&r, 9 /* CONTINUATION */, 4 /* END_HEADERS */, 1, blk + n / 2, n - n / 2);
    VCHECK_EQ(r.rc, 0);
    VCHECK(rec_has(&r.r, "H1 req GET / END"));
    raw_fini(&r);
    VCHECK_EQ(m.live_blocks, 0);
}
