/* SPDX-License-Identifier: MIT */
/* Socket pairs (stream, datagram, seqpacket) and pipes between tasks on two workers. */
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

#define DL() vega_deadline_in_ms(3000)

static void check_fd_flags(int fd)
{
    VCHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    VCHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static unsigned char pat(size_t i)
{
    return (unsigned char)(i * 31u + (i >> 11));
}

/* ---- stream pair: 1 MiB one way, echoed in pieces the other ------------------------------ */

enum {
    TOTAL = 1 << 20
};

static void *stream_writer(void *arg)
{
    vega_sock *s = arg;
    static unsigned char buf[TOTAL];
    for (size_t i = 0; i < TOTAL; i++)
        buf[i] = pat(i);
    size_t w = 0;
    VCHECK_EQ(vega_sock_write(s, buf, TOTAL, &w, DL()), TOTAL);
    VCHECK_EQ(w, TOTAL);
    VCHECK_EQ(vega_sock_shutdown(s, SHUT_WR), 0);
    return NULL;
}

static void body_stream_pair(void)
{
    vega_sock *a, *b;
    VCHECK_EQ(vega_sock_pair(SOCK_STREAM, &a, &b), 0);
    check_fd_flags(vega_sock_fd(a));
    check_fd_flags(vega_sock_fd(b));
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, stream_writer, a), 0);
    unsigned char buf[7919];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_sock_read(b, buf, sizeof(buf), DL());
        VCHECK(n >= 0);
        if (n == 0)
            break;
        for (vega_ssize i = 0; i < n; i++)
            if (buf[i] != pat(got + (size_t)i))
                vtest_fail(__FILE__, __LINE__, "byte %zu differs", got + (size_t)i);
        got += (size_t)n;
    }
    VCHECK_EQ(got, TOTAL);
    VCHECK_EQ(vega_task_join(t, NULL, DL()), 0);
    vega_sock_close(a);
    vega_sock_close(b);
}

VTEST(stream_pair)
{
    vtest_run(body_stream_pair, 2);
}

/* ---- datagram and seqpacket pairs: ping-pong between two tasks ------------------------------ */

enum {
    ROUNDS = 500
};

static void *pong(void *arg)
{
    vega_sock *s = arg;
    char buf[64];
    for (int i = 0; i < ROUNDS; i++) {
        vega_ssize n = vega_sock_read(s, buf, sizeof(buf), DL());
        VCHECK(n > 0);
        buf[0] = (char)(buf[0] + 1);
        VCHECK_EQ(vega_sock_write(s, buf, (size_t)n, NULL, DL()), n);
    }
    return NULL;
}

static void ping_pong(int type)
{
    vega_sock *a, *b;
    VCHECK_EQ(vega_sock_pair(type, &a, &b), 0);
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, pong, b), 0);
    char buf[64], in[64];
    for (int i = 0; i < ROUNDS; i++) {
        /* Two messages per round, read back as two: the boundaries hold. */
        size_t len = 1 + (size_t)i % 40;
        memset(buf, 'a' + i % 26, len);
        buf[0] = (char)i;
        VCHECK_EQ(vega_sock_write(a, buf, len, NULL, DL()), len);
        VCHECK_EQ(vega_sock_read(a, in, sizeof(in), DL()), len);
        VCHECK_EQ(in[0], (char)(i + 1));
        VCHECK(memcmp(in + 1, buf + 1, len - 1) == 0);
    }
    VCHECK_EQ(vega_task_join(t, NULL, DL()), 0);
    vega_sock_close(a);
    vega_sock_close(b);
}

