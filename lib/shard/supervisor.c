/* SPDX-License-Identifier: MIT */
/* The supervisor: forks the shards, reaps them through a signalfd loop, restarts crashes with
 * backoff, kills shards whose heartbeat stopped, reloads on SIGHUP and drains on SIGTERM/SIGINT.
 * It never serves: the shards inherit the listening sockets and accept on them themselves. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shard_int.h"

#define MAX_SHARDS 1024u
/* Process slots: a serving generation, a new one during a reload, and one draining. */
#define SLOTS_PER_SHARD 3u
#define TICK_MS         50 /* how often heartbeats, readiness and deadlines are looked at */

enum proc_state {
    P_FREE = 0,
    P_LIVE,
    P_DRAINING
};

struct proc {
    enum proc_state state;
    int pid;
    unsigned index, gen;
    bool ready, hung;
    uint64_t beats;
    int64_t started, last_beat, kill_at; /* ms on the monotonic clock */
};

struct place {
    int64_t restart_at; /* 0: none pending */
    unsigned backoff_ms;
};

struct sup {
    vega_shard_opts o;
    unsigned n, nslots;
    struct proc *procs;
    struct place *places;
    struct vega__shard_slot *shm;
    sigset_t old_mask;
    int sfd;
    unsigned gen;     /* the serving generation */
    unsigned new_gen; /* the generation a reload is starting, 0 when none */
    int64_t reload_deadline;
    bool reload_pending, first_ready, stopping;
    bool up_pending; /* SIGUSR2 while a reload or a drain was under way: it waits */
    int fail_code;   /* the first generation could not start */
    /* Binary upgrade, the old side: the new supervisor, the pipe it says "ready" on, until when */
    int up_pid, up_fd; /* up_pid: 0 once reaped (or no longer ours) */
    int up_named;      /* its pid, for the events */
    int64_t up_deadline;
    /* after "ready": the pipe's read end, kept open until we return, so that the new supervisor
     * sees when this one (and so every shard of ours) is gone */
    int handed_fd;
    /* the new side: the pipe to tell the old supervisor that the first generation is ready;
     * after that, kept to see the old one end (POLLERR): until then no reload starts */
    int announce_fd;
    bool announced;
    int64_t next_tick; /* when on_tick is due */
    int shared_fd;     /* the memfd of shared_size bytes, or -1 */
    void *shared;      /* its mapping, or NULL */
};

#define ENV_LISTEN_FDS "VEGA_SHARD_LISTEN_FDS"
#define ENV_UPGRADE_FD "VEGA_SHARD_UPGRADE_FD"
#define ENV_GENERATION "VEGA_SHARD_GENERATION"
#define ENV_SHARED_FD  "VEGA_SHARD_SHARED_FD"
/* The layouts of vega_shard_opts: 1 ended before exec_argv, 2 before on_tick, 3 before
 * shared_size. */
#define SHARD_OPTS_V1_SIZE offsetof(vega_shard_opts, exec_argv)
#define SHARD_OPTS_V2_SIZE offsetof(vega_shard_opts, on_tick)
#define SHARD_OPTS_V3_SIZE offsetof(vega_shard_opts, shared_size)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void emit(struct sup *s, vega_shard_event_kind kind, const struct proc *p)
{
    if (!s->o.on_event)
        return;
    vega_shard_event ev = {.kind = kind};
    if (p) {
        ev.index = p->index;
        ev.generation = p->gen;
        ev.pid = p->pid;
    }
    s->o.on_event(&ev, s->o.user_data);
}

static _Noreturn void child_main(struct sup *s, struct proc *p, size_t slot)
{
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        _exit(1); /* the supervisor died before the line above */
    close(s->sfd);
    if (s->announce_fd >= 0)
        close(s->announce_fd); /* the old supervisor must see EOF if ours dies */
    if (s->up_fd >= 0)
        close(s->up_fd);
    if (s->handed_fd >= 0)
        close(s->handed_fd);
    (void)sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
    static struct vega_shard me;
    me = (struct vega_shard){p->index, p->gen, &s->shm[slot], s->shared,
                             s->shared ? s->o.shared_size : 0};
    int code = s->o.shard_main(&me, s->o.user_data);
    exit(code & 0xff);
}

