/* SPDX-License-Identifier: MIT */
/* The proxy handshake state machine and its SOCKS messages: SOCKS5 (RFC 1928 §3-§6), its
 * username/password subnegotiation (RFC 1929 §2), SOCKS4 and SOCKS4a (the NEC protocol notes
 * "SOCKS: A protocol for TCP proxy across firewalls" and "SOCKS 4A"). HTTP CONNECT is in
 * http_connect.c. */
#include <string.h>

#include "proxy_int.h"

const char *vega_proxy_socks5_reply_str(int rep)
{
    /* RFC 1928 §6 */
    switch (rep) {
    case 0:
        return "succeeded";
    case 1:
        return "general SOCKS server failure";
    case 2:
        return "connection not allowed by ruleset";
    case 3:
        return "Network unreachable";
    case 4:
        return "Host unreachable";
    case 5:
        return "Connection refused";
    case 6:
        return "TTL expired";
    case 7:
        return "Command not supported";
    case 8:
        return "Address type not supported";
    default:
        return "unassigned";
    }
}

const char *vega_proxy_socks4_reply_str(int cd)
{
    switch (cd) {
    case 90:
        return "request granted";
    case 91:
        return "request rejected or failed";
    case 92:
        return "request rejected because SOCKS server cannot connect to identd on the client";
    case 93:
        return "request rejected because the client program and identd report different "
               "user-ids";
    default:
        return "unassigned";
    }
}

void vega_proxy_handshake_opts_init_versioned(vega_proxy_handshake_opts *o, int opts_version)
{
    if (opts_version != VEGA_PROXY_HANDSHAKE_OPTS_VERSION)
        VEGA_PANIC("vega_proxy_handshake_opts_init: unknown layout version %d", opts_version);
    memset(o, 0, sizeof *o);
    o->command = VEGA_PROXY_CMD_CONNECT;
}

int vega__proxy_fail(vega_proxy_handshake *h, int err)
{
    if (h->st != PH_FAILED) {
        h->st = PH_FAILED;
        h->err = err;
    }
    return h->err;
}

static bool bad_chars(const char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n')
            return true;
    return false;
}

int vega_proxy_handshake_new_versioned(vega_proxy_handshake **out, const vega_proxy_callbacks *cb,
                                       const vega_proxy_handshake_opts *o, const vega_mem *mem,
                                       void *user, int opts_version)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!o || opts_version != VEGA_PROXY_HANDSHAKE_OPTS_VERSION)
        return -EINVAL;
    if (o->kind <= VEGA_PROXY_NONE || o->kind > VEGA_PROXY_SOCKS5H)
        return -EINVAL;
    bool socks5 = o->kind == VEGA_PROXY_SOCKS5 || o->kind == VEGA_PROXY_SOCKS5H;
    bool http = o->kind == VEGA_PROXY_HTTP || o->kind == VEGA_PROXY_HTTPS;
    if (o->command != VEGA_PROXY_CMD_CONNECT &&
        !(o->command == VEGA_PROXY_CMD_UDP_ASSOCIATE && socks5) &&
        !(o->command == VEGA_PROXY_CMD_BIND && !http))
        return -EINVAL;
    if (o->command != VEGA_PROXY_CMD_UDP_ASSOCIATE && (!o->host || !o->host[0]))
        return -EINVAL;
    const char *host = o->host ? o->host : "0.0.0.0";
    size_t hlen = strlen(host);
    if (bad_chars(host) || (o->user && bad_chars(o->user)) ||
        (o->password && bad_chars(o->password)) || (o->user_agent && bad_chars(o->user_agent)))
        return -EINVAL;
    size_t ulen = o->user ? strlen(o->user) : 0, plen = o->password ? strlen(o->password) : 0;
    if (ulen > VEGA_PROXY_MAX_CRED || plen > VEGA_PROXY_MAX_CRED)
        return -EINVAL;
    /* RFC 1929 §2: ULEN and PLEN are 1..255 */
    if (socks5 && o->user && ulen == 0)
        return -EINVAL;
    size_t max_reply = o->max_reply ? o->max_reply : VEGA_PROXY_DEFAULT_MAX_REPLY;
    if (max_reply > VEGA_PROXY_MAX_REPLY || max_reply < 64)
        return -EINVAL;

    vega_proxy_addr dst = {0};
    dst.port = o->port;
    if (!vega__proxy_parse_ip(host, hlen, &dst)) {
        if (hlen > VEGA_PROXY_MAX_NAME)
            return VEGA_ERR_PROXY_UNSUPPORTED;
        dst.type = VEGA_PROXY_ATYP_NAME;
        memcpy(dst.name, host, hlen + 1);
    }
    /* SOCKS4 carries an IPv4 address only; SOCKS4a adds a name, never an IPv6 address. */
    if (o->kind == VEGA_PROXY_SOCKS4 && dst.type != VEGA_PROXY_ATYP_IPV4)
        return VEGA_ERR_PROXY_UNSUPPORTED;
    if (o->kind == VEGA_PROXY_SOCKS4A && dst.type == VEGA_PROXY_ATYP_IPV6)
        return VEGA_ERR_PROXY_UNSUPPORTED;
    /* A name with a NUL-less CR/LF was refused above; SOCKS4a ends it with NUL, HTTP with the
     * line: nothing else to check. */

    size_t extra = http ? max_reply : 0;
    vega_proxy_handshake *h = vega__mem_calloc(mem, 1, sizeof *h + extra);
    if (!h)
        return -ENOMEM;
    h->mem = mem;
    if (cb)
        h->cb = *cb;
    h->cb_user = user;
    h->kind = o->kind;
    h->cmd = o->command;
    h->dst = dst;
    memcpy(h->host, host, hlen <= VEGA_PROXY_MAX_NAME ? hlen + 1 : 0);
    if (o->user) {
        h->has_user = true;
        memcpy(h->user, o->user, ulen + 1);
        if (o->password)
            memcpy(h->password, o->password, plen + 1);
    }
    if (o->user_agent) {
        size_t n = strlen(o->user_agent);
        h->user_agent = vega__mem_malloc(mem, n + 1);
        if (!h->user_agent) {
            vega__mem_free(mem, h);
            return -ENOMEM;
        }
        memcpy(h->user_agent, o->user_agent, n + 1);
    }
    h->max_reply = max_reply;
    h->head = http ? (char *)(h + 1) : NULL;
    h->reply.kind = o->kind;
    h->reply.code = -1;
    h->reply.auth_method = -1;
    h->reply.auth_status = -1;
    h->st = socks5                                                            ? PH_S5_GREETING
            : (o->kind == VEGA_PROXY_SOCKS4 || o->kind == VEGA_PROXY_SOCKS4A) ? PH_S4_REQUEST
                                                                              : PH_HTTP_REQUEST;
    *out = h;
    return 0;
}

