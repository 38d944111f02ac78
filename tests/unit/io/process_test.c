#include <dirent.h>
/* SPDX-License-Identifier: MIT */
/* Child processes on the runtime: output collection, exit status, piped stdin, environment and
 * directory, kill, wait deadlines, exec failures without zombies, output caps, many children
 * at once, and a clean signal state in the child. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/process.h>
#include <vega/rt.h>

#include "vtest.h"

#define MIB (1024 * 1024)

/* ---- harness --------------------------------------------------------------------------------- */

static long scaled(long n)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

/* Runs body as the main task of a fresh runtime; workers == 0 means current-thread. */

static vega_deadline soon(void)
{
    return vega_deadline_in_ms(5000);
}

/* A child the sanitizer runtime started for itself (TSan/ASan run llvm-symbolizer as a
 * helper process), not one of ours. */
static bool sanitizer_helper(pid_t pid)
{
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (!fgets(comm, sizeof comm, f))
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "llvm-symbolizer", 15) == 0 || strncmp(comm, "addr2line", 9) == 0;
}

/* The pids of this process's children, from /proc (every thread's list). */
static size_t list_children(pid_t *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        int pid;
        while (f && fscanf(f, "%d", &pid) == 1 && n < max)
            out[n++] = (pid_t)pid;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

/* True when this process has no child left, not even a zombie (the sanitizer's own helper
 * processes aside); with report, says which one is. */
static bool children_gone(bool report)
{
    pid_t kids[64];
    size_t n = list_children(kids, 64);
    for (size_t i = 0; i < n; i++) {
        if (sanitizer_helper(kids[i]))
            continue;
        if (report)
            fprintf(stderr, "a child is left: pid %d\n", (int)kids[i]);
        return false;
    }
    return true;
}

static bool no_children(void)
{
    return children_gone(true);
}

/* Runs argv to completion, stdout into out (NUL-terminated), stderr into err when not NULL. */
static int output(char *const *argv, char *out, size_t cap, char *err, size_t errcap,
                  vega_process_status *st)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = argv;
    vega_process_capture co = {out, cap - 1, 0}, ce = {err, errcap ? errcap - 1 : 0, 0};
    int r = vega_process_output(&o, NULL, 0, &co, err ? &ce : NULL, st, soon());
    out[co.len] = '\0';
    if (err)
        err[ce.len] = '\0';
    return r;
}

/* ---- output and status ---------------------------------------------------------------------- */

static void body_echo(void)
{
    char out[64], err[64];
    vega_process_status st = {99, 99, true};
    VCHECK_EQ(output((char *[]){"/bin/echo", "hi", NULL}, out, sizeof out, NULL, 0, &st), 0);
    VCHECK_STR(out, "hi\n");
    VCHECK_EQ(st.code, 0);
    VCHECK_EQ(st.signal, 0);
    VCHECK(!st.core_dumped);

    /* Both streams at once, and a PATH lookup. */
    VCHECK_EQ(output((char *[]){"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, out,
                     sizeof out, err, sizeof err, &st),
              0);
    VCHECK_STR(out, "out\n");
    VCHECK_STR(err, "err\n");
    VCHECK_EQ(st.code, 3);
    VCHECK(no_children());
}

VTEST(echo_output)
{
    vtest_run(body_echo, 2);
}

static void body_exit_status(void)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sh", "-c", "exit 3", NULL};
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    VCHECK(vega_process_pid(p) > 0);
    VCHECK(vega_process_pidfd(p) >= 0);
    VCHECK_EQ(vega_process_pipe(p, 0), -1);
    vega_process_status st;
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.code, 3);
    VCHECK_EQ(st.signal, 0);
    /* Reaped: the same status again, at once, even with a deadline of 0. */
    vega_process_status again;
    VCHECK_EQ(vega_process_wait(p, &again, 0), 0);
    VCHECK_EQ(again.code, 3);
    VCHECK_EQ(vega_process_kill(p, SIGTERM), -ESRCH);
    vega_process_free(p);
    VCHECK(no_children());
}

VTEST(exit_status)
{
    vtest_run(body_exit_status, 2);
}

VTEST(exit_status_current_thread)
{
    vtest_run(body_exit_status, 0);
}

/* ---- stdin piped through cat ---------------------------------------------------------------- */

static unsigned char *cat_in;

static void *feed_stdin(void *arg)
{
    vega_process *p = arg;
    size_t w = 0;
    VCHECK_EQ(vega_fd_write(vega_process_pipe(p, 0), cat_in, MIB, &w, soon()), MIB);
    vega_process_pipe_close(p, 0);
    return NULL;
}