/* Forks shard `index` of generation gen. Returns 0 or -errno (-EAGAIN: no free slot). */
static int spawn(struct sup *s, unsigned index, unsigned gen)
{
    size_t k = 0;
    while (k < s->nslots && s->procs[k].state != P_FREE)
        k++;
    if (k == s->nslots)
        return -EAGAIN;
    struct proc *p = &s->procs[k];
    atomic_store(&s->shm[k].beats, 0);
    atomic_store(&s->shm[k].ready, 0);
    fflush(NULL); /* nothing buffered is written twice */
    int64_t t = now_ms();
    *p = (struct proc){.state = P_LIVE, .index = index, .gen = gen, .started = t, .last_beat = t};
    pid_t pid = fork();
    if (pid < 0) {
        p->state = P_FREE;
        return -errno;
    }
    if (pid == 0)
        child_main(s, p, k);
    p->pid = pid;
    emit(s, VEGA_SHARD_EV_STARTED, p);
    return 0;
}

static void drain(struct sup *s, struct proc *p, int sig)
{
    if (p->state != P_LIVE)
        return;
    p->state = P_DRAINING;
    p->kill_at = now_ms() + s->o.grace_ms;
    (void)kill(p->pid, sig);
}

static void stop_all(struct sup *s)
{
    s->stopping = true;
    for (unsigned i = 0; i < s->n; i++)
        s->places[i].restart_at = 0;
    for (size_t k = 0; k < s->nslots; k++)
        drain(s, &s->procs[k], SIGTERM);
}

static void reload_failed(struct sup *s)
{
    vega_shard_event ev = {.kind = VEGA_SHARD_EV_RELOAD_FAILED, .generation = s->new_gen};
    if (s->o.on_event)
        s->o.on_event(&ev, s->o.user_data);
    for (size_t k = 0; k < s->nslots; k++)
        if (s->procs[k].state == P_LIVE && s->procs[k].gen == s->new_gen)
            drain(s, &s->procs[k], SIGKILL);
    s->new_gen = 0;
}

static void start_reload(struct sup *s)
{
    /* Older generations still draining may hold every slot of a place: the reload waits (at
     * most grace_ms, after which they are killed) rather than fail. */
    unsigned free_slots = 0;
    bool three_back = false;
    for (size_t k = 0; k < s->nslots; k++) {
        free_slots += s->procs[k].state == P_FREE;
        /* generation gen+1 waits also until generation gen-2 is gone, even when enough slots
         * are free (gen-1 ended first): at most SLOTS_PER_SHARD consecutive generations live,
         * so generation g mod 3 names one of them (vega-serve --shards gives each its own set
         * of UDP sockets that way: two generations on one set would both read new Initials,
         * the draining one refusing them) */
        three_back = three_back || (s->procs[k].state != P_FREE &&
                                    s->procs[k].gen + SLOTS_PER_SHARD <= s->gen + 1);
    }
    if (free_slots < s->n || three_back)
        return;
    s->reload_pending = false;
    s->new_gen = s->gen + 1;
    s->reload_deadline = now_ms() + s->o.ready_timeout_ms;
    vega_shard_event ev = {.kind = VEGA_SHARD_EV_RELOAD, .generation = s->new_gen};
    if (s->o.on_event)
        s->o.on_event(&ev, s->o.user_data);
    for (unsigned i = 0; i < s->n; i++) {
        if (spawn(s, i, s->new_gen) < 0) {
            reload_failed(s);
            return;
        }
    }
}

static void emit_pid(struct sup *s, vega_shard_event_kind kind, int pid)
{
    vega_shard_event ev = {.kind = kind, .generation = s->gen, .pid = pid};
    if (s->o.on_event)
        s->o.on_event(&ev, s->o.user_data);
}

