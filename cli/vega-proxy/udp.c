/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP ASSOCIATE (RFC 1928 §7): a relay socket for the client, destination sockets opened
 * on first use, datagrams relayed both ways with the request header taken off and put back, for
 * as long as the TCP control connection lives. With a socks5:// or socks5h:// --upstream the
 * association is chained: the upstream's own UDP ASSOCIATE carries the datagrams, headers
 * kept. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* The largest UDP payload; a datagram is read whole into a buffer this large. */
#define UDP_MAX_DGRAM 65535
/* Room for the header put in front of a datagram from a destination (IPv6: 4 + 16 + 2). */
#define UDP_HDR_IP 22
/* Destinations an association remembers; replies come back only from these. When it is full,
 * the oldest is forgotten. */
#define UDP_MAX_DESTS 64

struct assoc {
    struct proxy_server *srv;
    const struct proxy_opts *o;
    vega_sock *control; /* the TCP connection of the request (borrowed) */
    vega_sock *near;    /* faces the client */
    vega_sock *far[2];  /* face destinations: IPv4, IPv6; opened by the upward task on use */
    vega_task *far_task[2];
    /* The client: the control connection's peer IP; its port as declared in the request, or
     * that of its first datagram. Set before any far task exists, then read-only. */
    vega_addr client;
    bool client_port_known;
    int family; /* the relay's: AF_INET (also for an IPv4-mapped address) or AF_INET6 */
    /* Writes on near come from both far tasks: one at a time. */
    vega_mutex near_lock;
    /* Where the client sent datagrams: the only sources relayed back (dests_lock). */
    vega_mutex dests_lock;
    vega_addr dests[UDP_MAX_DESTS];
    size_t ndests, dests_next;
    _Atomic uint64_t up, down, dropped;
    _Atomic vega_tstamp last; /* the last datagram relayed either way (idle timeout) */
    /* --upstream socks5(h)://: datagrams go, header and all, to the upstream's relay, and only
     * its datagrams come back (it keeps the list of destinations) */
    bool chained;
    vega_sock *up_ctl;   /* the control connection to the upstream (its close ends this) */
    vega_addr up_relay;  /* the upstream's relay */
    vega_task *up_watch; /* reads up_ctl until it closes */
    atomic_bool up_gone; /* up_ctl closed or failed first */
};

/* A datagram dropped: counted for the association's log line and in --metrics by reason. */
static void drop(struct assoc *a, enum udp_drop why)
{
    atomic_fetch_add(&a->dropped, 1);
    metric_add(&proxy_metrics.udp_dropped[why], 1);
}

/* The family slot of a far socket. */
static int far_slot(int family)
{
    return family == AF_INET6 ? 1 : 0;
}

static bool dest_known(struct assoc *a, const vega_addr *from)
{
    if (vega_mutex_lock(&a->dests_lock, VEGA_DEADLINE_NEVER) < 0)
        return false;
    bool found = false;
    for (size_t i = 0; i < a->ndests && !found; i++)
        found = vega_addr_equal(&a->dests[i], from);
    vega_mutex_unlock(&a->dests_lock);
    return found;
}

static int dest_remember(struct assoc *a, const vega_addr *to)
{
    int r = vega_mutex_lock(&a->dests_lock, VEGA_DEADLINE_NEVER);
    if (r < 0)
        return r;
    bool found = false;
    for (size_t i = 0; i < a->ndests && !found; i++)
        found = vega_addr_equal(&a->dests[i], to);
    if (!found) {
        a->dests[a->dests_next] = *to;
        a->dests_next = (a->dests_next + 1) % UDP_MAX_DESTS;
        if (a->ndests < UDP_MAX_DESTS)
            a->ndests++;
    }
    vega_mutex_unlock(&a->dests_lock);
    return 0;
}

/* A chained datagram (header included) to the client: payload bytes counted down. Returns 0,
 * -ECANCELED, or another error (dropped). */
