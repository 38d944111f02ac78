/* SPDX-License-Identifier: MIT */
/* --metrics-log with --shards: every shard copies its cumulative runtime counters and its
 * request count to its slot of a region the supervisor mapped (MAP_SHARED) before the first
 * fork, every 100 ms and once more when it has stopped; the supervisor (vega_shard_opts.on_tick)
 * turns them into deltas and appends one line per interval: the sum over the shards, and each
 * shard's own deltas in "per_shard". A slot is freed only by the supervisor, after it read the
 * shard's last counters (a clean stop: its final copy; a shard that died: its last copy), so the
 * deltas add up to what the shards did, less at most a killed shard's last 100 ms. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* Slots per shard: serving, reloading, draining (the supervisor's bound), and one spare for a
 * shard that ended and whose slot the supervisor has not freed yet (it looks every 100 ms). */
#define SL_SLOTS_PER_SHARD 4u

struct sl_slot {
    _Atomic int owner;     /* the shard's pid; 0: free (set by the shard, cleared by the sup.) */
    _Atomic uint32_t seq;  /* odd while the shard writes */
    _Atomic uint32_t done; /* the shard stopped: these are its final counters */
    unsigned index, generation;
    uint64_t requests;
    vega_rt_counters c; /* cumulative since the shard's runtime started */
};

/* One shard's deltas for the line being built (the supervisor's own memory). */
struct sl_entry {
    int pid;
    unsigned index, generation;
    bool ended;
    uint64_t requests;
    vega_rt_counters d;
};

/* Set in a shard process (serve.h). Defined here, not in shards.c, because the fuzz target
 * builds vega-serve's sources without shards.c and main.c. */
vega_shard *serve_shard;

static struct sl_slot *S;
static unsigned S_n;
static int my_slot = -1;

/* supervisor */
static int log_fd = -1;
static struct {
    int pid;
    uint64_t requests;
    vega_rt_counters c;
} * seen;                      /* per slot: what the last line (or the end) took from it */
static struct sl_entry *ended; /* shards that ended since the last line */
static struct sl_entry *live;  /* the live shards' deltas, for the line being built */
static unsigned n_ended;
static uint64_t unlisted_requests; /* ended shards beyond `ended`'s room: in the sum only */
static vega_rt_counters unlisted;
static unsigned n_unlisted;
static int64_t last_line_ms, next_line_ms;
static unsigned every_ms;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int serve_shard_log_init(unsigned shards, unsigned every)
{
    log_fd = open(serve_o.metrics_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        cli_err(NULL, "--metrics-log: %s: %s", serve_o.metrics_log, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    S_n = shards * SL_SLOTS_PER_SHARD;
    S = mmap(NULL, S_n * sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    seen = calloc(S_n, sizeof *seen);
    ended = calloc(S_n, sizeof *ended);
    live = calloc(S_n, sizeof *live);
    if (S == MAP_FAILED || !seen || !ended || !live) {
        cli_err_code("--metrics-log", -ENOMEM);
        return CLI_EXIT_NET;
    }
    every_ms = every;
    last_line_ms = mono_ms();
    next_line_ms = last_line_ms + every;
    return 0;
}

bool serve_shard_log_on(void)
{
    return S != NULL && S != MAP_FAILED;
}

/* ---- the shard's side ------------------------------------------------------------------------ */

void serve_shard_log_attach(void)
{
    int me = (int)getpid();
    for (unsigned k = 0; k < S_n && my_slot < 0; k++) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(&S[k].owner, &free_, me))
            my_slot = (int)k;
    }
    if (my_slot < 0)
        cli_err(NULL, "--metrics-log: no free slot for this shard: its counters are not logged");
}

void serve_shard_log_publish(const vega_rt *rt, uint64_t requests, bool final)
{
    if (my_slot < 0)
        return;
    struct sl_slot *s = &S[my_slot];
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->index = vega_shard_index(serve_shard);
    s->generation = vega_shard_generation(serve_shard);
    s->requests = requests;
    vega_rt_counters_read(rt, &s->c);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
    if (final)
        atomic_store_explicit(&s->done, 1, memory_order_release);
}

/* ---- the supervisor's side ------------------------------------------------------------------- */

/* A consistent copy of slot k, or false (being written, or torn by a death mid-write). */
static bool read_slot(unsigned k, struct sl_slot *out)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t a = atomic_load_explicit(&S[k].seq, memory_order_acquire);
        if (a & 1) {
            sched_yield();
            continue;
        }
        out->index = S[k].index;
        out->generation = S[k].generation;
        out->requests = S[k].requests;
        memcpy(&out->c, &S[k].c, sizeof out->c);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&S[k].seq, memory_order_relaxed) == a)
            return true;
    }
    return false;
}

