/* SPDX-License-Identifier: MIT */
/* permessage-deflate in the WebSocket core (RFC 7692): the §7.2.3 examples byte for byte, both
 * roles with every parameter (Autobahn categories 12 and 13), a zip bomb refused with 1009, bad
 * compressed data with 1007. */
#include <string.h>

#include "vtest.h"
#include "wsrec.h"

static vega_ws_conn *pmd_conn(vega_ws_role role, struct wsrec *r, vega_ws_deflate_params p)
{
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    p.enabled = true;
    o.deflate = p;
    return wsrec_conn(role, r, &o);
}

static const vega_ws_deflate_params TAKEOVER = {.enabled = true};

VTEST(rfc7692_examples_receive)
{
    /* §7.2.3.1-5, as a client receives them (server frames are unmasked). */
    static const struct {
        const char *name;
        uint8_t in[32];
        size_t len;
        int msgs;
    } ex[] = {
        {"7.2.3.1 one compressed block",
         {0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00},
         9,
         1},
        {"7.2.3.1 fragmented",
         {0x41, 0x03, 0xf2, 0x48, 0xcd, 0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00},
         11,
         1},
        {"7.2.3.2 shared LZ77 window",
         {0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00,
          0x00},
         16,
         2},
        {"7.2.3.3 no compression",
         {0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00},
         13,
         1},
        {"7.2.3.4 BFINAL set", {0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00}, 10, 1},
        {"7.2.3.5 two blocks",
         {0xc1, 0x0d, 0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00},
         15,
         1},
    };
    struct wsrec r;
    wsrec_init(&r);
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            r.nmsg = 0;
            vega_ws_conn *c = pmd_conn(VEGA_WS_CLIENT, &r, TAKEOVER);
            int rc = 0;
            for (size_t k = 0; k < ex[i].len && rc == 0; k += bytewise ? 1 : ex[i].len)
                rc = vega_ws_conn_read(c, ex[i].in + k, bytewise ? 1 : ex[i].len);
            if (rc != 0 || r.nmsg != ex[i].msgs || r.last_len != 5 ||
                memcmp(r.last, "Hello", 5) != 0)
                vtest_fail(__FILE__, __LINE__, "%s (bytewise %d): rc %d, %d messages", ex[i].name,
                           bytewise, rc, r.nmsg);
            vega_ws_conn_free(c);
        }
    }
    /* An empty compressed message: one 0x00 byte (§7.2.3.6), or no bytes at all. */
    vega_ws_conn *c = pmd_conn(VEGA_WS_CLIENT, &r, TAKEOVER);
    r.nmsg = 0;
    VCHECK_EQ(vega_ws_conn_read(c, (const uint8_t *)"\xc1\x01\x00\xc2\x00", 5), 0);
    VCHECK(r.nmsg == 2 && r.last_len == 0 && r.last_type == VEGA_WS_BINARY);
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}

VTEST(rfc7692_examples_send)
{
    /* zlib produces §7.2.3.1 and, with the window kept, §7.2.3.2's second message. */
    struct wsrec r;
    wsrec_init(&r);
    vega_ws_conn *s = pmd_conn(VEGA_WS_SERVER, &r, TAKEOVER);
    uint8_t out[64];
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "Hello", 5), 0);
    VCHECK_EQ(vega_ws_conn_write(s, out, sizeof out), 9);
    VCHECK(!memcmp(out, "\xc1\x07\xf2\x48\xcd\xc9\xc9\x07\x00", 9));
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "Hello", 5), 0);
    VCHECK_EQ(vega_ws_conn_write(s, out, sizeof out), 7);
    VCHECK(!memcmp(out, "\xc1\x05\xf2\x00\x11\x00\x00", 7));
    vega_ws_conn_free(s);
    /* server_no_context_takeover: the second is the first again. */
    vega_ws_deflate_params p = {.server_no_context_takeover = true};
    s = pmd_conn(VEGA_WS_SERVER, &r, p);
    for (int i = 0; i < 2; i++) {
        VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_TEXT, "Hello", 5), 0);
        VCHECK_EQ(vega_ws_conn_write(s, out, sizeof out), 9);
        VCHECK(!memcmp(out, "\xc1\x07\xf2\x48\xcd\xc9\xc9\x07\x00", 9));
    }
    vega_ws_conn_free(s);
    wsrec_fini(&r);
}

