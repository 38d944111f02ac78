/* SPDX-License-Identifier: MIT */
/* Requests to more than one path: -i FILE (h2load's: the URLs of a file, each connection taking
 * them in turn) and --random-query NAME (a query parameter with a fresh random value on every
 * request, so that no cache answers). Each path is a request-target checked once; with
 * --random-query it ends in LOAD_RANDOM_DIGITS placeholder digits that every request replaces. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"

/* A request-target as every protocol takes it: origin-form, visible ASCII (RFC 9112 §3.2). */
static bool target_ok(const char *p, size_t len)
{
    if (len == 0 || p[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
            return false;
    return true;
}

/* Adds a path (len bytes, without fragment) to o->paths, with the placeholder when asked. */
static void add_path(struct load_opts *o, const char *p, size_t len, const char *where)
{
    if (!target_ok(p, len))
        cli_usage_error("%s: '%.*s' is not a path (a '/' then visible ASCII)", where,
                        (int)(len < 200 ? len : 200), p);
    size_t extra = 0, qlen = o->random_query ? strlen(o->random_query) : 0;
    if (o->random_query)
        extra = 1 + qlen + 1 + LOAD_RANDOM_DIGITS; /* ? or &, NAME, =, digits */
    if (len + extra > LOAD_MAX_PATH)
        cli_usage_error("%s: a path over %u bytes", where, LOAD_MAX_PATH);
    if (o->npaths >= LOAD_MAX_PATHS)
        cli_usage_error("%s: more than %u paths", where, LOAD_MAX_PATHS);
    char *s = malloc(len + extra + 1);
    if (!s)
        cli_usage_error("%s: %s", where, strerror(ENOMEM));
    memcpy(s, p, len);
    if (o->random_query) {
        size_t at = len;
        s[at++] = memchr(p, '?', len) ? '&' : '?';
        memcpy(s + at, o->random_query, qlen);
        at += qlen;
        s[at++] = '=';
        memset(s + at, '0', LOAD_RANDOM_DIGITS);
        at += LOAD_RANDOM_DIGITS;
        len = at;
    }
    s[len] = '\0';
    if (o->npaths == o->paths_cap) {
        unsigned cap = o->paths_cap ? o->paths_cap * 2 : 16;
        char **np = realloc(o->paths, cap * sizeof(*np));
        if (!np)
            cli_usage_error("%s: %s", where, strerror(ENOMEM));
        o->paths = np;
        o->paths_cap = cap;
    }
    o->paths[o->npaths++] = s;
}

char *load_input_file(struct load_opts *o, const char *file)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!f)
        cli_usage_error("-i %s: %s", file, strerror(errno));
    /* Read in growing steps: the limit is a bound, not what a short list costs. */
    char *buf = NULL;
    size_t n = 0, cap = 0;
    while (!feof(f) && !ferror(f) && n <= LOAD_MAX_INPUT_FILE) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            if (cap > LOAD_MAX_INPUT_FILE + 1)
                cap = LOAD_MAX_INPUT_FILE + 1;
            char *nb = realloc(buf, cap + 1);
            if (!nb)
                cli_usage_error("-i %s: %s", file, strerror(ENOMEM));
            buf = nb;
        }
        n += fread(buf + n, 1, cap - n, f);
    }
    if (!buf && !(buf = malloc(1)))
        cli_usage_error("-i %s: %s", file, strerror(ENOMEM));
    bool failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (failed)
        cli_usage_error("-i %s: cannot read", file);
    if (n > LOAD_MAX_INPUT_FILE)
        cli_usage_error("-i %s: over %u MiB", file, LOAD_MAX_INPUT_FILE >> 20);
    if (memchr(buf, '\0', n))
        cli_usage_error("-i %s: a NUL byte", file);
    buf[n] = '\0';
    /* Lines in place: the first is the URL, the rest stay in buf for load_paths_setup. */
    char *first = NULL;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len > 0) {
            first = line;
            o->input_rest = next;
            break;
        }
    }
    if (!first)
        cli_usage_error("-i %s: no URL in it", file);
    o->input_buf = buf;
    return first;
}

void load_paths_setup(struct load_opts *o)
{
    if (!o->input_buf && !o->random_query)
        return;
    const char *where = o->input_file ? o->input_file : "--random-query";
    add_path(o, o->path, strlen(o->path), where);
    for (char *line = o->input_rest, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len == 0)
            continue;
        if (line[0] == '/') {
            add_path(o, line, strcspn(line, "#"), where);
            continue;
        }
        /* A whole URL: the first URL's scheme, host and port, or an error (h2load ignores
         * them silently; a load meant for two servers should not go to one). */
        struct load_opts u = {0};
        char err[512], hbuf[256], pbuf[16];
        int e = load_url_parse(&u, line, hbuf, sizeof(hbuf), pbuf, sizeof(pbuf), err, sizeof(err));
        if (e < 0)
            cli_usage_error("-i %s: %s", where, err);
        bool same = u.tls == o->tls && !u.ws && strcasecmp(u.host_header, o->host_header) == 0;
        if (!same)
            cli_usage_error("-i %s: '%s' is not on %s://%s (every URL in the file must have the "
                            "first one's scheme, host and port)",
                            where, line, o->tls ? "https" : "http", o->host_header);
        add_path(o, u.path, strlen(u.path), where);
        free(u.path);
        free(u.host_header);
    }
    /* Builders check and size the request with the longest path. */
    size_t longest = 0;
    for (unsigned i = 0; i < o->npaths; i++)
        if (strlen(o->paths[i]) > strlen(o->paths[longest]))
            longest = i;
    o->path_longest = o->paths[longest];
    o->paths_vary = o->npaths > 1 || o->random_query;
}

void load_paths_start(struct load_pathgen *g, const struct load_opts *o, unsigned index)
{
    g->next = 0;
    /* Seeds differ per connection and run: the time and the index, mixed. */
    g->rng = (uint64_t)vega_now() ^ ((uint64_t)index * 0x9e3779b97f4a7c15ull);
    if (g->rng == 0)
        g->rng = 1;
    (void)o;
}

/* xorshift64*: fast, and random enough that no cache sees a value twice. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

void load_random_digits(struct load_pathgen *g, char *at)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t v = next_random(&g->rng);
    for (int i = 0; i < LOAD_RANDOM_DIGITS; i++, v >>= 4)
        at[i] = hex[v & 15];
}

unsigned load_paths_pick(struct load_pathgen *g, const struct load_opts *o)
{
    unsigned i = (unsigned)(g->next % o->npaths);
    g->next++;
    return i;
}

void load_paths_free(struct load_opts *o)
{
    for (unsigned i = 0; i < o->npaths; i++) {
        free(o->paths[i]);
        if (o->variants)
            free(o->variants[i].req);
    }
    free(o->paths);
    free(o->variants);
    free(o->input_buf);
    o->paths = NULL;
    o->variants = NULL;
    o->input_buf = NULL;
    o->npaths = 0;
}
