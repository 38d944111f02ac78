/* SPDX-License-Identifier: MIT */
/* Framed codecs: option checks, sans-I/O encoding, the encoder (one gather write per frame) and
 * the resumable decoder (length-delimited, lines, byte chunks). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <vega/codec.h>

#include "io_int.h"

/* Checks o and fills in the defaults. Returns 0 or -EINVAL. */
static int opts_norm(vega_codec_opts *out, const vega_codec_opts *o)
{
    if (!o)
        return -EINVAL;
    *out = *o;
    switch (o->kind) {
    case VEGA_CODEC_LENGTH: {
        unsigned p = o->prefix_len ? o->prefix_len : 4;
        if (p != 1 && p != 2 && p != 4 && p != 8)
            return -EINVAL;
        out->prefix_len = p;
        if (!out->max_frame)
            out->max_frame = VEGA_CODEC_DEFAULT_MAX_FRAME;
        /* The prefix bounds the frame: 2^(8p) - 1. */
        if (p < 8) {
            size_t lim = ((size_t)1 << (8 * p)) - 1;
            if (out->max_frame > lim)
                out->max_frame = lim;
        }
        return 0;
    }
    case VEGA_CODEC_LINES:
        if (!out->max_frame)
            out->max_frame = VEGA_CODEC_DEFAULT_MAX_LINE;
        if (out->max_frame == SIZE_MAX)
            out->max_frame = SIZE_MAX - 1; /* the decoder keeps room for a '\r' */
        return 0;
    case VEGA_CODEC_BYTES:
        if (!out->max_frame)
            out->max_frame = VEGA_CODEC_DEFAULT_CHUNK;
        return 0;
    }
    return -EINVAL;
}

/* What goes before and after the payload of one frame, after the limits were checked.
 * Returns 0, -EMSGSIZE or -EINVAL. */
static int frame_parts(const vega_codec_opts *o, const void *frame, size_t len,
                       unsigned char hdr[8], size_t *hlen, const char **trail, size_t *tlen)
{
    *hlen = *tlen = 0;
    *trail = "";
    switch (o->kind) {
    case VEGA_CODEC_LENGTH:
        if (len > o->max_frame)
            return -EMSGSIZE;
        *hlen = o->prefix_len;
        for (unsigned i = 0; i < o->prefix_len; i++)
            hdr[i] = (unsigned char)((uint64_t)len >> (8 * (o->prefix_len - 1 - i)));
        return 0;
    case VEGA_CODEC_LINES:
        if (len > o->max_frame)
            return -EMSGSIZE;
        if (len && memchr(frame, '\n', len))
            return -EINVAL;
        *trail = o->crlf ? "\r\n" : "\n";
        *tlen = o->crlf ? 2 : 1;
        return 0;
    case VEGA_CODEC_BYTES:
        return 0;
    }
    return -EINVAL;
}

