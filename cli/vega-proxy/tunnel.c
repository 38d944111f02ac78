/* SPDX-License-Identifier: MIT */
/* One client of vega-proxy: the handshake its first byte names (0x05 SOCKS5, 0x04 SOCKS4/4a,
 * else HTTP), the connect to the destination, the reply, the relay in both directions with
 * half-closes passed on, and the access log line. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/tls.h>

#include "proxy.h"

/* Room for a handshake: the largest SOCKS message or an HTTP head (--max-head, at most this). */
#define HS_BUF (64 * 1024)
/* Bytes per read while relaying by copy. */
#define RELAY_BUF (16 * 1024)
/* A direction's pipe: a fresh one holds 64 KiB (Linux's default); while a direction moves
 * full pipes its pipe grows to RELAY_PIPE_BIG (fewer splices, and fewer ACKs and pushes on
 * the sockets, per byte), and shrinks back when the direction parks. */
#define RELAY_PIPE (64 * 1024)
#ifndef RELAY_PIPE_BIG
#define RELAY_PIPE_BIG (1024 * 1024)
#endif
/* Pipe pages that grown pipes may hold together beyond their first 16 (each page counts
 * against the user's fs.pipe-user-pages-soft, past which Linux gives new pipes 2 pages): at
 * most half that limit, and at most this many. */
#define PIPE_GROWN_PAGES_MAX 8192
/* Idle pipes kept for the next direction that moves bytes (each holds two descriptors). */
#define PIPE_CACHE 64

struct tunnel;

/* One direction of a relay: bytes from `from` to `to`. While both directions wait for bytes
 * the tunnel has no task: each source socket is parked (vega_sock_park) and its readiness
 * starts a task that moves what came and parks again. */
struct dir {
    struct tunnel *t;
    vega_sock *from, *to;
    uint64_t *count;              /* bytes written to `to` (only this direction writes it) */
    atomic_uint_fast64_t *metric; /* the same bytes in the metrics */
    int pr, pw;                   /* the pipe splice moves through, while bytes move (-1: none) */
    size_t cap;                   /* its size in bytes (RELAY_PIPE, or RELAY_PIPE_BIG: grown) */
    bool no_grow;                 /* growing failed once: this direction stays at RELAY_PIPE */
    bool copy;                    /* splice is not possible here: recv and write through a buffer */
    char *buf; /* that buffer (RELAY_BUF bytes), while bytes move by copy (NULL: none) */
};

struct tunnel {
    struct proxy_server *srv;
    const struct proxy_opts *o;
    vega_sock *client, *dest;
    vega_stream *up_stream; /* --upstream: the tunnel through it (owns dest) */
    char peer[VEGA_ADDR_STRLEN];
    const char *proto; /* socks5, socks4, socks4a, http */
    char method[32];   /* CONNECT, GET, ... */
    char user[VEGA_PROXY_MAX_CRED + 1];
    char dest_name[VEGA_PROXY_MAX_NAME + 8];
    const char *result; /* for the log: ok, refused, ... */
    int kind;           /* enum proxy_kind once the request is parsed, else -1 (metrics) */
    uint64_t up, down;  /* bytes client -> destination, destination -> client */
    vega_tstamp start;
    _Atomic vega_tstamp last; /* the last time bytes moved either way (idle timeout) */
    bool up_failed;           /* the client -> destination direction ended in an error */
    bool finished;            /* the handshake served the client wholly (UDP ASSOCIATE) */
    uint8_t *hs;              /* HS_BUF bytes */
    size_t hs_len;
    bool relaying;        /* the handshake succeeded: the relay takes over */
    bool tls;             /* the client came through a tls:// listener (client is the bridge's) */
    bool held;            /* counted against t->user's --max-conns-per-user */
    struct dir dirs[2];   /* client -> destination, destination -> client */
    atomic_int live_dirs; /* directions not yet ended: the last one ends the tunnel */
    atomic_int err;       /* the first error that ended a direction (0: none) */
};

static void tunnel_end(struct tunnel *t);

/* The request is parsed: t is a tunnel of this kind in the metrics until it ends. */
static void set_kind(struct tunnel *t, enum proxy_kind k)
{
    t->kind = (int)k;
    metric_add(&proxy_metrics.active[k], 1);
    metric_add(&proxy_metrics.total[k], 1);
}

static vega_deadline idle_dl(const struct tunnel *t)
{
    return t->o->idle_ns ? vega_deadline_in_ns(t->o->idle_ns) : VEGA_DEADLINE_NEVER;
}

/* Reads more handshake bytes. Returns > 0, 0 at EOF, or an error. */
static vega_ssize hs_more(struct tunnel *t, size_t cap, vega_deadline dl)
{
    if (t->hs_len >= cap)
        return VEGA_ERR_NOBUF;
    vega_ssize n = vega_sock_read(t->client, t->hs + t->hs_len, cap - t->hs_len, dl);
    if (n > 0)
        t->hs_len += (size_t)n;
    return n;
}

/* Drops the first n handshake bytes (a message that was handled). */
static void hs_consume(struct tunnel *t, size_t n)
{
    memmove(t->hs, t->hs + n, t->hs_len - n);
    t->hs_len -= n;
}

static int send_all(vega_sock *s, const void *buf, size_t n, vega_deadline dl)
{
    vega_ssize w = vega_sock_write(s, buf, n, NULL, dl);
    return w < 0 ? (int)w : 0;
}

/* The words of the log for a connect error. */
static const char *connect_result(int err)
{
    switch (err) {
    case -ECONNREFUSED:
        return "refused";
    case -ETIMEDOUT:
        return "timeout";
    case -ENETUNREACH:
    case -EHOSTUNREACH:
        return "unreachable";
    case VEGA_ERR_DNS_NOT_FOUND:
    case VEGA_ERR_DNS_NO_ADDRESS:
    case VEGA_ERR_DNS_SERVER:
        return "unknown-host";
    case -EACCES:
        return "denied";
    case VEGA_ERR_PROXY_AUTH:
        return "upstream-auth";
    case VEGA_ERR_PROXY_REFUSED:
    case VEGA_ERR_PROXY_HANDSHAKE:
    case VEGA_ERR_PROXY_UNSUPPORTED:
    case VEGA_ERR_PROXY_RESOLVE:
        return "upstream-error";
    default:
        return "error";
    }
}

/* RFC 1928 §6's REP for a connect error. */
static uint8_t socks5_rep(int err)
{
    switch (err) {
    case -ENETUNREACH:
        return 3; /* Network unreachable */
    case -EHOSTUNREACH:
    case -ETIMEDOUT:
    case VEGA_ERR_DNS_NOT_FOUND:
    case VEGA_ERR_DNS_NO_ADDRESS:
    case VEGA_ERR_DNS_SERVER:
        return 4; /* Host unreachable */
    case -ECONNREFUSED:
        return 5; /* Connection refused */
    case -EACCES:
        return 2; /* connection not allowed by ruleset */
    default:
        return 1; /* general SOCKS server failure */
    }
}

/* The HTTP status for a connect error: 504 for a timeout, 403 for --deny-dest, 502 else. */
static int http_status(int err)
{
    return err == -ETIMEDOUT ? 504 : err == -EACCES ? 403 : 502;
}

/* --deny-dest before connecting: host is refused when a HOST or PORTS rule matches it as given,
 * or any of its addresses is (the first 16), so that a name cannot reach a denied address by
 * Happy Eyeballs' choice. Returns 0, -EACCES or a resolver error. */
static int dest_check(struct tunnel *t, const char *host, uint16_t port, vega_deadline dl)
{
    if (!dest_name_allowed(t->o, host, port))
        return -EACCES;
    vega_addr addrs[16];
    size_t n = 0;
    int r = vega_dns_lookup(t->srv->dns, host, AF_UNSPEC, addrs, 16, &n, dl);
    for (size_t i = 0; r == 0 && i < n; i++) {
        vega_addr_set_port(&addrs[i], port);
        if (!dest_allowed(t->o, &addrs[i]))
            r = -EACCES;
    }
    return r;
}

