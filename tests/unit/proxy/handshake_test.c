/* SPDX-License-Identifier: MIT */
/* The proxy handshake core (lib/proxy): every message of SOCKS5 (RFC 1928), its
 * username/password step (RFC 1929), SOCKS4/4a and HTTP CONNECT byte for byte, every reply
 * code to its error, the bounds, replies fed whole and byte by byte, and bytes after the reply
 * left to the tunnel. Also the UDP request header, proxy URLs and NO_PROXY. */
#include <string.h>

#include <vega/proxy.h>

#include "vtest.h"

static vega_proxy_handshake *mk(vega_proxy_kind k, const char *host, uint16_t port,
                                const char *user, const char *pass)
{
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = k;
    o.host = host;
    o.port = port;
    o.user = user;
    o.password = pass;
    vega_proxy_handshake *h = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    return h;
}

/* Expects the next message to be exactly want[0..n). */
static void expect_msg(vega_proxy_handshake *h, const void *want, size_t n)
{
    uint8_t out[1024];
    vega_ssize w = vega_proxy_handshake_write(h, out, sizeof out);
    VCHECK_EQ(w, (vega_ssize)n);
    VCHECK(memcmp(out, want, n) == 0);
    VCHECK_EQ(vega_proxy_handshake_write(h, out, sizeof out), 0); /* one message at a time */
}

/* Feeds a reply whole; returns the read's result, *used the bytes taken. */
static int feed(vega_proxy_handshake *h, const void *in, size_t n, size_t *used)
{
    return vega_proxy_handshake_read(h, in, n, used);
}

/* Feeds byte by byte, never more than want(); returns the last result. */
static int feed_bytes(vega_proxy_handshake *h, const uint8_t *in, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        VCHECK(vega_proxy_handshake_want(h) >= 1);
        size_t used = 0;
        rc = vega_proxy_handshake_read(h, in + i, 1, &used);
        if (rc < 0)
            return rc;
        VCHECK_EQ(used, 1);
    }
    return rc;
}

VTEST(socks5_noauth_connect_name)
{
    /* RFC 1928 §3: VER 5, NMETHODS 1, NO AUTHENTICATION REQUIRED */
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "example.com", 443, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(vega_proxy_handshake_want(h), 2);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    VCHECK_EQ(used, 2);
    VCHECK_EQ(vega_proxy_handshake_want(h), 0); /* the request goes first */
    /* RFC 1928 §4-5: VER CMD=CONNECT RSV ATYP=3 LEN "example.com" PORT */
    expect_msg(h,
               "\x05\x01\x00\x03\x0b"
               "example.com"
               "\x01\xbb",
               18);
    /* §6: succeeded, BND 10.0.0.1:4096, then two tunnel bytes that must stay unread */
    const uint8_t rep[] = {5, 0, 0, 1, 10, 0, 0, 1, 0x10, 0x00, 'X', 'Y'};
    VCHECK_EQ(vega_proxy_handshake_want(h), 4);
    VCHECK_EQ(feed(h, rep, sizeof rep, &used), 1);
    VCHECK_EQ(used, 10);
    VCHECK(vega_proxy_handshake_is_done(h));
    const vega_proxy_reply *r = vega_proxy_handshake_reply(h);
    VCHECK_EQ(r->code, 0);
    VCHECK_EQ(r->auth_method, 0);
    VCHECK_EQ(r->bound.type, VEGA_PROXY_ATYP_IPV4);
    VCHECK_EQ(r->bound.port, 4096);
    VCHECK(memcmp(r->bound.ip, "\x0a\x00\x00\x01", 4) == 0);
    VCHECK_STR(r->reason, "succeeded");
    VCHECK_EQ(vega_proxy_handshake_want(h), 0);
    vega_proxy_handshake_free(h);
}

