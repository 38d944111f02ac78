/* SPDX-License-Identifier: MIT */
/* The stored password forms of vega-serve's -a and --auth-file and vega-proxy's -u and --users,
 * and their checks: sha256:HEX (fast, unsalted), crypt(3) hashes through libxcrypt (bcrypt
 * $2b$/$2y$ as htpasswd -B writes, sha512-crypt $6$, sha256-crypt $5$, yescrypt $y$, as mkpasswd
 * and openssl passwd write), and passlib's PBKDF2-SHA256 ($pbkdf2-sha256$ROUNDS$SALT$HASH)
 * and scrypt ($scrypt$ln=L,r=R,p=P$SALT$HASH) computed with libcrypto. */
#include <crypt.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <vega/base64.h>
#include <vega/crypto.h>

#include "passwd.h"

#define PBKDF2_ROUNDS_MAX 10000000u
#define PBKDF2_ROUNDS_NEW 600000u /* OWASP's 2023 figure for PBKDF2-HMAC-SHA256 */
#define SCRYPT_MEM_MAX    ((uint64_t)256 << 20)
#define SALT_NEW          16
#define BCRYPT_COST_NEW   10

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

/* passlib's "ab64": base64 with '.' for '+' and no padding ('+' and padding taken too).
 * Returns the length or -1. */
static long b64_nopad(const char *s, size_t len, uint8_t *out, size_t cap)
{
    char std[128]; /* 64 bytes at most are decoded: 86 characters */
    if (len > sizeof std)
        return -1;
    for (size_t i = 0; i < len; i++)
        std[i] = s[i] == '.' ? '+' : s[i];
    vega_ssize n = vega_base64_decode(std, len, out, cap, VEGA_BASE64_NOPAD);
    return n < 0 ? -1 : (long)n;
}

/* ab64 of n bytes into out, NUL-terminated (room for vega_base64_encoded_len + 1). */
static void b64_encode(const uint8_t *in, size_t n, char *out, size_t cap)
{
    vega_ssize l = vega_base64_encode(in, n, out, cap - 1, VEGA_BASE64_NOPAD);
    if (l < 0)
        l = 0;
    for (vega_ssize i = 0; i < l; i++)
        if (out[i] == '+')
            out[i] = '.';
    out[l] = '\0';
}

/* The next '$'-separated field of [*s, end): its bounds, *s moved past the '$'. */
static bool field(const char **s, const char *end, const char **f, size_t *fl)
{
    const char *d = memchr(*s, '$', (size_t)(end - *s));
    *f = *s;
    *fl = (size_t)((d ? d : end) - *s);
    *s = d ? d + 1 : end;
    return d != NULL;
}

static bool parse_u64(const char *s, size_t n, uint64_t max, uint64_t *v)
{
    if (n == 0 || n > 12)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    if (x == 0 || x > max)
        return false;
    *v = x;
    return true;
}

/* SALT$HASH of the passlib forms into pw. */
static int salt_and_hash(const char *s, const char *end, struct cli_pw *pw, const char **why)
{
    const char *f;
    size_t fl;
    if (!field(&s, end, &f, &fl)) {
        *why = "expected $SALT$HASH at the end";
        return -1;
    }
    long n = b64_nopad(f, fl, pw->salt, sizeof pw->salt);
    if (n < 1) {
        *why = "the salt is not base64 of 1 to 64 bytes";
        return -1;
    }
    pw->salt_len = (size_t)n;
    n = b64_nopad(s, (size_t)(end - s), pw->dk, sizeof pw->dk);
    if (n < 16) {
        *why = "the hash is not base64 of 16 to 64 bytes";
        return -1;
    }
    pw->dk_len = (size_t)n;
    return 1;
}

static int parse_pbkdf2(const char *s, const char *end, struct cli_pw *pw, const char **why)
{
    const char *f;
    size_t fl;
    uint64_t rounds;
    if (!field(&s, end, &f, &fl) || !parse_u64(f, fl, PBKDF2_ROUNDS_MAX, &rounds)) {
        *why = "$pbkdf2-sha256$: expected ROUNDS (1 to 10000000)$SALT$HASH";
        return -1;
    }
    pw->kind = CLI_PW_PBKDF2;
    pw->rounds = (uint32_t)rounds;
    return salt_and_hash(s, end, pw, why);
}

static int parse_scrypt(const char *s, const char *end, struct cli_pw *pw, const char **why)
{
    const char *f;
    size_t fl;
    uint64_t ln = 0, r = 0, p = 0;
    if (!field(&s, end, &f, &fl) || fl < 12 ||
        sscanf(f, "ln=%" SCNu64 ",r=%" SCNu64 ",p=%" SCNu64, &ln, &r, &p) != 3 || ln < 1 ||
        ln > 30 || r < 1 || r > 64 || p < 1 || p > 64) {
        *why = "$scrypt$: expected ln=L,r=R,p=P (L 1..30, R and P 1..64)$SALT$HASH";
        return -1;
    }
    /* the memory scrypt needs: 128 * r * (N + p) bytes */
    if (((uint64_t)128 * r * (((uint64_t)1 << ln) + p)) > SCRYPT_MEM_MAX) {
        *why = "$scrypt$: those parameters need more than 256 MiB of memory";
        return -1;
    }
    pw->kind = CLI_PW_SCRYPT;
    pw->n = (uint64_t)1 << ln;
    pw->r = (uint32_t)r;
    pw->p = (uint32_t)p;
    return salt_and_hash(s, end, pw, why);
}

