/* SPDX-License-Identifier: MIT */
/* DNS wire format on hand-built packets: queries, compression, loops, truncation, CNAME chains,
 * NXDOMAIN/NODATA negative TTLs (RFC 1035 §4, RFC 2308 §5, RFC 6891). */
#include <arpa/inet.h>
#include <string.h>

#include "dns_wire.h"
#include "vtest.h"

/* ---- a packet builder ------------------------------------------------------------------------ */

struct pkt {
    uint8_t b[70000];
    size_t n;
};

static void p8(struct pkt *p, unsigned v)
{
    p->b[p->n++] = (uint8_t)v;
}
static void p16(struct pkt *p, unsigned v)
{
    p8(p, v >> 8);
    p8(p, v);
}
static void p32(struct pkt *p, uint32_t v)
{
    p16(p, v >> 16);
    p16(p, v & 0xFFFF);
}
static void pbytes(struct pkt *p, const void *d, size_t n)
{
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
/* Labels of a dotted name, without the final zero (so a pointer can end it). */
static void plabels(struct pkt *p, const char *name)
{
    while (*name) {
        const char *dot = strchr(name, '.');
        size_t l = dot ? (size_t)(dot - name) : strlen(name);
        p8(p, (unsigned)l);
        pbytes(p, name, l);
        name += l + (dot ? 1 : 0);
    }
}
static void pname(struct pkt *p, const char *name)
{
    plabels(p, name);
    p8(p, 0);
}
static void pptr(struct pkt *p, size_t off)
{
    p16(p, 0xC000u | (unsigned)off);
}
static void phdr(struct pkt *p, unsigned id, unsigned flags, unsigned qd, unsigned an, unsigned ns,
                 unsigned ar)
{
    p->n = 0;
    p16(p, id);
    p16(p, flags);
    p16(p, qd);
    p16(p, an);
    p16(p, ns);
    p16(p, ar);
}
/* Fixed part of a record after its owner name. */
static void prr(struct pkt *p, unsigned type, uint32_t ttl, unsigned rdlen)
{
    p16(p, type);
    p16(p, VEGA__DNS_C_IN);
    p32(p, ttl);
    p16(p, rdlen);
}
static void pa(struct pkt *p, const char *ip)
{
    uint8_t a[4];
    VCHECK_EQ(inet_pton(AF_INET, ip, a), 1);
    pbytes(p, a, 4);
}

#define RESP 0x8180u /* QR, RD, RA */
#define QOFF 12      /* where the question's name starts */

static void question(struct vega__dns_question *q, const char *name, uint16_t type, uint16_t id)
{
    memset(q, 0, sizeof(*q));
    int n = vega__dns_name_to_wire(q->qname, name);
    VCHECK(n > 0);
    q->qname_len = (size_t)n;
    q->qtype = type;
    q->id = id;
}

/* Header + the question for name/type. */
static void presp(struct pkt *p, unsigned id, unsigned flags, const char *name, unsigned type,
                  unsigned an, unsigned ns, unsigned ar)
{
    phdr(p, id, flags, 1, an, ns, ar);
    pname(p, name);
    p16(p, type);
    p16(p, VEGA__DNS_C_IN);
}

static int parse(const struct pkt *p, const struct vega__dns_question *q,
                 struct vega__dns_answer *a)
{
    return vega__dns_response_read(p->b, p->n, q, a);
}

static bool addr_is(const struct vega__dns_answer *a, size_t i, const char *ip)
{
    uint8_t want[16] = {0};
    int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
    VCHECK_EQ(inet_pton(fam, ip, want), 1);
    return memcmp(a->addr[i], want, fam == AF_INET ? 4 : 16) == 0;
}

static struct pkt P; /* large: keep it off the stack */

/* ---- names and queries ----------------------------------------------------------------------- */

VTEST(name_to_wire)
{
    uint8_t w[VEGA__DNS_NAME_MAX];
    VCHECK_EQ(vega__dns_name_to_wire(w, "www.Example.test"), 18);
    VCHECK(memcmp(w, "\3www\7Example\4test\0", 18) == 0);
    VCHECK_EQ(vega__dns_name_to_wire(w, "www.example.test."), 18);
    VCHECK_EQ(vega__dns_name_to_wire(w, "."), 1);
    VCHECK_EQ(vega__dns_name_to_wire(w, ""), -EINVAL);
    VCHECK_EQ(vega__dns_name_to_wire(w, "a..b"), -EINVAL);
    VCHECK_EQ(vega__dns_name_to_wire(w, ".a"), -EINVAL);
    VCHECK_EQ(vega__dns_name_to_wire(w, "a b"), -EINVAL);
    VCHECK_EQ(vega__dns_name_to_wire(w, "a\x01.b"), -EINVAL);
    /* RFC 1035 §2.3.4: labels of 63 octets or less. */
    char name[300];
    memset(name, 'a', 63);
    name[63] = '\0';
    VCHECK_EQ(vega__dns_name_to_wire(w, name), 65);
    memset(name, 'a', 64);
    name[64] = '\0';
    VCHECK_EQ(vega__dns_name_to_wire(w, name), -EINVAL);
    /* Names of 255 octets or less: 4 x 63-octet labels is 4*64 + 1 = 257. */
    char *p = name;
    for (int i = 0; i < 4; i++) {
        memset(p, 'b', 63);
        p[63] = '.';
        p += 64;
    }
    p[-1] = '\0';
    VCHECK_EQ(vega__dns_name_to_wire(w, name), -EINVAL);
    name[63 * 3 + 3 + 61] = '\0'; /* 3 x 63 + one of 61: 3*64 + 62 + 1 = 255 */
    VCHECK_EQ(vega__dns_name_to_wire(w, name), 255);
}

VTEST(query_write)
{
    struct vega__dns_question q;
    question(&q, "example.test", VEGA__DNS_T_AAAA, 0xBEEF);
    uint8_t out[VEGA__DNS_QUERY_MAX];
    vega_ssize n = vega__dns_query_write(out, sizeof(out), &q, 1232);
    VCHECK_EQ(n, 12 + 14 + 4 + 11);
    static const uint8_t want[] = {
        0xBE, 0xEF, 0x01, 0x00, 0,    1,   0,   0,   0, 0,   0,   1,           /* header, RD */
        7,    'e',  'x',  'a',  'm',  'p', 'l', 'e', 4, 't', 'e', 's', 't', 0, /* QNAME */
        0,    28,   0,    1,                                                   /* AAAA IN */
        0,    0,    41,   0x04, 0xD0, 0,   0,   0,   0, 0,   0,                /* OPT 1232 */
    };
    VCHECK(memcmp(out, want, sizeof(want)) == 0);
    VCHECK_EQ(vega__dns_msg_id(out, (size_t)n), 0xBEEF);

    /* Without EDNS: no additional record. */
    n = vega__dns_query_write(out, sizeof(out), &q, 0);
    VCHECK_EQ(n, 12 + 14 + 4);
    VCHECK_EQ(out[11], 0);
    VCHECK_EQ(vega__dns_query_write(out, 20, &q, 0), VEGA_ERR_NOBUF);

    /* A server reads the question back. */
    struct vega__dns_question back;
    VCHECK_EQ(vega__dns_question_read(out, (size_t)n, &back), 0);
    VCHECK_EQ(back.id, 0xBEEF);
    VCHECK_EQ(back.qtype, VEGA__DNS_T_AAAA);
    VCHECK_EQ(back.qname_len, q.qname_len);
    VCHECK(memcmp(back.qname, q.qname, q.qname_len) == 0);
    VCHECK_EQ(vega__dns_msg_id(out, 11), -1);
}

/* ---- answers --------------------------------------------------------------------------------- */

VTEST(answer_a_compressed)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 7);
    presp(&P, 7, RESP, "example.test", VEGA__DNS_T_A, 2, 0, 0);
    pptr(&P, QOFF); /* owner: the question's name */
    prr(&P, VEGA__DNS_T_A, 300, 4);
    pa(&P, "127.0.0.5");
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 60, 4);
    pa(&P, "127.0.0.6");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.rcode, 0);
    VCHECK(!a.tc && !a.has_opt);
    VCHECK_EQ(a.naddr, 2);
    VCHECK(addr_is(&a, 0, "127.0.0.5"));
    VCHECK(addr_is(&a, 1, "127.0.0.6"));
    VCHECK_EQ(a.ttl, 60); /* the least TTL */
    VCHECK_EQ(a.neg_ttl, 0);
}