VTEST(compression_parameters_pair)
{
    /* Autobahn 12/13: every combination of context takeover and window bits (8, 9, 12, 15),
     * messages of several sizes both ways, fragmented, each checked. */
    static const uint8_t bits[] = {8, 9, 12, 15};
    static uint8_t body[100000];
    uint32_t x = 1;
    for (size_t i = 0; i < sizeof body; i++) {
        x = x * 1103515245 + 12345;
        body[i] = (uint8_t)("abcdefgh ijklm\n"[(x >> 16) % 15]);
    }
    static const size_t sizes[] = {0, 1, 16, 1000, 65536, 100000};
    struct wsrec rc, rs;
    wsrec_init(&rc);
    wsrec_init(&rs);
    for (int mode = 0; mode < 4; mode++) {
        for (size_t b = 0; b < sizeof bits; b++) {
            vega_ws_deflate_params p = {.server_no_context_takeover = mode & 1,
                                        .client_no_context_takeover = mode & 2,
                                        .server_max_window_bits = bits[b],
                                        .client_max_window_bits = bits[(b + 1) % 4]};
            vega_ws_conn_opts o;
            vega_ws_conn_opts_init(&o);
            o.deflate = p;
            o.deflate.enabled = true;
            o.send_fragment_size = 4096;
            vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &rc, &o);
            vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &rs, &o);
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
                for (int rep = 0; rep < 2; rep++) {
                    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, body, sizes[k]), 0);
                    VCHECK_EQ(ws_pump(c, s), 0);
                    if (rs.last_len != sizes[k] || memcmp(rs.last, body, sizes[k]))
                        vtest_fail(__FILE__, __LINE__, "c->s mode %d bits %u size %zu rep %d: %zu",
                                   mode, bits[b], sizes[k], rep, rs.last_len);
                    VCHECK_EQ(vega_ws_submit_data(s, VEGA_WS_BINARY, body, sizes[k] / 2, false), 0);
                    VCHECK_EQ(vega_ws_submit_data(s, VEGA_WS_BINARY, body + sizes[k] / 2,
                                                  sizes[k] - sizes[k] / 2, true),
                              0);
                    VCHECK_EQ(ws_pump(s, c), 0);
                    if (rc.last_len != sizes[k] || memcmp(rc.last, body, sizes[k]))
                        vtest_fail(__FILE__, __LINE__, "mode %d bits %u size %zu rep %d: got %zu",
                                   mode, bits[b], sizes[k], rep, rc.last_len);
                }
            }
            vega_ws_conn_free(c);
            vega_ws_conn_free(s);
        }
    }
    wsrec_fini(&rc);
    wsrec_fini(&rs);
}

VTEST(compression_errors)
{
    struct wsrec r;
    wsrec_init(&r);
    /* A zip bomb: 1 MiB of zeros compresses to about 1 KiB; with a 64 KiB message limit the
     * connection fails with 1009 once the output passes it, having handed out at most that. */
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    o.max_message_size = 65536;
    o.deflate.enabled = true;
    static uint8_t zeros[1 << 20];
    vega_ws_conn *s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    vega_ws_conn *c = wsrec_conn(VEGA_WS_CLIENT, &r, &o);
    VCHECK_EQ(vega_ws_submit_message(s, VEGA_WS_BINARY, zeros, sizeof zeros), 0);
    size_t wire = vega_ws_conn_get_pending(s);
    VCHECK(wire < 8192);
    VCHECK_EQ(ws_pump(s, c), VEGA_ERR_PROTO);
    vega_ws_error e;
    vega_ws_conn_get_error(c, &e);
    VCHECK_EQ(e.code, 1009);
    VCHECK(r.cur_len <= 65536 && r.nmsg == 0);
    vega_ws_conn_free(s);
    vega_ws_conn_free(c);
    /* Garbage as compressed data: 1007. RSV1 on a continuation or a control frame: 1002. */
    static const uint8_t key[4] = {1, 2, 3, 4};
    uint8_t f[64];
    size_t n = ws_frame(f, 0xc1, key, "\xff\xff\xff\xff", 4);
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), VEGA_ERR_PROTO);
    vega_ws_conn_get_error(s, &e);
    VCHECK_EQ(e.code, 1007);
    vega_ws_conn_free(s);
    n = ws_frame(f, 0x41, key, "\xf2\x48", 2);
    n += ws_frame(f + n, 0xc0, key, "\xcd", 1);
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), VEGA_ERR_PROTO);
    vega_ws_conn_get_error(s, &e);
    VCHECK_EQ(e.code, 1002);
    vega_ws_conn_free(s);
    n = ws_frame(f, 0xc9, key, NULL, 0);
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    VCHECK_EQ(vega_ws_conn_read(s, f, n), VEGA_ERR_PROTO);
    vega_ws_conn_free(s);
    /* Invalid UTF-8 inside a compressed text message: 1007 as well. */
    s = wsrec_conn(VEGA_WS_SERVER, &r, &o);
    c = wsrec_conn(VEGA_WS_CLIENT, &r, &o);
    VCHECK_EQ(vega_ws_submit_message(c, VEGA_WS_TEXT, "ok\xc0\x80", 4), 0);
    VCHECK_EQ(ws_pump(c, s), VEGA_ERR_PROTO);
    vega_ws_conn_get_error(s, &e);
    VCHECK_EQ(e.code, 1007);
    vega_ws_conn_free(s);
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}