static bool is_dns_error(int r)
{
    return r == VEGA_ERR_DNS_NOT_FOUND || r == VEGA_ERR_DNS_NO_ADDRESS || r == VEGA_ERR_DNS_SERVER;
}

/* The upstream's refusal as the connect error it reports, so that the client gets the same
 * answer (SOCKS5 REP, HTTP status) it would get from a direct connect. */
static int upstream_error(int r, const vega_proxy_reply *rep)
{
    if (r != VEGA_ERR_PROXY_REFUSED)
        return r;
    if (rep->kind == VEGA_PROXY_HTTP)
        return rep->code == 403 ? -EACCES : rep->code == 504 ? -ETIMEDOUT : r;
    switch (rep->code) {
    case 2:
        return -EACCES;
    case 3:
        return -ENETUNREACH;
    case 4:
        return -EHOSTUNREACH;
    case 5:
        return -ECONNREFUSED;
    case 6:
        return -ETIMEDOUT; /* TTL expired */
    default:
        return r;
    }
}

/*
 * An https:// upstream's tunnel and a tls:// listener's client are TLS streams, which the
 * relay (splice and recv on descriptors, parks with no task) and the handshakes (reads on a
 * socket) cannot read. A socket pair stands in for each: the tunnel takes one end as its
 * destination or its client, and a bridge copies between the other end and the TLS stream,
 * passing half-closes on both ways (bounded: one RELAY_BUF each way). The bridge is two tasks: the
 * one that copies towards TLS owns everything; it spawns the other (TLS towards the pair) and joins
 * it at its end, cancelling it first after a failure. A failure the other way shuts the pair end
 * down, which wakes the owner. Either way the relay sees a failure as a reset.
 */
struct bridge {
    vega_stream *tls;
    vega_sock *end;  /* the bridge's end of the pair */
    vega_task *back; /* copies TLS -> end; joined by the owner */
    atomic_bool failed;
};

static void *bridge_back(void *arg)
{
    struct bridge *b = arg;
    char *buf = malloc(RELAY_BUF); /* on the heap: see dir_move */
    int r = buf ? 0 : -ENOMEM;
    while (r == 0) {
        vega_ssize n = vega_stream_read(b->tls, buf, RELAY_BUF, VEGA_DEADLINE_NEVER);
        if (n == 0) {
            r = vega_sock_shutdown(b->end, SHUT_WR); /* the destination's half-close */
            break;
        }
        if (n < 0) {
            r = (int)n;
            break;
        }
        vega_ssize w = vega_sock_write(b->end, buf, (size_t)n, NULL, VEGA_DEADLINE_NEVER);
        if (w < 0)
            r = (int)w;
    }
    free(buf);
    if (r < 0 && r != -ECANCELED) {
        atomic_store(&b->failed, true);
        vega_sock_shutdown(b->end, SHUT_RDWR); /* wakes the owner; the relay sees the reset */
    }
    return NULL;
}

/* True when the relay closed its end of the pair (both ways shut: POLLHUP), not only its
 * writing side. poll with no wait reads nothing. */
