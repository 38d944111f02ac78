/* SPDX-License-Identifier: MIT */
/* The QUIC connection's paths (RFC 9000 §8.2, §9): comparing addresses, path validation with
 * PATH_CHALLENGE and PATH_RESPONSE (answered on the path the challenge came on), the server
 * following a peer that moved, the client migrating, and address validation tokens (§8.1.3). */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

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
    if (c->paths.challenge_tries >= 3) {
        c->paths.challenge_retry = VEGA__QUIC_TIME_INF;
        return;
    }
    if (vega__quic_rand(c, c->paths.challenge, sizeof c->paths.challenge) < 0)
        return;
    c->paths.challenge_tries++;
    c->paths.challenge_queued = true;
    c->paths.challenge_outstanding = true;
    c->paths.challenge_retry = c->now + vega__quic_pto(c);
}

static void start_validation(vega_quic_conn *c)
{
    c->paths.validated = false;
    c->paths.migrating = true;
    c->paths.bytes_recv = c->paths.bytes_sent = 0;
    c->paths.challenge_tries = 0;
    uint64_t pto = vega__quic_pto(c);
    /* §8.2.4: at least three PTOs, and six times the initial RTT, to tolerate a slow path. */
    uint64_t wait =
        3 * pto > 6 * 333 * VEGA__QUIC_NS_PER_MS ? 3 * pto : 6 * 333 * VEGA__QUIC_NS_PER_MS;
    c->paths.challenge_deadline = c->now + wait;
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
    c->paths.challenge_outstanding = false;
    c->paths.challenge_retry = c->paths.challenge_deadline = VEGA__QUIC_TIME_INF;
    c->paths.validated = true;
    if (c->paths.migrating) {
        c->paths.migrating = false;
        path_event(c, true);
    }
}

void vega__quic_path_failed(vega_quic_conn *c)
{
    c->paths.challenge_outstanding = false;
    c->paths.challenge_queued = false;
    c->paths.challenge_retry = c->paths.challenge_deadline = VEGA__QUIC_TIME_INF;
    if (!c->paths.migrating)
        return;
    /* Back to the path that worked (§9.3.2); if there is none, the connection is lost. */
    c->paths.migrating = false;
    c->paths.cur = c->paths.prev;
    c->paths.validated = true;
    restart_cc(c);
    path_event(c, false);
}

/* Server: a non-probing packet with the largest packet number came from a new peer address
 * (§9.3): send to it from now on, validate it, and limit what goes there until then. */
void vega__quic_peer_moved(vega_quic_conn *c, const vega_quic_path *path, bool new_dcid)
{
    int how = vega__quic_addr_cmp(&path->remote, path->remote_len, &c->paths.cur.remote,
                                  c->paths.cur.remote_len);
    if (how == 0)
        return;
    if (!c->paths.migrating)
        c->paths.prev = c->paths.cur;
    c->paths.cur.remote = path->remote;
    c->paths.cur.remote_len = path->remote_len;
    if (path->local_len) {
        c->paths.cur.local = path->local;
        c->paths.cur.local_len = path->local_len;
    }
    c->paths.migrations++;
    if (how == 2)
        restart_cc(c); /* more than a NAT's port change */
    /* A peer that moved to a fresh connection ID gets one from us too (§9.5). */
    if (new_dcid)
        for (size_t i = 0; i < c->cids.npeer; i++)
            if (i != c->cids.dcid_idx && !c->cids.peer[i].retired) {
                struct vega__quic_cid *old = &c->cids.peer[c->cids.dcid_idx];
                old->retired = old->queued = true;
                c->cids.dcid_idx = i;
                break;
            }
    start_validation(c);
}

int vega_quic_conn_migrate(vega_quic_conn *c, const vega_quic_path *path)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    if (c->server || !c->hs.confirmed || c->hs.peer_tp.disable_active_migration ||
        c->paths.migrating)
        return -EINVAL;
    size_t next = c->cids.npeer;
    for (size_t i = 0; i < c->cids.npeer; i++)
        if (i != c->cids.dcid_idx && !c->cids.peer[i].retired && !c->cids.peer[i].used) {
            next = i;
            break;
        }
    if (next == c->cids.npeer)
        return VEGA_ERR_FULL;
    struct vega__quic_cid *old = &c->cids.peer[c->cids.dcid_idx];
    old->retired = old->queued = true; /* §9.5: a new path never reuses a connection ID */
    old->used = true;
    c->cids.dcid_idx = next;
    c->cids.peer[next].used = true;
    c->paths.prev = c->paths.cur;
    c->paths.cur = *path;
    c->paths.migrations++;
    restart_cc(c);
    start_validation(c);
    return 0;
}