static void body_cat(void)
{
    cat_in = malloc(MIB);
    unsigned char *back = malloc(MIB + 1);
    VCHECK(cat_in && back);
    for (size_t i = 0; i < MIB; i++)
        cat_in[i] = (unsigned char)(i * 7 + (i >> 11));

    /* By hand: a writer task and a reader here. */
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"cat", NULL};
    o.stdio[0].mode = VEGA_STDIO_PIPE;
    o.stdio[1].mode = VEGA_STDIO_PIPE;
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    int rfd = vega_process_pipe(p, 1);
    VCHECK(rfd >= 0 && vega_process_pipe(p, 0) >= 0);
    VCHECK(fcntl(rfd, F_GETFL) & O_NONBLOCK);
    VCHECK(fcntl(rfd, F_GETFD) & FD_CLOEXEC);
    vega_task *writer;
    VCHECK_EQ(vega_task_spawn(&writer, feed_stdin, p), 0);
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_fd_read(rfd, back + got, MIB + 1 - got, soon());
        VCHECK(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
    }
    VCHECK_EQ(got, MIB);
    VCHECK(memcmp(back, cat_in, MIB) == 0);
    VCHECK_EQ(vega_task_join(writer, NULL, soon()), 0);
    vega_process_status st;
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.code, 0);
    vega_process_free(p);

    /* The same through vega_process_output: exactly the cap fits. */
    memset(back, 0, MIB);
    vega_process_capture co = {back, MIB, 0};
    vega_process_opts_init(&o);
    o.argv = (char *[]){"cat", NULL};
    VCHECK_EQ(vega_process_output(&o, cat_in, MIB, &co, NULL, &st, soon()), 0);
    VCHECK_EQ(co.len, MIB);
    VCHECK(memcmp(back, cat_in, MIB) == 0);
    VCHECK_EQ(st.code, 0);

    /* A child that ignores its input: not an error. */
    char out[16];
    co = (vega_process_capture){out, sizeof out, 0};
    o.argv = (char *[]){"true", NULL};
    VCHECK_EQ(vega_process_output(&o, cat_in, MIB, &co, NULL, &st, soon()), 0);
    VCHECK_EQ(co.len, 0);
    VCHECK(no_children());
    free(cat_in);
    free(back);
}

VTEST(stdin_cat_1mib)
{
    vtest_run(body_cat, 2);
}

/* ---- environment and directory -------------------------------------------------------------- */

static void body_env_cwd(void)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vega-proc-XXXXXX", t && *t ? t : "/tmp");
    VCHECK(mkdtemp(dir) != NULL);
    VCHECK(realpath(dir, real) != NULL);

    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sh", "-c", "echo $FOO; pwd -P; echo ${HOME:-unset}", NULL};
    o.envp = (char *[]){"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
    o.cwd = dir;
    char out[PATH_MAX + 64], expect[PATH_MAX + 64];
    vega_process_capture co = {out, sizeof out - 1, 0};
    vega_process_status st;
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, soon()), 0);
    out[co.len] = '\0';
    snprintf(expect, sizeof expect, "bar baz\n%s\nunset\n", real);
    VCHECK_STR(out, expect);
    VCHECK_EQ(st.code, 0);

    /* A missing directory is the spawn's error. */
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    o.cwd = missing;
    co.len = 0;
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, soon()), -ENOENT);
    VCHECK(no_children());
    VCHECK_EQ(rmdir(dir), 0);
}

VTEST(env_and_cwd)
{
    vtest_run(body_env_cwd, 2);
}

/* ---- kill, deadlines, failures -------------------------------------------------------------- */

static void body_kill(void)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sleep", "60", NULL};
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    VCHECK_EQ(vega_process_kill(p, SIGTERM), 0);
    vega_process_status st;
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.code, -1);
    VCHECK_EQ(st.signal, SIGTERM);
    VCHECK(!st.core_dumped);
    vega_process_free(p);
    VCHECK(no_children());
}

VTEST(kill_sleep)
{
    vtest_run(body_kill, 2);
}

static void body_wait_deadline(void)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sleep", "1", NULL};
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    vega_process_status st;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_process_wait(p, &st, vega_deadline_in_ms(50)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 50 * VEGA_NS_PER_MS);
    VCHECK_EQ(vega_process_wait(p, &st, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.code, 0);
    VCHECK(vega_now() - t0 >= 900 * VEGA_NS_PER_MS);
    vega_process_free(p);
    VCHECK(no_children());
}

VTEST(wait_deadline)
{
    vtest_run(body_wait_deadline, 2);
}

static vega_process *waited;

static void *wait_task(void *arg)
{
    vega_process_status st;
    return (void *)(intptr_t)vega_process_wait(waited, &st, VEGA_DEADLINE_NEVER);
}

