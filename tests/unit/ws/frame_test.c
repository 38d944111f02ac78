/* SPDX-License-Identifier: MIT */
/* WebSocket core (lib/ws): RFC 6455 §5.7's examples, and one group of cases per category of the
 * Autobahn testsuite (1 framing, 2 pings, 3 reserved bits, 4 opcodes, 5 fragmentation, 6 UTF-8,
 * 7 close handling, 9 limits); compression (12, 13) is in deflate_test.c. Every forged input is
 * also fed one byte at a time. */
#include <string.h>

#include "vtest.h"
#include "wsrec.h"

static const uint8_t KEY[4] = {0x11, 0x22, 0x33, 0x44};

/* The close code of the first frame in out (a Close, masked when from a client). */
static unsigned close_code_of(const uint8_t *out, size_t n)
{
    VCHECK(n >= 2);
    VCHECK_EQ(out[0], 0x88);
    size_t at = out[1] & 0x80 ? 6 : 2;
    if ((out[1] & 0x7f) == 0)
        return 0;
    VCHECK(n >= at + 2);
    uint8_t a = out[at], b = out[at + 1];
    if (out[1] & 0x80) {
        a ^= out[2];
        b ^= out[3];
    }
    return (unsigned)a << 8 | b;
}

/* Feeds in to a fresh connection of role, byte by byte then whole, expecting rc both ways and
 * the failure's close code (0: none), which must also be the code of the Close queued. The
 * whole-feed recorder is left in r (initialised by the caller). */
static void feed(vega_ws_role role, const uint8_t *in, size_t len, int want_rc, unsigned code,
                 struct wsrec *r)
{
    for (int bytewise = 1; bytewise >= 0; bytewise--) {
        wsrec_fini(r);
        wsrec_init(r);
        vega_ws_conn *c = wsrec_conn(role, r, NULL);
        int rc = 0;
        if (bytewise) {
            for (size_t i = 0; i < len && rc == 0; i++)
                rc = vega_ws_conn_read(c, in + i, 1);
        } else {
            rc = vega_ws_conn_read(c, in, len);
        }
        VCHECK_EQ(rc, want_rc);
        vega_ws_error e;
        vega_ws_conn_get_error(c, &e);
        VCHECK_EQ(e.code, code);
        if (code) {
            uint8_t out[512];
            vega_ssize n = vega_ws_conn_write(c, out, sizeof out);
            VCHECK_EQ(close_code_of(out, (size_t)n), code);
            VCHECK(vega_ws_conn_is_close_sent(c));
            /* Sticky: later input gets the same answer. */
            VCHECK_EQ(vega_ws_conn_read(c, (const uint8_t *)"\x81\x00", 2), want_rc);
            VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, "x", 1), VEGA_ERR_CLOSED);
        }
        vega_ws_conn_free(c);
    }
}

/* ---- RFC 6455 §5.7 examples ---------------------------------------------------------------- */

VTEST(rfc_examples_receive)
{
    struct wsrec r;
    wsrec_init(&r);
    static const uint8_t unmasked[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    feed(VEGA_WS_CLIENT, unmasked, sizeof unmasked, 0, 0, &r);
    VCHECK_EQ(r.nmsg, 1);
    VCHECK(r.last_type == VEGA_WS_TEXT && r.last_len == 5 && !memcmp(r.last, "Hello", 5));
    static const uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                     0x7f, 0x9f, 0x4d, 0x51, 0x58};
    feed(VEGA_WS_SERVER, masked, sizeof masked, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.last_len == 5 && !memcmp(r.last, "Hello", 5));
    static const uint8_t frag[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
    feed(VEGA_WS_CLIENT, frag, sizeof frag, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.last_len == 5 && !memcmp(r.last, "Hello", 5));
    static const uint8_t ping[] = {0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    feed(VEGA_WS_CLIENT, ping, sizeof ping, 0, 0, &r);
    VCHECK(r.nping == 1 && r.ctl_len == 5 && !memcmp(r.ctl, "Hello", 5));
    static const uint8_t pong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                   0x7f, 0x9f, 0x4d, 0x51, 0x58};
    feed(VEGA_WS_SERVER, pong, sizeof pong, 0, 0, &r);
    VCHECK(r.npong == 1 && r.ctl_len == 5 && !memcmp(r.ctl, "Hello", 5));
    /* 256 bytes (16-bit length) and 64 KiB (64-bit length) binary messages. */
    static uint8_t big[14 + 65536], body[65536];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7);
    size_t n = ws_frame(big, 0x82, NULL, body, 256);
    VCHECK(big[1] == 0x7e && big[2] == 0x01 && big[3] == 0x00);
    feed(VEGA_WS_CLIENT, big, n, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.last_type == VEGA_WS_BINARY && r.last_len == 256);
    VCHECK(!memcmp(r.last, body, 256));
    n = ws_frame(big, 0x82, NULL, body, 65536);
    VCHECK(big[1] == 0x7f && big[7] == 0x01 && big[8] == 0 && big[9] == 0);
    feed(VEGA_WS_CLIENT, big, n, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.last_len == 65536 && !memcmp(r.last, body, 65536));
    wsrec_fini(&r);
}

