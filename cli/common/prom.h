/* SPDX-License-Identifier: MIT */
/* A Prometheus scrape endpoint for the tools (vega-serve --metrics, vega-proxy --metrics): a
 * plain HTTP/1.1 listener of its own that answers GET (and HEAD) /metrics with the text a
 * render callback makes, in the text exposition format 0.0.4; 404 elsewhere, 405 for other
 * methods. Loopback only unless the tool's --metrics-public says otherwise. */
#ifndef VEGA_CLI_PROM_H
#define VEGA_CLI_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <vega/http_server.h>
#include <vega/io.h>
#include <vega/rt.h>

/* Makes the whole text of one scrape into a malloc'd buffer. Returns 0 or -errno. */
typedef int (*cli_prom_render_fn)(void *user, char **buf, size_t *len);

struct cli_prom {
    cli_prom_render_fn render;
    void *user;
    vega_http_server *http; /* NULL until started */
    vega_task *task;
};

/* Writes the runtime's metrics, then more(user, f) (0 or -errno) if more is not NULL, into a
 * malloc'd buffer: the usual render. Returns 0 or -errno (nothing allocated then). */
int cli_prom_render_with(int (*more)(void *user, FILE *f), void *user, char **buf, size_t *len);

/* Resolves the tool's --metrics HOST and PORT into addrs (at most cap) and refuses an address
 * that is not loopback unless public. Returns the count (>= 1) or minus an exit code, after
 * saying why (opt is the option's text, for the message). */
int cli_prom_resolve(const char *opt, const char *host, const char *port, bool public,
                     vega_addr *addrs, size_t cap);

/* Makes the listener on addrs[0..n) and on the inherited listening descriptors fds[0..nfds)
 * (a shard's; may be 0), prints "TOOL: metrics on http://ADDR/metrics" for each address
 * unless quiet, and serves in a task of its own. Returns 0 or an exit code, after saying why
 * (p is stopped then). */
int cli_prom_start(struct cli_prom *p, const char *tool, const vega_addr *addrs, int n,
                   const int *fds, size_t nfds, bool quiet);

/* Shuts the listener down (scrapes in flight get a second) and frees it. A no-op on a p that
 * was never started; p may be started again after. */
void cli_prom_stop(struct cli_prom *p);

/* Whether a is a loopback address (127/8, ::1, ::ffff:127/104). */
bool cli_addr_is_loopback(const vega_addr *a);

#endif
