/* SPDX-License-Identifier: MIT */
/* The impairment relay's decisions: options, a seeded splitmix64 PRNG, one verdict per datagram
 * (loss, bursts, drop-first, blackholes, rate and queue, delay, jitter, reordering, duplication,
 * corruption) and a census of QUIC packets by their invariant and long headers (RFC 8999
 * section 5, RFC 9000 section 17.2, RFC 9369 section 3.2). Pure: no sockets, no clock. */
#include "relay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_MS 1000000ull
#define PPM       1000000u

bool relay_quiet;

uint64_t relay_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void relay_dir_seed(relay_dir_state *st, uint64_t seed, int d)
{
    memset(st, 0, sizeof *st);
    st->rng = seed * 2u + (uint64_t)d + 1u;
    (void)relay_rand(&st->rng);
}

static bool hit(uint64_t r, uint32_t ppm)
{
    return ppm > 0 && r % PPM < ppm;
}

static bool in_blackhole(const relay_dir_cfg *c, uint64_t since)
{
    if (c->blackhole_for_ns == 0 || since < c->blackhole_after_ns) {
        return false;
    }
    uint64_t t = since - c->blackhole_after_ns;
    if (c->blackhole_every_ns > 0) {
        t %= c->blackhole_every_ns;
    }
    return t < c->blackhole_for_ns;
}

/* The rate limiter: the datagram leaves the link after those queued before it. Returns false
 * when the queue (bytes not yet on the link) has no room for it. */
static bool rate_admit(const relay_dir_cfg *c, relay_dir_state *st, uint64_t now, size_t len,
                       uint64_t *departs)
{
    uint64_t start = st->link_free_ns > now ? st->link_free_ns : now;
    /* Bytes still waiting: (start - now) ns at rate_kbps (1 kbit/s = 1/8000 byte per ms). */
    uint64_t backlog = (start - now) / 1000u * c->rate_kbps / 8000u;
    if (backlog + len > c->queue_bytes) {
        return false;
    }
    uint64_t tx = (uint64_t)len * 8u * 1000000u / c->rate_kbps; /* ns on the wire */
    st->link_free_ns = start + tx;
    *departs = st->link_free_ns;
    return true;
}

void relay_decide(const relay_dir_cfg *cfg, relay_dir_state *st, uint64_t now_ns, uint64_t since_ns,
                  uint64_t flow_seen, size_t len, relay_verdict *v)
{
    /* Always five draws, so that the n-th datagram's fate depends on the seed and n. */
    uint64_t r_loss = relay_rand(&st->rng);
    uint64_t r_reorder = relay_rand(&st->rng);
    uint64_t r_dup = relay_rand(&st->rng);
    uint64_t r_corrupt = relay_rand(&st->rng);
    uint64_t r_jitter = relay_rand(&st->rng);

    memset(v, 0, sizeof *v);
    v->drop = -1;
    v->copies = 1;
    if (flow_seen < cfg->drop_first) {
        v->drop = DROP_FIRST;
        return;
    }
    if (in_blackhole(cfg, since_ns)) {
        v->drop = DROP_BLACKHOLE;
        return;
    }
    if (st->burst_left > 0) {
        st->burst_left--;
        v->drop = DROP_LOSS;
        return;
    }
    if (hit(r_loss, cfg->loss_ppm)) {
        st->burst_left = cfg->loss_burst > 1 ? cfg->loss_burst - 1 : 0;
        v->drop = DROP_LOSS;
        return;
    }
    uint64_t base = now_ns;
    if (cfg->rate_kbps > 0 && !rate_admit(cfg, st, now_ns, len, &base)) {
        v->drop = DROP_QUEUE;
        return;
    }
    uint64_t release = base + cfg->delay_ns;
    if (cfg->jitter_ns > 0) {
        release += r_jitter % (cfg->jitter_ns + 1u);
    }
    if (hit(r_reorder, cfg->reorder_ppm)) {
        release += cfg->reorder_ns;
        v->reordered = true;
    } else if (cfg->jitter_keep_order) {
        if (release < st->last_release_ns) {
            release = st->last_release_ns;
        }
        st->last_release_ns = release;
    }
    v->release_ns = release;
    if (hit(r_corrupt, cfg->corrupt_ppm)) {
        v->corrupt = true;
        v->corrupt_bit = (r_corrupt >> 24) % ((uint64_t)len * 8u);
    }
    if (hit(r_dup, cfg->dup_ppm)) {
        v->copies = 2;
    }
}

/* ---- census --------------------------------------------------------------------------------- */

/* A QUIC variable-length integer (RFC 9000 section 16) at p[*off], within len. */
static bool varint(const uint8_t *p, size_t len, size_t *off, uint64_t *out)
{
    if (*off >= len) {
        return false;
    }
    size_t n = (size_t)1 << (p[*off] >> 6);
    if (n > len - *off) {
        return false;
    }
    uint64_t x = p[*off] & 0x3fu;
    for (size_t i = 1; i < n; i++) {
        x = (x << 8) | p[*off + i];
    }
    *off += n;
    *out = x;
    return true;
}

