/* SPDX-License-Identifier: MIT */
/* An impairment relay for QUIC interop (interop/h3/run.sh), on libvega's public API only: a UDP
 * listener whose clients are forwarded to one upstream server through a socket per client (so
 * the server sees a distinct 4-tuple), with seeded loss, delay, jitter, reordering, duplication,
 * corruption, blackholes, a rate limit, NAT port and address rebinding (RFC 9000 section 9.3)
 * and a census of the QUIC packets it carried (versions, Retry, 0-RTT, ECN, the amplification
 * limit of RFC 9000 section 8.1). Usage: relay --help. */
#define _GNU_SOURCE
#include "relay.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <vega/vega.h>

#define DGRAM_CAP    65536u /* a whole UDP payload: nothing is truncated */
#define RECV_BATCH   16u
#define SEND_BATCH   32u
#define MAX_BINDINGS 32u /* upstream sockets one flow may go through (rebinding) */

typedef struct flow flow;

typedef struct pkt {
    uint64_t release, seq;
    flow *flow;
    int dir;
    uint8_t ecn;
    size_t len;
    uint8_t data[];
} pkt;

struct flow {
    unsigned id;
    vega_addr client;
    vega_sock *up[MAX_BINDINGS];
    unsigned nup;                 /* up[nup - 1] is the binding in use */
    uint64_t up_in[MAX_BINDINGS]; /* datagrams the server sent to each binding */
    uint64_t first_ns, in[DIR_COUNT], fwd[DIR_COUNT];
    relay_census census[DIR_COUNT];
    bool proven;               /* the client sent a Handshake or 1-RTT packet (--amp-check) */
    uint64_t amp_in, amp_out;  /* bytes to and from the server before that */
    uint64_t amp_worst_excess; /* most bytes the server was over 3x at any point */
    bool amp_exceeded;
};

typedef struct relay {
    relay_dir_cfg cfg[DIR_COUNT];
    relay_dir_state st[DIR_COUNT];
    relay_dir_stats stats[DIR_COUNT];
    vega_addr listen, upstream, upstream_bind, rebind_addr;
    uint64_t seed, timeout_s, rebind_port_after_ns, rebind_addr_after_ns, rebind_every_ns;
    bool stats_line, amp_check, have_rebind_addr;
    unsigned max_flows;
    size_t max_queued;
    vega_sock *lsock;
    flow **flows;
    unsigned nflows;
    pkt **heap;
    size_t hn;
    uint64_t seq, first_ns, send_errors;
    bool started;
    vega_notify wake;
    vega_group *group;
} relay;

typedef struct reader_arg {
    relay *r;
    flow *f; /* NULL: the listener */
    vega_sock *s;
} reader_arg;

/* ---- the delay queue: a binary heap by (release, seq) ------------------------------------- */

static bool before(const pkt *a, const pkt *b)
{
    return a->release < b->release || (a->release == b->release && a->seq < b->seq);
}

static void heap_push(relay *r, pkt *p)
{
    size_t i = r->hn++;
    r->heap[i] = p;
    while (i > 0 && before(r->heap[i], r->heap[(i - 1) / 2])) {
        pkt *t = r->heap[i];
        r->heap[i] = r->heap[(i - 1) / 2];
        r->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static pkt *heap_pop(relay *r)
{
    pkt *top = r->heap[0];
    r->heap[0] = r->heap[--r->hn];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < r->hn && before(r->heap[l], r->heap[m])) {
            m = l;
        }
        if (l + 1 < r->hn && before(r->heap[l + 1], r->heap[m])) {
            m = l + 1;
        }
        if (m == i) {
            return top;
        }
        pkt *t = r->heap[i];
        r->heap[i] = r->heap[m];
        r->heap[m] = t;
        i = m;
    }
}

/* ---- forwarding --------------------------------------------------------------------------- */