VTEST(socks5_ipv4_ipv6_literals)
{
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5, "127.0.0.1", 8080, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    expect_msg(h, "\x05\x01\x00\x01\x7f\x00\x00\x01\x1f\x90", 10);
    vega_proxy_handshake_free(h);

    h = mk(VEGA_PROXY_SOCKS5H, "::1", 80, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    uint8_t want[22] = {5, 1, 0, 4};
    want[19] = 1;
    want[20] = 0;
    want[21] = 80;
    expect_msg(h, want, sizeof want);
    /* an IPv6 BND.ADDR, byte by byte */
    uint8_t rep[22] = {5, 0, 0, 4};
    rep[4] = 0xfe;
    rep[5] = 0x80;
    rep[21] = 7;
    VCHECK_EQ(feed_bytes(h, rep, sizeof rep), 1);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.type, VEGA_PROXY_ATYP_IPV6);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 7);
    vega_proxy_handshake_free(h);
}

VTEST(socks5_userpass)
{
    /* RFC 1928 §3 offers 0x00 and 0x02; RFC 1929 §2: VER 1 ULEN UNAME PLEN PASSWD */
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "h", 1, "user", "secret");
    expect_msg(h, "\x05\x02\x00\x02", 4);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x02", 2, &used), 0);
    expect_msg(h, "\x01\x04user\x06secret", 13);
    VCHECK_EQ(feed(h, "\x01\x00", 2, &used), 0);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->auth_status, 0);
    expect_msg(h, "\x05\x01\x00\x03\x01h\x00\x01", 8);
    /* a reply with a domain BND.ADDR, byte by byte */
    const uint8_t rep[] = {5, 0, 0, 3, 3, 'a', '.', 'b', 0, 9};
    VCHECK_EQ(feed_bytes(h, rep, sizeof rep), 1);
    VCHECK_STR(vega_proxy_handshake_reply(h)->bound.name, "a.b");
    vega_proxy_handshake_free(h);

    /* the server takes no-auth although we offered credentials */
    h = mk(VEGA_PROXY_SOCKS5H, "h", 1, "user", "secret");
    expect_msg(h, "\x05\x02\x00\x02", 4);
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    expect_msg(h, "\x05\x01\x00\x03\x01h\x00\x01", 8);
    vega_proxy_handshake_free(h);
}

VTEST(socks5_auth_failures)
{
    size_t used;
    /* X'FF' NO ACCEPTABLE METHODS */
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\xff", 2, &used), VEGA_ERR_PROXY_AUTH);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->auth_method, 0xff);
    /* sticky */
    uint8_t out[64];
    VCHECK_EQ(vega_proxy_handshake_write(h, out, sizeof out), VEGA_ERR_PROXY_AUTH);
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), VEGA_ERR_PROXY_AUTH);
    vega_proxy_handshake_free(h);
    /* the server wants user/pass and we have none */
    h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\x02", 2, &used), VEGA_ERR_PROXY_AUTH);
    vega_proxy_handshake_free(h);
    /* RFC 1929 §2: a STATUS other than X'00' is a failure */
    h = mk(VEGA_PROXY_SOCKS5H, "h", 1, "u", "p");
    expect_msg(h, "\x05\x02\x00\x02", 4);
    VCHECK_EQ(feed(h, "\x05\x02", 2, &used), 0);
    expect_msg(h, "\x01\x01u\x01p", 5);
    VCHECK_EQ(feed(h, "\x01\x01", 2, &used), VEGA_ERR_PROXY_AUTH);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->auth_status, 1);
    vega_proxy_handshake_free(h);
    /* a method we never offered (GSSAPI), a wrong version */
    h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\x01", 2, &used), VEGA_ERR_PROXY_HANDSHAKE);
    vega_proxy_handshake_free(h);
    h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x04\x00", 2, &used), VEGA_ERR_PROXY_HANDSHAKE);
    vega_proxy_handshake_free(h);
}

