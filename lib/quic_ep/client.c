/* SPDX-License-Identifier: MIT */
/* Client connections: each on a UDP socket of its own, the wait for the handshake (or 0-RTT),
 * and connecting by name with Happy Eyeballs across the resolver's addresses (RFC 8305 §5). */
#include <string.h>

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "dns_int.h"
#include "ep_int.h"

#define HE_ATTEMPT_DELAY_MS 250
#define HE_MAX_ADDRS        8

static void wildcard_of(const vega_addr *peer, vega_addr *out)
{
    memset(out, 0, sizeof *out);
    if (peer->ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;
        a->sin6_family = AF_INET6;
        out->len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&out->ss;
        a->sin_family = AF_INET;
        out->len = sizeof *a;
    }
}

static bool is_ip_literal(const char *s)
{
    vega_addr a;
    return vega_addr_from_ip(&a, s, 0) == 0;
}

/* Copies the per-connection settings into c (the core borrows them for the connection's life). */
static int keep_settings(struct vega_quic_ep_conn *c, const vega_quic_connect_opts *o,
                         vega_quic_opts *q)
{
    const vega_mem *mem = c->ep->mem;
    if (o->server_name) {
        size_t n = strlen(o->server_name);
        if (n == 0 || n >= sizeof c->sni)
            return -EINVAL;
        memcpy(c->sni, o->server_name, n + 1);
        q->tls.server_name = c->sni;
    }
    if (o->session_len) {
        if (!o->session || !(c->cfg_session = vega__mem_malloc(mem, o->session_len)))
            return o->session ? -ENOMEM : -EINVAL;
        memcpy(c->cfg_session, o->session, o->session_len);
        q->tls.session = c->cfg_session;
        q->tls.session_len = o->session_len;
    }
    if (o->token_len) {
        if (!o->token || !(c->cfg_token = vega__mem_malloc(mem, o->token_len)))
            return o->token ? -ENOMEM : -EINVAL;
        memcpy(c->cfg_token, o->token, o->token_len);
        q->token = c->cfg_token;
        q->token_len = o->token_len;
    }
    if (o->version)
        q->version = o->version;
    return 0;
}

/* Makes the connection and its socket, and starts them. */
static int start_client(vega_quic_endpoint *ep, const vega_addr *addr,
                        const vega_quic_connect_opts *o, struct vega_quic_ep_conn **out)
{
    vega_addr local;
    if (o->local)
        local = *o->local;
    else
        wildcard_of(addr, &local);
    struct ep_sock *s;
    int rc = o->sock ? vega__ep_sock_adopt(ep, o->sock, &s)
                     : vega__ep_sock_open(ep, &local, 0, false, -1, &s);
    if (rc < 0)
        return rc;
    /* Connected to the server: the kernel then reports its ICMP errors on this socket (an
     * unconnected one drops them), and picks the source address once. A relay's socket stays
     * unconnected: its datagrams go to the relay. */
    if (!o->sock &&
        (connect(vega_sock_fd(s->sock), (const struct sockaddr *)&addr->ss, addr->len) < 0 ||
         vega_sock_local_addr(s->sock, &s->local) < 0)) {
        rc = -errno;
        vega__ep_sock_free(s);
        return rc;
    }
    s->wildcard = false;
    struct vega_quic_ep_conn *c = vega__ep_conn_new(ep, s, false);
    if (!c) {
        vega__ep_sock_free(s);
        return -ENOMEM;
    }
    s->owner = c;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); /* the socket's */
    vega_quic_opts q;
    vega_quic_path path;
    memset(&path, 0, sizeof path);
    memcpy(&path.local, &s->local.ss, s->local.len);
    path.local_len = s->local.len;
    memcpy(&path.remote, &addr->ss, addr->len);
    path.remote_len = addr->len;
    if ((rc = vega__ep_conn_opts(ep, c, &q)) < 0 || (rc = keep_settings(c, o, &q)) < 0 ||
        (rc = vega_quic_conn_client_new(&c->qc, &q, &path, vega_now())) < 0) {
        c->qc = NULL;
        vega__ep_sock_free(s);
        vega_quic_ep_conn_release(c);
        vega_quic_ep_conn_release(c);
        return rc;
    }
    vega__ep_qlog_open(c);
    c->peer = *addr;
    c->user = o->user;
    c->taken = true;
    c->app = ep->o.cb.on_event != NULL;
    c->counted_hs = true;
    atomic_fetch_add_explicit(&ep->handshakes, 1, memory_order_relaxed);
    vega__ep_conn_list_add(ep, c);
    atomic_init(&s->live_tasks, 2);
    atomic_fetch_add_explicit(&ep->client_socks, 1, memory_order_acq_rel);
    if ((rc = vega__ep_sock_start(s)) < 0) {
        /* nothing ran: undo by hand */
        atomic_fetch_sub_explicit(&ep->client_socks, 1, memory_order_acq_rel);
        (void)vega__ep_conn_lock(c);
        vega__ep_conn_teardown(c);
        vega_mutex_unlock(&c->mu);
        vega_quic_ep_conn_release(c);
        vega_quic_ep_conn_release(c);
        vega__ep_sock_free(s);
        return rc;
    }
    vega_task_detach(s->tx_task);
    s->tx_task = NULL;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); /* the caller's */
    /* the first flight: register the CIDs, queue for the send task */
    if (vega__ep_conn_lock(c) == 0) {
        vega__ep_conn_after(c);
        vega__ep_conn_unlock(c, true);
    }
    *out = c;
    return 0;
}

