/* SPDX-License-Identifier: MIT */
/* The QUIC connection: creation, the TLS handshake's callbacks, connection IDs, events,
 * timers, closing and key update. The receive and send paths are in conn_recv.c and
 * conn_send.c, streams in conn_stream.c. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

void vega_quic_config_init(vega_quic_config *c)
{
    memset(c, 0, sizeof *c);
    c->version = VEGA_QUIC_V1;
    c->idle_timeout_ms = 30000;
    c->max_data = 1u << 20;
    c->max_data_max = 16u << 20;
    c->max_stream_data = 256u << 10;
    c->max_stream_data_max = 8u << 20;
    c->max_streams_bidi = 100;
    c->max_streams_uni = 100;
    c->stream_send_buffer = 1u << 20;
    c->max_datagram_queue = 64;
    c->ack_delay_exponent = 3;
    c->max_ack_delay_ms = 25;
    c->active_connection_id_limit = 4;
    c->scid_len = 8;
    c->pmtu_max = 1452;
    c->cc = VEGA_QUIC_CC_CUBIC;
}

int vega__quic_rand(vega_quic_conn *c, void *buf, size_t len)
{
    if (c->cfg.rand)
        return c->cfg.rand(c->cfg.rand_ud, buf, len);
    return vega_crypto_random(buf, len);
}

int vega__quic_level_space(vega_quic_level l)
{
    switch (l) {
    case VEGA_QUIC_LEVEL_INITIAL:
        return VEGA__QUIC_SPACE_INITIAL;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        return VEGA__QUIC_SPACE_HANDSHAKE;
    default:
        return VEGA__QUIC_SPACE_APP;
    }
}

/* ---- events ---------------------------------------------------------------------------------- */

int vega__quic_ev_push(vega_quic_conn *c, const vega_quic_event *ev)
{
    if (c->ev_n == c->ev_cap) {
        size_t cap = c->ev_cap ? c->ev_cap * 2 : 16;
        vega_quic_event *n = vega__quic_malloc(c->cfg.mem, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        for (size_t i = 0; i < c->ev_n; i++)
            n[i] = c->ev[(c->ev_head + i) % c->ev_cap];
        vega__quic_free(c->cfg.mem, c->ev);
        c->ev = n;
        c->ev_cap = cap;
        c->ev_head = 0;
    }
    c->ev[(c->ev_head + c->ev_n) % c->ev_cap] = *ev;
    c->ev_n++;
    return 0;
}

/* Queues an event that owns its data, replacing the data of a queued event of the same type
 * instead of adding another: only the latest token or session matters, and a peer repeating
 * NEW_TOKEN or NewSessionTicket must not grow the queue (each copy is ours to free). */
int vega__quic_ev_push_latest(vega_quic_conn *c, const vega_quic_event *ev)
{
    for (size_t i = 0; i < c->ev_n; i++) {
        vega_quic_event *q = &c->ev[(c->ev_head + i) % c->ev_cap];
        if (q->type == ev->type) {
            vega__quic_free(c->cfg.mem, (void *)q->data);
            q->data = ev->data;
            q->len = ev->len;
            return 0;
        }
    }
    return vega__quic_ev_push(c, ev);
}

bool vega_quic_conn_next_event(vega_quic_conn *c, vega_quic_event *ev)
{
    vega__quic_free(c->cfg.mem, c->ev_data);
    c->ev_data = NULL;
    if (c->handshake_ev_owed) {
        vega_quic_event hs = {.type = VEGA_QUIC_EV_HANDSHAKE_DONE};
        c->handshake_ev_owed = vega__quic_ev_push(c, &hs) < 0;
    }
    while (c->ev_n) {
        *ev = c->ev[c->ev_head];
        c->ev_head = (c->ev_head + 1) % c->ev_cap;
        c->ev_n--;
        switch (ev->type) {
        case VEGA_QUIC_EV_DATAGRAM: {
            if (!c->drecv_n)
                continue;
            struct vega__quic_dgram *d = &c->drecv[c->drecv_head];
            c->drecv_head = (c->drecv_head + 1) % c->cfg.max_datagram_queue;
            c->drecv_n--;
            c->ev_data = d->data;
            ev->data = d->data;
            ev->len = d->len;
            break;
        }
        case VEGA_QUIC_EV_STREAM_READABLE: {
            struct vega__quic_stream *s = vega__quic_stream_get(c, ev->stream_id);
            if (!s)
                continue;
            s->readable_ev = false;
            break;
        }
        case VEGA_QUIC_EV_SESSION:
        case VEGA_QUIC_EV_NEW_TOKEN:
        case VEGA_QUIC_EV_CLOSED:
            c->ev_data = (uint8_t *)ev->data; /* owned copies, freed on the next call */
            break;
        default:
            break;
        }
        return true;
    }
    return false;
}

static int ev_simple(vega_quic_conn *c, vega_quic_event_type t, uint64_t id, uint64_t code)
{
    vega_quic_event ev = {.type = t, .stream_id = id, .error_code = code};
    return vega__quic_ev_push(c, &ev);
}

static int ev_copy(vega_quic_conn *c, vega_quic_event_type t, const uint8_t *d, size_t len)
{
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len ? len : 1);
    if (!copy)
        return -ENOMEM;
    if (len)
        memcpy(copy, d, len);
    vega_quic_event ev = {.type = t, .data = copy, .len = len};
    int rc = vega__quic_ev_push_latest(c, &ev);
    if (rc < 0)
        vega__quic_free(c->cfg.mem, copy);
    return rc;
}

/* ---- closing --------------------------------------------------------------------------------- */

uint64_t vega__quic_pto(const vega_quic_conn *c)
{
    const struct vega__quic_rtt *r = vega__quic_recovery_rtt(c->rec);
    return vega__quic_rtt_pto(r, c->peer_tp.max_ack_delay * VEGA__QUIC_NS_PER_MS);
}

