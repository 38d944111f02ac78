/* SPDX-License-Identifier: MIT */
/* A client core and a server core wired to each other in memory (RFC 9114, RFC 9204 in use):
 * SETTINGS exchanged on the control streams, requests with bodies and trailers, 100 requests
 * interleaved on many streams with the dynamic table, a request whose HEADERS arrive before the
 * encoder-stream entries they need (blocked, then unblocked), GOAWAY, extended CONNECT and
 * PRIORITY_UPDATE. */
#include "h3_test.h"

typedef struct pair {
    vega_h3_conn *cli, *srv;
    h3t_rec rc, rs;
    h3t_run to_srv, to_cli; /* delivery with a queue for blocked streams */
} pair;

static pair P;

static void pair_open(const vega_h3_opts *co, const vega_h3_opts *so)
{
    memset(&P, 0, sizeof P);
    VCHECK_EQ(vega_h3_conn_client_new(&P.cli, &h3t_cbs, co, &P.rc), 0);
    VCHECK_EQ(vega_h3_conn_server_new(&P.srv, &h3t_cbs, so, &P.rs), 0);
    VCHECK_EQ(vega_h3_conn_bind_streams(P.cli, 2, 6, 10), 0);
    VCHECK_EQ(vega_h3_conn_bind_streams(P.srv, 3, 7, 11), 0);
    P.to_srv = (h3t_run){.r = &P.rs, .c = P.srv};
    P.to_cli = (h3t_run){.r = &P.rc, .c = P.cli};
}

static void pair_close(void)
{
    VCHECK_EQ(P.to_srv.rc, 0);
    VCHECK_EQ(P.to_cli.rc, 0);
    vega_h3_conn_free(P.cli);
    vega_h3_conn_free(P.srv);
}

/* Moves what from's unidirectional streams have to the other side, in small pieces. Returns the
 * bytes moved. */
static size_t flush_uni(vega_h3_conn *from, h3t_run *to)
{
    static uint8_t buf[64];
    size_t total = 0;
    for (;;) {
        uint64_t id;
        vega_ssize k = vega_h3_conn_write_uni(from, &id, buf, 7);
        VCHECK(k >= 0);
        if (k == 0)
            break;
        h3t_feed_now(to, id, buf, (size_t)k, false);
        total += (size_t)k;
    }
    return total;
}

static void exchange(void)
{
    while (flush_uni(P.cli, &P.to_srv) + flush_uni(P.srv, &P.to_cli))
        ;
}

static size_t write_head(uint64_t id, const char *method, const char *path,
                         const vega_http_field *f, size_t n, uint8_t *out, size_t cap)
{
    vega_h3_request req = {.method = {method, strlen(method)},
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = {path, strlen(path)}};
    vega_ssize k = vega_h3_conn_write_request_head(P.cli, id, &req, f, n, out, cap);
    VCHECK(k > 0);
    return (size_t)k;
}

static size_t write_data(const char *s, uint8_t *out)
{
    size_t n = strlen(s);
    vega_ssize k = vega_h3_write_data_header(out, VEGA_H3_DATA_HEADER_MAX, n);
    VCHECK(k > 0);
    memcpy(out + k, s, n);
    return (size_t)k + n;
}

/* Our SETTINGS: the control stream's first bytes are its type and a SETTINGS frame with what
 * the options say, a reserved setting included (RFC 9114 §6.2.1, §7.2.4.1). */