static bool bridge_hung_up(const struct bridge *b)
{
    struct pollfd p = {.fd = vega_sock_fd(b->end), .events = 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

/* After the relay's half-close: the other way goes on until the TLS peer ends it, or until the
 * relay closes its end (the tunnel ended: idle timeout, reset), which a TLS peer that never
 * closes would otherwise outlive. Checked once a second while waiting. Returns 0 or an error
 * (the caller then cancels and joins). */
static int bridge_drain(struct bridge *b)
{
    for (;;) {
        if (bridge_hung_up(b))
            return VEGA_ERR_CLOSED;
        int r = vega_task_join(b->back, NULL, vega_deadline_in_ms(1000));
        if (r == 0) {
            b->back = NULL;
            return 0;
        }
        if (r != -ETIMEDOUT)
            return r;
    }
}

static void *bridge_main(void *arg)
{
    struct bridge *b = arg;
    char *buf = malloc(RELAY_BUF);
    int r = buf ? vega_task_spawn(&b->back, bridge_back, b) : -ENOMEM;
    while (r == 0) {
        vega_ssize n = vega_sock_read(b->end, buf, RELAY_BUF, VEGA_DEADLINE_NEVER);
        if (n == 0 && atomic_load(&b->failed))
            break;
        if (n == 0) {
            /* the relay's half-close: TLS close_notify; the other way goes on */
            r = vega_stream_shutdown(b->tls, SHUT_WR, vega_deadline_in_ms(10000));
            if (r == 0)
                r = bridge_drain(b);
            break;
        }
        if (n < 0) {
            r = (int)n;
            break;
        }
        vega_ssize w = vega_stream_write(b->tls, buf, (size_t)n, NULL, VEGA_DEADLINE_NEVER);
        if (w < 0)
            r = (int)w;
    }
    free(buf);
    if (r < 0) {
        vega_sock_shutdown(b->end, SHUT_RDWR);
        if (b->back)
            vega_task_cancel(b->back);
    }
    if (b->back)
        vega_task_join(b->back, NULL, VEGA_DEADLINE_NEVER);
    vega_stream_close(b->tls, vega_deadline_in_ms(1000));
    vega_sock_close(b->end);
    free(b);
    return NULL;
}

/* Puts a bridge in front of the TLS stream tls (taken, also on failure): *mine becomes the
 * relay's end of a socket pair, whose bytes and half-closes reach tls and back. Used for an
 * https:// upstream (the destination side) and a tls:// listener (the client side). Returns 0
 * or -errno. */
static int bridge_open(vega_stream *tls, vega_sock **mine)
{
    struct bridge *b = calloc(1, sizeof *b);
    int r = b ? vega_sock_pair(SOCK_STREAM, mine, &b->end) : -ENOMEM;
    vega_task *task = NULL;
    if (r == 0) {
        b->tls = tls;
        r = vega_task_spawn(&task, bridge_main, b);
        if (r < 0) {
            vega_sock_close(*mine);
            vega_sock_close(b->end);
        }
    }
    if (r < 0) {
        vega_stream_close(tls, 0);
        free(b);
        *mine = NULL;
        return r;
    }
    vega_task_detach(task);
    return 0;
}

/* Connects to host:port through --upstream: dest is the socket to the upstream, under the
 * stream the proxy driver returned (no byte of the tunnel is read by the handshake); for an
 * https:// upstream, the relay's end of a bridge to the TLS stream. */
static int upstream_connect(struct tunnel *t, const char *host, uint16_t port, vega_deadline dl)
{
    vega_proxy_reply rep;
    int r = vega_proxy_connect(&t->up_stream, &t->o->up, host, port, &rep, dl);
    if (r == 0) {
        t->dest = vega_stream_sock(t->up_stream);
        if (t->dest)
            return 0;
        vega_stream *tls = t->up_stream;
        t->up_stream = NULL;
        r = bridge_open(tls, &t->dest);
        if (r < 0)
            cli_log(1, "%s: upstream bridge: %s", t->peer, vega_strerror(r));
        return r;
    }
    t->up_stream = NULL;
    if (rep.kind == VEGA_PROXY_NONE && !is_dns_error(r) && r != -ETIMEDOUT && r != -ECANCELED) {
        /* the upstream itself could not be reached: no word about the destination, so a
         * general failure (REP 1, 502) rather than the destination's "refused" */
        cli_log(1, "%s: upstream %s:%u: %s", t->peer, t->o->up.host, (unsigned)t->o->up.port,
                vega_strerror(r));
        t->result = "upstream-unreachable";
        return VEGA_ERR_PROXY_HANDSHAKE;
    }
    if (rep.code > 0 || rep.auth_method == 0xFF || rep.auth_status > 0)
        cli_log(1, "%s: upstream refused %s: %d %s", t->peer, t->dest_name, rep.code, rep.reason);
    return upstream_error(r, &rep);
}

/* Connects to host:port (Happy Eyeballs, the connect timeout), through --upstream if given. */
static int dest_connect(struct tunnel *t, const char *host, uint16_t port, bool v6)
{
    snprintf(t->dest_name, sizeof t->dest_name, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "",
             (unsigned)port);
    vega_deadline dl =
        t->o->connect_ns ? vega_deadline_in_ns(t->o->connect_ns) : VEGA_DEADLINE_NEVER;
    const struct proxy_opts *o = t->o;
    bool rules = dest_rules_any(o);
    int r = rules ? dest_check(t, host, port, dl) : 0;
    /* socks5h, socks4a, http and https upstreams resolve the name themselves: one we cannot
     * resolve here is theirs to judge (the address rules see only what resolves here) */
    if (o->upstream && o->up.kind != VEGA_PROXY_SOCKS5 && o->up.kind != VEGA_PROXY_SOCKS4 &&
        is_dns_error(r))
        r = 0;
    if (r == 0 && o->upstream) {
        r = upstream_connect(t, host, port, dl);
    } else if (r == 0) {
        r = vega_tcp_connect_host(&t->dest, t->srv->dns, host, port, NULL, dl);
        /* the name may have resolved anew (its TTL ran out): the address connected to decides */
        vega_addr peer;
        if (r == 0 && rules && vega_sock_peer_addr(t->dest, &peer) == 0 &&
            !dest_allowed(o, &peer)) {
            vega_sock_abort(t->dest);
            r = -EACCES;
        }
    }
    if (r < 0) {
        t->dest = NULL;
        if (!t->result)
            t->result = connect_result(r);
        if (r == -EACCES)
            metric_add(&proxy_metrics.denied_dest, 1);
        else
            metrics_connect_failed(t->result);
        cli_log(1, "%s: connect %s: %s", t->peer, t->dest_name, vega_strerror(r));
        return r;
    }
    vega_sock_set_nodelay(t->dest, true);
    return 0;
}

/* A SOCKS destination as a host string for the resolver. */
static void socks_host(const vega_proxy_addr *a, char *out, size_t cap, bool *v6)
{
    *v6 = a->type == VEGA_PROXY_ATYP_IPV6;
    if (a->type == VEGA_PROXY_ATYP_NAME)
        snprintf(out, cap, "%s", a->name);
    else
        inet_ntop(*v6 ? AF_INET6 : AF_INET, a->ip, out, (socklen_t)cap);
}

/* Reads one message with parser fn (a SOCKS parser) into the handshake buffer. Returns its
 * length, or an error (the client closed, timed out or sent a malformed message). */
#define READ_MSG(t, call, bound, dl)                                                               \
    ({                                                                                             \
        vega_ssize n_;                                                                             \
        for (;;) {                                                                                 \
            n_ = (call);                                                                           \
            if (n_ != 0)                                                                           \
                break;                                                                             \
            vega_ssize m_ = hs_more((t), (bound), (dl));                                           \
            if (m_ <= 0) {                                                                         \
                n_ = m_ == 0 ? VEGA_ERR_CLOSED : m_;                                               \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
        n_;                                                                                        \
    })

/* A SOCKS reply: SOCKS5 (REP and BND) or SOCKS4 (90/91 and DSTPORT/DSTIP; IPv4 only). */
static int socks_reply(struct tunnel *t, bool v5, int err, const vega_addr *bnd_addr,
                       vega_deadline dl)
{
    uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
    vega_proxy_addr bnd = {.type = VEGA_PROXY_ATYP_IPV4};
    if (bnd_addr)
        proxy_addr_from(bnd_addr, &bnd);
    vega_ssize w =
        v5 ? vega_proxy_socks5_reply_write(out, sizeof out, err ? socks5_rep(err) : 0,
                                           bnd_addr ? &bnd : NULL)
           : vega_proxy_socks4_reply_write(out, sizeof out, err ? 91 : 90, bnd_addr ? &bnd : NULL);
    return w < 0 ? (int)w : send_all(t->client, out, (size_t)w, dl);
}

/* True when the client closed (or reset) its connection: its end of stream is there to be
 * read. poll with no wait reads nothing. */
static bool client_gone(const struct tunnel *t)
{
    struct pollfd p = {.fd = vega_sock_fd(t->client), .events = POLLRDHUP};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* The local address this host would use towards dst (a connected UDP socket sends nothing),
 * with port 0: where a BIND listens. Returns 0 or -errno. */
static int local_toward(const vega_addr *dst, vega_addr *out)
{
    int fd = socket(dst->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    vega_addr d = *dst;
    if (vega_addr_port(&d) == 0)
        vega_addr_set_port(&d, 9); /* connect needs a port; nothing is sent */
    socklen_t len = sizeof out->ss;
    int r = connect(fd, (struct sockaddr *)&d.ss, d.len) < 0 ||
                    getsockname(fd, (struct sockaddr *)&out->ss, &len) < 0
                ? -errno
                : 0;
    close(fd);
    if (r == 0) {
        out->len = len;
        vega_addr_set_port(out, 0);
    }
    return r;
}

/* BIND through a SOCKS upstream: the first reply, the upstream's listening address, goes to
 * the client from here (inside the proxy driver's task, before it waits for the peer). */
struct bind_up {
    struct tunnel *t;
    bool v5, first_sent;
    int err;
};

static void bind_up_reply(void *user, const vega_proxy_reply *r)
{
    struct bind_up *b = user;
    /* the upstream's protocol says what granted is, the client's how to answer */
    bool up4 = b->t->o->up.kind == VEGA_PROXY_SOCKS4 || b->t->o->up.kind == VEGA_PROXY_SOCKS4A;
    if (b->first_sent || r->code != (up4 ? 90 : 0))
        return; /* the second reply, or a refusal: answered after the call */
    b->first_sent = true;
    uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
    vega_proxy_addr bnd = r->bound;
    if (!b->v5 && bnd.type != VEGA_PROXY_ATYP_IPV4)
        bnd.type = VEGA_PROXY_ATYP_NONE; /* SOCKS4 carries IPv4 only */
    vega_ssize w = b->v5 ? vega_proxy_socks5_reply_write(out, sizeof out, 0, &bnd)
                         : vega_proxy_socks4_reply_write(out, sizeof out, 90, &bnd);
    /* a few bytes on a connection that has sent nothing else: no wait (it must not suspend) */
    b->err = w < 0 ? (int)w : send_all(b->t->client, out, (size_t)w, 0);
}

/* The client's BIND through --upstream (SOCKS only): vega_proxy_bind with the upstream's two
 * replies passed on (the first by bind_up_reply), then the relay over the upstream's socket.
 * The wait for the peer is bounded by the idle timeout. */
static int upstream_bind(struct tunnel *t, const char *host, uint16_t port, bool v5,
                         vega_deadline dl)
{
    /* --deny-dest: as for a CONNECT through the upstream (a name the upstream resolves
     * itself is its to judge) */
    int r = dest_rules_any(t->o) ? dest_check(t, host, port, dl) : 0;
    if (is_dns_error(r))
        r = 0;
    if (r < 0) {
        t->result = r == -EACCES ? "denied" : connect_result(r);
        if (r == -EACCES)
            metric_add(&proxy_metrics.denied_dest, 1);
        socks_reply(t, v5, r, NULL, dl);
        return r;
    }
    struct bind_up b = {.t = t, .v5 = v5};
    vega_proxy_opts p = t->o->up; /* a copy: the callback is this tunnel's */
    p.on_reply = bind_up_reply;
    p.trace = NULL;
    p.trace_user = &b;
    vega_proxy_reply rep;
    r = vega_proxy_bind(&t->up_stream, &p, host, port, &rep, idle_dl(t));
    if (r == 0 && b.err < 0)
        r = b.err;
    if (r == 0 && !(t->dest = vega_stream_sock(t->up_stream)))
        r = VEGA_ERR_INTERNAL; /* SOCKS streams are plain sockets */
    if (r < 0) {
        if (t->up_stream)
            vega_stream_close(t->up_stream, 0);
        t->up_stream = NULL;
        t->dest = NULL;
        t->result = b.err < 0                                        ? "error"
                    : rep.kind == VEGA_PROXY_NONE && r != -ETIMEDOUT ? "upstream-unreachable"
                    : r == -ETIMEDOUT                                ? "timeout"
                                      : connect_result(upstream_error(r, &rep));
        cli_log(1, "%s: bind through the upstream for %s: %s", t->peer, t->dest_name,
                vega_strerror(r));
        /* the failure, as the first reply or as the second */
        socks_reply(t, v5, r == VEGA_ERR_PROXY_REFUSED ? upstream_error(r, &rep) : r, NULL,
                    idle_dl(t));
        return r;
    }
    /* the second reply: the peer, as the upstream saw it */
    uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
    vega_proxy_addr bnd = rep.bound;
    if (!v5 && bnd.type != VEGA_PROXY_ATYP_IPV4)
        bnd.type = VEGA_PROXY_ATYP_NONE;
    vega_ssize w = v5 ? vega_proxy_socks5_reply_write(out, sizeof out, 0, &bnd)
                      : vega_proxy_socks4_reply_write(out, sizeof out, 90, &bnd);
    if (bnd.type == VEGA_PROXY_ATYP_IPV4 || bnd.type == VEGA_PROXY_ATYP_IPV6) {
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(bnd.type == VEGA_PROXY_ATYP_IPV6 ? AF_INET6 : AF_INET, bnd.ip, ip, sizeof ip);
        snprintf(t->dest_name, sizeof t->dest_name,
                 bnd.type == VEGA_PROXY_ATYP_IPV6 ? "[%s]:%u" : "%s:%u", ip, (unsigned)bnd.port);
    }
    vega_sock_set_nodelay(t->dest, true);
    return w < 0 ? (int)w : send_all(t->client, out, (size_t)w, idle_dl(t));
}

/* An upstream's scheme, for the log. */
static const char *up_scheme(vega_proxy_kind k)
{
    switch (k) {
    case VEGA_PROXY_HTTP:
        return "http://";
    case VEGA_PROXY_HTTPS:
        return "https://";
    case VEGA_PROXY_SOCKS4:
        return "socks4://";
    case VEGA_PROXY_SOCKS4A:
        return "socks4a://";
    case VEGA_PROXY_SOCKS5:
        return "socks5://";
    case VEGA_PROXY_SOCKS5H:
        return "socks5h://";
    default:
        return "-";
    }
}

/*
 * BIND (RFC 1928 §4 and SOCKS4's): for protocols whose server connects back (FTP active mode).
 * A listening port on the address the proxy uses towards DST; the first reply gives it; one
 * connection is accepted, only from DST.ADDR's IP (any when DST.ADDR is 0.0.0.0 or ::, as dante
 * does; others are closed and waited past), within the idle timeout; the second reply gives
 * the peer's address, and the relay takes the client and that connection. DST.PORT is not
 * checked (clients send 0 or their own data port). A name is resolved here. Through a SOCKS
 * --upstream the upstream listens (upstream_bind); through an HTTP one BIND is refused
 * (REP 7 / 91): the connection would not come through the upstream.
 */
static int do_bind(struct tunnel *t, const vega_proxy_server_request *req, bool v5,
                   vega_deadline dl)
{
    char host[VEGA_PROXY_MAX_NAME + 1];
    bool v6;
    socks_host(&req->dst, host, sizeof host, &v6);
    if (v6)
        snprintf(t->dest_name, sizeof t->dest_name, "[%.46s]:%u", host, (unsigned)req->dst.port);
    else
        snprintf(t->dest_name, sizeof t->dest_name, "%s:%u", host, (unsigned)req->dst.port);
    if (t->o->upstream && t->o->up.kind != VEGA_PROXY_HTTP && t->o->up.kind != VEGA_PROXY_HTTPS)
        return upstream_bind(t, host, req->dst.port, v5, dl);
    if (t->o->upstream) {
        cli_log(1,
                "%s: bind for %s refused (%s): the %s upstream cannot accept a connection for it",
                t->peer, t->dest_name, v5 ? "REP 7" : "91", up_scheme(t->o->up.kind));
        t->result = "unsupported";
        int r = VEGA_ERR_PROXY_UNSUPPORTED;
        if (v5) {
            uint8_t out[16];
            vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, 7, NULL);
            send_all(t->client, out, (size_t)w, dl);
        } else {
            socks_reply(t, false, r, NULL, dl);
        }
        return r;
    }
    vega_addr want;
    size_t n = 0;
    int r = dest_name_allowed(t->o, host, req->dst.port)
                ? vega_dns_lookup(t->srv->dns, host, AF_UNSPEC, &want, 1, &n, dl)
                : -EACCES;
    if (r == 0 && n == 0)
        r = VEGA_ERR_DNS_NO_ADDRESS;
    if (r == 0) {
        vega_addr_set_port(&want, req->dst.port);
        if (dest_rules_any(t->o) && !dest_allowed(t->o, &want))
            r = -EACCES;
    }
    vega_addr at;
    vega_sock *ls = NULL;
    if (r == 0)
        r = local_toward(&want, &at);
    if (r == 0)
        r = vega_tcp_listen(&ls, &at, 1, 0);
    if (r == 0 && (r = vega_sock_local_addr(ls, &at)) < 0)
        vega_sock_close(ls);
    if (r < 0) {
        t->result = r == -EACCES ? "denied" : connect_result(r);
        if (r == -EACCES)
            metric_add(&proxy_metrics.denied_dest, 1);
        cli_log(1, "%s: bind for %s: %s", t->peer, t->dest_name, vega_strerror(r));
        socks_reply(t, v5, r, NULL, dl);
        return r;
    }
    r = socks_reply(t, v5, 0, &at, dl); /* the first reply: where the peer is to connect */
    vega_proxy_addr w;
    proxy_addr_from(&want, &w);
    static const uint8_t zero[16];
    bool any = memcmp(w.ip, zero, w.type == VEGA_PROXY_ATYP_IPV6 ? 16 : 4) == 0;
    vega_addr peer;
    vega_deadline end = idle_dl(t);
    while (r == 0) {
        /* a second at a time: a client that closed meanwhile ends the wait (and the port) */
        vega_deadline slice = vega_deadline_in_ms(1000);
        r = vega_tcp_accept(ls, &t->dest, &peer, slice < end ? slice : end);
        if (r == -ETIMEDOUT && slice < end) {
            r = client_gone(t) ? VEGA_ERR_CLOSED : 0;
            continue;
        }
        if (r == 0 && !any && !addr_same_ip(&peer, &want)) {
            char who[VEGA_ADDR_STRLEN];
            vega_addr_format(&peer, who, sizeof who);
            cli_log(1, "%s: bind: a connection from %s, not %s: closed", t->peer, who, host);
            vega_sock_abort(t->dest);
            t->dest = NULL;
            continue;
        }
        break;
    }
    vega_sock_close(ls);
    if (r < 0) {
        t->dest = NULL;
        t->result = r == -ETIMEDOUT        ? "timeout"
                    : r == -ECANCELED      ? "stopped"
                    : r == VEGA_ERR_CLOSED ? "closed"
                                           : "error";
        socks_reply(t, v5, r, NULL, dl); /* the second reply: the failure */
        return r;
    }
    vega_addr_format(&peer, t->dest_name, sizeof t->dest_name);
    vega_sock_set_nodelay(t->dest, true);
    return socks_reply(t, v5, 0, &peer, dl); /* the second reply: who connected */
}

/* Counts the tunnel against its user's --max-conns-per-user. Returns 0, -EUSERS (the refusal
 * counted) or -ENOMEM; the log's result is set on failure. */
static int hold_user(struct tunnel *t)
{
    int r = users_hold(t->o, t->user);
    if (r < 0) {
        t->result = r == -EUSERS ? "user-limit" : "error";
        if (r == -EUSERS) {
            metric_add(&proxy_metrics.user_limit, 1);
            cli_log(1, "%s: user '%s' holds %llu tunnels already (--max-conns-per-user)", t->peer,
                    t->user, (unsigned long long)t->o->max_per_user);
        }
        return r;
    }
    t->held = t->o->max_per_user != 0;
    return 0;
}

/* The SOCKS5 handshake up to a connected destination and the success reply. */
static int do_socks5(struct tunnel *t, vega_deadline dl)
{
    t->proto = "socks5";
    uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
    uint32_t offered;
    vega_ssize n =
        READ_MSG(t, vega_proxy_socks5_greeting_parse(t->hs, t->hs_len, &offered), HS_BUF, dl);
    if (n < 0) {
        t->result = "bad-request";
        return (int)n;
    }
    hs_consume(t, (size_t)n);
    /* RFC 1928 §3: choose one of the methods offered, or X'FF' */
    uint8_t method = users_required(t->o)                              ? VEGA_PROXY_METHOD_USERPASS
                     : (offered & (1u << VEGA_PROXY_METHOD_NONE)) != 0 ? VEGA_PROXY_METHOD_NONE
                                                                       : 0xFF;
    if (method == 0xFF || !(offered & (1u << method)))
        method = VEGA_PROXY_METHOD_UNACCEPTABLE;
    vega_proxy_socks5_method_write(out, sizeof out, method);
    int r = send_all(t->client, out, 2, dl);
    if (r < 0)
        return r;
    if (method == VEGA_PROXY_METHOD_UNACCEPTABLE) {
        t->result = "auth-failed";
        return -EACCES;
    }
    if (method == VEGA_PROXY_METHOD_USERPASS) {
        vega_proxy_credentials c;
        n = READ_MSG(t, vega_proxy_socks5_auth_parse(t->hs, t->hs_len, &c), HS_BUF, dl);
        if (n < 0) {
            t->result = "bad-request";
            return (int)n;
        }
        hs_consume(t, (size_t)n);
        snprintf(t->user, sizeof t->user, "%s", c.user);
        int ok = creds_check(t->o, c.user, c.password);
        vega_crypto_cleanse(&c, sizeof c);
        /* RFC 1929 §2: a STATUS other than X'00' means failure, and the server closes */
        vega_proxy_socks5_auth_reply_write(out, sizeof out, ok == 1 ? 0 : 1);
        r = send_all(t->client, out, 2, dl);
        if (r < 0)
            return r;
        if (ok != 1) {
            t->result = ok < 0 ? "auth-busy" : "auth-failed";
            return -EACCES;
        }
    }
    vega_proxy_server_request req;
    n = READ_MSG(t, vega_proxy_socks5_request_parse(t->hs, t->hs_len, &req), HS_BUF, dl);
    if (n == VEGA_ERR_PROXY_UNSUPPORTED) {
        /* X'08' Address type not supported */
        vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, 8, NULL);
        send_all(t->client, out, (size_t)w, dl);
        t->result = "bad-request";
        return (int)n;
    }
    if (n < 0) {
        t->result = "bad-request";
        return (int)n;
    }
    hs_consume(t, (size_t)n);
    set_kind(t, req.command == VEGA_PROXY_CMD_UDP_ASSOCIATE ? PROXY_KIND_UDP : PROXY_KIND_SOCKS5);
    snprintf(t->method, sizeof t->method, "%s",
             req.command == 1   ? "CONNECT"
             : req.command == 2 ? "BIND"
                                : "UDP");
    int held = method == VEGA_PROXY_METHOD_USERPASS ? hold_user(t) : 0;
    if (held < 0) {
        /* X'02' connection not allowed by ruleset; X'01' general failure (no memory) */
        vega_ssize w =
            vega_proxy_socks5_reply_write(out, sizeof out, held == -EUSERS ? 2 : 1, NULL);
        send_all(t->client, out, (size_t)w, dl);
        return held;
    }
    if (req.command == VEGA_PROXY_CMD_UDP_ASSOCIATE && t->o->upstream &&
        t->o->up.kind != VEGA_PROXY_SOCKS5 && t->o->up.kind != VEGA_PROXY_SOCKS5H) {
        /* only a SOCKS5 upstream carries datagrams; else they would leave from here, not
         * through the upstream: X'07' rather than a relay that bypasses it */
        cli_log(1, "%s: udp associate refused (REP 7): the %s upstream cannot carry datagrams",
                t->peer, up_scheme(t->o->up.kind));
        vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, 7, NULL);
        send_all(t->client, out, (size_t)w, dl);
        t->result = "unsupported";
        return VEGA_ERR_PROXY_UNSUPPORTED;
    }
    if (req.command == VEGA_PROXY_CMD_UDP_ASSOCIATE) {
        struct udp_report rep = {.result = NULL};
        r = udp_associate(&rep, t->srv, t->client, &req.dst, dl);
        snprintf(t->dest_name, sizeof t->dest_name, "%s", rep.relay[0] ? rep.relay : "-");
        t->up = rep.up;
        t->down = rep.down;
        metric_add(&proxy_metrics.bytes_up, rep.up);
        metric_add(&proxy_metrics.bytes_down, rep.down);
        t->result = rep.result;
        if (rep.dropped)
            cli_log(1, "%s: udp: %llu datagrams dropped", t->peer, (unsigned long long)rep.dropped);
        t->finished = true;
        return r;
    }
    if (req.command == VEGA_PROXY_CMD_BIND)
        return do_bind(t, &req, true, dl);
    if (req.command != VEGA_PROXY_CMD_CONNECT) {
        /* X'07' Command not supported */
        vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, 7, NULL);
        send_all(t->client, out, (size_t)w, dl);
        t->result = "unsupported";
        return VEGA_ERR_PROXY_UNSUPPORTED;
    }
    char host[VEGA_PROXY_MAX_NAME + 1];
    bool v6;
    socks_host(&req.dst, host, sizeof host, &v6);
    r = dest_connect(t, host, req.dst.port, v6);
    vega_proxy_addr bnd = {.type = VEGA_PROXY_ATYP_IPV4};
    vega_addr local;
    if (r == 0 && vega_sock_local_addr(t->dest, &local) == 0) {
        if (local.ss.ss_family == AF_INET) {
            memcpy(bnd.ip, &((struct sockaddr_in *)&local.ss)->sin_addr, 4);
        } else if (local.ss.ss_family == AF_INET6) {
            bnd.type = VEGA_PROXY_ATYP_IPV6;
            memcpy(bnd.ip, &((struct sockaddr_in6 *)&local.ss)->sin6_addr, 16);
        }
        bnd.port = vega_addr_port(&local);
    }
    vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, r == 0 ? 0 : socks5_rep(r), &bnd);
    int s = send_all(t->client, out, (size_t)w, dl);
    return r < 0 ? r : s;
}

/* SOCKS4 and SOCKS4a: no password, so a proxy with credentials refuses them. */
static int do_socks4(struct tunnel *t, vega_deadline dl)
{
    t->proto = "socks4";
    uint8_t out[8];
    vega_proxy_server_request req;
    vega_ssize n = READ_MSG(t, vega_proxy_socks4_request_parse(t->hs, t->hs_len, &req), HS_BUF, dl);
    if (n < 0) {
        t->result = "bad-request";
        return (int)n;
    }
    hs_consume(t, (size_t)n);
    set_kind(t, PROXY_KIND_SOCKS4);
    if (req.dst.type == VEGA_PROXY_ATYP_NAME)
        t->proto = "socks4a";
    snprintf(t->user, sizeof t->user, "%s", req.userid);
    snprintf(t->method, sizeof t->method, "%s", req.command == 1 ? "CONNECT" : "BIND");
    int r = 0;
    if (users_required(t->o)) {
        t->result = "auth-failed";
        r = -EACCES;
    } else if (req.command == VEGA_PROXY_CMD_BIND) {
        return do_bind(t, &req, false, dl);
    } else if (req.command != 1) {
        t->result = "unsupported";
        r = VEGA_ERR_PROXY_UNSUPPORTED;
    } else {
        char host[VEGA_PROXY_MAX_NAME + 1];
        bool v6;
        socks_host(&req.dst, host, sizeof host, &v6);
        r = dest_connect(t, host, req.dst.port, false);
    }
    vega_proxy_socks4_reply_write(out, sizeof out, r == 0 ? 90 : 91, NULL);
    int s = send_all(t->client, out, 8, dl);
    return r < 0 ? r : s;
}

static void http_reply(struct tunnel *t, int status, vega_deadline dl)
{
    char out[256];
    vega_ssize w = vega_proxy_http_reply_write(out, sizeof out, status, "vega-proxy");
    if (w > 0)
        send_all(t->client, out, (size_t)w, dl);
}

/* HTTP: CONNECT, or a request in absolute-form forwarded to its origin. */
static int do_http(struct tunnel *t, vega_deadline dl)
{
    t->proto = "http";
    size_t max = t->o->max_head;
    vega_proxy_http_request req;
    vega_ssize n = READ_MSG(
        t, vega_proxy_http_request_parse((const char *)t->hs, t->hs_len, max, &req), max, dl);
    if (n < 0) {
        t->result = "bad-request";
        if (n == VEGA_ERR_NOBUF)
            http_reply(t, 431, dl);
        else if (n == VEGA_ERR_PROXY_UNSUPPORTED)
            http_reply(t, 501, dl);
        else if (n == VEGA_ERR_PROXY_HANDSHAKE)
            http_reply(t, 400, dl);
        return (int)n;
    }
    snprintf(t->method, sizeof t->method, "%s", req.method);
    set_kind(t, req.connect ? PROXY_KIND_CONNECT : PROXY_KIND_FORWARD);
    if (req.auth_basic)
        snprintf(t->user, sizeof t->user, "%s", req.cred.user);
    if (users_required(t->o)) {
        int ok = req.auth_basic ? creds_check(t->o, req.cred.user, req.cred.password) : 0;
        vega_crypto_cleanse(&req.cred, sizeof req.cred);
        if (ok != 1) {
            /* RFC 9110 §15.5.8: 407 with a Proxy-Authenticate challenge; a check that could
             * not run is the proxy's trouble, not the client's: 503 */
            http_reply(t, ok < 0 ? 503 : 407, dl);
            t->result = ok < 0 ? "auth-busy" : "auth-failed";
            return -EACCES;
        }
        int held = hold_user(t);
        if (held < 0) {
            /* RFC 6585 §4: too many requests, here tunnels, from this user */
            http_reply(t, held == -EUSERS ? 429 : 500, dl);
            return held;
        }
    }
    int r = dest_connect(t, req.host, req.port, req.host_ipv6);
    if (r < 0) {
        http_reply(t, http_status(r), dl);
        return r;
    }
    if (req.connect) {
        hs_consume(t, (size_t)n);
        char out[64];
        vega_ssize w = vega_proxy_http_reply_write(out, sizeof out, 200, NULL);
        return send_all(t->client, out, (size_t)w, dl);
    }
    /* forwarding: the origin gets the head in origin-form; the rest (a body) follows as is */
    char *fwd = malloc(max + 1024);
    if (!fwd) {
        http_reply(t, 500, dl);
        return -ENOMEM;
    }
    vega_ssize w = vega_proxy_http_forward_head_write(fwd, max + 1024, (const char *)t->hs, &req);
    if (w < 0) {
        free(fwd);
        http_reply(t, w == VEGA_ERR_NOBUF ? 431 : 500, dl);
        t->result = "bad-request";
        return (int)w;
    }
    hs_consume(t, (size_t)n);
    r = send_all(t->dest, fwd, (size_t)w, dl);
    free(fwd);
    if (r == 0) {
        t->up += (uint64_t)w;
        metric_add(&proxy_metrics.bytes_up, (uint64_t)w);
    }
    return r;
}

/* The pipes of idle directions: an idle tunnel holds none, an active one takes one per
 * direction from here (bounded: PIPE_CACHE, the rest are closed). */
static struct {
    pthread_mutex_t mu;
    int fds[PIPE_CACHE][2];
    size_t n;
} pipes = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Extra pages held by grown pipes, and the most they may hold (pipe_budget_init); the most
 * they ever held, pipes grown and growths refused for the budget (--metrics). */
static atomic_size_t pipe_grown_pages, pipe_grown_peak;
static atomic_uint_fast64_t pipes_grown, pipe_grow_refused;
static size_t pipe_grown_max;
static pthread_once_t pipe_budget_once = PTHREAD_ONCE_INIT;

/* The budget: half of fs.pipe-user-pages-soft, at most PIPE_GROWN_PAGES_MAX; for tests,
 * VEGA_PROXY_PIPE_PAGES=N lowers it to N pages (never raises it), so that a few tunnels can
 * run more active directions than it allows. */
static void pipe_budget_init(void)
{
    size_t soft = 16384; /* Linux's default fs.pipe-user-pages-soft */
    FILE *f = fopen("/proc/sys/fs/pipe-user-pages-soft", "re");
    if (f) {
        unsigned long v;
        if (fscanf(f, "%lu", &v) == 1 && v > 0)
            soft = v;
        fclose(f);
    }
    pipe_grown_max = soft / 2 < PIPE_GROWN_PAGES_MAX ? soft / 2 : PIPE_GROWN_PAGES_MAX;
    const char *env = getenv("VEGA_PROXY_PIPE_PAGES");
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (errno == 0 && *end == '\0' && v < pipe_grown_max)
            pipe_grown_max = (size_t)v;
    }
}