vega_ssize vega_codec_encode_versioned(const vega_codec_opts *opts, const void *frame, size_t len,
                                       void *out, size_t cap, int opts_version)
{
    if (opts_version != VEGA_CODEC_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    vega_codec_opts o;
    unsigned char hdr[8];
    const char *trail;
    size_t hlen, tlen;
    int r = opts_norm(&o, opts);
    if (r < 0)
        return r;
    if (len && !frame)
        return -EINVAL;
    if ((r = frame_parts(&o, frame, len, hdr, &hlen, &trail, &tlen)) < 0)
        return r;
    if (len > SSIZE_MAX - hlen - tlen)
        return -EMSGSIZE;
    size_t total = hlen + len + tlen;
    if (total > cap)
        return VEGA_ERR_NOBUF;
    unsigned char *p = out;
    memcpy(p, hdr, hlen);
    if (len)
        memcpy(p + hlen, frame, len);
    memcpy(p + hlen + len, trail, tlen);
    return (vega_ssize)total;
}

int vega_encoder_init_versioned(vega_encoder *e, vega_stream *s, const vega_codec_opts *o,
                                int opts_version)
{
    if (opts_version != VEGA_CODEC_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!e || !s)
        return -EINVAL;
    int r = opts_norm(&e->o_, o);
    if (r < 0)
        return r;
    e->s_ = s;
    return 0;
}

vega_ssize vega_encoder_write(vega_encoder *e, const void *frame, size_t len, size_t *written,
                              vega_deadline dl)
{
    unsigned char hdr[8];
    const char *trail;
    size_t hlen, tlen;
    if (written)
        *written = 0;
    if (len && !frame)
        return -EINVAL;
    int r = frame_parts(&e->o_, frame, len, hdr, &hlen, &trail, &tlen);
    if (r < 0)
        return r;
    struct iovec iov[3];
    int n = 0;
    if (hlen)
        iov[n++] = (struct iovec){.iov_base = hdr, .iov_len = hlen};
    if (len)
        iov[n++] = (struct iovec){.iov_base = (void *)frame, .iov_len = len};
    if (tlen)
        iov[n++] = (struct iovec){.iov_base = (void *)trail, .iov_len = tlen};
    if (n == 0)
        return 0; /* an empty BYTES frame: nothing to send */
    return vega_stream_writev(e->s_, iov, n, written, dl);
}

/* ---- decoder --------------------------------------------------------------------------------- */

enum {
    D_HEAD = 0, /* LENGTH: between frames or inside the prefix; LINES: inside a line */
    D_BODY,     /* LENGTH: inside the payload */
    D_SKIP,     /* LENGTH: skipping an oversized payload; LINES: discarding a long line */
};

/* Returned for empty frames so that *frame is never NULL. */
static const unsigned char empty_frame[1];

int vega_decoder_init_versioned(vega_decoder *d, vega_bufreader *br, const vega_codec_opts *o,
                                int opts_version)
{
    if (opts_version != VEGA_CODEC_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    vega_codec_opts norm;
    if (!d || !br)
        return -EINVAL;
    int r = opts_norm(&norm, o);
    if (r < 0)
        return r;
    memset(d, 0, sizeof(*d));
    d->o_ = norm;
    d->br_ = br;
    d->state_ = D_HEAD;
    return 0;
}

void vega_decoder_fini(vega_decoder *d)
{
    free(d->frame_);
    d->frame_ = NULL;
    d->frame_cap_ = 0;
}

/* Makes room for n bytes (n <= limit, the frame bound already checked): doubles up to limit.
 * Returns 0 or -ENOMEM (nothing changed). */
static int reserve(vega_decoder *d, size_t n, size_t limit)
{
    if (n <= d->frame_cap_)
        return 0;
    size_t cap = d->frame_cap_ > limit / 2 ? limit : d->frame_cap_ * 2;
    if (cap < n)
        cap = n;
    if (cap < 64 && limit >= 64)
        cap = 64;
    unsigned char *p = realloc(d->frame_, cap);
    if (!p)
        return -ENOMEM;
    d->frame_ = p;
    d->frame_cap_ = cap;
    return 0;
}

static void give(vega_decoder *d, size_t len, const void **frame, size_t *outlen)
{
    *frame = len ? (const void *)d->frame_ : (const void *)empty_frame;
    *outlen = len;
}

/* Consumes the d->skip_ bytes of an oversized frame. Returns 0 when done, VEGA_ERR_PROTO at
 * end of stream, or the stream's error (d->skip_ then says what is left). */
static int skip_bytes(vega_decoder *d, vega_deadline dl)
{
    while (d->skip_ > 0) {
        const void *p;
        vega_ssize r = vega_bufreader_peek(d->br_, &p, 1, dl);
        if (r < 0)
            return (int)r;
        if (r == 0)
            return VEGA_ERR_PROTO;
        size_t n = (uint64_t)r < d->skip_ ? (size_t)r : (size_t)d->skip_;
        vega_bufreader_consume(d->br_, n);
        d->skip_ -= n;
    }
    return 0;
}

static int read_length(vega_decoder *d, const void **frame, size_t *len, vega_deadline dl)
{
    const unsigned plen = d->o_.prefix_len;
    for (;;) {
        switch (d->state_) {
        case D_SKIP: {
            int r = skip_bytes(d, dl);
            if (r == VEGA_ERR_PROTO) { /* the stream ended inside the oversized frame */
                d->state_ = D_HEAD;
                d->skip_ = 0;
            }
            if (r < 0)
                return r;
            d->state_ = D_HEAD;
            break;
        }
        case D_HEAD: {
            while (d->hdr_have_ < plen) {
                vega_ssize r =
                    vega_bufreader_read(d->br_, d->hdr_ + d->hdr_have_, plen - d->hdr_have_, dl);
                if (r < 0)
                    return (int)r;
                if (r == 0) {
                    bool mid = d->hdr_have_ > 0;
                    d->hdr_have_ = 0;
                    return mid ? VEGA_ERR_PROTO : VEGA_ERR_CLOSED;
                }
                d->hdr_have_ += (unsigned)r;
            }
            uint64_t n = 0;
            for (unsigned i = 0; i < plen; i++)
                n = n << 8 | d->hdr_[i];
            d->hdr_have_ = 0;
            if (n > d->o_.max_frame) {
                /* Checked before anything is allocated for the frame. */
                d->skip_ = n;
                d->state_ = D_SKIP;
                return -EMSGSIZE;
            }
            d->need_ = (size_t)n;
            d->have_ = 0;
            d->state_ = D_BODY;
            break;
        }
        case D_BODY: {
            int r = reserve(d, d->need_, d->o_.max_frame);
            if (r < 0)
                return r;
            while (d->have_ < d->need_) {
                vega_ssize n =
                    vega_bufreader_read(d->br_, d->frame_ + d->have_, d->need_ - d->have_, dl);
                if (n < 0)
                    return (int)n;
                if (n == 0) {
                    d->state_ = D_HEAD;
                    return VEGA_ERR_PROTO;
                }
                d->have_ += (size_t)n;
            }
            d->state_ = D_HEAD;
            give(d, d->need_, frame, len);
            return 0;
        }
        }
    }
}

/* Discards through the next '\n'. Returns 0 when it was found, 1 at end of stream, or the
 * stream's error. */
static int discard_line(vega_decoder *d, vega_deadline dl)
{
    for (;;) {
        const void *p;
        vega_ssize r = vega_bufreader_peek(d->br_, &p, 1, dl);
        if (r <= 0)
            return r < 0 ? (int)r : 1;
        const unsigned char *nl = memchr(p, '\n', (size_t)r);
        if (nl) {
            vega_bufreader_consume(d->br_, (size_t)(nl - (const unsigned char *)p) + 1);
            return 0;
        }
        vega_bufreader_consume(d->br_, (size_t)r);
    }
}

static int read_line(vega_decoder *d, const void **frame, size_t *len, vega_deadline dl)
{
    const size_t max = d->o_.max_frame, limit = max + 1; /* room for the '\r' of "\r\n" */
    for (;;) {
        if (d->state_ == D_SKIP) {
            int r = discard_line(d, dl);
            if (r < 0)
                return r;
            d->state_ = D_HEAD;
            if (r == 1)
                return VEGA_ERR_CLOSED; /* the long line was already reported */
        }
        const void *p;
        vega_ssize r = vega_bufreader_peek(d->br_, &p, 1, dl);
        if (r < 0)
            return (int)r;
        if (r == 0) {
            size_t have = d->have_;
            d->have_ = 0;
            if (have == 0)
                return VEGA_ERR_CLOSED;
            if (!d->o_.allow_partial_last_line)
                return VEGA_ERR_PROTO;
            give(d, have, frame, len);
            return 0;
        }
        const unsigned char *nl = memchr(p, '\n', (size_t)r);
        size_t seg = nl ? (size_t)(nl - (const unsigned char *)p) : (size_t)r;
        if (!vega__fits(d->have_, seg, limit)) {
            /* Longer than max_frame whatever follows: report now, drop the rest later. */
            vega_bufreader_consume(d->br_, nl ? seg + 1 : seg);
            d->have_ = 0;
            d->state_ = nl ? D_HEAD : D_SKIP;
            return -EMSGSIZE;
        }
        int e = reserve(d, d->have_ + seg, limit);
        if (e < 0)
            return e;
        if (seg)
            memcpy(d->frame_ + d->have_, p, seg);
        d->have_ += seg;
        VEGA_ASSERT(d->have_ <= limit && d->have_ <= d->frame_cap_);
        vega_bufreader_consume(d->br_, nl ? seg + 1 : seg);
        if (!nl)
            continue;
        size_t n = d->have_;
        d->have_ = 0;
        if (n && d->frame_[n - 1] == '\r')
            n--;
        if (n > max)
            return -EMSGSIZE; /* max + 1 bytes, no '\r': one too many, already consumed */
        give(d, n, frame, len);
        return 0;
    }
}

static int read_chunk(vega_decoder *d, const void **frame, size_t *len, vega_deadline dl)
{
    int e = reserve(d, d->o_.max_frame, d->o_.max_frame);
    if (e < 0)
        return e;
    vega_ssize r = vega_bufreader_read(d->br_, d->frame_, d->o_.max_frame, dl);
    if (r < 0)
        return (int)r;
    if (r == 0)
        return VEGA_ERR_CLOSED;
    give(d, (size_t)r, frame, len);
    return 0;
}

int vega_decoder_read(vega_decoder *d, const void **frame, size_t *len, vega_deadline dl)
{
    if (!frame || !len)
        return -EINVAL;
    switch (d->o_.kind) {
    case VEGA_CODEC_LENGTH:
        return read_length(d, frame, len, dl);
    case VEGA_CODEC_LINES:
        return read_line(d, frame, len, dl);
    case VEGA_CODEC_BYTES:
        return read_chunk(d, frame, len, dl);
    }
    return -EINVAL;
}
