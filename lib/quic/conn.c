/* SPDX-License-Identifier: MIT */
/* The QUIC connection's life: settings, creating a client or a server connection (RFC 9000 §5,
 * §7.2), freeing it, and what it reports. The rest is split by concern: the handshake
 * (conn_tls.c), keys (conn_keys.c), connection IDs (conn_cid.c), paths and address validation
 * (conn_path.c), events (conn_event.c), closing (conn_close.c), timers (conn_timer.c), receiving
 * (conn_recv.c), acknowledgement and loss bookkeeping (conn_ack.c), building packets
 * (conn_build.c), PTO probes and DPLPMTUD (conn_probe.c), the write path (conn_write.c) and
 * streams (conn_stream.c). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

/* Layout 1 ends where version 2's appended fields start, layout 2 where version 3's do,
 * layout 3 where version 4's do and layout 4 where version 5's do (each ends on a pointer or a
 * size_t, so no tail padding differs). */
#define QUIC_OPTS_V1_SIZE offsetof(vega_quic_opts, keylog)
#define QUIC_OPTS_V2_SIZE offsetof(vega_quic_opts, qlog)
#define QUIC_OPTS_V3_SIZE offsetof(vega_quic_opts, pinned_keys)
#define QUIC_OPTS_V4_SIZE offsetof(vega_quic_opts, scid_prefix)

/* The size of the caller's struct for a layout this library knows; 0 for another. */
static size_t opts_size(int opts_version)
{
    switch (opts_version) {
    case 1:
        return QUIC_OPTS_V1_SIZE;
    case 2:
        return QUIC_OPTS_V2_SIZE;
    case 3:
        return QUIC_OPTS_V3_SIZE;
    case 4:
        return QUIC_OPTS_V4_SIZE;
    case VEGA_QUIC_OPTS_VERSION:
        return sizeof(vega_quic_opts);
    default:
        return 0;
    }
}

static void opts_defaults(vega_quic_opts *c)
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

void vega_quic_opts_init_versioned(vega_quic_opts *c, int opts_version)
{
    size_t size = opts_size(opts_version);
    if (!size)
        vega__panic(__FILE__, __LINE__,
                    "vega_quic_opts_init: options of another libvega (version %d)", opts_version);
    vega_quic_opts d;
    opts_defaults(&d);
    /* A caller built with an older layout has storage for that layout only. */
    memcpy(c, &d, size);
}

/* API rules: ABI: the options of a caller of an older layout are its prefix; the fields it
 * does not have are zero (their "none"). Returns false for a layout this library does not
 * know. */
static bool opts_latest(const vega_quic_opts *cfg, int opts_version, vega_quic_opts *tmp,
                        const vega_quic_opts **out)
{
    if (!cfg)
        return false;
    if (opts_version == VEGA_QUIC_OPTS_VERSION) {
        *out = cfg;
        return true;
    }
    size_t size = opts_size(opts_version);
    if (!size)
        return false;
    memset(tmp, 0, sizeof *tmp);
    memcpy(tmp, cfg, size);
    *out = tmp;
    return true;
}

int vega__quic_rand(vega_quic_conn *c, void *buf, size_t len)
{
    if (c->cfg.rand)
        return c->cfg.rand(c->cfg.rand_ud, buf, len);
    return vega_crypto_random(buf, len);
}

int vega__quic_level_space(int level)
{
    switch (level) {
    case VEGA_QUIC_LEVEL_INITIAL:
        return VEGA__QUIC_SPACE_INITIAL;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        return VEGA__QUIC_SPACE_HANDSHAKE;
    default:
        return VEGA__QUIC_SPACE_APP;
    }
}

/* ---- creation ------------------------------------------------------------------------------- */

