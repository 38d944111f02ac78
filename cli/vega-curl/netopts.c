/* SPDX-License-Identifier: MIT */
/* curl's TLS knobs over libvega's TLS configuration: --tlsv1.x (the lowest version),
 * --tls-max, --ciphers (TLS 1.2, OpenSSL syntax), --curves (key-exchange groups) and
 * --pinnedpubkey (sha256//BASE64 list or a PEM/DER public key file; exit 90 on a mismatch);
 * and its name resolution knobs over the HTTP client's: --dns-servers (libvega's own resolver
 * asks them) and --happy-eyeballs-timeout-ms. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vega/base64.h>
#include <vega/crypto.h>
#include <vega/dns.h>

#include "curl.h"

#define PIN_FILE_MAX (1024 * 1024) /* curl's MAX_PINNED_PUBKEY_SIZE: a larger file matches none */
#define PIN_LEN      32            /* SHA-256 */

/* --dns-servers ADDR[:PORT][,ADDR[:PORT]...] (IPv6 as [ADDR]:PORT or a bare ADDR), c-ares's
 * syntax as curl takes it; port 53 unless given. Exits 2 on a bad list. */
static void dns_servers(struct curl_opts *o, const char *arg)
{
    o->ndns_servers = 0;
    const char *p = arg;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[VEGA_ADDR_STRLEN];
        if (!len || len + 1 > sizeof(one))
            cli_usage_error("option --dns-servers: '%s' is not a list of IP addresses", arg);
        memcpy(one, p, len);
        one[len] = 0;
        vega_addr a;
        /* "1.2.3.4:53", "[::1]:53"; else a bare address with port 53 */
        if (vega_addr_parse(&a, one, NULL) < 0 && vega_addr_parse(&a, "53", one) < 0)
            cli_usage_error("option --dns-servers: '%s' is not an IP address", one);
        if (a.ss.ss_family != AF_INET && a.ss.ss_family != AF_INET6)
            cli_usage_error("option --dns-servers: '%s' is not an IP address", one);
        if (o->ndns_servers + 1 > VEGA_DNS_MAX_NAMESERVERS)
            cli_usage_error("option --dns-servers: more than %d servers", VEGA_DNS_MAX_NAMESERVERS);
        o->dns_servers[o->ndns_servers++] = a;
        if (!comma)
            break;
        p = comma + 1;
    }
}

void curl_tls_option(struct curl_opts *o, int c, const char *arg)
{
    switch (c) {
    case '1': /* --tlsv1: TLS 1.0 or later, as curl 7.88 reads it */
    case CURL_OPT_TLSV10:
        o->tls_min = 0x0301;
        break;
    case CURL_OPT_TLSV11:
        o->tls_min = 0x0302;
        break;
    case CURL_OPT_TLSV12:
        o->tls_min = VEGA_TLS_1_2;
        break;
    case CURL_OPT_TLSV13:
        o->tls_min = VEGA_TLS_1_3;
        break;
    case '2':
    case '3': /* curl 7.88 warns and goes on with its defaults */
        if (!o->silent)
            cli_err(NULL, "Warning: Ignores instruction to use SSLv%c", c);
        break;
    case CURL_OPT_TLS_MAX:
        if (!strcmp(arg, "default"))
            o->tls_max = 0;
        else if (!strcmp(arg, "1.0"))
            o->tls_max = 0x0301;
        else if (!strcmp(arg, "1.1"))
            o->tls_max = 0x0302;
        else if (!strcmp(arg, "1.2"))
            o->tls_max = VEGA_TLS_1_2;
        else if (!strcmp(arg, "1.3"))
            o->tls_max = VEGA_TLS_1_3;
        else
            cli_usage_error("option --tls-max: is badly used here");
        break;
    case CURL_OPT_CIPHERS:
        o->ciphers = arg;
        break;
    case CURL_OPT_CURVES:
        o->curves = arg;
        break;
    case CURL_OPT_PINNEDPUBKEY:
        o->pinnedpubkey = arg;
        break;
    case CURL_OPT_BASIC: /* the last of the three wins, as in curl */
        o->authmode = CURL_AUTH_BASIC;
        break;
    case CURL_OPT_DIGEST:
        o->authmode = CURL_AUTH_DIGEST;
        break;
    case CURL_OPT_ANYAUTH:
        o->authmode = CURL_AUTH_ANY;
        break;
    case CURL_OPT_DNS_SERVERS:
        dns_servers(o, arg);
        break;
    case CURL_OPT_HAPPY_EYEBALLS: {
        /* curl: a whole number of milliseconds, 0 or more (libvega's floor is 10 ms) */
        char *end;
        errno = 0;
        long long v = strtoll(arg, &end, 10);
        if (end == arg || *end)
            cli_usage_error("option --happy-eyeballs-timeout-ms: expected a proper numerical "
                            "parameter");
        if (v < 0)
            cli_usage_error("option --happy-eyeballs-timeout-ms: expected a positive numerical "
                            "parameter");
        o->happy_eyeballs_ms = errno == ERANGE || v > UINT_MAX ? UINT_MAX : (unsigned)v;
        if (!o->happy_eyeballs_ms)
            o->happy_eyeballs_ms = 10; /* "at once": libvega's smallest delay */
        break;
    }
    default:
        break;
    }
}

/* Standard base64 with its '=' padding (skip_space: CR, LF, blanks anywhere, as PEM has) into
 * out (cap bytes). Returns the length, or -1 when it is not base64 or does not fit. */
static long b64_decode(const char *s, size_t n, bool skip_space, unsigned char *out, size_t cap)
{
    vega_ssize r = vega_base64_decode(s, n, out, cap, skip_space ? VEGA_BASE64_SPACE : 0);
    return r < 0 ? -1 : (long)r;
}

