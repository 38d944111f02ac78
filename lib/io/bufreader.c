/* SPDX-License-Identifier: MIT */
/* The buffered reader: a fixed-capacity buffer over any stream, with exact reads, delimiter
 * search and peek; timed-out or cancelled calls leave buffered bytes in place. */
#include <stdlib.h>
#include <string.h>

#include <vega/stream.h>

#include "io_int.h"

int vega_bufreader_init(vega_bufreader *br, vega_stream *s, void *buf, size_t cap)
{
    if (!br || !s || (buf && cap == 0))
        return -EINVAL;
    memset(br, 0, sizeof(*br));
    if (!buf) {
        if (cap == 0)
            cap = VEGA_BUFREADER_DEFAULT_CAP;
        buf = malloc(cap);
        if (!buf)
            return -ENOMEM;
        br->owned_ = true;
    }
    br->s_ = s;
    br->buf_ = buf;
    br->cap_ = cap;
    return 0;
}

void vega_bufreader_fini(vega_bufreader *br)
{
    if (br->owned_)
        free(br->buf_);
    br->buf_ = NULL;
    br->cap_ = br->pos_ = br->end_ = 0;
    br->owned_ = false;
}

size_t vega_bufreader_buffered(const vega_bufreader *br)
{
    return br->end_ - br->pos_;
}

size_t vega_bufreader_capacity(const vega_bufreader *br)
{
    return br->cap_;
}

/* Reads once from the stream into the free tail of the buffer, after moving the buffered bytes
 * to the front when the tail is short of `want` more. Returns bytes added (> 0), 0 at end of
 * stream (remembered), or the stream's error. */
static vega_ssize fill(vega_bufreader *br, size_t want, vega_deadline dl)
{
    if (br->eof_)
        return 0;
    if (br->pos_ == br->end_) {
        br->pos_ = br->end_ = 0;
    } else if (br->cap_ - br->end_ < want) {
        memmove(br->buf_, br->buf_ + br->pos_, br->end_ - br->pos_);
        br->end_ -= br->pos_;
        br->pos_ = 0;
    }
    VEGA_ASSERT(br->end_ < br->cap_);
    vega_ssize n = vega_stream_read(br->s_, br->buf_ + br->end_, br->cap_ - br->end_, dl);
    if (n == 0)
        br->eof_ = true;
    else if (n > 0)
        br->end_ += (size_t)n;
    return n;
}

/* Fills until at least want (<= cap) bytes are buffered or the stream ended. Returns the bytes
 * buffered (< want only at end of stream) or the stream's error. */
static vega_ssize fill_to(vega_bufreader *br, size_t want, vega_deadline dl)
{
    while (vega_bufreader_buffered(br) < want) {
        vega_ssize n = fill(br, want - vega_bufreader_buffered(br), dl);
        if (n < 0)
            return n;
        if (n == 0)
            break;
    }
    return (vega_ssize)vega_bufreader_buffered(br);
}

static size_t take(vega_bufreader *br, void *out, size_t n)
{
    size_t have = vega_bufreader_buffered(br);
    if (n > have)
        n = have;
    memcpy(out, br->buf_ + br->pos_, n);
    br->pos_ += n;
    return n;
}

vega_ssize vega_bufreader_read(vega_bufreader *br, void *buf, size_t n, vega_deadline dl)
{
    if (n == 0)
        return -EINVAL;
    if (vega_bufreader_buffered(br) == 0) {
        if (br->eof_)
            return 0;
        if (n >= br->cap_) { /* large read: skip the copy */
            vega_ssize r = vega_stream_read(br->s_, buf, n, dl);
            if (r == 0)
                br->eof_ = true;
            return r;
        }
        vega_ssize r = fill(br, 1, dl);
        if (r <= 0)
            return r;
    }
    return (vega_ssize)take(br, buf, n);
}

vega_ssize vega_bufreader_read_exact(vega_bufreader *br, void *buf, size_t n, vega_deadline dl)
{
    if (n == 0)
        return -EINVAL;
    if (n <= br->cap_) {
        vega_ssize r = fill_to(br, n, dl);
        if (r < 0)
            return r;
        if ((size_t)r < n) {
            br->pos_ = br->end_; /* truncated: what came is consumed */
            return r == 0 ? VEGA_ERR_CLOSED : VEGA_ERR_PROTO;
        }
        take(br, buf, n);
        return (vega_ssize)n;
    }
    size_t got = take(br, buf, n);
    while (got < n) {
        vega_ssize r = vega_bufreader_read(br, (unsigned char *)buf + got, n - got, dl);
        if (r < 0)
            return r;
        if (r == 0)
            return got == 0 ? VEGA_ERR_CLOSED : VEGA_ERR_PROTO;
        got += (size_t)r;
    }
    return (vega_ssize)n;
}

vega_ssize vega_bufreader_read_until(vega_bufreader *br, int delim, void *out, size_t max,
                                     vega_deadline dl)
{
    if (max == 0 || max > br->cap_ || delim < 0 || delim > 255)
        return -EINVAL;
    size_t scanned = 0; /* bytes already searched, from pos_ */
    for (;;) {
        size_t have = vega_bufreader_buffered(br);
        size_t lim = have < max ? have : max;
        if (lim > scanned) {
            const unsigned char *p = memchr(br->buf_ + br->pos_ + scanned, delim, lim - scanned);
            if (p) {
                size_t len = (size_t)(p - (br->buf_ + br->pos_)) + 1;
                return (vega_ssize)take(br, out, len);
            }
            scanned = lim;
        }
        if (scanned == max)
            return -EMSGSIZE;
        vega_ssize r = fill(br, max - have, dl);
        if (r < 0)
            return r;
        if (r == 0) /* end of stream: hand over what is left */
            return have ? (vega_ssize)take(br, out, have) : 0;
    }
}

vega_ssize vega_bufreader_peek(vega_bufreader *br, const void **data, size_t want, vega_deadline dl)
{
    if (want == 0 || want > br->cap_)
        return -EINVAL;
    vega_ssize r = fill_to(br, want, dl);
    if (r >= 0)
        *data = br->buf_ + br->pos_;
    return r;
}

int vega_bufreader_consume(vega_bufreader *br, size_t n)
{
    if (n > vega_bufreader_buffered(br))
        return -EINVAL;
    br->pos_ += n;
    return 0;
}
