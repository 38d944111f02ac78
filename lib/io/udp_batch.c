/* SPDX-License-Identifier: MIT */
/* UDP batches: sendmmsg/recvmmsg with per-message control data — GSO trains (UDP_SEGMENT) and
 * GRO buffers (UDP_GRO), ECN codepoints (RFC 3168 section 5) and packet info (the local
 * address) — and the one-datagram-at-a-time fallback where the kernel lacks GSO. */
#include <limits.h>
#include <netinet/udp.h>
#include <string.h>

#include "io_int.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Datagrams handed to one recvmmsg / sendmmsg; the per-slot state lives on the task's stack
 * (about 8 and 7 KiB of a 64 KiB stack). */
#define WINDOW      32
#define SEND_WINDOW 16

/* Room for the control messages of one datagram: UDP_SEGMENT, IP_TOS and IPV6_TCLASS, and one
 * packet info (send); TOS and TCLASS, both packet infos, UDP_GRO (receive). */
#define CTRL_SIZE                                                                                  \
    (3 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct in_pktinfo)) +                         \
     CMSG_SPACE(sizeof(struct in6_pktinfo)))

union ctrl {
    struct cmsghdr align;
    unsigned char buf[CTRL_SIZE];
};

/* ---- send ---------------------------------------------------------------------------------- */

/* One message's kernel view: its destination (converted to the socket's family) and control
 * data, shared by all datagrams of a train sent one by one. */
struct out_msg {
    vega_addr dest_tmp;
    union ctrl ctrl;
};

static bool is_ip(const vega_sock *s)
{
    return s->family == AF_INET || s->family == AF_INET6;
}

static struct cmsghdr *put_cmsg(struct msghdr *mh, struct cmsghdr *c, int level, int type,
                                const void *data, size_t len)
{
    c = c ? CMSG_NXTHDR(mh, c) : CMSG_FIRSTHDR(mh);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), data, len);
    return c;
}

static bool addr_is_v4ish(const vega_addr *a)
{
    if (vega_addr_family(a) == AF_INET)
        return true;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->ss;
    return vega_addr_family(a) == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr);
}

/* The IPv4 address in a (AF_INET or v4-mapped). */
static struct in_addr addr_v4(const vega_addr *a)
{
    struct in_addr in;
    if (vega_addr_family(a) == AF_INET)
        in = ((const struct sockaddr_in *)&a->ss)->sin_addr;
    else
        memcpy(&in, &((const struct sockaddr_in6 *)&a->ss)->sin6_addr.s6_addr[12], 4);
    return in;
}

/*
 * Fills the control data of m: UDP_SEGMENT when gso_size > 0, the ECN codepoint and the source
 * address. An AF_INET6 socket sends a v4-mapped destination through the IPv4 stack, which reads
 * SOL_IP options (and an IPV6_PKTINFO only when v4-mapped), while a native one reads SOL_IPV6
 * options; each skips the other's, so when the destination is unknown (connected socket) both
 * TOS forms go out. Returns the control length or -EINVAL.
 */