VTEST(settings_first_on_control)
{
    vega_h3_opts o;
    vega_h3_opts_init(&o);
    o.enable_connect_protocol = true;
    o.enable_datagram = true;
    o.grease_seed = 12345;
    h3t_rec r = {0};
    vega_h3_conn *c;
    VCHECK_EQ(vega_h3_conn_server_new(&c, &h3t_cbs, &o, &r), 0);
    uint64_t id = 99;
    uint8_t out[256];
    VCHECK_EQ(vega_h3_conn_write_uni(c, &id, out, sizeof out), 0); /* nothing before binding */
    VCHECK_EQ(vega_h3_conn_bind_streams(c, 2, 7, 11), -EINVAL);    /* a client's id */
    VCHECK_EQ(vega_h3_conn_bind_streams(c, 3, 3, 11), -EINVAL);
    VCHECK_EQ(vega_h3_conn_bind_streams(c, 3, 7, 11), 0);
    VCHECK_EQ(vega_h3_conn_bind_streams(c, 15, 19, 23), -EINVAL);
    vega_ssize k = vega_h3_conn_write_uni(c, &id, out, sizeof out);
    VCHECK_EQ(id, 3);
    uint64_t seed = 12345, grease = 0x1f * (seed % 0x7ffff) + 0x21;
    h3t_buf want = {0}, p = {0};
    h3t_varint(&want, 0);
    uint64_t kv[] = {0x01, 4096, 0x06, 65536, 0x07, 16, 0x08, 1, 0x33, 1, grease, seed >> 20};
    for (size_t i = 0; i < 12; i++)
        h3t_varint(&p, kv[i]);
    h3t_frame(&want, VEGA__H3_FRAME_SETTINGS, p.b, p.n);
    VCHECK_EQ(k, (long long)want.n);
    VCHECK(memcmp(out, want.b, want.n) == 0);
    VCHECK(vega__h3_is_reserved(grease));
    /* Then the QPACK streams' type bytes (RFC 9204 §4.2). */
    VCHECK_EQ(vega_h3_conn_write_uni(c, &id, out, sizeof out), 1);
    VCHECK(id == 7 && out[0] == 0x02);
    VCHECK_EQ(vega_h3_conn_write_uni(c, &id, out, sizeof out), 1);
    VCHECK(id == 11 && out[0] == 0x03);
    VCHECK_EQ(vega_h3_conn_write_uni(c, &id, out, sizeof out), 0);
    /* GOAWAY goes on the control stream; ids never grow (§5.2). */
    VCHECK_EQ(vega_h3_conn_submit_goaway(c, 5), -EINVAL); /* not a request stream id */
    VCHECK_EQ(vega_h3_conn_submit_goaway(c, 8), 0);
    VCHECK_EQ(vega_h3_conn_submit_goaway(c, 12), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_uni(c, &id, out, sizeof out), 3);
    VCHECK(id == 3 && out[0] == 0x07 && out[1] == 1 && out[2] == 8);
    vega_h3_conn_free(c);
}

/* A request with a body and trailers, a response with a body; both sides' SETTINGS. */
VTEST(request_body_trailers)
{
    pair_open(NULL, NULL);
    exchange();
    VCHECK_STR(P.rs.log, "S mfs=65536 qcap=4096 qblk=16\n");
    VCHECK_STR(P.rc.log, "S mfs=65536 qcap=4096 qblk=16\n");
    P.rs.len = P.rc.len = 0, P.rs.log[0] = P.rc.log[0] = 0;
    static uint8_t out[4096];
    static const vega_http_field f[] = {VEGA_HTTP_FIELD("content-length", "11"),
                                        VEGA_HTTP_FIELD("user-agent", "vega-test/1")};
    size_t n = write_head(0, "POST", "/upload", f, 2, out, sizeof out);
    n += write_data("hello ", out + n);
    n += write_data("world", out + n);
    static const vega_http_field t[] = {VEGA_HTTP_FIELD("x-checksum", "abc")};
    vega_ssize k = vega_h3_conn_write_trailers(P.cli, 0, t, 1, out + n, sizeof out - n);
    VCHECK(k > 0);
    n += (size_t)k;
    exchange(); /* the encoder stream first: nothing blocks */
    h3t_feed_now(&P.to_srv, 0, out, n, true);
    VCHECK_STR(P.rs.log,
               "H0 head m=POST s=https a=example.com p=/upload cl=11 [content-length: 11] "
               "[user-agent: vega-test/1]\nD0 hello world\nH0 trailers [x-checksum: abc]\n"
               "E0\n");
    static const vega_http_field rf[] = {VEGA_HTTP_FIELD("content-type", "text/plain")};
    k = vega_h3_conn_write_response_head(P.srv, 0, 200, rf, 1, out, sizeof out);
    VCHECK(k > 0);
    n = (size_t)k + write_data("ok", out + k);
    exchange();
    h3t_feed_now(&P.to_cli, 0, out, n, true);
    VCHECK_STR(P.rc.log, "H0 head st=200 [content-type: text/plain]\nD0 ok\nE0\n");
    exchange(); /* section acknowledgments go back */
    VCHECK_EQ(P.cli->qenc->nsecs, 0);
    VCHECK_EQ(P.srv->qenc->nsecs, 0);
    pair_close();
}

