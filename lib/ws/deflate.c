/* SPDX-License-Identifier: MIT */
/* permessage-deflate (RFC 7692 §7): raw DEFLATE (RFC 1951) per message over zlib, flushed with
 * an empty stored block whose 00 00 ff ff tail is stripped (§7.2.1) and put back on receipt
 * (§7.2.2), with the negotiated windows and context takeover. zlib is used directly: lib/compress
 * frames zlib/gzip streams for HTTP and has no raw per-message flush or window bits 8; its
 * allocation goes through the connection's vega_mem like everything else here. */
#include <limits.h>
#include <string.h>

#include "ws_int.h"

static voidpf zalloc(voidpf opaque, uInt items, uInt size)
{
    const vega_mem *m = opaque;
    return vega__mem_calloc(m, items, size);
}

static void zfree(voidpf opaque, voidpf p)
{
    vega__mem_free((const vega_mem *)opaque, p);
}

static int zerr(int zr)
{
    return zr == Z_MEM_ERROR ? -ENOMEM : VEGA_ERR_INTERNAL;
}

static bool ours_no_takeover(const vega_ws_conn *c)
{
    return c->o.role == VEGA_WS_SERVER ? c->o.deflate.server_no_context_takeover
                                       : c->o.deflate.client_no_context_takeover;
}

static bool peers_no_takeover(const vega_ws_conn *c)
{
    return c->o.role == VEGA_WS_SERVER ? c->o.deflate.client_no_context_takeover
                                       : c->o.deflate.server_no_context_takeover;
}

int vega__ws_deflate_init(vega_ws_conn *c)
{
    /* vega_mem is retained by contract; NULL means libc, which zlib's own Z_NULL hooks are. */
    voidpf opaque = (voidpf)(uintptr_t)c->o.mem;
    int bits = c->o.role == VEGA_WS_SERVER ? c->o.deflate.server_max_window_bits
                                           : c->o.deflate.client_max_window_bits;
    int strategy = Z_DEFAULT_STRATEGY;
    if (bits == 8) {
        /* zlib's raw deflate refuses an 8-bit window. Huffman-only output has no back
         * references at all, so it is valid for any window the peer allows. */
        bits = 9;
        strategy = Z_HUFFMAN_ONLY;
    }
    c->tx.zalloc = c->o.mem ? zalloc : Z_NULL;
    c->tx.zfree = c->o.mem ? zfree : Z_NULL;
    c->tx.opaque = opaque;
    int zr = deflateInit2(&c->tx, c->o.deflate_level, Z_DEFLATED, -bits, 8, strategy);
    if (zr != Z_OK)
        return zerr(zr);
    c->tx_init = true;
    c->zout = vega__mem_malloc(c->o.mem, VEGA__WS_SCRATCH);
    if (!c->zout)
        return -ENOMEM;
    /* The receive window is always the largest: a peer that keeps within a smaller one it
     * agreed to is read the same, and a little tolerance costs 32 KiB at most. */
    c->rx.zalloc = c->tx.zalloc;
    c->rx.zfree = c->tx.zfree;
    c->rx.opaque = opaque;
    zr = inflateInit2(&c->rx, -15);
    if (zr != Z_OK)
        return zerr(zr);
    c->rx_init = true;
    return 0;
}

void vega__ws_deflate_fini(vega_ws_conn *c)
{
    if (c->tx_init)
        deflateEnd(&c->tx);
    if (c->rx_init)
        inflateEnd(&c->rx);
    c->tx_init = c->rx_init = false;
    vega__mem_free(c->o.mem, c->zout);
    c->zout = NULL;
}

