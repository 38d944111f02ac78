/* SPDX-License-Identifier: MIT */
/* vega-serve: HTTP Basic authentication (RFC 7617) for -a/--auth and --auth-file: the users
 * and their stored passwords (passwd.c) in a user store (pwstore.c: names compared in constant
 * time, slow hashes verified on the runtime's blocking pool with a bounded cache of recent
 * successes), the Authorization field, and the 401 challenge (RFC 9110 §11.6.1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <vega/base64.h>
#include <vega/crypto.h>
#include <vega/rt.h>

#include "passwd.h"
#include "pwstore.h"
#include "serve.h"

/* A slow hash waits this long at most for the blocking pool (then 503). */
#define VERIFY_WAIT_MS 30000

static struct cli_pwstore *users; /* made by the first -a or --auth-file */

size_t serve_auth_users(void)
{
    return users ? cli_pwstore_count(users) : 0;
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
static int add_user(const char *name, size_t nl, struct cli_pw *pw, const char *where)
{
    if (!users && !(users = cli_pwstore_new(SERVE_AUTH_NAME_MAX))) {
        cli_err(where, "out of memory");
        cli_pw_free(pw);
        return -1;
    }
    int r = cli_pwstore_add(users, name, nl, pw);
    if (r == -EEXIST)
        cli_err(where, "user '%.*s' is given twice", (int)nl, name);
    else if (r == -E2BIG)
        cli_err(where, "at most %d users", CLI_PWSTORE_USERS_MAX);
    else if (r < 0)
        cli_err(where, "out of memory");
    return r < 0 ? -1 : 0;
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
    struct cli_pw p;
    const char *why;
    int h = cli_pw_parse(pw, pl, &p, &why);
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
    if (h == 0 && cli_pw_plain(pw, pl, &p) < 0) {
        cli_err("--auth", "SHA-256 failed");
        return -1;
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
    struct cli_pw pw;
    const char *why;
    int r = cli_pw_parse(h, hl, &pw, &why);
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
    if (r == 0 && serve_auth_users() == 0) {
        cli_err(path, "--auth-file: no user in it");
        r = -1;
    }
    return r;
}

int serve_auth_cache_init(void)
{
    if (users && cli_pwstore_cache(users, serve_o.auth_cache) < 0) {
        cli_err("--auth-cache", "cannot set up the cache");
        return -1;
    }
    return 0;
}

int serve_auth_check(const vega_http_request *req)
{
    if (!users)
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
    int ok = cli_pwstore_check(users, (const char *)cred, nl, pass, pl, VERIFY_WAIT_MS);
    vega_crypto_cleanse(cred, sizeof cred);
    return ok < 0 ? -1 : ok;
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
    return cli_hash_password("--hash-password", user, SERVE_AUTH_NAME_MAX, scheme);
}