/* Whether a crypt(3) string that crypt_checksalt accepted holds the hash, not only the
 * setting (which the check also accepts): the length of the hash field each scheme writes. */
static bool crypt_complete(const char *h)
{
    size_t len = strlen(h);
    const char *last = strrchr(h, '$');
    size_t tail = (size_t)(h + len - last - 1);
    size_t fields = 0;
    for (const char *p = h; *p; p++)
        fields += *p == '$';
    if (h[1] == '2') /* $2b$NN$ + 22 salt + 31 hash */
        return len == 60;
    if (strncmp(h, "$6$", 3) == 0)
        return fields >= 3 && tail == 86;
    if (strncmp(h, "$5$", 3) == 0)
        return fields >= 3 && tail == 43;
    if (strncmp(h, "$y$", 3) == 0)
        return fields >= 4 && tail == 43;
    return fields >= 3 && tail > 0;
}

int cli_pw_parse(const char *s, size_t len, struct cli_pw *pw, const char **why)
{
    static const char sha[] = "sha256:";
    memset(pw, 0, sizeof *pw);
    *why = NULL;
    const char *end = s + len;
    if (len >= sizeof sha - 1 && strncasecmp(s, sha, sizeof sha - 1) == 0) {
        s += sizeof sha - 1;
        if ((size_t)(end - s) != 2 * CLI_PW_SHA256_LEN) {
            *why = "'sha256:' must be followed by 64 hex digits";
            return -1;
        }
        for (size_t i = 0; i < CLI_PW_SHA256_LEN; i++) {
            int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                *why = "'sha256:' must be followed by 64 hex digits";
                return -1;
            }
            pw->sha256[i] = (uint8_t)(hi << 4 | lo);
        }
        pw->kind = CLI_PW_SHA256;
        return 1;
    }
    static const char pb[] = "$pbkdf2-sha256$", sc[] = "$scrypt$";
    if (len > sizeof pb - 1 && memcmp(s, pb, sizeof pb - 1) == 0)
        return parse_pbkdf2(s + sizeof pb - 1, end, pw, why);
    if (len > sizeof sc - 1 && memcmp(s, sc, sizeof sc - 1) == 0)
        return parse_scrypt(s + sizeof sc - 1, end, pw, why);
    if (len >= 6 && strncmp(s, "$apr1$", 6) == 0) {
        *why = "$apr1$ (htpasswd's MD5 default) is too weak and not supported: use htpasswd -B "
               "(bcrypt) or --hash-password";
        return -1;
    }
    if (len >= 5 && strncmp(s, "{SHA}", 5) == 0) {
        *why = "{SHA} (unsalted SHA-1) is not supported: use htpasswd -B (bcrypt) or "
               "--hash-password";
        return -1;
    }
    if (len >= 3 && s[0] == '$') {
        char *h = strndup(s, len);
        if (!h) {
            *why = "out of memory";
            return -1;
        }
        int c = crypt_checksalt(h);
        /* libxcrypt files sha256-crypt under "legacy" beside MD5 and DES; it is not weak */
        if (c == CRYPT_SALT_METHOD_LEGACY && strncmp(h, "$5$", 3) == 0)
            c = CRYPT_SALT_OK;
        if (c != CRYPT_SALT_OK) {
            free(h);
            *why = c == CRYPT_SALT_METHOD_LEGACY
                       ? "a legacy crypt(3) hash (MD5, DES): too weak, not accepted"
                       : "not a crypt(3) hash this libxcrypt knows (bcrypt $2b$/$2y$, "
                         "$6$, $5$, $y$), nor $pbkdf2-sha256$ or $scrypt$";
            return -1;
        }
        if (!crypt_complete(h)) {
            free(h);
            *why = "a crypt(3) setting without its hash (cut short?)";
            return -1;
        }
        pw->kind = CLI_PW_CRYPT;
        pw->setting = h;
        return 1;
    }
    return 0;
}

int cli_pw_plain(const char *pass, size_t len, struct cli_pw *pw)
{
    memset(pw, 0, sizeof *pw);
    pw->kind = CLI_PW_SHA256;
    return vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, pass, len, pw->sha256) < 0 ? -1 : 0;
}

void cli_pw_free(struct cli_pw *pw)
{
    free(pw->setting);
    pw->setting = NULL;
}

bool cli_pw_slow(const struct cli_pw *pw)
{
    return pw->kind != CLI_PW_SHA256;
}

