/* SPDX-License-Identifier: MIT */
/* What the HTTP/2 and HTTP/3 requests (h2_req.c, h3_run.c) take from the options alike: the
 * method, the path, :authority, the lowercase -H names (RFC 9113 §8.2.1, RFC 9114 §4.2) and the
 * content-length. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "load.h"

const char *load_req_path(const struct load_opts *o)
{
    return o->paths_vary ? o->path_longest : o->path;
}

bool load_req_has_header(const struct load_opts *o, const char *name, size_t *at)
{
    for (unsigned i = 0; i < o->nheaders; i++)
        if (o->headers[i].name_len == strlen(name) &&
            strncasecmp(o->headers[i].name, name, o->headers[i].name_len) == 0) {
            if (at)
                *at = i;
            return true;
        }
    return false;
}

const char *load_req_method(struct load_opts *o)
{
    const char *method = o->method ? o->method : o->body ? "POST" : "GET";
    o->head_method = strcmp(method, "HEAD") == 0;
    return method;
}

int load_req_check_framing(const struct load_opts *o, const char *proto, char *err, size_t ecap)
{
    if (load_req_has_header(o, "content-length", NULL) ||
        load_req_has_header(o, "transfer-encoding", NULL)) {
        snprintf(err, ecap,
                 "-H: Content-Length is set by vega-load (from --body), and %s has "
                 "no Transfer-Encoding",
                 proto);
        return -EINVAL;
    }
    return 0;
}

vega_http_str load_req_authority(const struct load_opts *o)
{
    size_t hi;
    if (load_req_has_header(o, "host", &hi))
        return (vega_http_str){o->headers[hi].value, o->headers[hi].value_len};
    return (vega_http_str){o->host_header, strlen(o->host_header)};
}

size_t load_req_names_size(const struct load_opts *o)
{
    size_t names = 1;
    for (unsigned i = 0; i < o->nheaders; i++)
        names += o->headers[i].name_len;
    return names;
}

const char *load_req_lower_name(const struct load_header *h, char **names)
{
    if (h->name_len == 4 && strncasecmp(h->name, "host", 4) == 0)
        return NULL;
    char *nm = *names;
    for (size_t k = 0; k < h->name_len; k++) {
        char ch = h->name[k];
        nm[k] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
    }
    *names += h->name_len;
    return nm;
}

bool load_req_content_length(const struct load_opts *o, const char *method, char cl[24])
{
    if (!o->body && strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0)
        return false;
    snprintf(cl, 24, "%zu", o->body_len);
    return true;
}
