/* SPDX-License-Identifier: MIT */
/* Files on the runtime: write and read back at offsets, end of file, missing files, fsync,
 * stat, concurrent positioned reads, and a read on a FIFO cancelled by its deadline. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vega/fs.h>
#include <vega/rt.h>

#include "vtest.h"

#define MIB (1024 * 1024)

/* ---- harness --------------------------------------------------------------------------------- */

static void (*case_body)(void);
static char tmpdir[256];

static void *case_task(void *arg)
{
    case_body();
    return NULL;
}

static long scaled(long n)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

/* Runs body as the main task of a fresh runtime (in a fresh temporary directory); workers == 0
 * means current-thread. */
static void run(void (*body)(void), unsigned workers)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/vega-fs-XXXXXX", t && *t ? t : "/tmp");
    VCHECK(mkdtemp(tmpdir) != NULL);
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = workers ? VEGA_RT_MULTI_THREAD : VEGA_RT_CURRENT_THREAD;
    o.workers = workers;
    o.driver = vtest_driver();
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r == -ENOSYS || r == -EPERM)
        vtest_skip("driver not available here");
    VCHECK_EQ(r, 0);
    case_body = body;
    VCHECK_EQ(vega_rt_block_on(rt, case_task, NULL, NULL), 0);
    vega_rt_free(rt);
    VCHECK_EQ(rmdir(tmpdir), 0);
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void fill_pattern(unsigned char *p, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((off + i) * 131u + ((off + i) >> 13));
}

static vega_deadline soon(void)
{
    return vega_deadline_in_ms(5000);
}

/* ---- write, read back, end of file ---------------------------------------------------------- */