void relay_pipe_stats(struct pipe_stats *st)
{
    pthread_once(&pipe_budget_once, pipe_budget_init);
    st->budget_pages = pipe_grown_max;
    st->grown_pages = atomic_load(&pipe_grown_pages);
    st->peak_pages = atomic_load(&pipe_grown_peak);
    st->grown = atomic_load(&pipes_grown);
    st->refused = atomic_load(&pipe_grow_refused);
}

/* Grows d's (empty or full) pipe to RELAY_PIPE_BIG when the budget has room; else, or when
 * the kernel refuses (fs.pipe-max-size, the user's pipe pages), it stays as it is. */
static void pipe_grow(struct dir *d)
{
    size_t extra = (RELAY_PIPE_BIG - RELAY_PIPE) / 4096;
    pthread_once(&pipe_budget_once, pipe_budget_init);
    size_t held = atomic_load(&pipe_grown_pages);
    do {
        if (held + extra > pipe_grown_max) {
            metric_add(&pipe_grow_refused, 1);
            d->no_grow = true;
            return;
        }
    } while (!atomic_compare_exchange_weak(&pipe_grown_pages, &held, held + extra));
    if (fcntl(d->pw, F_SETPIPE_SZ, RELAY_PIPE_BIG) < RELAY_PIPE_BIG) {
        atomic_fetch_sub(&pipe_grown_pages, extra);
        d->no_grow = true;
        return;
    }
    /* the peak: what this growth made the total, if no other was higher */
    size_t peak = atomic_load(&pipe_grown_peak);
    while (held + extra > peak &&
           !atomic_compare_exchange_weak(&pipe_grown_peak, &peak, held + extra))
        ;
    metric_add(&pipes_grown, 1);
    d->cap = RELAY_PIPE_BIG;
}

