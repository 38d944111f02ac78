/* SPDX-License-Identifier: MIT */
/* The WebSocket opening handshake's helpers (RFC 6455 §4) and permessage-deflate negotiation
 * (RFC 7692 §5, §7.1). */
#include <string.h>

#include "vtest.h"

#include <vega/ws.h>

VTEST(accept_rfc_example)
{
    /* §1.3: "dGhlIHNhbXBsZSBub25jZQ==" -> "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=". */
    char out[VEGA_WS_ACCEPT_LEN + 1];
    VCHECK_EQ(vega_ws_handshake_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, out), 0);
    VCHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    /* The nonce of that key is "the sample nonce". */
    char key[VEGA_WS_KEY_LEN + 1];
    vega_ws_handshake_key((const uint8_t *)"the sample nonce", key);
    VCHECK_STR(key, "dGhlIHNhbXBsZSBub25jZQ==");
    /* §4.2.1: a key that is not base64 of 16 bytes is refused. */
    static const char *bad[] = {
        "dGhlIHNhbXBsZSBub25jZQ=",  "dGhlIHNhbXBsZSBub25jZQ===", "dGhlIHNhbXBsZSBub25jZR==",
        "dGhlIHNhbXBsZSBub25j*Q==", "dGhlIHNhbXBsZSBub25jZQA=",  ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        VCHECK_EQ(vega_ws_handshake_accept(bad[i], strlen(bad[i]), out), -EINVAL);
}

VTEST(tokens_and_subprotocols)
{
    VCHECK(vega_ws_header_has_token("keep-alive, Upgrade", 19, "upgrade"));
    VCHECK(vega_ws_header_has_token("WebSocket", 9, "websocket"));
    VCHECK(!vega_ws_header_has_token("upgrades", 8, "upgrade"));
    VCHECK(!vega_ws_header_has_token("", 0, "upgrade"));
    const char *ours[] = {"chat.v2", "chat"};
    const char *offer = "chat, superchat ,chat.v2";
    VCHECK_EQ(vega_ws_select_subprotocol(offer, strlen(offer), ours, 2), 0);
    VCHECK_EQ(vega_ws_select_subprotocol("chat", 4, ours, 2), 1);
    VCHECK_EQ(vega_ws_select_subprotocol("Chat", 4, ours, 2), -1);
    VCHECK_EQ(vega_ws_select_subprotocol(NULL, 0, ours, 2), -1);
}

static vega_ssize accept_offer(const char *offer, const vega_ws_deflate_opts *pol,
                               vega_ws_deflate_params *p, char *out)
{
    return vega_ws_deflate_accept_offer(offer, strlen(offer), pol, p, out, 160);
}

