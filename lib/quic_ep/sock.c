/* SPDX-License-Identifier: MIT */
/* The endpoint's UDP sockets: opened with GRO, ECN and (on a wildcard address) packet info,
 * large kernel buffers, and the two tasks that serve each. */
#include <string.h>

#include <netinet/in.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ep_int.h"

/* Kernel buffers: a burst of a fast transfer must not overflow them (the kernel may clamp these
 * to net.core.rmem_max / wmem_max; that is not an error). */
#define EP_SOCK_BUF (4 * 1024 * 1024)

static bool addr_is_wildcard(const vega_addr *a)
{
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&a->ss;
        return s->sin_addr.s_addr == htonl(INADDR_ANY);
    }
    if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->ss;
        return memcmp(&s->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0;
    }
    return false;
}

/* fd >= 0: wraps that bound socket (taken, closed on failure) instead of binding addr; given:
 * uses that socket (taken, closed on failure) instead. */
static int sock_open(struct vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                     bool server, int fd, vega_sock *given, struct ep_sock **out)
{
    struct ep_sock *s = vega__mem_calloc(ep->mem, 1, sizeof *s);
    if (!s) {
        if (fd >= 0)
            close(fd);
        vega_sock_close(given);
        return -ENOMEM;
    }
    s->sock = given;
    s->ep = ep;
    vega_notify_init(&s->tx_wake);
    vega__spin_init(&s->dirty_lock);
    s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); /* -1: the wheel */
    atomic_init(&s->stop, false);
    atomic_init(&s->pending, 0);
    atomic_init(&s->drained_at, 0);
    int rc = -ENOMEM;
    /* a client connection's own socket batches less: it serves one connection */
    s->rx_n = server ? EP_RX_BATCH : 2;
    s->tx_n = server ? EP_TX_BATCH : 2;
    s->rx_buf = vega__mem_malloc(ep->mem, s->rx_n * EP_RX_CAP);
    s->tx_buf = vega__mem_malloc(ep->mem, s->tx_n * EP_TX_CAP);
    s->rx_msgs = vega__mem_calloc(ep->mem, s->rx_n, sizeof *s->rx_msgs);
    s->tx_msgs = vega__mem_calloc(ep->mem, s->tx_n, sizeof *s->tx_msgs);
    s->tx_via = vega__mem_calloc(ep->mem, s->tx_n, sizeof *s->tx_via);
    if (!s->rx_buf || !s->tx_buf || !s->rx_msgs || !s->tx_msgs || !s->tx_via) {
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    if (given) {
        rc = vega_sock_local_addr(s->sock, &s->local);
        addr = &s->local;
    } else if (fd >= 0) { /* a socket made by someone else (vega_quic_endpoint_listen_fds) */
        rc = vega_udp_bind_fd(&s->sock, fd);
        if (rc < 0 && rc != -ENOMEM)
            close(fd); /* not taken by the wrap: ours to close */
        fd = -1;
        if (rc == 0)
            rc = vega_sock_local_addr(s->sock, &s->local);
        addr = &s->local;
    } else {
        rc = vega_udp_bind(&s->sock, addr, flags | (server ? VEGA_LISTEN_REUSEPORT : 0));
    }
    if (rc < 0)
        goto fail;
    (void)vega_sock_set_buffers(s->sock, EP_SOCK_BUF, EP_SOCK_BUF);
    s->wildcard = addr_is_wildcard(addr);
    unsigned want = VEGA_UDP_GRO | VEGA_UDP_ECN | (s->wildcard ? VEGA_UDP_PKTINFO : 0);
    rc = vega_udp_set_features(s->sock, want, true);
    if (rc < 0)
        goto fail;
    rc = vega_sock_local_addr(s->sock, &s->local);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < s->rx_n; i++) {
        s->rx_msgs[i].buf = s->rx_buf + i * EP_RX_CAP;
        s->rx_msgs[i].cap = EP_RX_CAP;
    }
    *out = s;
    return 0;
fail:
    vega__ep_sock_free(s);
    return rc;
}

int vega__ep_sock_open(struct vega_quic_endpoint *ep, const vega_addr *addr, unsigned flags,
                       bool server, int fd, struct ep_sock **out)
{
    return sock_open(ep, addr, flags, server, fd, NULL, out);
}

int vega__ep_sock_adopt(struct vega_quic_endpoint *ep, vega_sock *sock, struct ep_sock **out)
{
    int rc = sock_open(ep, NULL, 0, false, -1, sock, out);
    if (rc == 0)
        (*out)->relayed = true;
    return rc;
}

int vega__ep_sock_start(struct ep_sock *s)
{
    vega_spawn_opts o;
    vega_spawn_opts_init(&o);
    o.name = "quic-rx";
    int rc = vega_task_spawn_ex(&s->rx_task, vega__ep_rx_task, s, &o);
    if (rc < 0)
        return rc;
    o.name = "quic-tx";
    rc = vega_task_spawn_ex(&s->tx_task, vega__ep_tx_task, s, &o);
    if (rc < 0) {
        vega_task_cancel(s->rx_task);
        vega_task_join(s->rx_task, NULL, VEGA_DEADLINE_NEVER);
        s->rx_task = NULL;
        return rc;
    }
    return 0;
}

void vega__ep_sock_free(struct ep_sock *s)
{
    if (!s)
        return;
    const vega_mem *mem = s->ep->mem;
    vega__ep_defer_free(s);
    if (s->sock)
        vega_sock_close(s->sock);
    if (s->rx_buf)
        vega__mem_free(mem, s->rx_buf);
    if (s->tx_buf)
        vega__mem_free(mem, s->tx_buf);
    if (s->rx_msgs)
        vega__mem_free(mem, s->rx_msgs);
    if (s->tx_msgs)
        vega__mem_free(mem, s->tx_msgs);
    if (s->tx_via)
        vega__mem_free(mem, s->tx_via);
    if (s->heap)
        vega__mem_free(mem, s->heap);
    if (s->timer_fd >= 0)
        close(s->timer_fd);
    vega_notify_fini(&s->tx_wake);
    vega__mem_free(mem, s);
}

void vega__ep_sock_send_one(struct ep_sock *s, const uint8_t *buf, size_t len, const vega_addr *to,
                            const vega_addr *local)
{
    vega_udp_msg m;
    memset(&m, 0, sizeof m);
    m.buf = (void *)buf;
    m.len = len;
    m.addr = *to;
    if (local && s->wildcard)
        m.local = *local;
    /* deadline 0: the send task is the socket's waiting writer; a datagram that does not fit
     * the socket buffer now is lost, as UDP may lose any */
    if (vega_udp_send_batch(s->sock, &m, 1, 0) == 1) {
        atomic_fetch_add_explicit(&s->ep->st_dgrams_out, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->ep->st_bytes_out, len, memory_order_relaxed);
    }
}