/* The new supervisor failed (or we stop first): it is killed, we go on as before. */
static void upgrade_failed(struct sup *s)
{
    emit_pid(s, VEGA_SHARD_EV_UPGRADE_FAILED, s->up_named);
    close(s->up_fd);
    s->up_fd = -1;
    if (s->up_pid)
        (void)kill(s->up_pid, SIGKILL); /* not reaped yet: the pid is still ours */
}

/* In the forked child: keep the listeners and the pipe across the exec, name them, exec. */
static _Noreturn void exec_upgrade(struct sup *s, int wfd)
{
    (void)sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
    char fds[8192] = "", one[16];
    size_t len = 0;
    for (size_t i = 0; i < s->o.n_listen_fds; i++) {
        int fd = s->o.listen_fds[i];
        int n = snprintf(one, sizeof one, "%s%d", i ? "," : "", fd);
        if (n < 0 || len + (size_t)n >= sizeof fds || fcntl(fd, F_SETFD, 0) < 0)
            _exit(127);
        memcpy(fds + len, one, (size_t)n + 1);
        len += (size_t)n;
    }
    char gen[16], shared[16];
    snprintf(one, sizeof one, "%d", wfd);
    snprintf(gen, sizeof gen, "%u", s->gen);
    snprintf(shared, sizeof shared, "%d", s->shared_fd);
    if (fcntl(wfd, F_SETFD, 0) < 0 || setenv(ENV_LISTEN_FDS, fds, 1) < 0 ||
        setenv(ENV_UPGRADE_FD, one, 1) < 0 || setenv(ENV_GENERATION, gen, 1) < 0 ||
        (s->shared_fd >= 0 &&
         (fcntl(s->shared_fd, F_SETFD, 0) < 0 || setenv(ENV_SHARED_FD, shared, 1) < 0)))
        _exit(127);
    execvp(s->o.exec_argv[0], s->o.exec_argv);
    fprintf(stderr, "vega_shard: upgrade: cannot run %s: %s\n", s->o.exec_argv[0], strerror(errno));
    _exit(127);
}

/* SIGUSR2: start the new binary beside us. */
static void start_upgrade(struct sup *s)
{
    if (!s->o.exec_argv || !s->o.exec_argv[0] || s->up_fd >= 0 || s->up_pid || s->stopping)
        return; /* one at a time; none while stopping */
    /* Only the serving generation may run: the new supervisor numbers its generations on from
     * ours, and what is indexed by generation (vega-serve's UDP sets) must not be in use by a
     * starting or draining one of ours. */
    s->up_pending = s->new_gen || s->reload_pending;
    for (size_t k = 0; k < s->nslots && !s->up_pending; k++)
        s->up_pending = s->procs[k].state == P_DRAINING;
    if (s->up_pending)
        return; /* tick() starts it once they are done */
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        emit_pid(s, VEGA_SHARD_EV_UPGRADE_FAILED, 0);
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        exec_upgrade(s, p[1]);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        emit_pid(s, VEGA_SHARD_EV_UPGRADE_FAILED, 0);
        return;
    }
    s->up_pid = s->up_named = pid;
    s->up_fd = p[0];
    s->up_deadline = now_ms() + s->o.ready_timeout_ms;
    emit_pid(s, VEGA_SHARD_EV_UPGRADE, pid);
}

/* The pipe from the new supervisor is readable: "R" = ready, EOF = it ended. */
static void upgrade_answer(struct sup *s)
{
    char c;
    ssize_t n = read(s->up_fd, &c, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n == 1 && c == 'R') {
        emit_pid(s, VEGA_SHARD_EV_UPGRADED, s->up_named);
        s->handed_fd = s->up_fd; /* closed when we return: the new one then knows */
        s->up_fd = -1;
        s->up_pid = 0; /* no longer ours to kill: it outlives us */
        stop_all(s);
        return;
    }
    upgrade_failed(s);
}