static void push_closed(vega_quic_conn *c, uint64_t code, bool app, bool local, const char *why)
{
    size_t n = why ? strlen(why) : 0;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, n + 1);
    vega_quic_event ev = {.type = VEGA_QUIC_EV_CLOSED, .error_code = code, .app = app,
                          .local = local};
    if (copy) {
        memcpy(copy, why ? why : "", n + 1);
        ev.data = copy;
        ev.len = n;
    }
    if (vega__quic_ev_push(c, &ev) < 0)
        vega__quic_free(c->cfg.mem, copy);
}

static void enter_closing(vega_quic_conn *c, uint64_t code, bool app, uint64_t frame_type,
                          const char *reason)
{
    c->close_code = code;
    c->close_app = app;
    c->close_frame_type = frame_type;
    snprintf(c->close_reason, sizeof c->close_reason, "%s", reason ? reason : "");
    c->state = VEGA__QUIC_ST_CLOSING;
    c->close_send = true;
    c->close_deadline = c->now + 3 * vega__quic_pto(c);
    push_closed(c, code, app, true, c->close_reason);
}

void vega__quic_close_err(vega_quic_conn *c, uint64_t code, uint64_t frame_type,
                          const char *reason)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return;
    if (!reason || !*reason)
        reason = vega_quic_transport_error_name(code);
    enter_closing(c, code, false, frame_type, reason);
}

void vega__quic_enter_draining(vega_quic_conn *c)
{
    if (c->state == VEGA__QUIC_ST_CLOSING) {
        c->state = VEGA__QUIC_ST_DRAINING;
        c->close_send = false;
        return;
    }
    c->state = VEGA__QUIC_ST_DRAINING;
    c->close_send = false;
    c->close_deadline = c->now + 3 * vega__quic_pto(c);
}

int vega_quic_conn_close(vega_quic_conn *c, bool app, uint64_t code, const char *reason)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    enter_closing(c, code, app, 0, reason);
    return 0;
}

bool vega_quic_conn_is_closed(const vega_quic_conn *c)
{
    return c->state == VEGA__QUIC_ST_CLOSED;
}

/* ---- keys and spaces ------------------------------------------------------------------------- */

void vega__quic_discard_space(vega_quic_conn *c, int space)
{
    struct vega__quic_space *sp = &c->sp[space];
    if (sp->discarded)
        return;
    sp->discarded = true;
    vega__quic_recovery_discard_space(c->rec, space);
    vega_quic_keys_free(sp->rx);
    vega_quic_keys_free(sp->tx);
    sp->rx = sp->tx = NULL;
    sp->ack_pending = false;
    sp->ack_deadline = VEGA__QUIC_TIME_INF;
    sp->probe = false;
    vega__quic_sendbuf_fini(&sp->crypto_tx);
    vega__quic_sendbuf_init(&sp->crypto_tx, 0, c->cfg.mem);
    vega__quic_recvbuf_fini(&sp->crypto_rx);
    vega__quic_recvbuf_init(&sp->crypto_rx, VEGA__QUIC_CRYPTO_RX_LIMIT, c->cfg.mem);
}

/* The handshake is confirmed (RFC 9001 §4.1.2): Handshake keys go, 1-RTT PTOs may run. */
void vega__quic_confirm(vega_quic_conn *c)
{
    if (c->handshake_confirmed)
        return;
    c->handshake_confirmed = true;
    c->state = VEGA__QUIC_ST_ESTABLISHED;
    vega__quic_recovery_set_handshake_confirmed(c->rec);
    vega__quic_discard_space(c, VEGA__QUIC_SPACE_HANDSHAKE);
    vega_quic_keys_free(c->early_tx);
    vega_quic_keys_free(c->early_rx);
    c->early_tx = c->early_rx = NULL;
    vega__quic_issue_cids(c);
}

static int tls_send(void *ud, vega_quic_level level, const uint8_t *data, size_t len)
{
    vega_quic_conn *c = ud;
    struct vega__quic_space *sp = &c->sp[vega__quic_level_space(level)];
    vega_ssize n = vega__quic_sendbuf_write(&sp->crypto_tx, data, len);
    if (n < 0)
        return (int)n;
    return (size_t)n == len ? 0 : -ENOMEM;
}

static int tls_secret(void *ud, vega_quic_level level, bool write, vega_crypto_aead_alg aead,
                      vega_crypto_hash_alg hash, const uint8_t *secret, size_t len)
{
    (void)hash;
    vega_quic_conn *c = ud;
    vega_quic_keys *k;
    int rc = vega__quic_keys_new_mem(c->cfg.mem, &k, c->version, aead, secret, len);
    if (rc < 0)
        return rc;
    switch (level) {
    case VEGA_QUIC_LEVEL_EARLY:
        if (write)
            c->early_tx = k;
        else
            c->early_rx = k;
        break;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        if (write) {
            c->sp[VEGA__QUIC_SPACE_HANDSHAKE].tx = k;
            if (!c->server)
                vega__quic_recovery_set_has_handshake_keys(c->rec);
        } else {
            c->sp[VEGA__QUIC_SPACE_HANDSHAKE].rx = k;
        }
        break;
    case VEGA_QUIC_LEVEL_APP:
        c->app_aead = aead;
        c->app_secret_len = len;
        memcpy(write ? c->app_tx_secret : c->app_rx_secret, secret, len);
        if (write)
            c->sp[VEGA__QUIC_SPACE_APP].tx = k;
        else
            c->sp[VEGA__QUIC_SPACE_APP].rx = k;
        break;
    default:
        vega_quic_keys_free(k);
        return VEGA_ERR_INTERNAL;
    }
    return 0;
}