static bool config_ok(const vega_quic_opts *cfg)
{
    return cfg->scid_len >= 1 && cfg->scid_len <= VEGA_QUIC_MAX_CID_LEN &&
           cfg->scid_prefix_len <= VEGA_QUIC_MAX_SCID_PREFIX &&
           cfg->scid_prefix_len < cfg->scid_len && cfg->ack_delay_exponent <= 20 &&
           cfg->max_ack_delay_ms < (1u << 14) && cfg->active_connection_id_limit >= 2 &&
           cfg->max_datagram_queue >= 1 && cfg->max_datagram_queue <= 4096 &&
           cfg->max_streams_bidi <= VEGA_QUIC_MAX_STREAMS_CFG &&
           cfg->max_streams_uni <= VEGA_QUIC_MAX_STREAMS_CFG &&
           cfg->max_data <= VEGA_QUIC_MAX_VARINT && cfg->max_stream_data <= VEGA_QUIC_MAX_VARINT &&
           cfg->max_datagram_frame_size <= 65535 &&
           (cfg->pmtu_max == 0 || (cfg->pmtu_max >= 1200 && cfg->pmtu_max <= 65527)) &&
           (cfg->cc == VEGA_QUIC_CC_CUBIC || cfg->cc == VEGA_QUIC_CC_NEWRENO) &&
           cfg->n_pinned_keys <= VEGA_QUIC_MAX_PINNED_KEYS &&
           (cfg->n_pinned_keys == 0 || cfg->pinned_keys) &&
           (!cfg->mem ||
            (cfg->mem->malloc && cfg->mem->calloc && cfg->mem->realloc && cfg->mem->free));
}