static int chained_send(struct assoc *a, const uint8_t *d, size_t len, uint64_t payload)
{
    int r = vega_mutex_lock(&a->near_lock, VEGA_DEADLINE_NEVER);
    if (r < 0)
        return r;
    vega_ssize w = vega_udp_send_to(a->near, d, len, &a->client, VEGA_DEADLINE_NEVER);
    vega_mutex_unlock(&a->near_lock);
    if (w < 0)
        return (int)w;
    atomic_fetch_add(&a->down, payload);
    atomic_store(&a->last, vega_now());
    return 0;
}

/* Datagrams from destinations on far: relayed to the client with the header in front. */
static int down_loop(struct assoc *a, vega_sock *far)
{
    uint8_t *buf = malloc(UDP_HDR_IP + UDP_MAX_DGRAM);
    if (!buf)
        return -ENOMEM;
    int ret = 0;
    for (;;) {
        vega_addr from;
        vega_ssize n =
            vega_udp_recv_from(far, buf + UDP_HDR_IP, UDP_MAX_DGRAM, &from, VEGA_DEADLINE_NEVER);
        if (n == -ECONNREFUSED)
            continue; /* an ICMP error for an earlier datagram: nothing to relay */
        if (n < 0) {
            ret = (int)n;
            break;
        }
        if (a->chained) {
            /* the upstream's relay, with the source's header already in front */
            uint8_t frag;
            vega_proxy_addr src;
            vega_ssize hl =
                vega_addr_equal(&from, &a->up_relay)
                    ? vega_proxy_udp_header_parse(buf + UDP_HDR_IP, (size_t)n, &frag, &src)
                    : -1;
            if (!vega_addr_equal(&from, &a->up_relay))
                drop(a, UDP_DROP_SOURCE);
            else if (hl < 0)
                drop(a, UDP_DROP_HEADER);
            else if (frag != 0)
                drop(a, UDP_DROP_FRAGMENT);
            else if (chained_send(a, buf + UDP_HDR_IP, (size_t)n, (uint64_t)(n - hl)) < 0)
                drop(a, UDP_DROP_SEND);
            continue;
        }
        if (!dest_known(a, &from)) {
            drop(a, UDP_DROP_SOURCE);
            continue;
        }
        vega_proxy_addr src;
        proxy_addr_from(&from, &src);
        uint8_t hdr[UDP_HDR_IP];
        vega_ssize hl = vega_proxy_udp_header_write(hdr, sizeof hdr, 0, &src);
        if (hl < 0)
            continue;
        uint8_t *d = buf + UDP_HDR_IP - hl;
        memcpy(d, hdr, (size_t)hl);
        int r = vega_mutex_lock(&a->near_lock, VEGA_DEADLINE_NEVER);
        if (r < 0) {
            ret = r;
            break;
        }
        vega_ssize w =
            vega_udp_send_to(a->near, d, (size_t)hl + (size_t)n, &a->client, VEGA_DEADLINE_NEVER);
        vega_mutex_unlock(&a->near_lock);
        if (w == -ECANCELED) {
            ret = (int)w;
            break;
        }
        if (w < 0) { /* -EMSGSIZE with the header, a full buffer: UDP may drop */
            drop(a, UDP_DROP_SEND);
            continue;
        }
        atomic_fetch_add(&a->down, (uint64_t)n);
        atomic_store(&a->last, vega_now());
    }
    free(buf);
    return ret;
}

static void *down4_main(void *arg)
{
    struct assoc *a = arg;
    return (void *)(intptr_t)down_loop(a, a->far[0]);
}

static void *down6_main(void *arg)
{
    struct assoc *a = arg;
    return (void *)(intptr_t)down_loop(a, a->far[1]);
}

