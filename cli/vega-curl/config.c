/* SPDX-License-Identifier: MIT */
/* -K/--config FILE and ~/.curlrc: curl's config syntax (one option a line, "--opt value",
 * "opt = value", "opt: value", "quoted values" with \" \\ \t \n \r \v, '#' comment lines)
 * turned into command-line words, in place of the -K that names the file. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curl.h"

struct words {
    char **v;
    size_t n, cap;
    const struct option *longs;
    const char *shorts;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    return p;
}

static void push(struct words *w, char *s)
{
    if (w->n >= CURL_MAX_CONFIG_WORDS) {
        cli_err(NULL, "too many words from the command line and config files (at most %d)",
                CURL_MAX_CONFIG_WORDS);
        exit(CE_FAILED_INIT);
    }
    if (w->n + 2 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        char **nv = realloc(w->v, cap * sizeof *nv);
        if (!nv) {
            cli_err(NULL, "out of memory");
            exit(CE_OUT_OF_MEMORY);
        }
        w->v = nv;
        w->cap = cap;
    }
    w->v[w->n++] = s;
    w->v[w->n] = NULL;
}

/* A long option's has_arg (no_argument, required_argument, optional_argument); -1 when there is
 * no such option. */
static int long_arg(const struct words *w, const char *name, size_t len)
{
    for (const struct option *o = w->longs; o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o->has_arg;
    return -1;
}

static bool short_arg(const struct words *w, char c)
{
    const char *p = c != ':' ? strchr(w->shorts, c) : NULL;
    return p && p[1] == ':';
}

static void expand(struct words *w, char **args, size_t nargs, int depth);

/* The words of one config file (path "-" = stdin), appended to w. */
static void read_config(struct words *w, const char *path, int depth, bool must)
{
    if (depth >= CURL_MAX_CONFIG_DEPTH) {
        cli_err(NULL, "config files nested more than %d deep (at '%s')", CURL_MAX_CONFIG_DEPTH,
                path);
        exit(CE_READ_ERROR);
    }
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (!must)
            return;
        cli_err(NULL, "cannot read config from '%s'", path);
        exit(CE_READ_ERROR);
    }
    char *text = xmalloc(CURL_MAX_CONFIG + 1);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, text + n, CURL_MAX_CONFIG + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            cli_err(NULL, "cannot read config from '%s': %s", path, strerror(errno));
            exit(CE_READ_ERROR);
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > CURL_MAX_CONFIG) {
            cli_err(NULL, "config file '%s' is larger than %d bytes", path, CURL_MAX_CONFIG);
            exit(CE_READ_ERROR);
        }
    }
    if (fd != STDIN_FILENO)
        close(fd);
    text[n] = '\0';

    /* each line: an option, perhaps its value; the words then go through expand() so that a
     * -K in the file opens the next level */
    char **args = NULL;
    size_t nargs = 0, cap = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        char *next = end ? end + 1 : NULL;
        if (end)
            *end = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p || *p == '#') {
            line = next;
            continue;
        }
        char *name = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '=' && *p != ':' && *p != '\r')
            p++;
        size_t nlen = (size_t)(p - name);
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '=' || *p == ':')
            p++;
        while (*p == ' ' || *p == '\t')
            p++;
        char *opt = xmalloc(nlen + 3);
        if (name[0] == '-')
            snprintf(opt, nlen + 3, "%.*s", (int)nlen, name);
        else
            snprintf(opt, nlen + 3, "--%.*s", (int)nlen, name);
        int has = opt[1] == '-' ? long_arg(w, opt + 2, strlen(opt + 2)) : -1;
        bool takes = opt[1] == '-' ? has == required_argument || has == optional_argument
                                   : strlen(opt) == 2 && short_arg(w, opt[1]);
        char *val = NULL;
        if (takes) {
            size_t vn = 0;
            val = xmalloc(strlen(p) + 1);
            if (*p == '"') {
                for (p++; *p && *p != '"'; p++) {
                    char c = *p;
                    if (c == '\\' && p[1]) {
                        c = *++p;
                        c = c == 't'   ? '\t'
                            : c == 'n' ? '\n'
                            : c == 'r' ? '\r'
                            : c == 'v' ? '\v'
                                       : c;
                    }
                    val[vn++] = c;
                }
            } else {
                while (*p && *p != ' ' && *p != '\t' && *p != '\r')
                    val[vn++] = *p++;
            }
            val[vn] = '\0';
        }
        if (nargs + 2 > cap) {
            cap = cap ? cap * 2 : 32;
            char **na = realloc(args, cap * sizeof *na);
            if (!na) {
                cli_err(NULL, "out of memory");
                exit(CE_OUT_OF_MEMORY);
            }
            args = na;
        }
        /* the option and its value as one word each: "--opt=value" would let a value that
         * starts with '-' be taken as it is, but curl's -K gives the value verbatim anyway */
        if (has == optional_argument) {
            /* --opt[=VALUE]: one word, "--opt=VALUE" only when the line gives a value */
            if (val && *val) {
                char *joined = xmalloc(strlen(opt) + strlen(val) + 2);
                sprintf(joined, "%s=%s", opt, val);
                free(opt);
                opt = joined;
            }
            free(val);
            val = NULL;
        }
        args[nargs++] = opt;
        if (val)
            args[nargs++] = val;
        if (nargs > CURL_MAX_CONFIG_WORDS) {
            cli_err(NULL, "config file '%s' has too many options (at most %d)", path,
                    CURL_MAX_CONFIG_WORDS);
            exit(CE_READ_ERROR);
        }
        line = next;
    }
    free(text);
    expand(w, args, nargs, depth + 1);
    free(args); /* the words themselves live on in w */
}

