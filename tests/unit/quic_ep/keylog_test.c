/* SPDX-License-Identifier: MIT */
/* The endpoint's options template passes the key log hook (vega_quic_opts.keylog) to every
 * connection, client and server; and vega_quic_endpoint_opts layout 2 (the template grew):
 * a program built against layout 1 still gets a working endpoint, without a key log. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <vega/crypto.h>
#include <vega/quic_ep.h>
#include <vega/rt.h>
#include <vega/stream.h>

#include "../quic/qtls_certs.h"
#include "abi_old.h"
#include "vtest.h"

struct creds {
    vega_crypto_cert_chain *chain;
    vega_crypto_key *key;
    vega_crypto_cert_store *ca;
};

static void creds_load(struct creds *k)
{
    memset(k, 0, sizeof *k);
    VCHECK_EQ(vega_crypto_cert_chain_new(&k->chain), 0);
    VCHECK_EQ(vega_crypto_cert_chain_add(k->chain, QT_SRV_P256_PEM, strlen(QT_SRV_P256_PEM)), 0);
    VCHECK_EQ(vega_crypto_key_load_private(&k->key, QT_SRV_P256_KEY, strlen(QT_SRV_P256_KEY)), 0);
    VCHECK_EQ(vega_crypto_cert_store_new(&k->ca, NULL, NULL), 0);
    VCHECK_EQ(vega_crypto_cert_store_add_pem(k->ca, QT_CA_PEM, strlen(QT_CA_PEM)), 0);
}

static void creds_free(struct creds *k)
{
    vega_crypto_cert_chain_free(k->chain);
    vega_crypto_key_free(k->key);
    vega_crypto_cert_store_free(k->ca);
}

/* A thread-safe collector (the hook runs on the endpoint's tasks). */
struct klog {
    pthread_mutex_t mu;
    char line[8][256];
    size_t n;
};

static void klog_cb(void *user, const char *line)
{
    struct klog *k = user;
    pthread_mutex_lock(&k->mu);
    if (k->n < 8)
        snprintf(k->line[k->n++], sizeof k->line[0], "%s", line);
    pthread_mutex_unlock(&k->mu);
}

static bool klog_has(struct klog *k, const char *line)
{
    pthread_mutex_lock(&k->mu);
    bool found = false;
    for (size_t i = 0; i < k->n; i++)
        found |= strcmp(k->line[i], line) == 0;
    pthread_mutex_unlock(&k->mu);
    return found;
}

static vega_addr loopback(uint16_t port)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "127.0.0.1", port), 0);
    return a;
}

static void server_template(vega_quic_endpoint_opts *o, struct creds *k)
{
    vega_quic_endpoint_opts_init(o);
    o->quic.tls.chain = k->chain;
    o->quic.tls.key = k->key;
    o->quic.tls.alpn[0] = "vega-test";
    o->quic.tls.n_alpn = 1;
    o->retry = VEGA_QUIC_RETRY_NEVER;
}

/* Connects a client endpoint made from co (of layout version) to a server made from so, and
 * waits until the server has the connection. */
static void connect_pair(vega_quic_endpoint_opts *so, const void *co, int version)
{
    vega_quic_endpoint *sep, *cep;
    VCHECK_EQ(vega_quic_endpoint_new(&sep, so), 0);
    vega_addr any = loopback(0), bound;
    VCHECK_EQ(vega_quic_endpoint_listen(sep, &any, 0, &bound), 0);
    VCHECK_EQ(vega_quic_endpoint_new_versioned(&cep, co, version), 0);
    vega_quic_connect_opts cc = {.server_name = "localhost"};
    vega_quic_ep_conn *c, *s;
    VCHECK_EQ(vega_quic_endpoint_connect(cep, &bound, &cc, &c, vega_deadline_in_ms(10000)), 0);
    VCHECK_EQ(vega_quic_endpoint_accept(sep, &s, vega_deadline_in_ms(10000)), 0);
    vega_quic_conn_info info;
    vega_quic_ep_conn_get_info(c, &info);
    VCHECK(info.handshake_done);
    VCHECK_STR(info.alpn, "vega-test");
    vega_quic_ep_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, 0, NULL);
    vega_quic_ep_conn_release(c);
    vega_quic_ep_conn_release(s);
    vega_quic_endpoint_free(cep);
    vega_quic_endpoint_shutdown(sep, vega_deadline_in_ms(1000));
    vega_quic_endpoint_free(sep);
}

