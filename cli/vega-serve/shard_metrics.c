/* SPDX-License-Identifier: MIT */
/* --metrics with --shards: every shard publishes its Prometheus text into its slot of a region
 * the supervisor mapped (MAP_SHARED) before the first fork, and whichever shard a scrape reaches
 * answers with the sum over all slots, sample by sample. A shard that ends cleanly folds its
 * counters into a "retired" total, and a dead shard's last counters are folded by the next one
 * that takes its slot, so the sums do not go back on a reload or a crash (gauges of a process
 * that is gone are dropped). The supervisor serves nothing. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve.h"

/* A shard's text: 11.5 KiB with 2 workers, about 0.8 KiB more per worker. */
#define SM_TEXT_CAP (256u * 1024u)
/* Slots per shard: serving, reloading, draining (the supervisor's bound), and one spare. */
#define SM_SLOTS_PER_SHARD 4u

struct sm_slot {
    int owner; /* the shard process's pid, 0 when free */
    uint32_t len;
    char text[SM_TEXT_CAP];
};

struct sm_region {
    pthread_mutex_t lock; /* process-shared and robust: a shard killed holding it blocks none */
    int writing;          /* the slot being written (a holder that died tore it), -1: none */
    unsigned nslots;      /* slot[nslots] is the retired total (counters only) */
    struct sm_slot slot[];
};

static struct sm_region *R;
static size_t R_len;
static int my_slot = -1;
static bool too_big_said;

int serve_shard_metrics_fds[SERVE_SHARD_METRICS_MAX_FDS];
size_t serve_shard_metrics_nfds;

bool serve_shard_metrics_on(void)
{
    return R != NULL;
}

/* A binary upgrade's new vega-serve maps the old one's region (a memfd kept across the exec,
 * named here), so the sums go on across an upgrade. */
#define ENV_METRICS_FD "VEGA_SERVE_METRICS_FD"