/* Adds the SHA-256 of der to pins (room for cap). */
static void pin_add(unsigned char (*pins)[PIN_LEN], size_t *n, size_t cap, const void *der,
                    size_t len)
{
    if (*n + 1 <= cap && vega_crypto_hash_digest(VEGA_CRYPTO_SHA256, der, len, pins[*n]) == 0)
        (*n)++;
}

/* The PEM "PUBLIC KEY" block of text, decoded into out. Returns its length or -1. */
static long pem_pubkey(const char *text, size_t len, unsigned char *out, size_t cap)
{
    static const char begin[] = "-----BEGIN PUBLIC KEY-----", end[] = "-----END PUBLIC KEY-----";
    const char *b = memmem(text, len, begin, sizeof(begin) - 1);
    if (!b)
        return -1;
    b += sizeof(begin) - 1;
    const char *e = memmem(b, len - (size_t)(b - text), end, sizeof(end) - 1);
    if (!e)
        return -1;
    return b64_decode(b, (size_t)(e - b), true, out, cap);
}

/* The digests --pinnedpubkey accepts; n may stay 0 (nothing valid: no key matches). */
static void pins_parse(const char *spec, unsigned char (*pins)[PIN_LEN], size_t *n, size_t cap)
{
    *n = 0;
    if (!strncmp(spec, "sha256//", 8)) {
        /* sha256//B64[;sha256//B64...], curl's split on ";sha256//" */
        const char *p = spec;
        while (p) {
            p += 8;
            const char *next = strstr(p, ";sha256//");
            size_t len = next ? (size_t)(next - p) : strlen(p);
            unsigned char d[PIN_LEN + 3];
            if (b64_decode(p, len, false, d, sizeof(d)) == PIN_LEN && *n + 1 <= cap)
                memcpy(pins[(*n)++], d, PIN_LEN);
            p = next ? next + 1 : NULL;
        }
        return;
    }
    /* a file: the public key in DER, or in PEM (curl compares either with the server's) */
    int fd = open(spec, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_size <= PIN_FILE_MAX && (buf = malloc((size_t)st.st_size))) {
        size_t len = (size_t)st.st_size, got = 0;
        while (got < len) {
            ssize_t r = read(fd, buf + got, len - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got == len) {
            pin_add(pins, n, cap, buf, len);
            unsigned char *der = malloc(len);
            long dl = der ? pem_pubkey(buf, len, der, len) : -1;
            if (dl > 0)
                pin_add(pins, n, cap, der, (size_t)dl);
            free(der);
        }
    }
    free(buf);
    close(fd);
}

static bool any_tls_url(const struct curl_opts *o)
{
    for (size_t i = 0; i < o->nurls; i++)
        if (!strncasecmp(o->urls[i], "https://", 8) || !strncasecmp(o->urls[i], "wss://", 6))
            return true;
    return false;
}

int curl_tls_apply(const struct curl_opts *o, vega_tls_config *cfg)
{
    /* libvega speaks TLS 1.2 and 1.3: a lower minimum is the same as 1.2 */
    int lo = o->tls_min > VEGA_TLS_1_2 ? o->tls_min : 0, hi = o->tls_max;
    if (any_tls_url(o)) {
        if (o->tls_min && hi && o->tls_min > hi)
            return curl_fail(o, CE_SSL_CONNECT_ERROR,
                             "CURL_SSLVERSION_MAX incompatible with CURL_SSLVERSION");
        if (hi && hi < VEGA_TLS_1_2)
            return curl_fail(o, CE_SSL_CONNECT_ERROR,
                             "--tls-max 1.%d: TLS 1.1 and older are not supported (libvega "
                             "speaks TLS 1.2 and 1.3)",
                             hi - 0x0301);
    }
    if ((lo || hi >= VEGA_TLS_1_2) &&
        vega_tls_config_set_versions(cfg, lo, hi >= VEGA_TLS_1_2 ? hi : 0) < 0 && any_tls_url(o))
        return curl_fail(o, CE_SSL_CONNECT_ERROR,
                         "CURL_SSLVERSION_MAX incompatible with CURL_SSLVERSION");
    if (o->ciphers && vega_tls_config_set_ciphers(cfg, o->ciphers, NULL) < 0)
        return curl_fail(o, CE_SSL_CIPHER, "failed setting cipher list: %s", o->ciphers);
    if (o->curves && vega_tls_config_set_groups(cfg, o->curves) < 0)
        return curl_fail(o, CE_SSL_CIPHER, "failed setting curves list: '%s'", o->curves);
    if (o->pinnedpubkey) {
        unsigned char pins[VEGA_TLS_MAX_PINNED_KEYS][PIN_LEN];
        size_t n;
        pins_parse(o->pinnedpubkey, pins, &n, VEGA_TLS_MAX_PINNED_KEYS);
        if (!n) {
            /* nothing that could match (curl then fails every handshake with 90): the all-zero
             * digest, which no key has short of a SHA-256 preimage */
            memset(pins[0], 0, PIN_LEN);
            n = 1;
        }
        int r = vega_tls_config_set_pinned_keys(cfg, pins[0], n);
        if (r < 0)
            return curl_fail(o, CE_FAILED_INIT, "--pinnedpubkey: %s", vega_tls_strerror(r));
    }
    return 0;
}

void curl_net_apply(const struct curl_opts *o, vega_http_client_opts *co)
{
    co->dns_servers = o->ndns_servers ? o->dns_servers : NULL;
    co->dns_servers_len = o->ndns_servers;
    co->happy_eyeballs_delay_ms = o->happy_eyeballs_ms;
}