VTEST(socks5_every_reply_code)
{
    /* RFC 1928 §6: X'00' succeeded; X'01'..X'08' failures; X'09'..X'FF' unassigned */
    static const char *words[] = {"succeeded",
                                  "general SOCKS server failure",
                                  "connection not allowed by ruleset",
                                  "Network unreachable",
                                  "Host unreachable",
                                  "Connection refused",
                                  "TTL expired",
                                  "Command not supported",
                                  "Address type not supported"};
    for (int rep = 0; rep < 256; rep++) {
        vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
        expect_msg(h, "\x05\x01\x00", 3);
        size_t used;
        VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
        expect_msg(h, "\x05\x01\x00\x03\x01h\x00\x01", 8);
        const uint8_t r[] = {5, (uint8_t)rep, 0, 1, 0, 0, 0, 0, 0, 0};
        int rc = feed(h, r, sizeof r, &used);
        VCHECK_EQ(rc, rep == 0 ? 1 : VEGA_ERR_PROXY_REFUSED);
        VCHECK_EQ(vega_proxy_handshake_reply(h)->code, rep);
        VCHECK_STR(vega_proxy_handshake_reply(h)->reason, rep <= 8 ? words[rep] : "unassigned");
        vega_proxy_handshake_free(h);
    }
}

VTEST(socks5_malformed_replies)
{
    const struct {
        const char *bytes;
        size_t n;
    } bad[] = {
        {"\x04\x00\x00\x01\0\0\0\0\0\0", 10}, /* VER 4 */
        {"\x05\x00\x01\x01\0\0\0\0\0\0", 10}, /* RSV not 0 */
        {"\x05\x00\x00\x02\0\0\0\0\0\0", 10}, /* ATYP 2 */
        {"\x05\x00\x00\x05\0\0\0\0\0\0", 10}, /* ATYP 5 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
        expect_msg(h, "\x05\x01\x00", 3);
        size_t used;
        VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
        expect_msg(h, "\x05\x01\x00\x03\x01h\x00\x01", 8);
        VCHECK_EQ(feed(h, bad[i].bytes, bad[i].n, &used), VEGA_ERR_PROXY_HANDSHAKE);
        vega_proxy_handshake_free(h);
    }
    /* bytes before anything was asked: the proxy spoke out of turn */
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS5H, "h", 1, NULL, NULL);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), VEGA_ERR_PROXY_HANDSHAKE);
    vega_proxy_handshake_free(h);
}

VTEST(socks5_udp_associate)
{
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = VEGA_PROXY_SOCKS5;
    o.command = VEGA_PROXY_CMD_UDP_ASSOCIATE;
    vega_proxy_handshake *h = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    expect_msg(h, "\x05\x01\x00", 3);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    /* RFC 1928 §4 CMD X'03', DST 0.0.0.0:0 (we do not know our address yet) */
    expect_msg(h, "\x05\x03\x00\x01\0\0\0\0\0\0", 10);
    VCHECK_EQ(feed(h, "\x05\x00\x00\x01\x7f\x00\x00\x01\x30\x39", 10, &used), 1);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 12345);
    vega_proxy_handshake_free(h);
    /* only SOCKS5 has UDP ASSOCIATE */
    o.kind = VEGA_PROXY_HTTP;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
}

/* RFC 1928 §4: "Two replies are sent from the SOCKS server to the client during a BIND
 * operation." */
