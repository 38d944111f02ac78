/* SPDX-License-Identifier: MIT */
/* Sharded servers: a supervisor process that forks N shard processes sharing listening sockets
 * made before the fork, restarts crashed shards with backoff, replaces shards whose heartbeat
 * stopped, reloads without downtime on SIGHUP and drains on SIGTERM/SIGINT. */
#ifndef VEGA_SHARD_H
#define VEGA_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a shard is told about itself (borrowed by the shard function for the process's life). */
typedef struct vega_shard vega_shard;

/* What happened, for the supervisor's log (vega_shard_event_format writes one line). */
typedef enum vega_shard_event_kind {
    VEGA_SHARD_EV_STARTED = 1,   /* a shard process was forked (pid) */
    VEGA_SHARD_EV_READY,         /* it called vega_shard_ready */
    VEGA_SHARD_EV_EXITED,        /* it ended without being asked to (code or signal) */
    VEGA_SHARD_EV_RESTART,       /* it will be forked again after delay_ms */
    VEGA_SHARD_EV_HUNG,          /* no heartbeat for heartbeat_timeout_ms: SIGKILL sent */
    VEGA_SHARD_EV_RELOAD,        /* SIGHUP: generation `generation` is starting */
    VEGA_SHARD_EV_RELOADED,      /* that generation is ready; the old one drains */
    VEGA_SHARD_EV_RELOAD_FAILED, /* a new shard failed before ready: the old generation stays */
    VEGA_SHARD_EV_DRAINED,       /* a shard asked to stop has exited (code or signal) */
    VEGA_SHARD_EV_STOPPING,      /* SIGTERM/SIGINT (signal): every shard is draining */
    VEGA_SHARD_EV_KILLED,        /* a draining shard outlived grace_ms: SIGKILL sent */
    /* Binary upgrade (SIGUSR2, opts layout 2): */
    VEGA_SHARD_EV_UPGRADE,        /* a new supervisor (pid) was started from exec_argv */
    VEGA_SHARD_EV_UPGRADED,       /* it is serving (pid): this supervisor drains and returns */
    VEGA_SHARD_EV_UPGRADE_FAILED, /* it ended or was not ready in time (pid): nothing changes */
} vega_shard_event_kind;

typedef struct vega_shard_event {
    vega_shard_event_kind kind;
    unsigned index;      /* the shard's place, 0 .. shards-1 */
    unsigned generation; /* 1 at start, +1 per reload */
    int pid;             /* the shard's process, 0 for events of the whole group */
    int code;            /* EXITED, DRAINED: exit status, -1 when a signal ended it */
    int signal;          /* EXITED, DRAINED: the signal that ended it; STOPPING: the one received */
    unsigned delay_ms;   /* RESTART */
} vega_shard_event;

/*
 * Options of vega_shard_run: plain data, borrowed for the call. vega_shard_opts_init sets the
 * defaults; a zero field means its default.
 */
