/* SPDX-License-Identifier: MIT */
/* vega-serve: a bounded, shared cache of small regular files (content and stat), kept exact by
 * inotify on every directory from the root down to each cached file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <vega/io.h>
#include <vega/rt.h>

#include "serve.h"

/* Entries at most, whatever --cache-size allows (and the hash buckets by key and by watch). */
#define CACHE_ENTRIES_MAX 65536
#define KEY_BUCKETS       65536
#define WD_BUCKETS        4096
/* Fixed cost charged per entry besides its key, name and content. */
#define ENTRY_OVERHEAD 256

#define WATCH_MASK                                                                                 \
    (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE |            \
     IN_DELETE_SELF | IN_MOVE_SELF | IN_CREATE)

struct centry {
    struct serve_cache_entry pub; /* first: the handler's view */
    struct centry *knext;         /* key bucket chain */
    struct centry *wprev, *wnext; /* watch bucket chain (doubly linked: O(1) removal) */
    struct centry *lprev, *lnext; /* LRU list, most recent first */
    uint64_t hash;
    int wd;        /* the watch on the file's directory */
    unsigned refs; /* the cache's own (while linked) plus one per user */
    bool linked;
    size_t cost;
    size_t key_len;
    char *mem; /* key, name, content: allocated right after the struct */
};

static struct {
    pthread_mutex_t mu;
    struct centry *keys[KEY_BUCKETS];
    struct centry *wds[WD_BUCKETS];
    struct centry lru; /* sentinel */
    size_t count, bytes;
    uint64_t gen; /* bumped by every event handled: an insert that saw it change retries */
    vega_tstamp drained_at; /* vega_now() just before the last drain began */
    int ifd;
    vega_task *task;
    bool on;
} C = {.mu = PTHREAD_MUTEX_INITIALIZER, .ifd = -1};

