/* SPDX-License-Identifier: MIT */
/* vega-serve: HTTP Basic authentication (RFC 7617) for -a/--auth and --auth-file: the users
 * and their stored passwords (passwd.c), the Authorization field checked in constant time, slow
 * hashes verified on the runtime's blocking pool with a bounded cache of recent successes, and
 * the 401 challenge (RFC 9110 §11.6.1). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include <vega/base64.h>
#include <vega/crypto.h>
#include <vega/rt.h>

#include "passwd.h"
#include "serve.h"

/* A slow hash waits this long at most for the blocking pool (then 503). */
#define VERIFY_WAIT_MS 30000

struct serve_user {
    char name[SERVE_AUTH_NAME_MAX + 1];
    size_t name_len;
    struct serve_pw pw;
};

static struct serve_user *users;
static size_t nusers, users_cap;
static size_t first_slow = SIZE_MAX; /* a user with a slow hash, for unknown names */

/* Recent successes of slow hashes: (user, HMAC-SHA256 of the password under a key made at
 * start), so that a browser's every request does not run bcrypt again. At most
 * serve_o.auth_cache entries, the least recently used replaced. Shared by the workers. */
struct cache_ent {
    uint8_t tag[32];
    uint64_t used; /* 0: empty */
    size_t user;
};
static struct cache_ent *cache;
static uint64_t cache_clock;
static uint8_t cache_key[32];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t slow_runs; /* slow hashes run (-v says each) */

size_t serve_auth_users(void)
{
    return nusers;
}

static bool name_ok(const char *s, size_t len)
{
    if (len == 0 || len > SERVE_AUTH_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ':')
            return false;
    return true;
}

/* Takes pw (freed on failure). */
static int add_user(const char *name, size_t nl, struct serve_pw *pw, const char *where)
{
    for (size_t i = 0; i < nusers; i++)
        if (users[i].name_len == nl && memcmp(users[i].name, name, nl) == 0) {
            cli_err(where, "user '%.*s' is given twice", (int)nl, name);
            serve_pw_free(pw);
            return -1;
        }
    if (nusers == SERVE_AUTH_USERS_MAX) {
        cli_err(where, "at most %d users", SERVE_AUTH_USERS_MAX);
        serve_pw_free(pw);
        return -1;
    }
    if (nusers == users_cap) {
        size_t cap = users_cap ? users_cap * 2 : 8;
        struct serve_user *nu = realloc(users, cap * sizeof(*nu));
        if (!nu) {
            cli_err(where, "out of memory");
            serve_pw_free(pw);
            return -1;
        }
        users = nu;
        users_cap = cap;
    }
    if (serve_pw_slow(pw) && first_slow == SIZE_MAX)
        first_slow = nusers;
    struct serve_user *u = &users[nusers++];
    memcpy(u->name, name, nl);
    u->name[nl] = '\0';
    u->name_len = nl;
    u->pw = *pw;
    return 0;
}

int serve_auth_add(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (!colon || !name_ok(spec, (size_t)(colon - spec))) {
        cli_err("--auth",
                "expected USER:PASSWORD or USER:HASH (a user name of 1 to %d "
                "bytes without ':' or control characters)",
                SERVE_AUTH_NAME_MAX);
        return -1;
    }
    const char *pw = colon + 1;
    size_t pl = strlen(pw);
    struct serve_pw p;
    const char *why;
    int h = serve_pw_parse(pw, pl, &p, &why);
    if (h < 0) {
        cli_err("--auth", "%s%s", why,
                pw[0] == '$' ? " (a PASS that starts with '$' is read as a hash: give "
                               "sha256:HEX of it instead)"
                             : "");
        return -1;
    }
    if (h == 0 && (pl == 0 || pl > SERVE_AUTH_PASS_MAX)) {
        cli_err("--auth", "a password of 1 to %d bytes", SERVE_AUTH_PASS_MAX);
        return -1;
    }
    if (h == 0) {
        p.kind = SERVE_PW_SHA256;
        if (vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, pw, pl, p.sha256) < 0) {
            cli_err("--auth", "SHA-256 failed");
            return -1;
        }
    }
    return add_user(spec, (size_t)(colon - spec), &p, "--auth");
}