/* A shard ended: decide what follows. */
static void on_exit_status(struct sup *s, struct proc *p, int st)
{
    vega_shard_event ev = {.index = p->index, .generation = p->gen, .pid = p->pid};
    ev.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    ev.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    bool asked = p->state == P_DRAINING;
    /* A shard that became ready and ended before the next tick looked: it was ready (a crash
     * to restart, not a configuration that cannot start). */
    size_t k = (size_t)(p - s->procs);
    if (!p->ready && atomic_load_explicit(&s->shm[k].ready, memory_order_acquire)) {
        p->ready = true;
        emit(s, VEGA_SHARD_EV_READY, p);
    }
    p->state = P_FREE;
    ev.kind = asked ? VEGA_SHARD_EV_DRAINED : VEGA_SHARD_EV_EXITED;
    if (s->o.on_event)
        s->o.on_event(&ev, s->o.user_data);
    if (asked || s->stopping)
        return;
    if (!s->first_ready && !p->ready) { /* the first generation cannot start: report, do not
                                         * retry */
        s->fail_code = ev.signal ? 128 + ev.signal : (ev.code ? ev.code : 1);
        stop_all(s);
        return;
    }
    if (s->new_gen && p->gen == s->new_gen) {
        reload_failed(s);
        return;
    }
    if (p->gen != s->gen)
        return; /* an older generation's shard: already replaced */
    struct place *pl = &s->places[p->index];
    int64_t t = now_ms();
    if (p->hung || t - p->started >= (int64_t)s->o.healthy_ms || pl->backoff_ms == 0)
        pl->backoff_ms = s->o.backoff_min_ms;
    vega_shard_event r = {.kind = VEGA_SHARD_EV_RESTART,
                          .index = p->index,
                          .generation = p->gen,
                          .delay_ms = pl->backoff_ms};
    pl->restart_at = t + pl->backoff_ms;
    pl->backoff_ms =
        pl->backoff_ms * 2 > s->o.backoff_max_ms ? s->o.backoff_max_ms : pl->backoff_ms * 2;
    if (s->o.on_event)
        s->o.on_event(&r, s->o.user_data);
}

static void reap(struct sup *s)
{
    if (s->up_pid) { /* the new supervisor, while it is on trial */
        int st;
        pid_t r = waitpid(s->up_pid, &st, WNOHANG);
        if (r == s->up_pid || (r < 0 && errno == ECHILD))
            s->up_pid = 0;
    }
    for (size_t k = 0; k < s->nslots; k++) {
        struct proc *p = &s->procs[k];
        if (p->state == P_FREE)
            continue;
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid)
            on_exit_status(s, p, st);
        else if (r < 0 && errno == ECHILD)
            on_exit_status(s, p, 0); /* someone else reaped it */
    }
}

