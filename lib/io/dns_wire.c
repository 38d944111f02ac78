/* SPDX-License-Identifier: MIT */
/* DNS wire format: query encoding and strict response parsing (RFC 1035 §4, RFC 3596 §2,
 * RFC 6891 §6, RFC 2308 §5, RFC 5452 §9.1). */
#include <errno.h>
#include <string.h>

#include "dns_wire.h"

/* Header flag bits (RFC 1035 §4.1.1). */
#define F_QR     0x8000u
#define F_OPCODE 0x7800u
#define F_AA     0x0400u
#define F_TC     0x0200u
#define F_RD     0x0100u
#define F_RCODE  0x000Fu

#define RR_FIXED 10 /* type, class, ttl, rdlength */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint8_t lower(uint8_t c)
{
    return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

int vega__dns_name_to_wire(uint8_t *out, const char *name)
{
    if (!name || !*name)
        return -EINVAL;
    if (strcmp(name, ".") == 0) {
        out[0] = 0;
        return 1;
    }
    size_t n = 0;
    const char *p = name;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (l == 0 || l > VEGA__DNS_LABEL_MAX)
            return -EINVAL;
        /* Room for this label and the final zero. */
        if (n + 1 + l + 1 > VEGA__DNS_NAME_MAX)
            return -EINVAL;
        out[n++] = (uint8_t)l;
        for (size_t i = 0; i < l; i++) {
            unsigned char c = (unsigned char)p[i];
            if (c <= 0x20 || c >= 0x7F)
                return -EINVAL;
            out[n++] = c;
        }
        p += l;
        if (*p == '.')
            p++;
    }
    out[n++] = 0;
    return (int)n;
}

vega_ssize vega__dns_query_write(uint8_t *out, size_t cap, const struct vega__dns_question *q,
                                 uint16_t edns_payload)
{
    if (q->qname_len == 0 || q->qname_len > VEGA__DNS_NAME_MAX)
        return -EINVAL;
    size_t need = VEGA__DNS_HDR_LEN + q->qname_len + 4 + (edns_payload ? 11 : 0);
    if (cap < need)
        return VEGA_ERR_NOBUF;
    memset(out, 0, VEGA__DNS_HDR_LEN);
    put16(out, q->id);
    put16(out + 2, F_RD);
    put16(out + 4, 1);                     /* QDCOUNT */
    put16(out + 10, edns_payload ? 1 : 0); /* ARCOUNT */
    uint8_t *p = out + VEGA__DNS_HDR_LEN;
    memcpy(p, q->qname, q->qname_len);
    p += q->qname_len;
    put16(p, q->qtype);
    put16(p + 2, VEGA__DNS_C_IN);
    p += 4;
    if (edns_payload) {
        /* RFC 6891 §6.1.2: root owner, TYPE OPT, CLASS = requestor's UDP payload size, TTL =
         * extended RCODE 0, version 0, DO 0; no options. */
        *p++ = 0;
        put16(p, VEGA__DNS_T_OPT);
        put16(p + 2, edns_payload);
        memset(p + 4, 0, 6);
        p += 10;
    }
    return (vega_ssize)(p - out);
}

int vega__dns_msg_id(const uint8_t *msg, size_t len)
{
    return len < VEGA__DNS_HDR_LEN ? -1 : get16(msg);
}

/*
 * Reads the name at *off into out (uncompressed wire form, lowercased when fold), and moves
 * *off past the name as it sits in the record. RFC 1035 §4.1.4 lets a pointer replace the tail
 * of a name; we require every pointer to land strictly before the segment it was read from, so
 * segment starts decrease and no pointer chain can loop. Labels with the 01/10 high bits
 * (RFC 6891 §5 deprecates extended labels) are rejected. out may be NULL (validation only).
 */