/* One line of an --auth-file (without its line end). */
static int file_line(const char *path, unsigned lineno, const char *s, size_t len)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    if (len == 0 || s[0] == '#')
        return 0;
    char where[4200];
    snprintf(where, sizeof where, "%s:%u", path, lineno);
    const char *colon = memchr(s, ':', len);
    if (!colon || !name_ok(s, (size_t)(colon - s))) {
        cli_err(where, "expected USER:HASH");
        return -1;
    }
    size_t nl = (size_t)(colon - s);
    const char *h = colon + 1;
    size_t hl = len - nl - 1;
    struct serve_pw pw;
    const char *why;
    int r = serve_pw_parse(h, hl, &pw, &why);
    if (r == 1)
        return add_user(s, nl, &pw, where);
    if (r < 0)
        cli_err(where, "%s", why);
    else
        cli_err(where, "a plain password is refused: write USER:HASH (vega-serve "
                       "--hash-password USER makes one; htpasswd -B, mkpasswd and openssl "
                       "passwd -6 hashes are read too)");
    return -1;
}

int serve_auth_load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_err(path, "--auth-file: %s", strerror(errno));
        return -1;
    }
    char line[SERVE_AUTH_LINE_MAX + 2];
    unsigned lineno = 0;
    size_t total = 0;
    int r = 0;
    while (r == 0 && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        lineno++;
        if (total + len > SERVE_AUTH_FILE_MAX) {
            cli_err(path, "--auth-file: larger than %d bytes", SERVE_AUTH_FILE_MAX);
            r = -1;
            break;
        }
        total += len;
        bool end = len && line[len - 1] == '\n';
        if (!end && !feof(f)) {
            cli_err(path, "line %u: longer than %d bytes", lineno, SERVE_AUTH_LINE_MAX);
            r = -1;
            break;
        }
        if (end)
            len--;
        if (memchr(line, '\0', len)) {
            cli_err(path, "line %u: a NUL byte", lineno);
            r = -1;
            break;
        }
        r = file_line(path, lineno, line, len);
    }
    if (r == 0 && ferror(f)) {
        cli_err(path, "--auth-file: cannot read it");
        r = -1;
    }
    fclose(f);
    vega_crypto_cleanse(line, sizeof line);
    if (r == 0 && nusers == 0) {
        cli_err(path, "--auth-file: no user in it");
        r = -1;
    }
    return r;
}

int serve_auth_cache_init(void)
{
    if (first_slow == SIZE_MAX || serve_o.auth_cache == 0)
        return 0;
    cache = calloc(serve_o.auth_cache, sizeof *cache);
    if (!cache || vega_crypto_random(cache_key, sizeof cache_key) < 0) {
        cli_err("--auth-cache", "cannot set up the cache");
        return -1;
    }
    return 0;
}

/* The cache tag of (user, password). */
static bool cache_tag(size_t user, const uint8_t *pass, size_t len, uint8_t *tag)
{
    uint8_t msg[sizeof(uint64_t) + SERVE_AUTH_PASS_MAX];
    uint64_t u = user;
    memcpy(msg, &u, sizeof u);
    memcpy(msg + sizeof u, pass, len);
    int r = vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, cache_key, sizeof cache_key, msg,
                                    sizeof u + len, tag);
    vega_crypto_cleanse(msg, sizeof msg);
    return r == 0;
}