static int pipe_get(struct dir *d)
{
    int p[2] = {-1, -1};
    pthread_mutex_lock(&pipes.mu);
    if (pipes.n > 0) {
        pipes.n--;
        p[0] = pipes.fds[pipes.n][0];
        p[1] = pipes.fds[pipes.n][1];
    }
    pthread_mutex_unlock(&pipes.mu);
    if (p[0] < 0 && pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    d->pr = p[0];
    d->pw = p[1];
    d->cap = RELAY_PIPE;
    return 0;
}

/* Gives d's pipe back: to the cache when empty (clean) and back at RELAY_PIPE, else closed;
 * a grown pipe's pages go back to the budget either way. */
static void pipe_put(struct dir *d, bool clean)
{
    if (d->pr < 0)
        return;
    if (d->cap > RELAY_PIPE) {
        if (clean && fcntl(d->pw, F_SETPIPE_SZ, RELAY_PIPE) != RELAY_PIPE)
            clean = false;
        atomic_fetch_sub(&pipe_grown_pages, (d->cap - RELAY_PIPE) / 4096);
        d->cap = RELAY_PIPE;
    }
    bool kept = false;
    if (clean) {
        pthread_mutex_lock(&pipes.mu);
        if (pipes.n < PIPE_CACHE) {
            pipes.fds[pipes.n][0] = d->pr;
            pipes.fds[pipes.n][1] = d->pw;
            pipes.n++;
            kept = true;
        }
        pthread_mutex_unlock(&pipes.mu);
    }
    if (!kept) {
        close(d->pr);
        close(d->pw);
    }
    d->pr = d->pw = -1;
}

/* Writes the n bytes the pipe holds to `to`, waiting while its buffer is full. */
static int splice_out(struct dir *d, int to, size_t n)
{
    while (n > 0) {
        ssize_t m = splice(d->pr, NULL, to, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (m > 0) {
            n -= (size_t)m;
            *d->count += (uint64_t)m;
            metric_add(d->metric, (uint64_t)m);
            continue;
        }
        int e = m < 0 ? errno : EIO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN)
            return -e;
        int r = vega_fd_poll(to, POLLOUT, idle_dl(d->t));
        if (r < 0)
            return r;
    }
    return 0;
}

/* Moves what `from` has. Returns 1 (nothing more now: park), 0 (end of stream), or an error. */
static int dir_move(struct dir *d)
{
    struct tunnel *t = d->t;
    int from = vega_sock_fd(d->from), to = vega_sock_fd(d->to);
    for (;;) {
        if (atomic_load(&t->err))
            return VEGA_ERR_CLOSED; /* the other direction failed: both end */
        int r = vega_coop();
        if (r < 0)
            return r;
        if (!d->copy && d->pr < 0 && (r = pipe_get(d)) < 0) {
            d->copy = true; /* out of descriptors: copying still works */
            cli_log(2, "%s: no pipe for splice (%s): copying", t->peer, vega_strerror(r));
        }
        /* the copy buffer is on the heap, not the stack: a task that went below its stack's
         * kept top 16 KiB has its pages given back when it ends (a madvise, a TLB flush on
         * every CPU), which cost each tunnel and each relay wakeup a third of its CPU */
        if (d->copy && !d->buf && !(d->buf = malloc(RELAY_BUF)))
            return -ENOMEM;
        ssize_t n;
        if (d->copy)
            n = recv(from, d->buf, RELAY_BUF, MSG_DONTWAIT);
        else
            n = splice(from, NULL, d->pw, NULL, d->cap, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n == 0)
            return 0;
        if (n < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK)
                return 1;
            if (e == EINVAL && !d->copy) {
                /* a socket splice cannot read: copy from now on */
                pipe_put(d, true);
                d->copy = true;
                continue;
            }
            return -e;
        }
        if (d->copy) {
            vega_ssize w = vega_sock_write(d->to, d->buf, (size_t)n, NULL, idle_dl(t));
            if (w < 0)
                return (int)w;
            *d->count += (uint64_t)n;
            metric_add(d->metric, (uint64_t)n);
        } else if ((r = splice_out(d, to, (size_t)n)) < 0) {
            return r;
        } else if ((size_t)n == d->cap && d->cap < RELAY_PIPE_BIG && !d->no_grow) {
            pipe_grow(d); /* a full pipe: bytes flow faster than it moves them */
        }
        atomic_store(&t->last, vega_now());
    }
}