static void body_roundtrip(void)
{
    char path[300];
    path_of(path, sizeof path, "data");
    unsigned char *in = malloc(MIB), *back = malloc(MIB);
    VCHECK(in && back);
    fill_pattern(in, MIB, 0);

    vega_file *f;
    VCHECK_EQ(vega_file_open(&f, path, O_RDWR | O_CREAT | O_TRUNC, 0600, soon()), 0);
    VCHECK(vega_file_fd(f) >= 0);
    VCHECK(fcntl(vega_file_fd(f), F_GETFD) & FD_CLOEXEC);
    /* Back half first, at its offset, then the front half: positioned writes. */
    size_t w = 0;
    VCHECK_EQ(vega_file_write(f, in + MIB / 2, MIB / 2, MIB / 2, &w, soon()), MIB / 2);
    VCHECK_EQ(w, MIB / 2);
    VCHECK_EQ(vega_file_write(f, in, MIB / 2, 0, &w, soon()), MIB / 2);
    VCHECK_EQ(vega_file_fsync(f, false, soon()), 0);
    VCHECK_EQ(vega_file_fsync(f, true, soon()), 0);

    vega_file_info info;
    VCHECK_EQ(vega_file_stat(f, &info, soon()), 0);
    VCHECK_EQ(info.size, MIB);
    VCHECK(S_ISREG(info.mode));
    VCHECK_EQ(info.mode & 0777, 0600);
    VCHECK(info.mtime_ns > 0);
    vega_file_info by_path;
    VCHECK_EQ(vega_fs_stat(path, 0, &by_path, soon()), 0);
    VCHECK_EQ(by_path.ino, info.ino);
    VCHECK_EQ(by_path.dev, info.dev);
    VCHECK_EQ(by_path.size, MIB);

    /* Read back at scattered offsets and lengths. */
    size_t offs[] = {0, 1, 4095, 4096, 12345, MIB / 2 - 7, MIB - 100};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        size_t n = MIB - offs[i] < 70000 ? MIB - offs[i] : 70000;
        size_t got = 0;
        VCHECK_EQ(vega_file_read_exact(f, back, n, (int64_t)offs[i], &got, soon()), n);
        VCHECK_EQ(got, n);
        VCHECK(memcmp(back, in + offs[i], n) == 0);
    }
    /* Whole file. */
    memset(back, 0, MIB);
    VCHECK_EQ(vega_file_read_exact(f, back, MIB, 0, NULL, soon()), MIB);
    VCHECK(memcmp(back, in, MIB) == 0);

    /* End of file: 0 at the end, a short count across it, -ENODATA for an exact read. */
    char b[64];
    VCHECK_EQ(vega_file_read(f, b, sizeof b, MIB, soon()), 0);
    VCHECK_EQ(vega_file_read(f, b, sizeof b, MIB + 1000, soon()), 0);
    VCHECK_EQ(vega_file_read(f, b, sizeof b, MIB - 10, soon()), 10);
    size_t got = 99;
    VCHECK_EQ(vega_file_read_exact(f, b, sizeof b, MIB - 10, &got, soon()), -ENODATA);
    VCHECK_EQ(got, 10);
    VCHECK_EQ(vega_file_read(f, b, sizeof b, -2, soon()), -EINVAL);

    /* The file position: reads at -1 walk from the start (nothing moved it yet). */
    VCHECK_EQ(vega_file_read(f, b, 10, -1, soon()), 10);
    VCHECK(memcmp(b, in, 10) == 0);
    VCHECK_EQ(vega_file_read(f, b, 10, -1, soon()), 10);
    VCHECK(memcmp(b, in + 10, 10) == 0);
    VCHECK_EQ(vega_file_close(f), 0);

    /* read_all from a fresh open, and its cap. */
    VCHECK_EQ(vega_file_open(&f, path, O_RDONLY, 0, soon()), 0);
    void *all = NULL;
    VCHECK_EQ(vega_file_read_all(f, &all, MIB, soon()), MIB);
    VCHECK(memcmp(all, in, MIB) == 0);
    VCHECK_EQ(((char *)all)[MIB], 0);
    free(all);
    VCHECK_EQ(vega_file_close(f), 0);
    VCHECK_EQ(vega_file_open(&f, path, O_RDONLY, 0, soon()), 0);
    all = NULL;
    VCHECK_EQ(vega_file_read_all(f, &all, MIB - 1, soon()), VEGA_ERR_NOBUF);
    VCHECK(all == NULL);
    VCHECK_EQ(vega_file_close(f), 0);

    /* Appending writes at the file position. */
    VCHECK_EQ(vega_file_open(&f, path, O_WRONLY | O_APPEND, 0, soon()), 0);
    VCHECK_EQ(vega_file_write(f, "tail", 4, -1, NULL, soon()), 4);
    VCHECK_EQ(vega_file_close(f), 0);
    VCHECK_EQ(vega_fs_stat(path, 0, &info, soon()), 0);
    VCHECK_EQ(info.size, MIB + 4);

    VCHECK_EQ(unlink(path), 0);
    free(in);
    free(back);

    /* io_uring ran everything in the kernel; epoll went through the blocking pool. */
    vega_rt_metrics m;
    vega_rt_get_metrics(vega_rt_current(), &m);
    if (strcmp(vega_rt_driver_name(vega_rt_current()), "uring") == 0)
        VCHECK_EQ(m.blocking_threads, 0);
    else
        VCHECK(m.blocking_threads > 0);
}

VTEST(roundtrip_1mib)
{
    run(body_roundtrip, 2);
}

