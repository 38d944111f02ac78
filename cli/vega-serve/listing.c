/* SPDX-License-Identifier: MIT */
/* vega-serve: directory listings, as HTML (escaped names, sizes, dates, sort links, no
 * JavaScript) or as JSON for clients that send "Accept: application/json". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <vega/rt.h>

#include "serve.h"

/* The largest listing body; a bigger one is cut (and says so). */
#define LIST_BYTES_MAX (16u << 20)

struct entry {
    char *name;
    bool dir;
    bool link; /* a symlink (shown with its target's type and size) */
    uint64_t size;
    int64_t mtime;
};

enum sort_key {
    SORT_NAME,
    SORT_SIZE,
    SORT_MTIME
};

struct list_opts {
    enum sort_key key;
    bool desc;
};

static struct list_opts parse_query(const vega_http_request *req)
{
    struct list_opts o = {SORT_NAME, false};
    const char *q = req->query.ptr;
    size_t len = req->query.len;
    for (size_t i = 0; q && i < len;) {
        size_t j = i;
        while (j < len && q[j] != '&')
            j++;
        const char *p = q + i;
        size_t n = j - i;
#define IS(s) (n == sizeof(s) - 1 && memcmp(p, s, n) == 0)
        if (IS("sort=size"))
            o.key = SORT_SIZE;
        else if (IS("sort=mtime"))
            o.key = SORT_MTIME;
        else if (IS("sort=name"))
            o.key = SORT_NAME;
        else if (IS("order=desc"))
            o.desc = true;
        else if (IS("order=asc"))
            o.desc = false;
#undef IS
        i = j + 1;
    }
    return o;
}

/* qsort has no context argument; the order lives in a per-thread slot while it runs (a
 * task does not suspend inside qsort). */
static _Thread_local struct list_opts sort_by;

static int cmp_entries(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    /* Directories first, whatever the order. */
    if (a->dir != b->dir)
        return a->dir ? -1 : 1;
    int c = 0;
    if (sort_by.key == SORT_SIZE)
        c = a->size < b->size ? -1 : a->size > b->size;
    else if (sort_by.key == SORT_MTIME)
        c = a->mtime < b->mtime ? -1 : a->mtime > b->mtime;
    if (c == 0)
        c = strcmp(a->name, b->name);
    return sort_by.desc ? -c : c;
}

/* Stats a symlink's target through the same walk as a request, so a link leaving the root is
 * left out. Returns false when it cannot be served. */
static bool link_target(const char *rel, size_t rel_len, const char *name, struct stat *st)
{
    char path[SERVE_PATH_MAX + 300];
    size_t nl = strlen(name);
    if (rel_len + nl >= sizeof(path))
        return false;
    memcpy(path, rel, rel_len);
    memcpy(path + rel_len, name, nl);
    int fd = serve_open(path, rel_len + nl);
    if (fd < 0)
        return false;
    bool ok = serve_fstat(fd, st) == 0;
    close(fd);
    return ok;
}

/* The directory scan, a blocking-pool job: readdir and an lstat per entry (the calls that
 * read the disk), with no symlink resolved (that needs the request's walk, in the task). */
struct scan_job {
    int fd; /* taken by the job */
    struct entry *v;
    size_t n;
    bool cut, ran;
    int err;
};

static void fill(struct entry *e, const struct stat *st)
{
    e->dir = S_ISDIR(st->st_mode);
    e->size = e->dir ? 0 : (uint64_t)st->st_size;
    e->mtime = st->st_mtim.tv_sec;
}

