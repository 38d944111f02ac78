/* SPDX-License-Identifier: MIT */
/* sendfile(2) and splice(2) into TCP sockets: a 10 MiB file byte for byte, offsets, a deadline
 * that expires mid-transfer, a short file, a vanished peer without SIGPIPE, and splices from a
 * pipe and from a file. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "vtest.h"

#define MIB       (1024 * 1024)
#define FILE_SIZE (10 * MIB)
#define DL()      vega_deadline_in_ms(3000)

static unsigned char pat(size_t i)
{
    return (unsigned char)(i * 2654435761u >> 13);
}

/* An unlinked temp file of `size` pattern bytes. */
static int make_file(size_t size)
{
    char path[] = "/tmp/vega-sendfile-XXXXXX";
    int fd = mkstemp(path);
    VCHECK(fd >= 0);
    unlink(path);
    static unsigned char buf[64 * 1024];
    for (size_t off = 0; off < size;) {
        size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = pat(off + i);
        VCHECK_EQ(write(fd, buf, n), n);
        off += n;
    }
    VCHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static void tcp_pair(vega_sock **client, vega_sock **server)
{
    vega_addr a;
    vega_sock *l;
    VCHECK_EQ(vega_addr_parse(&a, "127.0.0.1:0", NULL), 0);
    VCHECK_EQ(vega_tcp_listen(&l, &a, 0, 0), 0);
    VCHECK_EQ(vega_sock_local_addr(l, &a), 0);
    VCHECK_EQ(vega_tcp_connect(client, &a, DL()), 0);
    VCHECK_EQ(vega_tcp_accept(l, server, NULL, DL()), 0);
    vega_sock_close(l);
}

/* A reader task: reads `want` bytes (or to EOF when want is SIZE_MAX) and checks they are the
 * pattern from `from` on. */
struct reader {
    vega_sock *s;
    size_t from, want;
    size_t got;
    bool ok;
    vega_ssize err; /* the failed read, or 0 */
    size_t bad;     /* the first differing byte, or SIZE_MAX */
};

enum {
    READ_BUF = 16384
};

static void *read_check(void *arg)
{
    struct reader *rd = arg;
    unsigned char buf[READ_BUF];
    rd->bad = SIZE_MAX;
    while (rd->got < rd->want) {
        size_t room = rd->want - rd->got < sizeof(buf) ? rd->want - rd->got : sizeof(buf);
        vega_ssize n = vega_sock_read(rd->s, buf, room, DL());
        if (n == 0 && rd->want == SIZE_MAX)
            break;
        if (n <= 0) {
            rd->err = n;
            return NULL;
        }
        for (vega_ssize i = 0; i < n; i++)
            if (buf[i] != pat(rd->from + rd->got + (size_t)i)) {
                rd->bad = rd->got + (size_t)i;
                return NULL;
            }
        rd->got += (size_t)n;
    }
    rd->ok = true;
    return NULL;
}

static vega_task *spawn_reader(struct reader *rd)
{
    vega_task *t;
    VCHECK_EQ(vega_task_spawn(&t, read_check, rd), 0);
    return t;
}

static void join_reader(vega_task *t, struct reader *rd, size_t want_got)
{
    VCHECK_EQ(vega_task_join(t, NULL, DL()), 0);
    if (!rd->ok)
        vtest_fail(__FILE__, __LINE__, "reader: err %zd, first bad byte %zu, got %zu", rd->err,
                   rd->bad, rd->got);
    VCHECK_EQ(rd->got, want_got);
}

/* ---- sendfile ---------------------------------------------------------------------------- */

static void body_sendfile_10mib(void)
{
    int fd = make_file(FILE_SIZE);
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    struct reader rd = {.s = s, .want = SIZE_MAX};
    vega_task *t = spawn_reader(&rd);
    size_t sent = 1;
    VCHECK_EQ(vega_sock_sendfile(c, fd, 0, FILE_SIZE, &sent, DL()), FILE_SIZE);
    VCHECK_EQ(sent, FILE_SIZE);
    VCHECK_EQ(lseek(fd, 0, SEEK_CUR), 0); /* the file's position is untouched */
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    join_reader(t, &rd, FILE_SIZE);
    /* count 0 sends nothing. */
    VCHECK_EQ(vega_sock_sendfile(c, fd, 0, 0, &sent, DL()), 0);
    VCHECK_EQ(sent, 0);
    vega_sock_close(c);
    vega_sock_close(s);
    close(fd);
}

VTEST(sendfile_10mib)
{
    vtest_run(body_sendfile_10mib, 2);
}

static void body_sendfile_offsets(void)
{
    int fd = make_file(4 * MIB);
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    static const struct {
        size_t off, len;
    } parts[] = {{12345, MIB + 7}, {0, 100}, {4 * MIB - 1, 1}, {3 * MIB, MIB}};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        struct reader rd = {.s = s, .from = parts[i].off, .want = parts[i].len};
        vega_task *t = spawn_reader(&rd);
        size_t sent;
        VCHECK_EQ(vega_sock_sendfile(c, fd, parts[i].off, parts[i].len, &sent, DL()), parts[i].len);
        VCHECK_EQ(sent, parts[i].len);
        join_reader(t, &rd, parts[i].len);
    }
    vega_sock_close(c);
    vega_sock_close(s);
    close(fd);
}

