/* SPDX-License-Identifier: MIT */
/* The allocator hook of the HTTP/3 core (vega_h3_opts.mem): a counting allocator proves every
 * block of a client and a server (streams, buffers, QPACK) goes through it and comes back, and a
 * sweep fails each allocation of a scripted exchange in turn (alone, then with every later one):
 * every call then succeeds or returns -ENOMEM (sticky for read_stream), never a protocol error,
 * nothing leaks, and what arrives is what was sent. */
#include "failmalloc.h"
#include "h3_test.h"

static struct vtest_fa M; /* the allocator's counters for the run in progress */

static bool ok_or_nomem(long long rc)
{
    return rc >= 0 || rc == -ENOMEM;
}

/* Moves one side's unidirectional bytes to the other; false when a call ran out of memory. */
static bool flush(vega_h3_conn *from, vega_h3_conn *to)
{
    uint8_t buf[97];
    for (;;) {
        uint64_t id;
        vega_ssize k = vega_h3_conn_write_uni(from, &id, buf, sizeof buf);
        VCHECK(k >= 0);
        if (k == 0)
            return true;
        vega_ssize r = vega_h3_conn_read_stream(to, id, buf, (size_t)k, false);
        VCHECK(ok_or_nomem(r));
        if (r < 0)
            return false;
        VCHECK_EQ(r, k);
    }
}

static bool exchange(vega_h3_conn *cli, vega_h3_conn *srv)
{
    return flush(cli, srv) && flush(srv, cli) && flush(cli, srv);
}

/* Sends a request with a body and reads it on the server (the encoder stream first, or after
 * when late, so that the head blocks); false on -ENOMEM. */
static bool request(vega_h3_conn *cli, vega_h3_conn *srv, uint64_t id, bool late, h3t_rec *rs)
{
    static uint8_t out[2048];
    vega_h3_request req = {.method = VEGA_HTTP_LIT("POST"),
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = VEGA_HTTP_LIT("/sweep")};
    static const vega_http_field f[] = {VEGA_HTTP_FIELD("user-agent", "sweep/1"),
                                        VEGA_HTTP_FIELD("x-custom", "value")};
    vega_ssize k = vega_h3_conn_write_request_head(cli, id, &req, f, 2, out, sizeof out);
    VCHECK(ok_or_nomem(k));
    if (k < 0)
        return false;
    size_t n = (size_t)k;
    n += (size_t)vega_h3_write_data_header(out + n, 9, 4);
    memcpy(out + n, "body", 4);
    n += 4;
    if (!late && !flush(cli, srv))
        return false;
    size_t before = rs->len;
    vega_ssize r = vega_h3_conn_read_stream(srv, id, out, n, true);
    VCHECK(ok_or_nomem(r));
    if (r < 0)
        return false;
    if (late) {
        if (!flush(cli, srv))
            return false;
        if ((size_t)r < n) {
            vega_ssize r2 = vega_h3_conn_read_stream(srv, id, out + r, n - (size_t)r, true);
            VCHECK(ok_or_nomem(r2));
            if (r2 < 0)
                return false;
        }
    }
    VCHECK(strstr(rs->log + before, "p=/sweep [user-agent: sweep/1] [x-custom: value]\n") != NULL);
    VCHECK(strstr(rs->log + before, "D") != NULL);
    return true;
}

static size_t run(size_t fail_at, bool after)
{
    M = (struct vtest_fa){.fail_at = (long)fail_at, .and_after = after};
    vega_mem tmem = vtest_fa_mem(&M);
    static h3t_rec rc, rs;
    memset(&rc, 0, sizeof rc);
    memset(&rs, 0, sizeof rs);
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.mem = &tmem;
    vega_h3_conn *cli = NULL, *srv = NULL;
    int e = vega_h3_conn_client_new(&cli, &h3t_cbs, &o, &rc);
    VCHECK(e == 0 || e == -ENOMEM);
    if (e == 0) {
        e = vega_h3_conn_server_new(&srv, &h3t_cbs, &o, &rs);
        VCHECK(e == 0 || e == -ENOMEM);
    }
    if (e == 0)
        e = vega_h3_conn_bind_streams(cli, 2, 6, 10);
    if (e == 0)
        e = vega_h3_conn_bind_streams(srv, 3, 7, 11);
    VCHECK(e == 0 || e == -ENOMEM);
    bool ok = e == 0 && exchange(cli, srv) && request(cli, srv, 0, false, &rs) &&
              request(cli, srv, 4, true, &rs) && exchange(cli, srv);
    if (ok) {
        uint8_t out[256];
        vega_ssize k = vega_h3_conn_write_response_head(srv, 0, 200, NULL, 0, out, sizeof out);
        VCHECK(ok_or_nomem(k));
        if (k > 0 && flush(srv, cli)) {
            vega_ssize r = vega_h3_conn_read_stream(cli, 0, out, (size_t)k, true);
            VCHECK(ok_or_nomem(r));
            if (r > 0)
                VCHECK(strstr(rc.log, "H0 head st=200\nE0\n") != NULL);
        }
    }
    /* Running out of memory is never mistaken for the peer's fault. */
    VCHECK(!cli || vega_h3_conn_get_error(cli, NULL) == 0);
    VCHECK(!srv || vega_h3_conn_get_error(srv, NULL) == 0);
    vega_h3_conn_free(cli);
    vega_h3_conn_free(srv);
    VCHECK_EQ(M.live, 0);
    return (size_t)M.calls;
}

VTEST(every_block_comes_back)
{
    size_t calls = run(0, false);
    VCHECK(calls > 20);
}

VTEST(failing_allocator_sweep)
{
    size_t calls = run(0, false);
    for (size_t i = 1; i <= calls + 1; i++) {
        run(i, false);
        run(i, true);
    }
}
