/* SPDX-License-Identifier: MIT */
/* The QUIC connection's connection IDs (RFC 9000 §5.1): issuing ours as the peer allows,
 * taking and retiring the peer's (NEW_CONNECTION_ID, RETIRE_CONNECTION_ID), and recognising a
 * stateless reset by the peer's tokens (§10.3.1). */
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

int vega__quic_cid_new(vega_quic_conn *c, struct vega__quic_cid *id)
{
    memset(id, 0, sizeof *id);
    id->seq = c->cids.next_local_seq++;
    id->len = (uint8_t)c->cfg.scid_len;
    int rc = vega__quic_rand(c, id->id, id->len);
    /* a routable prefix (vega_quic_opts.scid_prefix; config_ok: shorter than the ID) */
    memcpy(id->id, c->cfg.scid_prefix, c->cfg.scid_prefix_len);
    if (rc == 0)
        rc = c->cfg.reset_key ? vega_quic_reset_token(c->cfg.reset_key, id->id, id->len, id->token)
                              : vega__quic_rand(c, id->token, sizeof id->token);
    id->has_token = true;
    return rc;
}

/* Keeps as many of our connection IDs issued as the peer allows (RFC 9000 §5.1.1). */
int vega__quic_issue_cids(vega_quic_conn *c)
{
    if (!c->hs.peer_tp_ok || c->state >= VEGA__QUIC_ST_CLOSING)
        return 0;
    uint64_t limit = c->hs.peer_tp.active_connection_id_limit;
    if (limit > VEGA__QUIC_MAX_LOCAL_CIDS)
        limit = VEGA__QUIC_MAX_LOCAL_CIDS;
    size_t active = 0;
    for (size_t i = 0; i < c->cids.nlocal; i++)
        active += !c->cids.local[i].retired;
    while (active < limit) {
        size_t slot = c->cids.nlocal;
        for (size_t i = 0; i < c->cids.nlocal; i++)
            if (c->cids.local[i].retired && !c->cids.local[i].queued) {
                slot = i;
                break;
            }
        if (slot == VEGA__QUIC_MAX_LOCAL_CIDS)
            break;
        int rc = vega__quic_cid_new(c, &c->cids.local[slot]);
        if (rc < 0)
            return rc;
        c->cids.local[slot].queued = true;
        if (slot == c->cids.nlocal)
            c->cids.nlocal++;
        active++;
    }
    return 0;
}

struct vega__quic_cid *vega__quic_cid_find(struct vega__quic_cid *v, size_t n, uint64_t seq)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].seq == seq)
            return &v[i];
    return NULL;
}

const uint8_t *vega_quic_conn_scid(const vega_quic_conn *c, size_t *len)
{
    for (size_t i = 0; i < c->cids.nlocal; i++)
        if (!c->cids.local[i].retired) {
            *len = c->cids.local[i].len;
            return c->cids.local[i].id;
        }
    *len = 0;
    return NULL;
}

size_t vega_quic_conn_scids(const vega_quic_conn *c, const uint8_t **ids, size_t *lens, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->cids.nlocal; i++) {
        if (c->cids.local[i].retired)
            continue;
        if (n < max) {
            ids[n] = c->cids.local[i].id;
            lens[n] = c->cids.local[i].len;
        }
        n++;
    }
    return n;
}

/* ---- the peer's connection IDs -------------------------------------------------------------- */

static bool cid_same(const struct vega__quic_cid *p, const vega_quic_frame *f)
{
    return vega__quic_cid_eq(p->id, p->len, f->u.new_cid.cid, f->u.new_cid.cid_len) &&
           memcmp(p->token, f->u.new_cid.reset_token, VEGA_QUIC_RESET_TOKEN_LEN) == 0;
}

int vega__quic_on_new_cid(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    uint64_t seq = f->u.new_cid.seq, rpt = f->u.new_cid.retire_prior_to;
    for (size_t i = 0; i < c->cids.npeer; i++) {
        struct vega__quic_cid *p = &c->cids.peer[i];
        if (p->seq == seq) {
            if (!cid_same(p, f)) {
                *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
                return VEGA_ERR_PROTO;
            }
            return 0; /* a retransmission */
        }
    }
    if (rpt > c->cids.peer_retire_prior_to)
        c->cids.peer_retire_prior_to = rpt;
    /* Retire what the peer asked us to (RFC 9000 §5.1.2). */
    for (size_t i = 0; i < c->cids.npeer; i++) {
        struct vega__quic_cid *p = &c->cids.peer[i];
        if (p->seq < c->cids.peer_retire_prior_to && !p->retired) {
            p->retired = true;
            p->queued = true;
        }
    }
    bool retire_now = seq < c->cids.peer_retire_prior_to;
    size_t active = 0;
    for (size_t i = 0; i < c->cids.npeer; i++)
        active += !c->cids.peer[i].retired;
    if (!retire_now && active + 1 > c->hs.local_tp.active_connection_id_limit) {
        *wire_err = VEGA_QUIC_CONNECTION_ID_LIMIT_ERROR;
        return VEGA_ERR_PROTO;
    }
    /* A free slot: reuse an entry whose RETIRE was acknowledged. */
    size_t slot = c->cids.npeer;
    for (size_t i = 0; i < c->cids.npeer; i++)
        if (c->cids.peer[i].retired && c->cids.peer[i].retire_acked && i != c->cids.dcid_idx) {
            slot = i;
            break;
        }
    if (slot == VEGA__QUIC_MAX_PEER_CIDS) {
        *wire_err = VEGA_QUIC_CONNECTION_ID_LIMIT_ERROR;
        return VEGA_ERR_PROTO;
    }
    struct vega__quic_cid *p = &c->cids.peer[slot];
    memset(p, 0, sizeof *p);
    p->seq = seq;
    p->len = f->u.new_cid.cid_len;
    memcpy(p->id, f->u.new_cid.cid, p->len);
    memcpy(p->token, f->u.new_cid.reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
    p->has_token = true;
    if (retire_now) {
        p->retired = true;
        p->queued = true;
    }
    if (slot == c->cids.npeer)
        c->cids.npeer++;
    /* Move off a retired destination CID. */
    if (c->cids.peer[c->cids.dcid_idx].retired)
        for (size_t i = 0; i < c->cids.npeer; i++)
            if (!c->cids.peer[i].retired) {
                c->cids.dcid_idx = i;
                break;
            }
    return 0;
}

int vega__quic_on_retire_cid(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    uint64_t seq = f->u.retire_cid.seq;
    if (seq >= c->cids.next_local_seq) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    for (size_t i = 0; i < c->cids.nlocal; i++)
        if (c->cids.local[i].seq == seq && !c->cids.local[i].retired) {
            c->cids.local[i].retired = true;
            c->cids.local[i].queued = false;
        }
    return vega__quic_issue_cids(c);
}

bool vega__quic_is_stateless_reset(const vega_quic_conn *c, const uint8_t *dgram, size_t len)
{
    if (len < 21)
        return false;
    const uint8_t *tail = dgram + len - VEGA_QUIC_RESET_TOKEN_LEN;
    for (size_t i = 0; i < c->cids.npeer; i++)
        if (c->cids.peer[i].has_token && !c->cids.peer[i].retired &&
            vega_crypto_ct_equal(tail, c->cids.peer[i].token, VEGA_QUIC_RESET_TOKEN_LEN))
            return true;
    return false;
}