static bool cid_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* The peer's limits take effect once its transport parameters are known (RFC 9000 §7.4). */
static void apply_peer_tp(vega_quic_conn *c)
{
    const vega_quic_tp *tp = &c->peer_tp;
    c->max_send_data = tp->initial_max_data;
    c->peer_max_streams[0] = tp->initial_max_streams_bidi;
    c->peer_max_streams[1] = tp->initial_max_streams_uni;
    vega__quic_recovery_set_max_ack_delay(c->rec, tp->max_ack_delay * VEGA__QUIC_NS_PER_MS);
    uint64_t ours = c->cfg.idle_timeout_ms, theirs = tp->max_idle_timeout;
    uint64_t idle = ours && theirs ? (ours < theirs ? ours : theirs) : (ours ? ours : theirs);
    /* The peer may say up to 2^62 - 1 ms: clamp so deadlines never wrap. */
    uint64_t cap_ms = UINT64_MAX / VEGA__QUIC_NS_PER_MS / 4;
    c->idle_timeout = (idle < cap_ms ? idle : cap_ms) * VEGA__QUIC_NS_PER_MS;
    if (tp->has_stateless_reset_token && c->npeer) {
        memcpy(c->peer[0].token, tp->stateless_reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
        c->peer[0].has_token = true;
    }
    vega__quic_stream_apply_tp(c);
}

static int tls_peer_tp(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err)
{
    vega_quic_conn *c = ud;
    int rc = vega_quic_tp_decode(&c->peer_tp, tp, len, !c->server, wire_err);
    if (rc < 0)
        return rc;
    const vega_quic_tp *p = &c->peer_tp;
    bool bad = !cid_eq(p->initial_scid, p->initial_scid_len, c->peer_scid, c->peer_scid_len);
    if (!c->server) {
        bad |= !p->has_original_dcid ||
               !cid_eq(p->original_dcid, p->original_dcid_len, c->odcid, c->odcid_len);
        bad |= p->has_retry_scid != c->retried;
        if (c->retried)
            bad |= !cid_eq(p->retry_scid, p->retry_scid_len, c->retry_scid, c->retry_scid_len);
    }
    if (bad) {
        *wire_err = VEGA_QUIC_TRANSPORT_PARAMETER_ERROR;
        return VEGA_ERR_PROTO;
    }
    c->peer_tp_ok = true;
    apply_peer_tp(c);
    return 0;
}

static void tls_session(void *ud, const uint8_t *blob, size_t len)
{
    vega_quic_conn *c = ud;
    ev_copy(c, VEGA_QUIC_EV_SESSION, blob, len);
}

static int tls_rand(void *ud, void *buf, size_t len)
{
    return vega__quic_rand(ud, buf, len);
}

/* ---- connection IDs -------------------------------------------------------------------------- */

static int new_local_cid(vega_quic_conn *c, struct vega__quic_cid *id)
{
    memset(id, 0, sizeof *id);
    id->seq = c->next_local_seq++;
    id->len = (uint8_t)c->cfg.scid_len;
    int rc = vega__quic_rand(c, id->id, id->len);
    if (rc == 0)
        rc = c->cfg.reset_key ? vega_quic_reset_token(c->cfg.reset_key, id->id, id->len, id->token)
                              : vega__quic_rand(c, id->token, sizeof id->token);
    id->has_token = true;
    return rc;
}

/* Keeps as many of our connection IDs issued as the peer allows (RFC 9000 §5.1.1). */
int vega__quic_issue_cids(vega_quic_conn *c)
{
    if (!c->peer_tp_ok || c->state >= VEGA__QUIC_ST_CLOSING)
        return 0;
    uint64_t limit = c->peer_tp.active_connection_id_limit;
    if (limit > VEGA__QUIC_MAX_LOCAL_CIDS)
        limit = VEGA__QUIC_MAX_LOCAL_CIDS;
    size_t active = 0;
    for (size_t i = 0; i < c->nlocal; i++)
        active += !c->local[i].retired;
    while (active < limit) {
        size_t slot = c->nlocal;
        for (size_t i = 0; i < c->nlocal; i++)
            if (c->local[i].retired && !c->local[i].queued) {
                slot = i;
                break;
            }
        if (slot == VEGA__QUIC_MAX_LOCAL_CIDS)
            break;
        int rc = new_local_cid(c, &c->local[slot]);
        if (rc < 0)
            return rc;
        c->local[slot].queued = true;
        if (slot == c->nlocal)
            c->nlocal++;
        active++;
    }
    return 0;
}

const uint8_t *vega_quic_conn_scid(const vega_quic_conn *c, size_t *len)
{
    for (size_t i = 0; i < c->nlocal; i++)
        if (!c->local[i].retired) {
            *len = c->local[i].len;
            return c->local[i].id;
        }
    *len = 0;
    return NULL;
}

/* ---- creation -------------------------------------------------------------------------------- */

static bool config_ok(const vega_quic_config *cfg)
{
    return cfg->scid_len >= 1 && cfg->scid_len <= VEGA_QUIC_MAX_CID_LEN &&
           cfg->ack_delay_exponent <= 20 && cfg->max_ack_delay_ms < (1u << 14) &&
           cfg->active_connection_id_limit >= 2 && cfg->max_datagram_queue >= 1 &&
           cfg->max_datagram_queue <= 4096 && cfg->max_streams_bidi <= VEGA_QUIC_MAX_STREAMS_CFG &&
           cfg->max_streams_uni <= VEGA_QUIC_MAX_STREAMS_CFG &&
           cfg->max_data <= VEGA_QUIC_MAX_VARINT &&
           cfg->max_stream_data <= VEGA_QUIC_MAX_VARINT && cfg->max_datagram_frame_size <= 65535 &&
           (cfg->pmtu_max == 0 || (cfg->pmtu_max >= 1200 && cfg->pmtu_max <= 65527)) &&
           (cfg->cc == VEGA_QUIC_CC_CUBIC || cfg->cc == VEGA_QUIC_CC_NEWRENO) &&
           (!cfg->mem ||
            (cfg->mem->malloc && cfg->mem->calloc && cfg->mem->realloc && cfg->mem->free));
}

static int conn_alloc(vega_quic_conn **out, const vega_quic_config *cfg,
                      const vega_quic_path *path, uint32_t version, bool server, uint64_t now)
{
    if (!config_ok(cfg) || !vega_quic_version_is_supported(version))
        return VEGA_ERR_INVALID_ARG;
    vega_quic_conn *c = vega__quic_calloc(cfg->mem, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->server = server;
    c->version = version;
    c->cfg = *cfg;
    if (path)
        c->path = *path;
    c->now = now;
    c->drecv = vega__quic_calloc(cfg->mem, cfg->max_datagram_queue, sizeof *c->drecv);
    struct vega__quic_recovery_cbs cbs = {
        .ud = c, .on_acked = vega__quic_on_acked, .on_lost = vega__quic_on_lost};
    int rc = c->drecv ? 0 : -ENOMEM;
    if (rc == 0)
        rc = vega__quic_recovery_new(
            &c->rec, cfg->cc == VEGA_QUIC_CC_NEWRENO ? VEGA__QUIC_CC_NEWRENO : VEGA__QUIC_CC_CUBIC,
            VEGA__QUIC_MAX_PACKET, cfg->initial_rtt_ns, &cbs, cfg->mem);
    if (rc < 0) {
        vega__quic_free(cfg->mem, c->drecv);
        vega__quic_free(cfg->mem, c);
        return rc;
    }
    if (server)
        vega__quic_recovery_set_peer_validated(c->rec, true);
    else
        vega__quic_recovery_set_peer_validated(c->rec, false);
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        struct vega__quic_space *sp = &c->sp[i];
        vega__quic_ranges_init(&sp->recvd, VEGA__QUIC_ACK_RANGES, cfg->mem);
        sp->largest_recvd = -1;
        sp->ack_deadline = VEGA__QUIC_TIME_INF;
        vega__quic_sendbuf_init(&sp->crypto_tx, 0, cfg->mem);
        vega__quic_recvbuf_init(&sp->crypto_rx, VEGA__QUIC_CRYPTO_RX_LIMIT, cfg->mem);
    }
    vega__quic_fc_init(&c->fc, cfg->max_data, cfg->max_data_max);
    c->fc.limit = cfg->max_data;
    vega__quic_stream_map_init(&c->streams, cfg->mem);
    c->next_stream[0] = server ? 1 : 0;
    c->next_stream[1] = server ? 3 : 2;
    c->local_max_streams[0] = cfg->max_streams_bidi;
    c->local_max_streams[1] = cfg->max_streams_uni;
    vega_quic_tp_init(&c->peer_tp);
    c->idle_timeout = cfg->idle_timeout_ms * VEGA__QUIC_NS_PER_MS;
    c->idle_deadline = c->idle_timeout ? now + c->idle_timeout : VEGA__QUIC_TIME_INF;
    c->close_deadline = VEGA__QUIC_TIME_INF;
    c->pace_deadline = VEGA__QUIC_TIME_INF;
    c->rx_prev_until = VEGA__QUIC_TIME_INF;
    c->stats.version = version;
    c->path_validated = true; /* the handshake validates the path it runs on */
    c->mtu = VEGA__QUIC_MAX_PACKET;
    c->pmtu_done = cfg->pmtu_max <= VEGA__QUIC_MAX_PACKET;
    c->challenge_retry = c->challenge_deadline = VEGA__QUIC_TIME_INF;
    *out = c;
    return 0;
}

/* Our transport parameters and the TLS handshake, once the CIDs are known. */
static int start_tls(vega_quic_conn *c)
{
    const vega_quic_config *cfg = &c->cfg;
    vega_quic_tp *tp = &c->local_tp;
    vega_quic_tp_init(tp);
    tp->max_idle_timeout = cfg->idle_timeout_ms;
    tp->initial_max_data = cfg->max_data;
    tp->initial_max_stream_data_bidi_local = cfg->max_stream_data;
    tp->initial_max_stream_data_bidi_remote = cfg->max_stream_data;
    tp->initial_max_stream_data_uni = cfg->max_stream_data;
    tp->initial_max_streams_bidi = cfg->max_streams_bidi;
    tp->initial_max_streams_uni = cfg->max_streams_uni;
    tp->ack_delay_exponent = cfg->ack_delay_exponent;
    tp->max_ack_delay = cfg->max_ack_delay_ms;
    tp->disable_active_migration = cfg->disable_active_migration;
    tp->active_connection_id_limit = cfg->active_connection_id_limit;
    tp->max_udp_payload_size = 65527;
    if (cfg->max_datagram_frame_size) {
        tp->has_max_datagram_frame_size = true;
        tp->max_datagram_frame_size = cfg->max_datagram_frame_size;
    }
    tp->has_initial_scid = true;
    tp->initial_scid_len = c->local[0].len;
    memcpy(tp->initial_scid, c->local[0].id, c->local[0].len);
    if (c->server) {
        tp->has_original_dcid = true;
        tp->original_dcid_len = c->odcid_len;
        memcpy(tp->original_dcid, c->odcid, c->odcid_len);
        if (c->retry_scid_len) {
            tp->has_retry_scid = true;
            tp->retry_scid_len = c->retry_scid_len;
            memcpy(tp->retry_scid, c->retry_scid, c->retry_scid_len);
        }
        tp->has_stateless_reset_token = true;
        memcpy(tp->stateless_reset_token, c->local[0].token, VEGA_QUIC_RESET_TOKEN_LEN);
    }
    uint8_t buf[512];
    vega_ssize n = vega_quic_tp_encode(tp, c->server, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    struct vega__qtls_cbs cbs = {
        .ud = c,
        .send = tls_send,
        .secret = tls_secret,
        .peer_tp = tls_peer_tp,
        .session = tls_session,
        .rand = tls_rand,
        .mem = cfg->mem,
    };
    int rc = vega__qtls_new(&c->tls, c->server, &cfg->tls, buf, (size_t)n, cfg->wall_ms, &cbs);
    if (rc < 0)
        return rc;
    if (c->server) {
        /* 0-RTT stays acceptable while the limits a client remembers are the same; the
         * per-connection values (CIDs, reset token) do not count (RFC 9000 §7.4.1). */
        vega_quic_tp lim = *tp;
        lim.original_dcid_len = lim.initial_scid_len = 0;
        lim.has_retry_scid = lim.has_stateless_reset_token = false;
        n = vega_quic_tp_encode(&lim, true, buf, sizeof buf);
        if (n < 0)
            return (int)n;
        rc = vega__qtls_set_early_context(c->tls, buf, (size_t)n);
        if (rc < 0)
            return rc;
    }
    rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].tx, c->version, c->odcid, c->odcid_len,
                                         c->server);
    if (rc == 0)
        rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].rx, c->version, c->odcid,
                                             c->odcid_len, !c->server);
    return rc;
}

