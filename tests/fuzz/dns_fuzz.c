/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the DNS response parser (lib/io/dns_wire.c): any bytes, checked against
 * the question they carry (so the parser gets past the match) and against fixed A/AAAA ones.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Ilib/include -Ilib/io
 *        tests/fuzz/dns_fuzz.c lib/io/dns_wire.c -o dns_fuzz */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns_wire.h"
#include "fuzz_target.h"

static void check_answer(int r, const struct vega__dns_answer *a)
{
    if (r != 0 && r != 1 && r != VEGA_ERR_PROTO)
        abort();
    if (r == 0 && (a->naddr > VEGA__DNS_MAX_ADDRS || a->cnames > VEGA__DNS_MAX_CNAME))
        abort();
    if (r == 0 && a->naddr && a->neg_ttl != 0)
        abort();
}

static void parse_as(const uint8_t *data, size_t size, const struct vega__dns_question *q)
{
    struct vega__dns_answer a;
    check_answer(vega__dns_response_read(data, size, q, &a), &a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vega__dns_question q;
    if (vega__dns_question_read(data, size, &q) == 0) {
        if (q.qname_len == 0 || q.qname_len > VEGA__DNS_NAME_MAX)
            abort();
        parse_as(data, size, &q);
        uint16_t types[2] = {VEGA__DNS_T_A, VEGA__DNS_T_AAAA};
        for (int i = 0; i < 2; i++) {
            q.qtype = types[i];
            parse_as(data, size, &q);
        }
        /* A query for the same question reads back to it. */
        uint8_t out[VEGA__DNS_QUERY_MAX];
        vega_ssize n = vega__dns_query_write(out, sizeof(out), &q, VEGA__DNS_EDNS_PAYLOAD);
        struct vega__dns_question back;
        if (n < 0 || vega__dns_question_read(out, (size_t)n, &back) != 0 ||
            back.qname_len != q.qname_len || memcmp(back.qname, q.qname, q.qname_len) != 0 ||
            back.id != q.id || back.qtype != q.qtype)
            abort();
    }

    /* A fixed question, with the input's ID so that the ID check passes. */
    memset(&q, 0, sizeof(q));
    int n = vega__dns_name_to_wire(q.qname, "example.test");
    if (n <= 0)
        abort();
    q.qname_len = (size_t)n;
    q.qtype = VEGA__DNS_T_A;
    q.id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
    parse_as(data, size, &q);

    /* The presentation-name encoder on the input as text. */
    char text[300];
    size_t l = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, l);
    text[l] = '\0';
    uint8_t wire[VEGA__DNS_NAME_MAX];
    int w = vega__dns_name_to_wire(wire, text);
    if (w > VEGA__DNS_NAME_MAX)
        abort();
    return 0;
}