VTEST(roundtrip_current_thread)
{
    run(body_roundtrip, 0);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void body_errors(void)
{
    char path[300];
    path_of(path, sizeof path, "missing");
    vega_file *f = (vega_file *)(uintptr_t)1;
    VCHECK_EQ(vega_file_open(&f, path, O_RDONLY, 0, soon()), -ENOENT);
    VCHECK(f == (vega_file *)(uintptr_t)1); /* untouched on failure */
    vega_file_info info;
    VCHECK_EQ(vega_fs_stat(path, 0, &info, soon()), -ENOENT);
    VCHECK_EQ(vega_fs_stat(path, 0x100, &info, soon()), -EINVAL);

    /* O_EXCL on an existing file; a directory opened for writing. */
    path_of(path, sizeof path, "x");
    VCHECK_EQ(vega_file_open(&f, path, O_WRONLY | O_CREAT | O_EXCL, 0600, soon()), 0);
    VCHECK_EQ(vega_file_close(f), 0);
    VCHECK_EQ(vega_file_open(&f, path, O_WRONLY | O_CREAT | O_EXCL, 0600, soon()), -EEXIST);
    VCHECK_EQ(vega_file_open(&f, tmpdir, O_WRONLY, 0, soon()), -EISDIR);

    /* Reading a write-only file. */
    VCHECK_EQ(vega_file_open(&f, path, O_WRONLY, 0, soon()), 0);
    char b[8];
    VCHECK_EQ(vega_file_read(f, b, sizeof b, 0, soon()), -EBADF);
    /* A deadline of 0 never waits, and every file operation would. */
    VCHECK_EQ(vega_file_write(f, "x", 1, 0, NULL, 0), -ETIMEDOUT);
    VCHECK_EQ(vega_file_close(f), 0);

    /* A symlink: stat follows it unless told not to. */
    char link[300];
    path_of(link, sizeof link, "lnk");
    VCHECK_EQ(symlink(path, link), 0);
    VCHECK_EQ(vega_fs_stat(link, 0, &info, soon()), 0);
    VCHECK(S_ISREG(info.mode));
    VCHECK_EQ(vega_fs_stat(link, VEGA_STAT_NOFOLLOW, &info, soon()), 0);
    VCHECK(S_ISLNK(info.mode));
    VCHECK_EQ(unlink(link), 0);
    VCHECK_EQ(unlink(path), 0);

    /* A wrapped descriptor closes with the file. */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    VCHECK(fd >= 0);
    VCHECK_EQ(vega_file_from_fd(&f, fd), 0);
    VCHECK_EQ(vega_file_read(f, b, sizeof b, -1, soon()), 0);
    VCHECK_EQ(vega_file_close(f), 0);
    VCHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
    VCHECK_EQ(vega_file_from_fd(&f, -1), -EINVAL);
    VCHECK_EQ(vega_file_close(NULL), 0);
}

VTEST(errors)
{
    run(body_errors, 2);
}

/* ---- concurrency ---------------------------------------------------------------------------- */

#define CHUNK 65536
static char conc_path[300];
static unsigned char *conc_data;
static atomic_int conc_workers_seen;

static void *reader_task(void *arg)
{
    long id = (long)(intptr_t)arg;
    vega_file *f;
    VCHECK_EQ(vega_file_open(&f, conc_path, O_RDONLY, 0, soon()), 0);
    unsigned char *buf = malloc(CHUNK);
    VCHECK(buf);
    for (int i = 0; i < 16; i++) {
        size_t off = (size_t)((id * 7 + i * 13) % (MIB / CHUNK)) * CHUNK;
        VCHECK_EQ(vega_file_read_exact(f, buf, CHUNK, (int64_t)off, NULL, soon()), CHUNK);
        VCHECK(memcmp(buf, conc_data + off, CHUNK) == 0);
        atomic_fetch_or(&conc_workers_seen, 1 << (vega_worker_index() & 15));
    }
    free(buf);
    VCHECK_EQ(vega_file_close(f), 0);
    return NULL;
}

static void body_concurrent(void)
{
    path_of(conc_path, sizeof conc_path, "shared");
    conc_data = malloc(MIB);
    VCHECK(conc_data);
    fill_pattern(conc_data, MIB, 7);
    vega_file *f;
    VCHECK_EQ(vega_file_open(&f, conc_path, O_WRONLY | O_CREAT | O_TRUNC, 0600, soon()), 0);
    VCHECK_EQ(vega_file_write(f, conc_data, MIB, 0, NULL, soon()), MIB);
    VCHECK_EQ(vega_file_close(f), 0);

    long n = scaled(64);
    if (n < 8)
        n = 8;
    vega_task *t[64];
    for (long i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], reader_task, (void *)(intptr_t)i), 0);
    for (long i = 0; i < n; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, vega_deadline_in_ms(10000)), 0);
    VCHECK(atomic_load(&conc_workers_seen) != 0);
    VCHECK_EQ(unlink(conc_path), 0);
    free(conc_data);
}

VTEST(concurrent_reads)
{
    run(body_concurrent, 4);
}

/* ---- deadlines on a FIFO -------------------------------------------------------------------- */