VTEST(sendfile_offsets)
{
    vtest_run(body_sendfile_offsets, 2);
}

static void body_sendfile_deadline(void)
{
    int fd = make_file(FILE_SIZE);
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    /* Small buffers, and nobody reads yet: the transfer stalls and the deadline passes. */
    VCHECK_EQ(vega_sock_set_buffers(c, 0, 64 * 1024), 0);
    VCHECK_EQ(vega_sock_set_buffers(s, 64 * 1024, 0), 0);
    size_t sent = 0;
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_sock_sendfile(c, fd, 0, FILE_SIZE, &sent, vega_deadline_in_ms(100)), -ETIMEDOUT);
    VCHECK(vega_now() - t0 >= 90 * VEGA_NS_PER_MS);
    VCHECK(sent > 0 && sent < FILE_SIZE);

    /* Resume where it stopped, with a reader: every byte arrives once, in order. */
    struct reader rd = {.s = s, .want = SIZE_MAX};
    vega_task *t = spawn_reader(&rd);
    size_t rest = 0;
    VCHECK_EQ(vega_sock_sendfile(c, fd, sent, FILE_SIZE - sent, &rest, DL()), FILE_SIZE - sent);
    VCHECK_EQ(sent + rest, FILE_SIZE);
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    join_reader(t, &rd, FILE_SIZE);
    vega_sock_close(c);
    vega_sock_close(s);
    close(fd);
}

VTEST(sendfile_deadline_mid_transfer)
{
    vtest_run(body_sendfile_deadline, 2);
}

static void body_sendfile_short_and_errors(void)
{
    int fd = make_file(1000);
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    size_t sent = 0;
    /* The file ends before offset + count: the bytes it had go, then -ENODATA. */
    VCHECK_EQ(vega_sock_sendfile(c, fd, 600, 1000, &sent, DL()), -ENODATA);
    VCHECK_EQ(sent, 400);
    char buf[400];
    struct reader rd = {.s = s, .from = 600, .want = 400};
    vega_task *t = spawn_reader(&rd);
    join_reader(t, &rd, 400);
    VCHECK_EQ(vega_sock_sendfile(c, fd, 1000, 1, &sent, DL()), -ENODATA);
    VCHECK_EQ(sent, 0);
    VCHECK_EQ(vega_sock_sendfile(c, -1, 0, 10, &sent, DL()), -EBADF);
    VCHECK_EQ(vega_sock_sendfile(c, fd, UINT64_MAX, 10, &sent, DL()), -EINVAL);

    /* The peer resets: -EPIPE or -ECONNRESET, and no SIGPIPE (default action: it would kill
     * this process). */
    signal(SIGPIPE, SIG_DFL);
    vega_sock_abort(s);
    int big = make_file(2 * MIB);
    int r = 0;
    for (int i = 0; i < 50 && r >= 0; i++)
        r = (int)vega_sock_sendfile(c, big, 0, 2 * MIB, &sent, DL());
    VCHECK(r == -EPIPE || r == -ECONNRESET);
    r = (int)vega_sock_sendfile(c, big, 0, 2 * MIB, &sent, DL());
    VCHECK(r == -EPIPE || r == -ECONNRESET);
    signal(SIGPIPE, SIG_IGN);
    (void)buf;
    vega_sock_close(c);
    close(fd);
    close(big);
}