/* One datagram arrived for direction dir of flow f: decide, then queue its copies. */
static void on_datagram(relay *r, flow *f, int dir, const uint8_t *data, size_t len, uint8_t ecn)
{
    uint64_t now = vega_now();
    if (!r->started) {
        r->started = true;
        r->first_ns = now;
    }
    relay_dir_stats *s = &r->stats[dir];
    s->in++;
    s->bytes_in += len;
    s->ecn[ecn & 3u]++;
    relay_census_add(&s->census, data, len);
    relay_census_add(&f->census[dir], data, len);
    uint64_t seen = f->in[dir]++;
    if (dir == DIR_TO_CLIENT && r->amp_check && !f->proven) {
        f->amp_out += len;
        if (f->amp_out > 3 * f->amp_in) {
            f->amp_exceeded = true;
            if (f->amp_out - 3 * f->amp_in > f->amp_worst_excess) {
                f->amp_worst_excess = f->amp_out - 3 * f->amp_in;
            }
        }
    }
    relay_verdict v;
    relay_decide(&r->cfg[dir], &r->st[dir], now, now - r->first_ns, seen, len, &v);
    if (v.drop < 0 && r->hn + v.copies > r->max_queued) {
        v.drop = DROP_LIMIT;
    }
    if (v.drop >= 0) {
        s->drop[v.drop]++;
        return;
    }
    s->delayed += v.release_ns > now;
    s->reordered += v.reordered;
    s->corrupt += v.corrupt;
    s->dup += v.copies - 1;
    for (unsigned i = 0; i < v.copies; i++) {
        pkt *p = malloc(sizeof *p + len);
        if (!p) {
            s->drop[DROP_LIMIT]++;
            return;
        }
        p->release = v.release_ns;
        p->seq = r->seq++;
        p->flow = f;
        p->dir = dir;
        p->ecn = ecn & 3u;
        p->len = len;
        memcpy(p->data, data, len);
        if (v.corrupt) {
            p->data[v.corrupt_bit / 8] ^= (uint8_t)(1u << (v.corrupt_bit % 8));
        }
        heap_push(r, p);
    }
    vega_notify_one(&r->wake);
}

/* Sends msgs[0..n) on s, all of them unless the socket fails (then counts the rest lost). */
static void send_all(relay *r, vega_sock *s, vega_udp_msg *msgs, size_t n)
{
    size_t done = 0;
    while (done < n) {
        int rc = vega_udp_send_batch(s, msgs + done, n - done, vega_deadline_in_ms(200));
        if (rc == -ECANCELED) {
            return;
        }
        if (rc <= 0) {
            r->send_errors++;
            done++; /* skip the one that failed */
        } else {
            done += (size_t)rc;
        }
    }
}

/* Bookkeeping when p leaves: counters, and the amplification census of --amp-check. */
static void on_sent(relay *r, pkt *p)
{
    flow *f = p->flow;
    r->stats[p->dir].fwd++;
    r->stats[p->dir].bytes_fwd += p->len;
    f->fwd[p->dir]++;
    if (p->dir == DIR_TO_SERVER && r->amp_check && !f->proven) {
        relay_census scratch;
        memset(&scratch, 0, sizeof scratch);
        f->amp_in += p->len;
        f->proven = relay_census_add(&scratch, p->data, p->len);
    }
}

/* Sends the due packets of batch[0..n), grouping neighbours that leave by the same socket. */
static void send_due(relay *r, pkt **batch, size_t n)
{
    vega_udp_msg msgs[SEND_BATCH];
    size_t i = 0;
    while (i < n) {
        vega_sock *s = NULL;
        size_t k = 0;
        for (; i < n && k < SEND_BATCH; i++, k++) {
            pkt *p = batch[i];
            vega_sock *ps = p->dir == DIR_TO_CLIENT ? r->lsock : p->flow->up[p->flow->nup - 1];
            if (s && ps != s) {
                break;
            }
            s = ps;
            memset(&msgs[k], 0, sizeof msgs[k]);
            msgs[k].buf = p->data;
            msgs[k].len = p->len;
            msgs[k].addr = p->dir == DIR_TO_CLIENT ? p->flow->client : r->upstream;
            msgs[k].ecn = p->ecn;
            on_sent(r, p);
        }
        send_all(r, s, msgs, k);
    }
    for (size_t j = 0; j < n; j++) {
        free(batch[j]);
    }
}