/* Slot k's deltas since the last look into e (pid: its owner). */
static void take(unsigned k, int pid, struct sl_entry *e)
{
    if (seen[k].pid != pid) { /* a new shard in the slot: it started from zero */
        memset(&seen[k], 0, sizeof seen[k]);
        seen[k].pid = pid;
    }
    static struct sl_slot cur;
    *e = (struct sl_entry){.pid = pid};
    if (!read_slot(k, &cur)) { /* nothing new from it this time */
        e->index = S[k].index;
        e->generation = S[k].generation;
        return;
    }
    e->index = cur.index;
    e->generation = cur.generation;
    e->requests = cur.requests >= seen[k].requests ? cur.requests - seen[k].requests : 0;
    vega_rt_counters_delta(&seen[k].c, &cur.c, &e->d);
    seen[k].requests = cur.requests;
    seen[k].c = cur.c;
}

static void add_worker(vega_worker_metrics *a, const vega_worker_metrics *b)
{
    a->spawned += b->spawned;
    a->polls += b->polls;
    a->steals += b->steals;
    a->steal_ops += b->steal_ops;
    a->parks += b->parks;
    a->unparks += b->unparks;
    a->injects += b->injects;
    a->budget_yields += b->budget_yields;
    a->lifo_hits += b->lifo_hits;
    a->overflows += b->overflows;
    a->local_queue += b->local_queue;
    a->timers_fired += b->timers_fired;
    a->io_ops += b->io_ops;
    a->io_completions += b->io_completions;
}

/* A shard that is gone holds no tasks and no queue: its gauges leave the sums. */
static void zero_gauges(vega_rt_counters *d)
{
    d->live_tasks = 0;
    d->sum.local_queue = 0;
    for (unsigned i = 0; i < VEGA_RT_COUNTERS_WORKERS; i++)
        d->worker[i].local_queue = 0;
}

/* Frees slot k (its last counters taken): zeroed before the owner is, so that the next shard's
 * first look starts from zero. */
static void release(unsigned k)
{
    atomic_store_explicit(&S[k].done, 0, memory_order_relaxed);
    atomic_store_explicit(&S[k].seq, 0, memory_order_relaxed);
    S[k].requests = 0;
    memset(&S[k].c, 0, sizeof S[k].c);
    memset(&seen[k], 0, sizeof seen[k]);
    atomic_store_explicit(&S[k].owner, 0, memory_order_release);
}

/* Every ended shard's last deltas into `ended` (or the unlisted sum); its slot freed. */
static void collect_ended(void)
{
    for (unsigned k = 0; k < S_n; k++) {
        int pid = atomic_load_explicit(&S[k].owner, memory_order_acquire);
        if (!pid)
            continue;
        bool done = atomic_load_explicit(&S[k].done, memory_order_acquire);
        if (!done && !(kill(pid, 0) < 0 && errno == ESRCH))
            continue;
        struct sl_entry e;
        take(k, pid, &e);
        zero_gauges(&e.d);
        e.ended = true;
        if (n_ended < S_n) {
            ended[n_ended++] = e;
        } else {
            unlisted_requests += e.requests;
            add_worker(&unlisted.sum, &e.d.sum);
            unlisted.blocking_jobs += e.d.blocking_jobs;
            n_unlisted++;
        }
        release(k);
    }
}