/* 100 requests interleaved: heads first (with fields the dynamic table takes), then each
 * stream's body in two pieces round-robin; every response matches its request. */
VTEST(hundred_interleaved)
{
    pair_open(NULL, NULL);
    exchange();
    P.rs.len = P.rc.len = 0, P.rs.log[0] = P.rc.log[0] = 0;
    static uint8_t heads[100][512], bodies[100][2][64];
    static size_t nh[100], nb[100][2];
    for (int i = 0; i < 100; i++) {
        char path[32], body[32];
        snprintf(path, sizeof path, "/item/%d", i);
        snprintf(body, sizeof body, "body-%03d", i);
        vega_http_field f[] = {VEGA_HTTP_FIELD("user-agent", "vega-test/1"),
                               VEGA_HTTP_FIELD("accept", "text/plain"),
                               {VEGA_HTTP_LIT("x-request"), {path + 6, strlen(path + 6)}}};
        nh[i] = write_head((uint64_t)i * 4, "PUT", path, f, 3, heads[i], sizeof heads[i]);
        nb[i][0] = write_data(body, bodies[i][0]);
        nb[i][1] = write_data("!", bodies[i][1]);
    }
    exchange();
    for (int i = 0; i < 100; i++)
        h3t_feed_now(&P.to_srv, (uint64_t)i * 4, heads[i], nh[i], false);
    for (int part = 0; part < 2; part++)
        for (int i = 99; i >= 0; i--)
            h3t_feed_now(&P.to_srv, (uint64_t)i * 4, bodies[i][part], nb[i][part], part == 1);
    exchange();
    for (int i = 0; i < 100; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "H%d head m=PUT s=https a=example.com p=/item/%d [user-agent: vega-test/1] "
                 "[accept: text/plain] [x-request: %d]\n",
                 i * 4, i, i);
        VCHECK(strstr(P.rs.log, want) != NULL);
        /* The pieces come round-robin: each stream's first piece, then its second and end. */
        snprintf(want, sizeof want, "D%d body-%03d\n", i * 4, i);
        VCHECK(strstr(P.rs.log, want) != NULL);
        snprintf(want, sizeof want, "D%d !\nE%d\n", i * 4, i * 4);
        VCHECK(strstr(P.rs.log, want) != NULL);
    }
    /* The client's encoder used its dynamic table: user-agent and accept were inserted. */
    VCHECK(P.cli->qenc->t.inserted >= 2);
    VCHECK_EQ(P.srv->qdec->t.inserted, P.cli->qenc->t.inserted);
    for (int i = 0; i < 100; i++) {
        static uint8_t out[512];
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        vega_http_field f[] = {{VEGA_HTTP_LIT("x-answer"), {v, strlen(v)}},
                               VEGA_HTTP_FIELD("server", "vega")};
        vega_ssize k =
            vega_h3_conn_write_response_head(P.srv, (uint64_t)i * 4, 200, f, 2, out, sizeof out);
        VCHECK(k > 0);
        exchange();
        h3t_feed_now(&P.to_cli, (uint64_t)i * 4, out, (size_t)k, true);
        snprintf((char *)out, sizeof out, "H%d head st=200 [x-answer: %d] [server: vega]\nE%d\n",
                 i * 4, i, i * 4);
        VCHECK(strstr(P.rc.log, (char *)out) != NULL);
    }
    exchange();
    VCHECK_EQ(P.cli->qenc->nsecs, 0);
    VCHECK_EQ(P.srv->qenc->nsecs, 0);
    pair_close();
}