VTEST(sendfile_short_file_and_errors)
{
    vtest_run(body_sendfile_short_and_errors, 2);
}

/* The same on a current-thread runtime: the caller's thread does not keep SIGPIPE blocked as
 * worker threads do, so each call guards it. */
VTEST(sendfile_errors_current_thread)
{
    vtest_run(body_sendfile_short_and_errors, 0);
}

/* ---- splice ------------------------------------------------------------------------------ */

struct pipe_writer {
    int fd;
    size_t total;
};

static void *fill_pipe(void *arg)
{
    struct pipe_writer *pw = arg;
    unsigned char buf[10000];
    for (size_t off = 0; off < pw->total;) {
        size_t n = pw->total - off < sizeof(buf) ? pw->total - off : sizeof(buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = pat(off + i);
        VCHECK_EQ(vega_fd_write(pw->fd, buf, n, NULL, DL()), n);
        off += n;
    }
    close(pw->fd);
    return NULL;
}

static void body_splice_from_pipe(void)
{
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    int r, w;
    VCHECK_EQ(vega_pipe(&r, &w), 0);
    struct pipe_writer pw = {.fd = w, .total = 3 * MIB + 5};
    vega_task *wt;
    VCHECK_EQ(vega_task_spawn(&wt, fill_pipe, &pw), 0);
    struct reader rd = {.s = s, .want = SIZE_MAX};
    vega_task *t = spawn_reader(&rd);
    size_t sent = 0;
    /* Until the pipe's end of file. */
    VCHECK_EQ(vega_sock_splice_from(c, r, -1, SIZE_MAX, &sent, DL()), pw.total);
    VCHECK_EQ(sent, pw.total);
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    join_reader(t, &rd, pw.total);
    VCHECK_EQ(vega_task_join(wt, NULL, DL()), 0);
    /* An offset on a pipe is refused. */
    VCHECK_EQ(vega_sock_splice_from(c, r, 0, 10, &sent, DL()), -ESPIPE);
    close(r);
    vega_sock_close(c);
    vega_sock_close(s);
}

VTEST(splice_from_pipe)
{
    vtest_run(body_splice_from_pipe, 2);
}

static void body_splice_from_file(void)
{
    int fd = make_file(FILE_SIZE);
    vega_sock *c, *s;
    tcp_pair(&c, &s);
    /* A range from an offset; the file position stays. */
    struct reader rd = {.s = s, .from = 777, .want = 2 * MIB};
    vega_task *t = spawn_reader(&rd);
    size_t sent = 0;
    VCHECK_EQ(vega_sock_splice_from(c, fd, 777, 2 * MIB, &sent, DL()), 2 * MIB);
    VCHECK_EQ(sent, 2 * MIB);
    join_reader(t, &rd, 2 * MIB);
    VCHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);

    /* From the file's own position, past its end: a short count at end of file. */
    VCHECK_EQ(lseek(fd, FILE_SIZE - 5000, SEEK_SET), FILE_SIZE - 5000);
    struct reader rd2 = {.s = s, .from = FILE_SIZE - 5000, .want = SIZE_MAX};
    t = spawn_reader(&rd2);
    VCHECK_EQ(vega_sock_splice_from(c, fd, -1, 1 << 20, &sent, DL()), 5000);
    VCHECK_EQ(lseek(fd, 0, SEEK_CUR), FILE_SIZE);
    VCHECK_EQ(vega_sock_shutdown(c, SHUT_WR), 0);
    join_reader(t, &rd2, 5000);
    vega_sock_close(c);
    vega_sock_close(s);
    close(fd);
}

VTEST(splice_from_file)
{
    vtest_run(body_splice_from_file, 2);
}