static void body_fifo(void)
{
    char path[300];
    path_of(path, sizeof path, "fifo");
    VCHECK_EQ(mkfifo(path, 0600), 0);
    /* O_NONBLOCK so that opening does not wait for a writer. */
    vega_file *f;
    VCHECK_EQ(vega_file_open(&f, path, O_RDONLY | O_NONBLOCK, 0, soon()), 0);
    int wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    VCHECK(wfd >= 0);

    char b[16];
    vega_tstamp t0 = vega_now();
    VCHECK_EQ(vega_file_read(f, b, sizeof b, -1, vega_deadline_in_ms(50)), -ETIMEDOUT);
    VCHECK_WAITED(t0, 50); /* were the deadline ignored, the read would wait for ever */

    /* Still usable, and the timed-out read consumed nothing. */
    VCHECK_EQ(write(wfd, "abc", 3), 3);
    VCHECK_EQ(vega_file_read(f, b, sizeof b, -1, soon()), 3);
    VCHECK(memcmp(b, "abc", 3) == 0);

    close(wfd);
    VCHECK_EQ(vega_file_close(f), 0);
    VCHECK_EQ(unlink(path), 0);
}

VTEST(fifo_read_deadline)
{
    run(body_fifo, 2);
}

static vega_file *cancel_file;

static void *blocked_read(void *arg)
{
    char b[8];
    return (void *)(intptr_t)vega_file_read(cancel_file, b, sizeof b, -1, VEGA_DEADLINE_NEVER);
}

static void body_fifo_cancel(void)
{
    char path[300];
    path_of(path, sizeof path, "fifo");
    VCHECK_EQ(mkfifo(path, 0600), 0);
    VCHECK_EQ(vega_file_open(&cancel_file, path, O_RDONLY | O_NONBLOCK, 0, soon()), 0);
    int wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    VCHECK(wfd >= 0);
    for (int i = 0; i < 20; i++) {
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, blocked_read, NULL), 0);
        VCHECK_EQ(vega_sleep_ms((uint64_t)(i % 3)), 0);
        vega_task_cancel(t);
        void *res;
        VCHECK_EQ(vega_task_join(t, &res, soon()), 0);
        VCHECK_EQ((intptr_t)res, -ECANCELED);
    }
    VCHECK_EQ(write(wfd, "z", 1), 1);
    char b[4];
    VCHECK_EQ(vega_file_read(cancel_file, b, sizeof b, -1, soon()), 1);
    VCHECK_EQ(b[0], 'z');
    close(wfd);
    VCHECK_EQ(vega_file_close(cancel_file), 0);
    VCHECK_EQ(unlink(path), 0);
}

VTEST(fifo_read_cancel)
{
    run(body_fifo_cancel, 2);
}

/* ---- openat2, statat, pread on a descriptor -------------------------------------------------- */

/* A tree: tmpdir/root/{a.txt, sub/b.txt, up -> ../out.txt, abs -> /etc/hostname, in -> a.txt},
 * tmpdir/out.txt. Opens beneath root: a plain path, one through "..", symlinks inside and
 * out, RESOLVE_NO_SYMLINKS; stats by descriptor and below a directory; positioned reads. */
