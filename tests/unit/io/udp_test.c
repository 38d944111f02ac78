/* SPDX-License-Identifier: MIT */
/* UDP sockets and plain descriptors on the runtime. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

static void body_udp_roundtrip(void)
{
    vega_addr any, sa;
    vega_sock *srv, *cli;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&srv, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(srv, &sa), 0);
    VCHECK(vega_addr_port(&sa) != 0);
    VCHECK_EQ(vega_udp_connect(&cli, &sa), 0);

    VCHECK_EQ(vega_udp_send_to(cli, "one", 3, NULL, vega_deadline_in_ms(1000)), 3);
    VCHECK_EQ(vega_udp_send_to(cli, "", 0, NULL, vega_deadline_in_ms(1000)), 0);
    char buf[64];
    vega_addr from, cl;
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), &from, vega_deadline_in_ms(1000)), 3);
    VCHECK(memcmp(buf, "one", 3) == 0);
    VCHECK_EQ(vega_sock_local_addr(cli, &cl), 0);
    VCHECK(vega_addr_equal(&from, &cl));
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), NULL, vega_deadline_in_ms(1000)), 0);

    /* Answer to the sender; the connected client reads it with vega_sock_read. */
    VCHECK_EQ(vega_udp_send_to(srv, "two!", 4, &from, vega_deadline_in_ms(1000)), 4);
    VCHECK_EQ(vega_sock_read(cli, buf, sizeof(buf), vega_deadline_in_ms(1000)), 4);
    VCHECK(memcmp(buf, "two!", 4) == 0);

    /* A datagram larger than the buffer is truncated, the rest dropped. */
    VCHECK_EQ(vega_udp_send_to(cli, "0123456789", 10, NULL, vega_deadline_in_ms(1000)), 10);
    VCHECK_EQ(vega_udp_recv_from(srv, buf, 4, NULL, vega_deadline_in_ms(1000)), 4);
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), NULL, 0), -ETIMEDOUT);

    /* Deadline. */
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), NULL, vega_deadline_in_ms(30)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 25 * VEGA_NS_PER_MS);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

VTEST(udp_roundtrip)
{
    vtest_run(body_udp_roundtrip, 2);
}

static void body_udp_refused(void)
{
    /* A connected socket learns from ICMP that nobody listens. */
    vega_addr any, sa;
    vega_sock *tmp, *cli;
    VCHECK_EQ(vega_addr_parse(&any, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_udp_bind(&tmp, &any, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(tmp, &sa), 0);
    vega_sock_close(tmp);
    VCHECK_EQ(vega_udp_connect(&cli, &sa), 0);
    VCHECK_EQ(vega_udp_send_to(cli, "x", 1, NULL, vega_deadline_in_ms(1000)), 1);
    char buf[4];
    VCHECK_EQ(vega_sock_read(cli, buf, sizeof(buf), vega_deadline_in_ms(2000)), -ECONNREFUSED);
    vega_sock_close(cli);
}

VTEST(udp_connect_refused)
{
    vtest_run(body_udp_refused, 0);
}

struct pipe_reader {
    int fd;
    size_t total;
    atomic_bool ok;
};

static void *drain_pipe(void *arg)
{
    struct pipe_reader *p = arg;
    char buf[4096];
    size_t got = 0;
    for (;;) {
        vega_ssize n = vega_fd_read(p->fd, buf, sizeof(buf), vega_deadline_in_ms(5000));
        if (n <= 0) {
            atomic_store(&p->ok, n == 0 && got == p->total);
            return NULL;
        }
        for (vega_ssize i = 0; i < n; i++)
            if (buf[i] != (char)((got + (size_t)i) % 251))
                return NULL;
        got += (size_t)n;
    }
}

static void body_pipe(void)
{
    int fds[2];
    VCHECK_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    char buf[16];
    VCHECK_EQ(vega_fd_read(fds[0], buf, sizeof(buf), vega_deadline_in_ms(20)), -ETIMEDOUT);
    VCHECK_EQ(vega_fd_poll(fds[1], POLLOUT, vega_deadline_in_ms(1000)) & POLLOUT, POLLOUT);

    /* 1 MiB through a 64 KiB pipe: the writer must wait for the reader, many times. */
    enum {
        TOTAL = 1 << 20
    };
    static char data[TOTAL];
    for (size_t i = 0; i < TOTAL; i++)
        data[i] = (char)(i % 251);
    struct pipe_reader p = {.fd = fds[0], .total = TOTAL};
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, drain_pipe, &p), 0);
    size_t written = 0;
    VCHECK_EQ(vega_fd_write(fds[1], data, TOTAL, &written, vega_deadline_in_ms(5000)), TOTAL);
    VCHECK_EQ(written, TOTAL);
    close(fds[1]);
    VCHECK_EQ(vega_task_join(t, NULL, vega_deadline_in_ms(5000)), 0);
    VCHECK(atomic_load(&p.ok));
    close(fds[0]);
}

VTEST(pipe_read_write)
{
    vtest_run(body_pipe, 2);
}

