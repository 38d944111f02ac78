/* SPDX-License-Identifier: MIT */
/* lib/shard: the supervisor run with tiny shard functions (no runtime, no sockets). The test
 * process is the supervisor; what it decided is read from its events (the restart delays it
 * chose, who it killed, what it reaped), never from how long anything took. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vega/shard.h>

#include "vtest.h"

#define MAX_EV     256
#define MAX_STARTS 64
/* A shard waits at most this many 20 ms steps (20 s) for anything, then gives up. */
#define SHARD_STEPS 1000

/* Per test: how many times each place was started (counted by the shards themselves, in memory
 * shared across the fork) and a flag the supervisor side raises for the shards. */
struct shared {
    _Atomic unsigned starts[4];
};
static struct shared *sh;

static vega_shard_event evs[MAX_EV];
static unsigned nev;
static void (*hook)(const vega_shard_event *ev);
static bool term_sent, hup_sent;

static void record(const vega_shard_event *ev, void *user)
{
    (void)user;
    if (nev < MAX_EV)
        evs[nev++] = *ev;
    char line[256];
    vega_shard_event_format(ev, line, sizeof line);
    printf("event: %s\n", line);
    if (hook)
        hook(ev);
}

static void send_term(void)
{
    if (!term_sent) {
        term_sent = true;
        raise(SIGTERM); /* blocked in the supervisor: its signalfd reads it */
    }
}

static void send_hup(void)
{
    if (!hup_sent) {
        hup_sent = true;
        raise(SIGHUP);
    }
}

static unsigned count(vega_shard_event_kind kind)
{
    unsigned n = 0;
    for (unsigned i = 0; i < nev; i++)
        n += evs[i].kind == kind;
    return n;
}

static unsigned count_gen(vega_shard_event_kind kind, unsigned gen)
{
    unsigned n = 0;
    for (unsigned i = 0; i < nev; i++)
        n += evs[i].kind == kind && evs[i].generation == gen;
    return n;
}

/* The shard's side: heartbeat (when beat) and wait for SIGTERM, blocked as in the caller. */
static int until_term(vega_shard *s, bool beat)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    for (int i = 0; i < SHARD_STEPS; i++) {
        if (beat)
            vega_shard_heartbeat(s);
        struct timespec ts = {0, 20 * 1000 * 1000};
        if (sigtimedwait(&set, NULL, &ts) == SIGTERM)
            return 0;
    }
    return 3;
}

/* Heartbeats for about ms (at least ms: each step sleeps 20 ms or more). */
static void beat_for(vega_shard *s, unsigned ms)
{
    for (unsigned t = 0; t < ms; t += 20) {
        vega_shard_heartbeat(s);
        struct timespec ts = {0, 20 * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

static unsigned start_count(vega_shard *s)
{
    return atomic_fetch_add(&sh->starts[vega_shard_index(s)], 1) + 1;
}

/* Runs the supervisor with o (shard_main already set) and checks that every shard it started
 * was reaped by it. Returns vega_shard_run's value. */
static int run(vega_shard_opts *o, void (*h)(const vega_shard_event *))
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    VCHECK(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    nev = 0;
    hook = h;
    o->on_event = record;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    VCHECK_EQ(sigprocmask(SIG_BLOCK, &set, &old), 0); /* the shards wait for it */
    alarm(60); /* a supervisor that never stops ends the test */
    int r = vega_shard_run(o);
    alarm(0);
    VCHECK_EQ(sigprocmask(SIG_SETMASK, &old, NULL), 0);
    unsigned started = 0, ended = 0;
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_STARTED) {
            started++;
            int st;
            errno = 0;
            VCHECK_EQ(waitpid(evs[i].pid, &st, WNOHANG), -1); /* reaped already */
            VCHECK_EQ(errno, ECHILD);
        }
        ended += evs[i].kind == VEGA_SHARD_EV_EXITED || evs[i].kind == VEGA_SHARD_EV_DRAINED;
    }
    VCHECK_EQ(ended, started); /* each one's end was seen */
    return r;
}

/* ---- N shards start, report ready, drain on SIGTERM ---------------------------------------- */

static int main_serve(vega_shard *s, void *u)
{
    (void)u;
    vega_shard_ready(s);
    return until_term(s, true);
}

static int main_count_in_region(vega_shard *s, void *u); /* below, with the region's tests */
static size_t region_len = 4096; /* what main_count_in_region expects (set before the fork) */

static void hook_term_when_3_ready(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 3)
        send_term();
}