/* Heartbeats, readiness, deadlines and due restarts. */
static void tick(struct sup *s)
{
    int64_t t = now_ms();
    bool all_new_ready = s->new_gen != 0;
    bool first_all_ready = !s->first_ready;
    unsigned nnew = 0, nfirst = 0;
    for (size_t k = 0; k < s->nslots; k++) {
        struct proc *p = &s->procs[k];
        if (p->state == P_FREE)
            continue;
        uint64_t b = atomic_load_explicit(&s->shm[k].beats, memory_order_relaxed);
        if (b != p->beats) {
            p->beats = b;
            p->last_beat = t;
        }
        if (!p->ready && atomic_load_explicit(&s->shm[k].ready, memory_order_acquire)) {
            p->ready = true;
            emit(s, VEGA_SHARD_EV_READY, p);
        }
        if (p->state == P_DRAINING) {
            if (t >= p->kill_at && !p->hung) {
                p->hung = true; /* SIGKILL once */
                emit(s, VEGA_SHARD_EV_KILLED, p);
                (void)kill(p->pid, SIGKILL);
            }
            continue;
        }
        if (!p->hung && t - p->last_beat > (int64_t)s->o.heartbeat_timeout_ms) {
            p->hung = true;
            emit(s, VEGA_SHARD_EV_HUNG, p);
            (void)kill(p->pid, SIGKILL);
        }
        if (p->gen == s->new_gen) {
            nnew++;
            all_new_ready = all_new_ready && p->ready;
        }
        if (!s->first_ready) {
            nfirst++;
            first_all_ready = first_all_ready && p->ready;
        }
    }
    if (first_all_ready && nfirst == s->n) {
        s->first_ready = true;
        if (s->announce_fd >= 0) { /* we are an upgrade: the old supervisor may drain now */
            (void)!write(s->announce_fd, "R", 1);
            s->announced = true; /* the pipe stays open: loop() sees the old one end */
        }
    }
    if (s->up_fd >= 0 && t >= s->up_deadline)
        upgrade_failed(s);
    if (s->new_gen && all_new_ready && nnew == s->n) {
        vega_shard_event ev = {.kind = VEGA_SHARD_EV_RELOADED, .generation = s->new_gen};
        if (s->o.on_event)
            s->o.on_event(&ev, s->o.user_data);
        for (size_t k = 0; k < s->nslots; k++)
            if (s->procs[k].gen != s->new_gen)
                drain(s, &s->procs[k], SIGTERM);
        for (unsigned i = 0; i < s->n; i++)
            s->places[i].restart_at = 0;
        s->gen = s->new_gen;
        s->new_gen = 0;
    } else if (s->new_gen && t >= s->reload_deadline) {
        reload_failed(s);
    }
    for (unsigned i = 0; i < s->n && !s->stopping; i++) {
        struct place *pl = &s->places[i];
        if (pl->restart_at && t >= pl->restart_at && spawn(s, i, s->gen) == 0)
            pl->restart_at = 0;
    }
    /* a reload waits while an upgrade is on trial, and in an upgrade's new supervisor until the
     * old one ended (generations are counted on across the two: theirs must be gone) */
    if (s->reload_pending && !s->new_gen && !s->stopping && s->announce_fd < 0 && s->up_fd < 0)
        start_reload(s);
    if (s->up_pending && !s->stopping)
        start_upgrade(s);
    if (s->o.on_tick && s->o.tick_ms && t >= s->next_tick) {
        s->next_tick += s->o.tick_ms; /* a fixed schedule; a late one does not push the rest */
        if (s->next_tick <= t)
            s->next_tick = t + s->o.tick_ms;
        s->o.on_tick(s->o.user_data);
    }
}

static bool any_alive(const struct sup *s)
{
    for (size_t k = 0; k < s->nslots; k++)
        if (s->procs[k].state != P_FREE)
            return true;
    return false;
}

static int loop(struct sup *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        int r = spawn(s, i, s->gen);
        if (r < 0) {
            stop_all(s);
            s->fail_code = r;
            break;
        }
    }
    /* a failed upgrade's supervisor (SIGKILLed) is reaped too before we return */
    while (!s->stopping || any_alive(s) || s->up_pid) {
        /* the old supervisor's end of the announce pipe closes (POLLERR) when it returned */
        struct pollfd pfd[3] = {{.fd = s->sfd, .events = POLLIN},
                                {.fd = s->up_fd, .events = POLLIN},
                                {.fd = s->announced ? s->announce_fd : -1}};
        int r = poll(pfd, 3, TICK_MS);
        if (r < 0 && errno != EINTR)
            return -errno;
        if (r > 0 && s->up_fd >= 0 && pfd[1].revents)
            upgrade_answer(s);
        if (r > 0 && pfd[2].fd >= 0 && pfd[2].revents) {
            close(s->announce_fd);
            s->announce_fd = -1;
        }
        struct signalfd_siginfo si;
        while (read(s->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (sig == SIGHUP && !s->stopping) {
                s->reload_pending = true;
            } else if (sig == SIGUSR2) {
                start_upgrade(s);
            } else if ((sig == SIGTERM || sig == SIGINT) && !s->stopping) {
                vega_shard_event ev = {.kind = VEGA_SHARD_EV_STOPPING, .signal = sig};
                if (s->o.on_event)
                    s->o.on_event(&ev, s->o.user_data);
                if (s->up_fd >= 0)
                    upgrade_failed(s); /* a stop wins over an upgrade under way */
                stop_all(s);
            }
        }
        reap(s);
        tick(s);
    }
    return s->fail_code;
}

