/* SPDX-License-Identifier: MIT */
/* Who may use the proxy: the --users file (user:password lines, RFC 1929's 1..255 bytes each;
 * a password may be stored as a hash, passwd.h's forms) or the single -u/-P pair, kept in a user
 * store (pwstore.h) that both handshakes check, and the tunnels each user holds at once
 * (--max-conns-per-user). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <vega/crypto.h>

#include "proxy.h"

_Static_assert(PROXY_MAX_USERS == 10000, "PROXY_MAX_USERS_S spells the store's bound");

/* A line of the file: user, ':', password, at most this long with its newline. */
#define USERS_LINE_MAX (2 * VEGA_PROXY_MAX_CRED + 3)
/* A slow hash waits this long at most for the blocking pool (then the client is refused). */
#define VERIFY_WAIT_MS 10000
/* Slow-hash successes kept, so that a client's every tunnel does not run bcrypt again. */
#define AUTH_CACHE 1024

struct users_load {
    struct cli_pwstore *store;
    bool plain; /* a password is in clear */
};

/* Adds user[0, ul) with password or stored hash pass[0, pl). Returns 0, or -EINVAL with *why. */
static int add_user(struct users_load *l, const char *user, size_t ul, const char *pass, size_t pl,
                    const char **why)
{
    struct cli_pw pw;
    int h = cli_pw_parse(pass, pl, &pw, why);
    if (h < 0)
        return -EINVAL;
    if (h == 0) {
        if (cli_pw_plain(pass, pl, &pw) < 0) {
            *why = "SHA-256 failed";
            return -EINVAL;
        }
        l->plain = true;
    }
    int r = cli_pwstore_add(l->store, user, ul, &pw);
    if (r == -EEXIST)
        *why = "this user is listed twice";
    else if (r == -E2BIG)
        *why = "too many users (at most " PROXY_MAX_USERS_S ")";
    else if (r < 0)
        *why = "out of memory";
    return r < 0 ? -EINVAL : 0;
}

/* One line without its newline: a comment, a blank line or user:password. Returns 0, or -EINVAL
 * with *why set. */
static int users_line(void *ctx, char *line, const char **why)
{
    const char *p = line + strspn(line, " \t");
    if (*p == '\0' || *p == '#')
        return 0;
    char *colon = strchr(line, ':');
    if (!colon) {
        *why = "not user:password";
        return -EINVAL;
    }
    size_t ul = (size_t)(colon - line), pl = strlen(colon + 1);
    if (ul == 0 || ul > VEGA_PROXY_MAX_CRED) {
        *why = "the user name must have 1 to 255 bytes";
        return -EINVAL;
    }
    if (pl == 0 || pl > VEGA_PROXY_MAX_CRED) {
        *why = "the password must have 1 to 255 bytes";
        return -EINVAL;
    }
    return add_user(ctx, line, ul, colon + 1, pl, why);
}

int proxy_read_lines(FILE *f, const char *path, char *line, size_t cap, const char *too_long,
                     int (*parse)(void *ctx, char *line, const char **why), void *ctx)
{
    /* a byte at a time rather than fgets: a NUL byte inside a line must be seen, not end the
     * line's string early with the rest of the line dropped unread */
    size_t max = cap - 2; /* as fgets with room for the newline */
    unsigned long lineno = 0;
    for (int c = 0; c != EOF;) {
        size_t n = 0;
        bool nul = false, over = false;
        while ((c = getc(f)) != EOF && c != '\n') {
            nul |= c == '\0';
            if (n < max)
                line[n++] = (char)c;
            else
                over = true;
        }
        if (c == EOF && n == 0 && !over)
            break; /* the end, after a newline or in an empty file */
        lineno++;
        line[n] = '\0';
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        const char *why = over ? too_long : nul ? "a NUL byte in the line" : NULL;
        if (why || parse(ctx, line, &why) < 0) {
            cli_err(path, "line %lu: %s", lineno, why);
            return -EINVAL;
        }
    }
    if (ferror(f)) {
        cli_err(path, "read error");
        return -EIO;
    }
    return 0;
}

/* A store with the slow-hash cache set up, or NULL after saying why. */
static struct cli_pwstore *store_new(const char *what)
{
    struct cli_pwstore *s = cli_pwstore_new(VEGA_PROXY_MAX_CRED);
    if (!s)
        cli_err(what, "out of memory");
    return s;
}

static int store_ready(struct cli_pwstore *s, const char *what)
{
    if (cli_pwstore_cache(s, AUTH_CACHE) < 0) {
        cli_err(what, "cannot set up the cache of slow-hash checks");
        return -ENOMEM;
    }
    return 0;
}

/* Reads path into a new store (*out). Returns 0 or an error, said on stderr. */
static int load_file(const char *path, struct cli_pwstore **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        cli_err(path, "%s", strerror(e));
        return -e;
    }
    struct users_load l = {.store = store_new(path)};
    if (!l.store) {
        fclose(f);
        return -ENOMEM;
    }
    char line[USERS_LINE_MAX + 2];
    int r = proxy_read_lines(f, path, line, sizeof line,
                             "line too long (user and password have at most 255 bytes each)",
                             users_line, &l);
    vega_crypto_cleanse(line, sizeof line);
    struct stat st;
    /* passwords in clear: only the proxy's user should read them */
    if (r == 0 && l.plain && fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
        cli_err(path,
                "warning: readable by %s (mode %04o) and holds passwords in clear; "
                "chmod 600 it, or store hashes (--hash-password)",
                (st.st_mode & S_IROTH) ? "everyone" : "its group", (unsigned)(st.st_mode & 07777));
    fclose(f);
    if (r == 0 && cli_pwstore_count(l.store) == 0) {
        cli_err(path, "no user:password line");
        r = -EINVAL;
    }
    if (r == 0)
        r = store_ready(l.store, path);
    if (r < 0) {
        cli_pwstore_unref(l.store);
        return r;
    }
    *out = l.store;
    return 0;
}

