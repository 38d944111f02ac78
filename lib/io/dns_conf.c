/* SPDX-License-Identifier: MIT */
/* The system's resolver files: resolv.conf(5) and hosts(5), parsed from memory. */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dns_int.h"

/* ---- tokens --------------------------------------------------------------------------------- */

/* Splits one line (without its newline) into at most max blank-separated words, stopping at a
 * comment. The words point into `line`, which is modified (NULs). Returns the count. */
static size_t words(char *line, char **w, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v')
            p++;
        if (!*p || *p == '#' || *p == ';')
            break;
        char *start = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        bool end = !*p;
        *p = '\0';
        if (n < max)
            w[n++] = start;
        if (end)
            break;
        p++;
    }
    return n;
}

/* Calls fn on each line of text (copied into a NUL-terminated scratch buffer). */
static int for_each_line(const char *text, size_t len, int (*fn)(char *line, void *arg), void *arg)
{
    char buf[1024];
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
        /* An over-long line is cut; hosts and resolv.conf lines are short. */
        size_t c = l < sizeof(buf) - 1 ? l : sizeof(buf) - 1;
        memcpy(buf, text + i, c);
        buf[c] = '\0';
        if (strlen(buf) == c) { /* a line with a NUL in it is skipped */
            int r = fn(buf, arg);
            if (r < 0)
                return r;
        }
        i += l + 1;
    }
    return 0;
}

/* Lowercases s into out (cap bytes) without a trailing dot. Returns false when it does not fit
 * or is empty. */
static bool name_norm(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n > 1 && s[n - 1] == '.')
        n--;
    if (n == 0 || n >= cap || (n == 1 && s[0] == '.'))
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = '\0';
    return true;
}

/* ---- resolv.conf ---------------------------------------------------------------------------- */

void vega__dns_conf_defaults(struct vega__dns_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->ndots = 1;
    c->timeout_s = 5;
    c->attempts = 2;
}

static bool parse_uint(const char *s, unsigned *out)
{
    if (!*s)
        return false;
    unsigned v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > 1000000)
            return false;
    }
    *out = v;
    return true;
}

static void conf_option(struct vega__dns_conf *c, const char *o)
{
    unsigned v;
    if (strncmp(o, "ndots:", 6) == 0 && parse_uint(o + 6, &v))
        c->ndots = v > VEGA__DNS_MAX_NDOTS ? VEGA__DNS_MAX_NDOTS : v;
    else if (strncmp(o, "timeout:", 8) == 0 && parse_uint(o + 8, &v))
        c->timeout_s = v < 1 ? 1 : v > VEGA__DNS_MAX_TIMEOUT_S ? VEGA__DNS_MAX_TIMEOUT_S : v;
    else if (strncmp(o, "attempts:", 9) == 0 && parse_uint(o + 9, &v))
        c->attempts = v < 1 ? 1 : v > VEGA__DNS_MAX_ATTEMPTS ? VEGA__DNS_MAX_ATTEMPTS : v;
    else if (strcmp(o, "rotate") == 0)
        c->rotate = true;
    else if (strcmp(o, "use-vc") == 0 || strcmp(o, "usevc") == 0)
        c->use_vc = true;
}

static int conf_line(char *line, void *arg)
{
    struct vega__dns_conf *c = arg;
    char *w[1 + VEGA__DNS_MAXSEARCH];
    size_t n = words(line, w, VEGA__ARRAY_LEN(w));
    if (n < 2)
        return 0;
    if (strcmp(w[0], "nameserver") == 0) {
        vega_addr a;
        if (c->nns < VEGA__DNS_CONF_MAXNS && vega_addr_from_ip(&a, w[1], 53) == 0)
            c->ns[c->nns++] = a;
    } else if (strcmp(w[0], "domain") == 0 || strcmp(w[0], "search") == 0) {
        /* The last domain or search line wins (resolv.conf(5)). */
        c->nsearch = 0;
        c->search_set = true;
        size_t last = strcmp(w[0], "domain") == 0 ? 2 : n;
        for (size_t i = 1; i < last && c->nsearch < VEGA__DNS_MAXSEARCH; i++) {
            uint8_t wire[VEGA__DNS_NAME_MAX];
            if (name_norm(c->search[c->nsearch], sizeof(c->search[0]), w[i]) &&
                vega__dns_name_to_wire(wire, c->search[c->nsearch]) > 0)
                c->nsearch++;
        }
    } else if (strcmp(w[0], "options") == 0) {
        for (size_t i = 1; i < n; i++)
            conf_option(c, w[i]);
    }
    return 0;
}

