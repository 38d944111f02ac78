/* SPDX-License-Identifier: MIT */
/* Request bodies: -d/--data-binary/--data-raw held in memory (curl's @file rules), and -T files
 * streamed through the client's body callback with their length, or chunked from stdin. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curl.h"

/* Reads all of fd (blocking: this runs while the command line is parsed, before any I/O). */
static char *slurp(int fd, size_t *len, int *err)
{
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        *err = -ENOMEM;
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= CURL_MAX_DATA) {
                free(buf);
                *err = -EFBIG;
                return NULL;
            }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                *err = -ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *err = -errno;
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

/* The contents of path ("-" = stdin); exits 26 when it cannot be read. */
char *curl_read_file(const struct curl_opts *o, const char *path, size_t *len)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    int err = 0;
    if (fd < 0) {
        /* curl warns and sends nothing for an unreadable @file; failing is clearer. */
        curl_fail(o, CE_READ_ERROR, "Failed to open %s: %s", path, strerror(errno));
        exit(CE_READ_ERROR);
    }
    char *buf = slurp(fd, len, &err);
    if (fd != STDIN_FILENO)
        close(fd);
    if (!buf) {
        curl_fail(o, CE_READ_ERROR, "Failed to read %s: %s", path,
                  err == -EFBIG ? "larger than 1 GiB (use -T to stream it)" : vega_strerror(err));
        exit(CE_READ_ERROR);
    }
    return buf;
}

/* Appends '&' (after the first part, when sep) and a. */
static void data_append(struct curl_opts *o, const char *a, size_t alen, bool sep)
{
    sep = sep && o->has_data;
    size_t need = o->data_len + (sep ? 1 : 0) + alen;
    if (need > CURL_MAX_DATA) {
        curl_fail(o, CE_READ_ERROR, "the request body would exceed 1 GiB (use -T to stream it)");
        exit(CE_READ_ERROR);
    }
    char *nd = realloc(o->data, need + 1);
    if (!nd) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    o->data = nd;
    if (sep)
        o->data[o->data_len++] = '&';
    if (alen)
        memcpy(o->data + o->data_len, a, alen);
    o->data_len += alen;
    o->data[o->data_len] = '\0';
    o->has_data = true;
}

void curl_data_add(struct curl_opts *o, const char *arg, bool at_file, bool strip_newlines)
{
    if (!(at_file && arg[0] == '@')) {
        data_append(o, arg, strlen(arg), true);
        return;
    }
    size_t len;
    char *buf = curl_read_file(o, arg + 1, &len);
    if (strip_newlines) {
        /* -d @file: carriage returns and newlines are dropped, as curl does. */
        size_t w = 0;
        for (size_t i = 0; i < len; i++)
            if (buf[i] != '\r' && buf[i] != '\n')
                buf[w++] = buf[i];
        len = w;
    }
    data_append(o, buf, len, true);
    free(buf);
}

void curl_data_add_json(struct curl_opts *o, const char *arg)
{
    o->json = true;
    if (arg[0] != '@') {
        data_append(o, arg, strlen(arg), false);
        return;
    }
    size_t len;
    char *buf = curl_read_file(o, arg + 1, &len);
    data_append(o, buf, len, false);
    free(buf);
}

void curl_data_add_urlencoded(struct curl_opts *o, const char *arg)
{
    const char *name = NULL, *content = arg;
    size_t nlen = 0, clen;
    char *file = NULL;
    size_t span = strcspn(arg, "=@");
    if (arg[span] == '=') {
        name = arg;
        nlen = span;
        content = arg + span + 1;
    } else if (arg[span] == '@') {
        name = arg;
        nlen = span;
        file = curl_read_file(o, arg + span + 1, &clen);
        content = file;
    }
    if (!file)
        clen = strlen(content);
    if (clen > CURL_MAX_DATA / 3) {
        curl_fail(o, CE_READ_ERROR, "--data-urlencode: the data is too large");
        exit(CE_READ_ERROR);
    }
    char *enc = malloc(nlen + 1 + clen * 3 + 1);
    if (!enc) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    if (nlen) {
        memcpy(enc, name, nlen);
        n = nlen;
        enc[n++] = '=';
    }
    for (size_t i = 0; i < clen; i++) {
        unsigned char c = (unsigned char)content[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            enc[n++] = (char)c;
        } else if (c == ' ') {
            enc[n++] = '+'; /* curl 7.88's form encoding: "a b" is "a+b" */
        } else {
            enc[n++] = '%';
            enc[n++] = hex[c >> 4];
            enc[n++] = hex[c & 15];
        }
    }
    data_append(o, enc, n, true);
    free(enc);
    free(file);
}