VTEST(answer_aaaa_partial_pointer)
{
    /* The owner is "v6" + a pointer to "test" inside the question's name. */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "V6.Test", VEGA__DNS_T_AAAA, 9); /* case differs from the answer's */
    presp(&P, 9, RESP, "v6.test", VEGA__DNS_T_AAAA, 1, 0, 0);
    plabels(&P, "v6");
    pptr(&P, QOFF + 3);
    prr(&P, VEGA__DNS_T_AAAA, 10, 16);
    uint8_t ip[16];
    VCHECK_EQ(inet_pton(AF_INET6, "2001:db8::1", ip), 1);
    pbytes(&P, ip, 16);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 1);
    VCHECK(addr_is(&a, 0, "2001:db8::1"));
}

VTEST(question_case_insensitive)
{
    /* RFC 1035 §2.3.3: names compare without regard to case. */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "ExAmPlE.test", VEGA__DNS_T_A, 1);
    presp(&P, 1, RESP, "example.TEST", VEGA__DNS_T_A, 1, 0, 0);
    pname(&P, "EXAMPLE.test");
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 1);
}

VTEST(mismatch_ignored)
{
    /* RFC 5452 §9.1: only our ID, our question, a response. */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 100);
    presp(&P, 101, RESP, "example.test", VEGA__DNS_T_A, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 1);
    presp(&P, 100, 0x0100, "example.test", VEGA__DNS_T_A, 0, 0, 0); /* QR clear */
    VCHECK_EQ(parse(&P, &q, &a), 1);
    presp(&P, 100, RESP | 0x0800, "example.test", VEGA__DNS_T_A, 0, 0, 0); /* opcode 1 */
    VCHECK_EQ(parse(&P, &q, &a), 1);
    presp(&P, 100, RESP, "other.test", VEGA__DNS_T_A, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 1);
    presp(&P, 100, RESP, "example.test", VEGA__DNS_T_AAAA, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 1);
    presp(&P, 100, RESP, "example.test", VEGA__DNS_T_A, 0, 0, 0);
    P.b[P.n - 1] = 3; /* class CH */
    VCHECK_EQ(parse(&P, &q, &a), 1);
    phdr(&P, 100, RESP, 2, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 1);
    /* NOERROR without a question is not an answer to anything. */
    phdr(&P, 100, RESP, 0, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 1);
    /* ... but SERVFAIL without one is this server giving up on us. */
    phdr(&P, 100, RESP | VEGA__DNS_RC_SERVFAIL, 0, 0, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.rcode, VEGA__DNS_RC_SERVFAIL);
    VCHECK_EQ(vega__dns_response_read(P.b, 11, &q, &a), 1);
}

