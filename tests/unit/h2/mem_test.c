/* SPDX-License-Identifier: MIT */
/* The HTTP/2 core's allocator hook (vega_h2_opts.mem): a counting allocator proves every block
 * goes through it and comes back; a failing one sweeps each allocation of a whole conversation
 * (client and server, bodies, trailers, resets, GOAWAY) in turn -- alone, then with every later
 * one -- and checks that every call fails only with the codes its contract names, that what
 * arrives is whole and right, that nothing hangs, and that nothing leaks. */
#include "h2_test.h"

static uint8_t body[40000];

struct side {
    struct tmem m;
    struct rec r;
    vega_h2_conn *c;
};

static int answer(struct rec *r, int32_t id, const vega_h2_head *h)
{
    if (h->kind != VEGA_H2_HEAD_REQUEST)
        return 0;
    vega_hpack_field f[] = {FLD(":status", "200"), FLD("content-length", "20000")};
    int rc = vega_h2_submit_response(r->conn, id, f, 2, 0);
    VCHECK(rc == 0 || rc == -ENOMEM);
    if (rc == 0)
        VCHECK_EQ(vega_h2_stream_write(r->conn, id, body, 20000, VEGA_H2_FLAG_END_STREAM), 20000);
    return 0;
}

static bool read_ok(int rc)
{
    return rc == 0 || rc == -ENOMEM || rc == VEGA_ERR_CLOSED || rc == VEGA_ERR_PROTO;
}

/* One conversation; returns the number of responses that arrived whole. */
static int conversation(struct side *cl, struct side *sv)
{
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.mem = &cl->m.mem;
    memset(&cl->r, 0, sizeof cl->r);
    memset(&sv->r, 0, sizeof sv->r);
    cl->c = sv->c = NULL;
    int rc = vega_h2_conn_client_new(&cl->c, &rec_cbs, &o, &cl->r);
    VCHECK(rc == 0 || rc == -ENOMEM);
    o.mem = &sv->m.mem;
    int rs = vega_h2_conn_server_new(&sv->c, &rec_cbs, &o, &sv->r);
    VCHECK(rs == 0 || rs == -ENOMEM);
    int whole = 0;
    if (rc == 0 && rs == 0) {
        cl->r.conn = cl->c;
        sv->r.conn = sv->c;
        cl->r.consume = sv->r.consume = true;
        sv->r.on_head = answer;
        cl->r.expect = sv->r.expect = body;
        vega_hpack_field post[] = {FLD(":method", "POST"), FLD(":scheme", "https"),
                                   FLD(":authority", "a"), FLD(":path", "/up")};
        int32_t ids[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            rc = vega_h2_submit_request(cl->c, i == 1 ? post : get_root, 4,
                                        i == 1 ? 0 : VEGA_H2_FLAG_END_STREAM, NULL, &ids[i]);
            VCHECK(rc == 0 || rc == -ENOMEM);
        }
        if (ids[1]) {
            VCHECK_EQ(vega_h2_stream_write(cl->c, ids[1], body, 30000, 0), 30000);
        }
        static uint8_t buf[8192];
        bool trailers = false;
        for (int round = 0, idle = 0; round < 20000 && idle < 3; round++) {
            bool moved = false;
            vega_h2_conn *from[2] = {cl->c, sv->c}, *to[2] = {sv->c, cl->c};
            for (int k = 0; k < 2; k++) {
                vega_ssize n = vega_h2_conn_write(from[k], buf, sizeof buf, 0);
                VCHECK(n >= 0 || n == -ENOMEM);
                if (n > 0) {
                    moved = true;
                    VCHECK(read_ok(vega_h2_conn_read(to[k], buf, (size_t)n, 0)));
                }
            }
            /* The upload's trailers once its span is out. */
            if (ids[1] && !trailers && cl->r.writable) {
                vega_hpack_field t[] = {FLD("x-sum", "1")};
                rc = vega_h2_submit_trailers(cl->c, ids[1], t, 1);
                VCHECK(rc == 0 || rc == -ENOMEM || rc == VEGA_ERR_CLOSED ||
                       rc == VEGA_ERR_H2_STREAM_CLOSED);
                trailers = rc != -ENOMEM;
                moved = true;
            }
            idle = moved ? 0 : idle + 1;
        }
        /* What arrived is the body, and whole: 20000 bytes per response that ended. */
        whole = (int)(cl->r.data_bytes / 20000);
        VCHECK_EQ(cl->r.data_bytes % 20000, 0);
        VCHECK(!cl->r.bad && !sv->r.bad);
    }
    vega_h2_conn_free(cl->c);
    vega_h2_conn_free(sv->c);
    VCHECK_EQ(cl->m.live_blocks, 0);
    VCHECK_EQ(sv->m.live_blocks, 0);
    return whole;
}