int curl_upload_open(struct curl_upload *u, const struct curl_opts *o, const char *path)
{
    memset(u, 0, sizeof(*u));
    u->fd = -1;
    u->length = VEGA_HTTP_LENGTH_UNKNOWN;
    if (strcmp(path, "-") == 0 || strcmp(path, ".") == 0) {
        u->is_stdin = true;
        u->fd = STDIN_FILENO;
    } else {
        u->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (u->fd < 0)
            return curl_fail(o, CE_READ_ERROR, "Failed to open/read local data from file %s: %s",
                             path, strerror(errno));
    }
    struct stat st;
    if (fstat(u->fd, &st) == 0 && S_ISREG(st.st_mode)) {
        u->length = (uint64_t)st.st_size;
        u->seekable = !u->is_stdin || lseek(u->fd, 0, SEEK_CUR) == 0;
    } else if (!u->is_stdin && S_ISDIR(st.st_mode)) {
        close(u->fd);
        u->fd = -1;
        return curl_fail(o, CE_READ_ERROR, "%s is a directory", path);
    }
    int r = cli_stdio_init(&u->io, u->fd);
    if (r < 0) {
        curl_upload_close(u);
        return curl_fail(o, CE_READ_ERROR, "%s: %s", path, vega_strerror(r));
    }
    return 0;
}

void curl_upload_close(struct curl_upload *u)
{
    free(u->ra);
    u->ra = NULL;
    u->ra_pos = u->ra_len = 0;
    if (u->fd < 0)
        return;
    cli_stdio_fini(&u->io);
    if (!u->is_stdin)
        close(u->fd);
    u->fd = -1;
}

int curl_upload_skip(struct curl_upload *u, uint64_t at)
{
    if (u->is_stdin || !u->seekable || u->length == VEGA_HTTP_LENGTH_UNKNOWN)
        return -ESPIPE;
    if (at >= u->length)
        return -ERANGE;
    if (lseek(u->fd, (off_t)at, SEEK_SET) != (off_t)at)
        return -ESPIPE;
    u->skip = at;
    u->length -= at;
    return 0;
}

int curl_upload_rewind(struct curl_upload *u)
{
    if (u->sent == 0)
        return 0;
    if (!u->seekable || lseek(u->fd, (off_t)u->skip, SEEK_SET) != (off_t)u->skip)
        return -ESPIPE;
    u->sent = 0;
    u->started = 0;
    u->ra_pos = u->ra_len = 0;
    return 0;
}

/* Up to len bytes of the file or stdin. A regular file (or anything else not pollable) is
 * read ahead in pieces of CURL_SINK_BUF, one kernel operation (or blocking-pool job) each,
 * and handed out in the client's smaller pieces; a pipe or socket is read as asked. */
static vega_ssize upload_next(struct curl_upload *u, void *buf, size_t len, vega_deadline dl)
{
    if (u->io.kind == CLI_STDIO_POLL)
        return cli_stdio_read(&u->io, buf, len, dl);
    if (u->ra_pos == u->ra_len && len >= CURL_SINK_BUF)
        return cli_stdio_read(&u->io, buf, len, dl); /* a large piece: read straight into it */
    if (u->ra_pos == u->ra_len) {
        if (!u->ra && !(u->ra = malloc(CURL_SINK_BUF)))
            return cli_stdio_read(&u->io, buf, len, dl);
        size_t want = CURL_SINK_BUF;
        if (u->length != VEGA_HTTP_LENGTH_UNKNOWN && u->length - u->sent < want)
            want = (size_t)(u->length - u->sent);
        if (want < len)
            want = len;
        vega_ssize n = cli_stdio_read(&u->io, u->ra, want, dl);
        if (n <= 0)
            return n;
        u->ra_pos = 0;
        u->ra_len = (size_t)n;
    }
    size_t n = u->ra_len - u->ra_pos < len ? u->ra_len - u->ra_pos : len;
    memcpy(buf, u->ra + u->ra_pos, n);
    u->ra_pos += n;
    return (vega_ssize)n;
}

/* --limit-rate: waits until the bytes sent so far are not ahead of the average rate. */
static void upload_pace(struct curl_upload *u)
{
    long double due = (long double)u->sent * VEGA_NS_PER_S / (long double)u->limit_rate;
    vega_tstamp at =
        u->started + (due > (long double)(UINT64_MAX / 2) ? UINT64_MAX / 2 : (uint64_t)due);
    vega_deadline dl = u->dl ? u->dl : VEGA_DEADLINE_NEVER;
    if (at > vega_now())
        (void)vega_sleep_until(dl < at ? dl : at);
}

vega_ssize curl_upload_read(void *user, void *buf, size_t len)
{
    struct curl_upload *u = user;
    if (u->limit_rate) {
        if (!u->started)
            u->started = vega_now();
        upload_pace(u);
        /* pieces of a tenth of a second's worth keep the pace smooth */
        uint64_t piece = u->limit_rate / 10 ? u->limit_rate / 10 : 1;
        if (len > piece)
            len = (size_t)piece;
    }
    if (u->length != VEGA_HTTP_LENGTH_UNKNOWN) {
        /* Never more than the length announced, even if the file grew meanwhile. */
        uint64_t left = u->length - u->sent;
        if (left == 0)
            return 0;
        if (len > left)
            len = (size_t)left;
    }
    vega_ssize n = upload_next(u, buf, len, u->dl ? u->dl : VEGA_DEADLINE_NEVER);
    if (n < 0) {
        u->err = (int)n;
        return n;
    }
    if (n == 0 && u->length != VEGA_HTTP_LENGTH_UNKNOWN && u->sent < u->length) {
        /* The file shrank: the length already sent cannot be honoured. */
        u->err = -ENODATA;
        return -ENODATA;
    }
    u->sent += (uint64_t)n;
    return n;
}
