/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP client's text parsers: Alt-Svc field values (RFC 7838 §3), curl's
 * alt-svc cache file, and the QUIC session file (lib/http_client/h3_altsvc.c, h3_session.c).
 *
 * Input: byte 0 picks the parser (0: a field value for origin "o.example":443, 1: an alt-svc
 * file, 2: a session file) and byte 1 the port of a lookup; the rest is the text. Checks: no
 * crash or leak; the codes are those the contracts list; what a cache saves loads back into an
 * empty client as the same number of entries and saves again to the same length; a lookup
 * answers 0 (with a host that is a C string) or -ENOENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http_client.h>
#include <vega/tls.h>

#include "fuzz_target.h"

_Noreturn static void fail(const char *why, long code)
{
    fprintf(stderr, "altsvc_fuzz: %s (%ld)\n", why, code);
    abort();
}

/* A client without the default TLS config each time (its CA store is slow to load). */
static vega_http_client *client(void)
{
    static vega_tls_config *tls;
    if (!tls && vega_tls_config_new(&tls, VEGA_TLS_CLIENT) < 0)
        abort();
    vega_http_client_opts o;
    vega_http_client_opts_init(&o);
    o.tls = tls;
    vega_http_client *c;
    if (vega_http_client_new(&c, &o) < 0)
        abort();
    return c;
}

static size_t lines(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n';
    return k;
}

/* Saves c, loads it into a fresh client, saves again: the same entries. */
static void round_trip(vega_http_client *c, bool sessions)
{
    vega_ssize n = sessions ? vega_http_client_sessions_save(c, NULL, 0)
                            : vega_http_client_altsvc_save(c, NULL, 0);
    if (n <= 0)
        fail("save length", n);
    char *a = malloc((size_t)n), *b = malloc((size_t)n);
    if (!a || !b)
        abort();
    vega_ssize m = sessions ? vega_http_client_sessions_save(c, a, (size_t)n)
                            : vega_http_client_altsvc_save(c, a, (size_t)n);
    if (m != n)
        fail("save", m);
    if (n > 1 && (sessions ? vega_http_client_sessions_save(c, b, (size_t)n - 1)
                           : vega_http_client_altsvc_save(c, b, (size_t)n - 1)) != VEGA_ERR_NOBUF)
        fail("a short buffer is not NOBUF", 0);
    vega_http_client *c2 = client();
    int k = sessions ? vega_http_client_sessions_load(c2, a, (size_t)n)
                     : vega_http_client_altsvc_load(c2, a, (size_t)n);
    if (k < 0 || (size_t)k != lines(a, (size_t)n) - 1)
        fail("what was saved does not load back whole", k);
    vega_ssize n2 = sessions ? vega_http_client_sessions_save(c2, b, (size_t)n)
                             : vega_http_client_altsvc_save(c2, b, (size_t)n);
    if (n2 != n)
        fail("the second save differs in length", n2);
    vega_http_client_free(c2);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int mode = data[0] % 3;
    uint16_t port = data[1] ? (uint16_t)(data[1] * 7) : 443;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    vega_http_client *c = client();
    int rc;
    if (mode == 0) {
        rc = vega_http_client_altsvc_add(c, "o.example", 443, text, len);
        if ((rc < 0 && rc != -EINVAL && rc != -ENOMEM) || rc > 8)
            fail("altsvc_add", rc);
    } else if (mode == 1) {
        rc = vega_http_client_altsvc_load(c, text, len);
        if (rc < 0 && rc != -ENOMEM)
            fail("altsvc_load", rc);
    } else {
        rc = vega_http_client_sessions_load(c, text, len);
        if (rc < 0 && rc != -EINVAL && rc != -ENOMEM)
            fail("sessions_load", rc);
    }
    char host[300];
    uint16_t p = 0;
    int lr = vega_http_client_altsvc_lookup(c, "o.example", port, "h3", host, sizeof host, &p);
    if (lr == 0 && (strlen(host) == 0 || p == 0))
        fail("a lookup without a host or port", lr);
    if (lr != 0 && lr != -ENOENT)
        fail("altsvc_lookup", lr);
    round_trip(c, mode == 2);
    vega_http_client_free(c);
    return 0;
}