/* Without failures: everything arrives, and every block went through the hook. */
VTEST(counting_allocator)
{
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7 + 3);
    static struct side cl, sv;
    tmem_init(&cl.m);
    tmem_init(&sv.m);
    VCHECK_EQ(conversation(&cl, &sv), 3);
    VCHECK(cl.m.calls > 5 && sv.m.calls > 5);
    /* An idle connection is small: the server after the conversation held little. */
    VCHECK(sv.m.peak_bytes < 256 * 1024);
}

/* Fails each allocation of one side in turn (and, with after, every later one too). */
static void sweep(bool after)
{
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7 + 3);
    static struct side cl, sv;
    tmem_init(&cl.m);
    tmem_init(&sv.m);
    conversation(&cl, &sv);
    size_t calls[2] = {cl.m.calls, sv.m.calls};
    VCHECK(calls[0] > 10 && calls[1] > 10);
    if (getenv("H2_MEM_VERBOSE"))
        fprintf(stderr, "calls: %zu client, %zu server\n", calls[0], calls[1]);
    for (int side = 0; side < 2; side++) {
        for (size_t fail = 1; fail <= calls[side]; fail++) {
            tmem_init(&cl.m);
            tmem_init(&sv.m);
            struct tmem *m = side ? &sv.m : &cl.m;
            m->fail_at = fail;
            m->fail_after = after;
            conversation(&cl, &sv);
            VCHECK(m->failed > 0);
        }
    }
}

VTEST(failing_allocator_sweep_one)
{
    sweep(false);
}

VTEST(failing_allocator_sweep_all_after)
{
    sweep(true);
}

/* After a request with a 40 KB header section and its answer, an idle server connection gives
 * the large buffers back: what it holds is its struct, the HPACK tables and small buffers. */
VTEST(idle_connection_is_small)
{
    static struct side cl, sv;
    tmem_init(&cl.m);
    tmem_init(&sv.m);
    vega_h2_opts o;
    vega_h2_opts_init(&o);
    o.mem = &cl.m.mem;
    struct pair p;
    memset(&p, 0, sizeof p);
    VCHECK_EQ(vega_h2_conn_client_new(&p.cli, &rec_cbs, &o, &p.rc), 0);
    o.mem = &sv.m.mem;
    VCHECK_EQ(vega_h2_conn_server_new(&p.srv, &rec_cbs, &o, &p.rs), 0);
    p.rc.conn = p.cli;
    p.rs.conn = p.srv;
    p.rc.consume = p.rs.consume = true;
    p.rs.on_head = answer;
    static char big[40000];
    memset(big, 'c', sizeof big);
    vega_hpack_field f[5] = {FLD(":method", "GET"),
                             FLD(":scheme", "https"),
                             FLD(":authority", "a"),
                             FLD(":path", "/"),
                             {{"x-big", 5}, {big, sizeof big}, VEGA_HPACK_INDEX_AUTO}};
    VCHECK_EQ(vega_h2_submit_request(p.cli, f, 5, VEGA_H2_FLAG_END_STREAM, NULL, NULL), 0);
    VCHECK_EQ(pair_run(&p), 0);
    VCHECK(rec_has(&p.rs, "H1 req GET"));
    VCHECK_EQ(p.rc.data_bytes, 20000);
    VCHECK(sv.m.peak_bytes > 40000);
    if (getenv("H2_MEM_VERBOSE"))
        fprintf(stderr, "idle server: %zu bytes in %zu blocks (peak %zu)\n", sv.m.live_bytes,
                sv.m.live_blocks, sv.m.peak_bytes);
    VCHECK(sv.m.live_bytes < 8 * 1024);
    VCHECK(cl.m.live_bytes < 8 * 1024);
    pair_fini(&p);
    VCHECK_EQ(sv.m.live_blocks, 0);
}
