/* SPDX-License-Identifier: MIT */
/* The proxy driver: TCP (and TLS, for https:// proxies) to the proxy, local name resolution for
 * SOCKS4 and SOCKS5, and the handshake core (lib/proxy) run over the stream; the tunnel comes
 * back as a vega_stream. Reads never ask for more than the core wants, so no byte of the
 * tunnel is read here. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <vega/dns.h>
#include <vega/io.h>
#include <vega/proxy.h>
#include <vega/stream.h>
#include <vega/tls.h>

#include "base.h"
#include "dns_int.h"

void vega_proxy_opts_init_versioned(vega_proxy_opts *o, int opts_version)
{
    if (opts_version != VEGA_PROXY_OPTS_VERSION)
        VEGA_PANIC("vega_proxy_opts_init: unknown layout version %d", opts_version);
    memset(o, 0, sizeof *o);
}

static void trace(const vega_proxy_opts *p, vega_proxy_trace_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void trace(const vega_proxy_opts *p, vega_proxy_trace_kind k, const char *fmt, ...)
{
    if (!p->trace)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    p->trace(p->trace_user, k, line, VEGA__MIN((size_t)n, sizeof line - 1));
}

static bool is_dns_error(int rc)
{
    return rc == VEGA_ERR_DNS_NOT_FOUND || rc == VEGA_ERR_DNS_NO_ADDRESS ||
           rc == VEGA_ERR_DNS_SERVER;
}

static const char *kind_name(vega_proxy_kind k)
{
    switch (k) {
    case VEGA_PROXY_HTTP:
        return "HTTP";
    case VEGA_PROXY_HTTPS:
        return "HTTPS";
    case VEGA_PROXY_SOCKS4:
        return "SOCKS4";
    case VEGA_PROXY_SOCKS4A:
        return "SOCKS4a";
    case VEGA_PROXY_SOCKS5:
        return "SOCKS5";
    case VEGA_PROXY_SOCKS5H:
        return "SOCKS5h";
    default:
        return "?";
    }
}

/* TCP to the proxy, traced as curl does. */
static int open_tcp(const vega_proxy_opts *p, vega_sock **out, vega_deadline dl)
{
    trace(p, VEGA_PROXY_TRACE_INFO, "Trying %s proxy %s port %u...", kind_name(p->kind), p->host,
          (unsigned)p->port);
    vega_sock *sock = NULL;
    int rc = vega_tcp_connect_host(&sock, p->dns, p->host, p->port, NULL, dl);
    if (rc < 0) {
        /* curl: "Could not resolve proxy: NAME" (exit 5), apart from the destination's name */
        return is_dns_error(rc) ? VEGA_ERR_PROXY_RESOLVE : rc;
    }
    vega_addr peer;
    char ps[80] = "?";
    if (vega_sock_peer_addr(sock, &peer) == 0)
        vega_addr_format(&peer, ps, sizeof ps);
    trace(p, VEGA_PROXY_TRACE_INFO, "Connected to proxy %s (%s) port %u", p->host, ps,
          (unsigned)p->port);
    vega_sock_set_nodelay(sock, true);
    *out = sock;
    return 0;
}

int vega_proxy_open_versioned(vega_stream **out, const vega_proxy_opts *p, vega_deadline dl,
                              int opts_version)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!p || opts_version != VEGA_PROXY_OPTS_VERSION || p->kind <= VEGA_PROXY_NONE ||
        p->kind > VEGA_PROXY_SOCKS5H || !p->host || !p->host[0] || p->port == 0)
        return -EINVAL;
    vega_sock *sock = NULL;
    int rc = open_tcp(p, &sock, dl);
    if (rc < 0)
        return rc;
    vega_stream *s = NULL;
    if (p->kind != VEGA_PROXY_HTTPS) {
        rc = vega_stream_from_sock(&s, sock, 0);
        if (rc < 0) {
            vega_sock_close(sock);
            return rc;
        }
        *out = s;
        return 0;
    }
    /* https://: TLS to the proxy (its name verified), then HTTP/1.1 on it (CONNECT). */
    vega_tls_config *cfg = p->tls;
    if (!cfg) {
        rc = vega_tls_config_new(&cfg, VEGA_TLS_CLIENT);
        if (rc == 0) {
            static const char *const h1[] = {"http/1.1"};
            rc = vega_tls_config_set_alpn(cfg, h1, 1);
        }
        if (rc < 0) {
            vega_tls_config_free(cfg);
            vega_sock_close(sock);
            return rc;
        }
    }
    vega_tls_opts to;
    vega_tls_opts_init(&to);
    to.server_name = p->host;
    to.port = p->port;
    rc = vega_tls_stream_from_sock(&s, sock, 0, cfg, &to);
    if (cfg != p->tls)
        vega_tls_config_free(cfg); /* the stream holds its own reference */
    if (rc < 0) {
        vega_sock_close(sock);
        return rc;
    }
    rc = vega_tls_handshake(s, dl);
    if (rc < 0) {
        vega_stream_close(s, 0);
        return rc;
    }
    trace(p, VEGA_PROXY_TRACE_INFO, "TLS handshake with proxy %s done", p->host);
    *out = s;
    return 0;
}