VTEST(start_ready_drain)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 3;
    o.shard_main = main_serve;
    VCHECK_EQ(run(&o, hook_term_when_3_ready), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_STARTED), 3);
    VCHECK_EQ(count(VEGA_SHARD_EV_READY), 3);
    bool seen[3] = {false};
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_STARTED) {
            VCHECK(evs[i].index < 3);
            VCHECK(!seen[evs[i].index]);
            seen[evs[i].index] = true;
            VCHECK_EQ(evs[i].generation, 1);
        }
    }
    VCHECK_EQ(count(VEGA_SHARD_EV_STOPPING), 1);
    /* Each shard returned 0 from its own drain: no SIGKILL, no restart. */
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 3);
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED)
            VCHECK(evs[i].code == 0 && evs[i].signal == 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_KILLED), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_RESTART), 0);
}

/* ---- a shard that ignores SIGTERM is killed after grace_ms and reaped ------------------------ */

static int main_stubborn(vega_shard *s, void *u)
{
    (void)u;
    vega_shard_ready(s);
    beat_for(s, SHARD_STEPS * 20); /* never looks at SIGTERM (blocked) */
    return 3;
}

static void hook_term_when_2_ready(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 2)
        send_term();
}

VTEST(stop_kills_after_grace)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.grace_ms = 100;
    o.shard_main = main_stubborn;
    VCHECK_EQ(run(&o, hook_term_when_2_ready), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_KILLED), 2);
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 2);
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED)
            VCHECK(evs[i].code == -1 && evs[i].signal == SIGKILL);
}

/* ---- crashes: restarted, the delay doubles up to backoff_max_ms ------------------------------ */

/* Starts 1..4 crash right after ready (exit 1, SIGKILL, exit 7, exit 1); the 5th serves. */
static int main_crashy(vega_shard *s, void *u)
{
    (void)u;
    unsigned n = start_count(s);
    vega_shard_ready(s);
    switch (n) {
    case 1:
    case 4:
        return 1;
    case 2:
        raise(SIGKILL);
        return 9;
    case 3:
        return 7;
    default:
        return until_term(s, true);
    }
}

static void hook_term_on_5th_ready(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_STARTED) == 5)
        send_term();
}

VTEST(crash_restart_backoff_doubles)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.backoff_min_ms = 10;
    o.backoff_max_ms = 40;
    o.healthy_ms = 600000; /* never reached here */
    o.shard_main = main_crashy;
    VCHECK_EQ(run(&o, hook_term_on_5th_ready), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_STARTED), 5);
    /* The crashes, in order, with their status or signal. */
    const int codes[4] = {1, -1, 7, 1}, sigs[4] = {0, SIGKILL, 0, 0};
    const unsigned delays[4] = {10, 20, 40, 40};
    unsigned ne = 0, nr = 0;
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_EXITED) {
            VCHECK(ne < 4);
            VCHECK_EQ(evs[i].code, codes[ne]);
            VCHECK_EQ(evs[i].signal, sigs[ne]);
            ne++;
        } else if (evs[i].kind == VEGA_SHARD_EV_RESTART) {
            VCHECK(nr < 4);
            VCHECK_EQ(nr + 1, ne); /* each restart follows its crash */
            VCHECK_EQ(evs[i].delay_ms, delays[nr]);
            VCHECK_EQ(evs[i].index, 0);
            nr++;
        }
    }
    VCHECK_EQ(ne, 4);
    VCHECK_EQ(nr, 4);
    /* The 5th one served and drained on SIGTERM. */
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 1);
}

/* ---- the backoff goes back to backoff_min_ms after a shard stayed up healthy_ms -------------- */