typedef struct vega_shard_opts {
    /* Shard processes; 0 = the CPUs in the caller's affinity mask (sched_getaffinity). */
    unsigned shards;
    /* Listening sockets made before the call (borrowed; the shards inherit them, so they must
     * not be close-on-exec relevant: fork keeps them either way). Every shard accepts on the
     * same sockets: a draining shard stops accepting and the others keep taking from the same
     * queue, so a reload refuses nothing (see docs/ARCHITECTURE.md, "Sharded mode"). Bound UDP
     * sockets may be among them (the supervisor only hands them on, to shards and upgrades). */
    const int *listen_fds;
    size_t n_listen_fds;
    /* Runs in each shard process (a fresh fork of the caller; a reload forks again, so
     * whatever it reads — configuration, certificates — is read anew). It builds its own
     * runtime, serves on the inherited sockets, calls vega_shard_ready once serving and
     * vega_shard_heartbeat (or vega_shard_heartbeat_start) at least every
     * heartbeat_timeout_ms/4, and drains and returns when SIGTERM arrives (SIGTERM and SIGINT
     * are blocked in the shard as they were in the caller: wait for them with
     * vega_signal_wait). Its return value is the shard's exit status. Required. */
    int (*shard_main)(vega_shard *shard, void *user_data);
    /* The supervisor's log: called in the supervisor for every event (may be NULL). */
    void (*on_event)(const vega_shard_event *ev, void *user_data);
    void *user_data;
    unsigned heartbeat_timeout_ms; /* 0 = 10000: a shard silent this long is SIGKILLed */
    unsigned ready_timeout_ms;     /* 0 = 10000: a reload's shard not ready by then fails it */
    unsigned grace_ms;             /* 0 = 10000: a draining shard gets this long, then SIGKILL */
    unsigned backoff_min_ms;       /* 0 = 100: first restart delay, doubling per crash ... */
    unsigned backoff_max_ms;       /* 0 = 5000: ... up to this */
    unsigned healthy_ms;           /* 0 = 10000: a shard up this long resets its backoff */
    /* Layout 2. SIGUSR2 upgrades the binary, as nginx does: the supervisor forks and execs
     * exec_argv (execvp: exec_argv[0] is the program, NULL-terminated; borrowed for the call),
     * with listen_fds kept open across the exec and named in $VEGA_SHARD_LISTEN_FDS (read them
     * with vega_shard_inherited_fds). When the new supervisor's first generation is all ready
     * (it says so on a pipe named in $VEGA_SHARD_UPGRADE_FD), this one drains its shards as on
     * SIGTERM and vega_shard_run returns 0; the new one, its child, keeps running. If the new
     * one exits or is not ready within ready_timeout_ms, it is killed and nothing changes.
     * The upgrade waits while a reload is under way or an older generation still drains, and
     * no reload starts while one is on trial. The new supervisor's generations go on from the
     * old one's serving generation (its first is that + 1), and it starts no reload until the
     * old supervisor has returned (every old shard gone), so that whatever the program indexes
     * by generation (vega-serve's UDP socket sets) is never used by two live generations.
     * NULL: SIGUSR2 is left alone. */
    char *const *exec_argv;
    /* Layout 3. Called in the supervisor about every tick_ms (its loop looks every 50 ms, so
     * never sooner than asked, at most 50 ms late), between events, for periodic work of the
     * program's own (vega-serve sums its shards' counters into --metrics-log). It must not
     * block long: the supervision waits meanwhile. NULL or tick_ms 0: never. */
    void (*on_tick)(void *user_data);
    unsigned tick_ms;
    /* Layout 4. A region of shared_size bytes (0: none; at most VEGA_SHARD_SHARED_MAX), zeroed,
     * that the supervisor makes before the first fork (a memfd mapped MAP_SHARED) and every
     * shard of every generation sees (vega_shard_shared), for what the shards share: counters,
     * an index of a cache. When shared_out is not NULL, *shared_out points at it from before the
     * first fork until vega_shard_run returns (then NULL), for the program's callbacks in the
     * supervisor (on_tick, on_event). What it holds, and how its users agree on it (atomics, a
     * layout version of their own), is the program's: the supervisor never reads it. A binary
     * upgrade hands it to the new supervisor ($VEGA_SHARD_SHARED_FD), which maps it instead of
     * making one when its shared_size is the same, so what it counts goes on across the
     * upgrade; the old shards still write to it while they drain. */
    size_t shared_size;
    void **shared_out;
} vega_shard_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI): 2 added exec_argv, 3
 * on_tick and tick_ms, 4 shared_size and shared_out. */
#define VEGA_SHARD_OPTS_VERSION 4
/* The largest shared region (vega_shard_opts.shared_size): 1 GiB. */
#define VEGA_SHARD_SHARED_MAX ((size_t)1 << 30)

/* Sets the defaults (every field zero). Since 0.1. */
VEGA_API void vega_shard_opts_init_versioned(vega_shard_opts *o, int opts_version);
#define vega_shard_opts_init(...)                                                                  \
    vega_shard_opts_init_versioned(__VA_ARGS__, VEGA_SHARD_OPTS_VERSION)

