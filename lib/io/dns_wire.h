/* SPDX-License-Identifier: MIT */
/* DNS messages, sans-I/O: A/AAAA queries with EDNS0 (RFC 1035 §4, RFC 3596, RFC 6891) and a
 * strict response parser (compression, CNAME chains, RFC 2308 negative TTLs). No clock,
 * randomness, allocation or syscalls: this file is also the fuzz target's whole world. */
#ifndef VEGA_DNS_WIRE_H
#define VEGA_DNS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>

#define VEGA__DNS_HDR_LEN      12
#define VEGA__DNS_NAME_MAX     255 /* wire octets, the final zero included (RFC 1035 §2.3.4) */
#define VEGA__DNS_LABEL_MAX    63
#define VEGA__DNS_TEXT_MAX     253 /* presentation form without the trailing dot */
#define VEGA__DNS_QUERY_MAX    (VEGA__DNS_HDR_LEN + VEGA__DNS_NAME_MAX + 4 + 11)
#define VEGA__DNS_UDP_PLAIN    512  /* RFC 1035 §4.2.1 limit without EDNS */
#define VEGA__DNS_EDNS_PAYLOAD 1232 /* DNS Flag Day 2020 recommendation */
#define VEGA__DNS_MAX_ADDRS    32   /* addresses kept from one answer; the rest are dropped */
#define VEGA__DNS_MAX_CNAME    8    /* CNAME hops followed before the answer is rejected */
#define VEGA__DNS_MAX_PTR_HOPS 128  /* compression pointers followed within one name */

enum {
    VEGA__DNS_T_A = 1,
    VEGA__DNS_T_CNAME = 5,
    VEGA__DNS_T_SOA = 6,
    VEGA__DNS_T_AAAA = 28,
    VEGA__DNS_T_OPT = 41,
};

enum {
    VEGA__DNS_C_IN = 1
};

enum {
    VEGA__DNS_RC_NOERROR = 0,
    VEGA__DNS_RC_FORMERR = 1,
    VEGA__DNS_RC_SERVFAIL = 2,
    VEGA__DNS_RC_NXDOMAIN = 3,
    VEGA__DNS_RC_NOTIMP = 4,
    VEGA__DNS_RC_REFUSED = 5,
};

/* What a query asked: the response must echo it (RFC 5452 §9.1). */
struct vega__dns_question {
    uint16_t id;
    uint16_t qtype;
    size_t qname_len;                  /* wire octets, the final zero included */
    uint8_t qname[VEGA__DNS_NAME_MAX]; /* wire form, as sent (case is compared loosely) */
};

/* A parsed response. For A the first 4 bytes of each addr are used. */
struct vega__dns_answer {
    unsigned rcode; /* 4 header bits, extended by the OPT record's 8 (RFC 6891 §6.1.3) */
    bool tc;        /* truncated: nothing past the question was read; retry over TCP */
    bool aa;
    bool has_opt;    /* the server speaks EDNS */
    unsigned cnames; /* CNAME hops followed from the question's name */
    size_t naddr;    /* records of the question's type owned by the chain's end (<= MAX) */
    uint8_t addr[VEGA__DNS_MAX_ADDRS][16];
    uint32_t ttl;     /* positive answers: least TTL over the CNAMEs used and the addresses */
    uint32_t neg_ttl; /* NXDOMAIN/NODATA: min(SOA TTL, SOA MINIMUM), RFC 2308 §5; 0 when
                         the authority section has no SOA (such answers are not cached) */
};

/* Converts a presentation name ("www.example.com", an optional trailing dot) into wire form.
 * out: at least VEGA__DNS_NAME_MAX bytes. Labels are copied as given (no escapes); they must be
 * 1..63 octets of printable ASCII other than space. "." alone is the root (1 octet).
 * Returns the wire length, or -EINVAL. */
int vega__dns_name_to_wire(uint8_t *out, const char *name);

/* Writes a standard query (RD set) for q into out. edns_payload > 0 adds an OPT record
 * advertising that UDP payload size (RFC 6891 §6.2.3); 0 sends a plain RFC 1035 query.
 * Returns the length, or VEGA_ERR_NOBUF / -EINVAL (empty qname). */
vega_ssize vega__dns_query_write(uint8_t *out, size_t cap, const struct vega__dns_question *q,
                                 uint16_t edns_payload);

/* The message ID, or -1 when len is shorter than a header. */
int vega__dns_msg_id(const uint8_t *msg, size_t len);

/* Reads the ID, the first question's name (decompressed, case kept) and type of msg into q: for
 * servers and tests that answer queries. Returns 0, VEGA_ERR_PROTO (malformed, no question). */
int vega__dns_question_read(const uint8_t *msg, size_t len, struct vega__dns_question *q);

/*
 * Parses a response to q. Everything is bounds-checked: compression pointers must point
 * strictly before the name segment that holds them (so loops cannot happen), labels are at most
 * 63 octets, names 255, every record and rdata must fit in len, A/AAAA/CNAME/SOA rdata must
 * have their exact sizes. Records past those the counts announce are ignored.
 * Returns 0 (out filled: inspect rcode, tc, naddr), 1 (not a response to q: wrong ID,
 * not a response, another opcode or question; drop it and keep waiting), VEGA_ERR_PROTO
 * (a response to q that is malformed, or a CNAME chain longer than VEGA__DNS_MAX_CNAME).
 * An error response (rcode != 0) without a question section is accepted as ours.
 */
int vega__dns_response_read(const uint8_t *msg, size_t len, const struct vega__dns_question *q,
                            struct vega__dns_answer *out);

#endif