/* The error a connection that closed during its handshake reports. */
static int close_error(const vega_quic_ep_close_info *ci)
{
    if (!ci->app && ci->code == VEGA_QUIC_CONNECTION_REFUSED)
        return VEGA_ERR_QUIC_EP_REFUSED;
    if (!ci->app && ((ci->code >= VEGA_QUIC_CRYPTO_ERROR && ci->code <= 0x1ff) ||
                     ci->code == VEGA_QUIC_VERSION_NEGOTIATION_ERROR ||
                     ci->code == VEGA_QUIC_TRANSPORT_PARAMETER_ERROR))
        return VEGA_ERR_QUIC_EP_HANDSHAKE;
    return VEGA_ERR_QUIC_EP_CLOSED;
}

/* The caller's object is no longer called back once connect returned failure. */
static void detach_user(struct vega_quic_ep_conn *c)
{
    if (vega__ep_conn_lock(c) == 0) {
        c->user = NULL;
        c->app = false;
        vega_mutex_unlock(&c->mu);
    }
}

/* Abandons c (a failed or cancelled connect): its send task closes it. */
static void abandon(struct vega_quic_ep_conn *c)
{
    detach_user(c);
    atomic_store(&c->abandon, true);
    vega__ep_conn_schedule(c);
    vega_quic_ep_conn_release(c);
}

int vega_quic_endpoint_connect(vega_quic_endpoint *ep, const vega_addr *addr,
                               const vega_quic_connect_opts *o, vega_quic_ep_conn **out,
                               vega_deadline dl)
{
    static const vega_quic_connect_opts none;
    if (!ep || !addr || !out || (addr->ss.ss_family != AF_INET && addr->ss.ss_family != AF_INET6)) {
        if (o)
            vega_sock_close(o->sock); /* taken, also on failure */
        return -EINVAL;
    }
    *out = NULL;
    if (!vega_task_current() || atomic_load(&ep->shutting_down)) {
        if (o)
            vega_sock_close(o->sock);
        return !vega_task_current() ? VEGA_ERR_NOTASK : VEGA_ERR_CLOSED;
    }
    if (!o)
        o = &none;
    struct vega_quic_ep_conn *c = NULL;
    int rc = start_client(ep, addr, o, &c);
    if (rc < 0)
        return rc;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0) {
            abandon(c);
            return -ECANCELED;
        }
        bool ready = c->handshake_done;
        if (!ready && o->early && c->qc) {
            vega_quic_conn_info info;
            vega_quic_conn_get_info(c->qc, &info);
            ready = info.early_data == VEGA_QUIC_EARLY_OFFERED;
        }
        bool failed = c->close.closed || c->freed;
        vega_quic_ep_close_info ci = c->close;
        int serr = c->sock_err;
        vega_mutex_unlock(&c->mu);
        if (ready && !failed) {
            *out = c;
            return 0;
        }
        if (failed) {
            detach_user(c);
            rc = serr ? serr : close_error(&ci);
            if (o->close)
                *o->close = ci;
            vega_quic_ep_conn_release(c);
            return rc;
        }
        rc = vega_notify_wait(&c->hs_wake, dl);
        if (rc < 0) {
            abandon(c);
            return rc;
        }
    }
}

/* ---- Happy Eyeballs over QUIC ---------------------------------------------------------------- */

struct he {
    vega_quic_endpoint *ep;
    const vega_quic_connect_opts *o;
    vega_deadline dl;
    vega__spin lock;
    vega_notify wake;
    vega_quic_ep_conn *winner;
    int last_err;
    size_t running;
};

struct he_attempt {
    struct he *he;
    vega_addr addr;
    vega_task *task;
};