/* The region handed over by the old vega-serve, or NULL. */
static struct sm_region *adopt_region(void)
{
    const char *v = getenv(ENV_METRICS_FD);
    if (!v)
        return NULL;
    char *end;
    long fd = strtol(v, &end, 10);
    unsetenv(ENV_METRICS_FD);
    struct stat st;
    if (*end || end == v || fd < 3 || fd > INT32_MAX || fstat((int)fd, &st) < 0 ||
        (size_t)st.st_size < sizeof(struct sm_region))
        return NULL;
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                   (int)fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct sm_region *r = p;
    /* its own slot count, checked against its size */
    if (r->nslots > (size_t)st.st_size / sizeof(struct sm_slot) ||
        sizeof *r + ((size_t)r->nslots + 1) * sizeof(struct sm_slot) > (size_t)st.st_size) {
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    R_len = (size_t)st.st_size;
    (void)fcntl((int)fd, F_SETFD, 0); /* kept for the next upgrade */
    char name[16];
    snprintf(name, sizeof name, "%ld", fd);
    setenv(ENV_METRICS_FD, name, 1);
    return r;
}

int serve_shard_metrics_init(unsigned shards)
{
    R = adopt_region();
    if (R) {
        cli_log(1, "metrics: the sums go on from the previous vega-serve");
        return 0;
    }
    unsigned nslots = shards * SM_SLOTS_PER_SHARD;
    R_len = sizeof *R + ((size_t)nslots + 1) * sizeof(struct sm_slot);
    /* a memfd (not close-on-exec, named in the environment) so that a binary upgrade maps the
     * same region; pages are committed only where a shard writes */
    int fd = memfd_create("vega-serve-metrics", 0);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)R_len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    void *p = mmap(NULL, R_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    struct sm_region *r = p;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int e = pthread_mutex_init(&r->lock, &a);
    pthread_mutexattr_destroy(&a);
    if (e != 0) {
        munmap(p, R_len);
        close(fd);
        return -e;
    }
    r->writing = -1;
    r->nslots = nslots;
    R = r;
    char name[16];
    snprintf(name, sizeof name, "%d", fd);
    setenv(ENV_METRICS_FD, name, 1);
    return 0;
}

static void sm_lock(void)
{
    if (pthread_mutex_lock(&R->lock) == EOWNERDEAD) {
        if (R->writing >= 0) /* torn by its writer's death: those counts are lost */
            R->slot[R->writing].len = 0;
        R->writing = -1;
        pthread_mutex_consistent(&R->lock);
    }
}

static void sm_unlock(void)
{
    pthread_mutex_unlock(&R->lock);
}

static bool gone(int pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Writes text into slot k under the lock. Returns false when it does not fit. */
static bool sm_write(unsigned k, const char *text, size_t len)
{
    if (len > SM_TEXT_CAP)
        return false;
    R->writing = (int)k;
    memcpy(R->slot[k].text, text, len);
    R->slot[k].len = (uint32_t)len;
    R->writing = -1;
    return true;
}

/* ---- summing Prometheus texts sample by sample ------------------------------------------------
 */

struct fam {
    const char *name, *help, *type; /* name: NUL-ended copy; help/type: lines without '\n' */
    size_t hlen, tlen;
    bool counter;         /* counter or histogram: kept when its process is gone */
    unsigned first, last; /* series, in order of first appearance */
};

struct ser {
    const char *key; /* "name{labels}", borrowed from a text */
    size_t klen;
    unsigned next;
    uint64_t ip, frac_ns; /* the value: integer part and nanos (for a "%.9f" histogram sum) */
    bool dot;
};

struct sum {
    struct fam *f;
    struct ser *s;
    unsigned nf, ns, capf, caps;
    bool oom;
};

#define NONE UINT32_MAX

static unsigned fam_find(struct sum *m, const char *name, size_t nlen)
{
    for (unsigned i = 0; i < m->nf; i++)
        if (strlen(m->f[i].name) == nlen && memcmp(m->f[i].name, name, nlen) == 0)
            return i;
    if (m->nf == m->capf) {
        unsigned cap = m->capf ? m->capf * 2 : 64;
        struct fam *f = realloc(m->f, cap * sizeof *f);
        if (!f)
            return NONE;
        m->f = f;
        m->capf = cap;
    }
    char *copy = strndup(name, nlen);
    if (!copy)
        return NONE;
    m->f[m->nf] = (struct fam){.name = copy, .first = NONE, .last = NONE};
    return m->nf++;
}

/* value: digits, optionally '.' and up to 9 digits. Returns false on anything else. */
static bool parse_value(const char *v, size_t len, uint64_t *ip, uint64_t *frac, bool *dot)
{
    size_t i = 0;
    *ip = 0;
    *frac = 0;
    *dot = false;
    if (len == 0)
        return false;
    for (; i < len && v[i] >= '0' && v[i] <= '9'; i++)
        *ip = *ip * 10 + (uint64_t)(v[i] - '0');
    if (i == len)
        return true;
    if (v[i] != '.')
        return false;
    *dot = true;
    uint64_t scale = 100000000; /* the first digit after '.' is 1e8 ns */
    for (i++; i < len; i++) {
        if (v[i] < '0' || v[i] > '9' || scale == 0)
            return false;
        *frac += (uint64_t)(v[i] - '0') * scale;
        scale /= 10;
    }
    return true;
}

static void add_sample(struct sum *m, unsigned fi, const char *key, size_t klen, const char *v,
                       size_t vlen)
{
    uint64_t ip, frac;
    bool dot;
    if (!parse_value(v, vlen, &ip, &frac, &dot))
        return;
    struct fam *f = &m->f[fi];
    for (unsigned i = f->first; i != NONE; i = m->s[i].next) {
        struct ser *s = &m->s[i];
        if (s->klen == klen && memcmp(s->key, key, klen) == 0) {
            s->ip += ip;
            s->frac_ns += frac;
            s->dot = s->dot || dot;
            return;
        }
    }
    if (m->ns == m->caps) {
        unsigned cap = m->caps ? m->caps * 2 : 256;
        struct ser *s = realloc(m->s, cap * sizeof *s);
        if (!s) {
            m->oom = true;
            return;
        }
        m->s = s;
        m->caps = cap;
    }
    m->s[m->ns] = (struct ser){key, klen, NONE, ip, frac, dot};
    if (f->last == NONE)
        f->first = m->ns;
    else
        m->s[f->last].next = m->ns;
    f->last = m->ns++;
}

/* Adds every sample of text (of counters and histograms only when counters_only). The text
 * must outlive m. */
static void sum_text(struct sum *m, const char *text, size_t len, bool counters_only)
{
    unsigned cur = NONE;
    size_t at = 0;
    while (at < len && !m->oom) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;
        at += ll + 1;
        bool help = ll > 7 && memcmp(line, "# HELP ", 7) == 0;
        bool type = ll > 7 && memcmp(line, "# TYPE ", 7) == 0;
        if (help || type) {
            const char *name = line + 7;
            const char *sp = memchr(name, ' ', ll - 7);
            if (!sp)
                continue;
            cur = fam_find(m, name, (size_t)(sp - name));
            if (cur == NONE) {
                m->oom = true;
                return;
            }
            struct fam *f = &m->f[cur];
            if (help && !f->help) {
                f->help = line;
                f->hlen = ll;
            } else if (type && !f->type) {
                f->type = line;
                f->tlen = ll;
                size_t tl = ll - (size_t)(sp + 1 - line);
                f->counter = (tl == 7 && memcmp(sp + 1, "counter", 7) == 0) ||
                             (tl == 9 && memcmp(sp + 1, "histogram", 9) == 0);
            }
            continue;
        }
        if (ll == 0 || line[0] == '#' || cur == NONE)
            continue;
        if (counters_only && !m->f[cur].counter)
            continue;
        const char *sp = memrchr(line, ' ', ll);
        if (!sp)
            continue;
        size_t klen = (size_t)(sp - line);
        add_sample(m, cur, line, klen, sp + 1, ll - klen - 1);
    }
}

static int sum_write(const struct sum *m, FILE *out)
{
    for (unsigned i = 0; i < m->nf; i++) {
        const struct fam *f = &m->f[i];
        if (f->first == NONE)
            continue;
        if (f->help)
            fprintf(out, "%.*s\n", (int)f->hlen, f->help);
        if (f->type)
            fprintf(out, "%.*s\n", (int)f->tlen, f->type);
        for (unsigned k = f->first; k != NONE; k = m->s[k].next) {
            const struct ser *s = &m->s[k];
            if (s->dot)
                fprintf(out, "%.*s %" PRIu64 ".%09" PRIu64 "\n", (int)s->klen, s->key,
                        s->ip + s->frac_ns / 1000000000u, s->frac_ns % 1000000000u);
            else
                fprintf(out, "%.*s %" PRIu64 "\n", (int)s->klen, s->key, s->ip);
        }
    }
    return ferror(out) ? -EIO : 0;
}

static void sum_free(struct sum *m)
{
    for (unsigned i = 0; i < m->nf; i++)
        free((char *)m->f[i].name);
    free(m->f);
    free(m->s);
}

/* Under the lock: retired += text's counters. Returns false (retired unchanged) on no memory
 * or when the total outgrew its slot. */
static bool fold(const char *text, size_t len)
{
    struct sm_slot *ret = &R->slot[R->nslots];
    struct sum m = {0};
    char *buf = NULL;
    size_t blen = 0;
    bool ok = false;
    FILE *f = open_memstream(&buf, &blen);
    if (f) {
        sum_text(&m, ret->text, ret->len, true);
        sum_text(&m, text, len, true);
        int r = m.oom ? -ENOMEM : sum_write(&m, f);
        if (fclose(f) == 0 && r == 0)
            ok = sm_write(R->nslots, buf, blen);
    }
    free(buf);
    sum_free(&m);
    return ok;
}

/* ---- a shard's side ---------------------------------------------------------------------------
 */

void serve_shard_metrics_attach(void)
{
    if (!R)
        return;
    sm_lock();
    for (unsigned k = 0; k < R->nslots; k++) {
        struct sm_slot *s = &R->slot[k];
        if (s->owner && gone(s->owner)) { /* crashed or killed: keep what it counted */
            if (s->len && !fold(s->text, s->len))
                cli_log(1, "metrics: the counters of pid %d are lost", s->owner);
            s->owner = 0;
            s->len = 0;
        }
        if (!s->owner && my_slot < 0) {
            s->owner = (int)getpid();
            s->len = 0;
            my_slot = (int)k;
        }
    }
    sm_unlock();
    if (my_slot < 0)
        cli_err(NULL, "metrics: no free slot: this shard's counters are not summed");
}

void serve_shard_metrics_publish(const char *text, size_t len)
{
    if (!R || my_slot < 0)
        return;
    sm_lock();
    bool ok = sm_write((unsigned)my_slot, text, len);
    sm_unlock();
    if (!ok && !too_big_said) {
        too_big_said = true;
        cli_err(NULL, "metrics: %zu bytes of metrics do not fit the shared slot (%u): not summed",
                len, SM_TEXT_CAP);
    }
}

void serve_shard_metrics_detach(const char *text, size_t len)
{
    if (!R || my_slot < 0)
        return;
    sm_lock();
    if (!fold(text, len))
        cli_log(1, "metrics: this shard's last counters are lost");
    R->slot[my_slot].owner = 0;
    R->slot[my_slot].len = 0;
    sm_unlock();
    my_slot = -1;
}

int serve_shard_metrics_sum(const char *own, size_t len, FILE *out)
{
    /* copies of the other slots, taken under the lock, summed outside it */
    size_t n = (size_t)R->nslots + 1;
    char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    bool *live = calloc(n, sizeof *live);
    int r = -ENOMEM;
    if (!texts || !lens || !live)
        goto out;
    sm_lock();
    for (size_t k = 0; k < n; k++) {
        const struct sm_slot *s = &R->slot[k];
        bool retired = k == R->nslots;
        if ((int)k == my_slot || s->len == 0 || (!retired && !s->owner))
            continue;
        texts[k] = malloc(s->len);
        if (!texts[k]) {
            sm_unlock();
            goto out;
        }
        memcpy(texts[k], s->text, s->len);
        lens[k] = s->len;
        live[k] = !retired && !gone(s->owner);
    }
    sm_unlock();
    struct sum m = {0};
    sum_text(&m, own, len, false);
    for (size_t k = 0; k < n; k++)
        if (texts[k])
            sum_text(&m, texts[k], lens[k], !live[k]);
    r = m.oom ? -ENOMEM : sum_write(&m, out);
    sum_free(&m);
out:
    for (size_t k = 0; texts && k < n; k++)
        free(texts[k]);
    free(texts);
    free(lens);
    free(live);
    return r;
}