VTEST(rfc_examples_send)
{
    struct wsrec r;
    wsrec_init(&r);
    uint8_t out[64];
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "Hello", 5), 0);
    VCHECK_EQ(vega_ws_conn_write(s, out, sizeof out), 7);
    VCHECK(!memcmp(out, "\x81\x05Hello", 7));
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &r, NULL);
    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, "Hello", 5), 0);
    VCHECK_EQ(vega_ws_conn_get_pending(c), 11);
    VCHECK_EQ(vega_ws_conn_write(c, out, sizeof out), 11);
    VCHECK(!memcmp(out, "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
    VCHECK_EQ(vega_ws_submit_pong(c, "Hello", 5), 0);
    VCHECK_EQ(vega_ws_conn_write(c, out, sizeof out), 11);
    VCHECK(!memcmp(out, "\x8a\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
    VCHECK_EQ(vega_ws_conn_write(c, out, sizeof out), 0);
    vega_ws_conn_free(s);
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}

/* ---- 1: framing ---------------------------------------------------------------------------- */

VTEST(framing_pair_sizes)
{
    /* Both directions, payload lengths around the 7/16/64-bit boundaries, empty included,
     * text and binary, sent with small fragments. */
    static const size_t sizes[] = {0, 1, 125, 126, 127, 65535, 65536, 65537, 200000};
    struct wsrec rc, rs;
    wsrec_init(&rc);
    wsrec_init(&rs);
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    o.send_fragment_size = 70000;
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &rc, &o);
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &rs, &o);
    static uint8_t body[200000];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)('a' + i % 26);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        vega_ws_msg_type t = k % 2 ? VEGA_WS_BINARY : VEGA_WS_TEXT;
        VCHECK_EQ(vega_ws_submit_message(c, t, body, sizes[k]), 0);
        VCHECK_EQ(ws_pump(c, s), 0);
        VCHECK_EQ(rs.nmsg, (int)k + 1);
        VCHECK(rs.last_type == t && rs.last_len == sizes[k] && !memcmp(rs.last, body, sizes[k]));
        VCHECK_EQ(vega_ws_submit_message(s, t, body, sizes[k]), 0);
        VCHECK_EQ(ws_pump(s, c), 0);
        VCHECK(rc.last_type == t && rc.last_len == sizes[k] && !memcmp(rc.last, body, sizes[k]));
    }
    vega_ws_conn_free(c);
    vega_ws_conn_free(s);
    wsrec_fini(&rc);
    wsrec_fini(&rs);
}

VTEST(framing_masking)
{
    /* §5.1: a server refuses unmasked frames, a client masked ones. */
    struct wsrec r;
    wsrec_init(&r);
    uint8_t f[64];
    size_t n = ws_frame(f, 0x81, NULL, "hi", 2);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    VCHECK_EQ(r.nmsg, 0);
    n = ws_frame(f, 0x81, KEY, "hi", 2);
    feed(VEGA_WS_CLIENT, f, n, VEGA_ERR_PROTO, 1002, &r);
    feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.last_len == 2 && !memcmp(r.last, "hi", 2));
    /* §5.2: a 64-bit length with the top bit set. */
    static const uint8_t top[] = {0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 1};
    feed(VEGA_WS_CLIENT, top, sizeof top, VEGA_ERR_PROTO, 1002, &r);
    /* Each frame of a client gets a fresh key from the hook. */
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &r, NULL);
    uint8_t out[64];
    wsrec_mask[0] = 0x01;
    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_BINARY, "ab", 2), 0);
    VCHECK_EQ(vega_ws_conn_write(c, out, sizeof out), 8);
    VCHECK(out[2] == 0x01 && out[6] == ('a' ^ 0x01));
    wsrec_mask[0] = 0x37;
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}