/* The scheduler: sends each queued packet when its release time comes. */
static void *scheduler_task(void *arg)
{
    relay *r = arg;
    pkt *batch[SEND_BATCH];
    for (;;) {
        vega_deadline dl = r->hn ? r->heap[0]->release : VEGA_DEADLINE_NEVER;
        if (!r->hn || dl > vega_now()) {
            int rc = vega_notify_wait(&r->wake, dl);
            if (rc == -ECANCELED) {
                return NULL;
            }
            continue;
        }
        uint64_t now = vega_now();
        size_t n = 0;
        while (r->hn && r->heap[0]->release <= now && n < SEND_BATCH) {
            batch[n++] = heap_pop(r);
        }
        send_due(r, batch, n);
        if (vega_coop() == -ECANCELED) {
            return NULL;
        }
    }
}

/* ---- flows and their upstream sockets ----------------------------------------------------- */

static void *reader_task(void *arg);

/* Opens a new upstream socket for f bound to ip (port 0) and starts its reader. */
static int bind_upstream(relay *r, flow *f, const vega_addr *ip)
{
    if (f->nup >= MAX_BINDINGS) {
        return -ENOSPC;
    }
    vega_addr a = *ip;
    vega_addr_set_port(&a, 0);
    vega_sock *s;
    int rc = vega_udp_bind(&s, &a, 0);
    if (rc < 0) {
        return rc;
    }
    (void)vega_udp_set_features(s, VEGA_UDP_ECN, true);
    reader_arg *ra = malloc(sizeof *ra);
    if (!ra) {
        vega_sock_close(s);
        return -ENOMEM;
    }
    *ra = (reader_arg){.r = r, .f = f, .s = s};
    f->up[f->nup++] = s;
    rc = vega_group_spawn(r->group, reader_task, ra);
    if (rc < 0) {
        f->nup--;
        vega_sock_close(s);
        free(ra);
    }
    return rc;
}

/* Rebinds f once at first_ns + after (and every `every` after that): the next upstream socket
 * is bound to the address of ip, or of the binding in use when ip is NULL (a new port). */
static void rebind_loop(relay *r, flow *f, uint64_t after, const vega_addr *ip)
{
    uint64_t at = f->first_ns + after;
    for (;;) {
        if (vega_sleep_until(at) < 0) {
            return;
        }
        vega_addr cur;
        if (vega_sock_local_addr(f->up[f->nup - 1], &cur) < 0) {
            return;
        }
        int rc = bind_upstream(r, f, ip ? ip : &cur);
        char from[VEGA_ADDR_STRLEN], to[VEGA_ADDR_STRLEN];
        vega_addr now_a;
        vega_addr_format(&cur, from, sizeof from);
        if (rc < 0 || vega_sock_local_addr(f->up[f->nup - 1], &now_a) < 0) {
            printf("relay: flow %u: rebinding failed: %s\n", f->id, vega_strerror(rc));
        } else {
            vega_addr_format(&now_a, to, sizeof to);
            printf("relay: flow %u rebound %s -> %s after %" PRIu64 " ms\n", f->id, from, to,
                   (vega_now() - f->first_ns) / 1000000u);
        }
        fflush(stdout);
        if (rc < 0 || r->rebind_every_ns == 0) {
            return;
        }
        at += r->rebind_every_ns;
    }
}

typedef struct rebind_arg {
    relay *r;
    flow *f;
    bool addr;
} rebind_arg;

static void *rebind_task(void *arg)
{
    rebind_arg a = *(rebind_arg *)arg;
    free(arg);
    if (a.addr) {
        rebind_loop(a.r, a.f, a.r->rebind_addr_after_ns, &a.r->rebind_addr);
    } else {
        rebind_loop(a.r, a.f, a.r->rebind_port_after_ns, NULL);
    }
    return NULL;
}

static void spawn_rebind(relay *r, flow *f, bool addr)
{
    rebind_arg *a = malloc(sizeof *a);
    if (a) {
        *a = (rebind_arg){.r = r, .f = f, .addr = addr};
        if (vega_group_spawn(r->group, rebind_task, a) < 0) {
            free(a);
        }
    }
}

