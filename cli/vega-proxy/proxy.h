/* SPDX-License-Identifier: MIT */
/* vega-proxy: a SOCKS5, SOCKS4a and HTTP proxy on one port (microsocks', dante's and
 * tinyproxy's habits), on libvega's public API. */
#ifndef VEGA_PROXY_TOOL_H
#define VEGA_PROXY_TOOL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vega/vega.h>

#include "cli.h"

#define PROXY_MAX_LISTEN 16 /* -l given at most this often */
#define PROXY_MAX_ALLOW  64 /* --allow given at most this often */

/* An address range (CIDR). */
struct cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t ip[16];
    unsigned bits;
};

struct proxy_opts {
    const char *listen[PROXY_MAX_LISTEN];
    size_t nlisten;
    struct cidr allow[PROXY_MAX_ALLOW];
    size_t nallow;
    const char *user, *password; /* -u/-P: required from every client when set */
    uint64_t connect_ns;         /* --connect-timeout */
    uint64_t idle_ns;            /* --idle-timeout (also bounds a handshake) */
    uint64_t grace_ns;           /* --grace: how long SIGTERM lets tunnels finish */
    uint64_t max_conns;          /* --max-conns */
    size_t max_head;             /* --max-head: an HTTP request head */
    unsigned workers;
    vega_driver_kind driver;
    bool quiet;
    sigset_t stop_signals;
};

/* Shared by the acceptors and the tunnels. */
struct proxy_server {
    const struct proxy_opts *o;
    vega_group *tunnels;
    atomic_uint_fast64_t live, total;
};

/* The task of one accepted client (tunnel.c): arg is a struct tunnel_arg (taken). */
struct tunnel_arg {
    struct proxy_server *srv;
    vega_sock *sock;
    vega_addr peer;
};
void *tunnel_main(void *arg);

/* CIDR parsing and matching (acl.c). */
int cidr_parse(const char *s, struct cidr *out);
bool cidr_match(const struct cidr *c, const vega_addr *a);
bool addr_is_loopback(const vega_addr *a);

#endif