/* ---- 2: pings ------------------------------------------------------------------------------ */

VTEST(pings)
{
    struct wsrec r;
    wsrec_init(&r);
    uint8_t f[256], p[126];
    memset(p, 0xfe, sizeof p);
    /* 125 bytes of binary payload: answered with an identical pong (§5.5.3). */
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    size_t n = ws_frame(f, 0x89, KEY, p, 125);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    uint8_t out[256];
    vega_ssize w = vega_ws_conn_write(s, out, sizeof out);
    VCHECK_EQ(w, 127);
    VCHECK(out[0] == 0x8a && out[1] == 125 && !memcmp(out + 2, p, 125));
    /* Ten pings, ten pongs; an unsolicited pong is no error. */
    for (int i = 0; i < 10; i++) {
        n = ws_frame(f, 0x89, KEY, &i, 1);
        VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    }
    n = ws_frame(f, 0x8a, KEY, "u", 1);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    VCHECK(r.nping == 11 && r.npong == 1);
    VCHECK_EQ(vega_ws_conn_get_pending(s), 30);
    vega_ws_conn_free(s);
    /* 126 bytes, or fragmented: protocol errors (§5.5). */
    n = ws_frame(f, 0x89, KEY, p, 126);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    VCHECK_EQ(r.nping, 0);
    n = ws_frame(f, 0x09, KEY, "a", 1);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    /* Our own: at most 125 bytes. */
    s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    VCHECK_EQ(vega_ws_submit_ping(s, p, 126), -EINVAL);
    VCHECK_EQ(vega_ws_submit_ping(s, p, 125), 0);
    vega_ws_conn_free(s);
    wsrec_fini(&r);
}

/* ---- 3: reserved bits, 4: opcodes ---------------------------------------------------------- */

VTEST(reserved_bits)
{
    struct wsrec r;
    wsrec_init(&r);
    static const uint8_t b0s[] = {0xc1, 0xa1, 0x91, 0xf1, 0xc9, 0xa2};
    for (size_t i = 0; i < sizeof b0s; i++) {
        uint8_t f[32];
        size_t n = ws_frame(f, b0s[i], KEY, "Hello", 5);
        feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
        VCHECK_EQ(r.nmsg + r.nping, 0);
    }
    wsrec_fini(&r);
}

VTEST(opcodes)
{
    struct wsrec r;
    wsrec_init(&r);
    static const uint8_t ops[] = {3, 4, 5, 6, 7, 11, 12, 13, 14, 15};
    for (size_t i = 0; i < sizeof ops; i++) {
        uint8_t f[32];
        size_t n = ws_frame(f, (uint8_t)(0x80 | ops[i]), KEY, "x", 1);
        feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
        /* After a valid message too: the message arrives, then the failure. */
        size_t m = ws_frame(f, 0x81, KEY, "ok", 2);
        m += ws_frame(f + m, (uint8_t)(0x80 | ops[i]), KEY, NULL, 0);
        feed(VEGA_WS_SERVER, f, m, VEGA_ERR_PROTO, 1002, &r);
        VCHECK_EQ(r.nmsg, 1);
    }
    wsrec_fini(&r);
}

/* ---- 5: fragmentation ---------------------------------------------------------------------- */