/* The flow of client addr, created at its first datagram; NULL when --max-flows is reached. */
static flow *flow_of(relay *r, const vega_addr *client)
{
    for (unsigned i = 0; i < r->nflows; i++) {
        if (vega_addr_equal(&r->flows[i]->client, client)) {
            return r->flows[i];
        }
    }
    if (r->nflows >= r->max_flows) {
        return NULL;
    }
    flow *f = calloc(1, sizeof *f);
    if (!f) {
        return NULL;
    }
    f->id = r->nflows + 1;
    f->client = *client;
    f->first_ns = vega_now();
    int rc = bind_upstream(r, f, &r->upstream_bind);
    if (rc < 0) {
        fprintf(stderr, "relay: upstream socket: %s\n", vega_strerror(rc));
        free(f);
        return NULL;
    }
    r->flows[r->nflows++] = f;
    if (r->rebind_port_after_ns) {
        spawn_rebind(r, f, false);
    }
    if (r->rebind_addr_after_ns) {
        spawn_rebind(r, f, true);
    }
    return f;
}

static void count_binding(flow *f, const vega_sock *s)
{
    for (unsigned k = 0; k < f->nup; k++) {
        if (f->up[k] == s) {
            f->up_in[k]++;
        }
    }
}

/* Reads one socket: the listener (datagrams from clients) or a flow's upstream socket
 * (datagrams from the server; those reaching a binding the flow left are dropped as stale). */
static void *reader_task(void *arg)
{
    reader_arg a = *(reader_arg *)arg;
    free(arg);
    relay *r = a.r;
    uint8_t *bufs = malloc((size_t)RECV_BATCH * DGRAM_CAP);
    vega_udp_msg *msgs = calloc(RECV_BATCH, sizeof *msgs);
    for (;;) {
        if (!bufs || !msgs) {
            break;
        }
        for (size_t i = 0; i < RECV_BATCH; i++) {
            msgs[i].buf = bufs + i * DGRAM_CAP;
            msgs[i].cap = DGRAM_CAP;
        }
        int n = vega_udp_recv_batch(a.s, msgs, RECV_BATCH, VEGA_DEADLINE_NEVER);
        if (n == -ECANCELED) {
            break;
        }
        if (n < 0) { /* e.g. an ICMP error reported late: keep reading */
            if (vega_sleep_ms(1) == -ECANCELED) {
                break;
            }
            continue;
        }
        for (int i = 0; i < n; i++) {
            const uint8_t *d = msgs[i].buf;
            if (msgs[i].len == 0) {
                continue;
            }
            if (!a.f) {
                flow *f = flow_of(r, &msgs[i].addr);
                if (f) {
                    on_datagram(r, f, DIR_TO_SERVER, d, msgs[i].len, msgs[i].ecn);
                } else {
                    r->stats[DIR_TO_SERVER].in++;
                    r->stats[DIR_TO_SERVER].drop[DROP_LIMIT]++;
                }
            } else {
                count_binding(a.f, a.s);
                if (a.s != a.f->up[a.f->nup - 1]) { /* a binding the flow left: NAT forgot it */
                    r->stats[DIR_TO_CLIENT].in++;
                    r->stats[DIR_TO_CLIENT].drop[DROP_STALE]++;
                } else {
                    on_datagram(r, a.f, DIR_TO_CLIENT, d, msgs[i].len, msgs[i].ecn);
                }
            }
        }
    }
    free(bufs);
    free(msgs);
    return NULL;
}

/* ---- start, stop, report ------------------------------------------------------------------ */