/* A direction is over: after its end of stream (passed on as a half-close) or an error (both
 * sockets are shut down, which wakes the other direction wherever it waits). */
static void dir_end(struct dir *d, int r)
{
    struct tunnel *t = d->t;
    pipe_put(d, r == 0);
    free(d->buf);
    d->buf = NULL;
    if (r == 0) {
        vega_sock_shutdown(d->to, SHUT_WR); /* the half-close reaches the other side */
    } else {
        int none = 0;
        atomic_compare_exchange_strong(&t->err, &none, r);
        vega_sock_shutdown(t->client, SHUT_RDWR);
        vega_sock_shutdown(t->dest, SHUT_RDWR);
    }
    if (atomic_fetch_sub(&t->live_dirs, 1) == 1)
        tunnel_end(t);
}

static void dir_ready(vega_sock *s, void *arg, int status);

/* Parks d's source with no task; d and its tunnel may be gone once this returns. */
static void dir_park(struct dir *d, vega_deadline dl)
{
    pipe_put(d, true); /* empty: the pipe is drained before each read */
    free(d->buf);      /* an idle direction holds no buffer either */
    d->buf = NULL;
    int r = vega_sock_park(d->from, dir_ready, d, dl);
    if (r < 0)
        dir_end(d, r);
}

static void dir_pump(struct dir *d)
{
    int r = dir_move(d);
    if (r == 1)
        dir_park(d, idle_dl(d->t));
    else
        dir_end(d, r);
}

