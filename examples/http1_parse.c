/* SPDX-License-Identifier: MIT */
/* http1_parse: the sans-I/O HTTP/1.1 core on its own, with no runtime, socket or allocation.
 * Two pipelined requests are fed to a vega_http1_parser a few bytes at a time, as a socket
 * might deliver them, and its callbacks print what it sees; then a malformed request shows
 * how an error is reported. Uses only the installed headers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vega/http1.h>

/* Two requests in one buffer: a POST with a chunked body, then a GET. */
static const char input[] = "POST /submit?lang=c HTTP/1.1\r\n"
                            "Host: example.com\r\n"
                            "Content-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n"
                            "\r\n"
                            "7\r\n{\"a\":1}\r\n"
                            "0\r\n\r\n"
                            "GET /next HTTP/1.1\r\n"
                            "Host: example.com\r\n"
                            "\r\n";

/* A field name with a space before the colon: RFC 9112 §5.1 says reject it. */
static const char bad[] = "GET / HTTP/1.1\r\nHost : example.com\r\n\r\n";

/* The callbacks get spans (pointer + length) that are valid only during the call: copy what
 * you keep. Returning nonzero stops the parse with VEGA_ERR_CALLBACK. */
static int on_request_line(void *ud, vega_http1_span method, vega_http1_span target, int version)
{
    (void)ud;
    printf("request: %.*s %.*s HTTP/%d.%d\n", (int)method.len, method.ptr, (int)target.len,
           target.ptr, version / 10, version % 10);
    return 0;
}

static int on_header(void *ud, vega_http1_span name, vega_http1_span value)
{
    (void)ud;
    printf("  field: %.*s = %.*s\n", (int)name.len, name.ptr, (int)value.len, value.ptr);
    return 0;
}

static int on_headers_complete(void *ud, const vega_http1_head *h)
{
    (void)ud;
    static const char *framing[] = {"none", "Content-Length", "chunked", "until close"};
    printf("  head complete: body %s, keep-alive %s\n", framing[h->framing],
           h->keep_alive ? "yes" : "no");
    return 0;
}

static int on_body(void *ud, vega_http1_span data)
{
    (void)ud;
    /* De-chunked body bytes, as they arrive: here 5 bytes of input at a time. */
    printf("  body piece: %.*s (%zu bytes)\n", (int)data.len, data.ptr, data.len);
    return 0;
}

static int on_message_complete(void *ud)
{
    (*(int *)ud)++; /* user_data: here, a message counter */
    printf("  message complete\n");
    return 0;
}

static const vega_http1_callbacks callbacks = {
    .on_request_line = on_request_line,
    .on_header = on_header,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

int main(void)
{
    /* The parser is a plain struct on caller storage (it holds a 16 KiB line buffer, for lines
     * that straddle two reads): static here, or inside your connection object. */
    static vega_http1_parser p;
    int messages = 0;
    if (vega_http1_parser_init(&p, VEGA_HTTP1_REQUEST, NULL, &callbacks, &messages) < 0)
        return 1;
    /* Feed 5 bytes at a time: the parser keeps its place between calls. */
    size_t len = sizeof(input) - 1;
    for (size_t off = 0; off < len; off += 5) {
        size_t n = len - off < 5 ? len - off : 5, used;
        int rc = vega_http1_parser_read(&p, (const uint8_t *)input + off, n, &used);
        if (rc < 0) {
            printf("parse error: %s\n", vega_http1_error_name(vega_http1_parser_get_error(&p)));
            return 1;
        }
    }
    if (vega_http1_parser_finish(&p) < 0) /* end of stream: fine between messages */
        return 1;

    /* A malformed request: read fails with VEGA_ERR_PROTO and says why and where. */
    static vega_http1_parser q;
    vega_http1_parser_init(&q, VEGA_HTTP1_REQUEST, NULL, &callbacks, &messages);
    size_t used = 0;
    int rc = vega_http1_parser_read(&q, (const uint8_t *)bad, sizeof(bad) - 1, &used);
    vega_http1_error e = vega_http1_parser_get_error(&q);
    printf("malformed request: %s (%s) after %zu bytes\n",
           rc == VEGA_ERR_PROTO ? "VEGA_ERR_PROTO" : "?", vega_http1_error_name(e), used);

    printf("%d messages parsed\n", messages);
    return messages == 2 && rc == VEGA_ERR_PROTO && e == VEGA_HTTP1_E_FIELD_NAME ? 0 : 1;
}
