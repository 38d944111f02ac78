/* SPDX-License-Identifier: MIT */
/* libFuzzer target for vega-proxy's --users and --rules files (cli/vega-proxy/users.c, rules.c,
 * acl.c, and the user store of cli/common/pwstore.c), read through their real loaders from a
 * memfd: the first byte picks the file.
 * Even: a --users file; once it loads, every user has 1 to 255 bytes and no ':', no user is
 * there twice, at most PROXY_MAX_USERS, and the first and the last user's own password is
 * accepted while a changed one is not, when that password is in clear (a stored hash's
 * password is not in the file; its check would also need the blocking pool).
 * Odd: a --rules file; once it loads, it holds at most PROXY_MAX_RULES allow rules, and the
 * checks run on a few addresses (IPv4, IPv6, mapped).
 * The loaders' ways out, cli_err and cli_log, are defined here: cli_err formats the message (so
 * that a bad argument shows under the sanitizers) and drops it, rather than writing a line to
 * stderr for nearly every input. */
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

void cli_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static int fd = -1;
static char path[64];

/* The user and password of the k-th user line of the file text[0, len) (k counted from 0;
 * SIZE_MAX: the last), split at the first ':' as users.c does. Returns false when none. */
static bool user_line(const uint8_t *text, size_t len, size_t k, char *user, char *pass)
{
    bool found = false;
    size_t seen = 0;
    for (size_t at = 0; at < len;) {
        const uint8_t *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        const char *line = (const char *)text + at;
        at = end + 1;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        size_t lead = 0;
        while (lead < n && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        if (lead == n || line[lead] == '#')
            continue;
        const char *colon = memchr(line, ':', n);
        if (!colon || (size_t)(colon - line) > VEGA_PROXY_MAX_CRED ||
            n - (size_t)(colon - line) - 1 > VEGA_PROXY_MAX_CRED)
            abort(); /* the loader took it */
        if (k == SIZE_MAX || seen == k) {
            size_t ul = (size_t)(colon - line);
            memcpy(user, line, ul);
            user[ul] = '\0';
            memcpy(pass, colon + 1, n - ul - 1);
            pass[n - ul - 1] = '\0';
            found = true;
            if (k != SIZE_MAX)
                break;
        }
        seen++;
    }
    return found;
}

static void check_users(const struct proxy_opts *o, const uint8_t *text, size_t len)
{
    size_t n = users_count(o);
    if (n < 1 || n > PROXY_MAX_USERS)
        abort();
    for (size_t i = 0; i < n; i++) {
        const char *u = cli_pwstore_name(o->users, i);
        size_t ul = strlen(u);
        if (ul < 1 || ul > VEGA_PROXY_MAX_CRED || strchr(u, ':'))
            abort();
        for (size_t j = 0; j < i; j++)
            if (strcmp(cli_pwstore_name(o->users, j), u) == 0)
                abort();
    }
    /* the first and the last user: a password in clear works, a changed one does not */
    for (size_t k = 0; k < 2; k++) {
        char user[VEGA_PROXY_MAX_CRED + 1], pass[VEGA_PROXY_MAX_CRED + 1];
        if (!user_line(text, len, k == 0 ? 0 : SIZE_MAX, user, pass))
            abort();
        struct cli_pw pw;
        const char *why;
        int h = cli_pw_parse(pass, strlen(pass), &pw, &why);
        cli_pw_free(&pw);
        if (h != 0)
            continue;
        if (creds_check(o, user, pass) != 1)
            abort();
        pass[0] = (char)(pass[0] == 'x' ? 'y' : 'x');
        if (creds_check(o, user, pass) != 0)
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
    static const char *const names[] = {"a.internal.example", "INTERNAL.example.", "example", ""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        (void)dest_name_allowed(o, names[i], 443);
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
            check_users(&o, data + 1, size - 1);
        users_free(&o);
    } else {
        o.rules_file = path;
        if (rules_load(&o) == 0)
            check_rules(&o);
        rules_free(&o);
    }
    return 0;
}