static void print_flows(relay *r)
{
    for (unsigned i = 0; i < r->nflows; i++) {
        flow *f = r->flows[i];
        char c[VEGA_ADDR_STRLEN], u[VEGA_ADDR_STRLEN];
        vega_addr_format(&f->client, c, sizeof c);
        printf("relay: flow %u client=%s bindings=", f->id, c);
        for (unsigned k = 0; k < f->nup; k++) {
            vega_addr a;
            if (vega_sock_local_addr(f->up[k], &a) == 0 && vega_addr_format(&a, u, sizeof u) > 0) {
                printf("%s%s/%" PRIu64, k ? "," : "", u, f->up_in[k]);
            }
        }
        const relay_census *up = &f->census[DIR_TO_SERVER], *dn = &f->census[DIR_TO_CLIENT];
        printf(" to_server=%" PRIu64 "/%" PRIu64 " to_client=%" PRIu64 "/%" PRIu64
               " 0rtt_to_server=%" PRIu64 " short_to_server=%" PRIu64 " retry_to_client=%" PRIu64
               " vn_to_client=%" PRIu64 " hs_bytes_to_client=%" PRIu64 " version=0x%08" PRIx32,
               f->in[0], f->fwd[0], f->in[1], f->fwd[1], up->pk[PK_0RTT], up->pk[PK_SHORT],
               dn->pk[PK_RETRY], dn->pk[PK_VN], dn->handshake_bytes,
               dn->nversions ? dn->versions[dn->nversions - 1] : 0u);
        if (r->amp_check) {
            printf(" amp_in=%" PRIu64 " amp_out=%" PRIu64 " amp=%s amp_worst_excess=%" PRIu64,
                   f->amp_in, f->amp_out, f->amp_exceeded ? "exceeded" : "ok", f->amp_worst_excess);
        }
        printf("\n");
    }
}

static void *main_task(void *arg)
{
    relay *r = arg;
    int rc = vega_group_new(&r->group);
    if (rc == 0) {
        rc = vega_udp_bind(&r->lsock, &r->listen, 0);
    }
    if (rc < 0) {
        fprintf(stderr, "relay: listen: %s\n", vega_strerror(rc));
        return (void *)1;
    }
    (void)vega_udp_set_features(r->lsock, VEGA_UDP_ECN, true);
    vega_notify_init(&r->wake);
    reader_arg *ra = malloc(sizeof *ra);
    if (!ra) {
        return (void *)1;
    }
    *ra = (reader_arg){.r = r, .f = NULL, .s = r->lsock};
    if (vega_group_spawn(r->group, reader_task, ra) < 0 ||
        vega_group_spawn(r->group, scheduler_task, r) < 0) {
        fprintf(stderr, "relay: cannot start its tasks\n");
        return (void *)1;
    }
    vega_addr la;
    char ls[VEGA_ADDR_STRLEN], us[VEGA_ADDR_STRLEN];
    vega_sock_local_addr(r->lsock, &la);
    vega_addr_format(&la, ls, sizeof ls);
    vega_addr_format(&r->upstream, us, sizeof us);
    printf("relay: listening on %s upstream %s seed %" PRIu64 "\n", ls, us, r->seed);
    fflush(stdout);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int signo = 0;
    rc = vega_signal_wait(&set, &signo, vega_deadline_in_ms(r->timeout_s * 1000u));
    vega_group_free(r->group); /* cancels every reader, the scheduler and the rebinders */
    if (r->stats_line) {
        relay_stats_print(stdout, "to_server", &r->stats[DIR_TO_SERVER]);
        relay_stats_print(stdout, "to_client", &r->stats[DIR_TO_CLIENT]);
        print_flows(r);
        printf("relay: flows=%u queued_at_exit=%zu send_errors=%" PRIu64 " seed=%" PRIu64
               " end=%s\n",
               r->nflows, r->hn, r->send_errors, r->seed, rc == 0 ? "signal" : "timeout");
    }
    fflush(stdout);
    while (r->hn) {
        free(heap_pop(r));
    }
    for (unsigned i = 0; i < r->nflows; i++) {
        for (unsigned k = 0; k < r->flows[i]->nup; k++) {
            vega_sock_close(r->flows[i]->up[k]);
        }
        free(r->flows[i]);
    }
    vega_sock_close(r->lsock);
    vega_notify_fini(&r->wake);
    return NULL;
}

