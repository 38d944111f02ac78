/* SPDX-License-Identifier: MIT */
/* The access rules as a whole: those of the command line (--allow, --deny, --deny-dest: fixed)
 * and those of the --rules file (replaced as a whole by SIGHUP), and the two checks every
 * connection goes through: may this client use the proxy, may it reach this destination. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* A line of the file, newline included: "deny-dest [v6/128]:" and 16 port ranges fit. */
#define RULES_LINE_MAX 512

enum rule_kind {
    RULE_ALLOW,
    RULE_DENY,
    RULE_DENY_DEST
};

struct rule {
    enum rule_kind kind;
    struct deny_rule r; /* allow and deny use r.net only */
};

struct rule_set {
    struct rule *v;
    size_t n, cap;
    size_t nallow, ndeny_dest;
};

/* Readers take it shared for one match; a reload swaps o->rules under it. */
static pthread_rwlock_t rules_lock = PTHREAD_RWLOCK_INITIALIZER;

static void set_free(struct rule_set *s)
{
    for (size_t i = 0; s && i < s->n; i++)
        deny_free(&s->v[i].r);
    if (s)
        free(s->v);
    free(s);
}

static int set_add(struct rule_set *s, const struct rule *r)
{
    if (s->n == PROXY_MAX_RULES)
        return -E2BIG;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        if (cap > PROXY_MAX_RULES)
            cap = PROXY_MAX_RULES;
        struct rule *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *r;
    s->nallow += r->kind == RULE_ALLOW;
    s->ndeny_dest += r->kind == RULE_DENY_DEST;
    return 0;
}

/* One line without its newline. Returns 0, or -EINVAL with *why set. */
static int parse_line(struct rule_set *s, char *line, const char **why)
{
    char *save = NULL;
    char *word = strtok_r(line, " \t", &save);
    if (!word || word[0] == '#')
        return 0;
    char *arg = strtok_r(NULL, " \t", &save);
    char *extra = strtok_r(NULL, " \t", &save);
    if (extra && extra[0] != '#') {
        *why = "one rule per line: KIND ARGUMENT, then only a '#' comment";
        return -EINVAL;
    }
    struct rule r;
    memset(&r, 0, sizeof r);
    if (strcmp(word, "allow") == 0 || strcmp(word, "deny") == 0) {
        r.kind = word[0] == 'a' ? RULE_ALLOW : RULE_DENY;
        if (!arg || cidr_parse(arg, &r.r.net) < 0) {
            *why = "not an address or CIDR range (e.g. 10.0.0.0/8, ::1)";
            return -EINVAL;
        }
    } else if (strcmp(word, "deny-dest") == 0) {
        r.kind = RULE_DENY_DEST;
        if (!arg || deny_parse(arg, &r.r) < 0) {
            *why = "not CIDR[:PORTS], HOST[:PORTS] or PORTS (e.g. 10.0.0.0/8, "
                   "127.0.0.1:22,8000-8999, [fd00::/8]:53, internal.example, 25)";
            return -EINVAL;
        }
    } else {
        *why = "not a rule: allow CIDR, deny CIDR or deny-dest CIDR|HOST[:PORTS]|PORTS";
        return -EINVAL;
    }
    int e = set_add(s, &r);
    if (e < 0) {
        deny_free(&r.r);
        *why = e == -E2BIG ? "too many rules (at most " PROXY_MAX_RULES_S ")" : "out of memory";
        return -EINVAL;
    }
    return 0;
}

static int rules_line(void *s, char *line, const char **why)
{
    return parse_line(s, line, why);
}

/* Reads path into a new set. Errors go to stderr with the line number. */
static int set_load(const char *path, struct rule_set **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        cli_err(path, "%s", strerror(e));
        return -e;
    }
    struct rule_set *s = calloc(1, sizeof *s);
    if (!s) {
        fclose(f);
        return -ENOMEM;
    }
    char line[RULES_LINE_MAX + 2];
    int r = proxy_read_lines(f, path, line, sizeof line,
                             "line too long (at most " PROXY_RULES_LINE_S " bytes)", rules_line, s);
    fclose(f);
    if (r < 0) {
        set_free(s);
        return r;
    }
    *out = s;
    return 0;
}