static int name_read(const uint8_t *msg, size_t len, size_t *off, uint8_t *out, size_t *out_len,
                     bool fold)
{
    size_t pos = *off, seg = pos, after = 0, n = 0;
    unsigned hops = 0;
    for (;;) {
        if (pos >= len)
            return VEGA_ERR_PROTO;
        uint8_t c = msg[pos];
        if ((c & 0xC0) == 0xC0) {
            if (pos + 1 >= len)
                return VEGA_ERR_PROTO;
            size_t target = (size_t)(c & 0x3F) << 8 | msg[pos + 1];
            if (target >= seg || ++hops > VEGA__DNS_MAX_PTR_HOPS)
                return VEGA_ERR_PROTO;
            if (hops == 1)
                after = pos + 2;
            pos = seg = target;
            continue;
        }
        if (c & 0xC0)
            return VEGA_ERR_PROTO;
        /* RFC 1035 §2.3.4: labels 63 octets or less, names 255 octets or less. */
        if (n + 1 + c > VEGA__DNS_NAME_MAX)
            return VEGA_ERR_PROTO;
        if (c == 0) {
            if (out)
                out[n] = 0;
            n++;
            pos++;
            break;
        }
        if (pos + 1 + c > len)
            return VEGA_ERR_PROTO;
        if (out) {
            out[n] = c;
            for (unsigned i = 0; i < c; i++)
                out[n + 1 + i] = fold ? lower(msg[pos + 1 + i]) : msg[pos + 1 + i];
        }
        n += 1u + c;
        pos += 1u + c;
    }
    *off = hops ? after : pos;
    if (out_len)
        *out_len = n;
    return 0;
}

/* Case-insensitive equality of two uncompressed wire names (RFC 1035 §2.3.3). */
static bool name_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

int vega__dns_question_read(const uint8_t *msg, size_t len, struct vega__dns_question *q)
{
    if (len < VEGA__DNS_HDR_LEN || get16(msg + 4) == 0)
        return VEGA_ERR_PROTO;
    size_t off = VEGA__DNS_HDR_LEN;
    int r = name_read(msg, len, &off, q->qname, &q->qname_len, false);
    if (r < 0)
        return r;
    if (off + 4 > len)
        return VEGA_ERR_PROTO;
    q->id = get16(msg);
    q->qtype = get16(msg + off);
    return 0;
}

/* One resource record's fixed part. */
struct rr {
    size_t owner; /* offset of the owner name */
    uint16_t type, cls;
    uint32_t ttl;
    size_t rdata; /* offset of rdata */
    uint16_t rdlen;
};

/* Reads the record at *off (validating its owner name) and moves *off past it. */
static int rr_read(const uint8_t *msg, size_t len, size_t *off, struct rr *rr)
{
    rr->owner = *off;
    int r = name_read(msg, len, off, NULL, NULL, false);
    if (r < 0)
        return r;
    if (*off + RR_FIXED > len)
        return VEGA_ERR_PROTO;
    const uint8_t *p = msg + *off;
    rr->type = get16(p);
    rr->cls = get16(p + 2);
    rr->ttl = get32(p + 4);
    rr->rdlen = get16(p + 8);
    rr->rdata = *off + RR_FIXED;
    if (rr->rdata + rr->rdlen > len)
        return VEGA_ERR_PROTO;
    *off = rr->rdata + rr->rdlen;
    return 0;
}

/* RFC 2181 §8: a TTL with the top bit set is treated as zero. */
static uint32_t ttl_clamp(uint32_t t)
{
    return t & 0x80000000u ? 0 : t;
}

/* Checks the rdata of the types we interpret: fixed sizes, names that fill it exactly. */
static int rdata_check(const uint8_t *msg, size_t len, const struct rr *rr)
{
    if (rr->cls != VEGA__DNS_C_IN && rr->type != VEGA__DNS_T_OPT)
        return 0;
    size_t off = rr->rdata, end = rr->rdata + rr->rdlen;
    int r;
    switch (rr->type) {
    case VEGA__DNS_T_A:
        return rr->rdlen == 4 ? 0 : VEGA_ERR_PROTO;
    case VEGA__DNS_T_AAAA:
        return rr->rdlen == 16 ? 0 : VEGA_ERR_PROTO;
    case VEGA__DNS_T_CNAME:
        /* The name must fill the rdata exactly, and may not be read past it. */
        r = name_read(msg, end, &off, NULL, NULL, false);
        return r < 0 ? r : off == end ? 0 : VEGA_ERR_PROTO;
    case VEGA__DNS_T_SOA:
        if ((r = name_read(msg, end, &off, NULL, NULL, false)) < 0 ||
            (r = name_read(msg, end, &off, NULL, NULL, false)) < 0)
            return r;
        return off + 20 == end ? 0 : VEGA_ERR_PROTO;
    default:
        return 0;
    }
}