VTEST(truncated_flag)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "big.test", VEGA__DNS_T_A, 5);
    presp(&P, 5, RESP | 0x0200, "big.test", VEGA__DNS_T_A, 40, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 5, 4); /* cut in the middle of the rdata */
    p8(&P, 1);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK(a.tc);
    VCHECK_EQ(a.naddr, 0);
}

/* A full answer with a CNAME and an SOA, then every shorter prefix must be refused. */
VTEST(truncated_packets)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "www.example.test", VEGA__DNS_T_A, 42);
    presp(&P, 42, RESP, "www.example.test", VEGA__DNS_T_A, 2, 1, 0);
    pptr(&P, QOFF);
    size_t rd = P.n + 8;
    prr(&P, VEGA__DNS_T_CNAME, 100, 0);
    size_t start = P.n;
    plabels(&P, "web");
    pptr(&P, QOFF + 4); /* "example.test" */
    P.b[rd] = 0;
    P.b[rd + 1] = (uint8_t)(P.n - start);
    size_t web = start;
    pptr(&P, web);
    prr(&P, VEGA__DNS_T_A, 50, 4);
    pa(&P, "192.0.2.7");
    pptr(&P, QOFF + 4);
    prr(&P, VEGA__DNS_T_SOA, 30, 0);
    rd = P.n - 2;
    start = P.n;
    plabels(&P, "ns");
    pptr(&P, QOFF + 4);
    plabels(&P, "admin");
    pptr(&P, QOFF + 4);
    p32(&P, 1);
    p32(&P, 2);
    p32(&P, 3);
    p32(&P, 4);
    p32(&P, 20);
    P.b[rd + 1] = (uint8_t)(P.n - start);
    size_t full = P.n;
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 1);
    VCHECK_EQ(a.cnames, 1);
    VCHECK(addr_is(&a, 0, "192.0.2.7"));
    VCHECK_EQ(a.ttl, 50);
    for (size_t n = 0; n < full; n++) {
        int r = vega__dns_response_read(P.b, n, &q, &a);
        if (r == 0)
            vtest_fail(__FILE__, __LINE__, "prefix of %zu bytes accepted", n);
    }
}

