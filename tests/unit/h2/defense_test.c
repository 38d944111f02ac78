/* SPDX-License-Identifier: MIT */
/* The HTTP/2 core under attack (RFC 9113 §10.5): Rapid Reset (CVE-2023-44487), MadeYouReset,
 * CONTINUATION floods, HPACK bombs, SETTINGS / PING / empty DATA / PRIORITY / WINDOW_UPDATE
 * floods (CVE-2019-9511..9518), a peer that never reads, zero-window stalls, stream-count
 * abuse. Each test shows the work done (events, frames answered) and the memory the core holds
 * (a counting allocator) stay under a bound, and that the connection ends with the right code
 * where it must. */
#include "raw_frames.h"

static struct tmem mem;

/* A server with the counting allocator. */
static void srv(struct raw *r, vega_h2_opts *o)
{
    vega_h2_opts d;
    if (!o) {
        vega_h2_opts_init(&d);
        o = &d;
    }
    tmem_init(&mem);
    o->mem = &mem.mem;
    raw_init(r, true, o);
}

static void done(struct raw *r)
{
    raw_fini(r);
    VCHECK_EQ(mem.live_blocks, 0);
}

static void rst(struct raw *r, uint32_t sid)
{
    uint8_t p[4] = {0, 0, 0, VEGA_H2_CANCEL};
    raw_frame(r, RST, 0, sid, p, 4);
}

/* CVE-2023-44487: HEADERS then RST_STREAM, as fast as the peer can. The reset budget (1000 at
 * once, 33 a second) ends it with ENHANCE_YOUR_CALM; the application saw at most that many
 * requests and the core never held more than one stream. */