VTEST(fragmentation)
{
    struct wsrec r;
    wsrec_init(&r);
    uint8_t f[256];
    size_t n = 0;
    /* Text in three fragments with a ping and a pong between them (§5.4: control frames may
     * be injected in the middle of a fragmented message). */
    n += ws_frame(f + n, 0x01, KEY, "frag", 4);
    n += ws_frame(f + n, 0x89, KEY, "p", 1);
    n += ws_frame(f + n, 0x00, KEY, "", 0);
    n += ws_frame(f + n, 0x8a, KEY, "q", 1);
    n += ws_frame(f + n, 0x80, KEY, "ment", 4);
    feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
    VCHECK(r.nmsg == 1 && r.nping == 1 && r.npong == 1 && r.last_len == 8);
    VCHECK(!memcmp(r.last, "fragment", 8));
    /* A continuation without a message; a new message inside a fragmented one. */
    n = ws_frame(f, 0x80, KEY, "x", 1);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    n = ws_frame(f, 0x01, KEY, "a", 1);
    n += ws_frame(f + n, 0x81, KEY, "b", 1);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    n = ws_frame(f, 0x02, KEY, "a", 1);
    n += ws_frame(f + n, 0x02, KEY, "b", 1);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    VCHECK_EQ(r.nmsg, 0);
    /* Our side: fragments with a ping between them arrive as one message. */
    struct wsrec rs;
    wsrec_init(&rs);
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &r, NULL);
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &rs, NULL);
    VCHECK_EQ(vega_ws_submit_data(c, VEGA_WS_BINARY, "ab", 2, false), 0);
    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, "x", 1), -EINVAL);
    VCHECK_EQ(vega_ws_submit_ping(c, "p", 1), 0);
    VCHECK_EQ(vega_ws_submit_data(c, VEGA_WS_BINARY, "cd", 2, true), 0);
    VCHECK_EQ(ws_pump(c, s), 0);
    VCHECK(rs.nmsg == 1 && rs.nping == 1 && rs.last_len == 4 && !memcmp(rs.last, "abcd", 4));
    vega_ws_conn_free(c);
    vega_ws_conn_free(s);
    wsrec_fini(&rs);
    wsrec_fini(&r);
}

/* ---- 6: UTF-8 ------------------------------------------------------------------------------ */

VTEST(utf8_valid_split_everywhere)
{
    /* "κόσμε", U+0000, U+007F, U+0080, U+07FF, U+0800, U+FFFF, U+10000, U+10FFFF, U+D7FF,
     * U+E000: every split into two fragments is accepted. */
    static const char s[] = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"
                            "\x00\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"
                            "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80";
    size_t len = sizeof s - 1;
    struct wsrec r;
    wsrec_init(&r);
    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t f[128];
        size_t n = ws_frame(f, 0x01, KEY, s, cut);
        n += ws_frame(f + n, 0x80, KEY, s + cut, len - cut);
        feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
        VCHECK(r.nmsg == 1 && r.last_len == len && !memcmp(r.last, s, len));
    }
    wsrec_fini(&r);
}

VTEST(utf8_invalid_fail_fast)
{
    static const struct {
        const char *s;
        size_t len;
    } bad[] = {
        {"\x80", 1},             /* lone continuation */
        {"\xc0\x80", 2},         /* overlong NUL */
        {"\xc1\xbf", 2},         /* overlong */
        {"\xe0\x80\xaf", 3},     /* overlong '/' */
        {"\xed\xa0\x80", 3},     /* U+D800 surrogate */
        {"\xed\xbf\xbf", 3},     /* U+DFFF */
        {"\xf0\x8f\xbf\xbf", 4}, /* overlong U+FFFF */
        {"\xf4\x90\x80\x80", 4}, /* above U+10FFFF */
        {"\xf5\x80\x80\x80", 4},
        {"\xff", 1},
        {"\xce\xba\xe1\xbd", 4}, /* ends inside a character */
        {"a\xe2\x82", 3},
    };
    struct wsrec r;
    wsrec_init(&r);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t f[64];
        size_t n = ws_frame(f, 0x81, KEY, bad[i].s, bad[i].len);
        feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1007, &r);
        VCHECK_EQ(r.nmsg, 0);
        /* The same bytes as binary are fine. */
        n = ws_frame(f, 0x82, KEY, bad[i].s, bad[i].len);
        feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
        VCHECK_EQ(r.nmsg, 1);
    }
    /* Fail fast (Autobahn 6.4): the first fragment's bad byte fails the connection before the
     * rest of the message arrives, and nothing of it is handed out. */
    r.ndata = 0;
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    uint8_t f[64];
    size_t n = ws_frame(f, 0x01, KEY, "\xce\xba\xf4\x90", 4);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), VEGA_ERR_PROTO);
    VCHECK_EQ(r.ndata, 0);
    vega_ws_conn_free(s);
    /* Inside one frame's payload fed in pieces: fails at the piece holding the bad byte. */
    s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    n = ws_frame(f, 0x81, KEY,
                 "abcd\xff"
                 "efgh",
                 9);
    VCHECK_EQ(vega_ws_conn_read(s, f, n - 5), 0);
    VCHECK_EQ(vega_ws_conn_read(s, f + n - 5, 1), VEGA_ERR_PROTO);
    vega_ws_conn_free(s);
    wsrec_fini(&r);
}