static void usage(FILE *f)
{
    fputs(
        "Usage: relay --upstream ADDR:PORT [options]\n"
        "A UDP relay for QUIC interop tests: clients send to --listen, each client gets its own\n"
        "upstream socket to --upstream, and each direction can be impaired. Options without a\n"
        "prefix apply to both directions; --to-server-X and --to-client-X to one.\n"
        "\n"
        "  --listen ADDR:PORT        where clients send (default 127.0.0.1:0; printed at start)\n"
        "  --upstream ADDR:PORT      the server\n"
        "  --upstream-bind IP        source address of the upstream sockets (default: loopback)\n"
        "  --seed N                  the PRNG seed: the same seed makes the same decisions\n"
        "  --timeout-s N             exit after N seconds (default 60); SIGINT/SIGTERM too\n"
        "  --stats                   counters per direction and per flow at exit\n"
        "  --delay-ms N              one-way delay\n"
        "  --jitter-ms N             plus 0..N ms at random (reorders unless --jitter-keep-order)\n"
        "  --jitter-keep-order       never release a datagram before an earlier one\n"
        "  --loss PCT                a loss event starts at each datagram with this chance\n"
        "  --loss-burst N            datagrams one loss event drops (default 1)\n"
        "  --reorder PCT             hold this share back by --reorder-ms (default 10) more\n"
        "  --dup PCT                 send this share twice\n"
        "  --corrupt PCT             flip one random bit of this share's payload\n"
        "  --drop-first N            drop each flow's first N datagrams (handshake loss)\n"
        "  --blackhole-after-ms N    drop everything N ms after the first datagram ...\n"
        "  --blackhole-for-ms N      ... for N ms ...\n"
        "  --blackhole-every-ms N    ... and again every N ms (default: once)\n"
        "  --rate-kbps N             a link of N kbit/s ...\n"
        "  --queue-kb N              ... whose queue holds N KiB (default 64; tail drop)\n"
        "  --rebind-port-after-ms N  N ms into each flow, move it to a new upstream port (NAT\n"
        "                            rebinding); the old binding drops what reaches it\n"
        "  --rebind-addr-after-ms N  the same with a new source address (--rebind-addr)\n"
        "  --rebind-addr IP          the address for that (default 127.0.0.2)\n"
        "  --rebind-every-ms N       rebind again every N ms (default: once)\n"
        "  --amp-check               per flow: bytes from the server before the client proved\n"
        "                            its address (a Handshake or 1-RTT packet), against 3x the\n"
        "                            bytes it received (RFC 9000 section 8.1)\n"
        "  --max-flows N             clients at most (default 256)\n"
        "  --max-queued N            datagrams held at most (default 100000)\n"
        "  --self-test               check the decisions and exit\n",
        f);
}