void vega_proxy_handshake_free(vega_proxy_handshake *h)
{
    if (!h)
        return;
    vega__mem_free(h->mem, h->user_agent);
    vega__mem_free(h->mem, h);
}

bool vega_proxy_handshake_is_done(const vega_proxy_handshake *h)
{
    return h && h->st == PH_DONE;
}

const vega_proxy_reply *vega_proxy_handshake_reply(const vega_proxy_handshake *h)
{
    return &h->reply;
}

/* ---- writing ----------------------------------------------------------------------------------
 */

/* DST.ADDR DST.PORT in SOCKS5 form (ATYP first). */
vega_ssize vega_proxy_handshake_write(vega_proxy_handshake *h, uint8_t *out, size_t cap)
{
    if (!h || (!out && cap))
        return -EINVAL;
    size_t n = 0;
    switch (h->st) {
    case PH_S5_GREETING:
        /* RFC 1928 §3: VER NMETHODS METHODS; we offer username/password only when we have
         * credentials, as curl does (0x00 always). */
        n = h->has_user ? 4 : 3;
        if (n > cap)
            return VEGA_ERR_NOBUF;
        out[0] = 5;
        out[1] = h->has_user ? 2 : 1;
        out[2] = 0x00;
        if (h->has_user)
            out[3] = 0x02;
        h->st = PH_S5_METHOD;
        return (vega_ssize)n;
    case PH_S5_AUTH: {
        /* RFC 1929 §2: VER(1) ULEN UNAME PLEN PASSWD */
        size_t ul = strlen(h->user), pl = strlen(h->password);
        n = 3 + ul + pl;
        if (n > cap)
            return VEGA_ERR_NOBUF;
        out[0] = 1;
        out[1] = (uint8_t)ul;
        memcpy(out + 2, h->user, ul);
        out[2 + ul] = (uint8_t)pl;
        memcpy(out + 3 + ul, h->password, pl);
        h->st = PH_S5_AUTH_REPLY;
        return (vega_ssize)n;
    }
    case PH_S5_REQUEST:
        /* RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT */
        n = 3 + vega__proxy_addr_len(&h->dst);
        if (n > cap)
            return VEGA_ERR_NOBUF;
        out[0] = 5;
        out[1] = (uint8_t)h->cmd;
        out[2] = 0;
        vega__proxy_addr_put(out + 3, &h->dst);
        h->st = PH_S5_REPLY;
        h->msg_len = 0;
        return (vega_ssize)n;
    case PH_S4_REQUEST: {
        /* VN(4) CD(1) DSTPORT DSTIP USERID NUL; SOCKS4a: DSTIP 0.0.0.x (x != 0), then the
         * name and NUL. */
        bool name = h->dst.type == VEGA_PROXY_ATYP_NAME;
        size_t ul = h->has_user ? strlen(h->user) : 0;
        n = 8 + ul + 1 + (name ? strlen(h->dst.name) + 1 : 0);
        if (n > cap)
            return VEGA_ERR_NOBUF;
        out[0] = 4;
        out[1] = (uint8_t)h->cmd; /* CD: 1 CONNECT, 2 BIND */
        out[2] = (uint8_t)(h->dst.port >> 8);
        out[3] = (uint8_t)h->dst.port;
        if (name) {
            out[4] = out[5] = out[6] = 0;
            out[7] = 1;
        } else {
            memcpy(out + 4, h->dst.ip, 4);
        }
        memcpy(out + 8, h->user, ul);
        out[8 + ul] = 0;
        if (name)
            memcpy(out + 9 + ul, h->dst.name, strlen(h->dst.name) + 1);
        h->st = PH_S4_REPLY;
        h->msg_len = 0;
        return (vega_ssize)n;
    }
    case PH_HTTP_REQUEST:
        return vega__proxy_http_write(h, out, cap);
    case PH_FAILED:
        return h->err;
    default:
        return 0;
    }
}

