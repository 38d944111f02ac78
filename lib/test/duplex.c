/* SPDX-License-Identifier: MIT */
/* The in-memory duplex: two connected streams, each direction a bounded ring buffer guarded by
 * one lock, with readers and writers waiting on stack-allocated nodes (sync_int.h). */
#include <stdlib.h>
#include <string.h>

#include <vega/test.h>

#include "sync_int.h"

/* One direction: bytes written by one end, read by the other. */
struct dpipe {
    unsigned char *buf;
    size_t cap, head, len; /* ring: len bytes from head */
    bool wr_shut;          /* the writer shut down or closed: the reader gets EOF once drained */
    bool rd_shut;          /* the reader shut down or closed: writes fail with -EPIPE */
    vega_waitq readers;    /* the lock word inside is unused: duplex.lock guards everything */
    vega_waitq writers;
};

struct duplex {
    unsigned lock;
    int ends;            /* ends not closed yet, under lock */
    struct dpipe dir[2]; /* dir[0]: written by end 0, read by end 1; dir[1] the other way */
};

struct dend {
    struct duplex *d;
    int side; /* 0 or 1 */
};

static struct dpipe *in_pipe(struct dend *e)
{
    return &e->d->dir[1 - e->side];
}

static struct dpipe *out_pipe(struct dend *e)
{
    return &e->d->dir[e->side];
}

/* Copies up to n bytes out of p (lock held). */
static size_t ring_get(struct dpipe *p, unsigned char *out, size_t n)
{
    if (n > p->len)
        n = p->len;
    size_t first = p->cap - p->head < n ? p->cap - p->head : n;
    memcpy(out, p->buf + p->head, first);
    memcpy(out + first, p->buf, n - first);
    p->head = (p->head + n) % p->cap;
    p->len -= n;
    return n;
}

/* Copies up to n bytes into p (lock held). */
static size_t ring_put(struct dpipe *p, const unsigned char *in, size_t n)
{
    size_t room = p->cap - p->len;
    if (n > room)
        n = room;
    size_t tail = (p->head + p->len) % p->cap;
    size_t first = p->cap - tail < n ? p->cap - tail : n;
    memcpy(p->buf + tail, in, first);
    memcpy(p->buf, in + first, n - first);
    p->len += n;
    return n;
}

static int check_cancel(void)
{
    return vega_task_is_cancelled() ? -ECANCELED : 0;
}

static vega_ssize duplex_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct dend *e = user;
    struct duplex *d = e->d;
    struct dpipe *p = in_pipe(e);
    int r = check_cancel();
    if (r < 0)
        return r;
    bool waited = false;
    vega_ssize res;
    vega__sync_lock(&d->lock);
    for (;;) {
        if (p->len > 0) {
            res = (vega_ssize)ring_get(p, buf, len);
            vega__waitq_wake_all(&p->writers, 0);
            break;
        }
        if (p->wr_shut || p->rd_shut) {
            res = 0;
            break;
        }
        if (dl == 0) {
            res = -ETIMEDOUT;
            break;
        }
        struct vega__waiter w;
        vega__waitq_push(&p->readers, &w);
        r = vega__waitq_wait(&d->lock, &p->readers, &w, dl, "duplex read");
        waited = true;
        if (r < 0) { /* timed out or cancelled, and nobody completed the wait */
            res = r;
            break;
        }
    }
    vega__sync_unlock(&d->lock);
    if (res >= 0 && !waited)
        (void)vega__sync_coop(dl);
    return res;
}