static void body_openat2(void)
{
    char root[300], p[400];
    path_of(root, sizeof root, "root");
    VCHECK_EQ(mkdir(root, 0700), 0);
    snprintf(p, sizeof p, "%s/sub", root);
    VCHECK_EQ(mkdir(p, 0700), 0);
    static const char body[] = "hello beneath";
    snprintf(p, sizeof p, "%s/a.txt", root);
    int w = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    VCHECK(w >= 0);
    VCHECK_EQ(write(w, body, sizeof body - 1), (ssize_t)(sizeof body - 1));
    close(w);
    snprintf(p, sizeof p, "%s/sub/b.txt", root);
    w = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    VCHECK(w >= 0);
    close(w);
    path_of(p, sizeof p, "out.txt");
    w = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    VCHECK(w >= 0);
    close(w);
    char lk[400];
    snprintf(lk, sizeof lk, "%s/up", root);
    VCHECK_EQ(symlink("../out.txt", lk), 0);
    snprintf(lk, sizeof lk, "%s/in", root);
    VCHECK_EQ(symlink("a.txt", lk), 0);

    int dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    VCHECK(dfd >= 0);
    vega_open_how how = {.flags = O_RDONLY, .resolve = RESOLVE_BENEATH};
    int fd = vega_fs_openat2(dfd, "a.txt", &how, soon());
    VCHECK(fd >= 0);
    VCHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char buf[64];
    VCHECK_EQ(vega_fs_pread(fd, buf, sizeof buf, 0, soon()), (vega_ssize)(sizeof body - 1));
    VCHECK(memcmp(buf, body, sizeof body - 1) == 0);
    VCHECK_EQ(vega_fs_pread(fd, buf, 7, 6, soon()), 7);
    VCHECK(memcmp(buf, "beneath", 7) == 0);
    VCHECK_EQ(vega_fs_pread(fd, buf, sizeof buf, 100, soon()), 0);
    VCHECK_EQ(vega_fs_pread(fd, buf, sizeof buf, -2, soon()), -EINVAL);
    VCHECK_EQ(vega_fs_pread(-1, buf, sizeof buf, 0, soon()), -EINVAL);

    vega_file_info by_fd, by_path;
    VCHECK_EQ(vega_fs_statat(fd, "", 0, &by_fd, soon()), 0);
    VCHECK(S_ISREG(by_fd.mode));
    VCHECK_EQ(by_fd.size, sizeof body - 1);
    VCHECK_EQ(vega_fs_statat(dfd, "a.txt", 0, &by_path, soon()), 0);
    VCHECK_EQ(by_path.ino, by_fd.ino);
    VCHECK_EQ(vega_fs_statat(dfd, "in", VEGA_STAT_NOFOLLOW, &by_path, soon()), 0);
    VCHECK(S_ISLNK(by_path.mode));
    VCHECK_EQ(vega_fs_statat(dfd, "in", 0, &by_path, soon()), 0);
    VCHECK_EQ(by_path.ino, by_fd.ino);
    VCHECK_EQ(vega_fs_statat(dfd, "nope", 0, &by_path, soon()), -ENOENT);
    VCHECK_EQ(vega_fs_statat(dfd, "a.txt", 0x100, &by_path, soon()), -EINVAL);
    close(fd);

    /* Below root through "..", which stays inside; then ways out, refused by the kernel. */
    fd = vega_fs_openat2(dfd, "sub/../sub/b.txt", &how, soon());
    VCHECK(fd >= 0);
    close(fd);
    VCHECK_EQ(vega_fs_openat2(dfd, "../out.txt", &how, soon()), -EXDEV);
    VCHECK_EQ(vega_fs_openat2(dfd, "up", &how, soon()), -EXDEV);
    VCHECK_EQ(vega_fs_openat2(dfd, "missing", &how, soon()), -ENOENT);
    fd = vega_fs_openat2(dfd, "in", &how, soon());
    VCHECK(fd >= 0);
    close(fd);
    how.resolve |= RESOLVE_NO_SYMLINKS;
    VCHECK_EQ(vega_fs_openat2(dfd, "in", &how, soon()), -ELOOP);
    /* A directory, and bad arguments (an unknown resolve bit is the kernel's EINVAL). */
    how.resolve = RESOLVE_BENEATH;
    fd = vega_fs_openat2(dfd, "sub", &how, soon());
    VCHECK(fd >= 0);
    VCHECK_EQ(vega_fs_statat(fd, "", 0, &by_fd, soon()), 0);
    VCHECK(S_ISDIR(by_fd.mode));
    close(fd);
    how.resolve = 1u << 30;
    VCHECK_EQ(vega_fs_openat2(dfd, "a.txt", &how, soon()), -EINVAL);
    VCHECK_EQ(vega_fs_openat2(dfd, NULL, &how, soon()), -EINVAL);
    VCHECK_EQ(vega_fs_openat2(dfd, "a.txt", NULL, soon()), -EINVAL);
    VCHECK_EQ(vega_fs_openat2(dfd, "a.txt", &how, 0), -ETIMEDOUT);
    close(dfd);

    static const char *const names[] = {"a.txt", "sub/b.txt", "up", "in"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", root, names[i]);
        VCHECK_EQ(unlink(p), 0);
    }
    snprintf(p, sizeof p, "%s/sub", root);
    VCHECK_EQ(rmdir(p), 0);
    VCHECK_EQ(rmdir(root), 0);
    path_of(p, sizeof p, "out.txt");
    VCHECK_EQ(unlink(p), 0);
}

VTEST(openat2_beneath)
{
    run(body_openat2, 2);
}

VTEST(openat2_current_thread)
{
    run(body_openat2, 0);
}
