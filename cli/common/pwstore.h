/* SPDX-License-Identifier: MIT */
/* A store of users and their stored passwords (passwd.h's forms), for vega-serve's Basic auth and
 * vega-proxy's SOCKS5 and HTTP credentials: names compared in constant time, slow hashes checked
 * on the runtime's blocking pool with a bounded cache of recent successes, and an unknown name
 * costing what a known one does. Filled by one thread, then read by any; vega-proxy swaps in a
 * new store on SIGHUP while checks hold references to the old one. */
#ifndef VEGA_CLI_PWSTORE_H
#define VEGA_CLI_PWSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passwd.h"

#define CLI_PWSTORE_USERS_MAX 10000 /* users in one store */
#define CLI_PWSTORE_PASS_MAX  256   /* the longest password a check accepts */

struct cli_pwstore;

/* A new empty store for names of 1 to name_max bytes (at most 255), with one reference. NULL
 * when out of memory. */
struct cli_pwstore *cli_pwstore_new(size_t name_max);
void cli_pwstore_ref(struct cli_pwstore *s);
/* Drops a reference; the last one frees the store. NULL is ignored. */
void cli_pwstore_unref(struct cli_pwstore *s);

/* Adds user name[0, nl) with pw, which the store takes (freed on failure too). Returns 0,
 * -EINVAL (a name of 0 or more than name_max bytes), -EEXIST (the name is there already),
 * -E2BIG (CLI_PWSTORE_USERS_MAX users already) or -ENOMEM. */
int cli_pwstore_add(struct cli_pwstore *s, const char *name, size_t nl, struct cli_pw *pw);
size_t cli_pwstore_count(const struct cli_pwstore *s);
/* User i's name (i < count; NUL-terminated), for tests. */
const char *cli_pwstore_name(const struct cli_pwstore *s, size_t i);
/* Keeps the last `entries` successful slow checks (0: none), so that a client's every request
 * or tunnel does not run bcrypt again; only for a store with a slow hash. Returns 0 or -ENOMEM
 * (or the error of the random key). Before any check. */
int cli_pwstore_cache(struct cli_pwstore *s, size_t entries);

/* Whether name[0, nl) with pass[0, pl) is one of the users: 1 yes, 0 no, or a negative errno
 * when a slow hash could not run on the blocking pool within wait_ms (-ETIMEDOUT, -EAGAIN: the
 * pool's queue is full). Every name is compared and takes the same time; an unknown name runs
 * the first slow user's hash when there is one. Slow checks suspend the calling task (on a
 * runtime) and are logged with -v ("auth: bcrypt hash run for 'NAME' ..."). Any thread. */
int cli_pwstore_check(struct cli_pwstore *s, const char *name, size_t nl, const uint8_t *pass,
                      size_t pl, unsigned wait_ms);

/* --hash-password USER: reads a password from stdin (without echo on a terminal) and prints
 * "USER:HASH" of scheme (cli_pw_hash). opt names the option in messages. Returns the exit code:
 * 0, 1 (hashing or writing failed) or 2 (a bad name or password). */
int cli_hash_password(const char *opt, const char *user, size_t name_max, const char *scheme);

#endif
