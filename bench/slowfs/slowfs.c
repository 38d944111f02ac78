/* SPDX-License-Identifier: MIT */
/* slowfs: a read-only FUSE mirror of BACKING at MOUNTPOINT whose open and read calls are slow.
 *
 *   slowfs [--delay-ms N] [--gate FILE] [--stall PREFIX] BACKING MOUNTPOINT
 *
 * --delay-ms N   every open and every read sleeps N ms first (a slow disk: cold reads).
 * --stall PREFIX opens of files whose name (last segment) starts with PREFIX wait until --gate
 *                FILE exists; while one waits, FILE.entered exists (created when the first
 *                stalled open begins), so a test knows the request reached the disk.
 * Lookups, getattr and readdir are never delayed. Runs in the foreground, multi-threaded
 * (each request on its own FUSE thread, so one stalled open holds up nothing else); stop it
 * with fusermount3 -u MOUNTPOINT (or SIGTERM). Exit status: 0, 2 on bad usage. */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *backing, *gate, *stall;
static char entered[PATH_MAX];
static long delay_ms;

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static int real(const char *path, char *out)
{
    int n = snprintf(out, PATH_MAX, "%s%s", backing, path);
    return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static bool stalled(const char *path)
{
    if (!stall || !gate)
        return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, stall, strlen(stall)) == 0;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    char p[PATH_MAX];
    int r = real(path, p);
    if (r < 0)
        return r;
    return lstat(p, st) < 0 ? -errno : 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
    char p[PATH_MAX];
    int r = real(path, p);
    if (r < 0)
        return r;
    ssize_t n = readlink(p, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off, (void)fi, (void)flags;
    char p[PATH_MAX];
    int r = real(path, p);
    if (r < 0)
        return r;
    DIR *d = opendir(p);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (fill(buf, e->d_name, NULL, 0, 0))
            break;
    closedir(d);
    return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY)
        return -EROFS;
    if (stalled(path)) {
        int m = open(entered, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (m >= 0)
            close(m);
        while (access(gate, F_OK) < 0)
            nap(5);
    }
    if (delay_ms)
        nap(delay_ms);
    char p[PATH_MAX];
    int r = real(path, p);
    if (r < 0)
        return r;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    fi->direct_io = 1; /* no page cache in the kernel: every read reaches us, hence the delay */
    return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    if (delay_ms)
        nap(delay_ms);
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static const struct fuse_operations ops = {
    .getattr = fs_getattr,
    .readlink = fs_readlink,
    .readdir = fs_readdir,
    .open = fs_open,
    .read = fs_read,
    .release = fs_release,
};

static void usage(void)
{
    fprintf(stderr,
            "usage: slowfs [--delay-ms N] [--gate FILE --stall PREFIX] BACKING MOUNTPOINT\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc)
            delay_ms = atol(argv[++i]);
        else if (strcmp(argv[i], "--gate") == 0 && i + 1 < argc)
            gate = argv[++i];
        else if (strcmp(argv[i], "--stall") == 0 && i + 1 < argc)
            stall = argv[++i];
        else
            usage();
    }
    if (argc - i != 2 || delay_ms < 0 || delay_ms > 60000 || (!gate != !stall))
        usage();
    static char rb[PATH_MAX];
    if (!realpath(argv[i], rb)) {
        perror(argv[i]);
        return 2;
    }
    backing = rb;
    if (gate && snprintf(entered, sizeof entered, "%s.entered", gate) >= (int)sizeof entered)
        usage();
    /* foreground, read-only; the kernel checks permissions from the mirrored modes */
    char *fargv[] = {argv[0],     "-f", "-o", "ro,default_permissions,fsname=slowfs",
                     argv[i + 1], NULL};
    return fuse_main(5, fargv, &ops, NULL);
}