/* The far socket for a destination's family: opened, with its task, on first use. */
static vega_sock *far_sock(struct assoc *a, int family)
{
    int i = far_slot(family);
    if (a->far[i])
        return a->far[i];
    vega_addr any;
    if (vega_addr_from_ip(&any, family == AF_INET6 ? "::" : "0.0.0.0", 0) < 0)
        return NULL;
    if (vega_udp_bind(&a->far[i], &any, family == AF_INET6 ? VEGA_LISTEN_V6ONLY : 0) < 0) {
        a->far[i] = NULL;
        return NULL;
    }
    if (vega_task_spawn(&a->far_task[i], i ? down6_main : down4_main, a) < 0) {
        vega_sock_close(a->far[i]);
        a->far[i] = NULL;
        a->far_task[i] = NULL;
        return NULL;
    }
    return a->far[i];
}

/* Where a datagram from the client goes: the header's address (a name through the resolver),
 * then the ACL. Returns 0 or an error (the datagram is dropped). */
static int resolve_dest(struct assoc *a, const vega_proxy_addr *dst, vega_addr *to)
{
    if (dst->type == VEGA_PROXY_ATYP_NAME) {
        if (!dest_name_allowed(a->o, dst->name, dst->port))
            return -EACCES;
        /* no Happy Eyeballs for a datagram: the family the client reached the relay over
         * first, the other if the name has none of it */
        size_t n = 0;
        vega_deadline dl =
            a->o->connect_ns ? vega_deadline_in_ns(a->o->connect_ns) : VEGA_DEADLINE_NEVER;
        int r = vega_dns_lookup(a->srv->dns, dst->name, a->family, to, 1, &n, dl);
        if (r == VEGA_ERR_DNS_NO_ADDRESS)
            r = vega_dns_lookup(a->srv->dns, dst->name, AF_UNSPEC, to, 1, &n, dl);
        if (r < 0)
            return r;
    } else {
        char ip[INET6_ADDRSTRLEN];
        bool v6 = dst->type == VEGA_PROXY_ATYP_IPV6;
        inet_ntop(v6 ? AF_INET6 : AF_INET, dst->ip, ip, sizeof ip);
        int r = vega_addr_from_ip(to, ip, 0);
        if (r < 0)
            return r;
    }
    vega_addr_set_port(to, dst->port);
    /* port 0 cannot be sent to */
    if (dst->port == 0)
        return -EINVAL;
    return dest_allowed(a->o, to) ? 0 : -EACCES;
}

static bool is_dns_error(int r)
{
    return r == VEGA_ERR_DNS_NOT_FOUND || r == VEGA_ERR_DNS_NO_ADDRESS || r == VEGA_ERR_DNS_SERVER;
}

/* A datagram of the client (d, n bytes, its header hl bytes) to the upstream's relay. The
 * destination rules apply as for TCP: an address exactly, a name by what it resolves to here;
 * with socks5h:// a name that does not resolve here goes as a name. With socks5:// a name is
 * sent as the address it resolved to: the header is rewritten in place, in the UDP_HDR_IP bytes
 * of headroom that d must have in front of it (an address header is at most that long), so
 * that no datagram is copied. Returns 0 or an error (dropped; *why says the metric's reason). */
static int chained_up(struct assoc *a, uint8_t *d, size_t n, size_t hl, const vega_proxy_addr *dst,
                      enum udp_drop *why)
{
    bool name = dst->type == VEGA_PROXY_ATYP_NAME;
    bool remote_names = a->o->up.kind == VEGA_PROXY_SOCKS5H;
    vega_addr to;
    int r = 0;
    *why = UDP_DROP_DEST;
    if (!name || !remote_names || dest_rules_any(a->o))
        r = resolve_dest(a, dst, &to);
    if (r < 0 && name && remote_names && is_dns_error(r))
        r = 0; /* the upstream's to resolve */
    if (r == -EACCES)
        metric_add(&proxy_metrics.denied_dest, 1);
    if (r < 0)
        return r;
    size_t len = n;
    if (name && !remote_names) {
        /* socks5://: the address, not the name; written just before the payload */
        vega_proxy_addr ip;
        proxy_addr_from(&to, &ip);
        uint8_t hdr[UDP_HDR_IP];
        vega_ssize nh = vega_proxy_udp_header_write(hdr, sizeof hdr, 0, &ip);
        if (nh < 0)
            return (int)nh;
        /* nh <= UDP_HDR_IP: the new header starts at most UDP_HDR_IP bytes before d */
        d = (d + hl) - (size_t)nh;
        memcpy(d, hdr, (size_t)nh);
        len = (size_t)nh + (n - hl);
    }
    *why = UDP_DROP_SEND;
    vega_sock *far = far_sock(a, vega_addr_family(&a->up_relay));
    vega_ssize w = far ? vega_udp_send_to(far, d, len, &a->up_relay, VEGA_DEADLINE_NEVER) : -ENOMEM;
    if (w < 0)
        return (int)w;
    atomic_fetch_add(&a->up, (uint64_t)(n - hl));
    atomic_store(&a->last, vega_now());
    return 0;
}