int vega_quic_conn_client_new(vega_quic_conn **out, const vega_quic_config *cfg,
                              const vega_quic_path *path, uint64_t now)
{
    vega_quic_conn *c;
    int rc = conn_alloc(&c, cfg, path, cfg->version ? cfg->version : VEGA_QUIC_V1, false, now);
    if (rc < 0)
        return rc;
    /* Our first Destination CID is random, 8 bytes or more (RFC 9000 §7.2). */
    c->odcid_len = 8;
    c->npeer = 1;
    c->peer[0].len = 8;
    c->nlocal = 1;
    rc = vega__quic_rand(c, c->odcid, c->odcid_len);
    if (rc == 0)
        rc = new_local_cid(c, &c->local[0]);
    if (rc == 0) {
        memcpy(c->peer[0].id, c->odcid, 8);
        if (cfg->token_len) {
            c->token = vega__quic_malloc(c->cfg.mem, cfg->token_len);
            rc = c->token ? 0 : -ENOMEM;
            if (rc == 0) {
                memcpy(c->token, cfg->token, cfg->token_len);
                c->token_len = cfg->token_len;
            }
        }
    }
    if (rc == 0)
        rc = start_tls(c);
    /* 0-RTT runs under the limits the server gave last time (RFC 9000 §7.4.1). */
    size_t stp_len = 0;
    const uint8_t *stp = rc == 0 ? vega__qtls_session_tp(c->tls, &stp_len) : NULL;
    uint64_t werr = 0;
    if (stp && vega_quic_tp_decode(&c->peer_tp, stp, stp_len, true, &werr) == 0) {
        c->max_send_data = c->peer_tp.initial_max_data;
        c->peer_max_streams[0] = c->peer_tp.initial_max_streams_bidi;
        c->peer_max_streams[1] = c->peer_tp.initial_max_streams_uni;
    } else {
        vega_quic_tp_init(&c->peer_tp);
    }
    if (rc == 0)
        rc = vega__qtls_start(c->tls, &werr);
    if (rc < 0) {
        vega_quic_conn_free(c);
        return rc == VEGA_ERR_PROTO ? VEGA_ERR_INVALID_ARG : rc;
    }
    *out = c;
    return 0;
}