/* The destination as the handshake sends it: SOCKS4 and SOCKS5 resolve here (an IPv4 address
 * first, as curl shows for localhost; SOCKS4 knows no other), the others pass the name. */
static int resolve_dest(const vega_proxy_opts *p, const char *host, char *ip, size_t cap,
                        vega_deadline dl)
{
    vega_dns_resolver *r = p->dns;
    int rc = r ? 0 : vega__dns_default_resolver(&r);
    if (rc < 0)
        return rc;
    vega_addr addrs[8];
    size_t n = 0;
    int fam = p->kind == VEGA_PROXY_SOCKS4 ? AF_INET : AF_UNSPEC;
    rc = vega_dns_lookup(r, host, fam, addrs, VEGA__ARRAY_LEN(addrs), &n, dl);
    if (rc < 0)
        return rc;
    size_t pick = 0;
    for (size_t i = 0; i < n; i++)
        if (vega_addr_family(&addrs[i]) == AF_INET) {
            pick = i;
            break;
        }
    char buf[80];
    if (vega_addr_format(&addrs[pick], buf, sizeof buf) < 0)
        return VEGA_ERR_INTERNAL;
    /* vega_addr_format writes "ip:port" ("[ip]:port" for IPv6): keep the address */
    char *colon = strrchr(buf, ':');
    if (colon)
        *colon = '\0';
    const char *a = buf;
    size_t al = strlen(a);
    if (a[0] == '[') {
        a++;
        al -= 2;
    }
    if (al + 1 > cap)
        return VEGA_ERR_INTERNAL;
    memcpy(ip, a, al);
    ip[al] = '\0';
    return 0;
}

/* Traces the lines of an HTTP message (CRLF-separated). */
static void trace_lines(const vega_proxy_opts *p, vega_proxy_trace_kind k, const char *m, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *e = memchr(m + i, '\r', n - i);
        size_t l = e ? (size_t)(e - (m + i)) : n - i;
        if (p->trace)
            p->trace(p->trace_user, k, m + i, l);
        i += l + 2;
    }
}

struct hs_ctx {
    const vega_proxy_opts *p;
};

static int on_reply(void *user, const vega_proxy_reply *r)
{
    struct hs_ctx *c = user;
    if (c->p->on_reply)
        c->p->on_reply(c->p->trace_user, r);
    return 0;
}