VTEST(socks5_bind_two_replies)
{
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = VEGA_PROXY_SOCKS5;
    o.command = VEGA_PROXY_CMD_BIND;
    o.host = "192.0.2.7";
    o.port = 20;
    vega_proxy_handshake *h = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    expect_msg(h, "\x05\x01\x00", 3);
    size_t used;
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    expect_msg(h, "\x05\x02\x00\x01\xc0\x00\x02\x07\x00\x14", 10);
    /* the first reply: where the proxy listens; not done, the second is awaited */
    static const uint8_t first[] = {5, 0, 0, 1, 198, 51, 100, 1, 0x9c, 0x40};
    VCHECK_EQ(feed_bytes(h, first, sizeof first), VEGA_PROXY_BIND_LISTENING);
    VCHECK(!vega_proxy_handshake_is_done(h));
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 40000);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.ip[0], 198);
    VCHECK_EQ(vega_proxy_handshake_want(h), 4);
    uint8_t out[64];
    VCHECK_EQ(vega_proxy_handshake_write(h, out, sizeof out), 0); /* nothing to send */
    /* the second: the peer that connected; done, and not a byte past it is taken */
    static const uint8_t second[] = {5, 0, 0, 1, 192, 0, 2, 7, 0x04, 0x01, 'x'};
    VCHECK_EQ(feed(h, second, sizeof second, &used), 1);
    VCHECK_EQ(used, sizeof second - 1);
    VCHECK(vega_proxy_handshake_is_done(h));
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 1025);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.ip[3], 7);
    vega_proxy_handshake_free(h);

    /* both replies in one read: the first ends the read, the rest is read next */
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    VCHECK(vega_proxy_handshake_write(h, out, sizeof out) == 10);
    uint8_t both[20];
    memcpy(both, first, 10);
    memcpy(both + 10, second, 10);
    VCHECK_EQ(feed(h, both, 20, &used), VEGA_PROXY_BIND_LISTENING);
    VCHECK_EQ(used, 10);
    VCHECK_EQ(feed(h, both + 10, 10, &used), 1);
    vega_proxy_handshake_free(h);

    /* the second reply refuses (the peer never came, or came from elsewhere) */
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    expect_msg(h, "\x05\x01\x00", 3);
    VCHECK_EQ(feed(h, "\x05\x00", 2, &used), 0);
    VCHECK(vega_proxy_handshake_write(h, out, sizeof out) == 10);
    VCHECK_EQ(feed(h, first, 10, &used), VEGA_PROXY_BIND_LISTENING);
    VCHECK_EQ(feed(h, "\x05\x04\x00\x01\0\0\0\0\0\0", 10, &used), VEGA_ERR_PROXY_REFUSED);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->code, 4);
    vega_proxy_handshake_free(h);

    /* SOCKS4: CD 2, two replies of 8 bytes */
    o.kind = VEGA_PROXY_SOCKS4;
    o.user = "u";
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    expect_msg(h, "\x04\x02\x00\x14\xc0\x00\x02\x07u\x00", 10);
    VCHECK_EQ(feed(h, "\x00\x5a\x9c\x40\xc6\x33\x64\x01", 8, &used), VEGA_PROXY_BIND_LISTENING);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 40000);
    VCHECK_EQ(feed(h, "\x00\x5a\x04\x01\xc0\x00\x02\x07", 8, &used), 1);
    VCHECK_EQ(vega_proxy_handshake_reply(h)->bound.port, 1025);
    vega_proxy_handshake_free(h);

    /* no BIND through an HTTP proxy, nor without the peer's address */
    o.kind = VEGA_PROXY_HTTP;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.kind = VEGA_PROXY_SOCKS5;
    o.host = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
}

