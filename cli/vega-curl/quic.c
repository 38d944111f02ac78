/* SPDX-License-Identifier: MIT */
/* vega-curl's HTTP/3 settings: QUIC's trust and client certificate (--cacert, -k, --cert,
 * --key), and the files that outlive a run: --alt-svc (curl's alt-svc cache format) and
 * --tls-session-file (session tickets and address validation tokens, for resumption and 0-RTT
 * next time). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curl.h"

/* A file of at most 4 MiB into memory; NULL with *missing when it does not exist. */
static char *small_file(const char *path, size_t *len, bool *missing, int *err)
{
    *missing = false;
    *err = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        *err = -errno;
        return NULL;
    }
    size_t cap = 4u << 20, n = 0;
    char *buf = malloc(cap);
    while (buf && n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                *err = -errno;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (!buf || *err || n == cap) {
        free(buf);
        if (!*err)
            *err = buf ? -EFBIG : -ENOMEM;
        return NULL;
    }
    *len = n;
    return buf;
}

static char *load_one(const struct curl_opts *o, const char *opt, const char *path, size_t *len)
{
    bool missing;
    int err;
    if (!path || !*path)
        return NULL;
    char *t = small_file(path, len, &missing, &err);
    if (!t && !missing) {
        curl_fail(o, CE_READ_ERROR, "%s: cannot read %s: %s", opt, path, vega_strerror(err));
        exit(CE_READ_ERROR);
    }
    return t;
}

void curl_files_load(struct curl_opts *o)
{
    o->alt_svc_text = load_one(o, "--alt-svc", o->alt_svc, &o->alt_svc_len);
    o->session_text = load_one(o, "--tls-session-file", o->session_file, &o->session_len);
}

void curl_files_apply(const struct curl_opts *o, vega_http_client *c)
{
    if (o->alt_svc_text && vega_http_client_altsvc_load(c, o->alt_svc_text, o->alt_svc_len) < 0 &&
        !o->silent)
        cli_err(o->alt_svc, "--alt-svc: not an alt-svc cache file (ignored)");
    if (o->session_text && vega_http_client_sessions_load(c, o->session_text, o->session_len) < 0 &&
        !o->silent)
        cli_err(o->session_file, "--tls-session-file: not a session file of vega-curl (ignored)");
}

static int load_pem(const char *path, char **out, size_t *len)
{
    bool missing;
    int err;
    *out = small_file(path, len, &missing, &err);
    return *out ? 0 : err;
}

/* One key log line from QUIC's TLS (any of the client's threads): appended with its newline in
 * one write, so lines of connections on other threads (and the TCP side's, which appends to the
 * same file) never interleave inside a line. */
static void keylog_line(void *user, const char *line)
{
    struct curl_quic *q = user;
    char buf[512];
    size_t n = strlen(line);
    if (n + 1 > sizeof buf)
        return;
    memcpy(buf, line, n);
    buf[n++] = '\n';
    ssize_t w;
    do
        w = write(q->keylog_fd, buf, n);
    while (w < 0 && errno == EINTR);
    explicit_bzero(buf, sizeof buf);
}

/* SSLKEYLOGFILE for QUIC, as curl does for its HTTP/3 (ngtcp2 and quiche backends): the NSS key
 * log lines appended to the file, created private (0600) when it does not exist. A file that
 * cannot be opened is reported and ignored, as for TCP. */
static void keylog_setup(const struct curl_opts *o, struct curl_quic *q, vega_http_client_opts *co)
{
    const char *path = getenv("SSLKEYLOGFILE");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (!o->silent)
            cli_err(path, "SSLKEYLOGFILE: %s (ignored for QUIC)", strerror(errno));
        return;
    }
    q->keylog_open = true;
    q->keylog_fd = fd;
    co->quic_keylog = keylog_line;
    co->quic_keylog_user = q;
}