int vega__ws_deflate_fragment(vega_ws_conn *c, const uint8_t *in, size_t len, bool fin,
                              size_t *out_len)
{
    size_t need = len + len / 8 + 64;
    if (need > c->zbuf_cap) {
        uint8_t *b = vega__mem_realloc(c->o.mem, c->zbuf, need);
        if (!b)
            return -ENOMEM;
        c->zbuf = b;
        c->zbuf_cap = need;
    }
    z_stream *z = &c->tx;
    z->next_in = (Bytef *)(uintptr_t)in;
    z->next_out = c->zbuf;
    size_t in_left = len, out_left = c->zbuf_cap;
    int zr;
    do {
        uInt ai = (uInt)VEGA__MIN(in_left, (size_t)UINT_MAX);
        uInt ao = (uInt)VEGA__MIN(out_left, (size_t)UINT_MAX);
        z->avail_in = ai;
        z->avail_out = ao;
        /* Z_SYNC_FLUSH once the last input is in: the data so far ends on a byte boundary
         * with an empty stored block (§7.2.1). */
        zr = deflate(z, in_left == ai ? Z_SYNC_FLUSH : Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return zerr(zr);
        in_left -= ai - z->avail_in;
        out_left -= ao - z->avail_out;
    } while ((in_left > 0 || z->avail_out == 0) && out_left > 0);
    if (in_left > 0 || out_left == 0)
        return VEGA_ERR_INTERNAL; /* the bound above was wrong: a bug */
    size_t n = c->zbuf_cap - out_left;
    if (fin) {
        /* §7.2.1: "Remove 4 octets (that are 0x00 0x00 0xff 0xff) from the tail end."
         * Nothing at all comes out when nothing came in since the last fragment's flush (which
         * ended on a byte boundary): the message then ends with one 0x00 byte, which with the
         * tail the receiver appends is an empty stored block (§7.2.3.6). */
        if (n == 0) {
            c->zbuf[0] = 0x00;
            n = 5;
        } else if (n < 4 || memcmp(c->zbuf + n - 4, "\x00\x00\xff\xff", 4) != 0) {
            return VEGA_ERR_INTERNAL;
        }
        n -= 4;
        if (ours_no_takeover(c) && deflateReset(z) != Z_OK)
            return VEGA_ERR_INTERNAL;
    }
    *out_len = n;
    return 0;
}

int vega__ws_inflate(vega_ws_conn *c, const uint8_t *in, size_t len, bool end,
                     int (*emit)(vega_ws_conn *c, const uint8_t *p, size_t n))
{
    static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
    z_stream *z = &c->rx;
    for (int pass = 0; pass < (end ? 2 : 1); pass++) {
        /* §7.2.2: "Append 4 octets of 0x00 0x00 0xff 0xff to the tail end of the payload of
         * the message." */
        const uint8_t *p = pass ? tail : in;
        size_t left = pass ? 4 : len;
        while (left > 0) {
            uInt ai = (uInt)VEGA__MIN(left, (size_t)UINT_MAX);
            z->next_in = (Bytef *)(uintptr_t)p;
            z->avail_in = ai;
            bool progress;
            do {
                z->next_out = c->zout;
                z->avail_out = VEGA__WS_SCRATCH;
                int zr = inflate(z, Z_SYNC_FLUSH);
                size_t got = VEGA__WS_SCRATCH - z->avail_out;
                if (zr == Z_STREAM_END) {
                    /* §7.2.3.4: a block with BFINAL set ends the DEFLATE stream; what follows
                     * (the tail, or a new stream) starts afresh. */
                    if (inflateReset(z) != Z_OK)
                        return VEGA_ERR_INTERNAL;
                } else if (zr == Z_MEM_ERROR) {
                    return -ENOMEM;
                } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                    return c->fail_rc ? c->fail_rc : -EPROTO;
                }
                if (got) {
                    int rc = emit(c, c->zout, got);
                    if (rc < 0)
                        return rc;
                }
                progress = got > 0 || zr == Z_STREAM_END;
            } while ((z->avail_in > 0 || z->avail_out == 0) && progress);
            if (z->avail_in > 0 && !progress)
                return -EPROTO;
            p += ai;
            left -= ai;
        }
    }
    if (end && peers_no_takeover(c) && inflateReset(z) != Z_OK)
        return VEGA_ERR_INTERNAL;
    return 0;
}
