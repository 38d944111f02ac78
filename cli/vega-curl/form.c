/* SPDX-License-Identifier: MIT */
/* -F/--form and --form-string: a multipart/form-data body (RFC 7578) built in memory with curl's
 * syntax (name=value, name=@file, name=<file, ;type=, ;filename=, quoted words) and curl's part
 * heads (percent-encoded names, a type guessed from the file name). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "curl.h"

/* One -F word: a quoted string ("..." with \" and \\) or everything up to ';' or end. Returns
 * the word (malloc'd) and moves *p to the ';' or NUL after it. */
static char *form_word(const char **p)
{
    const char *s = *p;
    size_t cap = strlen(s) + 1, n = 0;
    char *w = malloc(cap);
    if (!w) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    if (*s == '"') {
        const char *q = s + 1;
        while (*q && *q != '"') {
            if (*q == '\\' && (q[1] == '"' || q[1] == '\\'))
                q++;
            w[n++] = *q++;
        }
        if (*q == '"') {
            q++;
            const char *rest = q;
            while (*q && *q != ';')
                q++;
            if (q != rest)
                cli_err(NULL, "warning: trailing data after quoted form parameter");
            w[n] = '\0';
            *p = q;
            return w;
        }
        /* no closing quote: curl takes the word as it is, quote included */
        n = 0;
    }
    const char *e = s;
    while (*e && *e != ';')
        e++;
    const char *end = e;
    while (end > s && (*(end - 1) == ' ' || *(end - 1) == '\t'))
        end--;
    n = (size_t)(end - s);
    memcpy(w, s, n);
    w[n] = '\0';
    *p = e;
    return w;
}

/* curl's guess from a file name's extension (lib/mime.c), or dflt. */
static const char *type_for(const char *filename, const char *dflt)
{
    static const char *const map[][2] = {
        {".gif", "image/gif"},       {".jpg", "image/jpeg"},    {".jpeg", "image/jpeg"},
        {".png", "image/png"},       {".svg", "image/svg+xml"}, {".txt", "text/plain"},
        {".htm", "text/html"},       {".html", "text/html"},    {".pdf", "application/pdf"},
        {".xml", "application/xml"},
    };
    if (!filename)
        return dflt;
    size_t fl = strlen(filename);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t el = strlen(map[i][0]);
        if (fl >= el && strcasecmp(filename + fl - el, map[i][0]) == 0)
            return map[i][1];
    }
    return dflt;
}

static void form_append(struct curl_opts *o, const void *p, size_t len)
{
    /* bounds by adding and comparing: the form body stays within the -d limit */
    if (len > CURL_MAX_DATA || o->form_len > CURL_MAX_DATA - len) {
        curl_fail(o, CE_READ_ERROR, "the form would exceed 1 GiB (use -T to stream a file)");
        exit(CE_READ_ERROR);
    }
    char *nf = realloc(o->form, o->form_len + len + 1);
    if (!nf) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    o->form = nf;
    memcpy(o->form + o->form_len, p, len);
    o->form_len += len;
    o->form[o->form_len] = '\0';
}

static void form_puts(struct curl_opts *o, const char *s)
{
    form_append(o, s, strlen(s));
}

/* A name or file name in a Content-Disposition: curl's default escaping (percent-encoding of
 * '"', CR and LF). */
static void form_quoted(struct curl_opts *o, const char *s)
{
    form_puts(o, "\"");
    for (; *s; s++) {
        if (*s == '"')
            form_puts(o, "%22");
        else if (*s == '\r')
            form_puts(o, "%0D");
        else if (*s == '\n')
            form_puts(o, "%0A");
        else
            form_append(o, s, 1);
    }
    form_puts(o, "\"");
}