VTEST(compression_loops_rejected)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 3);

    /* A pointer to itself. */
    presp(&P, 3, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    size_t self = P.n;
    pptr(&P, self);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* A label, then a pointer back to that label. */
    presp(&P, 3, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    size_t lab = P.n;
    plabels(&P, "x");
    pptr(&P, lab);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* Two pointers pointing at each other: the second one points forward. */
    presp(&P, 3, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    size_t a1 = P.n;
    pptr(&P, a1 + 2);
    pptr(&P, a1);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* A pointer past the end. */
    presp(&P, 3, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, 0x3FFF);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* A pointer into the header (offset < 12) is "backward" but reads garbage labels: they
     * must at least stay in bounds; here it reads id/flags as labels of length 0 -> root. */
    presp(&P, 3, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, 4); /* QDCOUNT high byte 0: the root name */
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 0); /* owned by the root, not by our name */

    /* The question's own name compressed forward into the answer. */
    phdr(&P, 3, RESP, 1, 0, 0, 0);
    pptr(&P, 20);
    p16(&P, 1);
    p16(&P, 1);
    pname(&P, "example.test");
    VCHECK_EQ(parse(&P, &q, &a), 1);
}

VTEST(bad_labels_rejected)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 4);

    /* Label types 01 and 10 (RFC 6891 §5 extended labels) are refused. */
    for (unsigned t = 0x40; t <= 0x80; t += 0x40) {
        presp(&P, 4, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
        p8(&P, t | 1);
        p8(&P, 'x');
        p8(&P, 0);
        prr(&P, VEGA__DNS_T_A, 5, 4);
        pa(&P, "10.0.0.1");
        VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);
    }

    /* A name longer than 255 octets, built from pointers to 63-octet labels. */
    presp(&P, 4, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    /* The answer's owner: four 63-octet labels in a row, root after: 4*64+1 = 257. */
    for (int i = 0; i < 4; i++) {
        p8(&P, 63);
        for (int k = 0; k < 63; k++)
            p8(&P, 'a');
    }
    p8(&P, 0);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);
}

VTEST(bad_records_rejected)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 6);

    /* A with 5 octets of rdata. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 5, 5);
    pa(&P, "10.0.0.1");
    p8(&P, 0);
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* rdlength past the end. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 5, 400);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* A CNAME whose name runs past its rdata. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_CNAME, 5, 3);
    pname(&P, "abcdef");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* Counts the message cannot hold. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 0xFFFF, 0xFFFF, 0xFFFF);
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* Two OPT records. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 0, 0, 2);
    for (int i = 0; i < 2; i++) {
        p8(&P, 0);
        prr(&P, VEGA__DNS_T_OPT, 0, 0);
    }
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);

    /* Unknown types are skipped; trailing bytes past the counted records are ignored. */
    presp(&P, 6, RESP, "example.test", VEGA__DNS_T_A, 2, 0, 0);
    pptr(&P, QOFF);
    prr(&P, 16 /* TXT */, 5, 3);
    pbytes(&P, "\2hi", 3);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 5, 4);
    pa(&P, "10.0.0.9");
    p16(&P, 0xDEAD);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 1);
}

VTEST(cname_chain)
{
    /* a.test -> b.test -> c.test -> A, with the records in reverse order and an A of an
     * unrelated owner that must not be collected. */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "a.test", VEGA__DNS_T_A, 11);
    presp(&P, 11, RESP, "a.test", VEGA__DNS_T_A, 4, 0, 0);
    pname(&P, "c.test");
    prr(&P, VEGA__DNS_T_A, 500, 4);
    pa(&P, "198.51.100.3");
    pname(&P, "z.test");
    prr(&P, VEGA__DNS_T_A, 500, 4);
    pa(&P, "198.51.100.99");
    pname(&P, "b.test");
    prr(&P, VEGA__DNS_T_CNAME, 40, 8);
    pname(&P, "C.test");
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_CNAME, 600, 8);
    pname(&P, "b.test");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.cnames, 2);
    VCHECK_EQ(a.naddr, 1);
    VCHECK(addr_is(&a, 0, "198.51.100.3"));
    VCHECK_EQ(a.ttl, 40);
}

VTEST(cname_loop_rejected)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "a.test", VEGA__DNS_T_A, 12);
    presp(&P, 12, RESP, "a.test", VEGA__DNS_T_A, 2, 0, 0);
    pname(&P, "a.test");
    prr(&P, VEGA__DNS_T_CNAME, 5, 8);
    pname(&P, "b.test");
    pname(&P, "b.test");
    prr(&P, VEGA__DNS_T_CNAME, 5, 8);
    pname(&P, "a.test");
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);
}

VTEST(cname_to_nowhere_is_nodata)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "a.test", VEGA__DNS_T_AAAA, 13);
    presp(&P, 13, RESP, "a.test", VEGA__DNS_T_AAAA, 1, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_CNAME, 5, 8);
    pname(&P, "b.test");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.rcode, 0);
    VCHECK_EQ(a.naddr, 0);
    VCHECK_EQ(a.cnames, 1);
    VCHECK_EQ(a.neg_ttl, 0); /* no SOA: not cacheable (RFC 2308 §5) */
}