VTEST(udp_header)
{
    vega_proxy_addr a = {.type = VEGA_PROXY_ATYP_IPV4, .ip = {192, 0, 2, 1}, .port = 53};
    uint8_t b[300];
    VCHECK_EQ(vega_proxy_udp_header_write(b, sizeof b, 0, &a), 10);
    VCHECK(memcmp(b, "\0\0\0\x01\xc0\x00\x02\x01\x00\x35", 10) == 0);
    VCHECK_EQ(vega_proxy_udp_header_write(b, 9, 0, &a), VEGA_ERR_NOBUF);
    uint8_t frag;
    vega_proxy_addr p;
    VCHECK_EQ(vega_proxy_udp_header_parse(b, 10, &frag, &p), 10);
    VCHECK_EQ(p.type, VEGA_PROXY_ATYP_IPV4);
    VCHECK_EQ(p.port, 53);
    VCHECK_EQ(frag, 0);
    vega_proxy_addr n = {.type = VEGA_PROXY_ATYP_NAME, .port = 443};
    strcpy(n.name, "example.org");
    VCHECK_EQ(vega_proxy_udp_header_write(b, sizeof b, 3, &n), 4 + 1 + 11 + 2);
    VCHECK_EQ(vega_proxy_udp_header_parse(b, 18, &frag, &p), 18);
    VCHECK_STR(p.name, "example.org");
    VCHECK_EQ(frag, 3);
    /* truncated at every length, RSV not zero, unknown ATYP, empty name */
    for (size_t l = 0; l < 18; l++)
        VCHECK_EQ(vega_proxy_udp_header_parse(b, l, &frag, &p), VEGA_ERR_PROXY_HANDSHAKE);
    VCHECK_EQ(
        vega_proxy_udp_header_parse((const uint8_t *)"\0\x01\0\x01\0\0\0\0\0\0", 10, &frag, &p),
        VEGA_ERR_PROXY_HANDSHAKE);
    VCHECK_EQ(vega_proxy_udp_header_parse((const uint8_t *)"\0\0\0\x02\0\0\0\0\0\0", 10, &frag, &p),
              VEGA_ERR_PROXY_HANDSHAKE);
    VCHECK_EQ(vega_proxy_udp_header_parse((const uint8_t *)"\0\0\0\x03\0\0\0", 7, &frag, &p),
              VEGA_ERR_PROXY_HANDSHAKE);
}

VTEST(socks4_and_4a)
{
    /* SOCKS4: VN 4 CD 1 DSTPORT DSTIP USERID NUL */
    vega_proxy_handshake *h = mk(VEGA_PROXY_SOCKS4, "192.0.2.7", 80, "bob", NULL);
    expect_msg(h,
               "\x04\x01\x00\x50\xc0\x00\x02\x07"
               "bob\0",
               12);
    VCHECK_EQ(vega_proxy_handshake_want(h), 8);
    size_t used;
    const uint8_t ok[] = {0, 90, 0, 0, 0, 0, 0, 0, 'Z'};
    VCHECK_EQ(feed(h, ok, sizeof ok, &used), 1);
    VCHECK_EQ(used, 8);
    vega_proxy_handshake_free(h);
    /* SOCKS4a: DSTIP 0.0.0.1, then the name */
    h = mk(VEGA_PROXY_SOCKS4A, "example.com", 443, NULL, NULL);
    expect_msg(h, "\x04\x01\x01\xbb\x00\x00\x00\x01\0example.com\0", 21);
    /* every CD: 90 granted, 91/92 refused, 93 a user-id mismatch, others malformed */
    vega_proxy_handshake_free(h);
    for (int cd = 0; cd < 256; cd++) {
        h = mk(VEGA_PROXY_SOCKS4A, "x", 1, NULL, NULL);
        uint8_t out[64];
        VCHECK(vega_proxy_handshake_write(h, out, sizeof out) > 0);
        const uint8_t r[] = {0, (uint8_t)cd, 0, 0, 0, 0, 0, 0};
        int want = cd == 90               ? 1
                   : cd == 91 || cd == 92 ? VEGA_ERR_PROXY_REFUSED
                   : cd == 93             ? VEGA_ERR_PROXY_AUTH
                                          : VEGA_ERR_PROXY_HANDSHAKE;
        VCHECK_EQ(feed_bytes(h, r, sizeof r), want);
        VCHECK_EQ(vega_proxy_handshake_reply(h)->code, cd);
        vega_proxy_handshake_free(h);
    }
    /* VN of the reply must be 0 */
    h = mk(VEGA_PROXY_SOCKS4, "1.2.3.4", 1, NULL, NULL);
    uint8_t out[64];
    VCHECK(vega_proxy_handshake_write(h, out, sizeof out) > 0);
    VCHECK_EQ(feed(h, "\x04\x5a\0\0\0\0\0\0", 8, &used), VEGA_ERR_PROXY_HANDSHAKE);
    vega_proxy_handshake_free(h);
}