/* Is this datagram the client's? Its IP must be the control connection's peer's; its port the
 * declared one, or the first datagram's (which fixes it). */
static bool from_client(struct assoc *a, const vega_addr *from)
{
    if (!addr_same_ip(&a->client, from))
        return false;
    if (a->client_port_known)
        return vega_addr_port(from) == vega_addr_port(&a->client);
    vega_addr_set_port(&a->client, vega_addr_port(from));
    a->client_port_known = true;
    return true;
}

/* Datagrams from the client: header off, relayed to the destination it names. */
static void *up_main(void *arg)
{
    struct assoc *a = arg;
    /* headroom in front of the datagram: chained_up may put a longer header there */
    uint8_t *mem = malloc(UDP_HDR_IP + UDP_MAX_DGRAM);
    if (!mem)
        return (void *)(intptr_t)-ENOMEM;
    uint8_t *buf = mem + UDP_HDR_IP;
    int ret = 0;
    for (;;) {
        vega_addr from;
        vega_ssize n = vega_udp_recv_from(a->near, buf, UDP_MAX_DGRAM, &from, VEGA_DEADLINE_NEVER);
        if (n == -ECONNREFUSED)
            continue;
        if (n < 0) {
            ret = (int)n;
            break;
        }
        /* RFC 1928 §7: "MUST drop any datagrams arriving from any source IP address other than
         * the one recorded for the particular association" */
        if (!from_client(a, &from)) {
            drop(a, UDP_DROP_SOURCE);
            continue;
        }
        uint8_t frag;
        vega_proxy_addr dst;
        vega_ssize hl = vega_proxy_udp_header_parse(buf, (size_t)n, &frag, &dst);
        if (hl < 0) {
            drop(a, UDP_DROP_HEADER);
            continue;
        }
        /* RFC 1928 §7: "An implementation that does not support fragmentation MUST drop any
         * datagram whose FRAG field is other than X'00'": not reassembled here */
        if (frag != 0) {
            drop(a, UDP_DROP_FRAGMENT);
            continue;
        }
        if (a->chained) {
            enum udp_drop why;
            int r = chained_up(a, buf, (size_t)n, (size_t)hl, &dst, &why);
            if (r == -ECANCELED) {
                ret = r;
                break;
            }
            if (r < 0)
                drop(a, why);
            continue;
        }
        vega_addr to;
        int r = resolve_dest(a, &dst, &to);
        if (r == -EACCES)
            metric_add(&proxy_metrics.denied_dest, 1); /* a rule, as for TCP */
        if (r == -ECANCELED) {
            ret = r;
            break;
        }
        vega_sock *far = r == 0 ? far_sock(a, vega_addr_family(&to)) : NULL;
        if (!far) {
            if (cli_verbose >= 2) {
                char host[VEGA_PROXY_MAX_NAME + 1];
                if (dst.type == VEGA_PROXY_ATYP_NAME)
                    snprintf(host, sizeof host, "%s", dst.name);
                else
                    inet_ntop(dst.type == VEGA_PROXY_ATYP_IPV6 ? AF_INET6 : AF_INET, dst.ip, host,
                              sizeof host);
                cli_log(2, "udp: datagram to %s port %u dropped: %s", host, (unsigned)dst.port,
                        r < 0 ? vega_strerror(r) : "no socket");
            }
            drop(a, UDP_DROP_DEST);
            continue;
        }
        r = dest_remember(a, &to);
        if (r < 0) {
            ret = r;
            break;
        }
        vega_ssize w =
            vega_udp_send_to(far, buf + hl, (size_t)n - (size_t)hl, &to, VEGA_DEADLINE_NEVER);
        if (w == -ECANCELED) {
            ret = (int)w;
            break;
        }
        if (w < 0) {
            drop(a, UDP_DROP_SEND);
            continue;
        }
        atomic_fetch_add(&a->up, (uint64_t)n - (uint64_t)hl);
        atomic_store(&a->last, vega_now());
    }
    free(mem);
    /* an error here (not a stop) ends the association: wake the control reader */
    if (ret != -ECANCELED)
        vega_sock_shutdown(a->control, SHUT_RDWR);
    return (void *)(intptr_t)ret;
}

