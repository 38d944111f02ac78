/* SPDX-License-Identifier: MIT */
/* Child processes: posix_spawn (a vfork-style clone inside glibc: no page-table copy, no code of
 * ours between clone and exec) plus a pidfd, whose readiness says the child exited and through
 * which it is reaped (waitid P_PIDFD) and signalled (pidfd_send_signal). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vega/process.h>
#include <vega/sync.h>

#include "io_int.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern char **environ;

struct vega_process {
    int pid;
    int pidfd;
    int pipes[3]; /* the parent's ends, -1 when not a pipe or closed */
    bool kill_on_free;
    pthread_mutex_t mu; /* guards reaped and status: several tasks may wait at once */
    vega_mutex poller;  /* held by the one waiter that polls the pidfd (a driver may take
                           only one reader per descriptor) */
    bool reaped;
    vega_process_status status;
};

static int sys_pidfd_open(int pid)
{
    long r = syscall(SYS_pidfd_open, pid, 0);
    return r < 0 ? -errno : (int)r;
}

static int sys_pidfd_send_signal(int pidfd, int sig)
{
    long r = syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
    return r < 0 ? -errno : 0;
}

void vega_process_opts_init_versioned(vega_process_opts *o, int opts_version)
{
    if (opts_version != VEGA_PROCESS_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_process_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, sizeof(*o));
}

/* ---- spawn ---------------------------------------------------------------------------------- */

/* The child's side of one stdio descriptor. */
struct stdio_setup {
    int fd;   /* what the child's descriptor `which` becomes; -1 = inherit */
    bool own; /* fd was opened here and is closed after the spawn */
};

/* Prepares stdio descriptor `which`; *parent receives the parent's pipe end. Every fd handed to
 * the child is moved above 2, so one dup2 never overwrites the source of the next. */
static int stdio_prepare(const vega_stdio *s, int which, struct stdio_setup *c, int *parent)
{
    int fd;
    c->fd = -1;
    c->own = false;
    switch (s->mode) {
    case VEGA_STDIO_INHERIT:
        return 0;
    case VEGA_STDIO_NULL:
        fd = open("/dev/null", (which == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        c->own = true;
        break;
    case VEGA_STDIO_PIPE: {
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) < 0)
            return -errno;
        int mine = which == 0 ? pp[1] : pp[0];
        fd = which == 0 ? pp[0] : pp[1];
        if (fcntl(mine, F_SETFL, O_NONBLOCK) < 0) {
            int e = -errno;
            close(pp[0]);
            close(pp[1]);
            return e;
        }
        *parent = mine;
        c->own = true;
        break;
    }
    case VEGA_STDIO_FD:
        if (s->fd < 0)
            return -EINVAL;
        fd = s->fd;
        break;
    default:
        return -EINVAL;
    }
    if (fd < 3) {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        int e = d < 0 ? -errno : 0;
        if (c->own)
            close(fd);
        if (d < 0) {
            if (*parent >= 0) {
                close(*parent);
                *parent = -1;
            }
            return e;
        }
        fd = d;
        c->own = true;
    }
    c->fd = fd;
    return 0;
}

static int spawn_child(int *pid, const vega_process_opts *o, const struct stdio_setup *c)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int r = posix_spawn_file_actions_init(&fa);
    if (r)
        return -r;
    r = posix_spawnattr_init(&at);
    if (r) {
        posix_spawn_file_actions_destroy(&fa);
        return -r;
    }
    for (int i = 0; i < 3 && !r; i++)
        if (c[i].fd >= 0)
            r = posix_spawn_file_actions_adddup2(&fa, c[i].fd, i);
    if (!r && o->close_fds)
        r = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (!r && o->cwd)
        r = posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
    /* The runtime's threads may block signals (vega_signal_wait) and the program may ignore
     * some (SIGPIPE): the child starts clean, with nothing blocked and every action default. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
#if defined(__GLIBC__)
    /* glibc's sigfillset leaves out the two signals it reserves (32 and 33, below SIGRTMIN),
     * and its posix_spawn then sets them to SIG_IGN in the child, where they stay ignored
     * after exec. Naming them in the default set (sigaddset refuses them; signal n is bit n-1
     * of glibc's array of unsigned long) makes them SIG_DFL like every other signal. */
    if (SIGRTMIN > 33) {
        unsigned long *word = (unsigned long *)(void *)&all;
        const unsigned bits = 8 * sizeof(unsigned long);
        for (unsigned sig = 32; sig <= 33; sig++)
            word[(sig - 1) / bits] |= 1ul << ((sig - 1) % bits);
    }
#endif
    if (!r)
        r = posix_spawnattr_setsigmask(&at, &none);
    if (!r)
        r = posix_spawnattr_setsigdefault(&at, &all);
    if (!r)
        r = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!r) {
        const char *prog = o->path ? o->path : o->argv[0];
        char *const *envp = o->envp ? o->envp : environ;
        pid_t p;
        /* glibc reports a failed exec here and reaps that child itself. */
        if (strchr(prog, '/'))
            r = posix_spawn(&p, prog, &fa, &at, o->argv, envp);
        else
            r = posix_spawnp(&p, prog, &fa, &at, o->argv, envp);
        if (!r)
            *pid = (int)p;
    }
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return -r;
}

