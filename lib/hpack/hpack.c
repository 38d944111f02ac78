/* SPDX-License-Identifier: MIT */
/* HPACK decoder and encoder objects (RFC 7541 §2.2, §4.2): options, creation, the protocol's
 * table size limit, and the table accessors. */
#include <string.h>

#include "hpack_int.h"

static size_t table_opt(size_t v)
{
    return v == 0 ? VEGA_HPACK_DEFAULT_TABLE_SIZE : v == VEGA_HPACK_TABLE_OFF ? 0 : v;
}

static bool mem_ok(const vega_mem *m)
{
    return !m || (m->malloc && m->calloc && m->realloc && m->free);
}

void vega_hpack_decoder_opts_init_versioned(vega_hpack_decoder_opts *o, int opts_version)
{
    if (opts_version != VEGA_HPACK_DECODER_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_hpack_decoder_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof *o);
    o->max_table_size = VEGA_HPACK_DEFAULT_TABLE_SIZE;
    o->max_list_size = 65536;
    o->max_fields = 256;
    o->max_string_len = 65536;
}

int vega_hpack_decoder_new_versioned(vega_hpack_decoder **out, const vega_hpack_decoder_opts *o,
                                     int opts_version)
{
    if (opts_version != VEGA_HPACK_DECODER_OPTS_VERSION || !out)
        return -EINVAL;
    vega_hpack_decoder_opts v;
    vega_hpack_decoder_opts_init(&v);
    if (o) {
        v.max_table_size = table_opt(o->max_table_size);
        v.max_list_size = o->max_list_size ? o->max_list_size : v.max_list_size;
        v.max_fields = o->max_fields ? o->max_fields : v.max_fields;
        v.max_string_len = o->max_string_len ? o->max_string_len : v.max_string_len;
        v.mem = o->mem;
    }
    if (v.max_table_size > VEGA__HPACK_MAX_SIZE || v.max_string_len > VEGA__HPACK_MAX_SIZE ||
        !mem_ok(v.mem))
        return -EINVAL;
    vega_hpack_decoder *d = vega__mem_calloc(v.mem, 1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->o = v;
    vega__hpack_table_init(&d->t, v.mem, v.max_table_size);
    d->protocol_max = v.max_table_size;
    *out = d;
    return 0;
}

void vega_hpack_decoder_free(vega_hpack_decoder *d)
{
    if (!d)
        return;
    vega__hpack_table_fini(&d->t);
    vega__mem_free(d->o.mem, d->scratch);
    vega__mem_free(d->o.mem, d);
}

int vega_hpack_decoder_set_max_table_size(vega_hpack_decoder *d, size_t max)
{
    if (!d || d->failed || max > VEGA__HPACK_MAX_SIZE)
        return -EINVAL;
    d->protocol_max = max;
    /* §4.2: after the limit drops below the table's maximum, the encoder must say so at the
     * start of its next block. */
    if (max < d->t.max_size)
        d->need_update = true;
    return 0;
}

size_t vega_hpack_decoder_table_size(const vega_hpack_decoder *d)
{
    return d->t.size;
}

size_t vega_hpack_decoder_table_len(const vega_hpack_decoder *d)
{
    return d->t.len;
}

int vega_hpack_decoder_table_get(const vega_hpack_decoder *d, size_t i, vega_hpack_field *f)
{
    return vega__hpack_table_get(&d->t, i, f);
}

void vega_hpack_encoder_opts_init_versioned(vega_hpack_encoder_opts *o, int opts_version)
{
    if (opts_version != VEGA_HPACK_ENCODER_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_hpack_encoder_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof *o);
    o->max_table_size = VEGA_HPACK_DEFAULT_TABLE_SIZE;
}

int vega_hpack_encoder_new_versioned(vega_hpack_encoder **out, const vega_hpack_encoder_opts *o,
                                     int opts_version)
{
    if (opts_version != VEGA_HPACK_ENCODER_OPTS_VERSION || !out)
        return -EINVAL;
    vega_hpack_encoder_opts v;
    vega_hpack_encoder_opts_init(&v);
    if (o) {
        v.max_table_size = table_opt(o->max_table_size);
        v.huffman = o->huffman;
        v.mem = o->mem;
    }
    if (v.max_table_size > VEGA__HPACK_MAX_SIZE ||
        (unsigned)v.huffman > VEGA_HPACK_HUFFMAN_ALWAYS || !mem_ok(v.mem))
        return -EINVAL;
    vega_hpack_encoder *e = vega__mem_calloc(v.mem, 1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->o = v;
    e->cap = v.max_table_size;
    e->peer_max = e->decoder_max = VEGA_HPACK_DEFAULT_TABLE_SIZE;
    /* A cap under the peer's 4096 is used without announcing it (see set_max_table_size). */
    vega__hpack_table_init(&e->t, v.mem, VEGA__MIN(e->cap, e->peer_max));
    *out = e;
    return 0;
}

void vega_hpack_encoder_free(vega_hpack_encoder *e)
{
    if (!e)
        return;
    vega__hpack_table_fini(&e->t);
    vega__mem_free(e->o.mem, e);
}

size_t vega_hpack_encoder_table_size(const vega_hpack_encoder *e)
{
    return e->t.size;
}

size_t vega_hpack_encoder_table_len(const vega_hpack_encoder *e)
{
    return e->t.len;
}

int vega_hpack_encoder_table_get(const vega_hpack_encoder *e, size_t i, vega_hpack_field *f)
{
    return vega__hpack_table_get(&e->t, i, f);
}
