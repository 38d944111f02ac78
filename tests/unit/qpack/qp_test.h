/* SPDX-License-Identifier: MIT */
/* Helpers the QPACK tests share: tables and sections as text, hex, and an event recorder. */
#ifndef VEGA_QP_TEST_H
#define VEGA_QP_TEST_H

#include <stdarg.h>
#include <stdio.h>

#include "hcodec.h"
#include "qpack_int.h"
#include "vtest.h"

/* The live entries of a table, oldest first: "abs ref name=value\n" lines then "size=N". */
static inline const char *qt_table(const struct vega__qp_table *t)
{
    static char buf[8192];
    size_t n = 0;
    for (uint64_t a = t->dropped; a < t->inserted; a++) {
        const struct vega__qp_entry *e = vega__qp_table_get(t, a);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%llu %u %.*s=%.*s\n", (unsigned long long)a,
                              e->refs, (int)e->name_len, (const char *)e->data, (int)e->value_len,
                              (const char *)e->data + e->name_len);
    }
    snprintf(buf + n, sizeof buf - n, "size=%llu", (unsigned long long)t->size);
    return buf;
}

/* A decoded section as "name: value\n" lines (a "!" before lines with the N bit). */
static inline const char *qt_section(const vega_qpack_section *s)
{
    static char buf[1 << 17];
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->count && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%.*s: %.*s\n",
                              s->never_indexed[i] ? "!" : "", (int)s->fields[i].name.len,
                              s->fields[i].name.ptr, (int)s->fields[i].value.len,
                              s->fields[i].value.ptr);
    return buf;
}

/* Bytes as lowercase hex without spaces. */
static inline const char *qt_hex(const uint8_t *p, size_t n)
{
    static char buf[1 << 16];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 3 < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%02x", p[i]);
    buf[k] = 0;
    return buf;
}

/* Compares bytes against hex text (spaces allowed), failing with both shown. */
#define QT_BYTES(p, n, hex)                                                                        \
    do {                                                                                           \
        uint8_t want_[4096];                                                                       \
        size_t wn_ = vtest_unhex((hex), want_, sizeof want_);                                      \
        if ((size_t)(n) != wn_ || memcmp((p), want_, wn_) != 0)                                    \
            vtest_fail(__FILE__, __LINE__, "bytes %s, want %s", qt_hex((p), (size_t)(n)), (hex));  \
    } while (0)

/* Takes everything an encoder or decoder has for its stream. */
static inline size_t qt_drain_dec(vega_qpack_decoder *d, uint8_t *out, size_t cap)
{
    size_t n = 0;
    vega_ssize k;
    while ((k = vega_qpack_decoder_write(d, out + n, cap - n)) > 0)
        n += (size_t)k;
    VCHECK(k == 0);
    return n;
}

static inline size_t qt_drain_enc(vega_qpack_encoder *e, uint8_t *out, size_t cap)
{
    size_t n = 0;
    vega_ssize k;
    while ((k = vega_qpack_encoder_write(e, out + n, cap - n)) > 0)
        n += (size_t)k;
    VCHECK(k == 0);
    return n;
}

/* Records on_unblocked calls as "u<id> ". */
typedef struct qt_rec {
    char log[1024];
    size_t len;
    int fail; /* return this from callbacks */
} qt_rec;

static inline int qt_on_unblocked(void *ud, uint64_t id)
{
    qt_rec *r = ud;
    r->len +=
        (size_t)snprintf(r->log + r->len, sizeof r->log - r->len, "u%llu ", (unsigned long long)id);
    return r->fail;
}

static const vega_qpack_decoder_callbacks qt_cbs = {qt_on_unblocked};

#endif