#define HEALTHY_MS 1000 /* quick crashes must come in under it, even on a loaded machine */

/* Starts 1, 2, 4 crash at once; start 3 runs 2 * HEALTHY_MS (at least) then crashes; 5 serves. */
static int main_healthy_then_crash(vega_shard *s, void *u)
{
    (void)u;
    unsigned n = start_count(s);
    vega_shard_ready(s);
    if (n == 3)
        beat_for(s, 2 * HEALTHY_MS);
    if (n <= 4)
        return 1;
    return until_term(s, true);
}

VTEST(backoff_resets_after_healthy)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.backoff_min_ms = 10;
    o.backoff_max_ms = 10000;
    o.healthy_ms = HEALTHY_MS;
    o.shard_main = main_healthy_then_crash;
    VCHECK_EQ(run(&o, hook_term_on_5th_ready), 0);
    /* 10, 20, then start 3 lived past healthy_ms: 10 again, then 20. */
    const unsigned delays[4] = {10, 20, 10, 20};
    unsigned nr = 0;
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_RESTART) {
            VCHECK(nr < 4);
            VCHECK_EQ(evs[i].delay_ms, delays[nr]);
            nr++;
        }
    }
    VCHECK_EQ(nr, 4);
}

/* ---- the watchdog: a shard whose heartbeat stops is SIGKILLed and replaced ------------------- */

static int main_hangs_first(vega_shard *s, void *u)
{
    (void)u;
    unsigned n = start_count(s);
    vega_shard_ready(s);
    return until_term(s, n > 1); /* the first never beats again */
}

static void hook_term_on_2nd_ready(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 2)
        send_term();
}

VTEST(watchdog_replaces_silent_shard)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.heartbeat_timeout_ms = 1000; /* the live shard beats every 20 ms */
    o.backoff_min_ms = 10;
    o.shard_main = main_hangs_first;
    VCHECK_EQ(run(&o, hook_term_on_2nd_ready), 0);
    int first = 0, second = 0;
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_STARTED)
            *(first ? &second : &first) = evs[i].pid;
    VCHECK(first > 0 && second > 0 && first != second);
    /* In order: HUNG(first), EXITED(first, SIGKILL), RESTART(backoff_min), STARTED(second). */
    unsigned i = 0;
    while (i < nev && evs[i].kind != VEGA_SHARD_EV_HUNG)
        i++;
    VCHECK(i < nev);
    VCHECK_EQ(evs[i].pid, first);
    while (i < nev && evs[i].kind != VEGA_SHARD_EV_EXITED)
        i++;
    VCHECK(i < nev);
    VCHECK_EQ(evs[i].pid, first);
    VCHECK_EQ(evs[i].signal, SIGKILL);
    while (i < nev && evs[i].kind != VEGA_SHARD_EV_RESTART)
        i++;
    VCHECK(i < nev);
    VCHECK_EQ(evs[i].delay_ms, 10);
    while (i < nev && evs[i].kind != VEGA_SHARD_EV_STARTED)
        i++;
    VCHECK(i < nev);
    VCHECK_EQ(evs[i].pid, second);
    VCHECK_EQ(count(VEGA_SHARD_EV_HUNG), 1);
}

/* ---- reload ---------------------------------------------------------------------------------- */

/* Generation 1 serves; generation 2 does what reload_mode says. */
enum {
    RELOAD_OK,
    RELOAD_EXITS,
    RELOAD_NEVER_READY
};
static int reload_mode;

static int main_reload(vega_shard *s, void *u)
{
    (void)u;
    if (vega_shard_generation(s) >= 2) {
        if (reload_mode == RELOAD_EXITS)
            return 5; /* e.g. a certificate that no longer loads */
        if (reload_mode == RELOAD_NEVER_READY)
            return until_term(s, true);
    }
    vega_shard_ready(s);
    return until_term(s, true);
}

/* HUP once generation 1 is ready; TERM once the reload succeeded or failed (and, for a failed
 * one, after its shards are gone). */