VTEST(bad_options)
{
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    vega_proxy_handshake *h = NULL;
    o.kind = VEGA_PROXY_SOCKS4;
    o.host = "example.com"; /* SOCKS4 has no names */
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), VEGA_ERR_PROXY_UNSUPPORTED);
    o.host = "::1";
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), VEGA_ERR_PROXY_UNSUPPORTED);
    o.kind = VEGA_PROXY_SOCKS4A;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), VEGA_ERR_PROXY_UNSUPPORTED);
    char big[300];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    o.kind = VEGA_PROXY_SOCKS5H;
    o.host = big; /* RFC 1928 §5: one length octet */
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), VEGA_ERR_PROXY_UNSUPPORTED);
    big[255] = '\0';
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    vega_proxy_handshake_free(h);
    o.host = "a";
    o.user = big; /* 255 bytes: the most RFC 1929 carries */
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    vega_proxy_handshake_free(h);
    big[255] = 'a';
    big[256] = '\0';
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.user = "";
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.user = NULL;
    o.host = "evil\r\nX: y";
    o.kind = VEGA_PROXY_HTTP;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.host = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.host = "a";
    o.kind = VEGA_PROXY_NONE;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
    o.kind = VEGA_PROXY_HTTP;
    o.max_reply = VEGA_PROXY_MAX_REPLY + 1;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), -EINVAL);
}

VTEST(http_connect_request)
{
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = VEGA_PROXY_HTTP;
    o.host = "example.com";
    o.port = 443;
    o.user = "Aladdin";
    o.password = "open sesame";
    o.user_agent = "vega/1";
    vega_proxy_handshake *h = NULL;
    VCHECK_EQ(vega_proxy_handshake_new(&h, NULL, &o, NULL, NULL), 0);
    /* RFC 7617 §2's example credentials */
    const char *want = "CONNECT example.com:443 HTTP/1.1\r\n"
                       "Host: example.com:443\r\n"
                       "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n"
                       "User-Agent: vega/1\r\n"
                       "Proxy-Connection: Keep-Alive\r\n\r\n";
    uint8_t small[16];
    VCHECK_EQ(vega_proxy_handshake_write(h, small, sizeof small), VEGA_ERR_NOBUF);
    expect_msg(h, want, strlen(want));
    vega_proxy_handshake_free(h);
    /* an IPv6 literal goes in brackets */
    h = mk(VEGA_PROXY_HTTPS, "2001:db8::1", 8443, NULL, NULL);
    want = "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\n"
           "Proxy-Connection: Keep-Alive\r\n\r\n";
    expect_msg(h, want, strlen(want));
    vega_proxy_handshake_free(h);
    char b[64];
    VCHECK_EQ(vega_proxy_basic_auth(b, sizeof b, "a", "b"), 10);
    VCHECK_STR(b, "Basic YTpi");
    VCHECK_EQ(vega_proxy_basic_auth(b, 10, "a", "b"), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_proxy_basic_auth(b, sizeof b, "a:b", "c"), -EINVAL);
}

struct fields {
    int n;
    char last[64];
};
static int on_field(void *user, const char *name, size_t nl, const char *v, size_t vl)
{
    struct fields *f = user;
    f->n++;
    snprintf(f->last, sizeof f->last, "%.*s=%.*s", (int)nl, name, (int)vl, v);
    return 0;
}

/* Runs a CONNECT to "h:1" against reply; returns the read's result and *used. */
static int http_reply(const char *reply, size_t n, size_t *used, int *status, bool bytewise)
{
    vega_proxy_handshake *h = mk(VEGA_PROXY_HTTP, "h", 1, NULL, NULL);
    uint8_t out[512];
    VCHECK(vega_proxy_handshake_write(h, out, sizeof out) > 0);
    int rc;
    if (bytewise) {
        rc = 0;
        *used = 0;
        while (*used < n && rc == 0) {
            size_t want = vega_proxy_handshake_want(h), u = 0;
            VCHECK(want >= 1);
            size_t take = want < n - *used ? want : n - *used;
            rc = vega_proxy_handshake_read(h, (const uint8_t *)reply + *used, take, &u);
            *used += u;
        }
    } else {
        rc = vega_proxy_handshake_read(h, (const uint8_t *)reply, n, used);
    }
    *status = vega_proxy_handshake_reply(h)->code;
    vega_proxy_handshake_free(h);
    return rc;
}