int curl_quic_setup(const struct curl_opts *o, struct curl_quic *q, vega_http_client_opts *co)
{
    memset(q, 0, sizeof *q);
    keylog_setup(o, q, co);
    /* QLOGDIR, as curl: a qlog trace of each QUIC connection in that directory, which must
     * exist (curl creates none either; one that cannot be written to gets no trace). curl names
     * a file <SCID>.sqlog after the client's own connection ID; ours is <ODCID>_client.sqlog,
     * the endpoint's naming, ngtcp2's and quic-go's, which the server's trace of the same
     * connection shares (vega-serve --qlog-dir: <ODCID>_server.sqlog). */
    const char *qlog = getenv("QLOGDIR");
    if (qlog && *qlog)
        co->quic_qlog_dir = qlog;
    co->quic_insecure = o->insecure;
    co->quic_version = o->quic_version;
    co->quic_key_update = o->quic_key_update;
    co->quic_migrate = o->quic_migrate;
    co->quic_migrate_after_ns = o->quic_migrate_after_ms * VEGA_NS_PER_MS;
    co->alt_svc = o->alt_svc != NULL;
    /* A session file is there to resume, and 0-RTT is what resuming buys: safe requests only
     * (the library sends GET and HEAD early, never a body). */
    co->quic_early_data = o->earlydata < 0 ? o->session_file != NULL : o->earlydata == 1;
    if (cli_quic_suites(o->tls13_ciphers, co->quic_suites, &co->quic_n_suites, NULL) < 0)
        return curl_fail(o, CE_SSL_CIPHER,
                         "failed setting cipher list: %s (QUIC offers "
                         "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and "
                         "TLS_CHACHA20_POLY1305_SHA256)",
                         o->tls13_ciphers);
    int r;
    if (o->cacert && !o->insecure) {
        if ((r = vega_crypto_cert_store_new(&q->ca, o->cacert, NULL)) < 0)
            return curl_fail(o, CE_SSL_CACERT_BADFILE, "error setting certificate file: %s (%s)",
                             o->cacert, vega_strerror(r));
        co->quic_ca = q->ca;
    }
    if (!o->cert)
        return 0;
    char *pem = NULL, *kpem = NULL;
    size_t len = 0, klen = 0;
    if ((r = load_pem(o->cert, &pem, &len)) < 0 ||
        (r = vega_crypto_cert_chain_new(&q->chain)) < 0 ||
        (r = vega_crypto_cert_chain_add(q->chain, pem, len)) < 0 ||
        (r = load_pem(o->key ? o->key : o->cert, &kpem, &klen)) < 0 ||
        (r = vega_crypto_key_load_private(&q->key, kpem, klen)) < 0) {
        free(pem);
        free(kpem);
        return curl_fail(o, CE_SSL_CERTPROBLEM, "could not load client certificate %s: %s", o->cert,
                         vega_strerror(r));
    }
    free(pem);
    free(kpem);
    co->quic_chain = q->chain;
    co->quic_key = q->key;
    return 0;
}

void curl_quic_free(struct curl_quic *q)
{
    if (q->keylog_open)
        close(q->keylog_fd);
    vega_crypto_cert_store_free(q->ca);
    vega_crypto_cert_chain_free(q->chain);
    vega_crypto_key_free(q->key);
    memset(q, 0, sizeof *q);
}

/* The text of a save function (called twice: the length, then the bytes). */
static char *take(vega_ssize (*save)(vega_http_client *, char *, size_t), vega_http_client *c,
                  size_t *len)
{
    for (int tries = 0; tries < 4; tries++) {
        vega_ssize n = save(c, NULL, 0);
        if (n < 0)
            return NULL;
        char *b = malloc((size_t)n + 1);
        if (!b)
            return NULL;
        vega_ssize m = save(c, b, (size_t)n + 1);
        if (m >= 0) {
            *len = (size_t)m;
            return b;
        }
        free(b); /* it grew in between: ask again */
    }
    return NULL;
}

void curl_files_take(const struct curl_opts *o, vega_http_client *c, struct curl_saved *s)
{
    memset(s, 0, sizeof *s);
    if (o->alt_svc && *o->alt_svc)
        s->alt_svc = take(vega_http_client_altsvc_save, c, &s->alt_svc_len);
    if (o->session_file && *o->session_file)
        s->sessions = take(vega_http_client_sessions_save, c, &s->sessions_len);
}

static int store_one(const struct curl_opts *o, const char *opt, const char *path, const char *text,
                     size_t len, mode_t mode)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return curl_fail(o, CE_WRITE_ERROR, "%s: file name too long", opt);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return curl_fail(o, CE_WRITE_ERROR, "%s: cannot write %s: %s", opt, tmp, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    bool ok = off == len && close(fd) == 0;
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return curl_fail(o, CE_WRITE_ERROR, "%s: cannot write %s: %s", opt, path, strerror(e));
    }
    return 0;
}

int curl_files_store(const struct curl_opts *o, struct curl_saved *s)
{
    int code = 0;
    if (s->alt_svc)
        code = store_one(o, "--alt-svc", o->alt_svc, s->alt_svc, s->alt_svc_len, 0644);
    /* The session file holds resumption secrets: only its owner may read it. */
    if (s->sessions && !code)
        code =
            store_one(o, "--tls-session-file", o->session_file, s->sessions, s->sessions_len, 0600);
    free(s->alt_svc);
    free(s->sessions);
    memset(s, 0, sizeof *s);
    return code;
}