/* ---- 7: close handling --------------------------------------------------------------------- */

VTEST(close_codes)
{
    static const unsigned good[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009,
                                    1010, 1011, 1012, 1013, 1014, 3000, 4999};
    static const unsigned bad[] = {0,    999,  1004, 1005, 1006, 1015,
                                   1016, 1100, 2000, 2999, 5000, 65535};
    struct wsrec r;
    wsrec_init(&r);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        uint8_t body[4] = {(uint8_t)(good[i] >> 8), (uint8_t)good[i], 'o', 'k'}, f[32];
        size_t n = ws_frame(f, 0x88, KEY, body, 4);
        feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
        VCHECK(r.nclose == 1 && r.close_code == good[i] && r.ctl_len == 2);
        vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
        VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
        /* §5.5.1: the reply echoes the code; then the connection is done. */
        uint8_t out[32];
        vega_ssize w = vega_ws_conn_write(s, out, sizeof out);
        VCHECK_EQ(close_code_of(out, (size_t)w), good[i]);
        unsigned pc = 0;
        VCHECK(vega_ws_conn_is_close_received(s, &pc) && pc == good[i]);
        VCHECK(vega_ws_conn_is_done(s));
        VCHECK_EQ(vega_ws_submit_close(s, 1000, NULL, 0), VEGA_ERR_CLOSED);
        vega_ws_conn_free(s);
        VCHECK(vega_ws_close_code_is_valid(good[i]));
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t body[2] = {(uint8_t)(bad[i] >> 8), (uint8_t)bad[i]}, f[32];
        size_t n = ws_frame(f, 0x88, KEY, body, 2);
        feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
        VCHECK_EQ(r.nclose, 0);
        VCHECK(!vega_ws_close_code_is_valid(bad[i]));
        vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
        VCHECK_EQ(vega_ws_submit_close(s, bad[i], NULL, 0), bad[i] ? -EINVAL : 0);
        vega_ws_conn_free(s);
    }
    wsrec_fini(&r);
}

/* on_close of owner_answers_close: every message before the Close has been handed over. */
static int close_after_two(void *ud, unsigned code, const uint8_t *p, size_t n)
{
    struct wsrec *r = ud;
    VCHECK_EQ(r->nmsg, 2);
    return wsrec_on_close(ud, code, p, n);
}

/* Messages and the Close in one read (§5.5.1, §7.1.2): with owner_answers_close the Close
 * comes after the messages, nothing is answered by the core, the owner's echoes of both go out
 * and its Close after them; without it (and for layout 1, which has no such field) the core
 * answers at once. */
VTEST(owner_answers_close)
{
    struct wsrec r, rc;
    wsrec_init(&r);
    wsrec_init(&rc);
    uint8_t f[256];
    size_t n = ws_frame(f, 0x81, KEY, "hello", 5);
    n += ws_frame(f + n, 0x82, KEY, "world", 5);
    n += ws_frame(f + n, 0x88, KEY, "\x03\xe8", 2);
    vega_ws_callbacks cb = wsrec_cb;
    cb.on_close = close_after_two;
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    o.role = VEGA_WS_SERVER;
    o.owner_answers_close = true;
    vega_ws_conn *s, *c = wsrec_conn(VEGA_WS_CLIENT, &rc, NULL);
    VCHECK_EQ(vega_ws_conn_new(&s, &cb, &o, &r), 0);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    unsigned code = 0;
    VCHECK(r.nmsg == 2 && r.nclose == 1 && r.close_code == 1000);
    VCHECK(vega_ws_conn_is_close_received(s, &code) && code == 1000);
    VCHECK(!vega_ws_conn_is_close_sent(s));
    VCHECK_EQ(vega_ws_conn_get_pending(s), 0);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "hello", 5), 0);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_BINARY, "world", 5), 0);
    VCHECK_EQ(vega_ws_submit_close(s, code, NULL, 0), 0);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "late", 4), VEGA_ERR_CLOSED);
    VCHECK_EQ(ws_pump(s, c), 0);
    VCHECK(vega_ws_conn_is_done(s));
    VCHECK(rc.nmsg == 2 && rc.last_type == VEGA_WS_BINARY && rc.last_len == 5);
    VCHECK(rc.nclose == 1 && rc.close_code == 1000);
    vega_ws_conn_free(s);
    /* Layout 1 does not read the field: the core answers as it reads the Close. */
    wsrec_fini(&r);
    wsrec_init(&r);
    VCHECK_EQ(vega_ws_conn_new_versioned(&s, &wsrec_cb, &o, &r, 1), 0);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    VCHECK(r.nmsg == 2 && r.nclose == 1 && vega_ws_conn_is_close_sent(s));
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "hello", 5), VEGA_ERR_CLOSED);
    vega_ws_conn_free(s);
    VCHECK_EQ(vega_ws_conn_new_versioned(&s, &wsrec_cb, &o, &r, VEGA_WS_CONN_OPTS_VERSION + 1),
              -EINVAL);
    vega_ws_conn_free(c);
    wsrec_fini(&rc);
    wsrec_fini(&r);
}