static int build_ctrl(const vega_sock *s, const vega_udp_msg *m, const vega_addr *dest,
                      uint16_t gso_size, union ctrl *ctrl)
{
    struct msghdr mh = {.msg_control = ctrl->buf, .msg_controllen = sizeof(ctrl->buf)};
    struct cmsghdr *c = NULL;
    size_t used = 0;
    memset(ctrl->buf, 0, sizeof(ctrl->buf));
    if (gso_size) {
        c = put_cmsg(&mh, c, SOL_UDP, UDP_SEGMENT, &gso_size, sizeof(gso_size));
        used += CMSG_SPACE(sizeof(gso_size));
    }
    if (!is_ip(s))
        return (int)used;
    bool v4 = s->family == AF_INET;
    bool to_v4 = v4 || (dest && addr_is_v4ish(dest));
    bool to_v6 = !v4 && (!dest || !addr_is_v4ish(dest));
    if (m->ecn) {
        int tos = m->ecn;
        if (to_v4 || (!v4 && !dest)) {
            c = put_cmsg(&mh, c, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
            used += CMSG_SPACE(sizeof(tos));
        }
        if (to_v6) {
            c = put_cmsg(&mh, c, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
            used += CMSG_SPACE(sizeof(tos));
        }
    }
    if (m->local.len) {
        int lf = vega_addr_family(&m->local);
        if (v4) {
            if (!addr_is_v4ish(&m->local))
                return -EINVAL;
            struct in_pktinfo pi = {.ipi_spec_dst = addr_v4(&m->local)};
            c = put_cmsg(&mh, c, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
            used += CMSG_SPACE(sizeof(pi));
        } else {
            struct in6_pktinfo pi;
            memset(&pi, 0, sizeof(pi));
            if (lf == AF_INET) {
                struct in_addr in = addr_v4(&m->local);
                pi.ipi6_addr.s6_addr[10] = 0xff;
                pi.ipi6_addr.s6_addr[11] = 0xff;
                memcpy(&pi.ipi6_addr.s6_addr[12], &in, 4);
            } else if (lf == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&m->local.ss;
                pi.ipi6_addr = in6->sin6_addr;
                pi.ipi6_ifindex = in6->sin6_scope_id;
            } else {
                return -EINVAL;
            }
            c = put_cmsg(&mh, c, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
            used += CMSG_SPACE(sizeof(pi));
        }
    }
    (void)c;
    return (int)used;
}

/* Checks what the kernel would only half check: the codepoint and the train's length. */
static int check_msg(const vega_udp_msg *m)
{
    if (m->ecn > VEGA_ECN_CE || (m->len && !m->buf))
        return -EINVAL;
    if (m->segment_size && m->len > m->segment_size &&
        (m->len - 1) / m->segment_size >= VEGA_UDP_MAX_SEGMENTS)
        return -EINVAL;
    return 0;
}

/* Where a send stands: msgs[idx] is the first message not wholly sent, and its first `off`
 * bytes went out already (a train sent datagram by datagram). */
struct send_pos {
    size_t idx, off;
};

/* A datagram slot of the window: which message it belongs to, its bytes, whether it ends it. */
struct slot {
    size_t msg;
    size_t bytes;
    bool last;
};

struct send_window {
    struct mmsghdr hdr[SEND_WINDOW];
    struct iovec iov[SEND_WINDOW];
    struct slot slot[SEND_WINDOW];
    struct out_msg out[SEND_WINDOW];
    unsigned n;
    bool first_gso; /* the first datagram is a GSO train (for the EIO fallback) */
};

/*
 * Fills w from position p: one slot per message, or per datagram of a train when gso is off.
 * Returns the number of slots (> 0), or the error of the message at p (which could not go).
 */
static int fill_send(const vega_sock *s, const vega_udp_msg *msgs, size_t n, struct send_pos p,
                     bool gso, struct send_window *w)
{
    unsigned k = 0, outs = 0;
    w->first_gso = false;
    for (size_t i = p.idx; i < n && k < SEND_WINDOW; i++) {
        const vega_udp_msg *m = &msgs[i];
        int r = check_msg(m);
        if (r < 0) {
            if (k == 0)
                return r;
            break;
        }
        size_t seg = m->segment_size;
        bool train = seg && m->len > seg;
        struct out_msg *o = &w->out[outs++];
        const vega_addr *dest = vega__udp_dest(s, &m->addr, &o->dest_tmp);
        int cl = build_ctrl(s, m, dest, train && gso ? (uint16_t)seg : 0, &o->ctrl);
        if (cl < 0) {
            if (k == 0)
                return cl;
            break;
        }
        size_t off = i == p.idx ? p.off : 0;
        do {
            size_t bytes = m->len - off;
            if (train && !gso && bytes > seg)
                bytes = seg;
            struct msghdr *mh = &w->hdr[k].msg_hdr;
            memset(&w->hdr[k], 0, sizeof(w->hdr[k]));
            w->iov[k].iov_base = (char *)m->buf + off;
            w->iov[k].iov_len = bytes;
            mh->msg_iov = &w->iov[k];
            mh->msg_iovlen = 1;
            if (dest) {
                mh->msg_name = (void *)&dest->ss;
                mh->msg_namelen = dest->len;
            }
            if (cl > 0) {
                mh->msg_control = o->ctrl.buf;
                mh->msg_controllen = (size_t)cl;
            }
            off += bytes;
            w->slot[k] = (struct slot){.msg = i, .bytes = bytes, .last = off >= m->len};
            if (k == 0 && train && gso)
                w->first_gso = true;
            k++;
        } while (off < m->len && k < SEND_WINDOW);
    }
    w->n = k;
    return (int)k;
}

int vega_udp_send_batch(vega_sock *s, const vega_udp_msg *msgs, size_t n, vega_deadline dl)
{
    if (!s || (n && !msgs))
        return -EINVAL;
    int r = vega__io_check_cancel();
    if (r < 0 || n == 0)
        return r;
    if (vega__udp_relay(s))
        return vega__udp_socks_send(s, msgs, n, dl);
    if (n > INT_MAX)
        n = INT_MAX;
    bool gso = (vega_udp_features(s) & VEGA_UDP_GSO) != 0;
    struct send_pos p = {0, 0};
    struct send_window w;
    bool waited = false;
    while (p.idx < n) {
        r = fill_send(s, msgs, n, p, gso, &w);
        if (r < 0)
            break;
        int sent = sendmmsg(s->fd, w.hdr, w.n, MSG_NOSIGNAL);
        if (sent < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EIO && w.first_gso) {
                /* The route's device cannot segment: send trains datagram by datagram. */
                s->udp_off |= VEGA_UDP_GSO;
                gso = false;
                continue;
            }
            if (e == EAGAIN || e == EWOULDBLOCK) {
                if (p.idx > 0 && p.off == 0)
                    break; /* some went: return them, waiting is for when none could */
                r = vega__io_wait(s->fd, POLLOUT, dl);
                if (r < 0)
                    break;
                waited = true;
                continue;
            }
            r = -e;
            break;
        }
        for (int j = 0; j < sent; j++) {
            if (w.slot[j].last) {
                p.idx = w.slot[j].msg + 1;
                p.off = 0;
            } else {
                p.off += w.slot[j].bytes;
            }
        }
        if ((unsigned)sent < w.n && p.off == 0)
            break; /* the kernel stopped: the rest would wait or fail, so report what went */
    }
    if (p.off > 0)
        p.idx++; /* a train cut short by a failure counts as sent: UDP may lose datagrams */
    if (p.idx == 0)
        return r < 0 ? r : 0;
    if (!waited)
        vega__io_done_ready();
    return (int)p.idx;
}

/* ---- receive ------------------------------------------------------------------------------- */

/* The local address of a packet info, in the socket's family (port 0). */
static void set_local4(const vega_sock *s, vega_addr *out, struct in_addr in)
{
    memset(out, 0, sizeof(*out));
    if (s->family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr.s6_addr[10] = 0xff;
        in6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&in6->sin6_addr.s6_addr[12], &in, 4);
        out->len = sizeof(*in6);
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
        sin->sin_family = AF_INET;
        sin->sin_addr = in;
        out->len = sizeof(*sin);
    }
}

static void set_local6(vega_addr *out, const struct in6_pktinfo *pi)
{
    memset(out, 0, sizeof(*out));
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = pi->ipi6_addr;
    if (IN6_IS_ADDR_LINKLOCAL(&pi->ipi6_addr))
        in6->sin6_scope_id = pi->ipi6_ifindex;
    out->len = sizeof(*in6);
}

static int cmsg_int(const struct cmsghdr *c)
{
    int v = 0;
    if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
        memcpy(&v, CMSG_DATA(c), sizeof(v));
    else if (c->cmsg_len >= CMSG_LEN(1))
        v = *(const unsigned char *)CMSG_DATA(c);
    return v;
}

/* Reads the control data of one received datagram into m. */
static void parse_ctrl(const vega_sock *s, struct msghdr *mh, vega_udp_msg *m)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
            m->ecn = (uint8_t)(cmsg_int(c) & 3); /* IP_TOS arrives as one byte */
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
            m->ecn = (uint8_t)(cmsg_int(c) & 3);
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
                   c->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof(pi));
            set_local4(s, &m->local, pi.ipi_addr); /* the header's destination */
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
                   c->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo))) {
            struct in6_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof(pi));
            set_local6(&m->local, &pi);
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int v = cmsg_int(c);
            m->segment_size = v > 0 && v <= UINT16_MAX ? (uint16_t)v : 0;
        }
    }
}

