/* SPDX-License-Identifier: MIT */
/* The user store of pwstore.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/rt.h>

#include "cli.h"
#include "pwstore.h"

#define NAME_CAP 255

struct pw_user {
    char name[NAME_CAP + 1];
    size_t name_len;
    struct cli_pw pw;
};

/* A recent success of a slow hash: HMAC-SHA256 of (name, password) under a key made when the
 * cache is, so the cache holds no password and no hash an attacker could reuse. */
struct cache_ent {
    uint8_t tag[32];
    uint64_t used; /* 0: empty */
};

struct cli_pwstore {
    unsigned refs;
    size_t name_max;
    size_t cmp_len; /* the longest name: every check compares this many bytes per user */
    struct pw_user *users;
    size_t n, cap;
    size_t first_slow; /* a user with a slow hash, for unknown names; SIZE_MAX: none */
    struct cache_ent *cache;
    size_t cache_n;
    uint64_t cache_clock;
    uint8_t cache_key[32];
    pthread_mutex_t cache_mu;
    uint64_t slow_runs; /* slow hashes run (-v says each) */
};

struct cli_pwstore *cli_pwstore_new(size_t name_max)
{
    struct cli_pwstore *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->refs = 1;
    s->name_max = name_max < NAME_CAP ? name_max : NAME_CAP;
    s->first_slow = SIZE_MAX;
    pthread_mutex_init(&s->cache_mu, NULL);
    return s;
}

void cli_pwstore_ref(struct cli_pwstore *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void cli_pwstore_unref(struct cli_pwstore *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        cli_pw_free(&s->users[i].pw);
    vega_crypto_cleanse(s->users, s->cap * sizeof *s->users);
    free(s->users);
    free(s->cache);
    vega_crypto_cleanse(s->cache_key, sizeof s->cache_key);
    pthread_mutex_destroy(&s->cache_mu);
    free(s);
}

int cli_pwstore_add(struct cli_pwstore *s, const char *name, size_t nl, struct cli_pw *pw)
{
    int r = 0;
    if (nl == 0 || nl > s->name_max)
        r = -EINVAL;
    for (size_t i = 0; r == 0 && i < s->n; i++)
        if (s->users[i].name_len == nl && memcmp(s->users[i].name, name, nl) == 0)
            r = -EEXIST;
    if (r == 0 && s->n == CLI_PWSTORE_USERS_MAX)
        r = -E2BIG;
    if (r == 0 && s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        if (cap > CLI_PWSTORE_USERS_MAX)
            cap = CLI_PWSTORE_USERS_MAX;
        struct pw_user *nu = realloc(s->users, cap * sizeof *nu);
        if (nu) {
            s->users = nu;
            s->cap = cap;
        } else {
            r = -ENOMEM;
        }
    }
    if (r < 0) {
        cli_pw_free(pw);
        return r;
    }
    if (cli_pw_slow(pw) && s->first_slow == SIZE_MAX)
        s->first_slow = s->n;
    struct pw_user *u = &s->users[s->n++];
    memcpy(u->name, name, nl);
    u->name[nl] = '\0';
    u->name_len = nl;
    u->pw = *pw;
    if (nl > s->cmp_len)
        s->cmp_len = nl;
    return 0;
}

size_t cli_pwstore_count(const struct cli_pwstore *s)
{
    return s->n;
}

const char *cli_pwstore_name(const struct cli_pwstore *s, size_t i)
{
    return s->users[i].name;
}

int cli_pwstore_cache(struct cli_pwstore *s, size_t entries)
{
    if (s->first_slow == SIZE_MAX || entries == 0)
        return 0;
    s->cache = calloc(entries, sizeof *s->cache);
    if (!s->cache)
        return -ENOMEM;
    int r = vega_crypto_random(s->cache_key, sizeof s->cache_key);
    if (r < 0) {
        free(s->cache);
        s->cache = NULL;
        return r;
    }
    s->cache_n = entries;
    return 0;
}

/* The cache tag of (user, password). */
static bool cache_tag(struct cli_pwstore *s, size_t user, const uint8_t *pass, size_t len,
                      uint8_t *tag)
{
    const struct pw_user *u = &s->users[user];
    uint8_t msg[1 + NAME_CAP + CLI_PWSTORE_PASS_MAX];
    msg[0] = (uint8_t)u->name_len;
    memcpy(msg + 1, u->name, u->name_len);
    memcpy(msg + 1 + u->name_len, pass, len);
    int r = vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, s->cache_key, sizeof s->cache_key, msg,
                                    1 + u->name_len + len, tag);
    vega_crypto_cleanse(msg, sizeof msg);
    return r == 0;
}

static bool cache_hit(struct cli_pwstore *s, const uint8_t *tag)
{
    bool hit = false;
    pthread_mutex_lock(&s->cache_mu);
    for (size_t i = 0; i < s->cache_n; i++) {
        struct cache_ent *e = &s->cache[i];
        if (e->used && vega_crypto_ct_equal(e->tag, tag, sizeof e->tag)) {
            e->used = ++s->cache_clock;
            hit = true;
        }
    }
    pthread_mutex_unlock(&s->cache_mu);
    return hit;
}