/* Runs the handshake h over s. */
static int run_handshake(const vega_proxy_opts *p, vega_proxy_handshake *h, vega_stream *s,
                         bool http, vega_deadline dl)
{
    uint8_t out[1024];
    uint8_t in[512];
    char line[1024];
    size_t line_len = 0;
    for (;;) {
        vega_ssize n = vega_proxy_handshake_write(h, out, sizeof out);
        if (n < 0)
            return (int)n;
        if (n > 0) {
            if (http)
                trace_lines(p, VEGA_PROXY_TRACE_SENT, (const char *)out, (size_t)n);
            vega_ssize w = vega_stream_write(s, out, (size_t)n, NULL, dl);
            if (w < 0)
                return (int)w;
            continue;
        }
        if (vega_proxy_handshake_is_done(h))
            return 0;
        size_t want = vega_proxy_handshake_want(h);
        if (want == 0)
            return VEGA_ERR_INTERNAL;
        vega_ssize r = vega_stream_read(s, in, VEGA__MIN(want, sizeof in), dl);
        if (r < 0)
            return (int)r;
        if (r == 0)
            return VEGA_ERR_PROXY_HANDSHAKE; /* the proxy closed mid-handshake */
        if (http) {
            /* "< " lines for the trace: what fits of each line */
            for (vega_ssize i = 0; i < r; i++) {
                char c = (char)in[i];
                if (c == '\n') {
                    size_t l = line_len && line[line_len - 1] == '\r' ? line_len - 1 : line_len;
                    if (p->trace)
                        p->trace(p->trace_user, VEGA_PROXY_TRACE_RECV, line, l);
                    line_len = 0;
                } else if (line_len + 1 < sizeof line) {
                    line[line_len++] = c;
                }
            }
        }
        size_t used = 0;
        int rc = vega_proxy_handshake_read(h, in, (size_t)r, &used);
        if (rc < 0)
            return rc;
        if (used != (size_t)r)
            return VEGA_ERR_INTERNAL; /* we read no more than it wanted */
    }
}

/* CONNECT or BIND through p: the proxy's stream, then the handshake. */
static int proxy_request(vega_stream **out, const vega_proxy_opts *p, vega_proxy_command cmd,
                         const char *host, uint16_t port, vega_proxy_reply *reply, vega_deadline dl,
                         int opts_version)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (reply) {
        memset(reply, 0, sizeof *reply);
        reply->code = -1;
    }
    if (!p || opts_version != VEGA_PROXY_OPTS_VERSION || !host || !host[0])
        return -EINVAL;
    bool http = p->kind == VEGA_PROXY_HTTP || p->kind == VEGA_PROXY_HTTPS;
    if (http && cmd != VEGA_PROXY_CMD_CONNECT)
        return -EINVAL;
    vega_proxy_handshake_opts ho;
    vega_proxy_handshake_opts_init(&ho);
    ho.command = cmd;
    ho.kind = p->kind;
    ho.host = host;
    ho.port = port;
    ho.user = p->user;
    ho.password = p->password;
    ho.user_agent = p->user_agent;
    ho.max_reply = p->max_reply;
    char ip[64];
    vega_stream *s = NULL;
    int rc = vega_proxy_open(&s, p, dl);
    if (rc < 0)
        return rc;
    if (p->kind == VEGA_PROXY_SOCKS4 || p->kind == VEGA_PROXY_SOCKS5) {
        rc = resolve_dest(p, host, ip, sizeof ip, dl);
        if (rc < 0) {
            vega_stream_close(s, 0);
            return rc;
        }
        ho.host = ip;
        trace(p, VEGA_PROXY_TRACE_INFO, "%s %s to %s:%u (locally resolved)", kind_name(p->kind),
              cmd == VEGA_PROXY_CMD_BIND ? "bind" : "connect", ip, (unsigned)port);
    } else if (http) {
        trace(p, VEGA_PROXY_TRACE_INFO, "Establish HTTP proxy tunnel to %s:%u", host,
              (unsigned)port);
    } else {
        trace(p, VEGA_PROXY_TRACE_INFO, "%s %s to %s:%u (remotely resolved)",
              p->kind == VEGA_PROXY_SOCKS5H ? "SOCKS5" : "SOCKS4a",
              cmd == VEGA_PROXY_CMD_BIND ? "bind" : "connect", host, (unsigned)port);
    }
    struct hs_ctx ctx = {p};
    vega_proxy_callbacks cb = {.on_reply = on_reply};
    vega_proxy_handshake *h = NULL;
    rc = vega_proxy_handshake_new(&h, &cb, &ho, NULL, &ctx);
    if (rc == 0)
        rc = run_handshake(p, h, s, http, dl);
    if (h && reply)
        *reply = *vega_proxy_handshake_reply(h);
    if (h) {
        const vega_proxy_reply *r = vega_proxy_handshake_reply(h);
        if (rc == 0)
            trace(p, VEGA_PROXY_TRACE_INFO, "%s",
                  http ? "CONNECT phase completed" : "SOCKS request granted.");
        else if (r->code >= 0 && !http)
            trace(p, VEGA_PROXY_TRACE_INFO, "%s reply %d: %s", kind_name(p->kind), r->code,
                  r->reason);
        else if (r->auth_method == 0xFF || r->auth_status > 0)
            trace(p, VEGA_PROXY_TRACE_INFO, "SOCKS5: authentication refused (method %d, status %d)",
                  r->auth_method, r->auth_status);
    }
    vega_proxy_handshake_free(h);
    if (rc < 0) {
        vega_stream_close(s, 0);
        return rc;
    }
    *out = s;
    return 0;
}