static bool cache_hit(size_t user, const uint8_t *tag)
{
    bool hit = false;
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < serve_o.auth_cache; i++) {
        struct cache_ent *e = &cache[i];
        if (e->used && e->user == user && vega_crypto_ct_equal(e->tag, tag, sizeof e->tag)) {
            e->used = ++cache_clock;
            hit = true;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

static void cache_add(size_t user, const uint8_t *tag)
{
    pthread_mutex_lock(&cache_mu);
    struct cache_ent *victim = &cache[0];
    for (size_t i = 0; i < serve_o.auth_cache && victim->used; i++)
        if (!cache[i].used || cache[i].used < victim->used)
            victim = &cache[i];
    memcpy(victim->tag, tag, sizeof victim->tag);
    victim->user = user;
    victim->used = ++cache_clock;
    pthread_mutex_unlock(&cache_mu);
}

struct verify_job {
    const struct serve_pw *pw;
    const uint8_t *pass;
    size_t len;
    bool ok;
};

static void *verify_job(void *arg)
{
    struct verify_job *j = arg;
    j->ok = serve_pw_verify(j->pw, j->pass, j->len);
    return NULL;
}

/* A slow hash on the blocking pool (never on a worker: bcrypt takes tens of ms). */
static int verify_slow(size_t user, const uint8_t *pass, size_t len, bool unknown)
{
    struct verify_job j = {.pw = &users[user].pw, .pass = pass, .len = len};
    void *res;
    int r = vega_blocking(verify_job, &j, &res, vega_deadline_in_ms(VERIFY_WAIT_MS));
    if (r < 0) {
        cli_log(1, "auth: %s check not run: %s", serve_pw_name(j.pw), vega_strerror(r));
        return r;
    }
    uint64_t n = __atomic_add_fetch(&slow_runs, 1, __ATOMIC_RELAXED);
    if (unknown) {
        cli_log(1, "auth: %s hash run for an unknown user (%" PRIu64 " so far)",
                serve_pw_name(j.pw), n);
        return 0;
    }
    cli_log(1, "auth: %s hash run for '%s' (%s; %" PRIu64 " so far)", serve_pw_name(j.pw),
            users[user].name, j.ok ? "match" : "no match", n);
    return j.ok ? 1 : 0;
}

int serve_auth_check(const vega_http_request *req)
{
    if (nusers == 0)
        return 1;
    size_t len;
    const char *v = serve_req_field(req, "Authorization", &len);
    if (!v || len < 6 || strncasecmp(v, "Basic ", 6) != 0)
        return 0;
    v += 6, len -= 6;
    while (len && *v == ' ')
        v++, len--;
    /* user:password of at most the limits, in base64: 4 bytes for each 3 */
    uint8_t cred[SERVE_AUTH_NAME_MAX + 1 + SERVE_AUTH_PASS_MAX + 3];
    if (len > (sizeof cred / 3) * 4)
        return 0;
    /* standard base64 with padding, as RFC 7617 §2 asks */
    vega_ssize n = vega_base64_decode(v, len, cred, sizeof cred, VEGA_BASE64_STD);
    if (n <= 0)
        return 0;
    const uint8_t *colon = memchr(cred, ':', (size_t)n);
    if (!colon) {
        vega_crypto_cleanse(cred, sizeof cred);
        return 0;
    }
    size_t nl = (size_t)(colon - cred);
    const uint8_t *pass = colon + 1;
    size_t pl = (size_t)n - nl - 1;
    /* Every name is compared in constant time, with no early exit: the time does not tell
     * which user matched. */
    char name[SERVE_AUTH_NAME_MAX];
    memset(name, 0, sizeof name);
    if (nl <= SERVE_AUTH_NAME_MAX)
        memcpy(name, cred, nl);
    size_t match = SIZE_MAX;
    for (size_t i = 0; i < nusers; i++) {
        char un[SERVE_AUTH_NAME_MAX];
        memset(un, 0, sizeof un);
        memcpy(un, users[i].name, users[i].name_len);
        unsigned same = vega_crypto_ct_equal(un, name, sizeof un) & (users[i].name_len == nl);
        match = same ? i : match;
    }
    int ok = 0;
    if (match == SIZE_MAX) {
        /* an unknown name costs what a known one does: a fast check, or a slow one when some
         * user has a slow hash (else the time would tell which names exist) */
        if (first_slow != SIZE_MAX && pl <= SERVE_AUTH_PASS_MAX)
            ok = verify_slow(first_slow, pass, pl, true) < 0 ? -1 : 0;
        else
            (void)serve_pw_verify(&users[0].pw, pass, pl);
    } else if (!serve_pw_slow(&users[match].pw)) {
        ok = serve_pw_verify(&users[match].pw, pass, pl);
    } else if (pl <= SERVE_AUTH_PASS_MAX) {
        uint8_t tag[32];
        bool tagged = cache && cache_tag(match, pass, pl, tag);
        if (tagged && cache_hit(match, tag)) {
            ok = 1;
        } else {
            ok = verify_slow(match, pass, pl, false);
            if (ok == 1 && tagged)
                cache_add(match, tag);
        }
        vega_crypto_cleanse(tag, sizeof tag);
    }
    vega_crypto_cleanse(cred, sizeof cred);
    return ok;
}

int serve_auth_challenge(vega_http_exchange *x)
{
    char v[SERVE_REALM_MAX + 48];
    int n = snprintf(v, sizeof v, "Basic realm=\"%s\", charset=\"UTF-8\"", serve_o.realm);
    vega_http_field f = {{"WWW-Authenticate", 16}, {v, n > 0 ? (size_t)n : 0}};
    return serve_simple(x, 401, &f, 1);
}

int serve_hash_password(const char *user, const char *scheme)
{
    if (!name_ok(user, strlen(user))) {
        cli_err("--hash-password",
                "a user name of 1 to %d bytes without ':' or control "
                "characters",
                SERVE_AUTH_NAME_MAX);
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
    char line[SERVE_AUTH_PASS_MAX + 3];
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
    if (len == 0 || len > SERVE_AUTH_PASS_MAX) {
        cli_err("--hash-password", "expected a password of 1 to %d bytes on stdin (one line)",
                SERVE_AUTH_PASS_MAX);
        rc = 2;
    } else if (!(h = serve_pw_hash(scheme, line, len))) {
        cli_err("--hash-password", "%s hashing failed", scheme);
        rc = 1;
    } else {
        printf("%s:%s\n", user, h);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    vega_crypto_cleanse(line, sizeof line);
    free(h);
    return rc;
}