static void hook_reload(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count_gen(VEGA_SHARD_EV_READY, 1) == 2)
        send_hup();
    if (ev->kind == VEGA_SHARD_EV_RELOADED)
        send_term();
    if (count(VEGA_SHARD_EV_RELOAD_FAILED) &&
        count_gen(VEGA_SHARD_EV_EXITED, 2) + count_gen(VEGA_SHARD_EV_DRAINED, 2) == 2)
        send_term();
}

/* Index of the first event of kind (of generation gen when gen != 0), nev if none. */
static unsigned first(vega_shard_event_kind kind, unsigned gen)
{
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == kind && (!gen || evs[i].generation == gen))
            return i;
    return nev;
}

/* After a failed reload: generation 1 was never asked to stop before SIGTERM, and all its
 * shards drained on that SIGTERM with status 0. */
static void check_old_generation_kept(void)
{
    unsigned stop = first(VEGA_SHARD_EV_STOPPING, 0);
    VCHECK(stop < nev);
    VCHECK(first(VEGA_SHARD_EV_RELOAD_FAILED, 2) < stop);
    VCHECK_EQ(count(VEGA_SHARD_EV_RELOADED), 0);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_STARTED, 1), 2);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_EXITED, 1), 0);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_DRAINED, 1), 2);
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED && evs[i].generation == 1) {
            VCHECK(i > stop);
            VCHECK(evs[i].code == 0 && evs[i].signal == 0);
        }
    }
    VCHECK_EQ(count(VEGA_SHARD_EV_RESTART), 0); /* a failed new shard is not restarted */
}

VTEST(reload_replaces_generation)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.shard_main = main_reload;
    reload_mode = RELOAD_OK;
    VCHECK_EQ(run(&o, hook_reload), 0);
    unsigned reloaded = first(VEGA_SHARD_EV_RELOADED, 2);
    VCHECK(reloaded < nev);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_READY, 2), 2);
    /* Generation 1 drained (status 0) only after generation 2 was all ready. */
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_DRAINED, 1), 2);
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].generation == 1 && evs[i].kind == VEGA_SHARD_EV_DRAINED) {
            VCHECK(i > reloaded);
            VCHECK(evs[i].code == 0 && evs[i].signal == 0);
        }
        if (evs[i].generation == 2 && evs[i].kind == VEGA_SHARD_EV_READY)
            VCHECK(i < reloaded);
    }
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_DRAINED, 2), 2); /* on SIGTERM */
}

VTEST(reload_new_shard_exits_keeps_old)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.shard_main = main_reload;
    reload_mode = RELOAD_EXITS;
    VCHECK_EQ(run(&o, hook_reload), 0);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_RELOAD_FAILED, 2), 1);
    check_old_generation_kept();
}

VTEST(reload_not_ready_in_time_keeps_old)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.ready_timeout_ms = 100;
    o.shard_main = main_reload;
    reload_mode = RELOAD_NEVER_READY;
    VCHECK_EQ(run(&o, hook_reload), 0);
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_RELOAD_FAILED, 2), 1);
    /* The new generation was killed, not asked to drain. */
    VCHECK_EQ(count_gen(VEGA_SHARD_EV_DRAINED, 2), 2);
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED && evs[i].generation == 2)
            VCHECK_EQ(evs[i].signal, SIGKILL);
    check_old_generation_kept();
}

/* Every generation ignores SIGTERM: each drains for the whole grace_ms and is then killed. */
static unsigned hups;

static void hook_reload_thrice(const vega_shard_event *ev)
{
    bool first_ready = ev->kind == VEGA_SHARD_EV_READY && ev->generation == 1;
    if ((first_ready || ev->kind == VEGA_SHARD_EV_RELOADED) && hups < 3) {
        hups++;
        raise(SIGHUP);
    }
    if ((ev->kind == VEGA_SHARD_EV_RELOADED && ev->generation == 4) ||
        ev->kind == VEGA_SHARD_EV_RELOAD_FAILED)
        send_term();
}