int vega_proxy_connect_versioned(vega_stream **out, const vega_proxy_opts *p, const char *host,
                                 uint16_t port, vega_proxy_reply *reply, vega_deadline dl,
                                 int opts_version)
{
    return proxy_request(out, p, VEGA_PROXY_CMD_CONNECT, host, port, reply, dl, opts_version);
}

int vega_proxy_bind_versioned(vega_stream **out, const vega_proxy_opts *p, const char *host,
                              uint16_t port, vega_proxy_reply *reply, vega_deadline dl,
                              int opts_version)
{
    return proxy_request(out, p, VEGA_PROXY_CMD_BIND, host, port, reply, dl, opts_version);
}

/* ---- UDP ASSOCIATE ----------------------------------------------------------------------- */

/* The relay's address from the reply's BND (all zeros: the proxy's own address, ctl's peer). */
static int relay_addr(const vega_proxy_addr *b, vega_sock *ctl, vega_addr *out)
{
    static const uint8_t zeros[16];
    memset(out, 0, sizeof *out);
    if (b->type == VEGA_PROXY_ATYP_IPV4 || b->type == VEGA_PROXY_ATYP_IPV6) {
        bool v4 = b->type == VEGA_PROXY_ATYP_IPV4;
        if (memcmp(b->ip, zeros, v4 ? 4 : 16) == 0) {
            int rc = vega_sock_peer_addr(ctl, out);
            if (rc < 0)
                return rc;
        } else if (v4) {
            struct sockaddr_in *a = (struct sockaddr_in *)&out->ss;
            a->sin_family = AF_INET;
            memcpy(&a->sin_addr, b->ip, 4);
            out->len = sizeof *a;
        } else {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;
            a->sin6_family = AF_INET6;
            memcpy(&a->sin6_addr, b->ip, 16);
            out->len = sizeof *a;
        }
        vega_addr_set_port(out, b->port);
        return b->port ? 0 : VEGA_ERR_PROXY_HANDSHAKE;
    }
    return VEGA_ERR_PROXY_HANDSHAKE; /* a name (or nothing): no address to send to */
}

/* The UDP socket: bound where the control connection goes out from when the relay is of that
 * family (relays check the client's IP), else on the wildcard of the relay's. */
static int open_udp(vega_sock *ctl, const vega_addr *relay, vega_sock **out)
{
    vega_addr local;
    int fam = vega_addr_family(relay);
    if (vega_sock_local_addr(ctl, &local) < 0 || vega_addr_family(&local) != fam) {
        int rc = vega_addr_from_ip(&local, fam == AF_INET6 ? "::" : "0.0.0.0", 0);
        if (rc < 0)
            return rc;
    }
    vega_addr_set_port(&local, 0);
    return vega_udp_bind(out, &local, 0);
}

/* The control half of UDP ASSOCIATE: TCP to p, the handshake, the relay's address. what: the
 * trace's word on where datagrams go. reply: NULL or receives the proxy's reply. */
