/* SPDX-License-Identifier: MIT */
/* Transport parameters (RFC 9000 §18, RFC 9221 §3, RFC 9368 §5): round trips, defaults,
 * unknown and GREASE parameters, and every validation rule with TRANSPORT_PARAMETER_ERROR. */
#include <string.h>

#include <vega/quic_wire.h>

#include "vtest.h"

static void full_server(vega_quic_tp *tp)
{
    vega_quic_tp_init(tp);
    tp->has_original_dcid = true;
    tp->original_dcid_len = 8;
    memset(tp->original_dcid, 0x83, 8);
    tp->has_initial_scid = true;
    tp->initial_scid_len = 20;
    memset(tp->initial_scid, 0x11, 20);
    tp->has_retry_scid = true;
    tp->retry_scid_len = 0;
    tp->has_stateless_reset_token = true;
    memset(tp->stateless_reset_token, 0x5e, 16);
    tp->max_idle_timeout = 30000;
    tp->max_udp_payload_size = 1472;
    tp->initial_max_data = 1 << 20;
    tp->initial_max_stream_data_bidi_local = 1 << 18;
    tp->initial_max_stream_data_bidi_remote = 1 << 17;
    tp->initial_max_stream_data_uni = 1 << 16;
    tp->initial_max_streams_bidi = 1ull << 60;
    tp->initial_max_streams_uni = 3;
    tp->ack_delay_exponent = 20;
    tp->max_ack_delay = (1 << 14) - 1;
    tp->disable_active_migration = true;
    tp->has_preferred_address = true;
    vega_quic_preferred_address *pa = &tp->preferred_address;
    memcpy(pa->ipv4, "\x7f\x00\x00\x01", 4);
    pa->ipv4_port = 4433;
    memset(pa->ipv6, 0, 16);
    pa->ipv6[15] = 1;
    pa->ipv6_port = 4434;
    pa->cid_len = 4;
    memcpy(pa->cid, "\x01\x02\x03\x04", 4);
    memset(pa->reset_token, 0x77, 16);
    tp->active_connection_id_limit = 8;
    tp->has_max_datagram_frame_size = true;
    tp->max_datagram_frame_size = 0;
    tp->has_version_info = true;
    tp->chosen_version = VEGA_QUIC_V2;
    tp->n_available_versions = 2;
    tp->available_versions[0] = VEGA_QUIC_V2;
    tp->available_versions[1] = VEGA_QUIC_V1;
}

VTEST(roundtrip_server_all)
{
    vega_quic_tp tp, back;
    full_server(&tp);
    uint8_t buf[512];
    vega_ssize n = vega_quic_tp_encode(&tp, true, buf, sizeof buf);
    VCHECK(n > 0);
    uint64_t err = 0;
    VCHECK_EQ(vega_quic_tp_decode(&back, buf, (size_t)n, true, &err), 0);
    VCHECK(memcmp(&tp, &back, sizeof tp) == 0);
    VCHECK_EQ(vega_quic_tp_encode(&tp, true, buf, (size_t)n - 1), VEGA_ERR_NOBUF);
    /* As a client's: the server-only parameters are refused both ways. */
    VCHECK_EQ(vega_quic_tp_encode(&tp, false, buf, sizeof buf), -EINVAL);
    VCHECK_EQ(vega_quic_tp_decode(&back, buf, (size_t)n, false, &err), VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_TRANSPORT_PARAMETER_ERROR);
}

/* Defaults are not sent, and an empty-but-for-initial_scid client set decodes to defaults. */
VTEST(defaults_and_minimal_client)
{
    vega_quic_tp tp, back;
    vega_quic_tp_init(&tp);
    VCHECK_EQ(tp.max_udp_payload_size, 65527);
    VCHECK_EQ(tp.ack_delay_exponent, 3);
    VCHECK_EQ(tp.max_ack_delay, 25);
    VCHECK_EQ(tp.active_connection_id_limit, 2);
    uint8_t buf[64];
    VCHECK_EQ(vega_quic_tp_encode(&tp, false, buf, sizeof buf), -EINVAL);
    tp.has_initial_scid = true;
    VCHECK_EQ(vega_quic_tp_encode(&tp, false, buf, sizeof buf), 2); /* 0f 00 */
    VCHECK_EQ(vega_quic_tp_decode(&back, buf, 2, false, NULL), 0);
    VCHECK(memcmp(&tp, &back, sizeof tp) == 0);
    /* A server's needs original_destination_connection_id. */
    VCHECK_EQ(vega_quic_tp_decode(&back, buf, 2, true, NULL), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_quic_tp_encode(&tp, true, buf, sizeof buf), -EINVAL);
    /* Nothing at all: initial_source_connection_id is missing. */
    VCHECK_EQ(vega_quic_tp_decode(&back, buf, 0, false, NULL), VEGA_ERR_PROTO);
}