static void dir_ready(vega_sock *s, void *arg, int status)
{
    (void)s;
    struct dir *d = arg;
    struct tunnel *t = d->t;
    if (status == -ETIMEDOUT) {
        /* idle this long: the tunnel ends only when the other direction idled too */
        uint64_t idle = vega_now() - atomic_load(&t->last);
        if (idle < t->o->idle_ns && !atomic_load(&t->err))
            dir_park(d, vega_deadline_in_ns(t->o->idle_ns - idle));
        else
            dir_end(d, -ETIMEDOUT);
        return;
    }
    if (status < 0) {
        dir_end(d, status);
        return;
    }
    dir_pump(d);
}

static void *dir_task(void *arg)
{
    dir_pump(arg);
    return NULL;
}

/* Starts relaying both directions of t, which the relay then owns (tunnel_end frees it). */
static void relay_start(struct tunnel *t)
{
    /* splice and recv read the descriptors: their parks must not receive into the ring */
    vega_sock_set_direct_read(t->client);
    vega_sock_set_direct_read(t->dest);
    atomic_store(&t->last, vega_now());
    atomic_store(&t->live_dirs, 2);
    t->dirs[0] = (struct dir){.t = t,
                              .from = t->client,
                              .to = t->dest,
                              .count = &t->up,
                              .metric = &proxy_metrics.bytes_up,
                              .pr = -1,
                              .pw = -1,
                              .copy = t->o->no_splice};
    t->dirs[1] = (struct dir){.t = t,
                              .from = t->dest,
                              .to = t->client,
                              .count = &t->down,
                              .metric = &proxy_metrics.bytes_down,
                              .pr = -1,
                              .pw = -1,
                              .copy = t->o->no_splice};
    vega_task *down;
    int r = vega_task_spawn(&down, dir_task, &t->dirs[1]);
    if (r == 0)
        vega_task_detach(down);
    else
        dir_end(&t->dirs[1], r);
    dir_pump(&t->dirs[0]);
}

