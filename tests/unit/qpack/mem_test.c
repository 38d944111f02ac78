/* SPDX-License-Identifier: MIT */
/* The allocator hook of the QPACK encoder and decoder (vega_qpack_*_opts.mem): a counting
 * allocator proves every block goes through it and comes back, and a sweep fails each
 * allocation of a scripted exchange in turn (alone, then with every later one): every call then
 * succeeds or says -ENOMEM, never anything else, nothing leaks, and whenever a section decodes
 * it is the one that was encoded. */
#include "failmalloc.h"
#include "qp_test.h"

static struct vtest_fa M; /* the allocator's counters for the run in progress */

static const vega_http_field fields[][4] = {
    {VEGA_HTTP_FIELD(":method", "GET"), VEGA_HTTP_FIELD(":path", "/a"),
     VEGA_HTTP_FIELD("user-agent", "sweep/1"), VEGA_HTTP_FIELD("x-custom", "one")},
    {VEGA_HTTP_FIELD(":method", "POST"), VEGA_HTTP_FIELD(":path", "/b"),
     VEGA_HTTP_FIELD("user-agent", "sweep/1"), VEGA_HTTP_FIELD("x-custom", "two")},
    {VEGA_HTTP_FIELD(":status", "200"), VEGA_HTTP_FIELD("server", "sweep"),
     VEGA_HTTP_FIELD("content-type", "text/plain"), VEGA_HTTP_FIELD("x-custom", "one")},
};

static bool same(const vega_qpack_section *s, const vega_http_field *f)
{
    if (s->count != 4)
        return false;
    for (size_t i = 0; i < 4; i++)
        if (!vega_http_str_eq(s->fields[i].name, f[i].name.ptr) ||
            !vega_http_str_eq(s->fields[i].value, f[i].value.ptr))
            return false;
    return true;
}

static bool ok_or_nomem(long long rc)
{
    return rc >= 0 || rc == -ENOMEM;
}

/* The exchange: three sections, one of them decoded before its encoder stream arrives
 * (blocked, then resumed), acknowledgments back. Returns false at the first -ENOMEM that ends
 * it (a decoder that ran out of memory is unusable). */
static bool exchange(vega_qpack_encoder *e, vega_qpack_decoder *d)
{
    static uint8_t out[1024], es[2048], ds[256];
    for (size_t i = 0; i < 3; i++) {
        vega_ssize k = vega_qpack_encoder_encode(e, i * 4, fields[i], 4, out, sizeof out);
        VCHECK(ok_or_nomem(k));
        if (k < 0)
            continue; /* nothing changed: that section is simply not sent */
        size_t en = qt_drain_enc(e, es, sizeof es);
        vega_qpack_section s;
        bool late = i == 1;
        int rc = 0;
        if (!late) {
            rc = vega_qpack_decoder_read_encoder(d, es, en);
            VCHECK(ok_or_nomem(rc));
            if (rc < 0)
                return false;
        }
        rc = vega_qpack_decoder_decode(d, i * 4, out, (size_t)k, &s);
        VCHECK(ok_or_nomem(rc));
        if (rc < 0)
            return false;
        if (rc == 0) /* checked before the next call on d, which may reuse its space */
            VCHECK(same(&s, fields[i]));
        if (late) {
            int r2 = vega_qpack_decoder_read_encoder(d, es, en);
            VCHECK(ok_or_nomem(r2));
            if (r2 < 0)
                return false;
            if (rc == VEGA_QPACK_BLOCKED) {
                rc = vega_qpack_decoder_resume(d, i * 4, &s);
                VCHECK(ok_or_nomem(rc));
                if (rc < 0)
                    return false;
                VCHECK(same(&s, fields[i]));
            }
        }
        VCHECK_EQ(rc, 0);
        vega_ssize dn = vega_qpack_decoder_write(d, ds, sizeof ds);
        VCHECK(dn >= 0);
        rc = vega_qpack_encoder_read_decoder(e, ds, (size_t)dn);
        VCHECK(ok_or_nomem(rc));
    }
    return true;
}

static size_t run(size_t fail_at, bool after)
{
    M = (struct vtest_fa){.fail_at = (long)fail_at, .and_after = after};
    vega_mem tmem = vtest_fa_mem(&M);
    vega_qpack_encoder_opts eo;
    vega_qpack_encoder_opts_init(&eo);
    eo.mem = &tmem;
    vega_qpack_decoder_opts dopt;
    vega_qpack_decoder_opts_init(&dopt);
    dopt.mem = &tmem;
    vega_qpack_encoder *e = NULL;
    vega_qpack_decoder *d = NULL;
    int rc = vega_qpack_encoder_new(&e, &eo);
    VCHECK(rc == 0 || rc == -ENOMEM);
    if (rc == 0) {
        rc = vega_qpack_decoder_new(&d, NULL, &dopt, NULL);
        VCHECK(rc == 0 || rc == -ENOMEM);
    }
    if (rc == 0) {
        VCHECK_EQ(vega_qpack_encoder_set_peer_settings(e, 4096, 16), 0);
        exchange(e, d);
    }
    vega_qpack_encoder_free(e);
    vega_qpack_decoder_free(d);
    VCHECK_EQ(M.live, 0);
    return (size_t)M.calls;
}

VTEST(every_block_comes_back)
{
    size_t calls = run(0, false);
    VCHECK(calls > 10);
}

VTEST(failing_allocator_sweep)
{
    size_t calls = run(0, false);
    for (size_t i = 1; i <= calls + 1; i++) {
        run(i, false);
        run(i, true);
    }
}
