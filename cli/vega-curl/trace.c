/* SPDX-License-Identifier: MIT */
/* --trace and --trace-ascii: curl's dump of what a transfer sends and receives ("== Info:",
 * "=> Send header", "<= Recv data" ... with a hex and text dump, or text only), --trace-time's
 * time prefix, and --etag-save / --etag-compare. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "curl.h"

/* One trace for the whole run; -Z transfers write to it together, a record at a time. */
static FILE *trace_fp;
static bool trace_ascii, trace_time;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;

int curl_trace_open(const struct curl_opts *o)
{
    trace_time = o->trace_time;
    if (!o->trace_file)
        return 0;
    trace_ascii = o->trace_ascii;
    if (strcmp(o->trace_file, "-") == 0)
        trace_fp = stdout;
    else if (strcmp(o->trace_file, "%") == 0)
        trace_fp = stderr;
    else if (!(trace_fp = fopen(o->trace_file, "w")))
        trace_fp = stderr; /* curl 7.88 traces to stderr then, saying nothing */
    return 0;
}

void curl_trace_close(void)
{
    if (trace_fp && trace_fp != stdout && trace_fp != stderr)
        fclose(trace_fp);
    else if (trace_fp)
        fflush(trace_fp);
    trace_fp = NULL;
}

bool curl_trace_on(void)
{
    return trace_fp != NULL;
}

