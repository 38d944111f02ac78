/* SPDX-License-Identifier: MIT */
/* Stored password forms (passwd.c) for the user store (pwstore.h) and --hash-password. */
#ifndef VEGA_CLI_PASSWD_H
#define VEGA_CLI_PASSWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_PW_SHA256_LEN 32

enum cli_pw_kind {
    CLI_PW_SHA256, /* sha256:HEX: unsalted, fast */
    CLI_PW_CRYPT,  /* a crypt(3) hash: bcrypt, sha512-crypt, sha256-crypt, yescrypt */
    CLI_PW_PBKDF2, /* $pbkdf2-sha256$ROUNDS$SALT$HASH (passlib) */
    CLI_PW_SCRYPT  /* $scrypt$ln=L,r=R,p=P$SALT$HASH (passlib) */
};

struct cli_pw {
    enum cli_pw_kind kind;
    uint8_t sha256[CLI_PW_SHA256_LEN];
    char *setting; /* CRYPT: the whole hash (owned) */
    uint8_t salt[64], dk[64];
    size_t salt_len, dk_len;
    uint32_t rounds; /* PBKDF2 */
    uint64_t n;      /* SCRYPT: N = 2^ln */
    uint32_t r, p;   /* SCRYPT */
};

/* Parses s[0, len) as a stored password. Returns 1 (pw filled; free with cli_pw_free), 0
 * (none of the forms: a plain password), or -1 with *why saying what is wrong. */
int cli_pw_parse(const char *s, size_t len, struct cli_pw *pw, const char **why);
/* pw as the SHA-256 of a password given in clear, pass[0, len) (checked as sha256:HEX is).
 * Returns 0, or -1 when the hash failed. */
int cli_pw_plain(const char *pass, size_t len, struct cli_pw *pw);
void cli_pw_free(struct cli_pw *pw);
/* Whether checking costs a slow hash (everything but sha256:). */
bool cli_pw_slow(const struct cli_pw *pw);
/* The scheme's name for messages ("bcrypt", "pbkdf2-sha256", ...). */
const char *cli_pw_name(const struct cli_pw *pw);
/* Whether pass[0, len) is the password: constant time in the comparison; slow (tens to hundreds
 * of ms) for every kind but SHA256. Any thread; never suspends. */
bool cli_pw_verify(const struct cli_pw *pw, const uint8_t *pass, size_t len);
/* A new hash of pass for scheme "bcrypt" (cost 10), "pbkdf2" (600000 rounds, 16-byte salt),
 * "yescrypt" or "sha512-crypt"; malloc'd, NULL on an unknown scheme or failure. */
char *cli_pw_hash(const char *scheme, const char *pass, size_t len);
/* Whether cli_pw_hash knows scheme. */
bool cli_pw_scheme_known(const char *scheme);
#define CLI_PW_SCHEMES "bcrypt, pbkdf2, yescrypt or sha512-crypt"

#endif