/* Joins t, cancelling it first; the join cannot be left early (t uses the association). When
 * the caller is cancelled too (SIGTERM's grace ran out), every join returns at once: the yield
 * lets t run meanwhile, which a spinning join would keep off this worker. */
static void stop_task(vega_task *t)
{
    if (!t)
        return;
    vega_task_cancel(t);
    while (vega_task_join(t, NULL, VEGA_DEADLINE_NEVER) == -ECANCELED)
        vega_yield();
}

/* The relay socket: on the control connection's local IP (same family and interface), a free
 * port. */
static int open_near(struct assoc *a)
{
    vega_addr local;
    int r = vega_sock_local_addr(a->control, &local);
    if (r < 0)
        return r;
    vega_addr_set_port(&local, 0);
    return vega_udp_bind(&a->near, &local, 0);
}

/* Waits on the control connection until it closes (the association's end, RFC 1928 §7), fails
 * or idles with no datagram either way for the idle timeout. Returns the log's word. */
static const char *watch_control(struct assoc *a)
{
    char buf[512];
    for (;;) {
        vega_deadline dl = a->o->idle_ns ? vega_deadline_in_ns(a->o->idle_ns) : VEGA_DEADLINE_NEVER;
        vega_ssize n = vega_sock_read(a->control, buf, sizeof buf, dl);
        if (n == -ETIMEDOUT) {
            if (vega_now() - atomic_load(&a->last) < a->o->idle_ns)
                continue; /* datagrams moved meanwhile */
            return "idle-timeout";
        }
        if (n == 0)
            return "ok";
        if (n < 0)
            return n == -ECANCELED ? "stopped" : "reset";
        /* nothing follows the reply on a control connection: bytes are ignored */
    }
}

/* Reads the upstream's control connection until it ends (nothing follows its reply), then
 * ends the association by shutting the client's control connection down. */
static void *up_watch_main(void *arg)
{
    struct assoc *a = arg;
    char buf[256];
    vega_ssize n;
    while ((n = vega_sock_read(a->up_ctl, buf, sizeof buf, VEGA_DEADLINE_NEVER)) > 0)
        ;
    if (n != -ECANCELED) {
        atomic_store(&a->up_gone, true);
        vega_sock_shutdown(a->control, SHUT_RDWR);
    }
    return NULL;
}

/* The upstream's UDP ASSOCIATE (vega_proxy_udp_associate_control: its credentials, DST
 * 0.0.0.0:0, since we do not know our source port before the first datagram): its control
 * connection in a->up_ctl, watched, its relay in a->up_relay. *code: its REP when it refused,
 * else -1. Returns 0 or an error. */
