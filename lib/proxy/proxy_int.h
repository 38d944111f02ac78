/* SPDX-License-Identifier: MIT */
/* Internals of the proxy handshake core (lib/proxy): the handshake object, shared by
 * handshake.c (the state machine and SOCKS), http_connect.c (HTTP CONNECT) and addr.c. */
#ifndef VEGA_PROXY_INT_H
#define VEGA_PROXY_INT_H

#include <vega/proxy.h>

#include "base.h"

/* States, in the order a handshake goes through them. */
enum ph_state {
    PH_S5_GREETING,   /* send VER NMETHODS METHODS */
    PH_S5_METHOD,     /* read VER METHOD */
    PH_S5_AUTH,       /* send the RFC 1929 request */
    PH_S5_AUTH_REPLY, /* read VER STATUS */
    PH_S5_REQUEST,    /* send VER CMD RSV ATYP DST.ADDR DST.PORT */
    PH_S5_REPLY,      /* read VER REP RSV ATYP BND.ADDR BND.PORT */
    PH_S4_REQUEST,    /* send VN CD DSTPORT DSTIP USERID NUL [HOST NUL] */
    PH_S4_REPLY,      /* read VN CD DSTPORT DSTIP */
    PH_HTTP_REQUEST,  /* send CONNECT */
    PH_HTTP_REPLY,    /* read the reply head */
    PH_DONE,
    PH_FAILED,
};

struct vega_proxy_handshake {
    const vega_mem *mem;
    vega_proxy_callbacks cb;
    void *cb_user;
    vega_proxy_kind kind;
    vega_proxy_command cmd;
    enum ph_state st;
    int err;                            /* sticky error once FAILED */
    bool bind_listening;                /* BIND: the first reply granted, the second awaited */
    vega_proxy_addr dst;                /* the destination as it goes on the wire */
    char host[VEGA_PROXY_MAX_NAME + 1]; /* as given (for HTTP's authority) */
    bool has_user;
    char user[VEGA_PROXY_MAX_CRED + 1];
    char password[VEGA_PROXY_MAX_CRED + 1];
    char *user_agent; /* owned copy, or NULL */
    size_t max_reply;
    vega_proxy_reply reply;
    /* The SOCKS message being read (at most 4 + 1 + 255 + 2 bytes). */
    uint8_t msg[262];
    size_t msg_len;
    /* The HTTP reply head being read: head_cap = max_reply bytes, allocated with h. */
    char *head;
    size_t head_len;
};

/* HTTP CONNECT (http_connect.c). */
vega_ssize vega__proxy_http_write(vega_proxy_handshake *h, uint8_t *out, size_t cap);
int vega__proxy_http_read(vega_proxy_handshake *h, const uint8_t *in, size_t len, size_t *consumed);
size_t vega__proxy_http_want(const vega_proxy_handshake *h);

/* Parses an IPv4 or IPv6 literal (IPv6 with or without brackets) into a (type and ip).
 * Returns true when s is one. */
bool vega__proxy_parse_ip(const char *s, size_t len, vega_proxy_addr *a);
/* ATYP, address and port as SOCKS5 messages carry them (RFC 1928 §4, §6, §7): the length, 0
 * when a is no address they can carry; _put writes that many bytes at p. */
size_t vega__proxy_addr_len(const vega_proxy_addr *a);
size_t vega__proxy_addr_put(uint8_t *p, const vega_proxy_addr *a);

/* Fails h with err (sticky) and returns err. */
int vega__proxy_fail(vega_proxy_handshake *h, int err);

#endif