static vega_ssize duplex_writev(void *user, const struct iovec *iov, int iovcnt, size_t *written,
                                vega_deadline dl)
{
    struct dend *e = user;
    struct duplex *d = e->d;
    struct dpipe *p = out_pipe(e);
    size_t total = 0, done = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    int r = check_cancel();
    if (r < 0)
        return r;
    int idx = 0;     /* entry being copied */
    size_t skip = 0; /* bytes of iov[idx] already copied */
    bool waited = false;
    vega__sync_lock(&d->lock);
    while (r == 0 && done < total) {
        if (p->wr_shut || p->rd_shut) {
            r = -EPIPE;
            break;
        }
        if (p->len < p->cap) {
            size_t before = done;
            while (idx < iovcnt && p->len < p->cap) {
                size_t n = ring_put(p, (const unsigned char *)iov[idx].iov_base + skip,
                                    iov[idx].iov_len - skip);
                skip += n;
                done += n;
                if (skip == iov[idx].iov_len) {
                    idx++;
                    skip = 0;
                }
            }
            if (done > before)
                vega__waitq_wake_all(&p->readers, 0);
            continue;
        }
        if (dl == 0) {
            r = -ETIMEDOUT;
            break;
        }
        struct vega__waiter w;
        vega__waitq_push(&p->writers, &w);
        r = vega__waitq_wait(&d->lock, &p->writers, &w, dl, "duplex write");
        waited = true;
    }
    vega__sync_unlock(&d->lock);
    *written = done;
    if (r < 0)
        return r;
    if (!waited)
        (void)vega__sync_coop(dl);
    return (vega_ssize)total;
}

/* Shuts down directions of end e (lock held). */
static void shut(struct dend *e, int how)
{
    if (how == SHUT_WR || how == SHUT_RDWR) {
        struct dpipe *p = out_pipe(e);
        p->wr_shut = true;
        vega__waitq_wake_all(&p->readers, 0);
        vega__waitq_wake_all(&p->writers, 0);
    }
    if (how == SHUT_RD || how == SHUT_RDWR) {
        struct dpipe *p = in_pipe(e);
        p->rd_shut = true;
        p->len = p->head = 0; /* dropped, as a socket does */
        vega__waitq_wake_all(&p->readers, 0);
        vega__waitq_wake_all(&p->writers, 0);
    }
}

static int duplex_shutdown(void *user, int how, vega_deadline dl)
{
    struct dend *e = user;
    vega__sync_lock(&e->d->lock);
    shut(e, how);
    vega__sync_unlock(&e->d->lock);
    return 0;
}

static int duplex_close(void *user, vega_deadline dl)
{
    struct dend *e = user;
    struct duplex *d = e->d;
    vega__sync_lock(&d->lock);
    /* The peer still reads what this end wrote; what was written to this end is dropped. */
    shut(e, SHUT_RDWR);
    int left = --d->ends;
    vega__sync_unlock(&d->lock);
    free(e);
    if (left == 0) {
        free(d->dir[0].buf);
        free(d->dir[1].buf);
        free(d);
    }
    return 0;
}

static const vega_stream_ops duplex_ops = {
    .name = "duplex",
    .read = duplex_read,
    .writev = duplex_writev,
    .shutdown = duplex_shutdown,
    .close = duplex_close,
};

int vega_duplex_new(vega_stream **a, vega_stream **b, size_t capacity)
{
    if (!a || !b)
        return -EINVAL;
    if (capacity == 0)
        capacity = VEGA_DUPLEX_DEFAULT_CAP;
    struct duplex *d = calloc(1, sizeof(*d));
    struct dend *ea = malloc(sizeof(*ea)), *eb = malloc(sizeof(*eb));
    vega_stream *sa = NULL, *sb = NULL;
    if (!d || !ea || !eb)
        goto fail;
    d->ends = 2;
    for (int i = 0; i < 2; i++) {
        d->dir[i].cap = capacity;
        vega__waitq_init(&d->dir[i].readers);
        vega__waitq_init(&d->dir[i].writers);
        if (!(d->dir[i].buf = malloc(capacity)))
            goto fail;
    }
    *ea = (struct dend){.d = d, .side = 0};
    *eb = (struct dend){.d = d, .side = 1};
    if (vega_stream_new(&sa, &duplex_ops, ea) < 0 || vega_stream_new(&sb, &duplex_ops, eb) < 0)
        goto fail;
    *a = sa;
    *b = sb;
    return 0;
fail:
    if (sa) { /* the second end failed: closing the first as the last one frees everything */
        d->ends = 1;
        vega_stream_close(sa, 0);
        free(eb);
        return -ENOMEM;
    }
    free(ea);
    free(eb);
    if (d) {
        free(d->dir[0].buf);
        free(d->dir[1].buf);
        free(d);
    }
    return -ENOMEM;
}