VTEST(deflate_server_negotiation)
{
    vega_ws_deflate_opts pol = {.enabled = true};
    vega_ws_deflate_params p;
    char out[160];
    /* The common browser offer. */
    VCHECK(accept_offer("permessage-deflate; client_max_window_bits", &pol, &p, out) > 0);
    VCHECK_STR(out, "permessage-deflate");
    VCHECK(p.enabled && p.server_max_window_bits == 15 && p.client_max_window_bits == 15);
    /* All four parameters offered. */
    VCHECK(accept_offer("permessage-deflate; server_no_context_takeover; "
                        "client_no_context_takeover; server_max_window_bits=10; "
                        "client_max_window_bits=\"11\"",
                        &pol, &p, out) > 0);
    VCHECK_STR(out, "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; "
                    "client_max_window_bits=11");
    VCHECK(p.server_no_context_takeover && !p.client_no_context_takeover);
    VCHECK(p.server_max_window_bits == 10 && p.client_max_window_bits == 11);
    /* Our policy asks for more: client_max_window_bits only because the client offered it. */
    vega_ws_deflate_opts strict = {.enabled = true,
                                   .client_no_context_takeover = true,
                                   .server_max_window_bits = 12,
                                   .client_max_window_bits = 9};
    VCHECK(accept_offer("permessage-deflate; client_max_window_bits", &strict, &p, out) > 0);
    VCHECK_STR(out, "permessage-deflate; client_no_context_takeover; server_max_window_bits=12; "
                    "client_max_window_bits=9");
    VCHECK(p.client_no_context_takeover && p.server_max_window_bits == 12 &&
           p.client_max_window_bits == 9);
    VCHECK(accept_offer("permessage-deflate", &strict, &p, out) > 0);
    VCHECK_STR(out, "permessage-deflate; client_no_context_takeover; server_max_window_bits=12");
    /* Invalid offers are skipped; the next valid one is taken; unknown extensions ignored. */
    static const char *invalid[] = {
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; foo",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "x-webkit-deflate-frame",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        VCHECK_EQ(accept_offer(invalid[i], &pol, &p, out), 0);
        VCHECK(!p.enabled);
    }
    VCHECK(accept_offer("foo, permessage-deflate; server_max_window_bits=4, "
                        "permessage-deflate; server_max_window_bits=9",
                        &pol, &p, out) > 0);
    VCHECK_STR(out, "permessage-deflate; server_max_window_bits=9");
    /* Disabled, and too small an output. */
    vega_ws_deflate_opts off = {0};
    VCHECK_EQ(accept_offer("permessage-deflate", &off, &p, out), 0);
    VCHECK_EQ(vega_ws_deflate_accept_offer("permessage-deflate; server_max_window_bits=9", 44, &pol,
                                           &p, out, 20),
              VEGA_ERR_NOBUF);
    VCHECK(!p.enabled);
}

VTEST(deflate_client_negotiation)
{
    vega_ws_deflate_opts want = {.enabled = true};
    char offer[160];
    VCHECK_EQ(vega_ws_deflate_offer(&want, offer, sizeof offer), 42);
    VCHECK_STR(offer, "permessage-deflate; client_max_window_bits");
    vega_ws_deflate_opts all = {.enabled = true,
                                .server_no_context_takeover = true,
                                .client_no_context_takeover = true,
                                .server_max_window_bits = 10,
                                .client_max_window_bits = 12};
    VCHECK(vega_ws_deflate_offer(&all, offer, sizeof offer) > 0);
    VCHECK_STR(offer, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                      "server_max_window_bits=10; client_max_window_bits=12");
    VCHECK_EQ(vega_ws_deflate_offer(&all, offer, 20), VEGA_ERR_NOBUF);
    /* The server's answers. */
    vega_ws_deflate_params p;
    const char *r = "permessage-deflate; server_no_context_takeover; server_max_window_bits=9";
    VCHECK_EQ(vega_ws_deflate_check_response(r, strlen(r), &all, &p), 0);
    VCHECK(p.enabled && p.server_no_context_takeover && p.client_no_context_takeover);
    VCHECK(p.server_max_window_bits == 9 && p.client_max_window_bits == 12);
    r = "permessage-deflate; client_max_window_bits=10";
    VCHECK_EQ(vega_ws_deflate_check_response(r, strlen(r), &want, &p), 0);
    VCHECK(p.client_max_window_bits == 10 && p.server_max_window_bits == 15);
    VCHECK_EQ(vega_ws_deflate_check_response("", 0, &want, &p), 0);
    VCHECK(!p.enabled);
    static const char *bad_for_all[] = {
        "permessage-deflate; server_max_window_bits=9",   /* snct offered, missing */
        "permessage-deflate; server_no_context_takeover", /* smwb=10 offered, missing */
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=11",
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=9; "
        "client_max_window_bits=13",
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=9; "
        "client_max_window_bits",
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=9, "
        "permessage-deflate",
        "x-other",
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=9; mystery",
    };
    for (size_t i = 0; i < sizeof bad_for_all / sizeof *bad_for_all; i++)
        VCHECK_EQ(vega_ws_deflate_check_response(bad_for_all[i], strlen(bad_for_all[i]), &all, &p),
                  VEGA_ERR_PROTO);
    /* An extension in the response when none was offered. */
    vega_ws_deflate_opts none = {0};
    VCHECK_EQ(vega_ws_deflate_check_response("permessage-deflate", 18, &none, &p), VEGA_ERR_PROTO);
}