VTEST(reload_waits_for_a_free_slot)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.grace_ms = 1000;
    o.shard_main = main_stubborn;
    VCHECK_EQ(run(&o, hook_reload_thrice), 0);
    /* Three slots per place: generation 4 cannot start while generation 1 still drains. It
     * waited for generation 1's SIGKILL instead of failing. */
    VCHECK_EQ(count(VEGA_SHARD_EV_RELOAD_FAILED), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_RELOADED), 3);
    unsigned start4 = first(VEGA_SHARD_EV_RELOAD, 4), gone1 = nev;
    for (unsigned i = 0; i < nev && gone1 == nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED && evs[i].generation == 1)
            gone1 = i;
    VCHECK(start4 < nev && gone1 < start4);
}

/* Generation 1 ignores SIGTERM (drains until it is killed at grace); the others end at once on
 * it: when generation 4 is asked for, a slot is free (generation 2 is gone), yet generation 1
 * still lives, three generations back: generation 4 waits for it to go (vega-serve --shards
 * gives generations g and g+3 the same UDP sockets). */
static int main_first_stubborn(vega_shard *s, void *u)
{
    if (vega_shard_generation(s) == 1)
        return main_stubborn(s, u);
    vega_shard_ready(s);
    return until_term(s, true);
}

VTEST(reload_waits_for_the_generation_three_back)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.grace_ms = 1000;
    o.shard_main = main_first_stubborn;
    hups = 0;
    VCHECK_EQ(run(&o, hook_reload_thrice), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_RELOAD_FAILED), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_RELOADED), 3);
    unsigned start4 = first(VEGA_SHARD_EV_RELOAD, 4), gone1 = nev, gone2 = nev;
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED && evs[i].generation == 1 && gone1 == nev)
            gone1 = i;
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED && evs[i].generation == 2 && gone2 == nev)
            gone2 = i;
    }
    VCHECK(start4 < nev && gone1 < start4);
    VCHECK_EQ(evs[gone1].signal, SIGKILL); /* it drained until grace */
    VCHECK(gone2 < gone1);                 /* a slot was free before: the wait was for gen 1 */
}

/* ---- binary upgrade (SIGUSR2) ------------------------------------------------------------- */

static void hook_usr2_when_2_ready(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 2)
        raise(SIGUSR2);
    if (ev->kind == VEGA_SHARD_EV_UPGRADE_FAILED || ev->kind == VEGA_SHARD_EV_UPGRADED)
        send_term();
}

VTEST(upgrade_that_cannot_start_changes_nothing)
{
    char *argv[] = {"/nonexistent/vega-shard-upgrade", NULL};
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.shard_main = main_serve;
    o.exec_argv = argv;
    VCHECK_EQ(run(&o, hook_usr2_when_2_ready), 0);
    unsigned up = first(VEGA_SHARD_EV_UPGRADE, 0), failed = first(VEGA_SHARD_EV_UPGRADE_FAILED, 0);
    unsigned stop = first(VEGA_SHARD_EV_STOPPING, 0);
    VCHECK(up < failed && failed < stop && stop < nev);
    VCHECK(evs[up].pid > 0);
    VCHECK_EQ(evs[failed].pid, evs[up].pid);
    VCHECK_EQ(count(VEGA_SHARD_EV_UPGRADED), 0);
    /* the shards served on and drained only on SIGTERM */
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 2);
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED)
            VCHECK(i > stop && evs[i].code == 0);
    int st;
    errno = 0;
    VCHECK_EQ(waitpid(evs[up].pid, &st, WNOHANG), -1); /* the failed one was reaped */
    VCHECK_EQ(errno, ECHILD);
}

/* The upgraded shard: generations count on from the old supervisor's (it served 1, or what
 * $SHARD_TEST_OLD_GEN says). */
static int main_serve_gen2(vega_shard *s, void *u)
{
    const char *v = getenv("SHARD_TEST_OLD_GEN");
    unsigned old = v ? (unsigned)atoi(v) : 1;
    if (vega_shard_generation(s) != old + 1)
        return 3; /* the first generation cannot start: the upgrade fails */
    size_t len = 0;
    _Atomic uint64_t *c = vega_shard_shared(s, &len);
    if (!c || len != 4096)
        return 3;
    /* upgrade_hands_over: the region its two old shards counted in; the other upgrade's old
     * supervisor had a region of another size, so this one is new and nobody counted in it */
    if (atomic_load(&c[0]) != (getenv("SHARD_TEST_OLD_GEN") ? 0u : 2u))
        return 3;
    return main_serve(s, u);
}