void curl_form_add(struct curl_opts *o, const char *arg, bool literal)
{
    const char *eq = strchr(arg, '=');
    if (!eq)
        cli_usage_error("-F: expected NAME=CONTENT, got '%s'", arg);
    if (++o->form_parts > CURL_MAX_FORM_PARTS)
        cli_usage_error("too many -F parts (at most %d)", CURL_MAX_FORM_PARTS);
    if (!o->form_boundary[0]) {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            cli_err(NULL, "getrandom: %s", strerror(errno));
            exit(CE_FAILED_INIT);
        }
        /* curl 7.88's shape: 24 dashes and 16 hex digits */
        int n = snprintf(o->form_boundary, sizeof o->form_boundary, "------------------------");
        for (size_t i = 0; i < sizeof r; i++)
            n += snprintf(o->form_boundary + n, sizeof o->form_boundary - (size_t)n, "%02x", r[i]);
    }
    char *name = strndup(arg, (size_t)(eq - arg));
    const char *p = eq + 1;
    char *value = NULL, *type = NULL, *filename = NULL;
    int kind = 0; /* 0 text, '@' file upload, '<' file content as a value */
    bool stdin_file = false;
    if (literal) {
        value = strdup(p);
    } else {
        if (*p == '@' || *p == '<')
            kind = *p++;
        while (*p == ' ' || *p == '\t')
            p++;
        value = form_word(&p);
        while (*p == ';') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (strncasecmp(p, "type=", 5) == 0) {
                p += 5;
                while (*p == ' ' || *p == '\t')
                    p++;
                const char *s = p;
                while (*p && *p != ';')
                    p++;
                const char *e = p;
                while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                    e--;
                const char *slash = memchr(s, '/', (size_t)(e - s));
                if (!slash || slash == s || slash + 1 == e)
                    cli_usage_error("-F: illegally formatted content-type field in '%s'", arg);
                free(type);
                type = strndup(s, (size_t)(e - s));
            } else if (strncasecmp(p, "filename=", 9) == 0) {
                p += 9;
                while (*p == ' ' || *p == '\t')
                    p++;
                free(filename);
                filename = form_word(&p);
            } else {
                char *unknown = form_word(&p);
                if (*unknown)
                    cli_err(NULL, "warning: skip unknown form field: %s", unknown);
                free(unknown);
            }
        }
    }
    if (!name || !value) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    size_t vlen = strlen(value);
    char *content = NULL;
    if (kind == '@' || kind == '<') {
        if (kind == '@' && strchr(value, ','))
            cli_usage_error("-F '%s': several files in one part (multipart/mixed) are not "
                            "supported; give one -F per file",
                            arg);
        content = curl_read_file(o, value, &vlen);
        stdin_file = kind == '@' && strcmp(value, "-") == 0;
        if (kind == '@' && !filename) {
            /* curl's name for stdin is "-" */
            const char *base = stdin_file ? NULL : strrchr(value, '/');
            filename = strdup(base ? base + 1 : value);
        } else if (kind == '<') {
            free(filename); /* curl 7.88 sends no file name for <FILE, even with ;filename= */
            filename = NULL;
        }
    }
    /* curl's guess (lib/mime.c): from the part's file name, else from the path of the file read
     * (stdin has none), else application/octet-stream for an @FILE upload; a guessed text/plain
     * for a part without a file name is not sent. */
    const char *ctype = type ? type : type_for(filename, NULL);
    if (!ctype && (kind == '<' || (kind == '@' && !stdin_file)))
        ctype = type_for(value, kind == '@' ? "application/octet-stream" : NULL);
    if (!type && !filename && ctype && strcmp(ctype, "text/plain") == 0)
        ctype = NULL; /* a part's default type (RFC 7578 §4.4): curl leaves a guessed one out */
    form_puts(o, "--");
    form_puts(o, o->form_boundary);
    form_puts(o, "\r\nContent-Disposition: form-data; name=");
    form_quoted(o, name);
    if (filename) {
        form_puts(o, "; filename=");
        form_quoted(o, filename);
    }
    if (ctype) {
        form_puts(o, "\r\nContent-Type: ");
        form_puts(o, ctype);
    }
    form_puts(o, "\r\n\r\n");
    form_append(o, content ? content : value, vlen);
    form_puts(o, "\r\n");
    free(content);
    free(name);
    free(value);
    free(type);
    free(filename);
}

/* curl's disposition for the parts of another multipart type (-H Content-Type): "attachment"
 * in place of "form-data", after each boundary line (the boundary is random: the content does
 * not hold it, which is what multipart relies on anyway). */
static void attachments(struct curl_opts *o)
{
    char pat[128];
    int pl = snprintf(pat, sizeof pat, "--%s\r\nContent-Disposition: form-data", o->form_boundary);
    char *old = o->form;
    size_t len = o->form_len;
    o->form = NULL;
    o->form_len = 0;
    for (size_t i = 0; i < len;) {
        char *hit = memmem(old + i, len - i, pat, (size_t)pl);
        size_t upto = hit ? (size_t)(hit - old) : len;
        form_append(o, old + i, upto - i);
        if (!hit)
            break;
        form_append(o, pat, (size_t)pl - 9);
        form_puts(o, "attachment");
        i = upto + (size_t)pl;
    }
    free(old);
}

void curl_form_finish(struct curl_opts *o)
{
    if (!o->form_parts)
        return;
    if (o->has_data)
        cli_usage_error("you can only select one HTTP request method: -d and -F cannot be "
                        "combined");
    form_puts(o, "--");
    form_puts(o, o->form_boundary);
    form_puts(o, "--\r\n");
    /* a -H Content-Type with a value gets the boundary added, as curl does; -G is ignored */
    const char *mime = "multipart/form-data";
    int mlen = (int)strlen(mime);
    for (size_t i = 0; i < o->nheaders; i++) {
        vega_http_field *f = &o->headers[i];
        if (f->name.len == 12 && strncasecmp(f->name.ptr, "Content-Type", 12) == 0 &&
            f->value.len) {
            mime = f->value.ptr;
            mlen = f->value.len > 256 ? 256 : (int)f->value.len;
            memmove(f, f + 1, (o->nheaders - i - 1) * sizeof *f);
            o->nheaders--;
            break;
        }
    }
    snprintf(o->form_type, sizeof o->form_type, "%.*s; boundary=%s", mlen, mime, o->form_boundary);
    if (mlen != 19 || strncasecmp(mime, "multipart/form-data", 19) != 0)
        attachments(o);
    o->get = false;
    free(o->data);
    o->data = o->form;
    o->data_len = o->form_len;
    o->form = NULL;
    o->has_data = true;
}