int vega_process_spawn_versioned(vega_process **out, const vega_process_opts *o, int opts_version)
{
    if (opts_version != VEGA_PROCESS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!o || !o->argv || !o->argv[0])
        return -EINVAL;
    struct vega_process *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->pid = -1;
    p->pidfd = -1;
    for (int i = 0; i < 3; i++)
        p->pipes[i] = -1;
    p->kill_on_free = o->kill_on_free;
    struct stdio_setup c[3] = {{-1, false}, {-1, false}, {-1, false}};
    int r = 0;
    for (int i = 0; i < 3 && !r; i++)
        r = stdio_prepare(&o->stdio[i], i, &c[i], &p->pipes[i]);
    if (!r)
        r = spawn_child(&p->pid, o, c);
    for (int i = 0; i < 3; i++)
        if (c[i].own)
            close(c[i].fd);
    if (!r) {
        /* Race-free: nobody but us reaps this child, so the pid stays ours until we wait. */
        r = sys_pidfd_open(p->pid);
        if (r >= 0) {
            p->pidfd = r;
            r = 0;
        } else {
            kill(p->pid, SIGKILL);
            while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
    }
    if (r < 0) {
        for (int i = 0; i < 3; i++)
            if (p->pipes[i] >= 0)
                close(p->pipes[i]);
        free(p);
        return r;
    }
    pthread_mutex_init(&p->mu, NULL);
    vega_mutex_init(&p->poller);
    *out = p;
    return 0;
}

/* ---- wait, kill, accessors ------------------------------------------------------------------ */

/* Reaps the child if it exited. Returns 1 (reaped; *st filled), 0 (still running), -errno. */
static int try_reap(struct vega_process *p, vega_process_status *st)
{
    int r = 0;
    pthread_mutex_lock(&p->mu);
    while (!p->reaped) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            break;
        }
        if (si.si_pid == 0)
            break;
        vega_process_status s = {.code = -1};
        if (si.si_code == CLD_EXITED)
            s.code = si.si_status;
        else {
            s.signal = si.si_status;
            s.core_dumped = si.si_code == CLD_DUMPED;
        }
        p->status = s;
        p->reaped = true;
    }
    if (p->reaped) {
        if (st)
            *st = p->status;
        r = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

int vega_process_wait(vega_process *p, vega_process_status *status, vega_deadline dl)
{
    for (;;) {
        int r = try_reap(p, status);
        if (r != 0)
            return r < 0 ? r : 0;
        r = vega_mutex_lock(&p->poller, dl);
        if (r < 0)
            return r;
        r = try_reap(p, status);
        if (r != 0) {
            vega_mutex_unlock(&p->poller);
            return r < 0 ? r : 0;
        }
        /* The pidfd turns readable when the child exits; until then this is a plain
         * readiness wait, cancelled or timed out like any other. */
        r = vega__io_wait(p->pidfd, POLLIN, dl);
        vega_mutex_unlock(&p->poller);
        if (r < 0)
            return r;
    }
}

int vega_process_kill(vega_process *p, int sig)
{
    return sys_pidfd_send_signal(p->pidfd, sig);
}

int vega_process_pid(const vega_process *p)
{
    return p->pid;
}

int vega_process_pidfd(const vega_process *p)
{
    return p->pidfd;
}

int vega_process_pipe(const vega_process *p, int which)
{
    return which >= 0 && which < 3 ? p->pipes[which] : -1;
}

void vega_process_pipe_close(vega_process *p, int which)
{
    if (which < 0 || which > 2 || p->pipes[which] < 0)
        return;
    close(p->pipes[which]);
    p->pipes[which] = -1;
}

/* ---- free ----------------------------------------------------------------------------------- */

static void destroy(struct vega_process *p)
{
    close(p->pidfd);
    vega_mutex_fini(&p->poller);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* A detached task that owns a freed handle whose child still runs: reaps it when it exits. */
static void *reaper(void *arg)
{
    struct vega_process *p = arg;
    (void)vega_process_wait(p, NULL, VEGA_DEADLINE_NEVER);
    destroy(p);
    return NULL;
}

void vega_process_free(vega_process *p)
{
    if (!p)
        return;
    for (int i = 0; i < 3; i++)
        vega_process_pipe_close(p, i);
    if (try_reap(p, NULL) != 0) {
        destroy(p);
        return;
    }
    if (p->kill_on_free)
        (void)vega_process_kill(p, SIGKILL);
    if (vega_task_current()) {
        vega_spawn_opts so;
        vega_spawn_opts_init(&so);
        so.name = "process reaper";
        if (vega_task_spawn_ex(NULL, reaper, p, &so) == 0)
            return;
    }
    if (p->kill_on_free) {
        /* Killed: it dies at once, so a blocking reap is short. */
        siginfo_t si;
        while (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED) < 0 && errno == EINTR)
            ;
    }
    destroy(p);
}