VTEST(http_connect_replies)
{
    size_t used;
    int status;
    for (int bw = 0; bw < 2; bw++) {
        const char *ok = "HTTP/1.1 200 Connection established\r\n\r\n\x16\x03";
        VCHECK_EQ(http_reply(ok, strlen(ok), &used, &status, bw), 1);
        VCHECK_EQ(used, strlen(ok) - 2); /* the tunnel's bytes are left */
        VCHECK_EQ(status, 200);
        /* ncat's short form, HTTP/1.0, no reason */
        const char *nc = "HTTP/1.0 200\r\n\r\n";
        VCHECK_EQ(http_reply(nc, strlen(nc), &used, &status, bw), 1);
        /* an interim 100 before the final reply */
        const char *c100 = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nA: b\r\n\r\n";
        VCHECK_EQ(http_reply(c100, strlen(c100), &used, &status, bw), 1);
        VCHECK_EQ(status, 204);
        const char *auth = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: "
                           "Basic realm=\"x\"\r\nContent-Length: 0\r\n\r\n";
        VCHECK_EQ(http_reply(auth, strlen(auth), &used, &status, bw), VEGA_ERR_PROXY_AUTH);
        VCHECK_EQ(status, 407);
        const char *bad = "HTTP/1.1 101 Switching Protocols\r\n\r\n";
        VCHECK_EQ(http_reply(bad, strlen(bad), &used, &status, bw), VEGA_ERR_PROXY_HANDSHAKE);
    }
    /* every status: 2xx opens the tunnel, 407 is auth, any other is a refusal */
    for (int s = 200; s < 600; s++) {
        char r[64];
        snprintf(r, sizeof r, "HTTP/1.1 %d X\r\n\r\n", s);
        int want = s < 300 ? 1 : s == 407 ? VEGA_ERR_PROXY_AUTH : VEGA_ERR_PROXY_REFUSED;
        VCHECK_EQ(http_reply(r, strlen(r), &used, &status, false), want);
        VCHECK_EQ(status, s);
    }
    /* malformed heads */
    const char *bad[] = {
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "ICY 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: v\r\n\r\n",
        "HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n",
        "HTTP/1.1 200 O\x01K\r\n\r\n",
        "HTTP/1.1 200 OK\nX: y\r\n\r\n",
        "HTTP/1.1 600 OK\r\n\r\n",
        "H\r\n\r\nTTP/1.1 200 OK\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        VCHECK_EQ(http_reply(bad[i], strlen(bad[i]), &used, &status, false),
                  VEGA_ERR_PROXY_HANDSHAKE);
}

VTEST(http_connect_reply_bound)
{
    /* a head of exactly max_reply bytes passes; one byte more fails */
    vega_proxy_handshake_opts o;
    vega_proxy_handshake_opts_init(&o);
    o.kind = VEGA_PROXY_HTTP;
    o.host = "h";
    o.port = 1;
    o.max_reply = 256;
    for (size_t total = 255; total <= 257; total++) {
        char r[300];
        const char *pre = "HTTP/1.1 200 OK\r\nX: ";
        size_t pl = strlen(pre);
        memcpy(r, pre, pl);
        size_t fill = total - pl - 4;
        memset(r + pl, 'v', fill);
        memcpy(r + pl + fill, "\r\n\r\n", 4);
        struct fields f = {0};
        vega_proxy_callbacks cb = {.on_field = on_field};
        vega_proxy_handshake *h = NULL;
        VCHECK_EQ(vega_proxy_handshake_new(&h, &cb, &o, NULL, &f), 0);
        uint8_t out[256];
        VCHECK(vega_proxy_handshake_write(h, out, sizeof out) > 0);
        size_t used;
        int rc = vega_proxy_handshake_read(h, (const uint8_t *)r, total, &used);
        VCHECK_EQ(rc, total <= 256 ? 1 : VEGA_ERR_PROXY_HANDSHAKE);
        if (rc == 1)
            VCHECK_EQ(f.n, 1);
        vega_proxy_handshake_free(h);
    }
}

