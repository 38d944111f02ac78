/* SPDX-License-Identifier: MIT */
/* The TLS 1.3 cipher suites QUIC offers (RFC 9001 §5.3), by the names --tls13-ciphers and
 * --tls-ciphers take. */
#include <errno.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    uint16_t id;
} known[CLI_QUIC_SUITES] = {
    {"TLS_AES_128_GCM_SHA256", VEGA_QUIC_TLS_AES_128_GCM_SHA256},
    {"TLS_AES_256_GCM_SHA384", VEGA_QUIC_TLS_AES_256_GCM_SHA384},
    {"TLS_CHACHA20_POLY1305_SHA256", VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256},
};

int cli_quic_suites(const char *list, uint16_t suites[CLI_QUIC_SUITES], size_t *n,
                    cli_quic_bad_suite *bad)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":,");
        size_t k = 0;
        while (k < CLI_QUIC_SUITES &&
               (strlen(known[k].name) != len || strncmp(known[k].name, p, len) != 0))
            k++;
        if (k == CLI_QUIC_SUITES || *n + 1 > CLI_QUIC_SUITES) {
            if (bad)
                *bad = (cli_quic_bad_suite){p, (int)len};
            return -EINVAL;
        }
        suites[(*n)++] = known[k].id;
        p += len;
        p += *p != 0;
    }
    return 0;
}