static int up_associate(struct assoc *a, int *code, vega_deadline dl)
{
    const vega_proxy_opts *p = &a->o->up;
    vega_proxy_reply rep;
    int r = vega_proxy_udp_associate_control(&a->up_ctl, &a->up_relay, p, &rep, dl);
    *code = r == VEGA_ERR_PROXY_REFUSED ? rep.code : -1;
    if (r == 0)
        r = vega_task_spawn(&a->up_watch, up_watch_main, a);
    if (r < 0)
        cli_log(1, "udp associate through %s:%u: %s", p->host, (unsigned)p->port, vega_strerror(r));
    return r;
}

int udp_associate(struct udp_report *rep, struct proxy_server *srv, vega_sock *control,
                  const vega_proxy_addr *declared, vega_deadline dl)
{
    struct assoc *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->srv = srv;
    a->o = srv->o;
    a->control = control;
    vega_mutex_init(&a->near_lock);
    vega_mutex_init(&a->dests_lock);
    uint8_t out[VEGA_PROXY_SOCKS5_MAX_REQUEST];
    int r = vega_sock_peer_addr(control, &a->client);
    if (r == 0)
        r = open_near(a);
    vega_proxy_addr bnd = {.type = VEGA_PROXY_ATYP_IPV4};
    vega_addr bound;
    if (r == 0)
        r = vega_sock_local_addr(a->near, &bound);
    if (r == 0) {
        proxy_addr_from(&bound, &bnd);
        a->family = bnd.type == VEGA_PROXY_ATYP_IPV6 ? AF_INET6 : AF_INET;
        vega_addr_format(&bound, rep->relay, sizeof rep->relay);
    }
    /* RFC 1928 §7: DST.ADDR/DST.PORT are where the client will send from; zeros when it does
     * not know. Only the port narrows the match: the IP is always the control connection's. */
    if (declared->port != 0) {
        vega_addr_set_port(&a->client, declared->port);
        a->client_port_known = true;
    }
    int up_code = -1;
    if (r == 0 && a->o->upstream) {
        a->chained = true;
        vega_deadline cdl =
            a->o->connect_ns ? vega_deadline_in_ns(a->o->connect_ns) : VEGA_DEADLINE_NEVER;
        r = up_associate(a, &up_code, cdl);
    }
    /* the upstream's refusal in kind (REP 2-8), else a general failure */
    uint8_t code = r == 0 ? 0 : up_code >= 2 && up_code <= 8 ? (uint8_t)up_code : 1;
    vega_ssize w = vega_proxy_socks5_reply_write(out, sizeof out, code, &bnd);
    if (w >= 0)
        w = vega_sock_write(control, out, (size_t)w, NULL, dl);
    int s = w < 0 ? (int)w : 0;
    vega_task *up = NULL;
    if (r == 0 && s == 0) {
        atomic_store(&a->last, vega_now());
        r = vega_task_spawn(&up, up_main, a);
    }
    if (r == 0 && s == 0) {
        rep->result = watch_control(a);
        if (atomic_load(&a->up_gone))
            rep->result = "upstream-closed";
        stop_task(up);
        /* the upward task is gone: no far task is added after this */
        stop_task(a->far_task[0]);
        stop_task(a->far_task[1]);
    } else if (r < 0) {
        rep->result =
            a->chained ? (up_code >= 0 ? "upstream-error" : "upstream-unreachable") : "error";
        cli_log(1, "udp associate: %s", vega_strerror(r));
    }
    stop_task(a->up_watch);
    if (a->up_ctl)
        vega_sock_close(a->up_ctl);
    for (int i = 0; i < 2; i++)
        if (a->far[i])
            vega_sock_close(a->far[i]);
    if (a->near)
        vega_sock_close(a->near);
    rep->up = atomic_load(&a->up);
    rep->down = atomic_load(&a->down);
    rep->dropped = atomic_load(&a->dropped);
    vega_mutex_fini(&a->near_lock);
    vega_mutex_fini(&a->dests_lock);
    free(a);
    return r < 0 ? r : s;
}