/* Both endpoints log the connection's four secrets, the same lines on both sides. */
VTEST_CT(template_passes_the_hook_to_both_sides)
{
    struct creds k;
    creds_load(&k);
    struct klog kc = {.mu = PTHREAD_MUTEX_INITIALIZER}, ks = {.mu = PTHREAD_MUTEX_INITIALIZER};
    vega_quic_endpoint_opts so, co;
    server_template(&so, &k);
    so.quic.keylog = klog_cb;
    so.quic.keylog_user = &ks;
    vega_quic_endpoint_opts_init(&co);
    co.quic.tls.ca = k.ca;
    co.quic.tls.alpn[0] = "vega-test";
    co.quic.tls.n_alpn = 1;
    co.quic.keylog = klog_cb;
    co.quic.keylog_user = &kc;
    connect_pair(&so, &co, VEGA_QUIC_ENDPOINT_OPTS_VERSION);
    VCHECK_EQ(kc.n, 4);
    VCHECK_EQ(ks.n, 4);
    static const char *const labels[] = {"CLIENT_HANDSHAKE_TRAFFIC_SECRET ",
                                         "SERVER_HANDSHAKE_TRAFFIC_SECRET ",
                                         "CLIENT_TRAFFIC_SECRET_0 ", "SERVER_TRAFFIC_SECRET_0 "};
    for (size_t i = 0; i < 4; i++) {
        VCHECK(klog_has(&ks, kc.line[i]));
        bool labelled = false;
        for (size_t j = 0; j < 4; j++)
            labelled |= strncmp(kc.line[i], labels[j], strlen(labels[j])) == 0;
        VCHECK(labelled);
    }
    creds_free(&k);
}

VTEST(v1_layout_and_init)
{
    VCHECK_EQ(VEGA_QUIC_ENDPOINT_OPTS_VERSION, 5);
    /* layouts 2 and 3 moved every field after the template by the hooks' four pointers, 4 by
     * the pinned keys' pointer and count, 5 by the ID prefix (4 bytes, padded) and its length;
     * 3 appended qlog_dir and qlog_max_bytes */
    size_t prefix = offsetof(vega_quic_opts, scid_prefix_len) + sizeof(size_t) -
                    offsetof(vega_quic_opts, scid_prefix);
    VCHECK_EQ(offsetof(vega_quic_endpoint_opts, cb),
              offsetof(struct ep_opts_v1, cb) + 6 * sizeof(void *) + prefix);
    VCHECK_EQ(offsetof(vega_quic_endpoint_opts, qlog_dir),
              sizeof(struct ep_opts_v1) + 6 * sizeof(void *) + prefix);
    VCHECK_EQ(sizeof(vega_quic_endpoint_opts),
              sizeof(struct ep_opts_v1) + 7 * sizeof(void *) + sizeof(uint64_t) + prefix);
    /* (that its init writes nothing past it: the layout table, tests/unit/base/compat_test.c) */
    struct {
        struct ep_opts_v1 o;
    } a;
    memset(&a, 0xa5, sizeof a);
    vega_quic_endpoint_opts_init_versioned((vega_quic_endpoint_opts *)&a.o, 1);
    VCHECK(a.o.cb.on_conn == NULL && a.o.user == NULL && a.o.mem == NULL);
    VCHECK_EQ(a.o.max_conns, 0);
    vega_quic_opts q; /* the template's prefix holds the core's defaults */
    memcpy(&q, a.o.quic, sizeof a.o.quic);
    VCHECK_EQ(q.idle_timeout_ms, 30000);
    VCHECK_EQ(q.version, VEGA_QUIC_V1);
    vega_quic_endpoint *ep = NULL;
    VCHECK_EQ(vega_quic_endpoint_new_versioned(&ep, (vega_quic_endpoint_opts *)&a.o, 6), -EINVAL);
    VCHECK_EQ(vega_quic_endpoint_new_versioned(&ep, (vega_quic_endpoint_opts *)&a.o, 0), -EINVAL);
    VCHECK(ep == NULL);
}

/* A client endpoint of layout 1, with junk after the struct (0xff: a keylog pointer read from
 * there would crash), connects; the fields after the template are read from their v1 places
 * (a wrong max_handshakes of 0xff..ff would not matter, a wrong mem pointer would crash). */
VTEST_CT(v1_endpoint_connects)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_template(&so, &k);
    struct {
        struct ep_opts_v1 o;
        unsigned char junk[64];
    } a;
    memset(&a, 0xff, sizeof a);
    vega_quic_endpoint_opts_init_versioned((vega_quic_endpoint_opts *)&a.o, 1);
    vega_quic_opts q;
    memcpy(&q, a.o.quic, sizeof a.o.quic);
    q.tls.ca = k.ca;
    q.tls.alpn[0] = "vega-test";
    q.tls.n_alpn = 1;
    memcpy(a.o.quic, &q, sizeof a.o.quic);
    connect_pair(&so, &a.o, 1);
    creds_free(&k);
}

/* ---- qlog_dir ------------------------------------------------------------------------------- */

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

static size_t read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    VCHECK(f != NULL);
    size_t n = f ? fread(buf, 1, cap, f) : 0;
    if (f)
        fclose(f);
    return n;
}

static bool mem_has(const char *b, size_t n, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 0; i + l <= n; i++)
        if (memcmp(b + i, s, l) == 0)
            return true;
    return false;
}

/* Each side writes <ODCID>_<role>.sqlog into its qlog_dir, both named by the same ODCID; a
 * trace cut at qlog_max_bytes stays within it and ends with the record that says so. */