static void *he_attempt_task(void *arg)
{
    struct he_attempt *a = arg;
    struct he *he = a->he;
    vega_quic_ep_conn *c = NULL;
    int rc = vega_quic_endpoint_connect(he->ep, &a->addr, he->o, &c, he->dl);
    bool lost = false;
    vega__spin_lock(&he->lock);
    if (rc == 0 && !he->winner)
        he->winner = c;
    else if (rc == 0)
        lost = true;
    else if (rc != -ECANCELED || he->last_err == 0)
        he->last_err = rc;
    he->running--;
    vega__spin_unlock(&he->lock);
    if (lost)
        abandon(c);
    vega_notify_one(&he->wake);
    return NULL;
}

/* Orders addresses IPv6, IPv4, IPv6 ... (RFC 8305 §4, First Address Family Count 1). */
static size_t interleave(const vega_addr *in, size_t n, vega_addr *out)
{
    size_t k = 0, i6 = 0, i4 = 0;
    while (k < n) {
        bool want6 = (k % 2) == 0;
        size_t *i = want6 ? &i6 : &i4;
        int fam = want6 ? AF_INET6 : AF_INET;
        while (*i < n && in[*i].ss.ss_family != fam)
            (*i)++;
        if (*i < n) {
            out[k++] = in[(*i)++];
            continue;
        }
        /* that family ran out: the rest of the other */
        size_t *j = want6 ? &i4 : &i6;
        int other = want6 ? AF_INET : AF_INET6;
        while (*j < n && in[*j].ss.ss_family != other)
            (*j)++;
        if (*j >= n)
            break;
        out[k++] = in[(*j)++];
    }
    return k;
}

int vega_quic_endpoint_connect_host(vega_quic_endpoint *ep, const char *host, uint16_t port,
                                    const vega_quic_connect_opts *o, vega_quic_ep_conn **out,
                                    vega_deadline dl)
{
    if (!ep || !host || !out || port == 0 || (o && o->sock)) {
        if (o)
            vega_sock_close(o->sock); /* one socket cannot serve a race of addresses */
        return -EINVAL;
    }
    *out = NULL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    vega_dns_resolver *r;
    int rc = vega__dns_default_resolver(&r);
    if (rc < 0)
        return rc;
    vega_addr found[HE_MAX_ADDRS], addrs[HE_MAX_ADDRS];
    size_t n = 0;
    rc = vega_dns_lookup(r, host, AF_UNSPEC, found, HE_MAX_ADDRS, &n, dl);
    if (rc < 0)
        return rc;
    n = interleave(found, n, addrs);
    vega_quic_connect_opts co;
    memset(&co, 0, sizeof co);
    if (o)
        co = *o;
    if (!co.server_name && !is_ip_literal(host))
        co.server_name = host;
    struct he he = {.ep = ep, .o = &co, .dl = dl};
    vega__spin_init(&he.lock);
    vega_notify_init(&he.wake);
    struct he_attempt att[HE_MAX_ADDRS];
    size_t started = 0;
    rc = 0;
    for (;;) {
        vega__spin_lock(&he.lock);
        bool won = he.winner != NULL;
        size_t running = he.running;
        vega__spin_unlock(&he.lock);
        if (won || (started == n && running == 0))
            break;
        if (started < n && (running == 0 || rc == -ETIMEDOUT)) {
            att[started].he = &he;
            att[started].addr = addrs[started];
            vega_addr_set_port(&att[started].addr, port);
            vega__spin_lock(&he.lock);
            he.running++;
            vega__spin_unlock(&he.lock);
            if (vega_task_spawn(&att[started].task, he_attempt_task, &att[started]) < 0) {
                vega__spin_lock(&he.lock);
                he.running--;
                he.last_err = -ENOMEM;
                vega__spin_unlock(&he.lock);
                break;
            }
            started++;
        }
        vega_deadline next = started < n ? vega_deadline_in_ms(HE_ATTEMPT_DELAY_MS) : dl;
        rc = vega_notify_wait(&he.wake, next < dl ? next : dl);
        if (rc == -ECANCELED || (rc == -ETIMEDOUT && next >= dl))
            break;
    }
    for (size_t i = 0; i < started; i++)
        vega_task_cancel(att[i].task);
    for (size_t i = 0; i < started; i++)
        vega__ep_join(att[i].task); /* cancelled: they end at once */
    vega_notify_fini(&he.wake);
    if (he.winner) {
        *out = he.winner;
        return 0;
    }
    if (rc == -ECANCELED)
        return rc;
    return he.last_err ? he.last_err : -ETIMEDOUT;
}