VTEST(close_handshake)
{
    struct wsrec r, rs;
    wsrec_init(&r);
    uint8_t f[256];
    /* Empty close: answered with an empty close; the peer's code reads 1005. */
    size_t n = ws_frame(f, 0x88, KEY, NULL, 0);
    feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
    VCHECK(r.nclose == 1 && r.close_code == 1005);
    /* A 1-byte body; a reason that is not UTF-8; 123 bytes of reason are fine, 124 are not. */
    n = ws_frame(f, 0x88, KEY, "\x03", 1);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    n = ws_frame(f, 0x88, KEY, "\x03\xe8\xff", 3);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1007, &r);
    uint8_t body[126];
    memset(body, 'r', sizeof body);
    body[0] = 0x03;
    body[1] = 0xe8;
    n = ws_frame(f, 0x88, KEY, body, 125);
    feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
    VCHECK(r.nclose == 1 && r.ctl_len == 123);
    n = ws_frame(f, 0x88, KEY, body, 126);
    feed(VEGA_WS_SERVER, f, n, VEGA_ERR_PROTO, 1002, &r);
    /* Frames after the close are ignored (§1.4: no more data after a Close). */
    n = ws_frame(f, 0x88, KEY, "\x03\xe8", 2);
    n += ws_frame(f + n, 0x81, KEY, "late", 4);
    n += ws_frame(f + n, 0x99, KEY, NULL, 0); /* garbage too */
    feed(VEGA_WS_SERVER, f, n, 0, 0, &r);
    VCHECK(r.nclose == 1 && r.nmsg == 0);
    /* Our close first: data still arrives until the peer's close; then done. */
    wsrec_fini(&r);
    wsrec_init(&r);
    wsrec_init(&rs);
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &r, NULL);
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &rs, NULL);
    VCHECK_EQ(vega_ws_submit_close(c, 4000, "bye", 3), 0);
    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, "x", 1), VEGA_ERR_CLOSED);
    VCHECK_EQ(vega_ws_submit_close(c, 1000, "\xff", 1), -EINVAL);
    VCHECK_EQ(vega_ws_submit_close(c, 0, "x", 1), -EINVAL);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "still", 5), 0);
    VCHECK(!vega_ws_conn_is_done(c));
    VCHECK_EQ(ws_pump(c, s), 0);
    VCHECK(rs.nclose == 1 && rs.close_code == 4000 && rs.ctl_len == 3);
    VCHECK(vega_ws_conn_is_done(s) == false); /* its data and reply are still queued */
    VCHECK_EQ(ws_pump(s, c), 0);
    VCHECK(vega_ws_conn_is_done(s));
    VCHECK(r.nmsg == 1 && r.nclose == 1 && r.close_code == 4000);
    VCHECK(vega_ws_conn_is_done(c));
    vega_ws_conn_free(c);
    vega_ws_conn_free(s);
    wsrec_fini(&rs);
    wsrec_fini(&r);
}

/* ---- 9: limits ----------------------------------------------------------------------------- */

