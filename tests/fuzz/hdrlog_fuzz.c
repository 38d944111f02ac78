/* SPDX-License-Identifier: MIT */
/* libFuzzer target for cli/common/hdrlog.c, what `vega-load merge` reads: the first byte picks
 * the input's form. 0: an encoded histogram (compressed or plain V2); whatever decodes must
 * encode and decode back to the same counts. 1: an interval log (text); every interval read
 * must hold a histogram whose counts add up to its total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "hdrlog.h"

static void round_trip(const struct cli_hist *h)
{
    uint8_t *enc;
    size_t n;
    if (hdrlog_encode(h, &enc, &n) < 0)
        return; /* out of memory */
    struct cli_hist back;
    char err[160];
    if (hdrlog_decode(&back, enc, n, err, sizeof(err)) < 0) {
        fprintf(stderr, "re-encoded histogram does not decode: %s\n", err);
        abort();
    }
    if (back.len != h->len || back.total != h->total ||
        memcmp(back.counts, h->counts, h->len * sizeof(*h->counts)) != 0) {
        fprintf(stderr, "round trip changed the histogram\n");
        abort();
    }
    cli_hist_fini(&back);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    char err[600];
    struct cli_hist h;
    if (data[0] % 2 == 0) {
        if (hdrlog_decode(&h, data + 1, size - 1, err, sizeof(err)) == 0) {
            round_trip(&h);
            cli_hist_fini(&h);
        }
        return 0;
    }
    FILE *f = fmemopen((void *)(data + 1), size - 1 > 0 ? size - 1 : 1, "r");
    if (!f)
        return 0;
    struct hdrlog_reader r = {.f = f, .name = "fuzz"};
    double start, len;
    int e;
    while ((e = hdrlog_read_interval(&r, &start, &len, &h, err, sizeof(err))) == 1) {
        uint64_t sum = 0;
        for (size_t i = 0; i < h.len; i++)
            sum += h.counts[i];
        if (sum != h.total || !(start >= 0.0) || !(len >= 0.0))
            abort();
        cli_hist_fini(&h);
    }
    hdrlog_reader_fini(&r);
    fclose(f);
    return 0;
}
