/* SPDX-License-Identifier: MIT */
/* --interface and --local-port: where vega-curl's TCP connections are bound before they
 * connect (vega_http_client_opts.local), with curl 7.88's argument forms and exit codes. */
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "curl.h"

void curl_local_port_parse(struct curl_opts *o, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long lo = strtoul(arg, &end, 10), hi = lo;
    if (end != arg && *end == '-') {
        const char *m = end + 1;
        hi = strtoul(m, &end, 10);
        if (end == m)
            end = (char *)m - 1; /* "N-": not a number after the dash */
    }
    if (errno || end == arg || *end || arg[0] == '-' || lo > 65535 || hi < lo || hi > 65535)
        cli_usage_error("option --local-port: is badly used here");
    o->local_port_min = (uint16_t)lo;
    o->local_port_max = (uint16_t)hi;
}

/* NAME as a host: its first address of the family -4/-6 ask for. */
static bool host_addr(const struct curl_opts *o, const char *name, vega_addr *out)
{
    struct addrinfo hints = {.ai_family = o->ip_family, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, NULL, &hints, &res) != 0 || !res)
        return false;
    bool ok = res->ai_addrlen <= sizeof out->ss;
    if (ok) {
        memset(out, 0, sizeof *out);
        memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
        out->len = (socklen_t)res->ai_addrlen;
    }
    freeaddrinfo(res);
    return ok;
}

int curl_local_setup(const struct curl_opts *o, vega_tcp_local *out)
{
    memset(out, 0, sizeof *out);
    if (!o->interface && !o->local_port_min)
        return 0;
    /* what libvega does not bind: say so rather than connect from elsewhere */
    if (o->proxy && *o->proxy)
        return curl_fail(o, CE_FAILED_INIT,
                         "--interface and --local-port are not supported through a proxy");
    if (o->unix_path[0])
        return curl_fail(o, CE_FAILED_INIT,
                         "--interface and --local-port do not apply to a Unix socket");
    if (o->http_version == 30)
        return curl_fail(o, CE_FAILED_INIT,
                         "--interface and --local-port are not supported over HTTP/3");
    out->port_min = o->local_port_min;
    out->port_max = o->local_port_max;
    const char *arg = o->interface;
    if (!arg)
        return 0;
    if (strncmp(arg, "if!", 3) == 0) {
        const char *name = arg + 3;
        if (strlen(name) >= sizeof out->device || !if_nametoindex(name))
            return curl_fail(o, CE_INTERFACE_FAILED, "Couldn't bind to interface '%s'", name);
        memcpy(out->device, name, strlen(name) + 1);
        return 0;
    }
    bool host_only = strncmp(arg, "host!", 5) == 0;
    const char *name = host_only ? arg + 5 : arg;
    /* a plain NAME is an interface when one has that name (curl's order), else a host */
    if (!host_only && strlen(name) < sizeof out->device && if_nametoindex(name)) {
        memcpy(out->device, name, strlen(name) + 1);
        return 0;
    }
    if (!*name || !host_addr(o, name, &out->addr))
        return curl_fail(o, CE_INTERFACE_FAILED, "Couldn't bind to '%s'", name);
    return 0;
}