/* RFC 9204 §2.1.2, §2.2.1: the request's HEADERS arrive before the encoder-stream entries they
 * reference: read_stream stops after the HEADERS frame (the DATA stays with the caller), and
 * when the encoder stream arrives the head is delivered and the stream reported unblocked. */
VTEST(blocked_then_unblocked)
{
    pair_open(NULL, NULL);
    exchange();
    P.rs.len = P.rc.len = 0, P.rs.log[0] = P.rc.log[0] = 0;
    static uint8_t out[1024];
    static const vega_http_field f[] = {VEGA_HTTP_FIELD("user-agent", "blocking-agent"),
                                        VEGA_HTTP_FIELD("content-length", "4")};
    size_t n = write_head(0, "POST", "/b", f, 2, out, sizeof out);
    size_t head_len = n;
    n += write_data("data", out + n);
    VCHECK(vega_qpack_encoder_want_write(P.cli->qenc)); /* the inserts wait to be sent */
    vega_ssize k = vega_h3_conn_read_stream(P.srv, 0, out, n, true);
    VCHECK_EQ(k, (long long)head_len); /* blocked: the DATA frame stays with us */
    VCHECK_STR(P.rs.log, "");
    VCHECK_EQ(vega_qpack_decoder_blocked_count(P.srv->qdec), 1);
    VCHECK_EQ(vega_h3_conn_read_stream(P.srv, 0, out + k, n - (size_t)k, true), 0); /* still */
    /* Now the encoder stream. */
    flush_uni(P.cli, &P.to_srv);
    VCHECK_EQ(P.rs.unblocked_total, 1);
    VCHECK_STR(P.rs.log, "H0 head m=POST s=https a=example.com p=/b cl=4 "
                         "[user-agent: blocking-agent] [content-length: 4]\n");
    VCHECK_EQ(vega_h3_conn_read_stream(P.srv, 0, out + k, n - (size_t)k, true),
              (long long)(n - (size_t)k));
    VCHECK_STR(P.rs.log + strlen(P.rs.log) - 11, "D0 data\nE0\n");
    /* The server's decoder acknowledged the section: the client's encoder forgets it. */
    exchange();
    VCHECK_EQ(P.cli->qenc->nsecs, 0);
    VCHECK_EQ(P.cli->qenc->known_received, P.cli->qenc->t.inserted);
    pair_close();
}

/* A blocked head whose stream ended with it: delivered with the end, no unblocked report. */
VTEST(blocked_with_fin)
{
    pair_open(NULL, NULL);
    exchange();
    P.rs.len = 0, P.rs.log[0] = 0;
    static uint8_t out[1024];
    static const vega_http_field f[] = {VEGA_HTTP_FIELD("x-custom", "value-one")};
    size_t n = write_head(0, "GET", "/", f, 1, out, sizeof out);
    VCHECK_EQ(vega_h3_conn_read_stream(P.srv, 0, out, n, true), (long long)n);
    VCHECK_STR(P.rs.log, "");
    flush_uni(P.cli, &P.to_srv);
    VCHECK_EQ(P.rs.unblocked_total, 0);
    VCHECK_STR(P.rs.log, "H0 head m=GET s=https a=example.com p=/ [x-custom: value-one]\nE0\n");
    /* A blocked stream the caller abandons: QPACK forgets it (a Stream Cancellation). */
    n = write_head(4, "GET", "/", (const vega_http_field[]){VEGA_HTTP_FIELD("x-other", "two")}, 1,
                   out, sizeof out);
    VCHECK_EQ(vega_h3_conn_read_stream(P.srv, 4, out, n, false), (long long)n);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(P.srv->qdec), 1);
    VCHECK_EQ(vega_h3_conn_close_stream(P.srv, 4), 0);
    VCHECK_EQ(vega_qpack_decoder_blocked_count(P.srv->qdec), 0);
    exchange();
    VCHECK_EQ(P.cli->qenc->nsecs, 0); /* cancelled on the client's side too */
    pair_close();
}