static void body_dgram_pair(void)
{
    ping_pong(SOCK_DGRAM);
    /* The UDP calls work on a datagram pair too. */
    vega_sock *a, *b;
    VCHECK_EQ(vega_sock_pair(SOCK_DGRAM, &a, &b), 0);
    VCHECK_EQ(vega_udp_send_to(a, "x", 1, NULL, DL()), 1);
    char c;
    VCHECK_EQ(vega_udp_recv_from(b, &c, 1, NULL, DL()), 1);
    VCHECK_EQ(c, 'x');
    vega_sock_close(a);
    vega_sock_close(b);
}

static void body_seqpacket_pair(void)
{
    ping_pong(SOCK_SEQPACKET);
}

VTEST(dgram_pair)
{
    vtest_run(body_dgram_pair, 2);
}

VTEST(seqpacket_pair)
{
    vtest_run(body_seqpacket_pair, 2);
}

static void body_pair_errors(void)
{
    vega_sock *a = (vega_sock *)1, *b = (vega_sock *)1;
    VCHECK_EQ(vega_sock_pair(SOCK_RAW, &a, &b), -EINVAL);
    VCHECK(a == NULL && b == NULL);
    VCHECK_EQ(vega_sock_pair(SOCK_STREAM, NULL, &b), -EINVAL);
    VCHECK_EQ(vega_pipe(NULL, NULL), -EINVAL);
    /* Closing one end: the other reads EOF. */
    VCHECK_EQ(vega_sock_pair(SOCK_STREAM, &a, &b), 0);
    vega_sock_close(a);
    char c;
    VCHECK_EQ(vega_sock_read(b, &c, 1, DL()), 0);
    vega_sock_close(b);
}

VTEST(pair_errors)
{
    vtest_run(body_pair_errors, 0);
}

/* ---- pipes ------------------------------------------------------------------------------- */

struct pipes {
    int in_r, out_w; /* the echo task reads in_r and writes out_w */
};

static void *pipe_echo(void *arg)
{
    struct pipes *p = arg;
    char buf[4096];
    for (;;) {
        vega_ssize n = vega_fd_read(p->in_r, buf, sizeof(buf), DL());
        VCHECK(n >= 0);
        if (n == 0)
            break;
        VCHECK_EQ(vega_fd_write(p->out_w, buf, (size_t)n, NULL, DL()), n);
    }
    close(p->out_w);
    return NULL;
}

static void body_pipe_pair(void)
{
    int r1, w1, r2, w2;
    VCHECK_EQ(vega_pipe(&r1, &w1), 0);
    VCHECK_EQ(vega_pipe(&r2, &w2), 0);
    check_fd_flags(r1);
    check_fd_flags(w1);
    char c;
    VCHECK_EQ(vega_fd_read(r1, &c, 1, 0), -ETIMEDOUT);

    struct pipes p = {.in_r = r1, .out_w = w2};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, pipe_echo, &p), 0);
    /* Round trips of growing size: up to 256 KiB, more than a pipe holds, so the writer waits
     * for the echo task while the echo waits for us: write and read in slices. */
    static unsigned char out[256 * 1024], in[256 * 1024];
    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = pat(i);
    for (size_t len = 1; len <= sizeof(out); len *= 4) {
        size_t sent = 0, got = 0;
        while (got < len) {
            if (sent < len && sent - got < 32768) { /* bounded: no deadlock on full pipes */
                size_t slice = len - sent < 16384 ? len - sent : 16384;
                VCHECK_EQ(vega_fd_write(w1, out + sent, slice, NULL, DL()), slice);
                sent += slice;
            }
            vega_ssize n = vega_fd_read(r2, in + got, len - got, DL());
            VCHECK(n > 0);
            got += (size_t)n;
        }
        VCHECK(memcmp(in, out, len) == 0);
    }
    close(w1);
    VCHECK_EQ(vega_fd_read(r2, &c, 1, DL()), 0); /* the echo task closed its end */
    VCHECK_EQ(vega_task_join(t, NULL, DL()), 0);
    close(r1);
    close(r2);
}

VTEST(pipe_roundtrip)
{
    vtest_run(body_pipe_pair, 2);
}
