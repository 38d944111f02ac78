/* SPDX-License-Identifier: MIT */
/* The names replaced by the API rules (docs/ARCHITECTURE.md, "API migration") still compile
 * and still mean what they meant, until 1.0. */
#include <string.h>

#include <vega/compress.h>
#include <vega/dns.h>
#include <vega/err.h>
#include <vega/http.h>
#include <vega/quic.h>
#include <vega/rt.h>
#include <vega/tls.h>

#include "vtest.h"

VTEST(old_error_names_are_the_new_values)
{
    VCHECK_EQ(VEGA_ERR_INVALID_ARG, -EINVAL);
    VCHECK_EQ(VEGA_TLS_ERR_HANDSHAKE, VEGA_ERR_TLS_HANDSHAKE);
    VCHECK_EQ(VEGA_HTTP_ERR_URL, VEGA_ERR_HTTP_URL);
    VCHECK(strcmp(vega_err_name(-EINVAL), "EINVAL") == 0);
}

VTEST(old_option_names_are_the_new_types)
{
    vega_rt_options r;
    vega_rt_options_init(&r);
    vega_rt_opts r2;
    vega_rt_opts_init(&r2);
    VCHECK(memcmp(&r, &r2, sizeof r) == 0);

    vega_dns_options d;
    vega_dns_options_init(&d);
    vega_tcp_connect_options t;
    vega_tcp_connect_options_init(&t);

    vega_quic_config q;
    vega_quic_config_init(&q);
    vega_quic_opts q2;
    vega_quic_opts_init(&q2);
    VCHECK_EQ(q.idle_timeout_ms, q2.idle_timeout_ms);
    vega_quic_tls_config *tls = &q.tls;
    (void)tls;

    vega_spawn_options s = {.name = "old"};
    vega_spawn_opts s2;
    vega_spawn_opts_init(&s2);
    VCHECK(s2.name == NULL && s2.deadline == VEGA_DEADLINE_NEVER);
    (void)s;
}

/* Versioned options (docs/ARCHITECTURE.md, API rules: ABI): the macros pass the layout the
 * caller was built with; a layout this library does not know is refused, never misread. */
VTEST(options_of_an_unknown_layout_are_refused)
{
    VCHECK_EQ(VEGA_RT_OPTS_VERSION, 1);
    /* 2 appended the key log, 3 qlog, 4 the pinned keys, 5 the ID prefix
     * (tests/unit/quic/abi_test.c) */
    VCHECK_EQ(VEGA_QUIC_OPTS_VERSION, 5);
    vega_rt *rt = NULL;
    VCHECK_EQ(vega_rt_new_versioned(&rt, NULL, VEGA_RT_OPTS_VERSION + 1), -EINVAL);
    VCHECK(rt == NULL);
    vega_compressor *z = NULL;
    VCHECK_EQ(vega_compressor_new_versioned(&z, VEGA_COMPRESS_GZIP, 1, NULL, 0), -EINVAL);
    vega_dns_resolver *r = NULL;
    VCHECK_EQ(vega_dns_resolver_new_versioned(&r, NULL, 7), -EINVAL);
    /* The current layout through the macro works as before. */
    VCHECK_EQ(vega_compressor_new(&z, VEGA_COMPRESS_GZIP, 1, NULL), 0);
    vega_compressor_free(z);
}