/* §5.2: the server's GOAWAY stops new requests; one at or above the id is rejected. */
VTEST(goaway)
{
    pair_open(NULL, NULL);
    exchange();
    P.rs.len = P.rc.len = 0, P.rs.log[0] = P.rc.log[0] = 0;
    static uint8_t out[1024];
    size_t n0 = write_head(0, "GET", "/a", NULL, 0, out, sizeof out);
    h3t_feed_now(&P.to_srv, 0, out, n0, true);
    size_t n4 = write_head(4, "GET", "/b", NULL, 0, out, sizeof out);
    VCHECK_EQ(vega_h3_conn_submit_goaway(P.srv, 4), 0);
    VCHECK_EQ(vega_h3_conn_get_next_request_id(P.srv), 4);
    exchange();
    VCHECK_STR(P.rc.log, "G4\n");
    h3t_feed_now(&P.to_srv, 4, out, n4, true);
    VCHECK(strstr(P.rs.log, "X4 H3_REQUEST_REJECTED\n") != NULL);
    vega_h3_request req = {.method = VEGA_HTTP_LIT("GET"),
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = VEGA_HTTP_LIT("/")};
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 8, &req, NULL, 0, out, sizeof out),
              VEGA_ERR_H3_GOAWAY);
    pair_close();
}

/* RFC 9220: extended CONNECT once the server's SETTINGS enabled it; RFC 9218 PRIORITY_UPDATE. */
VTEST(extended_connect_and_priority)
{
    vega_h3_opts so;
    vega_h3_opts_init(&so);
    so.enable_connect_protocol = true;
    pair_open(NULL, &so);
    static uint8_t out[1024];
    vega_h3_request req = {.method = VEGA_HTTP_LIT("CONNECT"),
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = VEGA_HTTP_LIT("/chat"),
                           .protocol = VEGA_HTTP_LIT("websocket")};
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, NULL, 0, out, sizeof out), -EAGAIN);
    exchange();
    VCHECK(strstr(P.rc.log, " cp\n") != NULL);
    P.rs.len = 0, P.rs.log[0] = 0;
    vega_ssize k = vega_h3_conn_write_request_head(P.cli, 0, &req, NULL, 0, out, sizeof out);
    VCHECK(k > 0);
    exchange();
    h3t_feed_now(&P.to_srv, 0, out, (size_t)k, false);
    VCHECK_STR(P.rs.log, "H0 head m=CONNECT s=https a=example.com p=/chat pr=websocket\n");
    vega_h3_priority prio = {.urgency = 1, .incremental = true};
    VCHECK_EQ(vega_h3_conn_submit_priority_update(P.cli, 0, &prio), 0);
    VCHECK_EQ(vega_h3_conn_submit_priority_update(P.srv, 0, &prio), -EINVAL);
    exchange();
    VCHECK(strstr(P.rs.log, "P0 u=1i\n") != NULL);
    pair_close();

    /* Without the server's setting: refused on the client. */
    pair_open(NULL, NULL);
    exchange();
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, NULL, 0, out, sizeof out), -EINVAL);
    pair_close();
}

/* Outgoing fields are checked as a receiver would (§4.2): refused with -EINVAL, and a buffer
 * too small is VEGA_ERR_NOBUF with nothing changed. */