/* ---- reading ----------------------------------------------------------------------------------
 */

/* The full length of the SOCKS message being read, once enough of it is known (else the
 * length needed to know it). */
static size_t msg_need(const vega_proxy_handshake *h)
{
    switch (h->st) {
    case PH_S5_METHOD:
    case PH_S5_AUTH_REPLY:
        return 2;
    case PH_S4_REPLY:
        return 8;
    case PH_S5_REPLY:
        if (h->msg_len < 4)
            return 4;
        switch (h->msg[3]) {
        case VEGA_PROXY_ATYP_IPV4:
            return 4 + 4 + 2;
        case VEGA_PROXY_ATYP_IPV6:
            return 4 + 16 + 2;
        case VEGA_PROXY_ATYP_NAME:
            return h->msg_len < 5 ? 5 : 4 + 1 + (size_t)h->msg[4] + 2;
        default:
            return 4; /* judged as soon as the 4 bytes are in */
        }
    default:
        return 0;
    }
}

size_t vega_proxy_handshake_want(const vega_proxy_handshake *h)
{
    if (!h)
        return 0;
    if (h->st == PH_HTTP_REPLY)
        return vega__proxy_http_want(h);
    size_t need = msg_need(h);
    return need > h->msg_len ? need - h->msg_len : 0;
}

static int reply_event(vega_proxy_handshake *h)
{
    if (h->cb.on_reply && h->cb.on_reply(h->cb_user, &h->reply) != 0)
        return vega__proxy_fail(h, VEGA_ERR_CALLBACK);
    return 0;
}

/* A granted SOCKS reply. RFC 1928 §4 (BIND): "Two replies are sent from the SOCKS server to the
 * client during a BIND operation. The first is sent after the server creates and binds a new
 * socket. [...] The second reply occurs only after the anticipated incoming connection
 * succeeds or fails." The first leaves the reply state as it is, for the second. */
static int granted(vega_proxy_handshake *h)
{
    if (h->cmd == VEGA_PROXY_CMD_BIND && !h->bind_listening) {
        h->bind_listening = true;
        return VEGA_PROXY_BIND_LISTENING;
    }
    h->st = PH_DONE;
    return 1;
}

/* A complete SOCKS message is in h->msg: judge it. Returns 1 (done), VEGA_PROXY_BIND_LISTENING,
 * 0 (go on), or an error. */