static void *scan_fn(void *arg)
{
    struct scan_job *j = arg;
    j->ran = true;
    DIR *d = fdopendir(j->fd);
    if (!d) {
        j->err = -errno;
        close(j->fd);
        return NULL;
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (name[0] == '.' && (!serve_o.hidden || !name[1] || (name[1] == '.' && !name[2])))
            continue;
        struct stat lst;
        if (fstatat(dirfd(d), name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        bool link = S_ISLNK(lst.st_mode);
        if (link && !serve_o.symlinks)
            continue;
        if (!link && !S_ISREG(lst.st_mode) && !S_ISDIR(lst.st_mode))
            continue; /* FIFOs, sockets, devices are never served */
        if (j->n == SERVE_LIST_MAX) {
            j->cut = true;
            break;
        }
        if (j->n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct entry *nv = realloc(j->v, nc * sizeof(*nv));
            if (!nv)
                break;
            j->v = nv;
            cap = nc;
        }
        struct entry *e = &j->v[j->n];
        e->name = strdup(name);
        if (!e->name)
            break;
        e->link = link;
        fill(e, &lst);
        j->n++;
    }
    closedir(d);
    return NULL;
}

/* Reads the directory (taken): scanned on the blocking pool, then each symlink's target is
 * looked at through the request's walk here. Returns the count, or -errno; *cut when entries
 * were left out (more than SERVE_LIST_MAX that could be shown). */
static int read_dir(int fd, const char *rel, size_t rel_len, struct entry **out, bool *cut)
{
    struct scan_job j = {.fd = fd};
    int r = vega_blocking(scan_fn, &j, NULL, VEGA_DEADLINE_NEVER);
    if (!j.ran) {
        close(fd);
        return r < 0 ? r : -EIO;
    }
    if (j.err < 0 || r < 0) {
        for (size_t i = 0; i < j.n; i++)
            free(j.v[i].name);
        free(j.v);
        return j.err < 0 ? j.err : r;
    }
    size_t n = 0;
    for (size_t i = 0; i < j.n; i++) {
        struct entry e = j.v[i];
        struct stat st;
        if (e.link) {
            if (!link_target(rel, rel_len, e.name, &st) ||
                (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
                free(e.name); /* dangling, leaving the root, or not servable: not shown */
                continue;
            }
            fill(&e, &st);
        }
        j.v[n++] = e;
    }
    *cut = j.cut;
    *out = j.v;
    return (int)n;
}

static void free_entries(struct entry *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

static void human_size(char *buf, size_t cap, uint64_t s)
{
    static const char units[] = "KMGTP";
    if (s < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", s);
        return;
    }
    double v = (double)s;
    int u = -1;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, cap, "%.1f %ciB", v, units[u]);
}

static void sort_link(struct sbuf *b, const struct list_opts *cur, enum sort_key k,
                      const char *label, const char *key)
{
    /* Clicking the column sorted now flips its order. */
    bool desc = cur->key == k ? !cur->desc : false;
    sbuf_addf(b, "<th><a href=\"?sort=%s&amp;order=%s\">%s%s</a></th>", key, desc ? "desc" : "asc",
              label,
              cur->key != k ? ""
              : cur->desc   ? " &#9660;"
                            : " &#9650;");
}

/* "Index of /a/b/" with each folder a link, relative ("../../" for "/" from "/a/b/"), so that
 * it holds under --random-route too. */
static void breadcrumbs(struct sbuf *b, const char *rel, size_t rel_len)
{
    size_t depth = 0;
    for (size_t i = 1; i < rel_len; i++)
        depth += rel[i] == '/';
    size_t i = 0;
    while (i < rel_len) {
        size_t j = i + 1;
        while (j < rel_len && rel[j - 1] != '/')
            j++;
        /* the segment rel[i, j) ends with "/"; depth counts the folders still below it */
        if (depth == 0) {
            sbuf_html(b, rel + i, j - i);
        } else {
            sbuf_adds(b, "<a href=\"");
            for (size_t k = 0; k < depth; k++)
                sbuf_adds(b, "../");
            sbuf_adds(b, "\">");
            sbuf_html(b, rel + i, j - i);
            sbuf_adds(b, "</a>");
            depth--;
        }
        i = j;
    }
}

static void html(struct sbuf *b, const char *rel, size_t rel_len, const struct entry *v, int n,
                 bool cut, const struct list_opts *lo)
{
    sbuf_adds(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width\">\n<title>Index of ");
    sbuf_html(b, rel, rel_len);
    sbuf_adds(b, "</title>\n<style>body{font-family:system-ui,sans-serif;margin:2em}"
                 "table{border-collapse:collapse}td,th{padding:.2em 1em;text-align:left}"
                 "td.s{text-align:right}tr:nth-child(even){background:#f4f4f4}"
                 "a{text-decoration:none}@media(prefers-color-scheme:dark){body{background:#16161"
                 "a;color:#ddd}a{color:#8ab4f8}tr:nth-child(even){background:#24242a}}"
                 "</style></head>\n<body><h1>Index of ");
    breadcrumbs(b, rel, rel_len);
    sbuf_adds(b, "</h1>\n<table>\n<tr>");
    sort_link(b, lo, SORT_NAME, "Name", "name");
    sort_link(b, lo, SORT_SIZE, "Size", "size");
    sort_link(b, lo, SORT_MTIME, "Modified", "mtime");
    sbuf_adds(b, "</tr>\n");
    if (rel_len > 1)
        sbuf_adds(b, "<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    for (int i = 0; i < n; i++) {
        const struct entry *e = &v[i];
        size_t nl = strlen(e->name);
        sbuf_adds(b, "<tr><td><a href=\"./");
        sbuf_url(b, e->name, nl);
        sbuf_adds(b, e->dir ? "/\">" : "\">");
        sbuf_html(b, e->name, nl);
        sbuf_adds(b, e->dir ? "/</a>" : "</a>");
        if (e->link)
            sbuf_adds(b, " &#8594;");
        char size[32] = "", date[32] = "";
        if (!e->dir)
            human_size(size, sizeof(size), e->size);
        time_t t = (time_t)e->mtime;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &tm);
        sbuf_addf(b, "</td><td class=\"s\">%s</td><td>%s</td></tr>\n", size, date);
    }
    sbuf_adds(b, "</table>\n");
    if (serve_o.tar || serve_o.tar_gz || serve_o.zip) {
        sbuf_adds(b, "<p class=\"dl\">Download this folder as");
        if (serve_o.tar)
            sbuf_adds(b, " <a href=\"?download=tar\" download>.tar</a>");
        if (serve_o.tar_gz)
            sbuf_adds(b, " <a href=\"?download=tar.gz\" download>.tar.gz</a>");
        if (serve_o.zip)
            sbuf_adds(b, " <a href=\"?download=zip\" download>.zip</a>");
        sbuf_adds(b, "</p>\n");
    }
    /* Relative actions: the form posts to this folder (under --random-route too). */
    if (serve_o.upload)
        sbuf_adds(b, "<form method=\"post\" action=\"./\" enctype=\"multipart/form-data\">"
                     "<input type=\"file\" name=\"file\" multiple required> "
                     "<button>Upload</button></form>\n");
    if (serve_o.mkdir)
        sbuf_adds(b, "<form method=\"post\" action=\"./\">"
                     "<input name=\"mkdir\" placeholder=\"new folder\" required> "
                     "<button>Create folder</button></form>\n");
    if (cut)
        sbuf_addf(b, "<p>Only the first %d entries are shown.</p>\n", n);
    sbuf_adds(b, "<hr><p><small>vega-serve</small></p></body></html>\n");
}

static void json(struct sbuf *b, const struct entry *v, int n)
{
    sbuf_adds(b, "[");
    for (int i = 0; i < n; i++) {
        sbuf_adds(b, i ? ",\n{\"name\":\"" : "\n{\"name\":\"");
        sbuf_json(b, v[i].name, strlen(v[i].name));
        sbuf_addf(b, "\",\"type\":\"%s\",\"size\":%" PRIu64 ",\"mtime\":%" PRId64 "}",
                  v[i].dir ? "directory" : "file", v[i].size, v[i].mtime);
    }
    sbuf_adds(b, "\n]\n");
}

static bool wants_json(const vega_http_request *req)
{
    size_t len;
    const char *a = serve_req_field(req, "Accept", &len);
    static const char j[] = "application/json";
    if (!a)
        return false;
    for (size_t i = 0; i + sizeof(j) - 1 <= len; i++)
        if (strncasecmp(a + i, j, sizeof(j) - 1) == 0)
            return true;
    return false;
}

int serve_listing(vega_http_exchange *x, int fd, const char *rel, size_t rel_len)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    struct entry *v = NULL;
    bool cut = false;
    int n = read_dir(fd, rel, rel_len, &v, &cut);
    if (n == VEGA_ERR_FULL || n == -EMFILE || n == -ENFILE || n == -ENOMEM)
        return serve_unavailable(x);
    if (n < 0)
        return serve_simple(x, n == -EACCES ? 403 : 404, NULL, 0);
    struct list_opts lo = parse_query(req);
    sort_by = lo;
    if (n > 1) /* an empty folder has no array at all (qsort wants one) */
        qsort(v, (size_t)n, sizeof(*v), cmp_entries);
    bool js = wants_json(req);
    struct sbuf b;
    sbuf_init(&b, LIST_BYTES_MAX);
    if (js)
        json(&b, v, n);
    else
        html(&b, rel, rel_len, v, n, cut, &lo);
    free_entries(v, n);
    int e;
    if (b.failed) {
        e = serve_simple(x, 500, NULL, 0);
    } else {
        vega_http_field f[4 + SERVE_MAX_HEADERS];
        size_t nf = 0;
        f[nf++] = (vega_http_field){{"Content-Type", 12},
                                    js ? (vega_http_str){"application/json", 16}
                                       : (vega_http_str){"text/html; charset=utf-8", 24}};
        f[nf++] = (vega_http_field){{"Vary", 4}, {"Accept", 6}};
        f[nf++] = (vega_http_field){{"Cache-Control", 13}, {"no-cache", 8}};
        nf = serve_add_user_headers(f, nf, sizeof(f) / sizeof(f[0]));
        e = vega_http_respond(x, 200, f, nf, b.p, b.len, VEGA_DEADLINE_NEVER);
    }
    sbuf_free(&b);
    return e;
}
