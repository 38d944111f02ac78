/* SPDX-License-Identifier: MIT */
/* -n/--netrc, --netrc-file, --netrc-optional: credentials from a .netrc file with curl's rules
 * (machine NAME / default, login, password, macdef skipped to a blank line, '#' comment lines,
 * "quoted" tokens with \n \r \t escapes), only ever for the host they name. */
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curl.h"

static char *netrc_text; /* the file, NUL-terminated; NULL when there is none */

void curl_netrc_load(struct curl_opts *o)
{
    if (!o->netrc)
        return;
    char path[4096];
    if (o->netrc_file) {
        snprintf(path, sizeof path, "%s", o->netrc_file);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home)
            return;
        if ((size_t)snprintf(path, sizeof path, "%s/.netrc", home) >= sizeof path)
            return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* curl: a missing file is no credentials, not an error */
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CURL_MAX_NETRC) {
        close(fd);
        curl_fail(o, CE_READ_ERROR, "%s: not a regular file of at most %d bytes", path,
                  CURL_MAX_NETRC);
        exit(CE_READ_ERROR);
    }
    netrc_text = malloc(CURL_MAX_NETRC + 1);
    if (!netrc_text) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    size_t n = 0;
    for (;;) {
        /* read one byte past the limit: a file that grew since fstat is refused too */
        ssize_t r = read(fd, netrc_text + n, CURL_MAX_NETRC + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n > CURL_MAX_NETRC) {
            close(fd);
            curl_fail(o, CE_READ_ERROR, "%s: larger than %d bytes", path, CURL_MAX_NETRC);
            exit(CE_READ_ERROR);
        }
    }
    close(fd);
    netrc_text[n] = '\0';
}

void curl_netrc_free(void)
{
    free(netrc_text);
    netrc_text = NULL;
}

/* The next token from *p into tok (at most cap - 1 bytes; longer ones are cut). Skips comment
 * lines (a first token starting with '#'). Returns false at the end. *line_start tells whether
 * the token is the first of its line. */
static bool next_token(const char **p, char *tok, size_t cap, bool *line_start)
{
    const char *s = *p;
    bool ls = *line_start;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\f') {
            if (*s == '\n')
                ls = true;
            s++;
        }
        if (*s == '#' && ls) {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        break;
    }
    if (!*s) {
        *p = s;
        return false;
    }
    size_t n = 0;
    if (*s == '"') {
        s++;
        while (*s && *s != '"') {
            char c = *s++;
            if (c == '\\' && *s) {
                c = *s++;
                c = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
            }
            if (n + 1 < cap)
                tok[n++] = c;
        }
        if (*s == '"')
            s++;
    } else {
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n' && *s != '\f') {
            if (n + 1 < cap)
                tok[n++] = *s;
            s++;
        }
    }
    tok[n] = '\0';
    *line_start = false;
    *p = s;
    return true;
}

/* Skips a macdef's body: up to an empty line. */
static void skip_macdef(const char **p)
{
    const char *s = *p;
    while (*s && *s != '\n')
        s++;
    while (*s) {
        s++; /* past '\n' */
        if (*s == '\n' || (*s == '\r' && s[1] == '\n'))
            break;
        while (*s && *s != '\n')
            s++;
    }
    *p = s;
}

bool curl_netrc_find(const char *host, const char *want_login, char *login, size_t lcap, char *pass,
                     size_t pcap)
{
    if (!netrc_text)
        return false;
    const char *p = netrc_text;
    char tok[1024];
    bool ls = true, in = false, got_login = false, got_pass = false, login_ok = true;
    while (next_token(&p, tok, sizeof tok, &ls)) {
        if (strcmp(tok, "machine") == 0 || strcmp(tok, "default") == 0) {
            if (in && got_login && login_ok)
                break; /* the matching block is over */
            bool def = tok[0] == 'd';
            in = def || (next_token(&p, tok, sizeof tok, &ls) && strcasecmp(tok, host) == 0);
            got_login = got_pass = false;
            login_ok = true;
            login[0] = pass[0] = '\0';
        } else if (strcmp(tok, "macdef") == 0) {
            skip_macdef(&p);
            ls = true;
        } else if (strcmp(tok, "login") == 0 || strcmp(tok, "password") == 0 ||
                   strcmp(tok, "account") == 0) {
            bool is_login = tok[0] == 'l', is_pass = tok[0] == 'p';
            if (!next_token(&p, tok, sizeof tok, &ls))
                break;
            if (!in)
                continue;
            if (is_login) {
                snprintf(login, lcap, "%s", tok);
                got_login = true;
                login_ok = !want_login || strcmp(want_login, tok) == 0;
            } else if (is_pass) {
                snprintf(pass, pcap, "%s", tok);
                got_pass = true;
            }
        }
    }
    (void)got_pass;
    if (in && got_login && login_ok)
        return true;
    login[0] = pass[0] = '\0';
    return false;
}