VTEST(limits)
{
    struct wsrec r;
    wsrec_init(&r);
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    o.max_frame_size = 100;
    o.max_message_size = 150;
    static uint8_t f[1024], body[512];
    /* A frame over the limit fails on its header: no payload byte was needed. */
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    size_t n = ws_frame(f, 0x82, KEY, body, 101);
    VCHECK_EQ(vega_ws_conn_read(s, f, 6), VEGA_ERR_PROTO);
    vega_ws_error e;
    vega_ws_conn_get_error(s, &e);
    VCHECK_EQ(e.code, 1009);
    vega_ws_conn_free(s);
    /* At the limit: fine. A message over it in fragments under it: 1009 at the fragment
     * that passes it. */
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    n = ws_frame(f, 0x82, KEY, body, 100);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    n = ws_frame(f, 0x02, KEY, body, 100);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    n = ws_frame(f, 0x80, KEY, body, 51);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), VEGA_ERR_PROTO);
    vega_ws_conn_get_error(s, &e);
    VCHECK_EQ(e.code, 1009);
    VCHECK_EQ(r.nmsg, 1);
    vega_ws_conn_free(s);
    /* The send queue: past max_send_queue nothing is queued; control frames too. */
    o.max_send_queue = 300;
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_BINARY, body, 200), 0);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_BINARY, body, 200), VEGA_ERR_FULL);
    VCHECK_EQ(vega_ws_conn_get_pending(s), 204);
    VCHECK_EQ(vega_ws_submit_ping(s, body, 94), 0);
    VCHECK_EQ(vega_ws_submit_ping(s, body, 10), VEGA_ERR_FULL);
    /* A ping flood while we do not write: pongs dropped, memory bounded. */
    for (int i = 0; i < 1000; i++) {
        n = ws_frame(f, 0x89, KEY, body, 50);
        VCHECK_EQ(vega_ws_conn_read(s, f, n), 0);
    }
    VCHECK(vega_ws_conn_get_pending(s) <= 300);
    /* Close still goes out whatever the queue holds. */
    VCHECK_EQ(vega_ws_submit_close(s, 1000, NULL, 0), 0);
    vega_ws_conn_free(s);
    /* Fragmentation of what we send. */
    o.max_send_queue = 0;
    o.send_fragment_size = 10;
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "0123456789abcdefghij!", 21), 0);
    uint8_t out[64];
    VCHECK_EQ(vega_ws_conn_write(s, out, sizeof out), 27);
    VCHECK(out[0] == 0x01 && out[1] == 10 && out[12] == 0x00 && out[24] == 0x80 && out[25] == 1);
    vega_ws_conn_free(s);
    wsrec_fini(&r);
}

VTEST(options_and_callbacks)
{
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    vega_ws_conn *c = NULL;
    VCHECK_EQ(vega_ws_conn_new(&c, NULL, &o, NULL), -EINVAL); /* no role */
    o.role = VEGA_WS_CLIENT;
    VCHECK_EQ(vega_ws_conn_new(&c, NULL, &o, NULL), -EINVAL); /* a client without random */
    o.role = VEGA_WS_SERVER;
    o.deflate.enabled = true;
    o.deflate.server_max_window_bits = 16;
    VCHECK_EQ(vega_ws_conn_new(&c, NULL, &o, NULL), -EINVAL);
    o.deflate.server_max_window_bits = 7;
    VCHECK_EQ(vega_ws_conn_new(&c, NULL, &o, NULL), -EINVAL);
    VCHECK_EQ(vega_ws_conn_new_versioned(&c, NULL, &o, NULL, 99), -EINVAL);
    o.deflate.enabled = false;
    VCHECK_EQ(vega_ws_conn_new(&c, NULL, &o, NULL), 0);
    /* No callbacks: messages are consumed silently. */
    uint8_t f[32];
    size_t n = ws_frame(f, 0x81, KEY, "x", 1);
    VCHECK_EQ(vega_ws_conn_read(c, f, n), 0);
    VCHECK_EQ(vega_ws_conn_read(c, NULL, 1), -EINVAL);
    vega_ws_conn_free(c);
    /* A failing callback: VEGA_ERR_CALLBACK and close 1011. */
    struct wsrec r;
    wsrec_init(&r);
    r.fail_on_data = 1;
    c = wsrec_conn(VEGA_WS_SERVER, &r, NULL);
    VCHECK_EQ(vega_ws_conn_read(c, f, n), VEGA_ERR_CALLBACK);
    vega_ws_error e;
    vega_ws_conn_get_error(c, &e);
    VCHECK_EQ(e.code, 1011);
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}
