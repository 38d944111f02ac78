/* SPDX-License-Identifier: MIT */
/* vega-serve: the settings' defaults, the served directory opened once, and the server options
 * for the handler: shared by main.c and the whole-server fuzz target
 * (tests/fuzz/http_server_fuzz.c), so that both serve with the same state. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "serve.h"

struct serve_opts serve_o;

void serve_defaults(void)
{
    serve_o.listing = true;
    serve_o.symlinks = true;
    serve_o.compress = true;
    serve_o.compress_min = 1024;
    serve_o.cache = true;
    serve_o.etag = true;
    serve_o.last_modified = true;
    serve_o.realm = "vega-serve";
    serve_o.auth_cache = 256;
    serve_o.upload_max = (uint64_t)1 << 30;
    serve_o.cache_size = 64u << 20;
    serve_o.cache_max_file = 64u << 10;
    serve_o.driver = VEGA_DRIVER_DEFAULT;
    serve_o.http3 = true;
    serve_o.http2 = true;
    serve_o.log_fd = -1;
    serve_o.root_fd = -1;
}

int serve_open_root(void)
{
    if (!realpath(serve_o.dir, serve_o.root)) {
        cli_err(serve_o.dir, "%s", strerror(errno));
        return -1;
    }
    serve_o.root_len = strlen(serve_o.root);
    serve_o.root_fd = open(serve_o.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (serve_o.root_fd < 0) {
        cli_err(serve_o.dir, "%s", errno == ENOTDIR ? "not a directory" : strerror(errno));
        return -1;
    }
    /* Probe once: where the kernel resolves beneath the root for us, paths need no realpath. */
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = O_RDONLY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, serve_o.root_fd, ".", &how, sizeof(how));
    serve_o.use_openat2 = fd >= 0;
    if (fd >= 0)
        close((int)fd);
    else
        cli_log(1, "openat2 unavailable (%s): paths are checked with realpath", strerror(errno));
    return 0;
}

void serve_server_opts(vega_http_server_opts *so)
{
    vega_http_server_opts_init(so);
    so->handler = serve_handle;
    so->on_log = serve_o.log_fd >= 0 ? serve_on_log : NULL;
    so->server_header = "vega-serve/" VEGA_VERSION_STRING;
}