static unsigned cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    return 1;
}

/* The size of layout v (1..VEGA_SHARD_OPTS_VERSION), 0 for one we do not know. */
static size_t opts_size(int v)
{
    return v == 1                         ? SHARD_OPTS_V1_SIZE
           : v == 2                       ? SHARD_OPTS_V2_SIZE
           : v == 3                       ? SHARD_OPTS_V3_SIZE
           : v == VEGA_SHARD_OPTS_VERSION ? sizeof(vega_shard_opts)
                                          : 0;
}

void vega_shard_opts_init_versioned(vega_shard_opts *o, int opts_version)
{
    if (!opts_size(opts_version))
        abort(); /* API rules: an _init of an unknown layout panics */
    memset(o, 0, opts_size(opts_version));
}

/* We are a binary upgrade's new supervisor: the pipe to the old one (removed from the
 * environment), or -1. */
static int announce_fd(void)
{
    const char *v = getenv(ENV_UPGRADE_FD);
    if (!v)
        return -1;
    char *end;
    long fd = strtol(v, &end, 10);
    (void)unsetenv(ENV_UPGRADE_FD);
    if (*end || end == v || fd < 3 || fd > INT32_MAX || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
        return -1;
    return (int)fd;
}

/* 1, or for a binary upgrade's new supervisor the old one's serving generation + 1, so that
 * generations go on counting across upgrades (the variable is removed). */
static unsigned first_generation(bool upgrade)
{
    const char *v = getenv(ENV_GENERATION);
    if (!v)
        return 1;
    char *end;
    unsigned long g = strtoul(v, &end, 10);
    (void)unsetenv(ENV_GENERATION);
    if (!upgrade || *end || end == v || g == 0 || g >= UINT32_MAX / 2)
        return 1;
    return (unsigned)g + 1;
}

int vega_shard_inherited_fds(int *fds, size_t cap)
{
    const char *v = getenv(ENV_LISTEN_FDS);
    if (!v)
        return 0;
    size_t n = 0;
    int r = 0;
    while (*v && r == 0) {
        char *end;
        long fd = strtol(v, &end, 10);
        int acc = 0, type = 0;
        socklen_t alen = sizeof acc, tlen = sizeof type;
        /* a listening socket, or a datagram one (bound: an unbound one has port 0, the
         * caller's to check) */
        if (end == v || (*end && *end != ',') || fd < 0 || fd > INT32_MAX || n == cap ||
            getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 ||
            (type != SOCK_DGRAM &&
             (getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) < 0 || !acc)) ||
            fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
            r = -EINVAL;
            break;
        }
        fds[n++] = (int)fd;
        v = *end ? end + 1 : end;
    }
    (void)unsetenv(ENV_LISTEN_FDS);
    return r < 0 ? r : (int)n;
}

/* The shared region: the old supervisor's when a binary upgrade handed one of the same size
 * ($VEGA_SHARD_SHARED_FD, removed either way), else a new zeroed memfd. Returns 0 or -errno. */
