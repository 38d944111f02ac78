/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the framed-codec decoders (lib/io/codec.c) and the buffered reader
 * under them: arbitrary bytes, served in odd-sized pieces by an in-memory stream, decoded as
 * length-prefixed frames (1/2/4/8-byte prefixes), lines and chunks with small limits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/codec.h>
#include <vega/stream.h>

#include "fuzz_target.h"

struct mem {
    const uint8_t *p;
    size_t len, off, step;
};

static vega_ssize mem_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    (void)dl;
    struct mem *m = user;
    size_t n = m->len - m->off;
    if (n > len)
        n = len;
    if (n > m->step)
        n = m->step; /* short reads: frames straddle reads */
    memcpy(buf, m->p + m->off, n);
    m->off += n;
    return (vega_ssize)n;
}

static vega_ssize mem_write(void *user, const void *buf, size_t len, size_t *written,
                            vega_deadline dl)
{
    (void)user, (void)buf, (void)dl;
    *written = len;
    return (vega_ssize)len;
}

static int mem_close(void *user, vega_deadline dl)
{
    (void)user, (void)dl;
    return 0;
}

static const vega_stream_ops mem_ops = {
    .name = "fuzz", .read = mem_read, .write = mem_write, .close = mem_close};

static void decode(const uint8_t *data, size_t size, const vega_codec_opts *o, size_t step,
                   size_t bufcap)
{
    struct mem m = {data, size, 0, step};
    vega_stream *s;
    if (vega_stream_new(&s, &mem_ops, &m) < 0)
        abort();
    vega_bufreader br;
    if (vega_bufreader_init(&br, s, NULL, bufcap) < 0)
        abort();
    vega_decoder d;
    if (vega_decoder_init(&d, &br, o) < 0)
        abort();
    size_t total = 0;
    for (int i = 0; i < 100000; i++) {
        const void *frame;
        size_t len;
        int r = vega_decoder_read(&d, &frame, &len, VEGA_DEADLINE_NEVER);
        if (r == 0) {
            if (!frame || len > size)
                abort(); /* a frame can never hold more than the input */
            total += len;
            continue;
        }
        if (r == -EMSGSIZE)
            continue; /* oversize frame skipped: the decoder stays usable */
        if (r != VEGA_ERR_CLOSED && r != VEGA_ERR_PROTO)
            abort();
        break;
    }
    if (total > size)
        abort();
    vega_decoder_fini(&d);
    vega_bufreader_fini(&br);
    vega_stream_close(s, VEGA_DEADLINE_NEVER);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* The first byte picks the framing and the read step; the rest is the stream. */
    uint8_t sel = data[0];
    data++, size--;
    vega_codec_opts o;
    memset(&o, 0, sizeof o);
    static const unsigned prefixes[4] = {1, 2, 4, 8};
    switch (sel % 3) {
    case 0:
        o.kind = VEGA_CODEC_LENGTH;
        o.prefix_len = prefixes[(sel >> 2) & 3];
        o.max_frame = 1 + (size_t)(sel >> 4) * 97;
        break;
    case 1:
        o.kind = VEGA_CODEC_LINES;
        o.max_frame = 1 + (size_t)(sel >> 3) * 13;
        o.allow_partial_last_line = sel & 4;
        break;
    default:
        o.kind = VEGA_CODEC_BYTES;
        o.max_frame = 1 + (size_t)(sel >> 2) * 7;
        break;
    }
    decode(data, size, &o, 1 + (size_t)(sel % 7), 64 + (size_t)(sel % 5) * 64);
    return 0;
}
