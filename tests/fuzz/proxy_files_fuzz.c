/* SPDX-License-Identifier: MIT */
/* libFuzzer target for vega-proxy's --users and --rules files (cli/vega-proxy/users.c, rules.c,
 * acl.c), read through their real loaders from a memfd: the first byte picks the file.
 * Even: a --users file; once it loads, every user has 1 to 255 bytes and no ':', every password
 * 1 to 255 bytes, no user twice, at most PROXY_MAX_USERS, and each user's own password is
 * accepted while a changed one is not. Odd: a --rules file; once it loads, it holds at most
 * PROXY_MAX_RULES allow rules, and the checks run on a few addresses (IPv4, IPv6, mapped).
 * The loaders' one way out, cli_err, is defined here: it formats the message (so that a bad
 * argument shows under the sanitizers) and drops it, rather than writing a line to stderr for
 * nearly every input. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "proxy.h"

void cli_err(const char *what, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0 || !what)
        abort(); /* every message of the loaders names the file */
}

static int fd = -1;
static char path[64];

static void check_users(const struct proxy_opts *o)
{
    if (o->nusers < 1 || o->nusers > PROXY_MAX_USERS)
        abort();
    for (size_t i = 0; i < o->nusers; i++) {
        const struct proxy_user *u = &o->users[i];
        size_t ul = strlen(u->user), pl = strlen(u->password);
        if (ul < 1 || ul > VEGA_PROXY_MAX_CRED || pl < 1 || pl > VEGA_PROXY_MAX_CRED ||
            strchr(u->user, ':'))
            abort();
        for (size_t j = 0; j < i; j++)
            if (strcmp(o->users[j].user, u->user) == 0)
                abort();
    }
    /* the first and the last user: their passwords work, a changed one does not */
    for (size_t k = 0; k < 2; k++) {
        const struct proxy_user *u = &o->users[k == 0 ? 0 : o->nusers - 1];
        if (!creds_ok(o, u->user, u->password))
            abort();
        char wrong[VEGA_PROXY_MAX_CRED + 2];
        snprintf(wrong, sizeof wrong, "%s", u->password);
        wrong[0] = (char)(wrong[0] == 'x' ? 'y' : 'x');
        if (creds_ok(o, u->user, wrong))
            abort();
    }
}

static void check_rules(const struct proxy_opts *o)
{
    if (rules_file_allows(o) > PROXY_MAX_RULES)
        abort();
    static const char *const addrs[] = {"127.0.0.1:80", "10.1.2.3:22", "[::1]:53", "[fd00::1]:8080",
                                        "[::ffff:192.168.0.1]:443"};
    for (size_t i = 0; i < sizeof addrs / sizeof *addrs; i++) {
        vega_addr a;
        if (vega_addr_parse(&a, addrs[i], NULL) < 0)
            abort();
        (void)client_allowed(o, &a);
        (void)dest_allowed(o, &a);
    }
    (void)dest_rules_any(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    if (fd < 0) {
        fd = memfd_create("proxy_files_fuzz", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1))
        abort();
    struct proxy_opts o;
    memset(&o, 0, sizeof o);
    if (data[0] % 2 == 0) {
        if (users_load(&o, path) == 0)
            check_users(&o);
        free(o.users);
    } else {
        o.rules_file = path;
        if (rules_load(&o) == 0)
            check_rules(&o);
        rules_free(&o);
    }
    return 0;
}
