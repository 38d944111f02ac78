/* SPDX-License-Identifier: MIT */
/* The HTTP client's connections: opening them (DNS, TCP with Happy Eyeballs or a --resolve
 * address, or the caller's connect hook; then TLS with SNI and ALPN) and the keep-alive pool
 * of idle ones per origin. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_int.h"

static bool key_eq(const struct hc_key *a, const struct hc_key *b)
{
    return a->tls == b->tls && a->tunnel == b->tunnel && a->port == b->port &&
           strcmp(a->host, b->host) == 0;
}

void vega__hc_conn_close(struct hc_conn *conn)
{
    if (!conn)
        return;
    /* Deadline 0: a TLS close_notify goes out if the socket takes it now; nobody waits. */
    vega_stream_close(conn->s, 0);
    vega__mem_free(conn->mem, conn);
}

static void unlink_idle(vega_http_client *c, struct hc_conn *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        c->idle = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    c->nidle--;
}

/* A pooled connection is fit when a read that may not wait finds nothing: the server neither
 * closed it nor sent anything unasked. Doing it here also lets a TLS stream drop its buffers. */
static bool still_fit(struct hc_conn *x)
{
    uint8_t b[1];
    return vega_stream_read(x->s, b, sizeof b, 0) == -ETIMEDOUT;
}

int vega__hc_pool_take(vega_http_client *c, const struct hc_key *k, struct hc_conn **out)
{
    *out = NULL;
    for (;;) {
        struct hc_conn *found = NULL, *expired = NULL;
        vega_tstamp now = vega_now();
        pthread_mutex_lock(&c->mu);
        for (struct hc_conn *x = c->idle; x; x = x->next) {
            if (!key_eq(&x->key, k))
                continue;
            unlink_idle(c, x);
            if (now - x->idle_since > c->o.idle_timeout_ns)
                expired = x;
            else
                found = x;
            break;
        }
        pthread_mutex_unlock(&c->mu);
        if (expired) {
            vega__hc_conn_close(expired);
            continue;
        }
        if (!found)
            return 0;
        if (still_fit(found)) {
            *out = found;
            return 1;
        }
        vega__hc_conn_close(found);
    }
}

void vega__hc_pool_put(vega_http_client *c, struct hc_conn *conn)
{
    if (c->o.max_idle_per_origin == 0 || !still_fit(conn)) {
        vega__hc_conn_close(conn);
        return;
    }
    struct hc_conn *evict = NULL;
    conn->idle_since = vega_now();
    pthread_mutex_lock(&c->mu);
    conn->prev = NULL;
    conn->next = c->idle;
    if (c->idle)
        c->idle->prev = conn;
    c->idle = conn;
    c->nidle++;
    /* Over the per-origin or the overall cap: the oldest of the origin (or overall) goes. */
    size_t same = 0;
    struct hc_conn *oldest_same = NULL, *last = NULL;
    for (struct hc_conn *x = c->idle; x; x = x->next) {
        if (key_eq(&x->key, &conn->key)) {
            same++;
            oldest_same = x;
        }
        last = x;
    }
    if (same > c->o.max_idle_per_origin)
        evict = oldest_same;
    else if (c->nidle > HC_MAX_IDLE_TOTAL)
        evict = last;
    if (evict)
        unlink_idle(c, evict);
    pthread_mutex_unlock(&c->mu);
    vega__hc_conn_close(evict);
}

