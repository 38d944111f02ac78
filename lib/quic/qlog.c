/* SPDX-License-Identifier: MIT */
/* The qlog writer (<vega/quic_qlog.h>): a connection's typed events as JSON-SEQ records (RFC
 * 7464) in the names of draft-ietf-quic-qlog-main-schema and -quic-events (qlog 0.3, the
 * version ngtcp2 and quiche write). Every record is built in the caller's buffer with a bounded
 * appender: nothing is allocated, and a record never exceeds VEGA_QUIC_QLOG_RECORD_MAX (a
 * packet's frames past the room are counted in "frames_truncated", strings are cut). */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <vega/quic_qlog.h>

#define RS            0x1e
#define TAIL_RESERVE  256 /* what closing a record needs, at most */
#define FRAME_RESERVE 512 /* room a frame may take (its strings are cut to fit) */
#define REASON_MAX    256 /* bytes of a reason phrase or token shown */

struct jb {
    char *p;
    size_t cap, len;
    bool full;
};

static void put(struct jb *b, const char *s, size_t n)
{
    if (b->full || b->len + n > b->cap) {
        b->full = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void puts_(struct jb *b, const char *s)
{
    put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(struct jb *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->full = true;
        return;
    }
    put(b, tmp, (size_t)n);
}

static void put_u64(struct jb *b, const char *key, uint64_t v)
{
    putf(b, ",\"%s\":%" PRIu64, key, v);
}

/* ns as milliseconds with microsecond digits, as qlog's float times. */
static void put_ms(struct jb *b, const char *key, uint64_t ns)
{
    putf(b, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000000, ns / 1000 % 1000);
}

static void put_hex(struct jb *b, const uint8_t *d, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    put(b, "\"", 1);
    for (size_t i = 0; i < n && !b->full; i++) {
        char two[2] = {hx[d[i] >> 4], hx[d[i] & 15]};
        put(b, two, 2);
    }
    put(b, "\"", 1);
}

static void put_hex_field(struct jb *b, const char *key, const uint8_t *d, size_t n)
{
    putf(b, ",\"%s\":", key);
    put_hex(b, d, n > REASON_MAX ? REASON_MAX : n);
}

/* A JSON string (RFC 8259 §7): quotes, backslashes and control characters escaped; bytes
 * above 0x7e as \u00XX (read as Latin-1), so arbitrary wire bytes stay valid JSON. */
static void put_str(struct jb *b, const char *key, const char *s, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    putf(b, ",\"%s\":\"", key);
    if (n > REASON_MAX)
        n = REASON_MAX;
    for (size_t i = 0; i < n && !b->full; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            put(b, e, 2);
        } else if (ch < 0x20 || ch > 0x7e) {
            char e[6] = {'\\', 'u', '0', '0', hx[ch >> 4], hx[ch & 15]};
            put(b, e, 6);
        } else {
            put(b, (const char *)&s[i], 1);
        }
    }
    put(b, "\"", 1);
}

static const char *pkt_type_name(vega_quic_pkt_type t)
{
    switch (t) {
    case VEGA_QUIC_PKT_INITIAL:
        return "initial";
    case VEGA_QUIC_PKT_0RTT:
        return "0RTT";
    case VEGA_QUIC_PKT_HANDSHAKE:
        return "handshake";
    case VEGA_QUIC_PKT_RETRY:
        return "retry";
    case VEGA_QUIC_PKT_VN:
        return "version_negotiation";
    case VEGA_QUIC_PKT_1RTT:
        return "1RTT";
    default:
        return "unknown";
    }
}

static void begin(struct jb *b, uint64_t time, uint64_t start, const char *name)
{
    put(b, "\x1e", 1);
    uint64_t rel = time > start ? time - start : 0;
    putf(b, "{\"time\":%" PRIu64 ".%03" PRIu64 ",\"name\":\"%s\",\"data\":{", rel / 1000000,
         rel / 1000 % 1000, name);
}

static void end(struct jb *b)
{
    puts_(b, "}}\n");
}

/* ---- frames --------------------------------------------------------------------------------- */

static void frame_json(struct jb *b, const vega_quic_frame *f)
{
    switch (f->type) {
    case VEGA_QUIC_FT_PADDING:
        putf(b, "{\"frame_type\":\"padding\",\"payload_length\":%zu}", f->u.padding.len);
        return;
    case VEGA_QUIC_FT_PING:
        puts_(b, "{\"frame_type\":\"ping\"}");
        return;
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN: {
        puts_(b, "{\"frame_type\":\"ack\",\"acked_ranges\":[");
        vega_quic_ack_iter it;
        vega_quic_ack_range r;
        bool first = true;
        unsigned n = 0;
        vega_quic_ack_iter_init(&it, &f->u.ack);
        while (vega_quic_ack_iter_next(&it, &r) && n < 32) {
            putf(b, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", r.smallest, r.largest);
            first = false;
            n++;
        }
        put(b, "]", 1);
        if (f->type == VEGA_QUIC_FT_ACK_ECN) {
            put_u64(b, "ect1", f->u.ack.ect1);
            put_u64(b, "ect0", f->u.ack.ect0);
            put_u64(b, "ce", f->u.ack.ce);
        }
        put(b, "}", 1);
        return;
    }
    case VEGA_QUIC_FT_RESET_STREAM:
        putf(b,
             "{\"frame_type\":\"reset_stream\",\"stream_id\":%" PRIu64 ",\"error_code\":%" PRIu64
             ",\"final_size\":%" PRIu64 "}",
             f->u.reset_stream.stream_id, f->u.reset_stream.error_code,
             f->u.reset_stream.final_size);
        return;
    case VEGA_QUIC_FT_STOP_SENDING:
        putf(b,
             "{\"frame_type\":\"stop_sending\",\"stream_id\":%" PRIu64 ",\"error_code\":%" PRIu64
             "}",
             f->u.stop_sending.stream_id, f->u.stop_sending.error_code);
        return;
    case VEGA_QUIC_FT_CRYPTO:
        putf(b, "{\"frame_type\":\"crypto\",\"offset\":%" PRIu64 ",\"length\":%zu}",
             f->u.crypto.offset, f->u.crypto.len);
        return;
    case VEGA_QUIC_FT_NEW_TOKEN:
        puts_(b, "{\"frame_type\":\"new_token\",\"token\":{\"data\":");
        put_hex(b, f->u.new_token.token,
                f->u.new_token.len > REASON_MAX ? REASON_MAX : f->u.new_token.len);
        putf(b, ",\"length\":%zu}}", f->u.new_token.len);
        return;
    case VEGA_QUIC_FT_MAX_DATA:
        putf(b, "{\"frame_type\":\"max_data\",\"maximum\":%" PRIu64 "}", f->u.limit.max);
        return;
    case VEGA_QUIC_FT_MAX_STREAM_DATA:
        putf(b,
             "{\"frame_type\":\"max_stream_data\",\"stream_id\":%" PRIu64 ",\"maximum\":%" PRIu64
             "}",
             f->u.stream_limit.stream_id, f->u.stream_limit.max);
        return;
    case VEGA_QUIC_FT_MAX_STREAMS_BIDI:
    case VEGA_QUIC_FT_MAX_STREAMS_UNI:
        putf(b, "{\"frame_type\":\"max_streams\",\"stream_type\":\"%s\",\"maximum\":%" PRIu64 "}",
             f->type == VEGA_QUIC_FT_MAX_STREAMS_BIDI ? "bidirectional" : "unidirectional",
             f->u.limit.max);
        return;
    case VEGA_QUIC_FT_DATA_BLOCKED:
        putf(b, "{\"frame_type\":\"data_blocked\",\"limit\":%" PRIu64 "}", f->u.limit.max);
        return;
    case VEGA_QUIC_FT_STREAM_DATA_BLOCKED:
        putf(b,
             "{\"frame_type\":\"stream_data_blocked\",\"stream_id\":%" PRIu64 ",\"limit\":%" PRIu64
             "}",
             f->u.stream_limit.stream_id, f->u.stream_limit.max);
        return;
    case VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_UNI:
        putf(b, "{\"frame_type\":\"streams_blocked\",\"stream_type\":\"%s\",\"limit\":%" PRIu64 "}",
             f->type == VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI ? "bidirectional" : "unidirectional",
             f->u.limit.max);
        return;
    case VEGA_QUIC_FT_NEW_CONNECTION_ID:
        putf(b,
             "{\"frame_type\":\"new_connection_id\",\"sequence_number\":%" PRIu64
             ",\"retire_prior_to\":%" PRIu64 ",\"connection_id_length\":%u",
             f->u.new_cid.seq, f->u.new_cid.retire_prior_to, (unsigned)f->u.new_cid.cid_len);
        put_hex_field(b, "connection_id", f->u.new_cid.cid, f->u.new_cid.cid_len);
        put_hex_field(b, "stateless_reset_token", f->u.new_cid.reset_token,
                      VEGA_QUIC_RESET_TOKEN_LEN);
        put(b, "}", 1);
        return;
    case VEGA_QUIC_FT_RETIRE_CONNECTION_ID:
        putf(b, "{\"frame_type\":\"retire_connection_id\",\"sequence_number\":%" PRIu64 "}",
             f->u.retire_cid.seq);
        return;
    case VEGA_QUIC_FT_PATH_CHALLENGE:
    case VEGA_QUIC_FT_PATH_RESPONSE:
        putf(b, "{\"frame_type\":\"%s\"",
             f->type == VEGA_QUIC_FT_PATH_CHALLENGE ? "path_challenge" : "path_response");
        put_hex_field(b, "data", f->u.path.data, 8);
        put(b, "}", 1);
        return;
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP: {
        bool app = f->type == VEGA_QUIC_FT_CONNECTION_CLOSE_APP;
        putf(b,
             "{\"frame_type\":\"connection_close\",\"error_space\":\"%s\",\"error_code\":%" PRIu64,
             app ? "application" : "transport", f->u.close.error_code);
        if (!app)
            put_u64(b, "trigger_frame_type", f->u.close.frame_type);
        put_str(b, "reason", (const char *)f->u.close.reason, f->u.close.reason_len);
        put(b, "}", 1);
        return;
    }
    case VEGA_QUIC_FT_HANDSHAKE_DONE:
        puts_(b, "{\"frame_type\":\"handshake_done\"}");
        return;
    case VEGA_QUIC_FT_DATAGRAM:
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        putf(b, "{\"frame_type\":\"datagram\",\"length\":%zu}", f->u.datagram.len);
        return;
    default:
        putf(b, "{\"frame_type\":\"unknown\",\"raw_frame_type\":%u}", (unsigned)f->type);
        return;
    }
}

static void stream_frame(struct jb *b, const vega_quic_frame *f)
{
    putf(b,
         "{\"frame_type\":\"stream\",\"stream_id\":%" PRIu64 ",\"offset\":%" PRIu64
         ",\"length\":%zu%s}",
         f->u.stream.stream_id, f->u.stream.offset, f->u.stream.len,
         f->u.stream.fin ? ",\"fin\":true" : "");
}

/* The frames of a payload, decoded; what is left when the record's room runs short is
 * counted, and a payload that does not decode ends with an "unknown" frame. */
static void frames_json(struct jb *b, const uint8_t *p, size_t len)
{
    puts_(b, ",\"frames\":[");
    bool first = true;
    size_t skipped = 0;
    while (len) {
        vega_quic_frame f;
        uint64_t werr = 0;
        vega_ssize n = vega_quic_frame_decode(&f, p, len, &werr);
        if (n <= 0) {
            if (b->len + FRAME_RESERVE + TAIL_RESERVE <= b->cap)
                putf(b, "%s{\"frame_type\":\"unknown\",\"raw_frame_type\":%u}", first ? "" : ",",
                     (unsigned)p[0]);
            else
                skipped++;
            break;
        }
        if (b->len + FRAME_RESERVE + TAIL_RESERVE <= b->cap) {
            if (!first)
                put(b, ",", 1);
            if (f.type >= VEGA_QUIC_FT_STREAM && f.type <= VEGA_QUIC_FT_STREAM + 7)
                stream_frame(b, &f);
            else
                frame_json(b, &f);
            first = false;
        } else {
            skipped++;
        }
        p += n;
        len -= (size_t)n;
    }
    put(b, "]", 1);
    if (skipped)
        putf(b, ",\"frames_truncated\":%zu", skipped);
}

/* ---- events --------------------------------------------------------------------------------- */

static void header_json(struct jb *b, const vega_quic_qlog_packet *p, bool pn)
{
    putf(b, "\"header\":{\"packet_type\":\"%s\"", pkt_type_name(p->type));
    if (pn)
        put_u64(b, "packet_number", p->pn);
    if (p->type != VEGA_QUIC_PKT_1RTT && p->version)
        putf(b, ",\"version\":\"%08" PRIx32 "\"", p->version);
    if (p->dcid)
        put_hex_field(b, "dcid", p->dcid, p->dcid_len);
    if (p->scid && p->type != VEGA_QUIC_PKT_1RTT)
        put_hex_field(b, "scid", p->scid, p->scid_len);
    if (p->type == VEGA_QUIC_PKT_1RTT)
        putf(b, ",\"key_phase_bit\":\"%d\"", p->key_phase ? 1 : 0);
    if (p->token_len && (p->type == VEGA_QUIC_PKT_INITIAL || p->type == VEGA_QUIC_PKT_RETRY)) {
        puts_(b, ",\"token\":{\"data\":");
        put_hex(b, p->token, p->token_len > REASON_MAX ? REASON_MAX : p->token_len);
        putf(b, ",\"length\":%zu}", p->token_len);
    }
    put(b, "}", 1);
}

static void packet_event(struct jb *b, const vega_quic_qlog_event *ev, uint64_t start,
                         const char *name)
{
    const vega_quic_qlog_packet *p = ev->pkt;
    bool pn = p->type != VEGA_QUIC_PKT_RETRY && p->type != VEGA_QUIC_PKT_VN &&
              ev->type != VEGA_QUIC_QLOG_PACKET_DROPPED;
    begin(b, ev->time, start, name);
    header_json(b, p, pn);
    if (ev->type != VEGA_QUIC_QLOG_PACKET_LOST)
        putf(b, ",\"raw\":{\"length\":%zu}", p->length);
    if (p->type == VEGA_QUIC_PKT_VN && p->versions) {
        puts_(b, ",\"supported_versions\":[");
        for (size_t i = 0; i < p->nversions && i < 32; i++) {
            const uint8_t *v = p->versions + 4 * i;
            putf(b, "%s\"%02x%02x%02x%02x\"", i ? "," : "", v[0], v[1], v[2], v[3]);
        }
        put(b, "]", 1);
    }
    if (p->frames &&
        (ev->type == VEGA_QUIC_QLOG_PACKET_SENT || ev->type == VEGA_QUIC_QLOG_PACKET_RECEIVED))
        frames_json(b, p->frames, p->frames_len);
    if (ev->trigger)
        putf(b, ",\"trigger\":\"%s\"", ev->trigger);
    end(b);
}

static void params_event(struct jb *b, const vega_quic_qlog_event *ev, uint64_t start)
{
    const vega_quic_tp *tp = ev->tp;
    begin(b, ev->time, start, "transport:parameters_set");
    putf(b, "\"owner\":\"%s\"", ev->remote ? "remote" : "local");
    if (tp->has_original_dcid)
        put_hex_field(b, "original_destination_connection_id", tp->original_dcid,
                      tp->original_dcid_len);
    if (tp->has_initial_scid)
        put_hex_field(b, "initial_source_connection_id", tp->initial_scid, tp->initial_scid_len);
    if (tp->has_retry_scid)
        put_hex_field(b, "retry_source_connection_id", tp->retry_scid, tp->retry_scid_len);
    if (tp->has_stateless_reset_token)
        put_hex_field(b, "stateless_reset_token", tp->stateless_reset_token,
                      VEGA_QUIC_RESET_TOKEN_LEN);
    putf(b, ",\"disable_active_migration\":%s", tp->disable_active_migration ? "true" : "false");
    put_u64(b, "max_idle_timeout", tp->max_idle_timeout);
    put_u64(b, "max_udp_payload_size", tp->max_udp_payload_size);
    put_u64(b, "ack_delay_exponent", tp->ack_delay_exponent);
    put_u64(b, "max_ack_delay", tp->max_ack_delay);
    put_u64(b, "active_connection_id_limit", tp->active_connection_id_limit);
    put_u64(b, "initial_max_data", tp->initial_max_data);
    put_u64(b, "initial_max_stream_data_bidi_local", tp->initial_max_stream_data_bidi_local);
    put_u64(b, "initial_max_stream_data_bidi_remote", tp->initial_max_stream_data_bidi_remote);
    put_u64(b, "initial_max_stream_data_uni", tp->initial_max_stream_data_uni);
    put_u64(b, "initial_max_streams_bidi", tp->initial_max_streams_bidi);
    put_u64(b, "initial_max_streams_uni", tp->initial_max_streams_uni);
    if (tp->has_max_datagram_frame_size)
        put_u64(b, "max_datagram_frame_size", tp->max_datagram_frame_size);
    end(b);
}

/* An address as the schema's ip strings, with its port. */
static void addr_json(struct jb *b, const char *ip_key, const char *port_key,
                      const struct sockaddr_storage *ss, socklen_t len)
{
    char ip[64] = "";
    unsigned port = 0;
    if (len && ss->ss_family == AF_INET) {
        const uint8_t *a =
            (const uint8_t *)&((const struct sockaddr_in *)(const void *)ss)->sin_addr;
        snprintf(ip, sizeof ip, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
        const uint8_t *pp =
            (const uint8_t *)&((const struct sockaddr_in *)(const void *)ss)->sin_port;
        port = (unsigned)pp[0] << 8 | pp[1];
    } else if (len && ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)ss;
        const uint8_t *a = (const uint8_t *)&s6->sin6_addr;
        size_t o = 0;
        for (int i = 0; i < 16; i += 2)
            o += (size_t)snprintf(ip + o, sizeof ip - o, "%s%x", i ? ":" : "",
                                  (unsigned)a[i] << 8 | a[i + 1]);
        const uint8_t *pp = (const uint8_t *)&s6->sin6_port;
        port = (unsigned)pp[0] << 8 | pp[1];
    } else {
        return;
    }
    putf(b, ",\"%s\":\"%s\",\"%s\":%u", ip_key, ip, port_key, port);
}

static const char *state_name(vega_quic_qlog_conn_state s)
{
    static const char *const names[] = {"handshake_complete", "handshake_confirmed", "closing",
                                        "draining", "closed"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

static const char *cc_name(vega_quic_qlog_cc_state s)
{
    static const char *const names[] = {"slow_start", "congestion_avoidance", "recovery",
                                        "application_limited"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

vega_ssize vega_quic_qlog_write(char *out, size_t cap, const vega_quic_qlog_event *ev,
                                uint64_t start)
{
    if (!ev || (!out && cap))
        return -EINVAL;
    struct jb b = {.p = out,
                   .cap = cap > VEGA_QUIC_QLOG_RECORD_MAX ? VEGA_QUIC_QLOG_RECORD_MAX : cap};
    switch (ev->type) {
    case VEGA_QUIC_QLOG_CONNECTION_STARTED:
        begin(&b, ev->time, start, "connectivity:connection_started");
        putf(&b, "\"ip_version\":\"%s\"",
             ev->path && ev->path->remote.ss_family == AF_INET6 ? "ipv6" : "ipv4");
        if (ev->path) {
            addr_json(&b, "src_ip", "src_port", &ev->path->local, ev->path->local_len);
            addr_json(&b, "dst_ip", "dst_port", &ev->path->remote, ev->path->remote_len);
        }
        put_hex_field(&b, "src_cid", ev->scid, ev->scid_len);
        put_hex_field(&b, "dst_cid", ev->dcid, ev->dcid_len);
        putf(&b, ",\"protocol\":\"QUIC\",\"version\":\"%08" PRIx32 "\"", ev->version);
        end(&b);
        break;
    case VEGA_QUIC_QLOG_PARAMETERS_SET:
        if (!ev->tp)
            return -EINVAL;
        params_event(&b, ev, start);
        break;
    case VEGA_QUIC_QLOG_PACKET_SENT:
    case VEGA_QUIC_QLOG_PACKET_RECEIVED:
    case VEGA_QUIC_QLOG_PACKET_DROPPED:
    case VEGA_QUIC_QLOG_PACKET_LOST: {
        static const char *const names[] = {"transport:packet_sent", "transport:packet_received",
                                            "transport:packet_dropped", "recovery:packet_lost"};
        if (!ev->pkt)
            return -EINVAL;
        packet_event(&b, ev, start, names[ev->type - VEGA_QUIC_QLOG_PACKET_SENT]);
        break;
    }
    case VEGA_QUIC_QLOG_METRICS_UPDATED: {
        const vega_quic_qlog_metrics *m = ev->metrics;
        if (!m)
            return -EINVAL;
        begin(&b, ev->time, start, "recovery:metrics_updated");
        putf(&b, "\"congestion_window\":%" PRIu64, m->cwnd);
        put_u64(&b, "bytes_in_flight", m->bytes_in_flight);
        if (m->ssthresh != UINT64_MAX)
            put_u64(&b, "ssthresh", m->ssthresh);
        if (m->min_rtt)
            put_ms(&b, "min_rtt", m->min_rtt);
        put_ms(&b, "smoothed_rtt", m->smoothed_rtt);
        put_ms(&b, "latest_rtt", m->latest_rtt);
        put_ms(&b, "rtt_variance", m->rtt_variance);
        put_u64(&b, "pto_count", m->pto_count);
        end(&b);
        break;
    }
    case VEGA_QUIC_QLOG_CONGESTION_STATE:
        begin(&b, ev->time, start, "recovery:congestion_state_updated");
        putf(&b, "\"new\":\"%s\"", cc_name(ev->cc_state));
        end(&b);
        break;
    case VEGA_QUIC_QLOG_KEY_UPDATED:
        /* An update replaces both directions' 1-RTT keys: one record each. */
        for (int i = 0; i < 2; i++) {
            begin(&b, ev->time, start, "security:key_updated");
            putf(&b,
                 "\"key_type\":\"%s_1rtt_secret\",\"generation\":%" PRIu64 ",\"trigger\":\"%s\"",
                 i ? "server" : "client", ev->key_generation,
                 ev->remote ? "remote_update" : "local_update");
            end(&b);
        }
        break;
    case VEGA_QUIC_QLOG_CONNECTION_STATE:
        begin(&b, ev->time, start, "connectivity:connection_state_updated");
        putf(&b, "\"new\":\"%s\"", state_name(ev->state));
        end(&b);
        break;
    case VEGA_QUIC_QLOG_CONNECTION_CLOSED:
        begin(&b, ev->time, start, "connectivity:connection_closed");
        putf(&b, "\"owner\":\"%s\"", ev->remote ? "remote" : "local");
        put_u64(&b, ev->close_app ? "application_code" : "connection_code", ev->close_code);
        put_str(&b, "reason", ev->reason ? ev->reason : "", ev->reason ? ev->reason_len : 0);
        end(&b);
        break;
    default:
        return 0;
    }
    return b.full ? VEGA_ERR_NOBUF : (vega_ssize)b.len;
}

vega_ssize vega_quic_qlog_write_header(char *out, size_t cap, bool server, const uint8_t *odcid,
                                       size_t odcid_len, uint64_t reference_ms, const char *title)
{
    if (odcid_len > VEGA_QUIC_MAX_CID_LEN || (odcid_len && !odcid))
        return -EINVAL;
    struct jb b = {.p = out,
                   .cap = cap > VEGA_QUIC_QLOG_RECORD_MAX ? VEGA_QUIC_QLOG_RECORD_MAX : cap};
    puts_(&b, "\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\"");
    put_str(&b, "title", title ? title : "libvega qlog", title ? strlen(title) : 12);
    putf(&b,
         ",\"trace\":{\"vantage_point\":{\"name\":\"libvega\",\"type\":\"%s\"},"
         "\"common_fields\":{\"protocol_type\":[\"QUIC\"],\"time_format\":\"relative\","
         "\"reference_time\":%" PRIu64,
         server ? "server" : "client", reference_ms);
    put_hex_field(&b, "group_id", odcid, odcid_len);
    put_hex_field(&b, "ODCID", odcid, odcid_len);
    puts_(&b, "}}}\n");
    return b.full ? VEGA_ERR_NOBUF : (vega_ssize)b.len;
}

vega_ssize vega_quic_qlog_write_truncated(char *out, size_t cap, uint64_t time_ns, uint64_t start,
                                          uint64_t limit)
{
    struct jb b = {.p = out,
                   .cap = cap > VEGA_QUIC_QLOG_RECORD_MAX ? VEGA_QUIC_QLOG_RECORD_MAX : cap};
    begin(&b, time_ns, start, "loglevel:warning");
    putf(&b,
         "\"code\":\"qlog_truncated\",\"message\":\"the trace stopped here: it reached its limit "
         "of %" PRIu64 " bytes\"",
         limit);
    end(&b);
    return b.full ? VEGA_ERR_NOBUF : (vega_ssize)b.len;
}