int vega_quic_conn_server_new(vega_quic_conn **out, const vega_quic_config *cfg,
                              const vega_quic_path *path, const vega_quic_server_params *sp,
                              uint64_t now)
{
    if (!sp || sp->dcid_len > VEGA_QUIC_MAX_CID_LEN || sp->scid_len > VEGA_QUIC_MAX_CID_LEN ||
        sp->original_dcid_len > VEGA_QUIC_MAX_CID_LEN)
        return VEGA_ERR_INVALID_ARG;
    vega_quic_conn *c;
    int rc = conn_alloc(&c, cfg, path, sp->version, true, now);
    if (rc < 0)
        return rc;
    c->addr_validated = sp->address_validated;
    if (sp->original_dcid) {
        c->odcid_len = (uint8_t)sp->original_dcid_len;
        memcpy(c->odcid, sp->original_dcid, sp->original_dcid_len);
        c->retry_scid_len = (uint8_t)sp->dcid_len;
        memcpy(c->retry_scid, sp->dcid, sp->dcid_len);
    } else {
        c->odcid_len = (uint8_t)sp->dcid_len;
        memcpy(c->odcid, sp->dcid, sp->dcid_len);
    }
    c->peer_scid_len = (uint8_t)sp->scid_len;
    memcpy(c->peer_scid, sp->scid, sp->scid_len);
    c->npeer = 1;
    c->peer[0].len = (uint8_t)sp->scid_len;
    memcpy(c->peer[0].id, sp->scid, sp->scid_len);
    c->nlocal = 1;
    rc = new_local_cid(c, &c->local[0]);
    if (rc == 0)
        rc = start_tls(c);
    /* Initial keys derive from the DCID of the client's Initial, which after a Retry is the
     * Retry's SCID, not the original one. */
    if (rc == 0 && sp->original_dcid) {
        vega_quic_keys_free(c->sp[0].tx);
        vega_quic_keys_free(c->sp[0].rx);
        c->sp[0].tx = c->sp[0].rx = NULL;
        rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].tx, c->version, sp->dcid,
                                             sp->dcid_len, true);
        if (rc == 0)
            rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].rx, c->version, sp->dcid,
                                                 sp->dcid_len, false);
    }
    if (rc < 0) {
        vega_quic_conn_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void vega_quic_conn_free(vega_quic_conn *c)
{
    if (!c)
        return;
    const vega_quic_mem *mem = c->cfg.mem;
    vega__quic_recovery_free(c->rec); /* hands every packet record back via on_lost */
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++) {
        struct vega__quic_space *sp = &c->sp[i];
        vega__quic_ranges_fini(&sp->recvd);
        vega_quic_keys_free(sp->rx);
        vega_quic_keys_free(sp->tx);
        vega__quic_sendbuf_fini(&sp->crypto_tx);
        vega__quic_recvbuf_fini(&sp->crypto_rx);
    }
    vega_quic_keys_free(c->early_tx);
    vega_quic_keys_free(c->early_rx);
    vega_quic_keys_free(c->rx_next);
    vega_quic_keys_free(c->rx_prev);
    vega_crypto_cleanse(c->app_rx_secret, sizeof c->app_rx_secret);
    vega_crypto_cleanse(c->app_tx_secret, sizeof c->app_tx_secret);
    vega__qtls_free(c->tls);
    vega__quic_free(c->cfg.mem, c->new_token);
    vega__quic_streams_free(c);
    while (c->rec_free) {
        struct vega__quic_pktrec *r = c->rec_free;
        c->rec_free = r->next_free;
        vega__quic_free(mem, r);
    }
    for (size_t i = 0; i < c->dsend_n; i++)
        vega__quic_free(mem, c->dsend[(c->dsend_head + i) % VEGA__QUIC_DGRAM_SEND_QUEUE].data);
    for (size_t i = 0; i < c->drecv_n; i++)
        vega__quic_free(mem, c->drecv[(c->drecv_head + i) % c->cfg.max_datagram_queue].data);
    vega__quic_free(mem, c->drecv);
    for (size_t i = 0; i < c->npending; i++)
        vega__quic_free(mem, c->pending[i].data);
    while (c->ev_n) {
        vega_quic_event *e = &c->ev[c->ev_head];
        if (e->type == VEGA_QUIC_EV_SESSION || e->type == VEGA_QUIC_EV_NEW_TOKEN ||
            e->type == VEGA_QUIC_EV_CLOSED)
            vega__quic_free(mem, (void *)e->data);
        c->ev_head = (c->ev_head + 1) % c->ev_cap;
        c->ev_n--;
    }
    vega__quic_free(mem, c->ev);
    vega__quic_free(mem, c->ev_data);
    vega__quic_free(mem, c->token);
    vega__quic_free(mem, c);
}