int vega__hc_resolve_override(vega_http_client *c, const struct hc_key *k, vega_addr *out)
{
    int found = 0;
    pthread_mutex_lock(&c->mu);
    for (struct hc_resolve *r = c->resolves; r; r = r->next) {
        if (r->port == k->port && strcmp(r->host, k->host) == 0) {
            *out = r->addr;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (found && vega_addr_port(out) == 0)
        vega_addr_set_port(out, k->port);
    return found;
}

static void tls_opts_for(vega_tls_opts *to, const struct hc_conn *conn, const char *server_name)
{
    vega_tls_opts_init(to);
    to->server_name = server_name;
    to->port = conn->key.port;
}

/* Runs the handshake on conn->s (a TLS stream) and checks the protocol it agreed on. */
static int tls_finish(struct hc_conn *conn, vega_http_client_info *info, vega_deadline dl)
{
    int r = vega_tls_handshake(conn->s, dl);
    if (r < 0)
        return r;
    info->t_tls = vega_now();
    const char *alpn = vega_tls_get_alpn(conn->s);
    if (alpn) {
        /* HTTP/1.1 and HTTP/2 are spoken here: a configuration that offered more and got it
         * cannot be served (RFC 7301 §3.2: the client must use the protocol selected). */
        if (strcmp(alpn, "http/1.1") != 0 && strcmp(alpn, "h2") != 0)
            return VEGA_ERR_PROTO;
        strcpy(conn->alpn, alpn);
    }
    conn->tls_version = vega_tls_get_version(conn->s);
    return 0;
}

/* The TLS config of a connection: a caller's, or ours offering h2 and http/1.1 (or, for an
 * HTTP/1.x request, http/1.1 only). */
static vega_tls_config *tls_config(vega_http_client *c, bool h1_only)
{
    return h1_only && c->tls_h1 ? c->tls_h1 : c->tls;
}

static int tls_connect(vega_http_client *c, struct hc_conn *conn, vega_sock *sock,
                       const char *server_name, bool h1_only, vega_http_client_info *info,
                       vega_deadline dl)
{
    vega_tls_opts to;
    tls_opts_for(&to, conn, server_name);
    int r = vega_tls_stream_from_sock(&conn->s, sock, 0, tls_config(c, h1_only), &to);
    if (r < 0) {
        vega_sock_close(sock);
        return r;
    }
    return tls_finish(conn, info, dl);
}

/* The connection from the caller's connect hook: its stream as the transport, TLS over it
 * for https (the hook never does TLS: a proxy tunnel carries the TLS of the origin). */
static int hook_connect(vega_http_client *c, struct hc_conn *conn, const char *server_name,
                        bool h1_only, vega_http_client_info *info, vega_deadline dl)
{
    vega_stream *s = NULL;
    int r = c->o.connect(c->o.connect_user, conn->key.host, conn->key.port, conn->key.tls, &s, dl);
    if (r < 0)
        return r;
    if (r > 0 || !s) {
        vega_stream_close(s, 0);
        return VEGA_ERR_CALLBACK;
    }
    info->t_connect = vega_now();
    if (!conn->key.tls) {
        conn->s = s;
        return 0;
    }
    vega_tls_opts to;
    tls_opts_for(&to, conn, server_name);
    r = vega_tls_stream_new(&conn->s, s, tls_config(c, h1_only), &to);
    if (r < 0) {
        vega_stream_close(s, 0);
        return r;
    }
    return tls_finish(conn, info, dl);
}

/* Through the client's proxy: a tunnel to the origin (TLS inside it for https), or, for a
 * forwarded http:// origin, a stream to the proxy itself. */
static int proxy_connect(vega_http_client *c, struct hc_conn *conn, const char *server_name,
                         bool h1_only, vega_http_client_info *info, vega_deadline dl)
{
    vega_stream *s = NULL;
    int r = vega__hc_forwarded(c, &conn->key)
                ? vega_proxy_open(&s, c->o.proxy, dl)
                : vega_proxy_connect(&s, c->o.proxy, conn->key.host, conn->key.port, NULL, dl);
    if (r < 0)
        return r;
    info->t_connect = vega_now();
    /* the address connected to is the proxy's (curl's %{remote_ip}); an https:// proxy's is
     * under its TLS stream, not reachable here: left empty */
    vega_sock *ps = vega_stream_sock(s);
    if (ps)
        (void)vega_sock_peer_addr(ps, &conn->peer);
    if (!conn->key.tls) {
        conn->s = s;
        return 0;
    }
    vega_tls_opts to;
    tls_opts_for(&to, conn, server_name);
    r = vega_tls_stream_new(&conn->s, s, tls_config(c, h1_only), &to);
    if (r < 0) {
        vega_stream_close(s, 0);
        return r;
    }
    return tls_finish(conn, info, dl);
}

/* DNS (or a --resolve address) and TCP. Returns 0 with *sock connected, or a code. */
static int tcp_open(vega_http_client *c, const struct hc_key *k, vega_http_client_info *info,
                    vega_deadline dl, vega_sock **sock)
{
    vega_addr addr;
    int fam = c->o.ip_family;
    if (vega__hc_resolve_override(c, k, &addr)) {
        info->t_dns = vega_now();
        if (fam != AF_UNSPEC && addr.ss.ss_family != fam)
            return VEGA_ERR_DNS_NO_ADDRESS; /* -4/-6: none of that family (as curl: 6) */
        return vega_tcp_connect_bound(sock, &addr, &c->o.local, dl);
    }
    /* The lookup alone gives the DNS time; the connect then finds the answers cached. */
    vega_addr tmp[1];
    size_t n = 0;
    int r = vega_dns_lookup(c->dns, k->host, fam, tmp, 1, &n, dl);
    if (r == -ECONNREFUSED)
        return VEGA_ERR_DNS_SERVER; /* no name server listens: the host did not resolve */
    if (r < 0)
        return r;
    info->t_dns = vega_now();
    vega_tcp_connect_opts to;
    vega_tcp_connect_opts_init(&to);
    to.family = fam;
    to.attempt_delay_ms = c->o.happy_eyeballs_delay_ms;
    to.local = &c->o.local;
    return vega_tcp_connect_host(sock, c->dns, k->host, k->port, &to, dl);
}

/* The stream of a connection opened by the client itself (plain or TLS over TCP). */
static int own_connect(vega_http_client *c, struct hc_conn *conn, const char *host_for_tls,
                       bool h1_only, vega_http_client_info *info, vega_deadline dl)
{
    vega_sock *sock = NULL;
    int r = tcp_open(c, &conn->key, info, dl, &sock);
    if (r < 0)
        return r;
    info->t_connect = vega_now();
    vega_sock_set_nodelay(sock, !c->o.tcp_nagle);
    if (c->o.tcp_keepalive_s)
        vega_sock_set_keepalive(sock, true, c->o.tcp_keepalive_s, c->o.tcp_keepalive_s, 0);
    vega_sock_peer_addr(sock, &conn->peer);
    if (conn->key.tls)
        return tls_connect(c, conn, sock, host_for_tls, h1_only, info, dl);
    r = vega_stream_from_sock(&conn->s, sock, 0);
    if (r < 0)
        vega_sock_close(sock);
    return r;
}

int vega__hc_connect(vega_http_client *c, const struct hc_key *k, const char *host_for_tls,
                     bool h1_only, vega_http_client_info *info, vega_deadline dl,
                     struct hc_conn **out)
{
    *out = NULL;
    struct hc_conn *conn = vega__mem_calloc(c->o.mem, 1, sizeof *conn);
    if (!conn)
        return -ENOMEM;
    conn->mem = c->o.mem;
    conn->key = *k;
    int r = c->o.connect ? hook_connect(c, conn, host_for_tls, h1_only, info, dl)
            : c->o.proxy ? proxy_connect(c, conn, host_for_tls, h1_only, info, dl)
                         : own_connect(c, conn, host_for_tls, h1_only, info, dl);
    if (r < 0) {
        /* conn->s is set once a stream exists (a TLS stream whose handshake failed, say) */
        vega_stream_close(conn->s, 0);
        vega__mem_free(c->o.mem, conn);
        return r;
    }
    *out = conn;
    return 0;
}
