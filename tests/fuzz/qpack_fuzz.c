/* SPDX-License-Identifier: MIT */
/* libFuzzer target for QPACK (lib/qpack). Byte 0 picks the mode and the limits.
 * Decode mode: the rest is records [kind][len][bytes]: encoder-stream bytes, a field section on
 * a stream, a resume, a cancellation; arbitrary input must never crash, a decoded section must
 * respect the limits (lines, RFC 9114 size), an error must be sticky, and the decoder-stream
 * output must stay parseable.
 * Round-trip mode: the rest drives an encoder (peer settings, field lists built from the bytes,
 * acknowledgments, late encoder streams) against a decoder: every section must decode to
 * exactly the fields encoded. */
#include <stdlib.h>
#include <string.h>

#include <vega/qpack.h>

#include "fuzz_target.h"

struct in {
    const uint8_t *p;
    size_t n;
};

static uint8_t take(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static unsigned blocked_reports;
static int on_unblocked(void *ud, uint64_t id)
{
    (void)ud;
    (void)id;
    blocked_reports++;
    return 0;
}
static const vega_qpack_decoder_callbacks cbs = {on_unblocked};

static void check_section(const vega_qpack_section *s, const vega_qpack_decoder_opts *o)
{
    uint64_t size = 0;
    if (s->count > o->max_fields)
        abort();
    for (size_t i = 0; i < s->count; i++) {
        size += s->fields[i].name.len + s->fields[i].value.len + 32;
        /* Every byte must be readable (ASan checks the spans). */
        volatile char sink = 0;
        for (size_t k = 0; k < s->fields[i].name.len; k++)
            sink ^= s->fields[i].name.ptr[k];
        for (size_t k = 0; k < s->fields[i].value.len; k++)
            sink ^= s->fields[i].value.ptr[k];
        (void)sink;
    }
    if (size != s->size || size > o->max_field_section_size)
        abort();
}

static void decode_mode(uint8_t flags, struct in in)
{
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    o.max_table_capacity = flags & 1 ? 256 : 4096;
    o.max_blocked_streams = flags & 2 ? 2 : 16;
    o.max_field_section_size = flags & 4 ? 300 : 65536;
    o.max_fields = flags & 8 ? 5 : 256;
    vega_qpack_decoder *d;
    if (vega_qpack_decoder_new(&d, &cbs, &o, NULL) != 0)
        abort();
    int failed = 0;
    while (in.n) {
        uint8_t kind = take(&in);
        size_t len = take(&in);
        len = len < in.n ? len : in.n;
        const uint8_t *p = in.p;
        in.p += len;
        in.n -= len;
        uint64_t id = (uint64_t)(kind >> 2) * 4;
        vega_qpack_section s;
        int rc;
        switch (kind & 3) {
        case 0:
            rc = vega_qpack_decoder_read_encoder(d, p, len);
            break;
        case 1:
            rc = vega_qpack_decoder_decode(d, id, p, len, &s);
            if (rc == 0)
                check_section(&s, &o);
            if (rc == -EINVAL) /* that stream already waits: fine */
                rc = 0;
            break;
        case 2:
            rc = vega_qpack_decoder_resume(d, id, &s);
            if (rc == 0)
                check_section(&s, &o);
            if (rc == -EINVAL)
                rc = 0;
            break;
        default:
            rc = vega_qpack_decoder_cancel_stream(d, id);
            break;
        }
        if (failed && rc != failed && (kind & 3) != 3)
            abort(); /* errors are sticky */
        if (rc == VEGA_ERR_PROTO) {
            uint64_t code = vega_qpack_decoder_get_error(d, NULL);
            if (code != VEGA_QPACK_DECOMPRESSION_FAILED && code != VEGA_QPACK_ENCODER_STREAM_ERROR)
                abort();
            failed = rc;
        } else if (rc < 0 && rc != VEGA_ERR_QPACK_TOO_LARGE) {
            abort();
        }
        if (vega_qpack_decoder_blocked_count(d) > (size_t)o.max_blocked_streams)
            abort();
        uint8_t out[64];
        while (vega_qpack_decoder_write(d, out, sizeof out) > 0)
            ;
    }
    vega_qpack_decoder_free(d);
}

/* ---- round trip ---------------------------------------------------------------------------- */

static const char *const names[] = {
    ":authority",    ":path",        "accept",     "user-agent",         "cookie", "x-a", "x-bb",
    "authorization", "content-type", "set-cookie", "x-long-header-name", ""};

/* The decoded section must be exactly the fields encoded. */
static void same(const vega_qpack_section *s, const vega_http_field *f, size_t n)
{
    if (s->count != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (s->fields[i].name.len != f[i].name.len || s->fields[i].value.len != f[i].value.len ||
            memcmp(s->fields[i].name.ptr, f[i].name.ptr, f[i].name.len) != 0 ||
            (f[i].value.len && memcmp(s->fields[i].value.ptr, f[i].value.ptr, f[i].value.len) != 0))
            abort();
}

static size_t drain_enc(vega_qpack_encoder *e, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    vega_ssize k;
    while ((k = vega_qpack_encoder_write(e, buf + n, cap - n)) > 0)
        n += (size_t)k;
    return n;
}

static void roundtrip_mode(uint8_t flags, struct in in)
{
    vega_qpack_encoder_opts eo;
    vega_qpack_encoder_opts_init(&eo);
    eo.max_table_capacity = flags & 1 ? 200 : 4096;
    eo.no_huffman = flags & 2;
    vega_qpack_encoder *e;
    vega_qpack_decoder_opts dopt;
    vega_qpack_decoder_opts_init(&dopt);
    dopt.max_table_capacity = flags & 4 ? 300 : 4096;
    dopt.max_fields = 1000;
    vega_qpack_decoder *d;
    if (vega_qpack_encoder_new(&e, &eo) != 0 || vega_qpack_decoder_new(&d, &cbs, &dopt, NULL) != 0)
        abort();
    if (vega_qpack_encoder_set_peer_settings(e, dopt.max_table_capacity, flags & 8 ? 0 : 16) != 0)
        abort();
    static uint8_t out[1 << 16], es[1 << 16], ds[4096], values[64][64];
    for (uint64_t id = 0; in.n; id += 4) {
        vega_http_field f[16];
        size_t n = take(&in) % 16;
        for (size_t i = 0; i < n; i++) {
            const char *nm = names[take(&in) % 12];
            size_t vl = take(&in) % 64;
            for (size_t k = 0; k < vl; k++)
                values[i][k] = take(&in);
            f[i] = (vega_http_field){{nm, strlen(nm)}, {(const char *)values[i], vl}};
        }
        vega_ssize k = vega_qpack_encoder_encode(e, id, f, n, out, sizeof out);
        if (k <= 0)
            abort();
        uint8_t how = take(&in);
        size_t en = drain_enc(e, es, sizeof es);
        vega_qpack_section s;
        int rc;
        if (how & 1) { /* the encoder stream arrives after the section */
            rc = vega_qpack_decoder_decode(d, id, out, (size_t)k, &s);
            if (rc == 0)
                same(&s, f, n); /* the section is valid until the next call on d */
            if (vega_qpack_decoder_read_encoder(d, es, en) != 0)
                abort();
            if (rc == VEGA_QPACK_BLOCKED) {
                rc = vega_qpack_decoder_resume(d, id, &s);
                if (rc != 0)
                    abort();
                same(&s, f, n);
            }
        } else {
            if (vega_qpack_decoder_read_encoder(d, es, en) != 0)
                abort();
            rc = vega_qpack_decoder_decode(d, id, out, (size_t)k, &s);
            if (rc == 0)
                same(&s, f, n);
        }
        if (rc != 0)
            abort();
        if (how & 2) { /* acknowledgments back, sometimes byte by byte */
            vega_ssize dn = vega_qpack_decoder_write(d, ds, sizeof ds);
            for (vega_ssize i = 0; i < dn; i += how & 4 ? 1 : dn)
                if (vega_qpack_encoder_read_decoder(e, ds + i, how & 4 ? 1 : (size_t)dn) != 0)
                    abort();
        }
    }
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct in in = {data + 1, size - 1};
    if (data[0] & 0x80)
        roundtrip_mode(data[0], in);
    else
        decode_mode(data[0], in);
    return 0;
}
