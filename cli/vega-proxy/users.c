/* SPDX-License-Identifier: MIT */
/* Who may use the proxy: the --users file (user:password lines, RFC 1929's 1..255 bytes each) or
 * the single -u/-P pair, and the credential check both handshakes use. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proxy.h"

/* A line of the file: user, ':', password, at most this long with its newline. */
#define USERS_LINE_MAX (2 * VEGA_PROXY_MAX_CRED + 3)

static int add_user(struct proxy_opts *o, const char *user, size_t ul, const char *pass, size_t pl)
{
    if (o->nusers == PROXY_MAX_USERS)
        return -E2BIG;
    if (o->nusers == o->users_cap) {
        size_t cap = o->users_cap ? 2 * o->users_cap : 16;
        if (cap > PROXY_MAX_USERS)
            cap = PROXY_MAX_USERS;
        struct proxy_user *n = realloc(o->users, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        o->users = n;
        o->users_cap = cap;
    }
    struct proxy_user *u = &o->users[o->nusers];
    memcpy(u->user, user, ul);
    u->user[ul] = '\0';
    memcpy(u->password, pass, pl);
    u->password[pl] = '\0';
    o->nusers++;
    return 0;
}

/* One line without its newline: a comment, a blank line or user:password. Returns 0, or -EINVAL
 * with *why set. */
static int parse_line(struct proxy_opts *o, char *line, const char **why)
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
    for (size_t i = 0; i < o->nusers; i++) {
        if (strlen(o->users[i].user) == ul && memcmp(o->users[i].user, line, ul) == 0) {
            *why = "this user is listed twice";
            return -EINVAL;
        }
    }
    int r = add_user(o, line, ul, colon + 1, pl);
    if (r < 0) {
        *why = r == -E2BIG ? "too many users (at most " PROXY_MAX_USERS_S ")" : "out of memory";
        return -EINVAL;
    }
    return 0;
}

static int users_line(void *o, char *line, const char **why)
{
    return parse_line(o, line, why);
}

int proxy_read_lines(FILE *f, const char *path, char *line, size_t cap, const char *too_long,
                     int (*parse)(void *ctx, char *line, const char **why), void *ctx)
{
    unsigned long lineno = 0;
    while (fgets(line, (int)cap, f)) {
        lineno++;
        size_t n = strlen(line);
        const char *why = NULL;
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        else if (!feof(f))
            why = too_long;
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        if (!why && strlen(line) != n)
            why = "a NUL byte in the line";
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

int users_load(struct proxy_opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        cli_err(path, "%s", strerror(e));
        return -e;
    }
    struct stat st;
    /* the passwords are in clear: only the proxy's user should read them */
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
        cli_err(path, "warning: readable by %s (mode %04o); chmod 600 it",
                (st.st_mode & S_IROTH) ? "everyone" : "its group", (unsigned)(st.st_mode & 07777));
    char line[USERS_LINE_MAX + 2];
    int r = proxy_read_lines(f, path, line, sizeof line,
                             "line too long (user and password have at most 255 bytes each)",
                             users_line, o);
    fclose(f);
    if (r == 0 && o->nusers == 0) {
        cli_err(path, "no user:password line");
        r = -EINVAL;
    }
    return r;
}

int users_single(struct proxy_opts *o, const char *user, const char *password)
{
    return add_user(o, user, strlen(user), password, strlen(password));
}

/* Readers of the users take it shared; a SIGHUP reload swaps the list under it. */
static pthread_rwlock_t users_lock = PTHREAD_RWLOCK_INITIALIZER;

bool users_required(const struct proxy_opts *o)
{
    pthread_rwlock_rdlock(&users_lock);
    bool r = o->nusers > 0;
    pthread_rwlock_unlock(&users_lock);
    return r;
}

int users_reload(struct proxy_opts *o)
{
    struct proxy_opts fresh = {.users = NULL};
    int r = users_load(&fresh, o->users_file);
    if (r < 0) {
        free(fresh.users);
        cli_err(o->users_file, "not reloaded: the users stay as they were");
        return r;
    }
    pthread_rwlock_wrlock(&users_lock);
    struct proxy_user *old = o->users;
    o->users = fresh.users;
    o->nusers = fresh.nusers;
    o->users_cap = fresh.users_cap;
    pthread_rwlock_unlock(&users_lock);
    free(old);
    fprintf(stderr, "vega-proxy: %s: reloaded, %zu users\n", o->users_file, fresh.nusers);
    return 0;
}

bool creds_ok(const struct proxy_opts *o, const char *user, const char *pass)
{
    pthread_rwlock_rdlock(&users_lock);
    /* every entry is compared, and each comparison's time does not depend on where the strings
     * differ: the time tells nothing about which user names exist */
    unsigned ok = 0;
    size_t ul = strlen(user), pl = strlen(pass);
    for (size_t k = 0; k < o->nusers; k++) {
        const struct proxy_user *u = &o->users[k];
        size_t eul = strlen(u->user), epl = strlen(u->password);
        unsigned diff = (unsigned)(ul ^ eul) | (unsigned)(pl ^ epl);
        for (size_t i = 0; i < eul; i++)
            diff |= (unsigned char)(user[i < ul ? i : 0] ^ u->user[i]);
        for (size_t i = 0; i < epl; i++)
            diff |= (unsigned char)(pass[i < pl ? i : 0] ^ u->password[i]);
        ok |= diff == 0;
    }
    pthread_rwlock_unlock(&users_lock);
    return ok != 0;
}