/* The parser's view of the sections it validated. */
struct sections {
    size_t an_off;
    unsigned an_count;
};

/* Validates every record of the three sections; fills the OPT and SOA results into out. */
static int sections_check(const uint8_t *msg, size_t len, size_t off, struct sections *s,
                          struct vega__dns_answer *out)
{
    unsigned counts[3] = {get16(msg + 6), get16(msg + 8), get16(msg + 10)};
    /* Each record needs at least 11 octets: reject counts the message cannot hold. */
    size_t total = (size_t)counts[0] + counts[1] + counts[2];
    if (total > (len - off) / (1 + RR_FIXED))
        return VEGA_ERR_PROTO;
    s->an_off = off;
    s->an_count = counts[0];
    bool soa_seen = false;
    for (unsigned sec = 0; sec < 3; sec++) {
        for (unsigned i = 0; i < counts[sec]; i++) {
            struct rr rr;
            int r = rr_read(msg, len, &off, &rr);
            if (r < 0 || (r = rdata_check(msg, len, &rr)) < 0)
                return r;
            if (rr.type == VEGA__DNS_T_OPT) {
                /* RFC 6891 §6.1.1: one OPT, in the additional section, owned by the root. */
                if (sec != 2 || out->has_opt || msg[rr.owner] != 0)
                    return VEGA_ERR_PROTO;
                out->has_opt = true;
                out->rcode |= (rr.ttl >> 24) << 4;
            } else if (sec == 1 && rr.type == VEGA__DNS_T_SOA && rr.cls == VEGA__DNS_C_IN &&
                       !soa_seen) {
                /* RFC 2308 §5: the negative TTL is the lesser of the SOA's TTL and MINIMUM. */
                uint32_t min = ttl_clamp(get32(msg + rr.rdata + rr.rdlen - 4));
                uint32_t t = ttl_clamp(rr.ttl);
                out->neg_ttl = t < min ? t : min;
                soa_seen = true;
            }
        }
    }
    return 0;
}

/* A position in the answer section. */
struct cursor {
    unsigned idx; /* records consumed */
    size_t off;   /* offset of the next one */
};

/* Finds the next record of `type` in the answer section owned by name, from *c on, and moves
 * *c past it. Returns 1 (found, *rr filled), 0 (none left), or an error. */
static int answer_next(const uint8_t *msg, size_t len, const struct sections *s, struct cursor *c,
                       uint16_t type, const uint8_t *name, size_t name_len, struct rr *rr)
{
    while (c->idx < s->an_count) {
        int r = rr_read(msg, len, &c->off, rr);
        if (r < 0)
            return r;
        c->idx++;
        if (rr->type != type || rr->cls != VEGA__DNS_C_IN)
            continue;
        uint8_t owner[VEGA__DNS_NAME_MAX];
        size_t owner_len, o = rr->owner;
        if ((r = name_read(msg, len, &o, owner, &owner_len, true)) < 0)
            return r;
        if (name_eq(owner, owner_len, name, name_len))
            return 1;
    }
    return 0;
}

/* Follows the CNAME chain from the question's name (RFC 1034 §3.6.2), then collects the
 * records of the question's type at its end. */