void vega_quic_conn_get_path(const vega_quic_conn *c, vega_quic_path *out)
{
    *out = c->paths.cur;
}

/* A PATH_CHALLENGE: the answer goes back on the path the challenge came on (§8.2.2). */
void vega__quic_on_path_challenge(vega_quic_conn *c, const vega_quic_frame *f)
{
    struct vega__quic_conn_paths *p = &c->paths;
    memcpy(p->response, f->u.path.data, 8);
    p->response_queued = true;
    p->response_elsewhere = false;
    const vega_quic_path *rx = c->rx.path;
    if (rx &&
        vega__quic_addr_cmp(&rx->remote, rx->remote_len, &p->cur.remote, p->cur.remote_len) != 0) {
        p->response_elsewhere = true;
        p->response_path = *rx;
        p->response_budget = 3 * c->rx.dgram_len; /* unvalidated: §8.2.2, §9.3 */
    }
}

/* A PATH_RESPONSE: a stale or unsolicited one is ignored (§8.2.3). */
void vega__quic_on_path_response(vega_quic_conn *c, const vega_quic_frame *f)
{
    if (c->paths.challenge_outstanding &&
        vega_crypto_ct_equal(f->u.path.data, c->paths.challenge, sizeof c->paths.challenge))
        vega__quic_path_validated(c);
}

/* PATH_RESPONSE to a challenge that came on another path than ours, alone in a datagram sent
 * there (RFC 9000 §8.2.2), padded to 1200 bytes (the challenge's datagram was, so this stays
 * within 3x of what that path sent). Not ack-eliciting for recovery purposes: a lost response
 * is answered by the peer's next challenge. */
vega_ssize vega__quic_write_path_response(vega_quic_conn *c, vega_quic_path *path, uint8_t *out,
                                          size_t limit)
{
    /* Padded to 1200 bytes only if that stays within 3x what the challenge's datagram
     * brought: an address nobody validated must not become a reflection target. */
    if (c->paths.response_budget < limit)
        limit = c->paths.response_budget < 64 ? 64 : c->paths.response_budget;
    struct vega__quic_pkt k;
    if (!vega__quic_pkt_begin(c, &k, VEGA_QUIC_LEVEL_APP, 0, limit))
        return 0;
    /* The packet number must be known to recovery, or the peer's ACK of it would look like an
     * ACK of a packet never sent (found against ngtcp2's gtlsclient migrating). */
    int rc = vega__quic_recovery_reserve(c->rec, VEGA__QUIC_SPACE_APP, 1);
    if (rc < 0)
        return rc;
    struct vega__quic_pktrec dummy;
    dummy.n = 0;
    k.rec = &dummy;
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_RESPONSE};
    memcpy(f.u.path.data, c->paths.response, 8);
    vega__quic_put_frame(out, &k, &f);
    vega__quic_pkt_finish(out, &k, limit - k.hdr_len - VEGA_CRYPTO_AEAD_TAG_LEN);
    if (VEGA__QLOG(c))
        vega__quic_qlog_sent(c, &k, out);
    vega_ssize n = vega_quic_packet_protect(k.keys, out, limit, k.hdr_len, k.pn, k.len);
    if (n < 0)
        return n;
    /* Recorded without frames and outside the congestion window: it went to another path, and
     * a lost response is answered by the peer's next challenge. */
    struct vega__quic_sent sent = {.pn = k.pn, .time_sent = c->now, .bytes = (uint32_t)n};
    c->sp[VEGA__QUIC_SPACE_APP].next_pn++;
    if (vega__quic_recovery_on_sent(c->rec, VEGA__QUIC_SPACE_APP, &sent) < 0)
        return VEGA_ERR_INTERNAL; /* reserved above: cannot fail */
    c->stats.pkts_sent++;
    c->paths.response_queued = false;
    c->paths.response_elsewhere = false;
    if (path)
        *path = c->paths.response_path;
    c->stats.bytes_sent += (uint64_t)n;
    return n;
}

/* ---- address validation tokens (RFC 9000 §8.1.3) -------------------------------------------- */

int vega_quic_conn_new_token(vega_quic_conn *c, const uint8_t *token, size_t len)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    if (!c->server || !token || len == 0 || len > 512)
        return -EINVAL;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, token, len);
    vega__quic_free(c->cfg.mem, c->addr.new_token);
    c->addr.new_token = copy;
    c->addr.new_token_len = len;
    c->addr.new_token_gen++;
    c->addr.new_token_queued = true;
    return 0;
}