const char *cli_pw_name(const struct cli_pw *pw)
{
    switch (pw->kind) {
    case CLI_PW_SHA256:
        return "sha256";
    case CLI_PW_PBKDF2:
        return "pbkdf2-sha256";
    case CLI_PW_SCRYPT:
        return "scrypt";
    case CLI_PW_CRYPT:
        break;
    }
    const char *s = pw->setting;
    if (s[1] == '2')
        return "bcrypt";
    if (s[1] == '6')
        return "sha512-crypt";
    if (s[1] == '5')
        return "sha256-crypt";
    if (s[1] == 'y')
        return "yescrypt";
    return "crypt";
}

bool cli_pw_verify(const struct cli_pw *pw, const uint8_t *pass, size_t len)
{
    uint8_t dk[64];
    bool ok = false;
    switch (pw->kind) {
    case CLI_PW_SHA256:
        if (vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, pass, len, dk) == 0)
            ok = vega_crypto_ct_equal(dk, pw->sha256, CLI_PW_SHA256_LEN);
        break;
    case CLI_PW_PBKDF2:
        if (vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, pass, len, pw->salt, pw->salt_len, pw->rounds,
                               dk, pw->dk_len) == 0)
            ok = vega_crypto_ct_equal(dk, pw->dk, pw->dk_len);
        break;
    case CLI_PW_SCRYPT:
        if (EVP_PBE_scrypt((const char *)pass, len, pw->salt, pw->salt_len, pw->n, pw->r, pw->p,
                           SCRYPT_MEM_MAX + (1 << 20), dk, pw->dk_len) == 1)
            ok = vega_crypto_ct_equal(dk, pw->dk, pw->dk_len);
        break;
    case CLI_PW_CRYPT: {
        /* crypt(3) reads a C string: a password with a NUL never matches */
        char *p = malloc(len + 1);
        struct crypt_data *cd = calloc(1, sizeof *cd);
        if (p && cd && !memchr(pass, '\0', len)) {
            memcpy(p, pass, len);
            p[len] = '\0';
            const char *h = crypt_rn(p, pw->setting, cd, (int)sizeof *cd);
            size_t sl = strlen(pw->setting);
            ok = h && h[0] != '*' && strlen(h) == sl && vega_crypto_ct_equal(h, pw->setting, sl);
            vega_crypto_cleanse(p, len);
        }
        if (cd)
            vega_crypto_cleanse(cd, sizeof *cd);
        free(p);
        free(cd);
        break;
    }
    }
    vega_crypto_cleanse(dk, sizeof dk);
    return ok;
}

char *cli_pw_hash(const char *scheme, const char *pass, size_t len)
{
    if (strcmp(scheme, "pbkdf2") == 0 || strcmp(scheme, "pbkdf2-sha256") == 0) {
        uint8_t salt[SALT_NEW], dk[32];
        char s64[32], d64[48], *out = malloc(128);
        if (!out || vega_crypto_random(salt, sizeof salt) < 0 ||
            vega_crypto_pbkdf2(VEGA_CRYPTO_SHA256, pass, len, salt, sizeof salt, PBKDF2_ROUNDS_NEW,
                               dk, sizeof dk) < 0) {
            free(out);
            return NULL;
        }
        b64_encode(salt, sizeof salt, s64, sizeof s64);
        b64_encode(dk, sizeof dk, d64, sizeof d64);
        snprintf(out, 128, "$pbkdf2-sha256$%u$%s$%s", PBKDF2_ROUNDS_NEW, s64, d64);
        return out;
    }
    const char *prefix = NULL;
    unsigned long count = 0;
    if (strcmp(scheme, "bcrypt") == 0)
        prefix = "$2b$", count = BCRYPT_COST_NEW;
    else if (strcmp(scheme, "yescrypt") == 0)
        prefix = "$y$";
    else if (strcmp(scheme, "sha512-crypt") == 0)
        prefix = "$6$";
    if (!prefix || memchr(pass, '\0', len))
        return NULL;
    char setting[CRYPT_GENSALT_OUTPUT_SIZE];
    if (!crypt_gensalt_rn(prefix, count, NULL, 0, setting, sizeof setting))
        return NULL;
    struct crypt_data *cd = calloc(1, sizeof *cd);
    char *p = strndup(pass, len), *out = NULL;
    if (cd && p) {
        const char *h = crypt_rn(p, setting, cd, (int)sizeof *cd);
        if (h && h[0] != '*')
            out = strdup(h);
        vega_crypto_cleanse(p, len);
    }
    if (cd)
        vega_crypto_cleanse(cd, sizeof *cd);
    free(cd);
    free(p);
    return out;
}

bool cli_pw_scheme_known(const char *scheme)
{
    return strcmp(scheme, "bcrypt") == 0 || strcmp(scheme, "pbkdf2") == 0 ||
           strcmp(scheme, "yescrypt") == 0 || strcmp(scheme, "sha512-crypt") == 0;
}
