/* SPDX-License-Identifier: MIT */
/* HdrHistogram's V2 encoding and interval log. The encoding (big-endian):
 *   int32 cookie (0x1c849313 plain, 0x1c849314 compressed: base | 0x10, the word-size nibble)
 *   compressed: int32 length, then zlib(plain encoding)
 *   plain: int32 payload length, int32 normalizing index offset, int32 significant digits,
 *          int64 lowest discernible value, int64 highest trackable value,
 *          double integer-to-double ratio, then the counts from slot 0 to the last nonzero one,
 *          each a ZigZag LEB128 long (at most 9 bytes, the 9th holding 8 bits): a count, or
 *          -N for a run of N > 1 zero slots. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vega/base64.h>
#include <vega/compress.h>

#include "hdrlog.h"

#define COOKIE_PLAIN      0x1c849313u
#define COOKIE_COMPRESSED 0x1c849314u
#define COOKIE_BASE_MASK  0xffffff0fu /* the word-size nibble is not part of the kind */
#define HEADER_LEN        40u

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ZigZag LEB128 as HdrHistogram writes it: 7 bits a byte for 8 bytes, then 8. Returns the
 * bytes written (at most 9). */
static size_t put_zigzag(uint8_t *p, int64_t sv)
{
    uint64_t v = ((uint64_t)sv << 1) ^ (uint64_t)(sv >> 63);
    size_t n = 0;
    while (n < 8) {
        if ((v >> 7) == 0) {
            p[n++] = (uint8_t)v;
            return n;
        }
        p[n++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads one; returns the bytes taken, or 0 when the input ends inside it. */
static size_t get_zigzag(const uint8_t *p, size_t len, int64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    for (;;) {
        if (n == len)
            return 0;
        uint8_t b = p[n];
        if (n == 8) {
            v |= (uint64_t)b << 56;
            n++;
            break;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * n);
        n++;
        if (!(b & 0x80))
            break;
    }
    *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
    return n;
}

int hdrlog_encode(const struct cli_hist *h, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    size_t last = 0;
    bool any = false;
    for (size_t i = 0; i < h->len; i++)
        if (h->counts[i]) {
            last = i;
            any = true;
        }
    size_t limit = any ? last + 1 : 0;
    uint8_t *plain = malloc(HEADER_LEN + limit * 9 + 9);
    if (!plain)
        return -ENOMEM;
    put32(plain, COOKIE_PLAIN);
    put32(plain + 8, 0);
    put32(plain + 12, h->digits);
    put64(plain + 16, 1);
    put64(plain + 24, h->highest);
    double ratio = 1.0;
    uint64_t bits;
    memcpy(&bits, &ratio, sizeof(bits));
    put64(plain + 32, bits);
    size_t n = HEADER_LEN;
    for (size_t i = 0; i < limit;) {
        uint64_t c = h->counts[i++];
        if (c == 0) {
            int64_t zeros = 1;
            while (i < limit && h->counts[i] == 0) {
                zeros++;
                i++;
            }
            n += put_zigzag(plain + n, zeros > 1 ? -zeros : 0);
        } else {
            n += put_zigzag(plain + n, c > INT64_MAX ? INT64_MAX : (int64_t)c);
        }
    }
    put32(plain + 4, (uint32_t)(n - HEADER_LEN));
    uint8_t *z = NULL;
    size_t zlen = 0;
    int e = vega_compress_buffer(VEGA_COMPRESS_DEFLATE, VEGA_COMPRESS_LEVEL_DEFAULT, plain, n, 0,
                                 &z, &zlen);
    free(plain);
    if (e < 0)
        return e;
    uint8_t *buf = malloc(8 + zlen);
    if (!buf) {
        free(z);
        return -ENOMEM;
    }
    put32(buf, COOKIE_COMPRESSED);
    put32(buf + 4, (uint32_t)zlen);
    memcpy(buf + 8, z, zlen);
    free(z);
    *out = buf;
    *out_len = 8 + zlen;
    return 0;
}

static int fail(char *err, size_t ecap, const char *msg)
{
    snprintf(err, ecap, "%s", msg);
    return -EINVAL;
}

static int decode_plain(struct cli_hist *h, const uint8_t *p, size_t len, char *err, size_t ecap)
{
    if (len < HEADER_LEN)
        return fail(err, ecap, "histogram shorter than its header");
    if ((get32(p) & COOKIE_BASE_MASK) != (COOKIE_PLAIN & COOKIE_BASE_MASK))
        return fail(err, ecap, "not a V2 histogram encoding (unknown cookie)");
    uint32_t payload = get32(p + 4);
    if ((uint64_t)HEADER_LEN + payload > len)
        return fail(err, ecap, "histogram payload longer than the data");
    if (get32(p + 8) != 0)
        return fail(err, ecap, "histogram with a normalizing index offset (not supported)");
    uint32_t digits = get32(p + 12);
    uint64_t lowest = get64(p + 16), highest = get64(p + 24);
    if (digits < 1 || digits > 5)
        return fail(err, ecap, "histogram significant digits outside 1..5");
    if (lowest != 1)
        return fail(err, ecap,
                    "histogram with a lowest discernible value other than 1 "
                    "(not supported)");
    if (highest < 2 || highest > HDRLOG_MAX_HIGHEST)
        return fail(err, ecap, "histogram highest trackable value out of range");
    if (cli_hist_init(h, highest, digits) < 0)
        return fail(err, ecap, "out of memory for the histogram");
    if (h->len > HDRLOG_MAX_SLOTS) {
        cli_hist_fini(h);
        return fail(err, ecap, "histogram too large");
    }
    const uint8_t *q = p + HEADER_LEN;
    size_t left = payload, i = 0;
    while (left > 0) {
        int64_t v;
        size_t n = get_zigzag(q, left, &v);
        if (n == 0) {
            cli_hist_fini(h);
            return fail(err, ecap, "histogram counts end inside a number");
        }
        q += n;
        left -= n;
        if (v < 0) {
            uint64_t zeros = v == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-v;
            if (zeros > h->len || i + zeros > h->len) {
                cli_hist_fini(h);
                return fail(err, ecap, "histogram counts run past its last slot");
            }
            i += zeros;
        } else {
            if (i + 1 > h->len) {
                cli_hist_fini(h);
                return fail(err, ecap, "histogram counts run past its last slot");
            }
            h->counts[i++] = (uint64_t)v;
        }
    }
    if (cli_hist_recount(h) < 0) {
        cli_hist_fini(h);
        return fail(err, ecap, "histogram counts add up past 2^64");
    }
    return 0;
}

int hdrlog_decode(struct cli_hist *h, const uint8_t *in, size_t len, char *err, size_t ecap)
{
    memset(h, 0, sizeof(*h));
    if (len < 8)
        return fail(err, ecap, "histogram shorter than its cookie");
    uint32_t cookie = get32(in);
    if ((cookie & COOKIE_BASE_MASK) == (COOKIE_PLAIN & COOKIE_BASE_MASK))
        return decode_plain(h, in, len, err, ecap);
    if ((cookie & COOKIE_BASE_MASK) != (COOKIE_COMPRESSED & COOKIE_BASE_MASK))
        return fail(err, ecap, "not a V2 compressed histogram (unknown cookie)");
    uint32_t zlen = get32(in + 4);
    if ((uint64_t)8 + zlen > len)
        return fail(err, ecap, "compressed histogram longer than the data");
    uint8_t *plain = NULL;
    size_t plen = 0;
    int e = vega_decompress_buffer(VEGA_COMPRESS_DEFLATE, in + 8, zlen, HDRLOG_MAX_DECODED, &plain,
                                   &plen);
    if (e < 0)
        return fail(err, ecap,
                    e == -EFBIG ? "compressed histogram inflates past 8 MiB"
                                : "compressed histogram is not valid zlib data");
    e = decode_plain(h, plain, plen, err, ecap);
    free(plain);
    return e;
}

int hdrlog_write_header(struct hdrlog_writer *w, const char *comment)
{
    time_t t = (time_t)w->start_s;
    struct tm tm;
    char date[64] = "";
    if (gmtime_r(&t, &tm))
        strftime(date, sizeof(date), "%a %b %d %H:%M:%S UTC %Y", &tm);
    fprintf(w->f, "#[Histogram log format version 1.3]\n");
    fprintf(w->f, "#[StartTime: %.3f (seconds since epoch), %s]\n", w->start_s, date);
    fprintf(w->f, "#[BaseTime: %.3f (seconds since epoch)]\n", w->start_s);
    if (comment)
        fprintf(w->f, "#[%s]\n", comment);
    fputs("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
          "\"Interval_Compressed_Histogram\"\n",
          w->f);
    return fflush(w->f) == 0 ? 0 : -errno;
}

int hdrlog_write_interval(struct hdrlog_writer *w, double start_s, double len_s,
                          const struct cli_hist *h)
{
    uint8_t *enc;
    size_t n;
    int e = hdrlog_encode(h, &enc, &n);
    if (e < 0)
        return e;
    size_t cap = vega_base64_encoded_len(n, VEGA_BASE64_STD) + 1;
    char *text = malloc(cap);
    if (!text) {
        free(enc);
        return -ENOMEM;
    }
    vega_ssize tl = vega_base64_encode(enc, n, text, cap, VEGA_BASE64_STD);
    free(enc);
    if (tl < 0) {
        free(text);
        return (int)tl;
    }
    text[tl] = '\0';
    double max = h->total ? (double)h->max / w->unit_ratio : 0.0;
    fprintf(w->f, "%.3f,%.3f,%.3f,%s\n", start_s - w->start_s, len_s, max, text);
    free(text);
    return fflush(w->f) == 0 ? 0 : -errno;
}

/* One line into r->buf without its newline; 1, 0 at the end, or -EINVAL (too long). */
static int read_line(struct hdrlog_reader *r, size_t *len)
{
    if (!r->buf) {
        r->cap = 4096;
        r->buf = malloc(r->cap);
        if (!r->buf)
            return -ENOMEM;
    }
    size_t n = 0;
    int c;
    while ((c = getc(r->f)) != EOF && c != '\n') {
        if (n + 2 > r->cap) {
            if (r->cap >= HDRLOG_MAX_LINE)
                return -EINVAL;
            char *b = realloc(r->buf, r->cap * 2);
            if (!b)
                return -ENOMEM;
            r->buf = b;
            r->cap *= 2;
        }
        r->buf[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return 0;
    if (n > 0 && r->buf[n - 1] == '\r')
        n--;
    r->buf[n] = '\0';
    *len = n;
    r->line++;
    return 1;
}

/* A decimal number with a fraction, as the log writes them; false when s is not one. */
static bool number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno || !(v >= 0.0) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int hdrlog_read_interval(struct hdrlog_reader *r, double *start_s, double *len_s,
                         struct cli_hist *h, char *err, size_t ecap)
{
    memset(h, 0, sizeof(*h));
    for (;;) {
        size_t len;
        int e = read_line(r, &len);
        if (e == 0)
            return 0;
        if (e < 0) {
            snprintf(err, ecap, "%s:%lu: %s", r->name, r->line + 1,
                     e == -ENOMEM ? "out of memory" : "line longer than 1 MiB");
            return -EINVAL;
        }
        char *s = r->buf;
        if (len == 0)
            continue;
        if (s[0] == '#') {
            double v;
            char *colon;
            if (strncmp(s, "#[StartTime: ", 13) == 0) {
                v = strtod(s + 13, &colon);
                if (colon != s + 13 && v >= 0.0)
                    r->start_s = v;
            } else if (strncmp(s, "#[BaseTime: ", 12) == 0) {
                v = strtod(s + 12, &colon);
                if (colon != s + 12 && v >= 0.0) {
                    r->base_s = v;
                    r->base_seen = true;
                }
            }
            continue;
        }
        if (s[0] == '"' || strncmp(s, "StartTimestamp", 14) == 0)
            continue; /* the legend */
        if (strncmp(s, "Tag=", 4) == 0) {
            char *comma = strchr(s, ',');
            if (!comma)
                goto bad;
            s = comma + 1;
        }
        char *f[4];
        for (int i = 0; i < 4; i++) {
            f[i] = s;
            char *comma = i < 3 ? strchr(s, ',') : NULL;
            if (i < 3 && !comma)
                goto bad;
            if (comma) {
                *comma = '\0';
                s = comma + 1;
            }
        }
        double start, length, max;
        if (!number(f[0], &start) || !number(f[1], &length) || !number(f[2], &max))
            goto bad;
        size_t tlen = strlen(f[3]);
        uint8_t *bin = malloc(tlen / 4 * 3 + 3);
        if (!bin) {
            snprintf(err, ecap, "%s:%lu: out of memory", r->name, r->line);
            return -EINVAL;
        }
        vega_ssize n = vega_base64_decode(f[3], tlen, bin, tlen / 4 * 3 + 3, VEGA_BASE64_STD);
        if (n < 0) {
            free(bin);
            snprintf(err, ecap, "%s:%lu: the histogram is not base64", r->name, r->line);
            return -EINVAL;
        }
        char why[160];
        e = hdrlog_decode(h, bin, (size_t)n, why, sizeof(why));
        free(bin);
        if (e < 0) {
            snprintf(err, ecap, "%s:%lu: %s", r->name, r->line, why);
            return -EINVAL;
        }
        if (!r->base_seen) {
            /* HdrHistogram's rule: timestamps more than a year before StartTime are relative
             * to it. */
            r->base_s = start < r->start_s - 365.0 * 24 * 3600 ? r->start_s : 0.0;
            r->base_seen = true;
        }
        *start_s = start + r->base_s;
        *len_s = length;
        return 1;
    bad:
        snprintf(err, ecap, "%s:%lu: not an interval line ([Tag=T,]START,LENGTH,MAX,HISTOGRAM)",
                 r->name, r->line);
        return -EINVAL;
    }
}

void hdrlog_reader_fini(struct hdrlog_reader *r)
{
    free(r->buf);
    r->buf = NULL;
}