VTEST(rapid_reset)
{
    struct raw r;
    srv(&r, NULL);
    uint32_t sid = 1;
    for (; sid < 2 * 5000 && r.rc == 0; sid += 2) {
        raw_get(&r, sid, false);
        if (r.rc == 0)
            rst(&r, sid);
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(r.r.headers <= 1001);
    VCHECK(sid / 2 <= 1002);
    VCHECK(mem.peak_bytes < 64 * 1024);
    done(&r);
}

/* The same rate spread over time passes: 33 resets a second are fine forever. */
VTEST(rapid_reset_sustained_rate_allowed)
{
    struct raw r;
    srv(&r, NULL);
    for (uint32_t i = 0, sid = 1; i < 5000; i++, sid += 2) {
        r.now = (uint64_t)i * (VEGA_NS_PER_S / 33 + 1000);
        raw_get(&r, sid, false);
        rst(&r, sid);
        VCHECK_EQ(r.rc, 0);
    }
    raw_expect_ok(&r);
    VCHECK_EQ(r.r.headers, 5000);
    done(&r);
}

/* MadeYouReset (2025): streams the server resets because the client sent something invalid
 * on them count against the same budget -- here a WINDOW_UPDATE of 0 on each new stream. */
VTEST(made_you_reset)
{
    struct raw r;
    srv(&r, NULL);
    int resets = 0;
    for (uint32_t sid = 1; sid < 2 * 5000 && r.rc == 0; sid += 2) {
        raw_get(&r, sid, false);
        uint8_t p[4] = {0};
        if (r.rc == 0)
            raw_frame(&r, WINDOW, 0, sid, p, 4);
        resets++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(resets <= 1001);
    VCHECK(mem.peak_bytes < 64 * 1024);
    done(&r);

    /* DATA after END_STREAM, and malformed requests, the same way. */
    srv(&r, NULL);
    vega_hpack_field up[] = {FLD(":method", "GET"), FLD(":scheme", "https"), FLD(":path", "/"),
                             FLD(":authority", "a"), FLD("Bad", "1")};
    resets = 0;
    for (uint32_t sid = 1; sid < 2 * 5000 && r.rc == 0; sid += 2) {
        if (sid % 4 == 1) {
            raw_get(&r, sid, true);
            if (r.rc == 0)
                raw_frame(&r, DATA, 0, sid, "x", 1);
        } else {
            raw_headers(&r, sid, END_STREAM, up, 5);
        }
        resets++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(resets <= 1001);
    done(&r);
}

/* Streams past SETTINGS_MAX_CONCURRENT_STREAMS are refused, and refusals count too: a client
 * that keeps opening more than it may is cut off; the core never holds more than the limit. */
VTEST(stream_count_abuse)
{
    struct raw r;
    srv(&r, NULL);
    size_t peak_streams = 0;
    for (uint32_t sid = 1; sid < 2 * 3000 && r.rc == 0; sid += 2) {
        raw_get(&r, sid, false); /* never ended, never reset */
        vega_h2_conn_info ci;
        vega_h2_conn_get_info(r.c, &ci);
        peak_streams = VEGA__MAX(peak_streams, (size_t)ci.streams_open);
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK_EQ(peak_streams, 100);
    VCHECK(mem.peak_bytes < 100 * 1024);
    done(&r);
}

/* CONTINUATION flood (2024): a header block that never ends. Empty frames: cut off at
 * max_continuations; full ones: cut off at max_header_block_size -- with the memory held
 * never above that. */
VTEST(continuation_flood)
{
    struct raw r;
    srv(&r, NULL);
    raw_frame(&r, HEADERS, 0, 1, "\x82", 1);
    int n = 0;
    while (r.rc == 0 && n < 100000) {
        raw_frame(&r, CONT, 0, 1, NULL, 0);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 33);
    done(&r);

    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.max_continuations = 100000; /* only the size limit now */
    srv(&r, &o);
    static uint8_t chunk[16384];
    memset(chunk, 0x82, sizeof chunk);
    raw_frame(&r, HEADERS, 0, 1, chunk, sizeof chunk);
    n = 0;
    while (r.rc == 0 && n < 100000) {
        raw_frame(&r, CONT, 0, 1, chunk, sizeof chunk);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 5); /* 64 KiB + 4 KiB */
    VCHECK(mem.peak_bytes < 65536 + 4096 + 64 * 1024);
    done(&r);
}

/* HPACK bomb: one 4 KiB entry, then a block indexing it thousands of times -- 64 MB of headers.
 * The list limit stops it at 64 KiB: the request is answered 431, the table stays in step,
 * the connection goes on, and the memory held stays near the limit. */
VTEST(hpack_bomb)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.max_frame_size = 65536;
    struct raw r;
    srv(&r, &o);
    static char big[4000];
    memset(big, 'v', sizeof big);
    vega_hpack_field f[5] = {FLD(":method", "GET"),
                             FLD(":scheme", "https"),
                             FLD(":path", "/"),
                             FLD(":authority", "a"),
                             {{"x-big", 5}, {big, sizeof big}, VEGA_HPACK_INDEX_YES}};
    raw_headers(&r, 1, END_STREAM, f, 5);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H1 req"));
    static uint8_t blk[60000];
    size_t n = raw_block(&r, f, 4, blk, sizeof blk);
    memset(blk + n, 0xbe, sizeof blk - n); /* x-big is entry 62 */
    raw_frame(&r, HEADERS, END_STREAM | END_HEADERS, 3, blk, sizeof blk);
    VCHECK_EQ(r.rc, 0);
    struct rframe fr;
    VCHECK(raw_find(&r, HEADERS, 3, &fr) && (fr.flags & END_STREAM));
    vega_hpack_field got[4];
    struct {
        vega_hpack_field *f;
        size_t n;
    } st = {got, 0};
    (void)st;
    /* The 431: a literal ":status: 431" (index 8's name). */
    VCHECK(fr.len >= 4 && fr.p[0] == 0x08 && fr.p[1] == 3 && memcmp(fr.p + 2, "431", 3) == 0);
    VCHECK(!rec_has(&r.r, "H3 req"));
    VCHECK(mem.peak_bytes < 60000 + 2 * 65536 + 32 * 1024);
    /* The table stayed in step: a request indexing it works. */
    raw_headers(&r, 5, END_STREAM, f, 5);
    raw_expect_ok(&r);
    VCHECK(rec_has(&r.r, "H5 req"));
    done(&r);
}

/* A field count past max_fields is the same: 431, connection alive. */
VTEST(too_many_fields)
{
    struct raw r;
    srv(&r, NULL);
    vega_hpack_field f[300];
    memcpy(f, get_root, sizeof get_root);
    for (int i = 4; i < 300; i++)
        f[i] = (vega_hpack_field)FLD("x-a", "1");
    raw_headers(&r, 1, END_STREAM, f, 300);
    VCHECK_EQ(r.rc, 0);
    struct rframe fr;
    VCHECK(raw_find(&r, HEADERS, 1, &fr));
    VCHECK(!rec_has(&r.r, "H1 req"));
    raw_get(&r, 3, true);
    raw_expect_ok(&r);
    done(&r);
}

/* CVE-2019-9515 / 9512: SETTINGS and PING floods are cut off by the glitch budget. */
VTEST(settings_and_ping_floods)
{
    struct raw r;
    srv(&r, NULL);
    int n = 0;
    while (r.rc == 0 && n < 10000) {
        raw_frame(&r, SETTINGS, 0, 0, NULL, 0);
        raw_drain(&r); /* even a peer that reads its ACKs */
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 1001);
    done(&r);

    srv(&r, NULL);
    uint8_t p[8] = {0};
    n = 0;
    while (r.rc == 0 && n < 10000) {
        raw_frame(&r, PING, 0, 0, p, 8);
        raw_drain(&r);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 1001);
    done(&r);
}

/* A peer that sends PINGs and never reads: the answers queued are bounded
 * (max_queued_control), so the memory is too. */
VTEST(peer_that_never_reads)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.glitch_burst = 100000; /* only the queue bound now */
    struct raw r;
    srv(&r, &o);
    uint8_t p[8] = {0};
    int n = 0;
    while (r.rc == 0 && n < 100000) {
        raw_frame(&r, PING, 0, 0, p, 8);
        n++;
    }
    VCHECK_EQ(r.rc, VEGA_ERR_PROTO);
    VCHECK(n <= 1001);
    VCHECK(mem.peak_bytes < 1000 * 17 * 2 + 32 * 1024);
    vega_h2_error e;
    VCHECK(vega_h2_conn_get_error(r.c, &e) && e.code == VEGA_H2_ENHANCE_YOUR_CALM);
    done(&r);

    /* The same with resets it must send (DATA on closed streams). */
    srv(&r, &o);
    n = 0;
    vega_h2_opts_init(&o);
    while (r.rc == 0 && n < 100000) {
        raw_get(&r, (uint32_t)(2 * n + 1), true);
        raw_frame(&r, DATA, 0, (uint32_t)(2 * n + 1), "x", 1);
        n++;
    }
    VCHECK_EQ(r.rc, VEGA_ERR_PROTO);
    VCHECK(n <= 1001);
    done(&r);
}

/* CVE-2019-9518: empty DATA frames, and PRIORITY frames (CVE-2019-9513's cousin: no tree is
 * kept, but each is parsed). */
VTEST(empty_data_and_priority_floods)
{
    struct raw r;
    srv(&r, NULL);
    raw_get(&r, 1, false);
    int n = 0;
    while (r.rc == 0 && n < 10000) {
        raw_frame(&r, DATA, 0, 1, NULL, 0);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 1001);
    done(&r);

    srv(&r, NULL);
    uint8_t p[5] = {0, 0, 0, 0, 15};
    n = 0;
    while (r.rc == 0 && n < 10000) {
        raw_frame(&r, PRIORITY, 0, (uint32_t)(2 * n + 1), p, 5);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 1001);
    done(&r);
}

/* WINDOW_UPDATE floods cost O(1) each and make nothing: no answer, no memory. */
VTEST(window_update_flood)
{
    struct raw r;
    srv(&r, NULL);
    raw_get(&r, 1, false);
    size_t base = mem.live_bytes;
    uint8_t p[4] = {0, 0, 0, 1};
    for (int i = 0; i < 20000; i++) {
        raw_frame(&r, WINDOW, 0, 0, p, 4);
        raw_frame(&r, WINDOW, 0, 1, p, 4);
    }
    VCHECK_EQ(r.rc, 0);
    VCHECK(!vega_h2_conn_want_write(r.c));
    VCHECK_EQ(mem.live_bytes, base);
    done(&r);
}

/* A zero-window stall (slow read): the server's DATA waits, nothing spins, the memory does not
 * grow, and the stall's start is there for the driver to time it out. */
VTEST(zero_window_stall)
{
    struct raw r;
    srv(&r, NULL);
    r.now = 5 * VEGA_NS_PER_S;
    raw_get(&r, 1, true);
    static uint8_t body[1 << 20];
    vega_hpack_field f[] = {FLD(":status", "200")};
    VCHECK_EQ(vega_h2_submit_response(r.c, 1, f, 1, 0), 0);
    VCHECK_EQ(vega_h2_stream_write(r.c, 1, body, sizeof body, VEGA_H2_FLAG_END_STREAM),
              (vega_ssize)sizeof body);
    raw_drain(&r);
    size_t held = mem.live_bytes;
    for (int i = 0; i < 1000; i++) {
        r.now += VEGA_NS_PER_S;
        VCHECK_EQ(vega_h2_conn_write(r.c, r.out, sizeof r.out, r.now), 0);
        VCHECK(!vega_h2_conn_want_write(r.c));
    }
    vega_h2_stream_info si;
    VCHECK_EQ(vega_h2_stream_get_info(r.c, 1, &si), 0);
    VCHECK_EQ(si.send_stalled_since, 5 * VEGA_NS_PER_S);
    VCHECK_EQ(si.pending, sizeof body - 65535);
    VCHECK_EQ(mem.live_bytes, held);
    /* The driver gives up on it. */
    VCHECK_EQ(vega_h2_submit_rst_stream(r.c, 1, VEGA_H2_CANCEL), 0);
    VCHECK(rec_has(&r.r, "C1 CANCEL how2"));
    done(&r);
}

/* Unknown frame types and SETTINGS ACKs nobody asked for cost little; the latter count. */
VTEST(unexpected_acks)
{
    struct raw r;
    srv(&r, NULL);
    int n = 0;
    while (r.rc == 0 && n < 5000) {
        raw_frame(&r, SETTINGS, ACK, 0, NULL, 0);
        n++;
    }
    raw_expect_goaway(&r, VEGA_H2_ENHANCE_YOUR_CALM);
    VCHECK(n <= 1001);
    done(&r);
}