/* ---- Unix datagram sockets ------------------------------------------------------------------- */

static void body_unix_dgram(void)
{
    char dir[] = "/tmp/vega-udp-XXXXXX";
    VCHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof(path), "%s/d.sock", dir);

    vega_sock *srv, *cli;
    VCHECK_EQ(vega_unix_dgram_connect(&cli, path), -ENOENT);
    VCHECK_EQ(vega_unix_dgram_bind(&srv, path, VEGA_LISTEN_UNLINK_STALE), 0);
    VCHECK_EQ(vega_unix_dgram_connect(&cli, path), 0);

    /* Client -> server: the server sees the client's autobound abstract name. */
    VCHECK_EQ(vega_udp_send_to(cli, "ping", 4, NULL, vega_deadline_in_ms(1000)), 4);
    char buf[64];
    vega_addr from, cl;
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), &from, vega_deadline_in_ms(1000)), 4);
    VCHECK(memcmp(buf, "ping", 4) == 0);
    VCHECK_EQ(vega_addr_family(&from), AF_UNIX);
    VCHECK_EQ(vega_sock_local_addr(cli, &cl), 0);
    VCHECK(vega_addr_equal(&from, &cl));
    char name[VEGA_ADDR_STRLEN];
    VCHECK(vega_addr_format(&from, name, sizeof(name)) > 0);
    VCHECK(strncmp(name, "unix:@", 6) == 0);

    /* Server -> client, answered to the address it came from. */
    VCHECK_EQ(vega_udp_send_to(srv, "pong!", 5, &from, vega_deadline_in_ms(1000)), 5);
    VCHECK_EQ(vega_sock_read(cli, buf, sizeof(buf), vega_deadline_in_ms(1000)), 5);
    VCHECK(memcmp(buf, "pong!", 5) == 0);

    /* Batches work on Unix datagram sockets too; message boundaries hold. */
    vega_udp_msg m[3] = {{.buf = "a", .len = 1}, {.buf = "bb", .len = 2}, {.buf = "", .len = 0}};
    VCHECK_EQ(vega_udp_send_batch(cli, m, 3, vega_deadline_in_ms(1000)), 3);
    char in[3][8];
    vega_udp_msg r[3];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 3; i++) {
        r[i].buf = in[i];
        r[i].cap = sizeof(in[i]);
    }
    int got = 0;
    while (got < 3) {
        int n = vega_udp_recv_batch(srv, r + got, (size_t)(3 - got), vega_deadline_in_ms(1000));
        VCHECK(n > 0);
        got += n;
    }
    VCHECK_EQ(r[0].len, 1);
    VCHECK_EQ(r[1].len, 2);
    VCHECK(memcmp(r[1].buf, "bb", 2) == 0);
    VCHECK_EQ(r[2].len, 0);
    VCHECK(vega_addr_equal(&r[0].addr, &cl));
    VCHECK_EQ(vega_udp_recv_from(srv, buf, sizeof(buf), NULL, 0), -ETIMEDOUT);

    /* A second bind on the live path fails; close removes the path (UNLINK_STALE). */
    vega_sock *dup;
    VCHECK_EQ(vega_unix_dgram_bind(&dup, path, VEGA_LISTEN_UNLINK_STALE), -EADDRINUSE);
    vega_sock_close(cli);
    vega_sock_close(srv);
    VCHECK(access(path, F_OK) != 0);

    /* A stale file (bound without UNLINK_STALE, then closed) refuses, then is replaced. */
    VCHECK_EQ(vega_unix_dgram_bind(&srv, path, 0), 0);
    vega_sock_close(srv);
    VCHECK_EQ(access(path, F_OK), 0);
    VCHECK_EQ(vega_unix_dgram_connect(&cli, path), -ECONNREFUSED);
    VCHECK_EQ(vega_unix_dgram_bind(&srv, path, 0), -EADDRINUSE);
    VCHECK_EQ(vega_unix_dgram_bind(&srv, path, VEGA_LISTEN_UNLINK_STALE), 0);
    vega_sock_close(srv);
    rmdir(dir);
}

VTEST(unix_dgram_roundtrip)
{
    vtest_run(body_unix_dgram, 2);
}

static void body_unix_dgram_abstract(void)
{
    char name[64];
    snprintf(name, sizeof(name), "@vega-udp-test-%d", (int)getpid());
    vega_sock *srv, *cli;
    VCHECK_EQ(vega_unix_dgram_bind(&srv, name, 0), 0);
    VCHECK_EQ(vega_unix_dgram_connect(&cli, name), 0);
    VCHECK_EQ(vega_udp_send_to(cli, "abs", 3, NULL, vega_deadline_in_ms(1000)), 3);
    char buf[8];
    VCHECK_EQ(vega_sock_read(srv, buf, sizeof(buf), vega_deadline_in_ms(1000)), 3);
    vega_sock_close(cli);
    vega_sock_close(srv);
}

VTEST(unix_dgram_abstract)
{
    vtest_run(body_unix_dgram_abstract, 0);
}