static int shared_open(struct sup *s, bool upgrade)
{
    const char *v = getenv(ENV_SHARED_FD);
    int fd = -1;
    if (v && upgrade) {
        char *end;
        long n = strtol(v, &end, 10);
        struct stat st;
        if (!*end && end != v && n >= 3 && n <= INT32_MAX && fstat((int)n, &st) == 0 &&
            S_ISREG(st.st_mode) && (uint64_t)st.st_size == (uint64_t)s->o.shared_size &&
            fcntl((int)n, F_SETFD, FD_CLOEXEC) == 0)
            fd = (int)n;
        else if (!*end && end != v && n >= 3 && n <= INT32_MAX)
            close((int)n); /* a size of another program version: a new region, not theirs */
    }
    (void)unsetenv(ENV_SHARED_FD);
    if (!s->o.shared_size) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (fd < 0) {
        fd = memfd_create("vega-shard-shared", MFD_CLOEXEC);
        if (fd < 0)
            return -errno;
        if (ftruncate(fd, (off_t)s->o.shared_size) < 0) {
            int e = -errno;
            close(fd);
            return e;
        }
    }
    void *p = mmap(NULL, s->o.shared_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    s->shared_fd = fd;
    s->shared = p;
    if (s->o.shared_out)
        *s->o.shared_out = p;
    return 0;
}

static void defaults(vega_shard_opts *o)
{
    if (!o->shards)
        o->shards = cpus();
    if (!o->heartbeat_timeout_ms)
        o->heartbeat_timeout_ms = 10000;
    if (!o->ready_timeout_ms)
        o->ready_timeout_ms = 10000;
    if (!o->grace_ms)
        o->grace_ms = 10000;
    if (!o->backoff_min_ms)
        o->backoff_min_ms = 100;
    if (!o->backoff_max_ms)
        o->backoff_max_ms = 5000;
    if (o->backoff_max_ms < o->backoff_min_ms)
        o->backoff_max_ms = o->backoff_min_ms;
    if (!o->healthy_ms)
        o->healthy_ms = 10000;
}

int vega_shard_run_versioned(const vega_shard_opts *o, int opts_version)
{
    if (!o || !opts_size(opts_version) || !o->shard_main)
        return -EINVAL;
    struct sup s = {
        .gen = 1, .sfd = -1, .up_fd = -1, .handed_fd = -1, .announce_fd = -1, .shared_fd = -1};
    memcpy(&s.o, o, opts_size(opts_version)); /* the rest stays 0 */
    defaults(&s.o);
    if (s.o.shards > MAX_SHARDS || s.o.shared_size > VEGA_SHARD_SHARED_MAX)
        return -EINVAL;
    s.n = s.o.shards;
    s.nslots = s.n * SLOTS_PER_SHARD;
    size_t shm_len = s.nslots * sizeof *s.shm;
    s.shm = mmap(NULL, shm_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s.shm == MAP_FAILED)
        return -errno;
    s.procs = calloc(s.nslots, sizeof *s.procs);
    s.places = calloc(s.n, sizeof *s.places);
    int r = -ENOMEM;
    if (!s.procs || !s.places)
        goto out;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    if (s.o.exec_argv)
        sigaddset(&set, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, &set, &s.old_mask) < 0) {
        r = -errno;
        goto out;
    }
    s.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s.sfd < 0) {
        r = -errno;
        (void)sigprocmask(SIG_SETMASK, &s.old_mask, NULL);
        goto out;
    }
    s.announce_fd = announce_fd();
    s.gen = first_generation(s.announce_fd >= 0);
    r = shared_open(&s, s.announce_fd >= 0);
    if (r < 0) {
        if (s.announce_fd >= 0)
            close(s.announce_fd);
        close(s.sfd);
        (void)sigprocmask(SIG_SETMASK, &s.old_mask, NULL);
        goto out;
    }
    s.next_tick = now_ms() + s.o.tick_ms;
    r = loop(&s);
    if (s.announce_fd >= 0)
        close(s.announce_fd); /* never ready: the old supervisor sees EOF and stays */
    if (s.handed_fd >= 0)
        close(s.handed_fd); /* our shards are gone: the new supervisor may reload */
    close(s.sfd);
    (void)sigprocmask(SIG_SETMASK, &s.old_mask, NULL);
out:
    if (s.shared) {
        if (s.o.shared_out)
            *s.o.shared_out = NULL;
        munmap(s.shared, s.o.shared_size);
    }
    if (s.shared_fd >= 0)
        close(s.shared_fd);
    free(s.procs);
    free(s.places);
    munmap(s.shm, shm_len);
    return r;
}