static void cache_add(struct cli_pwstore *s, const uint8_t *tag)
{
    pthread_mutex_lock(&s->cache_mu);
    struct cache_ent *victim = &s->cache[0];
    for (size_t i = 0; i < s->cache_n && victim->used; i++)
        if (!s->cache[i].used || s->cache[i].used < victim->used)
            victim = &s->cache[i];
    memcpy(victim->tag, tag, sizeof victim->tag);
    victim->used = ++s->cache_clock;
    pthread_mutex_unlock(&s->cache_mu);
}

struct verify_job {
    const struct cli_pw *pw;
    const uint8_t *pass;
    size_t len;
    bool ok;
};

static void *verify_job(void *arg)
{
    struct verify_job *j = arg;
    j->ok = cli_pw_verify(j->pw, j->pass, j->len);
    return NULL;
}

/* A slow hash on the blocking pool (never on a worker: bcrypt takes tens of ms). */
static int verify_slow(struct cli_pwstore *s, size_t user, const uint8_t *pass, size_t len,
                       bool unknown, unsigned wait_ms)
{
    struct verify_job j = {.pw = &s->users[user].pw, .pass = pass, .len = len};
    void *res;
    int r = vega_blocking(verify_job, &j, &res, vega_deadline_in_ms(wait_ms));
    if (r < 0) {
        cli_log(1, "auth: %s check not run: %s", cli_pw_name(j.pw), vega_strerror(r));
        return r;
    }
    uint64_t n = __atomic_add_fetch(&s->slow_runs, 1, __ATOMIC_RELAXED);
    if (unknown) {
        cli_log(1, "auth: %s hash run for an unknown user (%" PRIu64 " so far)", cli_pw_name(j.pw),
                n);
        return 0;
    }
    cli_log(1, "auth: %s hash run for '%s' (%s; %" PRIu64 " so far)", cli_pw_name(j.pw),
            s->users[user].name, j.ok ? "match" : "no match", n);
    return j.ok ? 1 : 0;
}

int cli_pwstore_check(struct cli_pwstore *s, const char *name, size_t nl, const uint8_t *pass,
                      size_t pl, unsigned wait_ms)
{
    if (s->n == 0)
        return 0;
    /* Every name is compared in constant time over the longest name's length, with no early
     * exit: the time does not tell which user matched (a longer name matches none). */
    char want[NAME_CAP];
    memset(want, 0, sizeof want);
    memcpy(want, name, nl < s->cmp_len ? nl : s->cmp_len);
    size_t match = SIZE_MAX;
    for (size_t i = 0; i < s->n; i++) {
        char un[NAME_CAP];
        memset(un, 0, s->cmp_len);
        memcpy(un, s->users[i].name, s->users[i].name_len);
        unsigned same = vega_crypto_ct_equal(un, want, s->cmp_len) & (s->users[i].name_len == nl);
        match = same ? i : match;
    }
    int ok = 0;
    if (match == SIZE_MAX) {
        /* an unknown name costs what a known one does: a fast check, or a slow one when some
         * user has a slow hash (else the time would tell which names exist) */
        if (s->first_slow != SIZE_MAX && pl <= CLI_PWSTORE_PASS_MAX) {
            int r = verify_slow(s, s->first_slow, pass, pl, true, wait_ms);
            ok = r < 0 ? r : 0;
        } else {
            (void)cli_pw_verify(&s->users[0].pw, pass, pl);
        }
    } else if (!cli_pw_slow(&s->users[match].pw)) {
        ok = cli_pw_verify(&s->users[match].pw, pass, pl);
    } else if (pl <= CLI_PWSTORE_PASS_MAX) {
        uint8_t tag[32];
        bool tagged = s->cache && cache_tag(s, match, pass, pl, tag);
        if (tagged && cache_hit(s, tag)) {
            ok = 1;
        } else {
            ok = verify_slow(s, match, pass, pl, false, wait_ms);
            if (ok == 1 && tagged)
                cache_add(s, tag);
        }
        vega_crypto_cleanse(tag, sizeof tag);
    }
    vega_crypto_cleanse(want, sizeof want);
    return ok;
}

int cli_hash_password(const char *opt, const char *user, size_t name_max, const char *scheme)
{
    size_t ul = strlen(user);
    bool name_ok = ul > 0 && ul <= name_max;
    for (size_t i = 0; i < ul; i++)
        if ((unsigned char)user[i] < 0x20 || user[i] == 0x7f || user[i] == ':')
            name_ok = false;
    if (!name_ok) {
        cli_err(opt, "a user name of 1 to %zu bytes without ':' or control characters", name_max);
        return 2;
    }
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fprintf(stderr, "Password for %s: ", user);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    char line[CLI_PWSTORE_PASS_MAX + 3];
    bool got = fgets(line, sizeof line, stdin) != NULL;
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    size_t len = got ? strlen(line) : 0;
    if (len && line[len - 1] == '\n')
        len--;
    if (len && line[len - 1] == '\r')
        len--;
    int rc = 0;
    char *h = NULL;
    if (len == 0 || len > CLI_PWSTORE_PASS_MAX) {
        cli_err(opt, "expected a password of 1 to %d bytes on stdin (one line)",
                CLI_PWSTORE_PASS_MAX);
        rc = 2;
    } else if (!(h = cli_pw_hash(scheme, line, len))) {
        cli_err(opt, "%s hashing failed", scheme);
        rc = 1;
    } else {
        printf("%s:%s\n", user, h);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    vega_crypto_cleanse(line, sizeof line);
    free(h);
    return rc;
}