/* The new supervisor of upgrade_hands_over: this same test program, run with this case's name
 * (registered by hand, not with VTEST, so that CTest does not run it on its own). It checks what
 * it inherited (a listening socket, then a UDP one), serves with one shard until SIGTERM, and
 * exits 0. */
static void upgrade_new_side(void)
{
    if (!getenv("VEGA_SHARD_UPGRADE_FD"))
        vtest_skip("run by upgrade_hands_over, as the upgraded binary");
    int fds[4];
    VCHECK_EQ(vega_shard_inherited_fds(fds, 4), 2);
    VCHECK(getenv("VEGA_SHARD_LISTEN_FDS") == NULL);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    VCHECK_EQ(getsockname(fds[0], (struct sockaddr *)&a, &alen), 0);
    VCHECK_EQ(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    int type = 0;
    socklen_t tlen = sizeof type;
    VCHECK_EQ(getsockopt(fds[1], SOL_SOCKET, SO_TYPE, &type, &tlen), 0);
    VCHECK_EQ(type, SOCK_DGRAM);
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.listen_fds = fds;
    o.n_listen_fds = 2;
    o.shard_main = main_serve_gen2;
    o.shared_size = 4096; /* the old supervisor's, handed over: its two shards counted 2 */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    VCHECK_EQ(sigprocmask(SIG_BLOCK, &set, NULL), 0);
    alarm(60);
    VCHECK_EQ(vega_shard_run(&o), 0);
}

__attribute__((constructor)) static void register_upgrade_new_side(void)
{
    vtest_register("upgrade_new_side", upgrade_new_side);
}

VTEST(upgrade_hands_over)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    VCHECK(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    VCHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    VCHECK_EQ(listen(l, 16), 0);
    int fds[2] = {l, socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)}; /* a UDP one too */
    VCHECK(fds[1] >= 0);
    VCHECK_EQ(bind(fds[1], (struct sockaddr *)&a, sizeof a), 0);
    char *argv[] = {"/proc/self/exe", "upgrade_new_side", NULL};
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.listen_fds = fds;
    o.n_listen_fds = 2;
    o.shard_main = main_count_in_region;
    o.exec_argv = argv;
    o.shared_size = 4096;
    VCHECK_EQ(run(&o, hook_usr2_when_2_ready), 0);
    unsigned up = first(VEGA_SHARD_EV_UPGRADE, 0), done = first(VEGA_SHARD_EV_UPGRADED, 0);
    VCHECK(up < done && done < nev);
    int pid = evs[up].pid;
    VCHECK(pid > 0 && evs[done].pid == pid);
    /* our shards drained after the new supervisor was ready; it runs on, still our child */
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 2);
    for (unsigned i = 0; i < nev; i++)
        if (evs[i].kind == VEGA_SHARD_EV_DRAINED)
            VCHECK(i > done && evs[i].code == 0);
    VCHECK_EQ(kill(pid, 0), 0);
    VCHECK_EQ(kill(pid, SIGTERM), 0);
    int st;
    alarm(60);
    VCHECK_EQ(waitpid(pid, &st, 0), pid);
    alarm(0);
    VCHECK(WIFEXITED(st));
    VCHECK_EQ(WEXITSTATUS(st), 0); /* its checks passed and it stopped cleanly */
    close(l);
    close(fds[1]);
}

/* SIGUSR2 once a reload started: the upgrade waits until generation 2 serves and generation 1
 * has drained, and the new supervisor's generations go on from 2. */
static void hook_usr2_during_reload(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 2)
        send_hup();
    if (ev->kind == VEGA_SHARD_EV_RELOAD)
        raise(SIGUSR2);
    if (ev->kind == VEGA_SHARD_EV_UPGRADE_FAILED || ev->kind == VEGA_SHARD_EV_UPGRADED)
        send_term();
}