static uint64_t hash_of(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static void entry_unref(struct centry *e)
{
    if (--e->refs == 0)
        free(e);
}

/* Takes e out of every index; it is freed once its last user lets go. Under the lock. */
static void unlink_entry(struct centry *e)
{
    struct centry **p = &C.keys[e->hash % KEY_BUCKETS];
    while (*p != e)
        p = &(*p)->knext;
    *p = e->knext;
    if (e->wprev)
        e->wprev->wnext = e->wnext;
    else
        C.wds[(unsigned)e->wd % WD_BUCKETS] = e->wnext;
    if (e->wnext)
        e->wnext->wprev = e->wprev;
    e->lprev->lnext = e->lnext;
    e->lnext->lprev = e->lprev;
    e->linked = false;
    C.count--;
    C.bytes -= e->cost;
    entry_unref(e);
}

static void flush_all(void)
{
    while (C.lru.lnext != &C.lru)
        unlink_entry(C.lru.lnext);
}

static void drop_dir(int wd)
{
    struct centry *e = C.wds[(unsigned)wd % WD_BUCKETS];
    while (e) {
        struct centry *next = e->wnext;
        if (e->wd == wd)
            unlink_entry(e);
        e = next;
    }
}

/* One event. A change to an entry of a directory drops the files cached from it (the name is
 * not matched: a sibling FILE.gz appearing changes FILE's answer too). A directory renamed,
 * deleted, re-permissioned or unwatched can change what any path below it means: all goes. */
static void handle_event(const struct inotify_event *ev)
{
    C.gen++;
    if (ev->mask & IN_Q_OVERFLOW) {
        flush_all();
        return;
    }
    if (ev->len == 0 || ((ev->mask & IN_ISDIR) && !(ev->mask & IN_CREATE))) {
        flush_all();
        return;
    }
    drop_dir(ev->wd);
}

static void *watch_task(void *arg)
{
    (void)arg;
    _Alignas(struct inotify_event) char buf[16384];
    for (;;) {
        vega_ssize n = vega_fd_read(C.ifd, buf, sizeof(buf), VEGA_DEADLINE_NEVER);
        if (n == -EINTR || n == -EAGAIN)
            continue;
        if (n <= 0) {
            if (n != -ECANCELED) {
                /* Without events the cache cannot stay exact: empty it and stop using it. */
                cli_err_code("cache: inotify", n < 0 ? (int)n : -EIO);
                pthread_mutex_lock(&C.mu);
                C.on = false;
                flush_all();
                pthread_mutex_unlock(&C.mu);
            }
            return NULL;
        }
        pthread_mutex_lock(&C.mu);
        for (size_t off = 0; off + sizeof(struct inotify_event) <= (size_t)n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
            handle_event(ev);
            off += sizeof(struct inotify_event) + ev->len;
        }
        pthread_mutex_unlock(&C.mu);
    }
}

int serve_cache_start(void)
{
    if (!serve_o.cache)
        return 0;
    C.lru.lnext = C.lru.lprev = &C.lru;
    if (!serve_o.use_openat2) {
        cli_log(1, "cache off: the kernel has no openat2");
        serve_o.cache = false;
        return 0;
    }
    C.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (C.ifd < 0) {
        cli_log(1, "cache off: inotify: %s", strerror(errno));
        serve_o.cache = false;
        return 0;
    }
    int r = vega_task_spawn(&C.task, watch_task, NULL);
    if (r < 0) {
        cli_log(1, "cache off: %s", vega_strerror(r));
        close(C.ifd);
        C.ifd = -1;
        serve_o.cache = false;
        return 0;
    }
    C.on = true;
    cli_log(1, "cache: files up to %llu bytes, %llu bytes in all",
            (unsigned long long)serve_o.cache_max_file, (unsigned long long)serve_o.cache_size);
    return 0;
}

void serve_cache_stop(void)
{
    if (C.task) {
        vega_task_cancel(C.task);
        vega_task_join(C.task, NULL, VEGA_DEADLINE_NEVER);
        C.task = NULL;
    }
    pthread_mutex_lock(&C.mu);
    C.on = false;
    if (C.lru.lnext)
        flush_all();
    pthread_mutex_unlock(&C.mu);
    if (C.ifd >= 0)
        close(C.ifd);
    C.ifd = -1;
}

void serve_cache_flush(void)
{
    pthread_mutex_lock(&C.mu);
    if (C.lru.lnext)
        flush_all();
    pthread_mutex_unlock(&C.mu);
}

/* Handles the events already queued on the inotify descriptor (C.mu held). A change made
 * before a request was sent has queued its event by then, so a lookup that drains first never
 * answers from an entry that change invalidated: read-your-writes, whatever order the
 * runtime runs the event task and the request in. One read(2) that says EAGAIN when nothing
 * changed. */
static void drain_events_locked(void)
{
    _Alignas(struct inotify_event) char buf[4096];
    C.drained_at = vega_now();
    for (;;) {
        ssize_t n = read(C.ifd, buf, sizeof(buf));
        if (n <= 0)
            return;
        for (size_t off = 0; off + sizeof(struct inotify_event) <= (size_t)n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
            handle_event(ev);
            off += sizeof(struct inotify_event) + ev->len;
        }
    }
}

const struct serve_cache_entry *serve_cache_get(const char *key, size_t len, vega_tstamp since)
{
    uint64_t h = hash_of(key, len);
    pthread_mutex_lock(&C.mu);
    /* A drain that began after the request arrived has seen every change made before it was
     * sent: the requests of one read (HTTP/2 streams, a pipelined burst) share the first
     * one's read(2). The clock never goes back, so since < drained_at means the drain's
     * clock reading, hence the drain, came after the request's, itself after its bytes. */
    if (since >= C.drained_at)
        drain_events_locked();
    struct centry *e = C.keys[h % KEY_BUCKETS];
    while (e && !(e->hash == h && e->key_len == len && memcmp(e->mem, key, len) == 0))
        e = e->knext;
    if (e) {
        e->refs++;
        e->lprev->lnext = e->lnext;
        e->lnext->lprev = e->lprev;
        e->lnext = C.lru.lnext;
        e->lprev = &C.lru;
        C.lru.lnext->lprev = e;
        C.lru.lnext = e;
    }
    pthread_mutex_unlock(&C.mu);
    return e ? &e->pub : NULL;
}

void serve_cache_put(const struct serve_cache_entry *pub)
{
    if (!pub)
        return;
    struct centry *e = (struct centry *)(uintptr_t)pub;
    pthread_mutex_lock(&C.mu);
    entry_unref(e);
    pthread_mutex_unlock(&C.mu);
}

/* Watches every directory from the root down to the one holding file (a symlink-free path
 * below the root, "/..."); returns the last watch or -errno. */
static int watch_dirs(const char *file, size_t len)
{
    char path[PATH_MAX];
    size_t rl = serve_o.root_len;
    if (rl + len >= sizeof(path))
        return -ENAMETOOLONG;
    memcpy(path, serve_o.root, rl);
    int wd = -ENOENT;
    for (size_t i = 0; i < len; i++) {
        if (file[i] != '/')
            continue;
        /* The root itself, then each directory below it. */
        size_t pl = rl + i;
        memcpy(path + rl, file, i);
        if (pl == 0)
            path[pl++] = '/';
        path[pl] = '\0';
        wd = inotify_add_watch(C.ifd, path, WATCH_MASK | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd < 0)
            return -errno;
    }
    return wd;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec &&
           a->st_mode == b->st_mode;
}

/* fstatat below the root for a "/..." path (off the worker thread: fsio.c). */
static int stat_below(const char *rel, size_t len, const char *suffix, struct stat *st)
{
    char path[SERVE_PATH_MAX + 32];
    size_t sl = strlen(suffix);
    if (len < 2 || len - 1 + sl >= sizeof(path))
        return -ENAMETOOLONG;
    memcpy(path, rel + 1, len - 1);
    memcpy(path + len - 1, suffix, sl + 1);
    return serve_lstat_below(path, st);
}

const struct serve_cache_entry *serve_cache_add(const char *key, size_t key_len, const char *file,
                                                size_t file_len, int fd, const struct stat *st)
{
    if (!serve_o.cache || !S_ISREG(st->st_mode) || (uint64_t)st->st_size > serve_o.cache_max_file)
        return NULL;
    size_t size = (size_t)st->st_size;
    size_t cost = ENTRY_OVERHEAD + key_len + file_len + size;
    if (cost > serve_o.cache_size || file_len < 2 || file[0] != '/')
        return NULL;
    pthread_mutex_lock(&C.mu);
    bool on = C.on;
    uint64_t gen0 = C.gen;
    pthread_mutex_unlock(&C.mu);
    if (!on)
        return NULL;
    /* Watches first: what is read after them is either current or followed by an event. */
    int wd = watch_dirs(file, file_len);
    if (wd < 0) {
        cli_log(2, "cache: not caching %.*s: inotify: %s", (int)file_len, file, strerror(-wd));
        return NULL;
    }
    /* The path, opened again now, still has no symlink and names this very file. */
    struct stat now, at;
    int fd2 = serve_open_plain(file, file_len);
    if (fd2 < 0)
        return NULL;
    int sr = serve_fstat(fd2, &at);
    close(fd2);
    if (sr < 0 || at.st_dev != st->st_dev || at.st_ino != st->st_ino || serve_fstat(fd, &now) < 0 ||
        !same_file(&now, st))
        return NULL;
    /* A sibling in any form (even a dangling symlink, whose target could appear elsewhere)
     * makes the entry unfit for requests with Accept-Encoding. */
    bool sibling = false;
    static const char *const sfx[] = {".br", ".zst", ".gz"};
    for (size_t i = 0; i < 3 && !sibling; i++)
        sibling = stat_below(file, file_len, sfx[i], &at) != -ENOENT;
    struct centry *e = malloc(sizeof(*e) + key_len + 1 + file_len + 1 + size);
    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->mem = (char *)(e + 1);
    memcpy(e->mem, key, key_len);
    e->mem[key_len] = '\0';
    char *name = e->mem + key_len + 1;
    memcpy(name, file, file_len);
    name[file_len] = '\0';
    uint8_t *data = (uint8_t *)name + file_len + 1;
    vega_ssize got = serve_pread_full(fd, data, size, 0);
    if (got != (vega_ssize)size || serve_fstat(fd, &now) < 0 || !same_file(&now, st)) {
        free(e);
        return NULL;
    }
    e->pub.data = data;
    e->pub.st = *st;
    e->pub.name = name;
    e->pub.name_len = file_len;
    e->pub.has_sibling = sibling;
    e->hash = hash_of(key, key_len);
    e->wd = wd;
    e->key_len = key_len;
    e->cost = cost;
    e->refs = 2; /* the cache's and the caller's */

    pthread_mutex_lock(&C.mu);
    if (!C.on || C.gen != gen0) {
        /* Something changed meanwhile (maybe this file): serve it, do not keep it. */
        pthread_mutex_unlock(&C.mu);
        e->refs = 1;
        e->linked = false;
        return &e->pub;
    }
    /* A concurrent miss on the same key may have won: replace it (the newer read). */
    for (struct centry *o = C.keys[e->hash % KEY_BUCKETS]; o; o = o->knext)
        if (o->hash == e->hash && o->key_len == key_len && memcmp(o->mem, key, key_len) == 0) {
            unlink_entry(o);
            break;
        }
    while (C.count > 0 && (C.count >= CACHE_ENTRIES_MAX || C.bytes + cost > serve_o.cache_size))
        unlink_entry(C.lru.lprev);
    struct centry **kb = &C.keys[e->hash % KEY_BUCKETS];
    e->knext = *kb;
    *kb = e;
    struct centry **wb = &C.wds[(unsigned)wd % WD_BUCKETS];
    e->wnext = *wb;
    if (*wb)
        (*wb)->wprev = e;
    *wb = e;
    e->lnext = C.lru.lnext;
    e->lprev = &C.lru;
    C.lru.lnext->lprev = e;
    C.lru.lnext = e;
    e->linked = true;
    C.count++;
    C.bytes += cost;
    pthread_mutex_unlock(&C.mu);
    return &e->pub;
}