/* s as the inside of a JSON string (RFC 8259 §7): quotes, backslashes and control bytes
 * escaped; other bytes as they are (a user name is whatever the client sent). */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\u%04x", c); /* non-ASCII too: the line stays valid UTF-8 */
        else
            fputc(c, f);
    }
}

/* The access log line: one per tunnel, when it ends (--log-format text or json). */
static void log_line(const struct tunnel *t)
{
    double secs = (double)(vega_now() - t->start) / 1e9;
    const char *user = t->user[0] ? t->user : "-";
    char proto[32]; /* "socks5", "http+tls", ... */
    if (t->proto)
        snprintf(proto, sizeof proto, "%s%s", t->proto, t->tls ? "+tls" : "");
    else
        snprintf(proto, sizeof proto, "%s", t->tls ? "tls" : "-"); /* nothing came inside */
    const char *method = t->method[0] ? t->method : "-";
    const char *dest = t->dest_name[0] ? t->dest_name : "-", *res = t->result ? t->result : "ok";
    if (!t->o->log_json) {
        fprintf(stderr, "vega-proxy: %s user=%s %s %s %s up=%llu down=%llu time=%.3fs result=%s\n",
                t->peer, user, proto, method, dest, (unsigned long long)t->up,
                (unsigned long long)t->down, secs, res);
        return;
    }
    /* built in memory and written at once: lines of concurrent tunnels never mix. Every field
     * is bounded (names 255 bytes, escaped at most 6 per byte): 8 KiB holds the longest. On
     * the heap: on the stack, with stdio's own 8 KiB below it, the task would go deeper than
     * the 16 KiB its stack keeps, and its pages would be given back at its end (a TLB flush) */
    enum {
        LINE_MAX_ = 8192
    };
    char *buf = malloc(LINE_MAX_);
    FILE *f = buf ? fmemopen(buf, LINE_MAX_, "w") : NULL;
    if (!f) {
        free(buf);
        return;
    }
    fputs("{\"client\":\"", f);
    json_str(f, t->peer);
    fputs("\",\"user\":", f);
    if (t->user[0]) {
        fputc('"', f);
        json_str(f, t->user);
        fputc('"', f);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"proto\":\"%s\",\"method\":\"", proto);
    json_str(f, method);
    fputs("\",\"dest\":\"", f);
    json_str(f, dest);
    fprintf(f, "\",\"up\":%llu,\"down\":%llu,\"duration\":%.3f,\"result\":\"%s\"}\n",
            (unsigned long long)t->up, (unsigned long long)t->down, secs, res);
    long len = ftell(f);
    fclose(f);
    if (len > 0 && (size_t)len < LINE_MAX_)
        fwrite(buf, 1, (size_t)len, stderr);
    free(buf);
}

/* Logs the tunnel, closes its sockets and frees it. */
static void tunnel_end(struct tunnel *t)
{
    if (t->held)
        users_unhold(t->o, t->user);
    if (t->relaying) {
        int err = atomic_load(&t->err);
        t->result = err == 0            ? "ok"
                    : err == -ETIMEDOUT ? "idle-timeout"
                    : err == -ECANCELED ? "stopped"
                                        : "reset";
    }
    log_line(t);
    if (t->kind >= 0)
        atomic_fetch_sub_explicit(&proxy_metrics.active[t->kind], 1, memory_order_relaxed);
    if (t->result && strcmp(t->result, "auth-failed") == 0)
        metric_add(&proxy_metrics.auth_failures, 1);
    if (t->up_stream)
        vega_stream_close(t->up_stream, 0); /* closes dest */
    else if (t->dest)
        vega_sock_close(t->dest);
    if (t->client)
        vega_sock_close(t->client);
    atomic_fetch_sub(&t->srv->live, 1);
    free(t->hs);
    free(t);
}

static void run(struct tunnel *t)
{
    vega_deadline dl = idle_dl(t);
    vega_ssize n = hs_more(t, 1, dl);
    if (n <= 0) {
        t->result = n == -ETIMEDOUT ? "idle-timeout" : n == -ECANCELED ? "stopped" : "closed";
        return;
    }
    int r = t->hs[0] == 5 ? do_socks5(t, dl) : t->hs[0] == 4 ? do_socks4(t, dl) : do_http(t, dl);
    if (r < 0) {
        if (!t->result)
            t->result = r == -ETIMEDOUT ? "idle-timeout" : r == -ECANCELED ? "stopped" : "error";
        return;
    }
    if (t->finished)
        return;
    /* bytes the client sent after its request belong to the tunnel */
    if (t->hs_len) {
        r = send_all(t->dest, t->hs, t->hs_len, dl);
        if (r < 0) {
            t->result = "error";
            return;
        }
        t->up += t->hs_len;
        metric_add(&proxy_metrics.bytes_up, t->hs_len);
        t->hs_len = 0;
    }
    free(t->hs);
    t->hs = NULL;
    t->relaying = true;
    metrics_handshake(vega_now() - t->start);
}

/* A tls:// listener's client: the TLS handshake (bounded by the idle timeout, as the proxy
 * handshakes are), then a bridge whose pair end becomes t->client, so that SOCKS, CONNECT and
 * forwarding run inside TLS as they do outside. Returns 0, or an error with t->result set
 * (t->client is then gone or still the socket, which tunnel_end closes). */
static int tls_accept(struct tunnel *t, vega_tls_config *cfg)
{
    t->tls = true;
    vega_stream *s;
    int r = vega_tls_stream_from_sock(&s, t->client, 0, cfg, NULL);
    if (r < 0) {
        t->result = "error";
        return r;
    }
    t->client = NULL; /* the stream has it */
    r = vega_tls_handshake(s, idle_dl(t));
    if (r < 0) {
        const char *why = vega_tls_last_error(s);
        cli_log(1, "%s: TLS handshake: %s", t->peer, why && *why ? why : vega_tls_strerror(r));
        t->result = r == -ETIMEDOUT ? "idle-timeout" : r == -ECANCELED ? "stopped" : "tls-error";
        vega_stream_close(s, 0);
        return r;
    }
    r = bridge_open(s, &t->client);
    if (r < 0) {
        cli_log(1, "%s: TLS bridge: %s", t->peer, vega_strerror(r));
        t->result = "error";
    }
    return r;
}

void *tunnel_main(void *arg)
{
    struct tunnel_arg *a = arg;
    struct tunnel *t = calloc(1, sizeof *t);
    uint8_t *hs = malloc(HS_BUF);
    if (!t || !hs) {
        vega_sock_abort(a->sock);
        atomic_fetch_sub(&a->srv->live, 1);
        free(t);
        free(hs);
        free(a);
        return NULL;
    }
    t->srv = a->srv;
    t->o = a->srv->o;
    t->client = a->sock;
    t->hs = hs;
    t->start = vega_now();
    t->kind = -1;
    vega_addr_format(&a->peer, t->peer, sizeof t->peer);
    vega_tls_config *tls = a->tls;
    free(a);
    if (tls && tls_accept(t, tls) < 0) {
        tunnel_end(t);
        return NULL;
    }
    run(t);
    if (t->relaying)
        relay_start(t);
    else
        tunnel_end(t);
    return NULL;
}
