/* SPDX-License-Identifier: MIT */
/* Messages on stderr in the "<prog>: <what>: <why>" shape every tool uses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

static const char *prog = "vega";
int cli_verbose;

void cli_set_prog(const char *name)
{
    prog = name;
}

const char *cli_prog(void)
{
    return prog;
}

/* Formats the whole line first, then writes it with one call. */
__attribute__((format(printf, 2, 0))) static void emit(const char *what, const char *fmt,
                                                       va_list ap)
{
    char line[1024];
    int n = what ? snprintf(line, sizeof(line), "%s: %s: ", prog, what)
                 : snprintf(line, sizeof(line), "%s: ", prog);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(line)) {
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof(line) - 1)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

void cli_err(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(what, fmt, ap);
    va_end(ap);
}

void cli_err_code(const char *what, int err)
{
    cli_err(what, "%s", vega_strerror(err));
}

void cli_log(int level, const char *fmt, ...)
{
    if (cli_verbose < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(NULL, fmt, ap);
    va_end(ap);
}

bool cli_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return false;
    size_t room = cap - *len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        buf[*len] = '\0';
        return false;
    }
    if ((size_t)n >= room) {
        *len = cap - 1; /* cut: vsnprintf wrote room - 1 bytes and the NUL */
        return false;
    }
    *len += (size_t)n;
    return true;
}

void cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(NULL, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", prog);
    exit(CLI_EXIT_USAGE);
}
