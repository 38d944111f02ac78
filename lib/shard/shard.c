/* SPDX-License-Identifier: MIT */
/* The shard's side: readiness and heartbeats into the shared page, the heartbeat task, event
 * lines, and the tcp_migrate_req probe. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vega/rt.h>

#include "shard_int.h"

unsigned vega_shard_index(const vega_shard *s)
{
    return s ? s->index : 0;
}

unsigned vega_shard_generation(const vega_shard *s)
{
    return s ? s->generation : 0;
}

void *vega_shard_shared(const vega_shard *s, size_t *len)
{
    if (len)
        *len = s ? s->shared_len : 0;
    return s ? s->shared : NULL;
}

void vega_shard_heartbeat(vega_shard *s)
{
    if (s && s->slot)
        atomic_fetch_add_explicit(&s->slot->beats, 1, memory_order_relaxed);
}

void vega_shard_ready(vega_shard *s)
{
    if (!s || !s->slot)
        return;
    vega_shard_heartbeat(s);
    atomic_store_explicit(&s->slot->ready, 1, memory_order_release);
}

struct beat_arg {
    vega_shard *s;
    unsigned interval_ms;
};

static struct beat_arg beat_arg; /* one heartbeat task per shard process */

static void *beat_main(void *arg)
{
    struct beat_arg *b = arg;
    do
        vega_shard_heartbeat(b->s);
    while (vega_sleep_ms(b->interval_ms) == 0);
    return NULL;
}

int vega_shard_heartbeat_start(vega_shard *s, unsigned interval_ms)
{
    if (!s)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    beat_arg = (struct beat_arg){s, interval_ms ? interval_ms : 1000};
    vega_task *t;
    int r = vega_task_spawn(&t, beat_main, &beat_arg);
    if (r < 0)
        return r;
    vega_task_detach(t);
    return 0;
}

static const char *sig_name(int sig)
{
    const char *n = sig > 0 ? sigabbrev_np(sig) : NULL;
    return n ? n : "?";
}

/* ", exit status 3" or ", killed by SIGKILL" */
static void how_ended(const vega_shard_event *ev, char *buf, size_t cap)
{
    if (ev->signal)
        snprintf(buf, cap, "killed by SIG%s", sig_name(ev->signal));
    else
        snprintf(buf, cap, "exit status %d", ev->code);
}

int vega_shard_event_format(const vega_shard_event *ev, char *buf, size_t cap)
{
    char how[48];
    unsigned i = ev->index, g = ev->generation;
    switch (ev->kind) {
    case VEGA_SHARD_EV_STARTED:
        return snprintf(buf, cap, "shard %u started: pid %d (generation %u)", i, ev->pid, g);
    case VEGA_SHARD_EV_READY:
        return snprintf(buf, cap, "shard %u ready: pid %d (generation %u)", i, ev->pid, g);
    case VEGA_SHARD_EV_EXITED:
        how_ended(ev, how, sizeof how);
        return snprintf(buf, cap, "shard %u pid %d %s", i, ev->pid, how);
    case VEGA_SHARD_EV_RESTART:
        return snprintf(buf, cap, "shard %u restarts in %u ms", i, ev->delay_ms);
    case VEGA_SHARD_EV_HUNG:
        return snprintf(buf, cap, "shard %u pid %d sent no heartbeat in time: SIGKILL", i, ev->pid);
    case VEGA_SHARD_EV_RELOAD:
        return snprintf(buf, cap, "reload: starting generation %u", g);
    case VEGA_SHARD_EV_RELOADED:
        return snprintf(buf, cap, "reload: generation %u ready, older shards drain", g);
    case VEGA_SHARD_EV_RELOAD_FAILED:
        return snprintf(buf, cap,
                        "reload failed: generation %u did not start; the running "
                        "shards stay",
                        g);
    case VEGA_SHARD_EV_DRAINED:
        how_ended(ev, how, sizeof how);
        return snprintf(buf, cap, "shard %u pid %d (generation %u) stopped: %s", i, ev->pid, g,
                        how);
    case VEGA_SHARD_EV_STOPPING:
        return snprintf(buf, cap, "SIG%s: stopping every shard", sig_name(ev->signal));
    case VEGA_SHARD_EV_UPGRADE:
        return snprintf(buf, cap, "upgrade: new supervisor pid %d started", ev->pid);
    case VEGA_SHARD_EV_UPGRADED:
        return snprintf(buf, cap,
                        "upgrade: new supervisor pid %d ready; this one drains its shards and "
                        "exits",
                        ev->pid);
    case VEGA_SHARD_EV_UPGRADE_FAILED:
        return snprintf(buf, cap,
                        "upgrade failed: new supervisor pid %d did not start; nothing "
                        "changes",
                        ev->pid);
    case VEGA_SHARD_EV_KILLED:
        return snprintf(buf, cap, "shard %u pid %d still running after the grace: SIGKILL", i,
                        ev->pid);
    }
    return snprintf(buf, cap, "shard event %d", (int)ev->kind);
}

int vega_shard_tcp_migrate_req(void)
{
    int fd = open("/proc/sys/net/ipv4/tcp_migrate_req", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    return n == 1 && c == '1' ? 1 : 0;
}