static void json_shard(FILE *f, const struct sl_entry *e)
{
    const vega_rt_counters *d = &e->d;
    fprintf(f,
            "{\"shard\":%u,\"generation\":%u,\"pid\":%d,\"ended\":%s,\"workers\":%u,"
            "\"live_tasks\":%" PRIu64 ",\"blocking_jobs\":%" PRIu64 ",\"requests\":%" PRIu64 ",",
            e->index, e->generation, e->pid, e->ended ? "true" : "false", d->workers, d->live_tasks,
            d->blocking_jobs, e->requests);
    serve_json_counters(f, d);
    fputc('}', f);
}

/* The line for the interval that ends now: the live shards' deltas, the ended ones'. */
static void write_line(void)
{
    unsigned n_live = 0;
    for (unsigned k = 0; k < S_n; k++) {
        int pid = atomic_load_explicit(&S[k].owner, memory_order_acquire);
        if (pid)
            take(k, pid, &live[n_live++]);
    }
    vega_rt_counters tot = {0};
    uint64_t requests = unlisted_requests;
    add_worker(&tot.sum, &unlisted.sum);
    tot.blocking_jobs = unlisted.blocking_jobs;
    for (unsigned pass = 0; pass < 2; pass++) {
        const struct sl_entry *v = pass ? ended : live;
        for (unsigned i = 0; i < (pass ? n_ended : n_live); i++) {
            add_worker(&tot.sum, &v[i].d.sum);
            tot.blocking_jobs += v[i].d.blocking_jobs;
            tot.live_tasks += v[i].d.live_tasks;
            tot.workers += pass ? 0 : v[i].d.workers; /* the live shards' workers */
            requests += v[i].requests;
        }
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return; /* no memory: this interval's counts go to the next line */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    int64_t t = mono_ms();
    fprintf(f,
            "{\"time\":\"%s.%03ldZ\",\"interval_ms\":%" PRId64
            ",\"shards\":%u,\"workers\":%u,\"live_tasks\":%" PRIu64 ",\"blocking_jobs\":%" PRIu64
            ",\"requests\":%" PRIu64 ",",
            when, ts.tv_nsec / 1000000, t - last_line_ms, n_live, tot.workers, tot.live_tasks,
            tot.blocking_jobs, requests);
    serve_json_worker(f, &tot.sum);
    fputs(",\"per_shard\":[", f);
    for (unsigned i = 0; i < n_live + n_ended; i++) {
        if (i)
            fputc(',', f);
        json_shard(f, i < n_live ? &live[i] : &ended[i - n_live]);
    }
    fprintf(f, "],\"ended_unlisted\":%u}\n", n_unlisted);
    if (fclose(f) == 0) {
        ssize_t w = write(log_fd, buf, len); /* one write: lines never interleave */
        (void)w;
    }
    free(buf);
    n_ended = 0;
    n_unlisted = 0;
    unlisted_requests = 0;
    memset(&unlisted, 0, sizeof unlisted);
    last_line_ms = t;
}

void serve_shard_log_tick(void *arg)
{
    (void)arg;
    if (log_fd < 0)
        return;
    collect_ended();
    int64_t t = mono_ms();
    if (t < next_line_ms)
        return;
    next_line_ms += every_ms;
    if (next_line_ms <= t)
        next_line_ms = t + every_ms;
    write_line();
}

void serve_shard_log_finish(void)
{
    if (log_fd < 0)
        return;
    collect_ended();
    write_line(); /* the last, partial interval: every shard has ended */
    close(log_fd);
    log_fd = -1;
}