/* The packet kind of a long header's two type bits: v1 and drafts (RFC 9000 section 17.2),
 * v2 and its draft (RFC 9369 section 3.2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00). */
static int long_kind(uint32_t version, unsigned type)
{
    static const int v1[4] = {PK_INITIAL, PK_0RTT, PK_HANDSHAKE, PK_RETRY};
    static const int v2[4] = {PK_RETRY, PK_INITIAL, PK_0RTT, PK_HANDSHAKE};
    if (version == 0x6b3343cfu || version == 0x709a50c4u) {
        return v2[type & 3u];
    }
    if (version == 1u || (version & 0xffffff00u) == 0xff000000u) {
        return v1[type & 3u];
    }
    return PK_OTHER;
}

static void note_version(relay_census *c, uint32_t v)
{
    for (unsigned i = 0; i < c->nversions; i++) {
        if (c->versions[i] == v) {
            return;
        }
    }
    if (c->nversions < sizeof c->versions / sizeof c->versions[0]) {
        c->versions[c->nversions++] = v;
    }
}

bool relay_census_add(relay_census *c, const uint8_t *p, size_t len)
{
    bool proven = false;
    size_t off = 0;
    while (off < len) {
        if (!(p[off] & 0x80u)) {
            c->pk[PK_SHORT]++; /* a short header runs to the datagram's end */
            return true;
        }
        /* first byte, version, DCID length: 6 bytes at least */
        if (len - off < 6) {
            c->pk[PK_OTHER]++;
            return proven;
        }
        uint32_t version = (uint32_t)p[off + 1] << 24 | (uint32_t)p[off + 2] << 16 |
                           (uint32_t)p[off + 3] << 8 | p[off + 4];
        if (version == 0) {
            c->pk[PK_VN]++;
            return proven;
        }
        note_version(c, version);
        int kind = long_kind(version, (p[off] >> 4) & 3u);
        size_t pos = off + 6 + p[off + 5];
        if (kind == PK_OTHER || kind == PK_RETRY || pos >= len) {
            c->pk[kind == PK_RETRY ? PK_RETRY : PK_OTHER]++;
            return proven;
        }
        pos += 1u + p[pos]; /* SCID */
        uint64_t token = 0, length = 0;
        if (kind == PK_INITIAL && (!varint(p, len, &pos, &token) || token > len - pos)) {
            c->pk[PK_OTHER]++;
            return proven;
        }
        pos += (size_t)token;
        if (!varint(p, len, &pos, &length) || length > len - pos) {
            c->pk[PK_OTHER]++;
            return proven;
        }
        c->pk[kind]++;
        size_t end = pos + (size_t)length;
        if (kind == PK_HANDSHAKE) {
            c->handshake_bytes += end - off;
            proven = true;
        }
        off = end;
    }
    return proven;
}

/* ---- options -------------------------------------------------------------------------------- */