void vega__dns_conf_parse(struct vega__dns_conf *c, const char *text, size_t len)
{
    (void)for_each_line(text, len, conf_line, c);
}

/* ---- hosts ---------------------------------------------------------------------------------- */

static int hosts_add(struct vega__dns_hosts *h, const char *name, const vega_addr *a)
{
    char norm[VEGA__DNS_TEXT_MAX + 1];
    if (!name_norm(norm, sizeof(norm), name))
        return 0;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct vega__dns_host *v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    char *s = strdup(norm);
    if (!s)
        return -ENOMEM;
    h->v[h->n].name = s;
    h->v[h->n].addr = *a;
    h->n++;
    return 0;
}

static int hosts_line(char *line, void *arg)
{
    struct vega__dns_hosts *h = arg;
    char *w[64];
    size_t n = words(line, w, VEGA__ARRAY_LEN(w));
    vega_addr a;
    /* vega_addr_from_ip takes brackets too; hosts(5) does not. */
    if (n < 2 || w[0][0] == '[' || vega_addr_from_ip(&a, w[0], 0) < 0)
        return 0;
    for (size_t i = 1; i < n; i++) {
        int r = hosts_add(h, w[i], &a);
        if (r < 0)
            return r;
    }
    return 0;
}

int vega__dns_hosts_parse(struct vega__dns_hosts *h, const char *text, size_t len)
{
    return for_each_line(text, len, hosts_line, h);
}

size_t vega__dns_hosts_find(const struct vega__dns_hosts *h, const char *name, int family,
                            vega_addr *out, size_t max)
{
    char norm[VEGA__DNS_TEXT_MAX + 1];
    if (!name_norm(norm, sizeof(norm), name))
        return 0;
    size_t found = 0;
    static const int order[2] = {AF_INET6, AF_INET};
    for (int k = 0; k < 2; k++) {
        if (family != AF_UNSPEC && family != order[k])
            continue;
        for (size_t i = 0; i < h->n; i++) {
            if (vega_addr_family(&h->v[i].addr) != order[k] || strcmp(h->v[i].name, norm) != 0)
                continue;
            /* The same address listed twice (say on two lines) is returned once. */
            bool dup = false;
            for (size_t j = 0; j < found && j < max; j++)
                dup = dup || vega_addr_equal(&out[j], &h->v[i].addr);
            if (dup)
                continue;
            if (found < max)
                out[found] = h->v[i].addr;
            found++;
        }
    }
    return found;
}

void vega__dns_hosts_fini(struct vega__dns_hosts *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i].name);
    free(h->v);
    memset(h, 0, sizeof(*h));
}

/* ---- files ---------------------------------------------------------------------------------- */

int vega__dns_file_read(const char *path, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int r = 0;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if ((uint64_t)st.st_size > VEGA__DNS_FILE_MAX) {
        r = -EFBIG;
        goto out;
    }
    /* st_size may be 0 (procfs) or change under us: read until EOF with a growing buffer. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (cap < 4096)
        cap = 4096;
    char *b = malloc(cap);
    if (!b) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        if (n + 1 == cap) {
            if (cap > VEGA__DNS_FILE_MAX) {
                free(b);
                r = -EFBIG;
                goto out;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                r = -ENOMEM;
                goto out;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t k = read(fd, b + n, cap - 1 - n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            free(b);
            goto out;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
out:
    close(fd);
    return r;
}