struct recv_window {
    struct mmsghdr hdr[WINDOW];
    struct iovec iov[WINDOW];
    union ctrl ctrl[WINDOW];
};

int vega_udp_recv_batch(vega_sock *s, vega_udp_msg *msgs, size_t n, vega_deadline dl)
{
    if (!s || (n && !msgs))
        return -EINVAL;
    int r = vega__io_check_cancel();
    if (r < 0 || n == 0)
        return r;
    if (vega__udp_relay(s))
        return vega__udp_socks_recv(s, msgs, n, dl);
    if (n > INT_MAX)
        n = INT_MAX;
    struct recv_window w;
    size_t done = 0;
    bool waited = false;
    while (done < n) {
        unsigned k = n - done < WINDOW ? (unsigned)(n - done) : WINDOW;
        for (unsigned j = 0; j < k; j++) {
            vega_udp_msg *m = &msgs[done + j];
            struct msghdr *mh = &w.hdr[j].msg_hdr;
            memset(&w.hdr[j], 0, sizeof(w.hdr[j]));
            w.iov[j].iov_base = m->buf;
            w.iov[j].iov_len = m->cap;
            mh->msg_iov = &w.iov[j];
            mh->msg_iovlen = 1;
            mh->msg_name = &m->addr.ss;
            mh->msg_namelen = sizeof(m->addr.ss);
            mh->msg_control = w.ctrl[j].buf;
            mh->msg_controllen = sizeof(w.ctrl[j].buf);
        }
        int got = recvmmsg(s->fd, w.hdr, k, 0, NULL);
        if (got < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (done > 0)
                break; /* a failure is reported by the next call */
            if (e != EAGAIN && e != EWOULDBLOCK)
                return -e;
            r = vega__io_wait(s->fd, POLLIN, dl);
            if (r < 0)
                return r;
            waited = true;
            continue;
        }
        for (int j = 0; j < got; j++) {
            vega_udp_msg *m = &msgs[done + (size_t)j];
            struct msghdr *mh = &w.hdr[j].msg_hdr;
            m->len = w.hdr[j].msg_len;
            m->addr.len = mh->msg_namelen;
            memset(&m->local, 0, sizeof(m->local));
            m->segment_size = 0;
            m->ecn = 0;
            m->flags = (mh->msg_flags & MSG_TRUNC) ? VEGA_UDP_MSG_TRUNC : 0;
            parse_ctrl(s, mh, m);
        }
        done += (size_t)got;
        if ((unsigned)got < k)
            break;
    }
    if (!waited)
        vega__io_done_ready();
    return (int)done;
}