static int parse_u64(const char *name, const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = s ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *s == '-' || *end || errno || x > max) {
        if (!relay_quiet) {
            fprintf(stderr, "relay: --%s wants a number up to %" PRIu64 ", not '%s'\n", name, max,
                    s ? s : "");
        }
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_pct(const char *name, const char *s, uint32_t *ppm)
{
    char *end;
    double x = s ? strtod(s, &end) : -1;
    if (!s || !*s || *end || !(x >= 0 && x <= 100)) {
        if (!relay_quiet) {
            fprintf(stderr, "relay: --%s wants a percentage 0..100, not '%s'\n", name, s ? s : "");
        }
        return -1;
    }
    *ppm = (uint32_t)(x * (PPM / 100) + 0.5);
    return 0;
}

void relay_cfg_init(relay_dir_cfg cfg[DIR_COUNT])
{
    for (int d = 0; d < DIR_COUNT; d++) {
        memset(&cfg[d], 0, sizeof cfg[d]);
        cfg[d].loss_burst = 1;
        cfg[d].reorder_ns = 10 * NS_PER_MS;
        cfg[d].queue_bytes = 64 * 1024;
    }
}

/* Sets one option on one direction; 1 = name and value taken, 2 = a flag (no value), 0 = not
 * an impairment, -1 = bad value. */
static int set_one(relay_dir_cfg *c, const char *name, const char *val)
{
    uint64_t x = 0;
    uint32_t ppm = 0;
    static const struct {
        const char *name;
        size_t off;
        uint64_t scale, max;
    } nums[] = {
        {"delay-ms", offsetof(relay_dir_cfg, delay_ns), NS_PER_MS, 86400000u},
        {"jitter-ms", offsetof(relay_dir_cfg, jitter_ns), NS_PER_MS, 86400000u},
        {"reorder-ms", offsetof(relay_dir_cfg, reorder_ns), NS_PER_MS, 86400000u},
        {"drop-first", offsetof(relay_dir_cfg, drop_first), 1, UINT64_MAX},
        {"blackhole-after-ms", offsetof(relay_dir_cfg, blackhole_after_ns), NS_PER_MS, 86400000u},
        {"blackhole-for-ms", offsetof(relay_dir_cfg, blackhole_for_ns), NS_PER_MS, 86400000u},
        {"blackhole-every-ms", offsetof(relay_dir_cfg, blackhole_every_ns), NS_PER_MS, 86400000u},
        {"rate-kbps", offsetof(relay_dir_cfg, rate_kbps), 1, 100000000u},
        {"queue-kb", offsetof(relay_dir_cfg, queue_bytes), 1024, 1048576u},
    };
    static const struct {
        const char *name;
        size_t off;
    } pcts[] = {
        {"loss", offsetof(relay_dir_cfg, loss_ppm)},
        {"reorder", offsetof(relay_dir_cfg, reorder_ppm)},
        {"dup", offsetof(relay_dir_cfg, dup_ppm)},
        {"corrupt", offsetof(relay_dir_cfg, corrupt_ppm)},
    };
    if (strcmp(name, "jitter-keep-order") == 0) {
        c->jitter_keep_order = true;
        return 2;
    }
    if (strcmp(name, "loss-burst") == 0) {
        if (parse_u64(name, val, 1000, &x) < 0 || x == 0) {
            return -1;
        }
        c->loss_burst = (uint32_t)x;
        return 1;
    }
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if (strcmp(name, nums[i].name) == 0) {
            if (parse_u64(name, val, nums[i].max, &x) < 0) {
                return -1;
            }
            memcpy((char *)c + nums[i].off, &(uint64_t){x * nums[i].scale}, sizeof(uint64_t));
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof pcts / sizeof pcts[0]; i++) {
        if (strcmp(name, pcts[i].name) == 0) {
            if (parse_pct(name, val, &ppm) < 0) {
                return -1;
            }
            memcpy((char *)c + pcts[i].off, &ppm, sizeof ppm);
            return 1;
        }
    }
    return 0;
}

int relay_parse_impairment(relay_dir_cfg cfg[DIR_COUNT], const char *name, const char *value)
{
    int lo = 0, hi = DIR_COUNT, rc = 0;
    if (strncmp(name, "to-server-", 10) == 0) {
        name += 10;
        hi = 1;
    } else if (strncmp(name, "to-client-", 10) == 0) {
        name += 10;
        lo = 1;
    }
    for (int d = lo; d < hi; d++) {
        rc = set_one(&cfg[d], name, value);
        if (rc <= 0) {
            return rc;
        }
    }
    return rc;
}

void relay_stats_print(FILE *f, const char *dir, const relay_dir_stats *s)
{
    uint64_t drops = 0;
    for (int i = 0; i < DROP_REASONS; i++) {
        drops += s->drop[i];
    }
    const relay_census *c = &s->census;
    fprintf(f,
            "relay: stats %s in=%" PRIu64 " bytes_in=%" PRIu64 " fwd=%" PRIu64 " bytes_fwd=%" PRIu64
            " dropped=%" PRIu64 " loss=%" PRIu64 " first=%" PRIu64 " blackhole=%" PRIu64
            " queue=%" PRIu64 " stale=%" PRIu64 " limit=%" PRIu64 " delayed=%" PRIu64
            " reordered=%" PRIu64 " dup=%" PRIu64 " corrupted=%" PRIu64 " ecn_not=%" PRIu64
            " ecn_ect1=%" PRIu64 " ecn_ect0=%" PRIu64 " ecn_ce=%" PRIu64 " initial=%" PRIu64
            " 0rtt=%" PRIu64 " handshake=%" PRIu64 " retry=%" PRIu64 " vn=%" PRIu64
            " short=%" PRIu64 " other=%" PRIu64 " hs_bytes=%" PRIu64 " versions=",
            dir, s->in, s->bytes_in, s->fwd, s->bytes_fwd, drops, s->drop[DROP_LOSS],
            s->drop[DROP_FIRST], s->drop[DROP_BLACKHOLE], s->drop[DROP_QUEUE], s->drop[DROP_STALE],
            s->drop[DROP_LIMIT], s->delayed, s->reordered, s->dup, s->corrupt, s->ecn[0], s->ecn[1],
            s->ecn[2], s->ecn[3], c->pk[PK_INITIAL], c->pk[PK_0RTT], c->pk[PK_HANDSHAKE],
            c->pk[PK_RETRY], c->pk[PK_VN], c->pk[PK_SHORT], c->pk[PK_OTHER], c->handshake_bytes);
    for (unsigned i = 0; i < c->nversions; i++) {
        fprintf(f, "%s0x%08" PRIx32, i ? "," : "", c->versions[i]);
    }
    fprintf(f, "%s\n", c->nversions ? "" : "none");
}
