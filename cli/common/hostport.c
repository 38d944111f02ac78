/* SPDX-License-Identifier: MIT */
/* Splitting "host:port" and "[v6]:port" as users type them. */
#include <errno.h>
#include <string.h>

#include "cli.h"

bool cli_is_port(const char *s)
{
    uint64_t v;
    return s && strlen(s) <= 5 && cli_parse_uint(s, 0, 65535, &v) == 0;
}

static int copy(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

int cli_split_hostport(const char *s, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *h, *colon;
    size_t hn;
    if (!s)
        return -EINVAL;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -EINVAL;
        h = s + 1;
        hn = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return -EINVAL; /* no colon, or an unbracketed IPv6 address */
        h = s;
        hn = (size_t)(colon - s);
    }
    if (hn == 0 || !cli_is_port(colon + 1))
        return -EINVAL;
    int r = copy(host, hcap, h, hn);
    if (r == 0)
        r = copy(port, pcap, colon + 1, strlen(colon + 1));
    return r;
}

int cli_split_listen(const char *s, char *host, size_t hcap, char *port, size_t pcap)
{
    if (!s || s[0] != ':')
        return cli_split_hostport(s, host, hcap, port, pcap);
    if (!cli_is_port(s + 1))
        return -EINVAL;
    int r = copy(host, hcap, "127.0.0.1", 9);
    if (r == 0)
        r = copy(port, pcap, s + 1, strlen(s + 1));
    return r;
}