VTEST(proxy_url)
{
    vega_proxy_url u;
    VCHECK_EQ(vega_proxy_url_parse(&u, "proxy.example"), 0);
    VCHECK_EQ(u.kind, VEGA_PROXY_HTTP);
    VCHECK_EQ(u.port, 1080); /* curl's default proxy port */
    VCHECK_STR(u.host, "proxy.example");
    VCHECK_EQ(vega_proxy_url_parse(&u, "HTTPS://p"), 0);
    VCHECK_EQ(u.kind, VEGA_PROXY_HTTPS);
    VCHECK_EQ(u.port, 443);
    VCHECK_EQ(vega_proxy_url_parse(&u, "socks5h://us%3Aer:p%40ss@[::1]:9050/"), 0);
    VCHECK_EQ(u.kind, VEGA_PROXY_SOCKS5H);
    VCHECK_STR(u.host, "::1");
    VCHECK_EQ(u.port, 9050);
    VCHECK(u.has_user);
    VCHECK_STR(u.user, "us:er");
    VCHECK_STR(u.password, "p@ss");
    VCHECK_EQ(vega_proxy_url_parse(&u, "socks4a://1.2.3.4:1"), 0);
    VCHECK_EQ(u.kind, VEGA_PROXY_SOCKS4A);
    VCHECK_EQ(vega_proxy_url_parse(&u, "socks4://h"), 0);
    VCHECK_EQ(vega_proxy_url_parse(&u, "socks5://h:"), 0);
    VCHECK_EQ(u.port, 1080);
    const char *bad[] = {"ftp://h",     "http://",       "http://h:0",  "http://h:65536",
                         "http://h:1x", "http://h/path", "http://[::1", "http://u@",
                         "http://h%41", "http://u:%zz@h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        VCHECK_EQ(vega_proxy_url_parse(&u, bad[i]), -EINVAL);
}

VTEST(noproxy)
{
    VCHECK(vega_proxy_noproxy_match("*", "anything"));
    VCHECK(vega_proxy_noproxy_match("example.com", "example.com"));
    VCHECK(vega_proxy_noproxy_match("example.com", "www.EXAMPLE.com"));
    VCHECK(vega_proxy_noproxy_match(".example.com", "www.example.com"));
    VCHECK(vega_proxy_noproxy_match(".example.com", "example.com"));
    VCHECK(!vega_proxy_noproxy_match("example.com", "badexample.com"));
    VCHECK(!vega_proxy_noproxy_match("www.example.com", "example.com"));
    VCHECK(vega_proxy_noproxy_match("a.b, localhost ,c.d", "localhost"));
    VCHECK(!vega_proxy_noproxy_match("a.b,c.d", "localhost"));
    VCHECK(vega_proxy_noproxy_match("127.0.0.1", "127.0.0.1"));
    VCHECK(!vega_proxy_noproxy_match("127.0.0.1", "127.0.0.2"));
    VCHECK(vega_proxy_noproxy_match("10.0.0.0/8", "10.1.2.3"));
    VCHECK(!vega_proxy_noproxy_match("10.0.0.0/8", "11.1.2.3"));
    VCHECK(vega_proxy_noproxy_match("::1", "[::1]"));
    VCHECK(vega_proxy_noproxy_match("2001:db8::/32", "2001:db8:1::5"));
    VCHECK(!vega_proxy_noproxy_match("2001:db8::/32", "2001:db9::5"));
    VCHECK(!vega_proxy_noproxy_match("", "h"));
    VCHECK(!vega_proxy_noproxy_match("*.", "h"));
}
