/* SPDX-License-Identifier: MIT */
/* QUIC streams as vega_streams (RFC 9000 §2-§3): reads wait for STREAM_READABLE and return 0
 * at the peer's FIN, writes are all-or-error and wait for STREAM_WRITABLE (flow control and
 * the send buffer), shutdown(SHUT_WR) is a FIN and shutdown(SHUT_RD) a STOP_SENDING, close
 * finishes what the caller left open. Code written against TCP streams runs over them. */
#include <string.h>
#include <sys/socket.h>

#include "ep_int.h"

static vega_ssize qs_read(void *user, void *buf, size_t len, vega_deadline dl);
static vega_ssize qs_write(void *user, const void *buf, size_t len, size_t *written,
                           vega_deadline dl);
static int qs_shutdown(void *user, int how, vega_deadline dl);
static int qs_close(void *user, vega_deadline dl);

static const vega_stream_ops qs_ops = {
    .name = "quic",
    .read = qs_read,
    .write = qs_write,
    .shutdown = qs_shutdown,
    .close = qs_close,
};

static struct ep_stream *find(struct vega_quic_ep_conn *c, uint64_t id)
{
    for (struct ep_stream *st = c->streams; st; st = st->next)
        if (st->id == id)
            return st;
    return NULL;
}

bool vega__ep_stream_event(struct vega_quic_ep_conn *c, const vega_quic_event *ev)
{
    if (ev->type == VEGA_QUIC_EV_STREAMS_AVAILABLE) {
        vega_notify_all(&c->credit_wake);
        return false; /* the application may want it too */
    }
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_OPENED:
    case VEGA_QUIC_EV_STREAM_READABLE:
    case VEGA_QUIC_EV_STREAM_WRITABLE:
    case VEGA_QUIC_EV_STREAM_RESET:
    case VEGA_QUIC_EV_STREAM_STOP:
    case VEGA_QUIC_EV_STREAM_DONE:
        break;
    default:
        return false;
    }
    struct ep_stream *st = find(c, ev->stream_id);
    if (!st)
        return false;
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_RESET:
        st->reset_recv = true;
        st->err_code = ev->error_code;
        vega_notify_one(&st->rd);
        break;
    case VEGA_QUIC_EV_STREAM_STOP:
        st->stop_recv = true;
        st->err_code = ev->error_code;
        vega_notify_one(&st->wr);
        break;
    case VEGA_QUIC_EV_STREAM_WRITABLE:
        vega_notify_one(&st->wr);
        break;
    case VEGA_QUIC_EV_STREAM_DONE:
        break;
    default:
        vega_notify_one(&st->rd);
        break;
    }
    return true;
}

void vega__ep_stream_conn_ended(struct vega_quic_ep_conn *c)
{
    for (struct ep_stream *st = c->streams; st; st = st->next) {
        st->closed_conn = true;
        vega_notify_one(&st->rd);
        vega_notify_one(&st->wr);
    }
    vega_notify_all(&c->credit_wake);
}

/* Makes the vega_stream for stream id of c (c locked). */
static int wrap(struct vega_quic_ep_conn *c, uint64_t id, bool local, vega_stream **out)
{
    struct ep_stream *st = vega__mem_calloc(c->mem, 1, sizeof *st);
    if (!st)
        return -ENOMEM;
    int rc = vega_stream_new(out, &qs_ops, st);
    if (rc < 0) {
        vega__mem_free(c->mem, st);
        return rc;
    }
    st->c = c;
    st->id = id;
    st->local = local;
    st->bidi = (id & 2) == 0;
    /* a unidirectional stream only goes one way: the other side is done from the start */
    if (!st->bidi) {
        if (local)
            st->fin_recv = true;
        else
            st->fin_sent = true;
    }
    vega_notify_init(&st->rd);
    vega_notify_init(&st->wr);
    st->next = c->streams;
    c->streams = st;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return 0;
}

int vega_quic_ep_stream_open(vega_quic_ep_conn *c, bool bidi, vega_stream **out, uint64_t *id,
                             vega_deadline dl)
{
    if (!c || !out)
        return -EINVAL;
    *out = NULL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0)
            return -ECANCELED;
        if (!c->qc || c->close.closed) {
            vega_mutex_unlock(&c->mu);
            return VEGA_ERR_QUIC_EP_CLOSED;
        }
        uint64_t sid;
        int rc = vega_quic_stream_open(c->qc, bidi, &sid);
        if (rc == 0) {
            rc = wrap(c, sid, true, out);
            if (rc < 0)
                (void)vega_quic_stream_reset(c->qc, sid, 0);
            else if (id)
                *id = sid;
        }
        vega__ep_conn_after(c);
        vega__ep_conn_unlock(c, true);
        if (rc != VEGA_ERR_FULL)
            return rc == VEGA_ERR_CLOSED ? VEGA_ERR_QUIC_EP_CLOSED : rc;
        rc = vega_notify_wait(&c->credit_wake, dl);
        if (rc < 0)
            return rc;
    }
}