/*
 * Runs the supervisor: forks the shards and supervises them until SIGTERM or SIGINT, then
 * forwards SIGTERM, waits up to grace_ms for every shard to exit (SIGKILL after) and returns.
 * SIGHUP reloads: a new generation is forked; once all of it called vega_shard_ready, the old
 * generation gets SIGTERM and drains; if a new shard exits or is not ready within
 * ready_timeout_ms the new generation is killed and the old one keeps serving (a reload waits
 * while older generations still draining hold every process slot, 3 per shard). A shard that
 * exits unasked is forked again after a backoff; one whose heartbeat stops is SIGKILLed and
 * forked again. The supervisor serves nothing and touches no connection.
 * Call it before any thread exists (no runtime yet): it forks without exec. It blocks SIGTERM,
 * SIGINT, SIGHUP, SIGCHLD (and SIGUSR2 with exec_argv) while it runs and restores the mask before
 * returning; it reaps only its own shards. Shards get SIGTERM when the supervisor dies
 * (PR_SET_PDEATHSIG). In a shard this function never returns: the shard exits with shard_main's
 * value. Returns 0 after a stop by signal or a binary upgrade; a shard's exit status (1..255, or
 * 128 + signal) when one of the first generation ended before it was ready (nothing is restarted
 * then: a configuration that cannot start is reported, not retried); -EINVAL (no shard_main, more
 * than 1024 shards, a shared_size above VEGA_SHARD_SHARED_MAX, options of a layout this library
 * does not know); -errno of signalfd, fork, mmap, pipe2, memfd_create, ftruncate.
 * Context: the main thread of a process with no other threads; blocks. Since 0.1.
 */
VEGA_API int vega_shard_run_versioned(const vega_shard_opts *o, int opts_version);
#define vega_shard_run(o) vega_shard_run_versioned(o, VEGA_SHARD_OPTS_VERSION)

/*
 * The sockets a binary upgrade handed to this process ($VEGA_SHARD_LISTEN_FDS, in the order of
 * the old supervisor's listen_fds): up to cap of them into fds. Each is checked to be an open
 * listening socket or a datagram socket (listen_fds may hold UDP sockets too: they are handed
 * over the same way). The variable is removed, so shards and later upgrades do not see it.
 * Returns how many (0: not started by an upgrade); -EINVAL (a malformed value, more than cap, or
 * a descriptor that is not a listening socket).
 * Context: before vega_shard_run, with no other threads (it changes the environment). Since 0.2.
 */
VEGA_API int vega_shard_inherited_fds(int *fds, size_t cap);

/* The shard's place (0 .. shards-1) and generation (1 at start, +1 per reload). Since 0.1. */
VEGA_API unsigned vega_shard_index(const vega_shard *s);
VEGA_API unsigned vega_shard_generation(const vega_shard *s);

/* The region of vega_shard_opts.shared_size bytes shared by the supervisor and every shard
 * (the same in all of them, mapped before the fork), and its size in *len when len is not NULL.
 * Returns it, or NULL (and 0 in *len) when the options asked for none. Context: any thread of
 * the shard. Since 0.3. */
VEGA_API void *vega_shard_shared(const vega_shard *s, size_t *len);

/* Tells the supervisor this shard serves (a reload waits for it). Also a heartbeat.
 * Context: any thread of the shard; never blocks. Since 0.1. */
VEGA_API void vega_shard_ready(vega_shard *s);

/* One heartbeat (a counter in memory shared with the supervisor). Context: any thread of the
 * shard; never blocks. Since 0.1. */
VEGA_API void vega_shard_heartbeat(vega_shard *s);

/*
 * Spawns a detached task in the current runtime that calls vega_shard_heartbeat every
 * interval_ms (0 = 1000) until the runtime ends: a runtime whose workers are all stuck stops
 * beating and the supervisor replaces the shard.
 * Returns 0; -EINVAL (s is NULL); VEGA_ERR_NOTASK (not called from a task); the codes of
 * vega_task_spawn.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_shard_heartbeat_start(vega_shard *s, unsigned interval_ms);

/* Writes a one-line description of ev (no newline) into buf; returns what snprintf returns.
 * Since 0.1. */
VEGA_API int vega_shard_event_format(const vega_shard_event *ev, char *buf, size_t cap);

/*
 * Whether net.ipv4.tcp_migrate_req is on: 1 on, 0 off, -errno when it cannot be read. Only a
 * design with one SO_REUSEPORT socket per shard needs it (a closing socket's queued connections
 * then move to a live one); vega_shard_run's shared sockets do not. Since 0.1.
 */
VEGA_API int vega_shard_tcp_migrate_req(void);

#ifdef __cplusplus
}
#endif

#endif