static void check(const char *hex, bool from_server, int want, int line)
{
    uint8_t buf[256];
    size_t n = vtest_unhex(hex, buf, sizeof buf);
    vega_quic_tp tp;
    uint64_t err = 0;
    int rc = vega_quic_tp_decode(&tp, buf, n, from_server, &err);
    if (rc != want || (rc < 0 && err != VEGA_QUIC_TRANSPORT_PARAMETER_ERROR))
        vtest_fail(__FILE__, line, "%s: rc %d err 0x%llx", hex, rc, (unsigned long long)err);
}
#define OK(hex)   check("0f00" hex, false, 0, __LINE__)
#define BAD(hex)  check("0f00" hex, false, VEGA_ERR_PROTO, __LINE__)
#define SOK(hex)  check("0f000000" hex, true, 0, __LINE__)
#define SBAD(hex) check("0f000000" hex, true, VEGA_ERR_PROTO, __LINE__)

/* RFC 9000 §18.2 value rules, §7.4 duplicates, §18 exact lengths; unknown ids skipped. */
VTEST(validation)
{
    OK("");
    OK("1b00");           /* GREASE 27, empty */
    OK("4137 03 aabbcc"); /* unknown 0x137 */
    OK("0304 800004b0");  /* max_udp_payload_size 1200 */
    BAD("0302 44af");     /* 1199 */
    OK("0a01 14");        /* ack_delay_exponent 20 */
    BAD("0a01 15");       /* 21 */
    OK("0b02 7fff");      /* max_ack_delay 2^14 - 1 */
    BAD("0b04 80004000"); /* 2^14 */
    OK("0e01 02");
    BAD("0e01 01"); /* active_connection_id_limit 1 */
    BAD("0e01 00");
    OK("0808 d000000000000000"); /* initial_max_streams_bidi 2^60 */
    BAD("0808 d000000000000001");
    BAD("0908 d000000000000001");
    BAD("0402 0001");       /* value shorter than its length */
    BAD("0402 01");         /* runs past the end */
    BAD("0401 40");         /* truncated varint inside */
    BAD("0403 400100");     /* trailing byte inside the parameter */
    BAD("0401 01 0401 01"); /* duplicate */
    BAD("0f00");            /* duplicate initial_source_connection_id */
    BAD("0c01 00");         /* disable_active_migration must be empty */
    OK("0c00");
    BAD("1b00 0c00 0c00");
    OK("2001 00"); /* max_datagram_frame_size 0 */
    BAD("2001 00 2001 00");
    /* Server-only parameters from a client. */
    BAD("0000");
    BAD("1000");
    BAD("0210 00000000000000000000000000000000");
    /* CIDs up to 20 bytes; stateless_reset_token exactly 16. */
    SOK("1014 0102030405060708090a0b0c0d0e0f1011121314");
    SBAD("1015 0102030405060708090a0b0c0d0e0f101112131415");
    SOK("0210 00000000000000000000000000000000");
    SBAD("020f 000000000000000000000000000000");
    check("0f15 0102030405060708090a0b0c0d0e0f101112131415", false, VEGA_ERR_PROTO, __LINE__);
    /* preferred_address: 41 + CID bytes, CID 1..20. */
    SOK("0d2a 7f000001 115c 00000000000000000000000000000001 115d 01 aa"
        " 77777777777777777777777777777777");
    SBAD("0d29 7f000001 115c 00000000000000000000000000000001 115d 00"
         " 77777777777777777777777777777777");
    SBAD("0d2a 7f000001 115c 00000000000000000000000000000001 115d 02 aa"
         " 77777777777777777777777777777777");
    /* version_information: non-empty, whole versions, none zero. */
    OK("1104 6b3343cf");
    OK("1108 00000001 6b3343cf");
    BAD("1100");
    BAD("1106 00000001 6b33");
    BAD("1104 00000000");
    BAD("1108 00000001 00000000");
    /* A truncated id or length. */
    BAD("40");
    BAD("01");
}

/* version_information with more Available Versions than VEGA_QUIC_TP_MAX_VERSIONS. */
VTEST(version_info_limit)
{
    uint8_t buf[512];
    size_t n = 0;
    buf[n++] = 0x0f;
    buf[n++] = 0x00;
    buf[n++] = 0x11;
    size_t count = 1 + VEGA_QUIC_TP_MAX_VERSIONS;
    n += (size_t)vega_quic_varint_write(buf + n, 8, 4 * count);
    for (size_t i = 0; i < count; i++, n += 4)
        memcpy(buf + n, "\x00\x00\x00\x01", 4);
    vega_quic_tp tp;
    VCHECK_EQ(vega_quic_tp_decode(&tp, buf, n, false, NULL), 0);
    VCHECK_EQ(tp.n_available_versions, VEGA_QUIC_TP_MAX_VERSIONS);
    buf[4] += 4; /* one more available version */
    memcpy(buf + n, "\x00\x00\x00\x01", 4);
    VCHECK_EQ(vega_quic_tp_decode(&tp, buf, n + 4, false, NULL), VEGA_ERR_PROTO);
}