static void body_wait_cancel(void)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sleep", "60", NULL};
    VCHECK_EQ(vega_process_spawn(&waited, &o), 0);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, wait_task, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
    vega_task_cancel(t);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, soon()), 0);
    VCHECK_EQ((intptr_t)res, -ECANCELED);
    /* Two waiters at once both see the status. */
    vega_task *a, *b;
    VCHECK_EQ(vega_task_spawn(&a, wait_task, NULL), 0);
    VCHECK_EQ(vega_task_spawn(&b, wait_task, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(5), 0);
    VCHECK_EQ(vega_process_kill(waited, SIGKILL), 0);
    VCHECK_EQ(vega_task_join(a, &res, soon()), 0);
    VCHECK_EQ((intptr_t)res, 0);
    VCHECK_EQ(vega_task_join(b, &res, soon()), 0);
    VCHECK_EQ((intptr_t)res, 0);
    vega_process_free(waited);
    VCHECK(no_children());
}

VTEST(wait_cancel)
{
    vtest_run(body_wait_cancel, 2);
}

static void body_missing(void)
{
    vega_process_opts o;
    vega_process_opts_init(&o);
    vega_process *p = NULL;
    o.argv = (char *[]){"/nonexistent/vega-no-such-program", NULL};
    VCHECK_EQ(vega_process_spawn(&p, &o), -ENOENT);
    VCHECK(p == NULL);
    o.argv = (char *[]){"vega-no-such-program-in-path", NULL};
    VCHECK_EQ(vega_process_spawn(&p, &o), -ENOENT);
    VCHECK(no_children());
    char out[8];
    vega_process_capture co = {out, sizeof out, 0};
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, NULL, soon()), -ENOENT);
    VCHECK(no_children());
    /* Bad arguments. */
    o.argv = NULL;
    VCHECK_EQ(vega_process_spawn(&p, &o), -EINVAL);
    o.argv = (char *[]){"true", NULL};
    o.stdio[1].mode = VEGA_STDIO_FD;
    o.stdio[1].fd = -1;
    VCHECK_EQ(vega_process_spawn(&p, &o), -EINVAL);
    VCHECK(p == NULL);
}

VTEST(missing_executable)
{
    vtest_run(body_missing, 2);
}

static void body_cap(void)
{
    /* `yes` never stops: only the cap (and the kill that follows) ends it. */
    char out[4096];
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"yes", NULL};
    vega_process_capture co = {out, sizeof out, 0};
    vega_process_status st;
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, soon()), VEGA_ERR_NOBUF);
    VCHECK_EQ(co.len, sizeof out);
    VCHECK(memcmp(out, "y\ny\n", 4) == 0);
    VCHECK(no_children());

    /* The cap on stderr, with stdout captured too. */
    char err[16];
    vega_process_capture ce = {err, sizeof err, 0};
    co.len = 0;
    o.argv = (char *[]){"sh", "-c", "echo fine; exec yes >&2", NULL};
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, &ce, &st, soon()), VEGA_ERR_NOBUF);
    VCHECK_EQ(ce.len, sizeof err);
    VCHECK(no_children());

    /* A deadline on the whole run: the child is killed and reaped. (Were it waited for instead,
     * the case would outlast CTest's timeout: no bound on how soon a loaded machine returns.) */
    o.argv = (char *[]){"sleep", "3600", NULL};
    co.len = 0;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, vega_deadline_in_ms(50)),
              -ETIMEDOUT);
    VCHECK_WAITED(t0, 50);
    VCHECK(no_children());
}

VTEST(output_cap)
{
    vtest_run(body_cap, 2);
}

static void *output_sleeper(void *arg)
{
    char out[8];
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sleep", "60", NULL};
    vega_process_capture co = {out, sizeof out, 0};
    return (void *)(intptr_t)vega_process_output(&o, "x", 1, &co, NULL, NULL, VEGA_DEADLINE_NEVER);
}

static void body_output_cancel(void)
{
    /* Cancelled while the child runs: the call returns -ECANCELED, the child is killed and
     * reaped (by the call or by a reaper task). */
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, output_sleeper, NULL), 0);
    VCHECK_EQ(vega_sleep_ms(20), 0);
    VCHECK(!children_gone(false));
    vega_task_cancel(t);
    void *res;
    VCHECK_EQ(vega_task_join(t, &res, soon()), 0);
    VCHECK_EQ((intptr_t)res, -ECANCELED);
    for (int i = 0; i < 200 && !children_gone(false); i++)
        VCHECK_EQ(vega_sleep_ms(5), 0);
    VCHECK(no_children());
}

VTEST(output_cancel)
{
    vtest_run(body_output_cancel, 2);
}