static int associate_control(const vega_proxy_opts *p, const char *what, vega_sock **control,
                             vega_addr *relay, vega_proxy_reply *reply, vega_deadline dl)
{
    if (p->kind != VEGA_PROXY_SOCKS5 && p->kind != VEGA_PROXY_SOCKS5H)
        return VEGA_ERR_PROXY_UNSUPPORTED; /* UDP goes through SOCKS5 alone */
    vega_proxy_handshake_opts ho;
    vega_proxy_handshake_opts_init(&ho);
    ho.command = VEGA_PROXY_CMD_UDP_ASSOCIATE;
    ho.kind = VEGA_PROXY_SOCKS5;
    ho.user = p->user;
    ho.password = p->password;
    vega_sock *ctl = NULL;
    int rc = open_tcp(p, &ctl, dl);
    if (rc < 0)
        return rc;
    trace(p, VEGA_PROXY_TRACE_INFO, "SOCKS5 UDP associate (datagrams to %s)", what);
    vega_stream *s = NULL;
    rc = vega_stream_from_sock(&s, ctl, VEGA_STREAM_BORROW);
    if (rc < 0) {
        vega_sock_close(ctl);
        return rc;
    }
    struct hs_ctx ctx = {p};
    vega_proxy_callbacks cb = {.on_reply = on_reply};
    vega_proxy_handshake *h = NULL;
    rc = vega_proxy_handshake_new(&h, &cb, &ho, NULL, &ctx);
    if (rc == 0)
        rc = run_handshake(p, h, s, false, dl);
    vega_stream_close(s, 0); /* borrowed: ctl stays open */
    vega_proxy_reply r;
    memset(&r, 0, sizeof r);
    r.code = -1;
    if (h)
        r = *vega_proxy_handshake_reply(h);
    vega_proxy_handshake_free(h);
    if (reply)
        *reply = r;
    if (rc == 0)
        rc = relay_addr(&r.bound, ctl, relay);
    else if (r.code >= 0)
        trace(p, VEGA_PROXY_TRACE_INFO, "SOCKS5 reply %d: %s", r.code, r.reason);
    else if (r.auth_method == 0xFF || r.auth_status > 0)
        trace(p, VEGA_PROXY_TRACE_INFO, "SOCKS5: authentication refused (method %d, status %d)",
              r.auth_method, r.auth_status);
    if (rc < 0) {
        vega_sock_close(ctl);
        return rc;
    }
    *control = ctl;
    return 0;
}

/* The checks both UDP ASSOCIATE calls make first; *reply (if any) set to "no reply". */
static bool associate_args_ok(const vega_proxy_opts *p, vega_proxy_reply *reply, int opts_version)
{
    if (reply) {
        memset(reply, 0, sizeof *reply);
        reply->code = -1;
    }
    return p && opts_version == VEGA_PROXY_OPTS_VERSION && p->host && p->host[0] && p->port != 0;
}

int vega_proxy_udp_associate_control_versioned(vega_sock **control, vega_addr *relay,
                                               const vega_proxy_opts *p, vega_proxy_reply *reply,
                                               vega_deadline dl, int opts_version)
{
    if (!control || !relay)
        return -EINVAL;
    *control = NULL;
    if (!associate_args_ok(p, reply, opts_version))
        return -EINVAL;
    return associate_control(p, "a relay of the caller's", control, relay, reply, dl);
}

int vega_proxy_udp_associate_versioned(vega_sock **out, const vega_proxy_opts *p,
                                       const char *dst_name, uint16_t dst_port,
                                       const vega_addr *dst_as, vega_proxy_reply *reply,
                                       vega_deadline dl, int opts_version)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!associate_args_ok(p, reply, opts_version) || (dst_name && (!dst_name[0] || !dst_as)))
        return -EINVAL;
    vega_sock *ctl = NULL;
    vega_addr relay;
    int rc = associate_control(p, dst_name ? dst_name : "addresses resolved here", &ctl, &relay,
                               reply, dl);
    if (rc < 0)
        return rc;
    vega_sock *u = NULL;
    if ((rc = open_udp(ctl, &relay, &u)) < 0) {
        vega_sock_close(ctl);
        return rc;
    }
    vega_udp_socks5_opts uo;
    vega_udp_socks5_opts_init(&uo);
    uo.relay = relay;
    uo.control = ctl; /* taken, also on failure */
    uo.dst_name = dst_name;
    uo.dst_port = dst_port;
    if (dst_as)
        uo.dst_as = *dst_as;
    if ((rc = vega_udp_set_socks5(u, &uo)) < 0) {
        vega_sock_close(u);
        return rc;
    }
    char rs[80] = "?", ls[80] = "?";
    vega_addr la;
    vega_addr_format(&relay, rs, sizeof rs);
    if (vega_sock_local_addr(u, &la) == 0)
        vega_addr_format(&la, ls, sizeof ls);
    trace(p, VEGA_PROXY_TRACE_INFO, "UDP relay at %s (datagrams from %s)", rs, ls);
    *out = u;
    return 0;
}