VTEST(upgrade_waits_for_a_reload_and_its_drain)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    VCHECK(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    VCHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    VCHECK_EQ(listen(l, 16), 0);
    int fds[2] = {l, socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
    VCHECK(fds[1] >= 0);
    char *argv[] = {"/proc/self/exe", "upgrade_new_side", NULL};
    setenv("SHARD_TEST_OLD_GEN", "2", 1); /* read by the new side */
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.listen_fds = fds;
    o.n_listen_fds = 2;
    o.shard_main = main_count_in_region;
    o.exec_argv = argv;
    o.shared_size = region_len = 8192; /* not the new side's 4096: it must make its own */
    VCHECK_EQ(run(&o, hook_usr2_during_reload), 0);
    region_len = 4096;
    unsigned up = first(VEGA_SHARD_EV_UPGRADE, 0), done = first(VEGA_SHARD_EV_UPGRADED, 0);
    unsigned reloaded = first(VEGA_SHARD_EV_RELOADED, 2);
    VCHECK(reloaded < up && up < done && done < nev);
    /* generation 1 drained before the upgrade started, generation 2 after it was done */
    unsigned drained1 = 0;
    for (unsigned i = 0; i < nev; i++) {
        if (evs[i].kind != VEGA_SHARD_EV_DRAINED)
            continue;
        if (evs[i].generation == 1) {
            drained1++;
            VCHECK(i < up);
        } else {
            VCHECK(evs[i].generation == 2 && i > done);
        }
    }
    VCHECK_EQ(drained1, 2);
    int pid = evs[up].pid, st;
    VCHECK_EQ(kill(pid, SIGTERM), 0);
    alarm(60);
    VCHECK_EQ(waitpid(pid, &st, 0), pid);
    alarm(0);
    VCHECK(WIFEXITED(st));
    VCHECK_EQ(WEXITSTATUS(st), 0); /* its first generation was 3 */
    unsetenv("SHARD_TEST_OLD_GEN");
    close(l);
    close(fds[1]);
}

VTEST(inherited_fds_are_checked)
{
    int fds[2];
    unsetenv("VEGA_SHARD_LISTEN_FDS");
    VCHECK_EQ(vega_shard_inherited_fds(fds, 2), 0); /* not an upgrade */
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    VCHECK(l >= 0 && c >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    VCHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    VCHECK_EQ(listen(l, 4), 0);
    char v[64];
    snprintf(v, sizeof v, "%d,%d", l, l);
    setenv("VEGA_SHARD_LISTEN_FDS", v, 1);
    VCHECK_EQ(vega_shard_inherited_fds(fds, 2), 2);
    VCHECK(fds[0] == l && fds[1] == l);
    VCHECK(getenv("VEGA_SHARD_LISTEN_FDS") == NULL); /* shards and later upgrades do not see it */
    setenv("VEGA_SHARD_LISTEN_FDS", v, 1);
    VCHECK_EQ(vega_shard_inherited_fds(fds, 1), -EINVAL); /* more than cap */
    snprintf(v, sizeof v, "%d", c);                       /* a socket that does not listen */
    setenv("VEGA_SHARD_LISTEN_FDS", v, 1);
    VCHECK_EQ(vega_shard_inherited_fds(fds, 2), -EINVAL);
    int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), p[2];
    VCHECK(u >= 0 && pipe(p) == 0);
    snprintf(v, sizeof v, "%d,%d", l, u); /* a datagram socket is handed over too */
    setenv("VEGA_SHARD_LISTEN_FDS", v, 1);
    VCHECK_EQ(vega_shard_inherited_fds(fds, 2), 2);
    VCHECK(fds[0] == l && fds[1] == u);
    snprintf(v, sizeof v, "%d", p[0]); /* not a socket */
    setenv("VEGA_SHARD_LISTEN_FDS", v, 1);
    VCHECK_EQ(vega_shard_inherited_fds(fds, 2), -EINVAL);
    close(u);
    close(p[0]);
    close(p[1]);
    static const char *const bad[] = {"x", "3x", "-1", ",", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("VEGA_SHARD_LISTEN_FDS", bad[i], 1);
        VCHECK_EQ(vega_shard_inherited_fds(fds, 2), -EINVAL);
    }
    close(l);
    close(c);
}

/* ---- on_tick: the program's periodic work in the supervisor ---------------------------------- */

static unsigned ticks;

static void count_tick(void *u)
{
    (void)u;
    if (++ticks == 3)
        send_term(); /* three ticks seen: stop */
}

VTEST(on_tick_runs_in_the_supervisor)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 1;
    o.shard_main = main_serve;
    o.on_tick = count_tick;
    o.tick_ms = 10;
    ticks = 0;
    VCHECK_EQ(run(&o, NULL), 0); /* stopped by the third tick */
    VCHECK(ticks >= 3);
    VCHECK_EQ(count(VEGA_SHARD_EV_DRAINED), 1);
}