VTEST_CT(qlog_dir_writes_one_trace_per_side)
{
    struct creds k;
    creds_load(&k);
    char sdir[] = "/tmp/vega-qlog-s-XXXXXX", cdir[] = "/tmp/vega-qlog-c-XXXXXX";
    VCHECK(mkdtemp(sdir) != NULL);
    VCHECK(mkdtemp(cdir) != NULL);
    vega_quic_endpoint_opts so, co;
    server_template(&so, &k);
    so.qlog_dir = sdir;
    vega_quic_endpoint_opts_init(&co);
    co.quic.tls.ca = k.ca;
    co.quic.tls.alpn[0] = "vega-test";
    co.quic.tls.n_alpn = 1;
    co.qlog_dir = cdir;
    co.qlog_max_bytes = 4096;
    connect_pair(&so, &co, VEGA_QUIC_ENDPOINT_OPTS_VERSION);
    static char names[2][512];
    const char *dirs[2] = {sdir, cdir}, *suffix[2] = {"_server.sqlog", "_client.sqlog"};
    for (int i = 0; i < 2; i++) {
        DIR *d = opendir(dirs[i]);
        VCHECK(d != NULL);
        size_t files = 0;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            files++;
            snprintf(names[i], sizeof names[i], "%s", e->d_name);
        }
        if (d)
            closedir(d);
        VCHECK_EQ(files, 1);
        size_t l = strlen(names[i]);
        VCHECK(l == 16 + strlen(suffix[i])); /* an 8-byte ODCID in hex */
        VCHECK_STR(names[i] + 16, suffix[i]);
    }
    VCHECK(strncmp(names[0], names[1], 16) == 0);
    static char buf[1 << 20];
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", sdir, names[0]);
    size_t n = read_file(path, buf, sizeof buf);
    VCHECK(n > 1000 && buf[0] == 0x1e && buf[n - 1] == '\n');
    VCHECK(mem_has(buf, n, "\"qlog_format\":\"JSON-SEQ\""));
    VCHECK(mem_has(buf, n, "\"type\":\"server\""));
    VCHECK(mem_has(buf, n, "\"name\":\"transport:packet_received\""));
    VCHECK(mem_has(buf, n, "\"name\":\"transport:packet_sent\""));
    VCHECK(!mem_has(buf, n, "loglevel:warning"));
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", cdir, names[1]);
    n = read_file(path, buf, sizeof buf);
    VCHECK(n > 0 && n <= 4096 && buf[0] == 0x1e && buf[n - 1] == '\n');
    VCHECK(mem_has(buf, n, "\"type\":\"client\""));
    /* the last record is the cut */
    size_t last = n - 1;
    while (last > 0 && buf[last] != 0x1e)
        last--;
    VCHECK(mem_has(buf + last, n - last, "\"name\":\"loglevel:warning\""));
    VCHECK(mem_has(buf + last, n - last, "4096 bytes"));
    unlink(path);
    rmdir(sdir);
    rmdir(cdir);
    creds_free(&k);
}

/* A client endpoint of layout 3, junk after it (0xff: a pin count read from there is refused, a
 * pins pointer crashes), connects: its qlog fields come from their v3 places, and it pins
 * nothing. */
VTEST_CT(v3_endpoint_connects)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_template(&so, &k);
    struct {
        struct ep_opts_v3 o;
        unsigned char junk[64];
    } a;
    memset(&a, 0xff, sizeof a);
    vega_quic_endpoint_opts_init_versioned((vega_quic_endpoint_opts *)&a.o, 3);
    VCHECK(a.o.qlog_dir == NULL && a.o.qlog_max_bytes == 0 && a.o.mem == NULL);
    vega_quic_opts q;
    memcpy(&q, a.o.quic, sizeof a.o.quic);
    q.tls.ca = k.ca;
    q.tls.alpn[0] = "vega-test";
    q.tls.n_alpn = 1;
    memcpy(a.o.quic, &q, sizeof a.o.quic);
    connect_pair(&so, &a.o, 3);
    creds_free(&k);
}

/* A client endpoint of layout 4, junk after it (0xff: a prefix length read from there is
 * refused), connects: its qlog fields come from their v4 places. */
VTEST_CT(v4_endpoint_connects)
{
    struct creds k;
    creds_load(&k);
    vega_quic_endpoint_opts so;
    server_template(&so, &k);
    struct {
        struct ep_opts_v4 o;
        unsigned char junk[64];
    } a;
    memset(&a, 0xff, sizeof a);
    vega_quic_endpoint_opts_init_versioned((vega_quic_endpoint_opts *)&a.o, 4);
    VCHECK(a.o.qlog_dir == NULL && a.o.qlog_max_bytes == 0 && a.o.mem == NULL);
    vega_quic_opts q;
    memcpy(&q, a.o.quic, sizeof a.o.quic);
    q.tls.ca = k.ca;
    q.tls.alpn[0] = "vega-test";
    q.tls.n_alpn = 1;
    memcpy(a.o.quic, &q, sizeof a.o.quic);
    connect_pair(&so, &a.o, 4);
    creds_free(&k);
}