/* Copies args to w, replacing each -K FILE / --config FILE by the file's words. */
static void expand(struct words *w, char **args, size_t nargs, int depth)
{
    for (size_t i = 0; i < nargs; i++) {
        char *a = args[i];
        if (strcmp(a, "--") == 0) {
            for (; i < nargs; i++)
                push(w, args[i]);
            return;
        }
        if (a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (len == 6 && memcmp(a + 2, "config", 6) == 0) {
                const char *file = eq ? eq + 1 : i + 1 < nargs ? args[++i] : NULL;
                if (!file)
                    cli_usage_error("option '--config' needs a value");
                read_config(w, file, depth, true);
                continue;
            }
            push(w, a);
            if (!eq && long_arg(w, a + 2, len) == required_argument && i + 1 < nargs)
                push(w, args[++i]);
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            push(w, a);
            continue;
        }
        /* a cluster of short options: -K may end it (-sK FILE, -sKFILE) */
        size_t j = 1;
        for (; a[j]; j++) {
            if (a[j] == 'K' || short_arg(w, a[j]))
                break;
        }
        if (a[j] != 'K') {
            push(w, a);
            if (a[j] && !a[j + 1] && i + 1 < nargs) /* -X VALUE */
                push(w, args[++i]);
            continue;
        }
        if (j > 1) {
            char *head = xmalloc(j + 1);
            memcpy(head, a, j);
            head[j] = '\0';
            push(w, head);
        }
        const char *file = a[j + 1] ? a + j + 1 : i + 1 < nargs ? args[++i] : NULL;
        if (!file)
            cli_usage_error("option '-K' needs a value");
        read_config(w, file, depth, true);
    }
}

char **curl_config_argv;

void curl_config_expand(int *argc, char ***argv, const struct option *longs, const char *shorts)
{
    struct words w = {.longs = longs, .shorts = shorts};
    push(&w, (*argv)[0]);
    char **args = *argv + 1;
    size_t nargs = (size_t)(*argc - 1);
    bool disable = nargs && (strcmp(args[0], "-q") == 0 || strcmp(args[0], "--disable") == 0);
    if (!disable) {
        /* curl's places for the default config, the first that exists */
        static const char *const envs[] = {"CURL_HOME", "XDG_CONFIG_HOME", "HOME"};
        for (size_t k = 0; k < 3; k++) {
            const char *dir = getenv(envs[k]);
            char path[4096];
            if (!dir || !*dir ||
                (size_t)snprintf(path, sizeof path, "%s/.curlrc", dir) >= sizeof path)
                continue;
            struct stat st;
            if (stat(path, &st) == 0) {
                read_config(&w, path, 0, false);
                break;
            }
        }
    }
    expand(&w, args, nargs, 0);
    /* Kept to the end: the options point into its words. A global holds it too, so that it
     * stays reachable (LeakSanitizer reported it at every exit once main's argv was gone). */
    curl_config_argv = w.v;
    *argc = (int)w.n;
    *argv = w.v;
}
