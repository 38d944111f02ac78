/* SPDX-License-Identifier: MIT */
/* vega-echo over TLS: the configuration from the options (a self-signed certificate when the
 * server is given none; verification on for clients unless -k), and what the tools log about a
 * TLS connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"

/* "h2,http/1.1" -> ALPN list. Returns 0 or a negative code. */
static int set_alpn(vega_tls_config *cfg, const char *list)
{
    char *copy = strdup(list);
    const char *protos[16];
    size_t n = 0;
    if (!copy)
        return -ENOMEM;
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p && n < 16;
         p = strtok_r(NULL, ",", &save))
        protos[n++] = p;
    int r = n ? vega_tls_config_set_alpn(cfg, protos, n) : -EINVAL;
    free(copy);
    return r;
}

static const char *ktls_name(vega_tls_ktls_mode m)
{
    return m == VEGA_TLS_KTLS_TX ? "tx" : m == VEGA_TLS_KTLS_TXRX ? "tx+rx" : "off";
}

int echo_tls_config(const struct echo_opts *o, vega_tls_config **out)
{
    vega_tls_config *cfg;
    int r = vega_tls_config_new(&cfg, o->listen ? VEGA_TLS_SERVER : VEGA_TLS_CLIENT);
    if (r < 0) {
        cli_err_code("TLS", r);
        return CLI_EXIT_NET;
    }
    const char *what = "TLS";
    if (o->cert) {
        what = o->cert;
        r = vega_tls_config_set_cert_files(cfg, o->cert, o->key);
    } else if (o->listen) {
        what = "self-signed certificate";
        r = vega_tls_config_use_selfsigned(cfg);
    }
    if (r == 0 && o->cacert) {
        what = o->cacert;
        r = vega_tls_config_set_ca_file(cfg, o->cacert);
    }
    if (r == 0 && o->listen && o->verify_client)
        r = vega_tls_config_set_verify(cfg, VEGA_TLS_VERIFY_REQUIRE);
    if (r == 0 && !o->listen && o->insecure)
        r = vega_tls_config_set_verify(cfg, VEGA_TLS_VERIFY_NONE);
    if (r == 0 && o->alpn) {
        what = "--alpn";
        r = set_alpn(cfg, o->alpn);
    }
    if (r == 0)
        r = vega_tls_config_set_ktls(cfg, o->ktls);
    const char *keylog = getenv("SSLKEYLOGFILE");
    if (r == 0 && keylog && *keylog) {
        what = keylog;
        r = vega_tls_config_set_keylog_file(cfg, keylog);
    }
    if (r < 0) {
        if (r == VEGA_ERR_TLS_CONFIG)
            cli_err(what, "not a usable PEM certificate, key or CA (or the key does not match "
                          "the certificate)");
        else
            cli_err(what, "%s", vega_tls_strerror(r));
        vega_tls_config_free(cfg);
        return CLI_EXIT_NET;
    }
    *out = cfg;
    return 0;
}

const char *echo_tls_strerror(vega_stream *tls, int err)
{
    if (tls && err <= VEGA_ERR_TLS_BASE && err > VEGA_ERR_TLS_LAST) {
        const char *m = vega_tls_last_error(tls);
        if (m && *m)
            return m;
    }
    return vega_tls_strerror(err);
}

void echo_tls_describe(vega_stream *tls, const char *who, const struct echo_opts *o)
{
    if (cli_verbose < 1)
        return;
    char subj[256] = "";
    vega_ssize n = vega_tls_peer_subject(tls, subj, sizeof(subj));
    const char *alpn = vega_tls_get_alpn(tls), *sni = vega_tls_get_server_name(tls);
    vega_tls_ktls_info k;
    vega_tls_ktls_status(tls, &k);
    char ktls[240];
    if (o->ktls == VEGA_TLS_KTLS_OFF)
        snprintf(ktls, sizeof(ktls), "off");
    else if (k.tx || k.rx || k.rx_pending)
        snprintf(ktls, sizeof(ktls), "%s%s%s", k.tx ? "tx" : "", k.rx ? (k.tx ? "+rx" : "rx") : "",
                 k.rx_pending ? " (rx at the next record)" : "");
    else
        snprintf(ktls, sizeof(ktls), "not offloaded (%s asked: %s)", ktls_name(o->ktls), k.reason);
    cli_log(1, "%s: %s %s, ALPN %s, SNI %s, %s, peer certificate %s, kTLS %s", who,
            vega_tls_get_version(tls), vega_tls_get_cipher(tls), alpn ? alpn : "none",
            sni ? sni : "none", vega_tls_session_reused(tls) ? "resumed" : "full handshake",
            n > 0 ? subj : "none", ktls);
}