/* ---- handshake progress ---------------------------------------------------------------------- */

/* Called after CRYPTO data was handed to TLS: reacts to the handshake completing. */
int vega__quic_tls_progress(vega_quic_conn *c)
{
    if (c->handshake_done || !vega__qtls_is_done(c->tls))
        return 0;
    c->handshake_done = true;
    size_t alen = 0;
    const uint8_t *alpn = vega__qtls_alpn(c->tls, &alen);
    if (alpn && alen < sizeof c->stats.alpn) {
        memcpy(c->stats.alpn, alpn, alen);
        c->stats.alpn[alen] = 0;
    }
    c->stats.resumed = vega__qtls_is_resumed(c->tls);
    c->stats.early_data = (int)vega__qtls_early_status(c->tls);
    if (!c->server && c->stats.early_data == VEGA__QTLS_EARLY_REJECTED)
        ev_simple(c, VEGA_QUIC_EV_EARLY_REJECTED, 0, 0);
    /* Lost, the event would leave the application waiting for good: it is owed instead. */
    c->handshake_ev_owed = ev_simple(c, VEGA_QUIC_EV_HANDSHAKE_DONE, 0, 0) < 0;
    if (c->server) {
        /* The server's handshake is confirmed as it completes (RFC 9001 §4.1.2). */
        c->handshake_done_queued = true;
        c->addr_validated = true;
        vega__quic_confirm(c);
        if (!c->ticket_sent) {
            c->ticket_sent = true;
            int t = vega__qtls_send_ticket(c->tls);
            if (t < 0)
                return t;
        }
    }
    return 0;
}

/* ---- timers ---------------------------------------------------------------------------------- */

/* The idle timer restarts on a processed packet and on the first ack-eliciting packet sent
 * after one (RFC 9000 §10.1), never shorter than 3 PTO. */