static int socks_message(vega_proxy_handshake *h)
{
    const uint8_t *m = h->msg;
    switch (h->st) {
    case PH_S5_METHOD:
        /* RFC 1928 §3: VER METHOD; X'FF': no acceptable methods */
        if (m[0] != 5)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        h->reply.auth_method = m[1];
        if (m[1] == 0x00) {
            h->st = PH_S5_REQUEST;
            return 0;
        }
        if (m[1] == 0x02 && h->has_user) {
            h->st = PH_S5_AUTH;
            return 0;
        }
        if (m[1] == 0xFF || m[1] == 0x02)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_AUTH);
        return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE); /* a method we did not offer */
    case PH_S5_AUTH_REPLY:
        /* RFC 1929 §2: VER STATUS; "A STATUS field of X'00' indicates success. If the server
         * returns a `failure' (STATUS value other than X'00') status, it MUST close the
         * connection." Servers answer VER 1 (dante) or 5 (some): both are taken. */
        if (m[0] != 1 && m[0] != 5)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        h->reply.auth_status = m[1];
        if (m[1] != 0)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_AUTH);
        h->st = PH_S5_REQUEST;
        return 0;
    case PH_S5_REPLY: {
        /* RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT */
        if (m[0] != 5 || m[2] != 0)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        h->reply.code = m[1];
        snprintf(h->reply.reason, sizeof h->reply.reason, "%s", vega_proxy_socks5_reply_str(m[1]));
        vega_proxy_addr *b = &h->reply.bound;
        b->type = (vega_proxy_atyp)m[3];
        size_t o = 4;
        if (m[3] == VEGA_PROXY_ATYP_IPV4) {
            memcpy(b->ip, m + o, 4);
            o += 4;
        } else if (m[3] == VEGA_PROXY_ATYP_IPV6) {
            memcpy(b->ip, m + o, 16);
            o += 16;
        } else if (m[3] == VEGA_PROXY_ATYP_NAME) {
            size_t n = m[o++];
            memcpy(b->name, m + o, n);
            b->name[n] = '\0';
            o += n;
        } else {
            b->type = VEGA_PROXY_ATYP_NONE;
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        }
        b->port = (uint16_t)(m[o] << 8 | m[o + 1]);
        int rc = reply_event(h);
        if (rc < 0)
            return rc;
        if (m[1] != 0)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_REFUSED);
        return granted(h);
    }
    case PH_S4_REPLY: {
        /* VN(0) CD DSTPORT DSTIP; CD 90 granted, 91..93 refusals */
        if (m[0] != 0)
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        h->reply.code = m[1];
        snprintf(h->reply.reason, sizeof h->reply.reason, "%s", vega_proxy_socks4_reply_str(m[1]));
        h->reply.bound.type = VEGA_PROXY_ATYP_IPV4;
        memcpy(h->reply.bound.ip, m + 4, 4);
        h->reply.bound.port = (uint16_t)(m[2] << 8 | m[3]);
        int rc = reply_event(h);
        if (rc < 0)
            return rc;
        if (m[1] == 90)
            return granted(h);
        if (m[1] >= 91 && m[1] <= 93)
            return vega__proxy_fail(h, m[1] == 93 ? VEGA_ERR_PROXY_AUTH : VEGA_ERR_PROXY_REFUSED);
        return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
    }
    default:
        return vega__proxy_fail(h, VEGA_ERR_INTERNAL);
    }
}

int vega_proxy_handshake_read(vega_proxy_handshake *h, const uint8_t *in, size_t len,
                              size_t *consumed)
{
    if (!h || !consumed || (!in && len))
        return -EINVAL;
    *consumed = 0;
    if (h->st == PH_FAILED)
        return h->err;
    if (h->st == PH_HTTP_REPLY)
        return vega__proxy_http_read(h, in, len, consumed);
    size_t used = 0;
    while (used < len) {
        size_t need = msg_need(h);
        if (need == 0) {
            /* Nothing is awaited: a message must go first, or we are done. Bytes now are the
             * proxy's fault (it answered before being asked) or the caller's. */
            *consumed = used;
            if (h->st == PH_DONE)
                return -EINVAL;
            return vega__proxy_fail(h, VEGA_ERR_PROXY_HANDSHAKE);
        }
        VEGA_ASSERT(h->msg_len < need && need <= sizeof h->msg);
        size_t take = VEGA__MIN(need - h->msg_len, len - used);
        memcpy(h->msg + h->msg_len, in + used, take);
        h->msg_len += take;
        used += take;
        if (h->msg_len < need)
            break;
        if (msg_need(h) > need) /* the length became known (ATYP, name length): read on */
            continue;
        h->msg_len = 0;
        int rc = socks_message(h);
        *consumed = used;
        if (rc != 0)
            return rc;
        /* a message to send comes next: the caller writes before reading more */
        if (msg_need(h) == 0)
            return 0;
    }
    *consumed = used;
    return h->st == PH_DONE ? 1 : 0;
}
