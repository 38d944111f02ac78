/* SPDX-License-Identifier: MIT */
/* vega-serve: HTTP Basic authentication (RFC 7617) for -a/--auth and --auth-file: the users
 * and their SHA-256 password digests, the Authorization field checked in constant time, and the
 * 401 challenge (RFC 9110 §11.6.1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <vega/crypto.h>

#include "serve.h"

#define HASH_LEN 32

struct serve_user {
    char name[SERVE_AUTH_NAME_MAX + 1];
    size_t name_len;
    uint8_t hash[HASH_LEN]; /* SHA-256 of the password */
};

static struct serve_user *users;
static size_t nusers, users_cap;

size_t serve_auth_users(void)
{
    return nusers;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "sha256:" and 64 hex digits; 1 when s is one (out filled), 0 when it is not that form, -1 when
 * it starts like one but is malformed. */
static int parse_sha256(const char *s, size_t len, uint8_t *out)
{
    static const char pfx[] = "sha256:";
    if (len < sizeof(pfx) - 1 || strncasecmp(s, pfx, sizeof(pfx) - 1) != 0)
        return 0;
    s += sizeof(pfx) - 1;
    len -= sizeof(pfx) - 1;
    if (len != 2 * HASH_LEN)
        return -1;
    for (size_t i = 0; i < HASH_LEN; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
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

static int add_user(const char *name, size_t nl, const uint8_t *hash, const char *where)
{
    for (size_t i = 0; i < nusers; i++)
        if (users[i].name_len == nl && memcmp(users[i].name, name, nl) == 0) {
            cli_err(where, "user '%.*s' is given twice", (int)nl, name);
            return -1;
        }
    if (nusers == SERVE_AUTH_USERS_MAX) {
        cli_err(where, "at most %d users", SERVE_AUTH_USERS_MAX);
        return -1;
    }
    if (nusers == users_cap) {
        size_t cap = users_cap ? users_cap * 2 : 8;
        struct serve_user *nu = realloc(users, cap * sizeof(*nu));
        if (!nu) {
            cli_err(where, "out of memory");
            return -1;
        }
        users = nu;
        users_cap = cap;
    }
    struct serve_user *u = &users[nusers++];
    memcpy(u->name, name, nl);
    u->name[nl] = '\0';
    u->name_len = nl;
    memcpy(u->hash, hash, HASH_LEN);
    return 0;
}

int serve_auth_add(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (!colon || !name_ok(spec, (size_t)(colon - spec))) {
        cli_err("--auth",
                "expected USER:PASSWORD or USER:sha256:HEX (a user name of 1 to %d "
                "bytes without ':' or control characters)",
                SERVE_AUTH_NAME_MAX);
        return -1;
    }
    const char *pw = colon + 1;
    size_t pl = strlen(pw);
    uint8_t hash[HASH_LEN];
    int h = parse_sha256(pw, pl, hash);
    if (h < 0) {
        cli_err("--auth", "'sha256:' must be followed by 64 hex digits");
        return -1;
    }
    if (h == 0 && (pl == 0 || pl > SERVE_AUTH_PASS_MAX)) {
        cli_err("--auth", "a password of 1 to %d bytes", SERVE_AUTH_PASS_MAX);
        return -1;
    }
    if (h == 0 && vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, pw, pl, hash) < 0) {
        cli_err("--auth", "SHA-256 failed");
        return -1;
    }
    return add_user(spec, (size_t)(colon - spec), hash, "--auth");
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
        cli_err(where, "expected USER:sha256:HEX");
        return -1;
    }
    size_t nl = (size_t)(colon - s);
    const char *h = colon + 1;
    size_t hl = len - nl - 1;
    uint8_t hash[HASH_LEN];
    int r = parse_sha256(h, hl, hash);
    if (r == 1)
        return add_user(s, nl, hash, where);
    if (r < 0) {
        cli_err(where, "'sha256:' must be followed by 64 hex digits");
    } else if (hl >= 4 && h[0] == '$' && h[1] == '2') {
        cli_err(where, "bcrypt hashes are not supported (libcrypto has no bcrypt); write "
                       "sha256:HEX");
    } else {
        cli_err(where, "a plain password is refused: write USER:sha256:HEX, the hex SHA-256 of "
                       "the password (printf %%s 'PASSWORD' | sha256sum)");
    }
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

/* Standard base64 (RFC 4648 §4) with padding, as RFC 7617 §2 asks. Returns the decoded length
 * or -1. */
static long b64_decode(const char *s, size_t len, uint8_t *out, size_t cap)
{
    if (len == 0 || len % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (size_t k = 0; k < 4; k++) {
            char c = s[i + k];
            int d;
            if (c >= 'A' && c <= 'Z')
                d = c - 'A';
            else if (c >= 'a' && c <= 'z')
                d = c - 'a' + 26;
            else if (c >= '0' && c <= '9')
                d = c - '0' + 52;
            else if (c == '+')
                d = 62;
            else if (c == '/')
                d = 63;
            else if (c == '=' && i + 4 == len && k >= 2)
                d = -2;
            else
                return -1;
            if (d == -2) {
                pad++;
                d = 0;
            } else if (pad) {
                return -1; /* data after '=' */
            }
            v = v << 6 | (uint32_t)d;
        }
        size_t n = 3 - (size_t)pad;
        if (o + n > cap)
            return -1;
        out[o++] = (uint8_t)(v >> 16);
        if (n > 1)
            out[o++] = (uint8_t)(v >> 8);
        if (n > 2)
            out[o++] = (uint8_t)v;
    }
    return (long)o;
}

bool serve_auth_ok(const vega_http_request *req)
{
    if (nusers == 0)
        return true;
    size_t len;
    const char *v = serve_req_field(req, "Authorization", &len);
    if (!v || len < 6 || strncasecmp(v, "Basic ", 6) != 0)
        return false;
    v += 6, len -= 6;
    while (len && *v == ' ')
        v++, len--;
    /* user:password of at most the limits, in base64: 4 bytes for each 3 */
    uint8_t cred[SERVE_AUTH_NAME_MAX + 1 + SERVE_AUTH_PASS_MAX + 3];
    if (len > (sizeof cred / 3) * 4)
        return false;
    long n = b64_decode(v, len, cred, sizeof cred);
    if (n <= 0)
        return false;
    const uint8_t *colon = memchr(cred, ':', (size_t)n);
    if (!colon) {
        vega_crypto_cleanse(cred, sizeof cred);
        return false;
    }
    size_t nl = (size_t)(colon - cred);
    uint8_t hash[HASH_LEN];
    bool hashed =
        vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, colon + 1, (size_t)n - nl - 1, hash) == 0;
    vega_crypto_cleanse(cred + nl, (size_t)n - nl);
    /* Every user is compared, each name and digest in constant time, with no early exit: the
     * time tells neither which user matched nor how much of a password did. */
    char name[SERVE_AUTH_NAME_MAX];
    memset(name, 0, sizeof name);
    if (nl <= SERVE_AUTH_NAME_MAX)
        memcpy(name, cred, nl);
    unsigned ok = 0;
    for (size_t i = 0; i < nusers; i++) {
        char un[SERVE_AUTH_NAME_MAX];
        memset(un, 0, sizeof un);
        memcpy(un, users[i].name, users[i].name_len);
        unsigned same_name = vega_crypto_ct_equal(un, name, sizeof un) & (users[i].name_len == nl);
        unsigned same_pw = vega_crypto_ct_equal(users[i].hash, hash, HASH_LEN);
        ok |= same_name & same_pw;
    }
    vega_crypto_cleanse(hash, sizeof hash);
    return hashed && ok;
}

int serve_auth_challenge(vega_http_exchange *x)
{
    char v[SERVE_REALM_MAX + 48];
    int n = snprintf(v, sizeof v, "Basic realm=\"%s\", charset=\"UTF-8\"", serve_o.realm);
    vega_http_field f = {{"WWW-Authenticate", 16}, {v, n > 0 ? (size_t)n : 0}};
    return serve_simple(x, 401, &f, 1);
}