/* "HH:MM:SS.uuuuuu " (local time, as curl's --trace-time) into buf, or "" without it. */
void curl_trace_stamp(char *buf, size_t cap)
{
    buf[0] = '\0';
    if (!trace_time)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t secs = tv.tv_sec;
    localtime_r(&secs, &tm);
    snprintf(buf, cap, "%02d:%02d:%02d.%06ld ", tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
}

/* curl's dump (tool_cb_dbg.c): 16 bytes a line as hex and text, or 64 of text where a CR LF
 * also ends the line. */
static void dump(FILE *f, const unsigned char *p, size_t size)
{
    size_t width = trace_ascii ? 0x40 : 0x10;
    for (size_t i = 0; i < size; i += width) {
        fprintf(f, "%04zx: ", i);
        if (!trace_ascii) {
            for (size_t c = 0; c < width; c++) {
                if (i + c < size)
                    fprintf(f, "%02x ", p[i + c]);
                else
                    fputs("   ", f);
            }
        }
        for (size_t c = 0; c < width && i + c < size; c++) {
            if (trace_ascii && i + c + 1 < size && p[i + c] == '\r' && p[i + c + 1] == '\n') {
                i += c + 2 - width; /* the next line starts after the CR LF */
                break;
            }
            fputc(p[i + c] >= 0x20 && p[i + c] < 0x80 ? p[i + c] : '.', f);
            if (trace_ascii && i + c + 2 < size && p[i + c + 1] == '\r' && p[i + c + 2] == '\n') {
                i += c + 3 - width;
                break;
            }
        }
        fputc('\n', f);
    }
}

void curl_trace_data(enum curl_trace_kind k, const void *p, size_t len)
{
    static const char *const what[] = {"=> Send header", "<= Recv header",   "=> Send data",
                                       "<= Recv data",   "=> Send SSL data", "<= Recv SSL data"};
    if (!trace_fp || len == 0)
        return;
    char ts[32];
    curl_trace_stamp(ts, sizeof ts);
    pthread_mutex_lock(&trace_lock);
    fprintf(trace_fp, "%s%s, %zu bytes (0x%zx)\n", ts, what[k], len, len);
    dump(trace_fp, p, len);
    fflush(trace_fp);
    pthread_mutex_unlock(&trace_lock);
}

void curl_trace_head(enum curl_trace_kind k, const void *head, size_t len)
{
    if (k == CURL_TRACE_HEADER_OUT) {
        curl_trace_data(k, head, len);
        return;
    }
    /* curl hands a received head to its trace a line at a time */
    const char *s = head;
    while (len) {
        const char *nl = memchr(s, '\n', len);
        size_t n = nl ? (size_t)(nl - s) + 1 : len;
        curl_trace_data(k, s, n);
        s += n;
        len -= n;
    }
}

void curl_trace_info(const char *text, size_t len)
{
    if (!trace_fp)
        return;
    char ts[32];
    curl_trace_stamp(ts, sizeof ts);
    pthread_mutex_lock(&trace_lock);
    fprintf(trace_fp, "%s== Info: %.*s\n", ts, (int)len, text);
    fflush(trace_fp);
    pthread_mutex_unlock(&trace_lock);
}

void curl_trace_infof(const char *fmt, ...)
{
    if (!trace_fp)
        return;
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    curl_trace_info(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ---- TLS messages (-v, --trace) ------------------------------------------------------------- */

/* Set once the transfers are over: the connections' ends go unseen, as in curl. */
static atomic_bool conn_notes_over;

void curl_trace_conn_notes_end(void)
{
    atomic_store(&conn_notes_over, true);
}

static const char *tls_version_name(int v)
{
    switch (v) {
    case 0x0300:
        return "SSLv3";
    case 0x0301:
        return "TLSv1.0";
    case 0x0302:
        return "TLSv1.1";
    case 0x0303:
        return "TLSv1.2";
    case 0x0304:
        return "TLSv1.3";
    default:
        return NULL;
    }
}

/* curl's names of the record types and handshake messages (lib/vtls/openssl.c). */
static const char *tls_record_name(int type)
{
    switch (type) {
    case 20:
        return "TLS change cipher";
    case 21:
        return "TLS alert";
    case 22:
        return "TLS handshake";
    case 23:
        return "TLS app data";
    default:
        return "TLS Unknown";
    }
}

static const char *tls_handshake_name(int t)
{
    switch (t) {
    case 0:
        return "Hello request";
    case 1:
        return "Client hello";
    case 2:
        return "Server hello";
    case 4:
        return "Newsession Ticket";
    case 5:
        return "End of early data";
    case 8:
        return "Encrypted Extensions";
    case 11:
        return "Certificate";
    case 12:
        return "Server key exchange";
    case 13:
        return "Request CERT";
    case 14:
        return "Server finished";
    case 15:
        return "CERT verify";
    case 16:
        return "Client key exchange";
    case 20:
        return "Finished";
    case 22:
        return "Certificate Status";
    case 23:
        return "Supplemental data";
    case 24:
        return "Key update";
    case 67:
        return "Next protocol";
    case 254:
        return "Message hash";
    default:
        return "Unknown";
    }
}

/* OpenSSL's long alert descriptions, as curl prints them (SSL_alert_desc_string_long). */
static const char *tls_alert_name(int d)
{
    switch (d) {
    case 0:
        return "close notify";
    case 10:
        return "unexpected_message";
    case 20:
        return "bad record mac";
    case 22:
        return "record overflow";
    case 40:
        return "handshake failure";
    case 42:
        return "bad certificate";
    case 43:
        return "unsupported certificate";
    case 44:
        return "certificate revoked";
    case 45:
        return "certificate expired";
    case 46:
        return "certificate unknown";
    case 47:
        return "illegal parameter";
    case 48:
        return "unknown CA";
    case 49:
        return "access denied";
    case 50:
        return "decode error";
    case 51:
        return "decrypt error";
    case 70:
        return "protocol version";
    case 71:
        return "insufficient security";
    case 80:
        return "internal error";
    case 86:
        return "inappropriate fallback";
    case 90:
        return "user canceled";
    case 109:
        return "missing extension";
    case 110:
        return "unsupported extension";
    case 112:
        return "unrecognized name";
    case 116:
        return "certificate required";
    case 120:
        return "no application protocol";
    default:
        return "unknown";
    }
}

/* curl's note for a TLS message ("TLSv1.3 (OUT), TLS handshake, Client hello (1):") into line,
 * or false for the messages it only dumps (record headers, TLS 1.3's inner content type). */
static bool tls_note(char *line, size_t cap, vega_tls_msg_dir dir, int version, int type,
                     const unsigned char *b, size_t len)
{
    const char *v = tls_version_name(version);
    if (!version || type == VEGA_TLS_MSG_RECORD_HEADER || type == VEGA_TLS_MSG_INNER_TYPE || !len)
        return false;
    char unknown[16];
    if (!v) {
        snprintf(unknown, sizeof unknown, "(%x)", (unsigned)version);
        v = unknown;
    }
    const char *name;
    int code;
    if (type == 20) {
        code = b[0];
        name = "Change cipher spec";
    } else if (type == 21 && len >= 2) {
        code = (b[0] << 8) | b[1];
        name = tls_alert_name(b[1]);
    } else {
        code = b[0];
        name = tls_handshake_name(b[0]);
    }
    snprintf(line, cap, "%s (%s), %s, %s (%d):", v, dir == VEGA_TLS_MSG_OUT ? "OUT" : "IN",
             tls_record_name(type), name, code);
    return true;
}

void curl_trace_tls(void *user, vega_tls_msg_dir dir, int version, int type, const void *buf,
                    size_t len)
{
    const struct curl_opts *o = user;
    if (atomic_load(&conn_notes_over))
        return;
    char line[160];
    bool note = tls_note(line, sizeof line, dir, version, type, buf, len);
    if (trace_fp) {
        if (note)
            curl_trace_info(line, strlen(line));
        curl_trace_data(dir == VEGA_TLS_MSG_OUT ? CURL_TRACE_SSL_OUT : CURL_TRACE_SSL_IN, buf, len);
    } else if (note && o->verbose) {
        /* -v prints it as it happens, as curl does (a connection's other notes wait for the
         * response head) */
        char ts[32];
        curl_trace_stamp(ts, sizeof ts);
        pthread_mutex_lock(&trace_lock);
        fprintf(stderr, "%s* %s\n", ts, line);
        fflush(stderr);
        pthread_mutex_unlock(&trace_lock);
    }
}

/* ---- HTTP/2 frames (--trace) ---------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void curl_trace_h2_frame(void *user, const vega_http_h2_frame *f)
{
    (void)user;
    if (atomic_load(&conn_notes_over))
        return;
    char fr[128];
    unsigned len = f->length, fl = f->flags;
    const uint8_t *pl = f->payload;
    bool ack = fl & 0x1, eos = fl & 0x1, hend = fl & 0x4;
    switch (f->type) {
    case 0: /* DATA (padlen: RFC 9113 §6.1, the first byte when PADDED) */
        snprintf(fr, sizeof fr, "FRAME[DATA, len=%u, eos=%d, padlen=%d]", len, eos,
                 (fl & 0x8) && f->payload_len >= 1 ? pl[0] : 0);
        break;
    case 1:
        snprintf(fr, sizeof fr, "FRAME[HEADERS, len=%u, hend=%d, eos=%d]", len, hend, eos);
        break;
    case 2:
        snprintf(fr, sizeof fr, "FRAME[PRIORITY, len=%u, flags=%u]", len, fl);
        break;
    case 3:
        snprintf(fr, sizeof fr, "FRAME[RST_STREAM, len=%u, flags=%u, error=%u]", len, fl,
                 f->payload_len >= 4 ? be32(pl) : 0);
        break;
    case 4:
        if (ack)
            snprintf(fr, sizeof fr, "FRAME[SETTINGS, ack=1]");
        else
            snprintf(fr, sizeof fr, "FRAME[SETTINGS, len=%u]", len);
        break;
    case 5:
        snprintf(fr, sizeof fr, "FRAME[PUSH_PROMISE, len=%u, hend=%d]", len, hend);
        break;
    case 6:
        snprintf(fr, sizeof fr, "FRAME[PING, len=%u, ack=%d]", len, ack);
        break;
    case 7: /* (the debug data, curl's reason='...', is not kept) */
        snprintf(fr, sizeof fr, "FRAME[GOAWAY, error=%u, last_stream=%u]",
                 f->payload_len >= 8 ? be32(pl + 4) : 0,
                 f->payload_len >= 4 ? be32(pl) & 0x7fffffffu : 0);
        break;
    case 8:
        snprintf(fr, sizeof fr, "FRAME[WINDOW_UPDATE, incr=%u]",
                 f->payload_len >= 4 ? be32(pl) & 0x7fffffffu : 0);
        break;
    default:
        snprintf(fr, sizeof fr, "FRAME[%u, len=%u, flags=%u]", f->type, len, fl);
        break;
    }
    curl_trace_infof("[HTTP/2] [%u] %s %s", (unsigned)f->stream_id,
                     f->dir == VEGA_HTTP_FRAME_OUT ? "->" : "<-", fr);
}

/* ---- --etag-compare, --etag-save ------------------------------------------------------------- */

int curl_etag_compare_value(const struct curl_opts *o, char *out, size_t cap)
{
    FILE *f = fopen(o->etag_compare, "r");
    if (!f) {
        if (o->etag_save)
            goto empty; /* curl 7.88: no file yet is fine when it is also the one saved to */
        return curl_fail(o, CE_READ_ERROR, "Failed to open %s", o->etag_compare);
    }
    /* curl's file2string: every line up to its first CR or LF, joined */
    size_t used = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        if (used + n + 1 > cap) {
            fclose(f);
            return curl_fail(o, CE_READ_ERROR, "%s: an ETag over %zu bytes", o->etag_compare,
                             cap - 1);
        }
        memcpy(out + used, line, n);
        used += n;
    }
    fclose(f);
    out[used] = '\0';
    if (used)
        return 0;
empty:
    snprintf(out, cap, "\"\"");
    return 0;
}

int curl_etag_save_open(const struct curl_opts *o, FILE **out)
{
    *out = NULL;
    if (!o->etag_save)
        return 0;
    if (strcmp(o->etag_save, "-") == 0) {
        *out = stdout;
        return 0;
    }
    if (!(*out = fopen(o->etag_save, "w")))
        return curl_fail(o, CE_READ_ERROR,
                         "Failed creating file for saving etags: \"%s\". Skip this transfer",
                         o->etag_save);
    return 0;
}

void curl_etag_save_fields(FILE *f, const vega_http_fields *fields)
{
    if (!f || !fields)
        return;
    for (size_t i = 0; i < fields->count; i++) {
        const vega_http_field *fl = &fields->items[i];
        if (fl->name.len != 4 || strncasecmp(fl->name.ptr, "ETag", 4) != 0)
            continue;
        const char *v = fl->value.ptr;
        size_t n = fl->value.len;
        while (n && (*v == ' ' || *v == '\t'))
            v++, n--;
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        if (!n)
            continue;
        fwrite(v, 1, n, f);
        fputc('\n', f);
        fflush(f);
    }
}