static int conn_alloc(vega_quic_conn **out, const vega_quic_opts *cfg, const vega_quic_path *path,
                      uint32_t version, bool server, uint64_t now)
{
    if (!config_ok(cfg) || !vega_quic_version_is_supported(version))
        return -EINVAL;
    vega_quic_conn *c = vega__quic_calloc(cfg->mem, 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->server = server;
    c->version = version;
    c->cfg = *cfg;
    if (path)
        c->paths.cur = *path;
    c->now = now;
    c->dgram.recv = vega__quic_calloc(cfg->mem, cfg->max_datagram_queue, sizeof *c->dgram.recv);
    struct vega__quic_recovery_cbs cbs = {
        .ud = c, .on_acked = vega__quic_on_acked, .on_lost = vega__quic_on_lost};
    int rc = c->dgram.recv ? 0 : -ENOMEM;
    if (rc == 0)
        rc = vega__quic_recovery_new(
            &c->rec, cfg->cc == VEGA_QUIC_CC_NEWRENO ? VEGA__QUIC_CC_NEWRENO : VEGA__QUIC_CC_CUBIC,
            VEGA__QUIC_MAX_PACKET, cfg->initial_rtt_ns, &cbs, cfg->mem);
    if (rc < 0) {
        vega__quic_free(cfg->mem, c->dgram.recv);
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
    vega__quic_fc_init(&c->flow.fc, cfg->max_data, cfg->max_data_max);
    c->flow.fc.limit = cfg->max_data;
    vega__quic_stream_map_init(&c->streams.map, cfg->mem);
    c->streams.next[0] = server ? 1 : 0;
    c->streams.next[1] = server ? 3 : 2;
    c->streams.local_max[0] = cfg->max_streams_bidi;
    c->streams.local_max[1] = cfg->max_streams_uni;
    vega_quic_tp_init(&c->hs.peer_tp);
    c->timers.idle_timeout = cfg->idle_timeout_ms * VEGA__QUIC_NS_PER_MS;
    c->timers.idle_deadline =
        c->timers.idle_timeout ? now + c->timers.idle_timeout : VEGA__QUIC_TIME_INF;
    c->closing.deadline = VEGA__QUIC_TIME_INF;
    c->timers.pace_deadline = VEGA__QUIC_TIME_INF;
    c->keys.rx_prev_until = VEGA__QUIC_TIME_INF;
    c->stats.version = version;
    c->paths.validated = true; /* the handshake validates the path it runs on */
    c->pmtu.mtu = VEGA__QUIC_MAX_PACKET;
    c->pmtu.done = cfg->pmtu_max <= VEGA__QUIC_MAX_PACKET;
    c->paths.challenge_retry = c->paths.challenge_deadline = VEGA__QUIC_TIME_INF;
    *out = c;
    return 0;
}

int vega_quic_conn_client_new_versioned(vega_quic_conn **out, const vega_quic_opts *cfg,
                                        const vega_quic_path *path, uint64_t now, int opts_version)
{
    vega_quic_opts v1;
    if (!opts_latest(cfg, opts_version, &v1, &cfg))
        return -EINVAL; /* a program built against another libvega's headers */
    vega_quic_conn *c;
    int rc = conn_alloc(&c, cfg, path, cfg->version ? cfg->version : VEGA_QUIC_V1, false, now);
    if (rc < 0)
        return rc;
    /* Our first Destination CID is random, 8 bytes or more (RFC 9000 §7.2). */
    c->cids.odcid_len = 8;
    c->cids.npeer = 1;
    c->cids.peer[0].len = 8;
    c->cids.nlocal = 1;
    rc = vega__quic_rand(c, c->cids.odcid, c->cids.odcid_len);
    if (rc == 0)
        rc = vega__quic_cid_new(c, &c->cids.local[0]);
    if (rc == 0) {
        memcpy(c->cids.peer[0].id, c->cids.odcid, 8);
        if (cfg->token_len) {
            c->addr.token = vega__quic_malloc(c->cfg.mem, cfg->token_len);
            rc = c->addr.token ? 0 : -ENOMEM;
            if (rc == 0) {
                memcpy(c->addr.token, cfg->token, cfg->token_len);
                c->addr.token_len = cfg->token_len;
            }
        }
    }
    if (rc == 0)
        rc = vega__quic_tls_start(c);
    /* 0-RTT runs under the limits the server gave last time (RFC 9000 §7.4.1). */
    size_t stp_len = 0;
    const uint8_t *stp = rc == 0 ? vega__qtls_session_tp(c->hs.tls, &stp_len) : NULL;
    uint64_t werr = 0;
    if (stp && vega_quic_tp_decode(&c->hs.peer_tp, stp, stp_len, true, &werr) == 0) {
        c->flow.max_send_data = c->hs.peer_tp.initial_max_data;
        c->streams.peer_max[0] = c->hs.peer_tp.initial_max_streams_bidi;
        c->streams.peer_max[1] = c->hs.peer_tp.initial_max_streams_uni;
    } else {
        vega_quic_tp_init(&c->hs.peer_tp);
    }
    if (rc == 0)
        rc = vega__qtls_start(c->hs.tls, &werr);
    if (rc < 0) {
        vega_quic_conn_free(c);
        return rc == VEGA_ERR_PROTO ? -EINVAL : rc;
    }
    if (VEGA__QLOG(c))
        vega__quic_qlog_started(c);
    *out = c;
    return 0;
}

int vega_quic_conn_server_new_versioned(vega_quic_conn **out, const vega_quic_opts *cfg,
                                        const vega_quic_path *path,
                                        const vega_quic_server_params *sp, uint64_t now,
                                        int opts_version)
{
    vega_quic_opts v1;
    if (!opts_latest(cfg, opts_version, &v1, &cfg))
        return -EINVAL; /* a program built against another libvega's headers */
    if (!sp || sp->dcid_len > VEGA_QUIC_MAX_CID_LEN || sp->scid_len > VEGA_QUIC_MAX_CID_LEN ||
        sp->original_dcid_len > VEGA_QUIC_MAX_CID_LEN)
        return -EINVAL;
    vega_quic_conn *c;
    int rc = conn_alloc(&c, cfg, path, sp->version, true, now);
    if (rc < 0)
        return rc;
    c->addr.validated = sp->address_validated;
    if (sp->original_dcid) {
        c->cids.odcid_len = (uint8_t)sp->original_dcid_len;
        memcpy(c->cids.odcid, sp->original_dcid, sp->original_dcid_len);
        c->cids.retry_scid_len = (uint8_t)sp->dcid_len;
        memcpy(c->cids.retry_scid, sp->dcid, sp->dcid_len);
    } else {
        c->cids.odcid_len = (uint8_t)sp->dcid_len;
        memcpy(c->cids.odcid, sp->dcid, sp->dcid_len);
    }
    c->cids.peer_scid_len = (uint8_t)sp->scid_len;
    memcpy(c->cids.peer_scid, sp->scid, sp->scid_len);
    c->cids.npeer = 1;
    c->cids.peer[0].len = (uint8_t)sp->scid_len;
    memcpy(c->cids.peer[0].id, sp->scid, sp->scid_len);
    c->cids.nlocal = 1;
    rc = vega__quic_cid_new(c, &c->cids.local[0]);
    if (rc == 0)
        rc = vega__quic_tls_start(c);
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
    if (VEGA__QLOG(c))
        vega__quic_qlog_started(c);
    *out = c;
    return 0;
}

/* The datagrams still queued either way. */
static void free_datagrams(vega_quic_conn *c)
{
    const vega_quic_mem *mem = c->cfg.mem;
    struct vega__quic_conn_dgrams *d = &c->dgram;
    for (size_t i = 0; i < d->send_n; i++)
        vega__quic_free(mem, d->send[(d->send_head + i) % VEGA__QUIC_DGRAM_SEND_QUEUE].data);
    for (size_t i = 0; i < d->recv_n; i++)
        vega__quic_free(mem, d->recv[(d->recv_head + i) % c->cfg.max_datagram_queue].data);
    vega__quic_free(mem, d->recv);
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
    vega_quic_keys_free(c->keys.early_tx);
    vega_quic_keys_free(c->keys.early_rx);
    vega_quic_keys_free(c->keys.rx_next);
    vega_quic_keys_free(c->keys.rx_prev);
    vega_crypto_cleanse(c->keys.app_rx_secret, sizeof c->keys.app_rx_secret);
    vega_crypto_cleanse(c->keys.app_tx_secret, sizeof c->keys.app_tx_secret);
    vega__qtls_free(c->hs.tls);
    vega__quic_free(c->cfg.mem, c->addr.new_token);
    vega__quic_streams_free(c);
    while (c->ack.free) {
        struct vega__quic_pktrec *r = c->ack.free;
        c->ack.free = r->next_free;
        vega__quic_free(mem, r);
    }
    free_datagrams(c);
    for (size_t i = 0; i < c->rx.npending; i++)
        vega__quic_free(mem, c->rx.pending[i].data);
    vega__quic_ev_fini(c);
    vega__quic_free(mem, c->addr.token);
    vega__quic_free(mem, c);
}

/* ---- info ----------------------------------------------------------------------------------- */

/* Each vega_quic_conn_info layout's size (API rules: ABI): index = version. */
static const size_t conn_info_layout[VEGA_QUIC_CONN_INFO_VERSION + 1] = {
    [1] = sizeof(vega_quic_conn_info),
};

static void conn_info(const vega_quic_conn *c, vega_quic_conn_info *info)
{
    *info = c->stats;
    info->version = c->version;
    info->handshake_done = c->hs.done;
    info->handshake_confirmed = c->hs.confirmed;
    const struct vega__quic_rtt *r = vega__quic_recovery_rtt(c->rec);
    info->smoothed_rtt_ns = r->smoothed;
    info->min_rtt_ns = r->min;
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    info->cwnd = cc->cwnd;
    info->bytes_in_flight = cc->in_flight;
    info->pkts_lost = vega__quic_recovery_stats(c->rec)->lost;
    info->ptos = vega__quic_recovery_stats(c->rec)->pto_count_total;
    info->key_updates = c->keys.key_updates;
    info->migrations = c->paths.migrations;
    info->pmtu = c->pmtu.mtu;
    if (c->hs.tls) {
        info->resumed = vega__qtls_is_resumed(c->hs.tls);
        _Static_assert(VEGA__QTLS_EARLY_NONE == (int)VEGA_QUIC_EARLY_NONE &&
                           VEGA__QTLS_EARLY_OFFERED == (int)VEGA_QUIC_EARLY_OFFERED &&
                           VEGA__QTLS_EARLY_ACCEPTED == (int)VEGA_QUIC_EARLY_ACCEPTED &&
                           VEGA__QTLS_EARLY_REJECTED == (int)VEGA_QUIC_EARLY_REJECTED,
                       "the public 0-RTT states are the handshake's");
        info->early_data = (vega_quic_early_data)vega__qtls_early_status(c->hs.tls);
    }
    if (c->hs.tls && c->hs.done) {
        vega_crypto_aead_alg a = vega__qtls_aead(c->hs.tls);
        vega_crypto_hash_alg h = vega__qtls_hash(c->hs.tls);
        info->suite = h == VEGA_CRYPTO_SHA384              ? VEGA_QUIC_TLS_AES_256_GCM_SHA384
                      : a == VEGA_CRYPTO_CHACHA20_POLY1305 ? VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256
                                                           : VEGA_QUIC_TLS_AES_128_GCM_SHA256;
    }
}

int vega_quic_conn_get_info_versioned(const vega_quic_conn *c, vega_quic_conn_info *info,
                                      int info_version)
{
    if (!c || !info || info_version < 1 || info_version > VEGA_QUIC_CONN_INFO_VERSION)
        return -EINVAL;
    vega_quic_conn_info all;
    conn_info(c, &all);
    memcpy(info, &all, conn_info_layout[info_version]);
    return 0;
}