void vega__quic_idle_restart(vega_quic_conn *c)
{
    if (!c->idle_timeout)
        return;
    uint64_t pto3 = 3 * vega__quic_pto(c);
    c->idle_deadline = c->now + (c->idle_timeout > pto3 ? c->idle_timeout : pto3);
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint64_t vega_quic_conn_expiry(const vega_quic_conn *c)
{
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA__QUIC_TIME_INF;
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return c->close_deadline;
    uint64_t t = min64(c->idle_deadline, vega__quic_recovery_timer(c->rec));
    if (!c->send_blocked) {
        for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
            if (c->sp[i].ack_pending)
                t = min64(t, c->sp[i].ack_deadline);
        t = min64(t, c->pace_deadline);
    }
    if (c->rx_prev)
        t = min64(t, c->rx_prev_until);
    if (c->challenge_outstanding)
        t = min64(t, min64(c->challenge_retry, c->challenge_deadline));
    return t;
}

int vega_quic_conn_handle_expiry(vega_quic_conn *c, uint64_t now)
{
    if (now > c->now)
        c->now = now;
    now = c->now;
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA_ERR_CLOSED;
    if (c->state >= VEGA__QUIC_ST_CLOSING) {
        if (now >= c->close_deadline) {
            c->state = VEGA__QUIC_ST_CLOSED;
            return VEGA_ERR_CLOSED;
        }
        return 0;
    }
    if (now >= c->idle_deadline) {
        c->state = VEGA__QUIC_ST_CLOSED;
        push_closed(c, VEGA_QUIC_NO_ERROR, false, true, "idle timeout");
        return VEGA_ERR_CLOSED;
    }
    if (c->rx_prev && now >= c->rx_prev_until) {
        vega_quic_keys_free(c->rx_prev);
        c->rx_prev = NULL;
        c->rx_prev_until = VEGA__QUIC_TIME_INF;
    }
    if (now >= c->pace_deadline)
        c->pace_deadline = VEGA__QUIC_TIME_INF;
    if (c->challenge_outstanding) {
        if (now >= c->challenge_deadline)
            vega__quic_path_failed(c);
        else if (now >= c->challenge_retry)
            vega__quic_challenge(c); /* a fresh one: PATH_CHALLENGE is never retransmitted */
    }
    if (now >= vega__quic_recovery_timer(c->rec)) {
        int space = vega__quic_recovery_on_timeout(c->rec, now);
        if (space >= 0 && !c->sp[space].discarded) {
            c->sp[space].probe = true;
            c->sp[space].probes = 2;
        }
    }
    /* ACK deadlines need no action here: the next write sees them due. */
    return 0;
}

/* ---- key update (RFC 9001 §6) ---------------------------------------------------------------- */

/* Derives the next generation's keys after cur from a secret (updated in place). */
int vega__quic_next_keys(vega_quic_conn *c, const vega_quic_keys *cur, uint8_t *secret,
                         vega_quic_keys **out)
{
    int rc = vega_quic_secret_update(c->version, c->app_aead, secret, c->app_secret_len, secret);
    if (rc < 0)
        return rc;
    return vega__quic_keys_next(cur, c->version, secret, c->app_secret_len, out);
}

int vega_quic_conn_key_update(vega_quic_conn *c)
{
    if (!c->handshake_confirmed || c->ku_pending || c->state != VEGA__QUIC_ST_ESTABLISHED ||
        c->now < c->ku_allowed_at)
        return VEGA_ERR_INVALID_ARG;
    vega_quic_keys *tx;
    int rc = vega__quic_next_keys(c, c->sp[VEGA__QUIC_SPACE_APP].tx, c->app_tx_secret, &tx);
    if (rc < 0)
        return rc;
    /* The receive side moves with the first packet the peer sends in the new phase; prepare
     * its keys now so that packet decrypts. */
    if (!c->rx_next) {
        rc = vega__quic_next_keys(c, c->sp[VEGA__QUIC_SPACE_APP].rx, c->app_rx_secret,
                                  &c->rx_next);
        if (rc < 0) {
            vega_quic_keys_free(tx);
            return rc;
        }
    }
    vega_quic_keys_free(c->sp[VEGA__QUIC_SPACE_APP].tx);
    c->sp[VEGA__QUIC_SPACE_APP].tx = tx;
    c->key_phase = !c->key_phase;
    c->ku_pending = true;
    c->ku_first_pn = c->sp[VEGA__QUIC_SPACE_APP].next_pn;
    c->key_updates++;
    return 0;
}

/* ---- info ------------------------------------------------------------------------------------ */

void vega_quic_conn_get_info(const vega_quic_conn *c, vega_quic_conn_info *info)
{
    *info = c->stats;
    info->version = c->version;
    info->handshake_done = c->handshake_done;
    info->handshake_confirmed = c->handshake_confirmed;
    const struct vega__quic_rtt *r = vega__quic_recovery_rtt(c->rec);
    info->smoothed_rtt_ns = r->smoothed;
    info->min_rtt_ns = r->min;
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    info->cwnd = cc->cwnd;
    info->bytes_in_flight = cc->in_flight;
    info->pkts_lost = vega__quic_recovery_stats(c->rec)->lost;
    info->key_updates = c->key_updates;
    info->migrations = c->migrations;
    info->pmtu = c->mtu;
    if (c->tls) {
        info->resumed = vega__qtls_is_resumed(c->tls);
        info->early_data = (int)vega__qtls_early_status(c->tls);
    }
    if (c->tls && c->handshake_done) {
        vega_crypto_aead_alg a = vega__qtls_aead(c->tls);
        vega_crypto_hash_alg h = vega__qtls_hash(c->tls);
        info->suite = h == VEGA_CRYPTO_SHA384 ? VEGA_QUIC_TLS_AES_256_GCM_SHA384
                      : a == VEGA_CRYPTO_CHACHA20_POLY1305 ? VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256
                                                          : VEGA_QUIC_TLS_AES_128_GCM_SHA256;
    }
}

/* ---- paths (RFC 9000 §8.2, §9) ---------------------------------------------------------------- */

static const uint8_t *addr_ip(const struct sockaddr_storage *a, size_t *len, uint16_t *port)
{
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
        *len = 4;
        *port = v4->sin_port;
        return (const uint8_t *)&v4->sin_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
        *len = 16;
        *port = v6->sin6_port;
        return (const uint8_t *)&v6->sin6_addr;
    }
    *len = 0;
    *port = 0;
    return NULL;
}

int vega__quic_addr_cmp(const struct sockaddr_storage *a, socklen_t alen,
                        const struct sockaddr_storage *b, socklen_t blen)
{
    if (alen == 0 || blen == 0)
        return 0; /* an unknown address matches anything: drivers that do not track paths */
    size_t la, lb;
    uint16_t pa, pb;
    const uint8_t *ia = addr_ip(a, &la, &pa), *ib = addr_ip(b, &lb, &pb);
    if (!ia || !ib)
        return alen == blen && memcmp(a, b, alen) == 0 ? 0 : 2;
    if (a->ss_family != b->ss_family || la != lb || memcmp(ia, ib, la) != 0)
        return 2;
    return pa == pb ? 0 : 1;
}