VTEST(outgoing_checks)
{
    pair_open(NULL, NULL);
    exchange();
    static uint8_t out[1024];
    vega_h3_request req = {.method = VEGA_HTTP_LIT("GET"),
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = VEGA_HTTP_LIT("/")};
    static const vega_http_field bad[][1] = {
        {VEGA_HTTP_FIELD("Upper", "x")},       {VEGA_HTTP_FIELD("connection", "close")},
        {VEGA_HTTP_FIELD("te", "gzip")},       {VEGA_HTTP_FIELD(":path", "/x")},
        {VEGA_HTTP_FIELD("x-crlf", "a\r\nb")}, {VEGA_HTTP_FIELD("", "x")},
        {VEGA_HTTP_FIELD("upgrade", "h2c")},   {VEGA_HTTP_FIELD("x-sp", " lead")},
    };
    for (size_t i = 0; i < VEGA__ARRAY_LEN(bad); i++)
        VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, bad[i], 1, out, sizeof out),
                  -EINVAL);
    static const vega_http_field te[] = {VEGA_HTTP_FIELD("te", "trailers")};
    vega_h3_request r2 = req;
    r2.path = (vega_http_str)VEGA_HTTP_LIT("");
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &r2, NULL, 0, out, sizeof out), -EINVAL);
    r2 = req;
    r2.method = (vega_http_str)VEGA_HTTP_LIT("CONNECT");
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &r2, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 1, &req, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, te, 1, out, 10), VEGA_ERR_NOBUF);
    VCHECK(vega__h3_stream_find(P.cli, 0) == NULL);
    VCHECK(vega_h3_conn_write_request_head(P.cli, 0, &req, te, 1, out, sizeof out) > 0);
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, NULL, 0, out, sizeof out), -EINVAL);
    /* Responses: status range, no 101, te refused. */
    VCHECK_EQ(vega_h3_conn_write_response_head(P.srv, 0, 101, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_response_head(P.srv, 0, 99, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_response_head(P.srv, 0, 600, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_response_head(P.srv, 0, 200, te, 1, out, sizeof out), -EINVAL);
    VCHECK_EQ(vega_h3_conn_write_response_head(P.cli, 0, 200, NULL, 0, out, sizeof out), -EINVAL);
    VCHECK(vega_h3_conn_write_response_head(P.srv, 0, 103, NULL, 0, out, sizeof out) > 0);
    VCHECK_EQ(vega_h3_conn_write_trailers(P.srv, 0, te, 1, out, sizeof out), -EINVAL);
    /* DATA frame headers. */
    VCHECK_EQ(vega_h3_write_data_header(out, 1, 5), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_h3_write_data_header(out, 9, 1ull << 62), -EINVAL);
    VCHECK_EQ(vega_h3_write_data_header(out, 9, 1u << 20), 5);
    VCHECK(out[0] == 0 && out[1] == 0x80 && out[2] == 0x10 && out[3] == 0 && out[4] == 0);
    pair_close();
}

/* The peer's SETTINGS_MAX_FIELD_SECTION_SIZE is respected when sending (§4.2.2). */
VTEST(peer_field_section_limit)
{
    vega_h3_opts so;
    vega_h3_opts_init(&so);
    so.max_field_section_size = 200;
    pair_open(NULL, &so);
    exchange();
    vega_h3_settings s;
    VCHECK(vega_h3_conn_get_peer_settings(P.cli, &s));
    VCHECK_EQ(s.max_field_section_size, 200);
    static uint8_t out[1024];
    static char big[200];
    memset(big, 'v', sizeof big - 1);
    vega_http_field f[] = {{VEGA_HTTP_LIT("x-big"), {big, strlen(big)}}};
    vega_h3_request req = {.method = VEGA_HTTP_LIT("GET"),
                           .scheme = VEGA_HTTP_LIT("https"),
                           .authority = VEGA_HTTP_LIT("example.com"),
                           .path = VEGA_HTTP_LIT("/")};
    VCHECK_EQ(vega_h3_conn_write_request_head(P.cli, 0, &req, f, 1, out, sizeof out), -EINVAL);
    pair_close();
}
