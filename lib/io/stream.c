/* SPDX-License-Identifier: MIT */
/* The stream interface: argument checks and the fallbacks that fill a partial vtable
 * (write from writev, writev from write, sendfile through a buffer). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/stream.h>

#include "io_int.h"

struct vega_stream {
    const vega_stream_ops *ops;
    void *user;
};

/* Entries shorter than this are copied together into one staging buffer by the writev
 * fallback, so a frame header and its payload do not cost two writes. */
#define STAGE_SMALL 512
#define STAGE_SIZE  2048
/* Chunk size of the sendfile fallback. */
#define SENDFILE_CHUNK 65536

int vega_stream_new(vega_stream **out, const vega_stream_ops *ops, void *user)
{
    if (!out || !ops || !ops->read || (!ops->write && !ops->writev))
        return -EINVAL;
    struct vega_stream *s = malloc(sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->ops = ops;
    s->user = user;
    *out = s;
    return 0;
}

void *vega_stream_user(const vega_stream *s)
{
    return s->user;
}

const vega_stream_ops *vega_stream_get_ops(const vega_stream *s)
{
    return s->ops;
}

vega_ssize vega_stream_read(vega_stream *s, void *buf, size_t len, vega_deadline dl)
{
    if (len == 0)
        return -EINVAL;
    vega_ssize r = s->ops->read(s->user, buf, len, dl);
    VEGA_ASSERT(r <= (vega_ssize)len);
    return r;
}

vega_ssize vega_stream_write(vega_stream *s, const void *buf, size_t len, size_t *written,
                             vega_deadline dl)
{
    size_t w = 0;
    vega_ssize r;
    if (len > SSIZE_MAX) {
        r = -EINVAL;
    } else if (s->ops->write) {
        r = s->ops->write(s->user, buf, len, &w, dl);
    } else {
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
        r = s->ops->writev(s->user, &iov, 1, &w, dl);
    }
    VEGA_ASSERT(r < 0 || (size_t)r == len);
    if (written)
        *written = w;
    return r;
}

/* writev through ops->write: small entries are gathered into a staging buffer first. */
static vega_ssize writev_by_write(vega_stream *s, const struct iovec *iov, int iovcnt, size_t total,
                                  size_t *written, vega_deadline dl)
{
    unsigned char stage[STAGE_SIZE];
    size_t staged = 0, done = 0, w;
    vega_ssize r = 0;
    for (int i = 0; i <= iovcnt; i++) {
        size_t n = i < iovcnt ? iov[i].iov_len : 0;
        if (i < iovcnt && n < STAGE_SMALL && staged + n <= sizeof(stage)) {
            if (n)
                memcpy(stage + staged, iov[i].iov_base, n);
            staged += n;
            continue;
        }
        if (staged) {
            w = 0;
            r = s->ops->write(s->user, stage, staged, &w, dl);
            done += w;
            staged = 0;
            if (r < 0)
                break;
        }
        if (i == iovcnt)
            break;
        if (n < STAGE_SMALL) { /* did not fit next to the others: start a new batch */
            memcpy(stage, iov[i].iov_base, n);
            staged = n;
            continue;
        }
        w = 0;
        r = s->ops->write(s->user, iov[i].iov_base, n, &w, dl);
        done += w;
        if (r < 0)
            break;
    }
    *written = done;
    return r < 0 ? r : (vega_ssize)total;
}

vega_ssize vega_stream_writev(vega_stream *s, const struct iovec *iov, int iovcnt, size_t *written,
                              vega_deadline dl)
{
    size_t total = 0, w = 0;
    vega_ssize r;
    if (written)
        *written = 0;
    if (iovcnt < 0 || (iovcnt > 0 && !iov))
        return -EINVAL;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    if (s->ops->writev)
        r = s->ops->writev(s->user, iov, iovcnt, &w, dl);
    else
        r = writev_by_write(s, iov, iovcnt, total, &w, dl);
    VEGA_ASSERT(r < 0 || (size_t)r == total);
    if (written)
        *written = w;
    return r;
}

/* sendfile through a heap buffer: pread a chunk, write it all, repeat. */
static vega_ssize sendfile_by_copy(vega_stream *s, int in_fd, off_t offset, size_t len,
                                   size_t *written, vega_deadline dl)
{
    size_t chunk = len < SENDFILE_CHUNK ? len : SENDFILE_CHUNK, done = 0;
    vega_ssize r = 0;
    unsigned char *buf = chunk ? malloc(chunk) : NULL;
    if (chunk && !buf)
        return -ENOMEM;
    while (done < len) {
        size_t want = len - done < chunk ? len - done : chunk;
        ssize_t n = pread(in_fd, buf, want, offset + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        if (n == 0) {
            r = -ENODATA; /* the file ended first */
            break;
        }
        size_t w = 0;
        r = vega_stream_write(s, buf, (size_t)n, &w, dl);
        done += w;
        if (r < 0)
            break;
    }
    free(buf);
    *written = done;
    return r < 0 ? r : (vega_ssize)len;
}

vega_ssize vega_stream_sendfile(vega_stream *s, int in_fd, off_t offset, size_t len,
                                size_t *written, vega_deadline dl)
{
    size_t w = 0;
    vega_ssize r;
    if (len > SSIZE_MAX || offset < 0)
        r = -EINVAL;
    else if (s->ops->sendfile)
        r = s->ops->sendfile(s->user, in_fd, offset, len, &w, dl);
    else
        r = sendfile_by_copy(s, in_fd, offset, len, &w, dl);
    if (written)
        *written = w;
    return r;
}

int vega_stream_shutdown(vega_stream *s, int how, vega_deadline dl)
{
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        return -EINVAL;
    if (!s->ops->shutdown)
        return -EOPNOTSUPP;
    return s->ops->shutdown(s->user, how, dl);
}

int vega_stream_close(vega_stream *s, vega_deadline dl)
{
    if (!s)
        return 0;
    int r = s->ops->close ? s->ops->close(s->user, dl) : 0;
    free(s);
    return r;
}