/* ---- the shared region: every shard of every generation, and the supervisor ---------------- */

static void *region;
static uint64_t seen_at_reloaded;

/* Adds one to the region's first counter, after checking its size and that the rest was never
 * written (zeroed at start), then serves. */
static int main_count_in_region(vega_shard *s, void *u)
{
    size_t len = 0;
    _Atomic uint64_t *c = vega_shard_shared(s, &len);
    if (!c || len != region_len || atomic_load(&c[1]) != 0)
        return 3;
    atomic_fetch_add(&c[0], 1);
    return main_serve(s, u);
}

static void hook_reload_then_term(const vega_shard_event *ev)
{
    if (ev->kind == VEGA_SHARD_EV_READY && count(VEGA_SHARD_EV_READY) == 2)
        send_hup();
    if (ev->kind == VEGA_SHARD_EV_RELOADED) {
        /* the supervisor's view: both generations' shards counted, ready before this event */
        seen_at_reloaded = atomic_load((_Atomic uint64_t *)region);
        send_term();
    }
}

VTEST(shared_region_reaches_every_shard_and_generation)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.shard_main = main_count_in_region;
    o.shared_size = 4096;
    o.shared_out = &region;
    region = (void *)1;
    seen_at_reloaded = 0;
    VCHECK_EQ(run(&o, hook_reload_then_term), 0);
    VCHECK_EQ(seen_at_reloaded, 4); /* 2 shards x 2 generations, each started once */
    VCHECK_EQ(count(VEGA_SHARD_EV_STARTED), 4);
    VCHECK(region == NULL); /* unmapped when the supervisor returned */
    /* none asked: no region */
    size_t len = 1;
    VCHECK(vega_shard_shared(NULL, &len) == NULL);
    VCHECK_EQ(len, 0);
}

/* ---- a first generation that cannot start is reported, not retried --------------------------- */

static int main_bad_config(vega_shard *s, void *u)
{
    (void)s;
    (void)u;
    return 4;
}

VTEST(first_generation_failure_returns_status)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    o.shards = 2;
    o.shard_main = main_bad_config;
    VCHECK_EQ(run(&o, NULL), 4);
    VCHECK_EQ(count(VEGA_SHARD_EV_RESTART), 0);
    VCHECK_EQ(count(VEGA_SHARD_EV_READY), 0);
}

VTEST(bad_options)
{
    vega_shard_opts o;
    vega_shard_opts_init(&o);
    VCHECK_EQ(vega_shard_run(&o), -EINVAL); /* no shard_main */
    o.shard_main = main_bad_config;
    o.shards = 1025;
    VCHECK_EQ(vega_shard_run(&o), -EINVAL);
    o.shards = 1;
    o.shared_size = VEGA_SHARD_SHARED_MAX + 1;
    VCHECK_EQ(vega_shard_run(&o), -EINVAL);
    o.shards = 1025;
    VCHECK_EQ(vega_shard_run_versioned(&o, VEGA_SHARD_OPTS_VERSION + 1), -EINVAL);
    VCHECK_EQ(vega_shard_run_versioned(&o, 0), -EINVAL);
}