int users_load(struct proxy_opts *o, const char *path)
{
    return load_file(path, &o->users);
}

int users_single(struct proxy_opts *o, const char *user, const char *password)
{
    struct users_load l = {.store = store_new("-u")};
    if (!l.store)
        return -ENOMEM;
    const char *why = NULL;
    int r = add_user(&l, user, strlen(user), password, strlen(password), &why);
    if (r < 0)
        cli_err("-P", "%s%s", why,
                password[0] == '$' ? " (a password that starts with '$' is read as a hash: "
                                     "give sha256:HEX of it instead)"
                                   : "");
    if (r == 0)
        r = store_ready(l.store, "-u");
    if (r < 0) {
        cli_pwstore_unref(l.store);
        return r;
    }
    o->users = l.store;
    return 0;
}

/* Readers of o->users take it shared and hold a reference while they check; a SIGHUP reload
 * swaps the store under it. */
static pthread_rwlock_t users_lock = PTHREAD_RWLOCK_INITIALIZER;

bool users_required(const struct proxy_opts *o)
{
    pthread_rwlock_rdlock(&users_lock);
    bool r = o->users != NULL;
    pthread_rwlock_unlock(&users_lock);
    return r;
}

size_t users_count(const struct proxy_opts *o)
{
    pthread_rwlock_rdlock(&users_lock);
    size_t n = o->users ? cli_pwstore_count(o->users) : 0;
    pthread_rwlock_unlock(&users_lock);
    return n;
}

int users_reload(struct proxy_opts *o)
{
    struct cli_pwstore *fresh;
    int r = load_file(o->users_file, &fresh);
    if (r < 0) {
        cli_err(o->users_file, "not reloaded: the users stay as they were");
        return r;
    }
    pthread_rwlock_wrlock(&users_lock);
    struct cli_pwstore *old = o->users;
    o->users = fresh;
    pthread_rwlock_unlock(&users_lock);
    cli_pwstore_unref(old);
    fprintf(stderr, "vega-proxy: %s: reloaded, %zu users\n", o->users_file,
            cli_pwstore_count(fresh));
    return 0;
}

void users_free(struct proxy_opts *o)
{
    cli_pwstore_unref(o->users);
    o->users = NULL;
}

int creds_check(const struct proxy_opts *o, const char *user, const char *pass)
{
    pthread_rwlock_rdlock(&users_lock);
    struct cli_pwstore *s = o->users;
    if (s)
        cli_pwstore_ref(s);
    pthread_rwlock_unlock(&users_lock);
    if (!s)
        return 0;
    /* the check may suspend this task on the blocking pool: no lock is held across it */
    int r = cli_pwstore_check(s, user, strlen(user), (const uint8_t *)pass, strlen(pass),
                              VERIFY_WAIT_MS);
    cli_pwstore_unref(s);
    return r;
}

/* --max-conns-per-user: tunnels each user name holds, kept only while it holds one, in a table
 * that outlives reloads (a user's open tunnels count after a SIGHUP as before it). */
#define HOLD_BUCKETS 1024

struct hold {
    struct hold *next;
    uint64_t n;
    size_t len;
    char name[];
};

static struct hold *holds[HOLD_BUCKETS];
static pthread_mutex_t holds_mu = PTHREAD_MUTEX_INITIALIZER;

static struct hold **hold_slot(const char *name, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    struct hold **p = &holds[h % HOLD_BUCKETS];
    while (*p && ((*p)->len != len || memcmp((*p)->name, name, len) != 0))
        p = &(*p)->next;
    return p;
}

int users_hold(const struct proxy_opts *o, const char *user)
{
    if (o->max_per_user == 0)
        return 0;
    size_t len = strlen(user);
    int r = 0;
    pthread_mutex_lock(&holds_mu);
    struct hold **p = hold_slot(user, len);
    if (!*p) {
        struct hold *h = malloc(sizeof *h + len);
        if (h) {
            *h = (struct hold){.len = len};
            memcpy(h->name, user, len);
            *p = h;
        }
    }
    if (!*p)
        r = -ENOMEM;
    else if ((*p)->n >= o->max_per_user)
        r = -EUSERS;
    else
        (*p)->n++;
    pthread_mutex_unlock(&holds_mu);
    return r;
}

void users_unhold(const struct proxy_opts *o, const char *user)
{
    if (o->max_per_user == 0)
        return;
    size_t len = strlen(user);
    pthread_mutex_lock(&holds_mu);
    struct hold **p = hold_slot(user, len);
    struct hold *h = *p;
    if (h && --h->n == 0) {
        *p = h->next;
        free(h);
    }
    pthread_mutex_unlock(&holds_mu);
}