/* An SOA record for "test" in the authority section. */
static void psoa(struct pkt *p, uint32_t ttl, uint32_t minimum)
{
    pname(p, "test");
    prr(p, VEGA__DNS_T_SOA, ttl, 0);
    size_t rd = p->n - 2, start = p->n;
    pname(p, "ns.test");
    pname(p, "admin.test");
    p32(p, 1);
    p32(p, 2);
    p32(p, 3);
    p32(p, 4);
    p32(p, minimum);
    p->b[rd] = (uint8_t)((p->n - start) >> 8);
    p->b[rd + 1] = (uint8_t)(p->n - start);
}

VTEST(nxdomain_negative_ttl)
{
    /* RFC 2308 §5: min(SOA TTL, SOA MINIMUM). */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "nope.test", VEGA__DNS_T_A, 21);
    presp(&P, 21, RESP | VEGA__DNS_RC_NXDOMAIN, "nope.test", VEGA__DNS_T_A, 0, 1, 0);
    psoa(&P, 3600, 120);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.rcode, VEGA__DNS_RC_NXDOMAIN);
    VCHECK_EQ(a.naddr, 0);
    VCHECK_EQ(a.neg_ttl, 120);

    presp(&P, 21, RESP | VEGA__DNS_RC_NXDOMAIN, "nope.test", VEGA__DNS_T_A, 0, 1, 0);
    psoa(&P, 30, 120);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.neg_ttl, 30);

    /* A bad SOA (rdata one octet short) is malformed. */
    presp(&P, 21, RESP | VEGA__DNS_RC_NXDOMAIN, "nope.test", VEGA__DNS_T_A, 0, 1, 0);
    psoa(&P, 30, 120);
    P.b[P.n - 41 - 1]--; /* rdlength's low byte: rdata = 9 + 12 + 20 octets */
    P.n--;
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);
}

VTEST(nodata_negative_ttl)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "v4only.test", VEGA__DNS_T_AAAA, 22);
    presp(&P, 22, RESP, "v4only.test", VEGA__DNS_T_AAAA, 0, 1, 0);
    psoa(&P, 600, 60);
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.rcode, 0);
    VCHECK_EQ(a.naddr, 0);
    VCHECK_EQ(a.neg_ttl, 60);
}

VTEST(edns_extended_rcode)
{
    /* RFC 6891 §6.1.3: the OPT TTL's top byte extends RCODE (BADVERS = 16). */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 31);
    presp(&P, 31, RESP, "example.test", VEGA__DNS_T_A, 0, 0, 1);
    p8(&P, 0);
    prr(&P, VEGA__DNS_T_OPT, 0x01000000u, 0);
    P.b[P.n - 8] = 0x04; /* CLASS = payload 1232 */
    P.b[P.n - 7] = 0xD0;
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK(a.has_opt);
    VCHECK_EQ(a.rcode, 16);

    /* An OPT owned by another name is malformed. */
    presp(&P, 31, RESP, "example.test", VEGA__DNS_T_A, 0, 0, 1);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_OPT, 0, 0);
    VCHECK_EQ(parse(&P, &q, &a), VEGA_ERR_PROTO);
}

VTEST(many_addresses_capped)
{
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "many.test", VEGA__DNS_T_A, 41);
    presp(&P, 41, RESP, "many.test", VEGA__DNS_T_A, 3000, 0, 0);
    for (unsigned i = 0; i < 3000; i++) {
        pptr(&P, QOFF);
        prr(&P, VEGA__DNS_T_A, 100 + i, 4);
        p32(&P, 0x0A000000u + i);
    }
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, VEGA__DNS_MAX_ADDRS);
    VCHECK(addr_is(&a, 0, "10.0.0.0"));
    VCHECK_EQ(a.ttl, 100);
}

VTEST(ttl_top_bit_is_zero)
{
    /* RFC 2181 §8. */
    struct vega__dns_question q;
    struct vega__dns_answer a;
    question(&q, "example.test", VEGA__DNS_T_A, 51);
    presp(&P, 51, RESP, "example.test", VEGA__DNS_T_A, 1, 0, 0);
    pptr(&P, QOFF);
    prr(&P, VEGA__DNS_T_A, 0x80000001u, 4);
    pa(&P, "10.0.0.1");
    VCHECK_EQ(parse(&P, &q, &a), 0);
    VCHECK_EQ(a.naddr, 1);
    VCHECK_EQ(a.ttl, 0);
}