/* The count of file allow rules the file must keep (beyond loopback, no --allow, no users). */
static int check_open(const struct proxy_opts *o, const struct rule_set *s)
{
    if (o->rules_need_allow && s->nallow == 0) {
        cli_err(o->rules_file, "no allow rule: listening beyond loopback with no --allow and no "
                               "users, that would be an open proxy");
        return -EINVAL;
    }
    return 0;
}

int rules_load(struct proxy_opts *o)
{
    struct rule_set *s;
    int r = set_load(o->rules_file, &s);
    if (r < 0)
        return r;
    o->rules = s;
    return 0;
}

size_t rules_file_allows(const struct proxy_opts *o)
{
    pthread_rwlock_rdlock(&rules_lock);
    size_t n = o->rules ? o->rules->nallow : 0;
    pthread_rwlock_unlock(&rules_lock);
    return n;
}

int rules_reload(struct proxy_opts *o)
{
    struct rule_set *s;
    int r = set_load(o->rules_file, &s);
    if (r == 0 && (r = check_open(o, s)) < 0)
        set_free(s);
    if (r < 0) {
        cli_err(o->rules_file, "not reloaded: the rules stay as they were");
        return r;
    }
    pthread_rwlock_wrlock(&rules_lock);
    struct rule_set *old = o->rules;
    o->rules = s;
    pthread_rwlock_unlock(&rules_lock);
    set_free(old);
    fprintf(stderr, "vega-proxy: %s: reloaded, %zu rules\n", o->rules_file, s->n);
    return 0;
}

void rules_free(struct proxy_opts *o)
{
    for (size_t i = 0; i < o->ndeny; i++)
        deny_free(&o->deny[i]);
    set_free(o->rules);
    o->rules = NULL;
}

bool client_allowed(const struct proxy_opts *o, const vega_addr *a)
{
    pthread_rwlock_rdlock(&rules_lock);
    const struct rule_set *s = o->rules;
    bool any_allow = o->nallow > 0 || (s && s->nallow > 0);
    bool allowed = !any_allow, denied = false;
    for (size_t i = 0; i < o->nallow && !allowed; i++)
        allowed = cidr_match(&o->allow[i], a);
    for (size_t i = 0; i < o->ndeny_clients && !denied; i++)
        denied = cidr_match(&o->deny_clients[i], a);
    for (size_t i = 0; s && i < s->n && !denied; i++) {
        if (s->v[i].kind == RULE_ALLOW && !allowed)
            allowed = cidr_match(&s->v[i].r.net, a);
        else if (s->v[i].kind == RULE_DENY)
            denied = cidr_match(&s->v[i].r.net, a);
    }
    pthread_rwlock_unlock(&rules_lock);
    return allowed && !denied;
}

bool dest_rules_any(const struct proxy_opts *o)
{
    pthread_rwlock_rdlock(&rules_lock);
    bool any = o->deny_private || o->ndeny > 0 || (o->rules && o->rules->ndeny_dest > 0);
    pthread_rwlock_unlock(&rules_lock);
    return any;
}

bool dest_allowed(const struct proxy_opts *o, const vega_addr *a)
{
    bool ok = !(o->deny_private && addr_is_private(a));
    for (size_t i = 0; i < o->ndeny && ok; i++)
        ok = !deny_match(&o->deny[i], a);
    pthread_rwlock_rdlock(&rules_lock);
    const struct rule_set *s = o->rules;
    for (size_t i = 0; s && i < s->n && ok; i++)
        if (s->v[i].kind == RULE_DENY_DEST)
            ok = !deny_match(&s->v[i].r, a);
    pthread_rwlock_unlock(&rules_lock);
    return ok;
}

bool dest_name_allowed(const struct proxy_opts *o, const char *name, uint16_t port)
{
    bool ok = true;
    for (size_t i = 0; i < o->ndeny && ok; i++)
        ok = !deny_match_name(&o->deny[i], name, port);
    pthread_rwlock_rdlock(&rules_lock);
    const struct rule_set *s = o->rules;
    for (size_t i = 0; s && i < s->n && ok; i++)
        if (s->v[i].kind == RULE_DENY_DEST)
            ok = !deny_match_name(&s->v[i].r, name, port);
    pthread_rwlock_unlock(&rules_lock);
    return ok;
}
