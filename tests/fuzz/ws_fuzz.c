/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the WebSocket core (lib/ws). Byte 0 picks the role (bit 0), whether
 * permessage-deflate is on (bit 1) and its parameters (bits 2-5), small limits (bit 6), and how
 * the input is cut (bit 7: at the lengths the next bytes give). The rest is read as frames from
 * the peer. Checks: never a crash; a failure is sticky and has a close code the RFC allows to be
 * sent; text handed out is valid UTF-8 at each message's end; no message passes the size limit;
 * the queued output parses as frames of our role (masked for a client), the last a Close once
 * one was sent. Then the negotiation helpers read the same bytes as header values. */
#include <stdlib.h>
#include <string.h>

#include <vega/ws.h>

#define WSREC_CAP 65536u /* the fuzzer's messages are small: no megabyte per run */
#include "../unit/ws/wsrec.h"
#include "fuzz_target.h"

static bool utf8_ok(const uint8_t *p, size_t n)
{
    /* A plain reference decoder, independent of the core's. */
    size_t i = 0;
    while (i < n) {
        uint8_t b = p[i];
        size_t k;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if ((b & 0xe0) == 0xc0) {
            k = 1, cp = b & 0x1f;
        } else if ((b & 0xf0) == 0xe0) {
            k = 2, cp = b & 0x0f;
        } else if ((b & 0xf8) == 0xf0) {
            k = 3, cp = b & 0x07;
        } else {
            return false;
        }
        if (i + k >= n)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

/* Walks our output: whole frames of our role. */
static void check_output(vega_ws_conn *c, bool client)
{
    static uint8_t out[1 << 16];
    size_t n = 0;
    for (;;) {
        vega_ssize w = vega_ws_conn_write(c, out + n, sizeof out - n);
        if (w <= 0)
            break;
        n += (size_t)w;
        if (n == sizeof out)
            return; /* too much to walk here; the framing is tested elsewhere */
    }
    size_t at = 0;
    uint8_t last_op = 0;
    while (at < n) {
        if (at + 2 > n)
            abort();
        uint8_t b0 = out[at], b1 = out[at + 1];
        if (((b1 & 0x80) != 0) != client || (b0 & 0x30))
            abort();
        uint64_t len = b1 & 0x7f;
        size_t h = 2;
        if (len == 126) {
            len = (uint64_t)out[at + 2] << 8 | out[at + 3];
            h = 4;
        } else if (len == 127) {
            len = 0;
            for (size_t i = 0; i < 8; i++)
                len = len << 8 | out[at + 2 + i];
            h = 10;
        }
        h += client ? 4 : 0;
        if (len > n || at + h + len > n)
            abort();
        last_op = b0 & 0x0f;
        at += h + (size_t)len;
    }
    if (vega_ws_conn_is_close_sent(c) && n > 0 && last_op != 0x8)
        abort();
}

static void run(const uint8_t *d, size_t n, uint8_t ctl)
{
    bool client = ctl & 1;
    vega_ws_conn_opts o;
    vega_ws_conn_opts_init(&o);
    if (ctl & 2) {
        o.deflate.enabled = true;
        o.deflate.server_no_context_takeover = ctl & 4;
        o.deflate.client_no_context_takeover = ctl & 8;
        o.deflate.server_max_window_bits = ctl & 16 ? 8 : 15;
        o.deflate.client_max_window_bits = ctl & 32 ? 9 : 15;
    }
    if (ctl & 64) {
        o.max_frame_size = 300;
        o.max_message_size = 1000;
        o.max_send_queue = 2000;
    }
    struct wsrec r;
    wsrec_init(&r);
    vega_ws_conn *c = wsrec_conn(client ? VEGA_WS_CLIENT : VEGA_WS_SERVER, &r, &o);
    int sticky = 0;
    size_t at = 0;
    while (at < n) {
        size_t len = n - at;
        if (ctl & 128) {
            len = (size_t)d[at++] + 1;
            len = len < n - at ? len : n - at;
        }
        int rc = vega_ws_conn_read(c, d + at, len);
        at += len;
        if (sticky && rc != sticky)
            abort();
        if (rc && rc != VEGA_ERR_PROTO)
            abort();
        if (rc) {
            sticky = rc;
            vega_ws_error e;
            vega_ws_conn_get_error(c, &e);
            if (!vega_ws_close_code_is_valid(e.code) || !e.reason)
                abort();
        }
        if (r.nmsg && r.last_type == VEGA_WS_TEXT && r.last_len <= WSREC_CAP &&
            !utf8_ok(r.last, r.last_len))
            abort();
        if (r.last_len > o.max_message_size || r.cur_len > o.max_message_size)
            abort();
        /* Something of ours between reads: echo what arrived, as an echo server would. */
        if (r.nmsg && !vega_ws_conn_is_close_sent(c) && r.last_len <= WSREC_CAP)
            (void)vega_ws_submit_message(c, r.last_type, r.last, r.last_len);
        check_output(c, client);
    }
    vega_ws_conn_free(c);
    wsrec_fini(&r);
}

static void negotiate(const uint8_t *d, size_t n)
{
    const char *s = (const char *)d;
    vega_ws_deflate_opts pol = {.enabled = true, .client_max_window_bits = 10};
    vega_ws_deflate_params p;
    char out[160];
    vega_ssize k = vega_ws_deflate_accept_offer(s, n, &pol, &p, out, sizeof out);
    if (k < 0 || (k > 0) != p.enabled || (size_t)k >= sizeof out || strlen(out) != (size_t)k)
        abort();
    if (k > 0) {
        /* What we answer must pass our own client's check (it offered what was accepted). */
        if (p.server_max_window_bits < 8 || p.server_max_window_bits > 15)
            abort();
    }
    vega_ws_deflate_opts want = {.enabled = true};
    (void)vega_ws_deflate_check_response(s, n, &want, &p);
    const char *ours[] = {"a", "chat"};
    int i = vega_ws_select_subprotocol(s, n, ours, 2);
    if (i < -1 || i > 1)
        abort();
    char acc[VEGA_WS_ACCEPT_LEN + 1];
    (void)vega_ws_handshake_accept(s, n, acc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    run(data + 1, size - 1, data[0]);
    negotiate(data + 1, size - 1);
    return 0;
}
