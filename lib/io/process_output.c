/* SPDX-License-Identifier: MIT */
/* vega_process_output: run a child to completion, feeding stdin and collecting stdout and
 * stderr at the same time (helper tasks in a group), each under a hard cap. */
#include <signal.h>
#include <unistd.h>

#include <vega/process.h>

#include "io_int.h"

/* One stream between the parent and the child, handled by one task. */
struct pump {
    vega_process *p;
    int which; /* 0: write input to stdin; 1, 2: read stdout/stderr into cap */
    const void *input;
    size_t input_len;
    vega_process_capture *cap;
    vega_deadline dl;
    int res;
};

static int pump_read(struct pump *s)
{
    int fd = vega_process_pipe(s->p, s->which);
    vega_process_capture *c = s->cap;
    for (;;) {
        /* With the buffer full, one more byte tells end of file from overflow. */
        char extra;
        size_t room = vega__room(c->len, c->cap); /* len starts at 0, grows by at most room */
        vega_ssize n =
            vega_fd_read(fd, room ? (char *)c->buf + c->len : &extra, room ? room : 1, s->dl);
        if (n <= 0)
            return (int)n;
        if (!room)
            return VEGA_ERR_NOBUF;
        c->len += (size_t)n;
        VEGA_ASSERT(c->len <= c->cap);
    }
}

static void *pump_task(void *arg)
{
    struct pump *s = arg;
    if (s->which == 0) {
        vega_ssize r =
            vega_fd_write(vega_process_pipe(s->p, 0), s->input, s->input_len, NULL, s->dl);
        /* A child that stops reading its input early is not an error. */
        s->res = r == -EPIPE ? 0 : r < 0 ? (int)r : 0;
        vega_process_pipe_close(s->p, 0);
    } else {
        s->res = pump_read(s);
    }
    /* Any failure ends the child, so the other streams reach end of file. */
    if (s->res < 0)
        (void)vega_process_kill(s->p, SIGKILL);
    return NULL;
}

static void prepare_stdio(vega_stdio *s, bool piped)
{
    if (piped)
        s->mode = VEGA_STDIO_PIPE;
    else if (s->mode == VEGA_STDIO_PIPE)
        s->mode = VEGA_STDIO_NULL; /* nobody would drain it */
}

int vega_process_output_versioned(const vega_process_opts *o, const void *input, size_t input_len,
                                  vega_process_capture *out, vega_process_capture *err,
                                  vega_process_status *status, vega_deadline dl, int opts_version)
{
    if (opts_version != VEGA_PROCESS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!o)
        return -EINVAL;
    if (!vega_task_current())
        return VEGA_ERR_NOTASK;
    vega_process_opts po = *o;
    prepare_stdio(&po.stdio[0], input != NULL);
    prepare_stdio(&po.stdio[1], out != NULL);
    prepare_stdio(&po.stdio[2], err != NULL);
    po.kill_on_free = true;
    if (out)
        out->len = 0;
    if (err)
        err->len = 0;

    vega_group *g;
    int r = vega_group_new(&g);
    if (r < 0)
        return r;
    vega_process *p;
    r = vega_process_spawn(&p, &po);
    if (r < 0) {
        vega_group_free(g);
        return r;
    }
    struct pump pumps[3] = {
        {p, 0, input, input_len, NULL, dl, 0},
        {p, 1, NULL, 0, out, dl, 0},
        {p, 2, NULL, 0, err, dl, 0},
    };
    bool used[3] = {input != NULL, out != NULL, err != NULL};
    /* The last stream is pumped by this task, the others by group members. */
    int mine = used[1] ? 1 : used[2] ? 2 : used[0] ? 0 : -1;
    for (int i = 0; i < 3 && r == 0; i++)
        if (used[i] && i != mine)
            r = vega_group_spawn(g, pump_task, &pumps[i]);
    if (r < 0)
        (void)vega_process_kill(p, SIGKILL);
    else if (mine >= 0)
        pump_task(&pumps[mine]);
    /* A cancelled wait here leaves the members to vega_group_free, which cancels and joins. */
    (void)vega_group_wait(g, VEGA_DEADLINE_NEVER);
    vega_group_free(g);
    for (int i = 0; i < 3 && r == 0; i++)
        r = pumps[i].res;

    vega_process_status st;
    int w = vega_process_wait(p, &st, r < 0 ? VEGA_DEADLINE_NEVER : dl);
    if (w < 0 && r == 0) {
        r = w;
        (void)vega_process_kill(p, SIGKILL);
        (void)vega_process_wait(p, &st, VEGA_DEADLINE_NEVER);
    }
    if (r == 0 && status)
        *status = st;
    /* Reaped, or (cancelled) killed and handed to a reaper task. */
    vega_process_free(p);
    return r;
}