/* Sends a fresh PATH_CHALLENGE on the current path, at most three, each a PTO apart. */
void vega__quic_challenge(vega_quic_conn *c)
{
    if (c->challenge_tries >= 3) {
        c->challenge_retry = VEGA__QUIC_TIME_INF;
        return;
    }
    if (vega__quic_rand(c, c->challenge, sizeof c->challenge) < 0)
        return;
    c->challenge_tries++;
    c->challenge_queued = true;
    c->challenge_outstanding = true;
    c->challenge_retry = c->now + vega__quic_pto(c);
}

static void start_validation(vega_quic_conn *c)
{
    c->path_validated = false;
    c->migrating = true;
    c->path_bytes_recv = c->path_bytes_sent = 0;
    c->challenge_tries = 0;
    uint64_t pto = vega__quic_pto(c);
    /* §8.2.4: at least three PTOs, and six times the initial RTT, to tolerate a slow path. */
    uint64_t wait = 3 * pto > 6 * 333 * VEGA__QUIC_NS_PER_MS ? 3 * pto
                                                              : 6 * 333 * VEGA__QUIC_NS_PER_MS;
    c->challenge_deadline = c->now + wait;
    vega__quic_challenge(c);
}

/* A new peer address or local path: the congestion controller starts over (§9.4), keeping
 * the bytes already in flight accounted. */
static void restart_cc(vega_quic_conn *c)
{
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    uint64_t in_flight = cc->in_flight;
    vega__quic_cc_init(cc, cc->algo, cc->max_datagram);
    cc->in_flight = in_flight;
}

static void path_event(vega_quic_conn *c, bool validated)
{
    vega_quic_event ev = {.type = VEGA_QUIC_EV_PATH_CHANGED, .error_code = validated};
    vega__quic_ev_push(c, &ev);
}

void vega__quic_path_validated(vega_quic_conn *c)
{
    c->challenge_outstanding = false;
    c->challenge_retry = c->challenge_deadline = VEGA__QUIC_TIME_INF;
    c->path_validated = true;
    if (c->migrating) {
        c->migrating = false;
        path_event(c, true);
    }
}

void vega__quic_path_failed(vega_quic_conn *c)
{
    c->challenge_outstanding = false;
    c->challenge_queued = false;
    c->challenge_retry = c->challenge_deadline = VEGA__QUIC_TIME_INF;
    if (!c->migrating)
        return;
    /* Back to the path that worked (§9.3.2); if there is none, the connection is lost. */
    c->migrating = false;
    c->path = c->prev_path;
    c->path_validated = true;
    restart_cc(c);
    path_event(c, false);
}

/* Server: a non-probing packet with the largest packet number came from a new peer address
 * (§9.3): send to it from now on, validate it, and limit what goes there until then. */
void vega__quic_peer_moved(vega_quic_conn *c, const vega_quic_path *path, bool new_dcid)
{
    int how = vega__quic_addr_cmp(&path->remote, path->remote_len, &c->path.remote,
                                  c->path.remote_len);
    if (how == 0)
        return;
    if (!c->migrating)
        c->prev_path = c->path;
    c->path.remote = path->remote;
    c->path.remote_len = path->remote_len;
    if (path->local_len) {
        c->path.local = path->local;
        c->path.local_len = path->local_len;
    }
    c->migrations++;
    if (how == 2)
        restart_cc(c); /* more than a NAT's port change */
    /* A peer that moved to a fresh connection ID gets one from us too (§9.5). */
    if (new_dcid)
        for (size_t i = 0; i < c->npeer; i++)
            if (i != c->dcid_idx && !c->peer[i].retired) {
                struct vega__quic_cid *old = &c->peer[c->dcid_idx];
                old->retired = old->queued = true;
                c->dcid_idx = i;
                break;
            }
    start_validation(c);
}

int vega_quic_conn_migrate(vega_quic_conn *c, const vega_quic_path *path)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    if (c->server || !c->handshake_confirmed || c->peer_tp.disable_active_migration ||
        c->migrating)
        return VEGA_ERR_INVALID_ARG;
    size_t next = c->npeer;
    for (size_t i = 0; i < c->npeer; i++)
        if (i != c->dcid_idx && !c->peer[i].retired && !c->peer[i].used) {
            next = i;
            break;
        }
    if (next == c->npeer)
        return VEGA_ERR_FULL;
    struct vega__quic_cid *old = &c->peer[c->dcid_idx];
    old->retired = old->queued = true; /* §9.5: a new path never reuses a connection ID */
    old->used = true;
    c->dcid_idx = next;
    c->peer[next].used = true;
    c->prev_path = c->path;
    c->path = *path;
    c->migrations++;
    restart_cc(c);
    start_validation(c);
    return 0;
}

void vega_quic_conn_get_path(const vega_quic_conn *c, vega_quic_path *out)
{
    *out = c->path;
}

size_t vega_quic_conn_scids(const vega_quic_conn *c, const uint8_t **ids, size_t *lens,
                            size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nlocal; i++) {
        if (c->local[i].retired)
            continue;
        if (n < max) {
            ids[n] = c->local[i].id;
            lens[n] = c->local[i].len;
        }
        n++;
    }
    return n;
}

int vega_quic_conn_new_token(vega_quic_conn *c, const uint8_t *token, size_t len)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    if (!c->server || !token || len == 0 || len > 512)
        return VEGA_ERR_INVALID_ARG;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, token, len);
    vega__quic_free(c->cfg.mem, c->new_token);
    c->new_token = copy;
    c->new_token_len = len;
    c->new_token_gen++;
    c->new_token_queued = true;
    return 0;
}