/* ---- many at once --------------------------------------------------------------------------- */

static atomic_uint workers_used;

static void *short_child(void *arg)
{
    long i = (long)(intptr_t)arg;
    char num[32], out[64], expect[64];
    snprintf(num, sizeof num, "%ld", i);
    vega_process_status st;
    atomic_fetch_or(&workers_used, 1u << (vega_worker_index() & 31));
    VCHECK_EQ(output((char *[]){"sh", "-c", "echo $0; exit $(($0 % 7))", num, NULL}, out,
                     sizeof out, NULL, 0, &st),
              0);
    snprintf(expect, sizeof expect, "%ld\n", i);
    VCHECK_STR(out, expect);
    VCHECK_EQ(st.code, i % 7);
    return NULL;
}

static void body_many(void)
{
    long n = scaled(50);
    if (n < 10)
        n = 10;
    vega_task *t[50];
    for (long i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], short_child, (void *)(intptr_t)i), 0);
    for (long i = 0; i < n; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, vega_deadline_in_ms(20000)), 0);
    VCHECK(no_children());
}

VTEST(many_concurrent)
{
    vtest_run(body_many, 4);
}

/* ---- signals in the child ------------------------------------------------------------------- */

static void body_signals(void)
{
    /* The runtime's threads block SIGTERM (as vega_signal_wait does) and the test harness
     * ignores SIGPIPE: the child must see neither. */
    char out[256];
    vega_process_status st;
    VCHECK_EQ(output((char *[]){"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL}, out,
                     sizeof out, NULL, 0, &st),
              0);
    VCHECK_STR(out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");

    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sleep", "60", NULL};
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    VCHECK_EQ(vega_process_kill(p, SIGTERM), 0);
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.signal, SIGTERM);
    vega_process_free(p);
}

VTEST(child_signals_reset)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    VCHECK_EQ(vega_signal_block(&set), 0); /* before the runtime: every worker inherits it */
    vtest_run(body_signals, 2);
}

/* ---- stdio wiring and free ------------------------------------------------------------------ */

static void body_stdio(void)
{
    /* stderr onto the parent's copy of the stdout pipe (2>&1), stdin from /dev/null. */
    int pp[2];
    VCHECK_EQ(pipe2(pp, O_CLOEXEC | O_NONBLOCK), 0);
    vega_process_opts o;
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sh", "-c", "cat; echo a; echo b >&2", NULL};
    o.stdio[0].mode = VEGA_STDIO_NULL;
    o.stdio[1] = (vega_stdio){VEGA_STDIO_FD, pp[1]};
    o.stdio[2] = (vega_stdio){VEGA_STDIO_FD, pp[1]};
    vega_process *p;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    close(pp[1]);
    char buf[16];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_fd_read(pp[0], buf + got, sizeof buf - got, soon());
        VCHECK(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
    }
    VCHECK_EQ(got, 4);
    VCHECK(memcmp(buf, "a\nb\n", 4) == 0);
    close(pp[0]);
    vega_process_status st;
    VCHECK_EQ(vega_process_wait(p, &st, soon()), 0);
    VCHECK_EQ(st.code, 0);
    vega_process_free(p);

    /* A descriptor without close-on-exec reaches the child unless close_fds is set. */
    int leak = open("/dev/null", O_RDONLY);
    VCHECK(leak > 2);
    char script[96], out[16];
    snprintf(script, sizeof script, "test -e /proc/self/fd/%d && echo open || echo shut", leak);
    vega_process_opts_init(&o);
    o.argv = (char *[]){"sh", "-c", script, NULL};
    vega_process_capture co = {out, sizeof out - 1, 0};
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, soon()), 0);
    out[co.len] = '\0';
    VCHECK_STR(out, "open\n");
    o.close_fds = true;
    VCHECK_EQ(vega_process_output(&o, NULL, 0, &co, NULL, &st, soon()), 0);
    out[co.len] = '\0';
    VCHECK_STR(out, "shut\n");
    close(leak);

    /* Freed while running: a reaper task takes it over; with kill_on_free it dies at once. */
    o = (vega_process_opts){0};
    o.argv = (char *[]){"sleep", "0.05", NULL};
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    vega_process_free(p);
    o.argv = (char *[]){"sleep", "60", NULL};
    o.kill_on_free = true;
    VCHECK_EQ(vega_process_spawn(&p, &o), 0);
    vega_process_free(p);
    for (int i = 0; i < 200 && !children_gone(false); i++)
        VCHECK_EQ(vega_sleep_ms(5), 0);
    VCHECK(no_children());
}

VTEST(stdio_and_free)
{
    vtest_run(body_stdio, 2);
}