static int parse_num(const char *name, const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *v == '-' || *end || errno || x > max) {
        fprintf(stderr, "relay: --%s wants a number up to %" PRIu64 "\n", name, max);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_addr(const char *name, const char *v, vega_addr *out, bool ip_only)
{
    int rc = v ? (ip_only ? vega_addr_from_ip(out, v, 0) : vega_addr_parse(out, v, NULL)) : -EINVAL;
    if (rc < 0 || vega_addr_family(out) == AF_UNIX) {
        fprintf(stderr, "relay: --%s: bad address '%s'\n", name, v ? v : "");
        return -1;
    }
    return 0;
}

/* The options that are not impairments; 1 = taken with its value, 2 = a flag, 0 = unknown. */
static int parse_main_opt(relay *r, const char *name, const char *v)
{
    uint64_t x = 0;
    const uint64_t day_ms = 86400000u;
    if (strcmp(name, "stats") == 0 || strcmp(name, "amp-check") == 0) {
        *(name[0] == 's' ? &r->stats_line : &r->amp_check) = true;
        return 2;
    }
    if (strcmp(name, "listen") == 0) {
        return parse_addr(name, v, &r->listen, false) < 0 ? -1 : 1;
    }
    if (strcmp(name, "upstream") == 0) {
        return parse_addr(name, v, &r->upstream, false) < 0 ? -1 : 1;
    }
    if (strcmp(name, "upstream-bind") == 0) {
        return parse_addr(name, v, &r->upstream_bind, true) < 0 ? -1 : 1;
    }
    if (strcmp(name, "rebind-addr") == 0) {
        r->have_rebind_addr = true;
        return parse_addr(name, v, &r->rebind_addr, true) < 0 ? -1 : 1;
    }
    static const struct {
        const char *name;
        size_t off;
        uint64_t max, scale;
    } nums[] = {
        {"seed", offsetof(relay, seed), UINT64_MAX, 1},
        {"timeout-s", offsetof(relay, timeout_s), 86400u, 1},
        {"rebind-port-after-ms", offsetof(relay, rebind_port_after_ns), day_ms, 1000000u},
        {"rebind-addr-after-ms", offsetof(relay, rebind_addr_after_ns), day_ms, 1000000u},
        {"rebind-every-ms", offsetof(relay, rebind_every_ns), day_ms, 1000000u},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if (strcmp(name, nums[i].name) == 0) {
            if (parse_num(name, v, nums[i].max, &x) < 0) {
                return -1;
            }
            memcpy((char *)r + nums[i].off, &(uint64_t){x * nums[i].scale}, sizeof(uint64_t));
            return 1;
        }
    }
    if (strcmp(name, "max-flows") == 0 || strcmp(name, "max-queued") == 0) {
        if (parse_num(name, v, 1000000u, &x) < 0 || x == 0) {
            return -1;
        }
        if (name[4] == 'f') {
            r->max_flows = (unsigned)x;
        } else {
            r->max_queued = (size_t)x;
        }
        return 1;
    }
    return 0;
}

static int parse_args(relay *r, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "relay: unexpected argument '%s' (see --help)\n", a);
            return -1;
        }
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t nl = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (nl >= sizeof name) {
            fprintf(stderr, "relay: unknown option '%s'\n", a);
            return -1;
        }
        memcpy(name, a + 2, nl);
        name[nl] = '\0';
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        int rc = parse_main_opt(r, name, v);
        if (rc == 0) {
            rc = relay_parse_impairment(r->cfg, name, v);
        }
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            fprintf(stderr, "relay: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        if (rc == 1 && !eq) {
            i++;
        }
    }
    if (vega_addr_family(&r->upstream) == AF_UNSPEC) {
        fprintf(stderr, "relay: --upstream ADDR:PORT is required\n");
        return -1;
    }
    bool v6 = vega_addr_family(&r->upstream) == AF_INET6;
    if (vega_addr_family(&r->upstream_bind) == AF_UNSPEC) {
        vega_addr_from_ip(&r->upstream_bind, v6 ? "::1" : "127.0.0.1", 0);
    }
    if (!r->have_rebind_addr) {
        vega_addr_from_ip(&r->rebind_addr, "127.0.0.2", 0);
    }
    if (vega_addr_family(&r->listen) == AF_UNSPEC) {
        vega_addr_from_ip(&r->listen, v6 ? "::1" : "127.0.0.1", 0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static relay r; /* large and zeroed; one per process */
    relay_cfg_init(r.cfg);
    r.timeout_s = 60;
    r.max_flows = 256;
    r.max_queued = 100000;
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--self-test") == 0) {
        return relay_self_test();
    }
    if (parse_args(&r, argc, argv) < 0) {
        return 2;
    }
    for (int d = 0; d < DIR_COUNT; d++) {
        relay_dir_seed(&r.st[d], r.seed, d);
    }
    r.flows = calloc(r.max_flows, sizeof *r.flows);
    r.heap = calloc(r.max_queued + 2, sizeof *r.heap);
    if (!r.flows || !r.heap) {
        fprintf(stderr, "relay: out of memory\n");
        return 1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    vega_signal_block(&set);

    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.stack_size = 256 * 1024;
    vega_rt *rt;
    int rc = vega_rt_new(&rt, &o);
    if (rc < 0) {
        fprintf(stderr, "relay: runtime: %s\n", vega_strerror(rc));
        return 1;
    }
    void *res = NULL;
    rc = vega_rt_block_on(rt, main_task, &r, &res);
    vega_rt_free(rt);
    free(r.flows);
    free(r.heap);
    return rc < 0 || res ? 1 : 0;
}