int vega_quic_ep_stream_accept(vega_quic_ep_conn *c, vega_stream **out, uint64_t *id,
                               vega_deadline dl)
{
    if (!c || !out)
        return -EINVAL;
    *out = NULL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0)
            return -ECANCELED;
        int rc = 1;
        if (c->accept_len) {
            uint64_t sid = c->accept_q[c->accept_head];
            c->accept_head = (c->accept_head + 1) % EP_STREAM_ACCEPT_MAX;
            c->accept_len--;
            rc = wrap(c, sid, false, out);
            if (rc == 0 && id)
                *id = sid;
        } else if (!c->qc || c->close.closed) {
            rc = VEGA_ERR_QUIC_EP_CLOSED;
        }
        vega_mutex_unlock(&c->mu);
        if (rc <= 0)
            return rc;
        rc = vega_notify_wait(&c->accept_wake, dl);
        if (rc < 0)
            return rc;
    }
}

uint64_t vega_quic_ep_stream_error(vega_stream *s)
{
    if (!s || vega_stream_get_ops(s) != &qs_ops)
        return 0;
    const struct ep_stream *st = vega_stream_user(s);
    return st->err_code;
}

/* ---- the vega_stream operations ----------------------------------------------------------- */

static vega_ssize qs_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct ep_stream *st = user;
    struct vega_quic_ep_conn *c = st->c;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0)
            return -ECANCELED;
        vega_ssize n = 0;
        bool fin = false;
        if (st->fin_recv) {
            vega_mutex_unlock(&c->mu);
            return 0;
        }
        if (st->reset_recv) {
            n = VEGA_ERR_QUIC_EP_RESET;
        } else if (!c->qc || c->close.closed) {
            n = VEGA_ERR_QUIC_EP_CLOSED;
        } else {
            n = vega_quic_stream_read(c->qc, st->id, buf, len, &fin);
            if (n == VEGA_ERR_PROTO)
                n = VEGA_ERR_QUIC_EP_RESET;
            if (fin)
                st->fin_recv = true;
            vega__ep_conn_after(c);
        }
        /* a read returns flow-control credit: the send task may have a MAX_STREAM_DATA to send */
        vega__ep_conn_unlock(c, n > 0);
        if (n != 0 || fin)
            return n;
        int rc = vega_notify_wait(&st->rd, dl);
        if (rc < 0)
            return rc;
    }
}

static vega_ssize qs_write(void *user, const void *buf, size_t len, size_t *written,
                           vega_deadline dl)
{
    struct ep_stream *st = user;
    struct vega_quic_ep_conn *c = st->c;
    size_t off = 0;
    *written = 0;
    for (;;) {
        if (vega__ep_conn_lock(c) < 0)
            return -ECANCELED;
        vega_ssize w;
        if (st->stop_recv)
            w = VEGA_ERR_QUIC_EP_RESET;
        else if (!c->qc || c->close.closed)
            w = VEGA_ERR_QUIC_EP_CLOSED;
        else if (st->fin_sent)
            w = -EPIPE;
        else
            w = vega_quic_stream_write(c->qc, st->id, (const uint8_t *)buf + off, len - off, false);
        if (w >= 0)
            vega__ep_conn_after(c);
        vega__ep_conn_unlock(c, w > 0);
        if (w < 0) {
            *written = off;
            return w == VEGA_ERR_CLOSED ? VEGA_ERR_QUIC_EP_CLOSED : w;
        }
        off += (size_t)w;
        *written = off;
        if (off == len)
            return (vega_ssize)len;
        int rc = vega_notify_wait(&st->wr, dl);
        if (rc < 0)
            return rc;
    }
}

static int qs_shutdown(void *user, int how, vega_deadline dl)
{
    (void)dl;
    struct ep_stream *st = user;
    struct vega_quic_ep_conn *c = st->c;
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        return -EINVAL;
    if (vega__ep_conn_lock(c) < 0)
        return -ECANCELED;
    int rc = 0;
    if (!c->qc || c->close.closed) {
        rc = VEGA_ERR_QUIC_EP_CLOSED;
    } else {
        if ((how == SHUT_WR || how == SHUT_RDWR) && !st->fin_sent) {
            vega_ssize w = vega_quic_stream_write(c->qc, st->id, NULL, 0, true);
            if (w < 0 && !st->stop_recv)
                rc = (int)w;
            st->fin_sent = true;
        }
        if ((how == SHUT_RD || how == SHUT_RDWR) && !st->fin_recv) {
            (void)vega_quic_stream_stop(c->qc, st->id, 0);
            st->fin_recv = true;
        }
        vega__ep_conn_after(c);
    }
    vega__ep_conn_unlock(c, true);
    return rc;
}

static int qs_close(void *user, vega_deadline dl)
{
    struct ep_stream *st = user;
    struct vega_quic_ep_conn *c = st->c;
    (void)qs_shutdown(st, SHUT_RDWR, dl);
    /* unlink (the lock even when the task was cancelled: the stream must not stay listed) */
    while (vega_mutex_lock(&c->mu, VEGA_DEADLINE_NEVER) < 0)
        (void)vega_yield();
    for (struct ep_stream **p = &c->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    vega_mutex_unlock(&c->mu);
    vega_notify_fini(&st->rd);
    vega_notify_fini(&st->wr);
    vega__mem_free(c->mem, st);
    vega_quic_ep_conn_release(c);
    return 0;
}