static int answers_collect(const uint8_t *msg, size_t len, const struct sections *s,
                           const struct vega__dns_question *q, struct vega__dns_answer *out)
{
    uint8_t cur[VEGA__DNS_NAME_MAX];
    size_t cur_len = q->qname_len;
    for (size_t i = 0; i < cur_len; i++)
        cur[i] = lower(q->qname[i]);
    uint32_t ttl = UINT32_MAX;
    struct rr rr;
    int r;
    for (;;) {
        struct cursor c = {0, s->an_off};
        r = answer_next(msg, len, s, &c, VEGA__DNS_T_CNAME, cur, cur_len, &rr);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        if (++out->cnames > VEGA__DNS_MAX_CNAME)
            return VEGA_ERR_PROTO; /* a loop, or a chain nobody should need */
        uint32_t t = ttl_clamp(rr.ttl);
        ttl = t < ttl ? t : ttl;
        size_t o = rr.rdata;
        if ((r = name_read(msg, rr.rdata + rr.rdlen, &o, cur, &cur_len, true)) < 0)
            return r;
    }
    /* Only A and AAAA carry addresses; their rdata sizes were checked, and are again here. */
    size_t alen = q->qtype == VEGA__DNS_T_A ? 4 : q->qtype == VEGA__DNS_T_AAAA ? 16 : 0;
    for (struct cursor c = {0, s->an_off}; alen;) {
        r = answer_next(msg, len, s, &c, q->qtype, cur, cur_len, &rr);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        uint32_t t = ttl_clamp(rr.ttl);
        ttl = t < ttl ? t : ttl;
        if (rr.rdlen != alen)
            return VEGA_ERR_PROTO;
        if (out->naddr < VEGA__DNS_MAX_ADDRS) {
            memset(out->addr[out->naddr], 0, sizeof(out->addr[0]));
            memcpy(out->addr[out->naddr], msg + rr.rdata, alen);
            out->naddr++;
        }
    }
    out->ttl = out->naddr ? ttl : 0;
    return 0;
}

int vega__dns_response_read(const uint8_t *msg, size_t len, const struct vega__dns_question *q,
                            struct vega__dns_answer *out)
{
    memset(out, 0, sizeof(*out));
    if (len < VEGA__DNS_HDR_LEN)
        return 1;
    unsigned flags = get16(msg + 2);
    /* RFC 5452 §9.1: accept only a response with our ID, to our question. */
    if (get16(msg) != q->id || !(flags & F_QR) || (flags & F_OPCODE) != 0)
        return 1;
    out->rcode = flags & F_RCODE;
    out->tc = (flags & F_TC) != 0;
    out->aa = (flags & F_AA) != 0;

    unsigned qdcount = get16(msg + 4);
    size_t off = VEGA__DNS_HDR_LEN;
    if (qdcount == 0) {
        /* Servers answer FORMERR and the like without echoing the question. */
        if (out->rcode == VEGA__DNS_RC_NOERROR || out->rcode == VEGA__DNS_RC_NXDOMAIN)
            return 1;
        return 0;
    }
    if (qdcount != 1)
        return 1;
    uint8_t qn[VEGA__DNS_NAME_MAX];
    size_t qn_len;
    if (name_read(msg, len, &off, qn, &qn_len, false) < 0 || off + 4 > len)
        return 1;
    if (!name_eq(qn, qn_len, q->qname, q->qname_len) || get16(msg + off) != q->qtype ||
        get16(msg + off + 2) != VEGA__DNS_C_IN)
        return 1;
    off += 4;
    if (out->tc)
        return 0; /* RFC 1035 §4.2.1/RFC 7766 §5: the rest may be cut anywhere; ask over TCP */

    struct sections s;
    int r = sections_check(msg, len, off, &s, out);
    if (r < 0)
        return r;
    if (out->rcode != VEGA__DNS_RC_NOERROR && out->rcode != VEGA__DNS_RC_NXDOMAIN) {
        out->neg_ttl = 0;
        return 0;
    }
    if ((r = answers_collect(msg, len, &s, q, out)) < 0)
        return r;
    if (out->rcode == VEGA__DNS_RC_NXDOMAIN) {
        out->naddr = 0; /* the chain's end does not exist: nothing else counts */
        out->ttl = 0;
    }
    if (out->naddr)
        out->neg_ttl = 0;
    return 0;
}
