/* SPDX-License-Identifier: MIT */
/* A small UDP driver of libvega's sans-I/O QUIC core (public API only) for interop runs against
 * real peers: a client that handshakes (following Version Negotiation), optionally resumes,
 * migrates, updates keys and GETs one path, then closes with H3_NO_ERROR; and a server endpoint
 * (Retry with an authenticated token, Version Negotiation, routing by CID, ECN) that answers every
 * HTTP/3 request with one hand-encoded response. A test harness, not an HTTP/3 implementation. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <vega/crypto.h>
#include <vega/quic.h>
#include <vega/quic_wire.h>

#define DGRAM_CAP          1500 /* room per datagram (the core's DPLPMTUD stops at 1452 by default) */
#define RECV_CAP           65536
#define RECV_BATCH         256  /* datagrams read per wakeup before we let the core write */
#define WRITE_BATCH        1024 /* datagrams written per round (the core returns 0 before that) */
#define MAX_CONNS          16   /* server: live connections */
#define MAX_REQS           32   /* server: bidirectional request streams tracked per connection */
#define MAX_SCIDS          16   /* server: our CIDs per connection looked at for routing */
#define MAX_BODY           (1u << 20)
#define MAX_FILE           (1u << 20)
#define TOKEN_TTL_NS       (10ull * 1000000000ull)
#define H3_NO_ERROR        0x100
#define H3_SETTINGS_STREAM "\x00\x04\x00" /* control stream type 0, SETTINGS, length 0 */

static const char *prog = "vega-quic-probe";

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static const char *suite_name(uint16_t s)
{
    switch (s) {
    case VEGA_QUIC_TLS_AES_128_GCM_SHA256:
        return "TLS_AES_128_GCM_SHA256";
    case VEGA_QUIC_TLS_AES_256_GCM_SHA384:
        return "TLS_AES_256_GCM_SHA384";
    case VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256:
        return "TLS_CHACHA20_POLY1305_SHA256";
    default:
        return "unknown";
    }
}

/* TLS alert names (RFC 8446 §6) for CRYPTO_ERROR closes. */
static const char *alert_name(unsigned a)
{
    switch (a) {
    case 0:
        return "close_notify";
    case 10:
        return "unexpected_message";
    case 20:
        return "bad_record_mac";
    case 22:
        return "record_overflow";
    case 40:
        return "handshake_failure";
    case 42:
        return "bad_certificate";
    case 43:
        return "unsupported_certificate";
    case 44:
        return "certificate_revoked";
    case 45:
        return "certificate_expired";
    case 46:
        return "certificate_unknown";
    case 47:
        return "illegal_parameter";
    case 48:
        return "unknown_ca";
    case 49:
        return "access_denied";
    case 50:
        return "decode_error";
    case 51:
        return "decrypt_error";
    case 70:
        return "protocol_version";
    case 71:
        return "insufficient_security";
    case 80:
        return "internal_error";
    case 86:
        return "inappropriate_fallback";
    case 109:
        return "missing_extension";
    case 110:
        return "unsupported_extension";
    case 112:
        return "unrecognized_name";
    case 115:
        return "unknown_psk_identity";
    case 116:
        return "certificate_required";
    case 120:
        return "no_application_protocol";
    default:
        return "unknown_alert";
    }
}

/* "transport FRAME_ENCODING_ERROR (0x7)", "CRYPTO_ERROR 0x178 (alert no_application_protocol)",
 * "application 0x100" plus the reason phrase. */
static void describe_close(char *out, size_t cap, const vega_quic_event *ev)
{
    char reason[160];
    snprintf(reason, sizeof reason, "%.*s", (int)(ev->len < 120 ? ev->len : 120),
             ev->data ? (const char *)ev->data : "");
    for (char *p = reason; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    const char *who = ev->local ? "by us" : "by the peer";
    if (ev->app)
        snprintf(out, cap, "application error 0x%" PRIx64 " %s reason \"%s\"", ev->error_code, who,
                 reason);
    else if (ev->error_code >= 0x100 && ev->error_code <= 0x1ff)
        snprintf(out, cap, "CRYPTO_ERROR 0x%" PRIx64 " (alert %s) %s reason \"%s\"", ev->error_code,
                 alert_name((unsigned)(ev->error_code - 0x100)), who, reason);
    else
        snprintf(out, cap, "transport error %s (0x%" PRIx64 ") %s reason \"%s\"",
                 vega_quic_transport_error_name(ev->error_code), ev->error_code, who, reason);
}

static int read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    char *buf = malloc(MAX_FILE);
    if (!buf) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(buf, 1, MAX_FILE, f);
    int bad = ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        free(buf);
        return -EFBIG;
    }
    *data = buf;
    *len = n;
    return 0;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl: %s", strerror(errno));
}

static int resolve(const char *host, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_family = AF_UNSPEC}, *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0 || !ai)
        return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static bool is_ip_literal(const char *s)
{
    struct in6_addr a6;
    struct in_addr a4;
    return inet_pton(AF_INET, s, &a4) == 1 || inet_pton(AF_INET6, s, &a6) == 1;
}

/* Drains a uni or bidi stream we do not care about (the peer's control and QPACK streams). */
static void discard_stream(vega_quic_conn *c, uint64_t id)
{
    uint8_t buf[4096];
    for (int i = 0; i < 1024; i++) {
        bool fin = false;
        vega_ssize n = vega_quic_stream_read(c, id, buf, sizeof buf, &fin);
        if (n <= 0 || fin)
            return;
    }
}

/* ---- ECN (RFC 9000 §13.4): the codepoint of each datagram in and out ------------------------ */

static bool ecn_on = true; /* --no-ecn turns it off */

/* Asks for the TOS / traffic class byte of received datagrams. */
static void ecn_enable(int fd, int family)
{
    int one = 1;
    if (!ecn_on)
        return;
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
    else
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
}

/* Marks what fd sends from now on (kept per socket: the core marks all or nothing per path). */
static void ecn_mark(int fd, int family, uint8_t ecn, int *last)
{
    int tos = ecn_on ? ecn & 3 : 0;
    if (tos == *last)
        return;
    *last = tos;
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
    else
        setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
}

/* recvfrom that also returns the ECN bits of the datagram. */
static ssize_t recv_dgram(int fd, uint8_t *buf, size_t cap, struct sockaddr_storage *peer,
                          socklen_t *peer_len, uint8_t *ecn)
{
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    union {
        struct cmsghdr align;
        uint8_t b[CMSG_SPACE(sizeof(int)) * 2];
    } ctl;
    struct msghdr m = {.msg_name = peer,
                       .msg_namelen = peer ? sizeof *peer : 0,
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.b,
                       .msg_controllen = sizeof ctl.b};
    ssize_t n = recvmsg(fd, &m, 0);
    *ecn = VEGA_QUIC_ECN_NOT_ECT;
    if (n < 0)
        return n;
    if (peer_len)
        *peer_len = m.msg_namelen;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
        if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS && cm->cmsg_len >= CMSG_LEN(1))
            *ecn = CMSG_DATA(cm)[0] & 3;
        else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_TCLASS &&
                 cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int tc;
            memcpy(&tc, CMSG_DATA(cm), sizeof tc);
            *ecn = (uint8_t)(tc & 3);
        }
    }
    return n;
}

/* Sends what the core has now. Returns the datagrams sent, or -1 when the core is closed.
 * peer: where to send, updated when the core moves to another path (after a peer's migration,
 * the new one). */
static int flush_conn(int fd, int family, int *tos, vega_quic_conn *c,
                      struct sockaddr_storage *peer, socklen_t *peer_len, uint64_t *sent_bytes)
{
    uint8_t out[DGRAM_CAP];
    int n = 0;
    for (int i = 0; i < WRITE_BATCH; i++) {
        vega_quic_path path;
        uint8_t ecn = 0;
        vega_ssize w = vega_quic_conn_write(c, &path, &ecn, out, sizeof out, now_ns());
        if (w == 0)
            break;
        if (w < 0) {
            if (w == VEGA_ERR_CLOSED)
                return -1;
            fprintf(stderr, "%s: vega_quic_conn_write: %s\n", prog, vega_crypto_strerror((int)w));
            return -1;
        }
        if (peer && path.remote_len > 0 && path.remote_len <= sizeof *peer) {
            memcpy(peer, &path.remote, path.remote_len);
            *peer_len = path.remote_len;
        }
        ecn_mark(fd, family, ecn, tos);
        ssize_t s = sendto(fd, out, (size_t)w, 0, (const struct sockaddr *)peer, *peer_len);
        if (s < 0 && errno != EAGAIN && errno != ECONNREFUSED)
            fprintf(stderr, "%s: send: %s\n", prog, strerror(errno));
        if (sent_bytes && s > 0)
            *sent_bytes += (uint64_t)s;
        n++;
    }
    return n;
}

/* ---- client ---------------------------------------------------------------------------------- */

struct client_opts {
    const char *host, *port, *alpn, *ca, *sni, *get, *out;
    uint32_t version;
    uint16_t suite;
    bool key_update, insecure, resume, early_data, migrate;
    uint64_t timeout_ms;
};

enum cstate {
    C_HANDSHAKE,
    C_CONFIRM,
    C_TICKET,
    C_MIGRATE,
    C_KU_WAIT,
    C_FINISH,
    C_CLOSING,
    C_DONE
};

/* --get: one HTTP/3 GET, hand-encoded (QPACK static table only, no Huffman), and its response
 * read frame by frame: the status from the field section's first line, DATA counted (and
 * written to --out). */
struct get {
    uint64_t id;
    bool started, done;
    FILE *out;
    uint64_t body, start_ns;
    unsigned status; /* 0: not seen or not a static-table status */
    uint8_t hdr[16]; /* a frame header being read */
    size_t hlen;
    uint64_t type, left; /* the frame being read */
    bool in_frame, headers_seen;
    uint8_t field[3]; /* the first bytes of the HEADERS payload */
    size_t nfield;
};

/* :status values of the QPACK static table (RFC 9204 Appendix A). */
static unsigned qpack_static_status(uint8_t b)
{
    static const struct {
        uint8_t idx;
        unsigned status;
    } t[] = {{24, 103}, {25, 200}, {26, 304}, {27, 404}, {28, 503}, {63, 100}};
    if ((b & 0xc0) != 0xc0) /* Indexed Field Line, static (T=1) */
        return 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if ((b & 0x3f) == t[i].idx)
            return t[i].status;
    return 0;
}

static int get_start(vega_quic_conn *c, struct get *g, const char *authority, const char *path)
{
    uint8_t fs[600], req[620];
    size_t n = 0, alen = strlen(authority), plen = strlen(path);
    if (alen > 126 || plen > 126)
        return -1;
    fs[n++] = 0x00;      /* Required Insert Count 0 */
    fs[n++] = 0x00;      /* Base 0 */
    fs[n++] = 0xc0 | 17; /* :method GET */
    fs[n++] = 0xc0 | 23; /* :scheme https */
    fs[n++] = 0x50 | 0;  /* :authority, literal value */
    fs[n++] = (uint8_t)alen;
    memcpy(fs + n, authority, alen);
    n += alen;
    fs[n++] = 0x50 | 1; /* :path, literal value */
    fs[n++] = (uint8_t)plen;
    memcpy(fs + n, path, plen);
    n += plen;
    size_t m = 0;
    req[m++] = 0x01; /* HEADERS */
    m += (size_t)vega_quic_varint_write(req + m, 8, n);
    memcpy(req + m, fs, n);
    m += n;
    if (vega_quic_stream_open(c, true, &g->id) < 0 ||
        vega_quic_stream_write(c, g->id, req, m, true) != (vega_ssize)m)
        return -1;
    g->started = true;
    g->start_ns = now_ns();
    return 0;
}

/* Reads the response stream. Returns 0, or -1 with *why set on a malformed response. */
static int get_read(vega_quic_conn *c, struct get *g, const char **why)
{
    uint8_t buf[16384];
    for (int iter = 0; iter < 4096 && !g->done; iter++) {
        bool fin = false;
        vega_ssize n = vega_quic_stream_read(c, g->id, buf, sizeof buf, &fin);
        if (n < 0) {
            *why = "the response stream was reset";
            return -1;
        }
        for (size_t i = 0; i < (size_t)n;) {
            if (!g->in_frame) {
                /* A frame header: two varints, accumulated across reads. */
                g->hdr[g->hlen++] = buf[i++];
                uint64_t t, l;
                vega_ssize a = vega_quic_varint_read(g->hdr, g->hlen, &t);
                if (a < 0)
                    continue;
                vega_ssize b = vega_quic_varint_read(g->hdr + a, g->hlen - (size_t)a, &l);
                if (b < 0) {
                    if (g->hlen == sizeof g->hdr) {
                        *why = "a malformed frame header";
                        return -1;
                    }
                    continue;
                }
                g->type = t;
                g->left = l;
                g->hlen = 0;
                g->in_frame = true;
                g->nfield = 0;
                if (l > 0)
                    continue;
            } else {
                size_t take = (size_t)n - i;
                if (take > g->left)
                    take = (size_t)g->left;
                if (g->type == 0x00) { /* DATA */
                    if (!g->headers_seen) {
                        *why = "DATA before HEADERS";
                        return -1;
                    }
                    g->body += take;
                    if (g->out && fwrite(buf + i, 1, take, g->out) != take) {
                        *why = "writing --out failed";
                        return -1;
                    }
                } else if (g->type == 0x01 && !g->headers_seen) {
                    for (size_t k = 0; k < take && g->nfield < sizeof g->field; k++)
                        g->field[g->nfield++] = buf[i + k];
                }
                i += take;
                g->left -= take;
            }
            if (g->in_frame && g->left == 0) {
                if (g->type == 0x01 && !g->headers_seen) {
                    g->headers_seen = true;
                    /* Prefix 0x00 0x00 (no dynamic table: we allowed none), then the first
                     * field line. */
                    if (g->nfield == 3 && g->field[0] == 0 && g->field[1] == 0)
                        g->status = qpack_static_status(g->field[2]);
                }
                g->in_frame = false;
            }
        }
        if (fin) {
            if (g->in_frame || g->hlen) {
                *why = "the response ended inside a frame";
                return -1;
            }
            g->done = true;
        }
        if (n == 0)
            break;
    }
    return 0;
}

/* What one client connection ended with. */
struct client_result {
    int rc;              /* 0 ok, 1 failed, 2 Version Negotiation: try vn_version */
    uint32_t vn_version; /* a version the server listed that we speak */
    uint8_t *session;    /* the latest SESSION event (owned) */
    size_t session_len;
};

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                           : ((const struct sockaddr_in *)ss)->sin_port);
}

/* A UDP socket connected to peer; *path receives both ends. */
static int client_socket(const struct sockaddr_storage *peer, socklen_t peer_len,
                         vega_quic_path *path)
{
    int fd = socket(peer->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)peer, peer_len) < 0)
        die("socket/connect: %s", strerror(errno));
    set_nonblock(fd);
    ecn_enable(fd, peer->ss_family);
    memset(path, 0, sizeof *path);
    memcpy(&path->remote, peer, peer_len);
    path->remote_len = peer_len;
    path->local_len = sizeof path->local;
    if (getsockname(fd, (struct sockaddr *)&path->local, &path->local_len) < 0)
        die("getsockname: %s", strerror(errno));
    return fd;
}

/* Sends what the core has now on the socket whose local address the core picked (after a
 * migration, the new one). Returns -1 when the core is closed. */
static int client_flush(vega_quic_conn *c, const int *fds, const vega_quic_path *paths, int n,
                        int *tos)
{
    uint8_t out[DGRAM_CAP];
    for (int i = 0; i < WRITE_BATCH; i++) {
        vega_quic_path path;
        uint8_t ecn = 0;
        vega_ssize w = vega_quic_conn_write(c, &path, &ecn, out, sizeof out, now_ns());
        if (w == 0)
            return 0;
        if (w < 0) {
            if (w != VEGA_ERR_CLOSED)
                fprintf(stderr, "%s: vega_quic_conn_write: %s\n", prog,
                        vega_crypto_strerror((int)w));
            return -1;
        }
        int k = 0;
        for (int j = 0; j < n; j++)
            if (path.local_len && sa_port(&path.local) == sa_port(&paths[j].local))
                k = j;
        ecn_mark(fds[k], paths[k].remote.ss_family, ecn, &tos[k]);
        if (send(fds[k], out, (size_t)w, 0) < 0 && errno != EAGAIN && errno != ECONNREFUSED)
            fprintf(stderr, "%s: send: %s\n", prog, strerror(errno));
    }
    return 0;
}

/* One connection on a connected UDP socket (plus a second one with --migrate). session:
 * resume with it (may be NULL). */
static void client_conn(const struct client_opts *o, int fd, const vega_quic_path *path,
                        vega_quic_opts *cfg, uint32_t version, const uint8_t *session,
                        size_t session_len, struct client_result *res)
{
    cfg->version = version;
    cfg->tls.session = session;
    cfg->tls.session_len = session_len;
    cfg->tls.early_data = session && o->early_data;
    uint64_t start = now_ns(), deadline = start + o->timeout_ms * 1000000ull;
    vega_quic_conn *c = NULL;
    int rc = vega_quic_conn_client_new(&c, cfg, path, start);
    if (rc < 0)
        die("vega_quic_conn_client_new: %s", vega_crypto_strerror(rc));

    enum cstate st = C_HANDSHAKE;
    uint64_t ku_stream = UINT64_MAX, ctrl = UINT64_MAX;
    unsigned retries_seen = 0;
    uint32_t vn_pick = 0;
    char failure[512] = "";
    res->rc = 1;
    int fds[2] = {fd, -1}, nfds = 1, tos[2] = {-1, -1};
    struct get g = {0};
    if (o->out && o->get && !session) { /* the resumed connection does not GET again */
        g.out = fopen(o->out, "wb");
        if (!g.out)
            die("--out %s: %s", o->out, strerror(errno));
    }
    vega_quic_path paths[2] = {*path};
    bool migrated = false;
    const struct sockaddr_storage *peer = &path->remote;
    socklen_t peer_len = path->remote_len;
    uint8_t *buf = malloc(RECV_CAP);
    if (!buf)
        die("out of memory");
    if (cfg->tls.early_data && strcmp(o->alpn, "h3") == 0) {
        /* With a resumed session the control stream goes out in 0-RTT. */
        if (vega_quic_stream_open(c, false, &ctrl) == 0)
            vega_quic_stream_write(c, ctrl, H3_SETTINGS_STREAM, 3, false);
    }

    while (st != C_DONE) {
        if (client_flush(c, fds, paths, nfds, tos) < 0 && st != C_CLOSING) {
            if (!failure[0])
                snprintf(failure, sizeof failure, "the connection closed");
            break;
        }
        uint64_t t = now_ns();
        if (t >= deadline) {
            snprintf(failure, sizeof failure, "%s timed out after %" PRIu64 " ms",
                     st == C_HANDSHAKE ? "handshake"
                     : st == C_KU_WAIT ? "key update"
                     : st == C_TICKET  ? "waiting for a session ticket"
                     : st == C_MIGRATE ? "migration"
                     : st == C_FINISH  ? "the GET"
                     : st == C_CLOSING ? "closing"
                                       : "run",
                     o->timeout_ms);
            break;
        }
        uint64_t exp = vega_quic_conn_expiry(c), wake = exp < deadline ? exp : deadline;
        int ms = wake <= t ? 0 : (int)((wake - t + 999999) / 1000000);
        struct pollfd pfd[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
        if (poll(pfd, (nfds_t)nfds, ms) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int i = 0, which = 0; i < RECV_BATCH && which < nfds; i++) {
            uint8_t ecn;
            ssize_t n = recv_dgram(fds[which], buf, RECV_CAP, NULL, NULL, &ecn);
            if (n < 0) { /* EAGAIN, or ECONNREFUSED from an ICMP: the server may not be up yet */
                which++;
                continue;
            }
            /* The core does not report Retry or Version Negotiation: look at the header. */
            vega_quic_hdr h;
            if (vega_quic_hdr_parse(&h, buf, (size_t)n, cfg->scid_len) == 0) {
                if (h.type == VEGA_QUIC_PKT_RETRY)
                    retries_seen++;
                if (h.type == VEGA_QUIC_PKT_VN && st == C_HANDSHAKE && !vn_pick) {
                    for (size_t k = 0; k < h.nversions; k++) {
                        uint32_t v = vega_quic_hdr_vn_version(&h, k);
                        if (v != version && vega_quic_version_is_supported(v)) {
                            vn_pick = v;
                            break;
                        }
                    }
                }
            }
            rc = vega_quic_conn_read(c, &paths[which], ecn, buf, (size_t)n, now_ns());
            if (rc < 0 && rc != VEGA_ERR_CLOSED)
                die("vega_quic_conn_read: %s", vega_crypto_strerror(rc));
        }
        t = now_ns();
        if (vega_quic_conn_expiry(c) <= t &&
            vega_quic_conn_handle_expiry(c, t) == VEGA_ERR_CLOSED && st == C_CLOSING) {
            st = C_DONE;
            res->rc = 0;
        }

        vega_quic_event ev;
        while (st != C_DONE && vega_quic_conn_next_event(c, &ev)) {
            switch (ev.type) {
            case VEGA_QUIC_EV_HANDSHAKE_DONE: {
                vega_quic_conn_info info;
                vega_quic_conn_get_info(c, &info);
                static const char *early[] = {"none", "offered", "accepted", "rejected"};
                printf("handshake ok: version=0x%08" PRIx32 " alpn=%s suite=%s resumed=%s "
                       "early_data=%s retry=%s handshake_ms=%.2f srtt_ms=%.2f\n",
                       info.version, info.alpn, suite_name(info.suite), info.resumed ? "yes" : "no",
                       (unsigned)info.early_data <= 3 ? early[info.early_data] : "?",
                       retries_seen ? "yes" : "no", (double)(now_ns() - start) / 1e6,
                       (double)info.smoothed_rtt_ns / 1e6);
                fflush(stdout);
                if (strcmp(o->alpn, "h3") == 0 && ctrl == UINT64_MAX) {
                    /* An HTTP/3 client must open its control stream with SETTINGS (RFC 9114
                     * §6.2.1); ngtcp2's h3 layer closes the connection without one. */
                    if (vega_quic_stream_open(c, false, &ctrl) == 0)
                        vega_quic_stream_write(c, ctrl, H3_SETTINGS_STREAM, 3, false);
                }
                if (o->get && !g.started &&
                    get_start(c, &g, o->sni ? o->sni : o->host, o->get) < 0) {
                    snprintf(failure, sizeof failure,
                             "could not send the GET (path or name "
                             "too long, or no stream)");
                    st = C_DONE;
                    break;
                }
                st = C_CONFIRM;
                break;
            }
            case VEGA_QUIC_EV_SESSION:
                free(res->session);
                res->session = malloc(ev.len);
                if (!res->session)
                    die("out of memory");
                memcpy(res->session, ev.data, ev.len);
                res->session_len = ev.len;
                break;
            case VEGA_QUIC_EV_STREAM_OPENED:
            case VEGA_QUIC_EV_STREAM_READABLE:
                if (g.started && ev.stream_id == g.id) {
                    const char *why = NULL;
                    if (get_read(c, &g, &why) < 0) {
                        snprintf(failure, sizeof failure, "GET %s: %s", o->get, why);
                        st = C_DONE;
                        break;
                    }
                    if (g.done) {
                        double ms = (double)(now_ns() - g.start_ns) / 1e6;
                        printf("get ok: status=%u body_bytes=%" PRIu64 " ms=%.1f mbit_s=%.1f\n",
                               g.status, g.body, ms, ms > 0 ? (double)g.body * 8 / ms / 1e3 : 0);
                        fflush(stdout);
                    }
                    break;
                }
                discard_stream(c, ev.stream_id);
                break;
            case VEGA_QUIC_EV_STREAM_RESET:
                if (g.started && ev.stream_id == g.id && !g.done) {
                    snprintf(failure, sizeof failure, "GET %s: reset by the server with 0x%" PRIx64,
                             o->get, ev.error_code);
                    st = C_DONE;
                }
                break;
            case VEGA_QUIC_EV_STREAM_DONE:
                if (ev.stream_id == ku_stream && st == C_KU_WAIT) {
                    vega_quic_conn_info info;
                    vega_quic_conn_get_info(c, &info);
                    /* The peer acknowledged a packet sent under the new keys, so it decrypted
                     * it. No second update right away: the peer keeps the old keys for 3 PTO
                     * and would drop packets of the next phase until then (RFC 9001 §6.5). */
                    printf("key update ok: key_updates=%" PRIu64 " acknowledged\n",
                           info.key_updates);
                    fflush(stdout);
                    if (info.key_updates < 1) {
                        snprintf(failure, sizeof failure,
                                 "key update: acknowledged, but key_updates is 0");
                        st = C_DONE;
                        break;
                    }
                    st = C_FINISH;
                }
                break;
            case VEGA_QUIC_EV_PATH_CHANGED:
                if (st != C_MIGRATE)
                    break;
                if (ev.error_code != 1) {
                    snprintf(failure, sizeof failure,
                             "migration: the new path (port %u) did not "
                             "validate; back on the old one",
                             sa_port(&paths[1].local));
                    st = C_DONE;
                    break;
                }
                {
                    vega_quic_conn_info info;
                    vega_quic_conn_get_info(c, &info);
                    printf("migration ok: port %u -> %u validated, migrations=%" PRIu64 "\n",
                           sa_port(&paths[0].local), sa_port(&paths[1].local), info.migrations);
                    fflush(stdout);
                }
                migrated = true;
                st = C_CONFIRM;
                break;
            case VEGA_QUIC_EV_CLOSED:
                if (st == C_CLOSING && ev.local && ev.app && ev.error_code == H3_NO_ERROR)
                    break; /* our own close: wait for the closing period */
                if (vn_pick && !ev.app && ev.error_code == VEGA_QUIC_VERSION_NEGOTIATION_ERROR) {
                    /* Incompatible version negotiation (RFC 9000 §6.2, RFC 9368 §2.1): the
                     * core abandons the attempt; the driver starts over in a listed version. */
                    printf("version negotiation: 0x%08" PRIx32 " refused, server offers "
                           "0x%08" PRIx32 "\n",
                           version, vn_pick);
                    fflush(stdout);
                    res->rc = 2;
                    res->vn_version = vn_pick;
                    st = C_DONE;
                    break;
                }
                describe_close(failure, sizeof failure, &ev);
                st = C_DONE;
                break;
            default:
                break;
            }
        }

        if (st == C_CONFIRM || st == C_TICKET) {
            vega_quic_conn_info info;
            vega_quic_conn_get_info(c, &info);
            if (info.handshake_confirmed && st == C_CONFIRM && o->resume && !session &&
                !res->session)
                st = C_TICKET; /* wait for a NewSessionTicket before closing */
            else if (st == C_TICKET && res->session)
                st = C_CONFIRM;
            if (info.handshake_confirmed && st == C_CONFIRM && o->migrate && !migrated) {
                /* A new local port, as after a change of network (RFC 9000 §9.2). */
                if (nfds == 1) {
                    fds[1] = client_socket(peer, peer_len, &paths[1]);
                    nfds = 2;
                }
                rc = vega_quic_conn_migrate(c, &paths[1]);
                if (rc == 0) {
                    st = C_MIGRATE;
                } else if (rc != VEGA_ERR_FULL) { /* FULL: no spare peer CID yet */
                    snprintf(failure, sizeof failure, "vega_quic_conn_migrate: %s",
                             vega_crypto_strerror(rc));
                    break;
                }
            } else if (info.handshake_confirmed && st == C_CONFIRM) {
                if (o->key_update) {
                    rc = vega_quic_conn_key_update(c);
                    if (rc < 0) {
                        snprintf(failure, sizeof failure, "vega_quic_conn_key_update: %s",
                                 vega_crypto_strerror(rc));
                        break;
                    }
                    /* Something ack-eliciting in the new phase: a reserved (grease) stream type,
                     * which an HTTP/3 peer must ignore (RFC 9114 §6.2.3), with a FIN so that
                     * STREAM_DONE tells us the peer acknowledged it. */
                    static const uint8_t grease[] = {0x40, 0x21, 'v', 'e', 'g', 'a'};
                    if (vega_quic_stream_open(c, false, &ku_stream) < 0 ||
                        vega_quic_stream_write(c, ku_stream, grease, sizeof grease, true) < 0) {
                        snprintf(failure, sizeof failure,
                                 "could not open a stream after the "
                                 "key update");
                        break;
                    }
                    st = C_KU_WAIT;
                } else {
                    st = C_FINISH;
                }
            }
        }
        if (st == C_FINISH && (!o->get || g.done)) {
            vega_quic_conn_close(c, VEGA_QUIC_CLOSE_APPLICATION, H3_NO_ERROR, NULL);
            st = C_CLOSING;
        }
        if (st == C_CLOSING && vega_quic_conn_is_closed(c)) {
            st = C_DONE;
            res->rc = 0;
        }
    }
    if (res->rc == 0) {
        vega_quic_conn_info info;
        vega_quic_conn_get_info(c, &info);
        printf("closed ok: H3_NO_ERROR pkts_sent=%" PRIu64 " pkts_recv=%" PRIu64
               " pkts_lost=%" PRIu64 " bytes_sent=%" PRIu64 " bytes_recv=%" PRIu64 "\n",
               info.pkts_sent, info.pkts_recv, info.pkts_lost, info.bytes_sent, info.bytes_recv);
        fflush(stdout);
    } else if (res->rc == 1) {
        fprintf(stderr, "%s: failed: %s\n", prog, failure[0] ? failure : "unknown");
    }
    if (g.out && fclose(g.out) != 0 && res->rc == 0) {
        fprintf(stderr, "%s: --out: %s\n", prog, strerror(errno));
        res->rc = 1;
    }
    free(buf);
    vega_quic_conn_free(c);
    if (fds[1] >= 0)
        close(fds[1]);
}

static int run_client(const struct client_opts *o)
{
    struct sockaddr_storage peer;
    socklen_t peer_len;
    if (resolve(o->host, o->port, &peer, &peer_len) < 0)
        die("cannot resolve %s port %s", o->host, o->port);
    vega_crypto_cert_store *ca = NULL;
    if (o->ca) {
        int rc = vega_crypto_cert_store_new(&ca, o->ca, NULL);
        if (rc < 0)
            die("--ca %s: %s", o->ca, vega_crypto_strerror(rc));
    }
    vega_quic_opts cfg;
    vega_quic_opts_init(&cfg);
    cfg.wall_ms = wall_ms();
    cfg.tls.ca = ca;
    cfg.tls.insecure = o->insecure;
    cfg.tls.server_name = o->sni ? o->sni : (is_ip_literal(o->host) ? NULL : o->host);
    cfg.tls.alpn[0] = o->alpn;
    cfg.tls.n_alpn = 1;
    if (o->suite) {
        cfg.tls.suites[0] = o->suite;
        cfg.tls.n_suites = 1;
    }

    struct client_result res = {0};
    uint32_t version = o->version;
    int result = 1;
    /* Connection attempts: one, plus one after Version Negotiation, plus the resumed one. */
    for (int attempt = 0, conns = 0; attempt < 3; attempt++) {
        /* A fresh socket (so a fresh port) per connection, as a new connection should. */
        vega_quic_path path;
        int fd = client_socket(&peer, peer_len, &path);
        uint8_t *session = conns > 0 ? res.session : NULL;
        size_t session_len = conns > 0 ? res.session_len : 0;
        res.session = NULL;
        res.session_len = 0;
        client_conn(o, fd, &path, &cfg, version, session, session_len, &res);
        free(session);
        close(fd);
        if (res.rc == 2) {
            version = res.vn_version;
            continue;
        }
        result = res.rc;
        if (result != 0 || !o->resume || ++conns == 2)
            break;
        if (!res.session) {
            fprintf(stderr, "%s: failed: no session ticket to resume with\n", prog);
            result = 1;
            break;
        }
    }
    free(res.session);
    vega_crypto_cert_store_free(ca);
    return result;
}

/* ---- server ---------------------------------------------------------------------------------- */

struct req {
    uint64_t id;
    uint64_t got; /* request bytes read */
    bool answered;
    size_t sent; /* response bytes queued */
};

struct sconn {
    vega_quic_conn *c;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    uint8_t first_dcid[VEGA_QUIC_MAX_CID_LEN]; /* what the client's Initials address us by */
    size_t first_dcid_len;
    bool retried, ctrl_open, closed_reported;
    char close_desc[512];
    struct req reqs[MAX_REQS];
    size_t nreqs, answered;
    uint64_t bytes_in, bytes_out, req_bytes;
    unsigned path_changes, paths_validated;
};

struct server {
    int fd;
    vega_quic_opts cfg;
    vega_quic_path local;
    struct sconn conns[MAX_CONNS];
    bool retry;
    uint8_t token_key[32];
    uint8_t *resp; /* HEADERS + DATA frames of the response */
    size_t resp_len;
    unsigned done, count;
    unsigned retries_sent, vn_sent, dropped;
    int tos; /* the ECN mark the socket sends with now (-1: not set) */
};

/* The Retry token: 8-byte issue time, the original DCID (length + bytes), then a 16-byte MAC
 * over those, the client address and the Retry's source CID (which the client's next Initial
 * must be addressed to). */
static size_t token_mac(const struct server *s, const uint8_t *body, size_t body_len,
                        const struct sockaddr_storage *peer, socklen_t peer_len,
                        const uint8_t *rscid, size_t rscid_len, uint8_t *mac)
{
    uint8_t in[8 + 1 + VEGA_QUIC_MAX_CID_LEN + sizeof(struct sockaddr_storage) + 1 +
               VEGA_QUIC_MAX_CID_LEN];
    size_t n = 0;
    memcpy(in + n, body, body_len);
    n += body_len;
    /* the address and port only (sockaddr padding is not guaranteed zeroed) */
    if (peer->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)peer;
        memcpy(in + n, &a->sin_addr, 4);
        n += 4;
        memcpy(in + n, &a->sin_port, 2);
        n += 2;
    } else if (peer->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)peer;
        memcpy(in + n, &a->sin6_addr, 16);
        n += 16;
        memcpy(in + n, &a->sin6_port, 2);
        n += 2;
    }
    (void)peer_len;
    in[n++] = (uint8_t)rscid_len;
    memcpy(in + n, rscid, rscid_len);
    n += rscid_len;
    uint8_t full[64];
    if (vega_crypto_hmac_digest(VEGA_CRYPTO_SHA256, s->token_key, sizeof s->token_key, in, n,
                                full) < 0)
        return 0;
    memcpy(mac, full, 16);
    return 16;
}

static void send_retry(struct server *s, const vega_quic_hdr *h,
                       const struct sockaddr_storage *peer, socklen_t peer_len)
{
    uint8_t rscid[8], tok[8 + 1 + VEGA_QUIC_MAX_CID_LEN + 16], out[512];
    if (vega_crypto_random(rscid, sizeof rscid) < 0)
        return;
    uint64_t t = now_ns();
    size_t n = 0;
    for (int i = 7; i >= 0; i--)
        tok[n++] = (uint8_t)(t >> (i * 8));
    tok[n++] = (uint8_t)h->dcid_len;
    memcpy(tok + n, h->dcid, h->dcid_len);
    n += h->dcid_len;
    if (token_mac(s, tok, n, peer, peer_len, rscid, sizeof rscid, tok + n) != 16)
        return;
    n += 16;
    vega_quic_hdr r = {.type = VEGA_QUIC_PKT_RETRY,
                       .version = h->version,
                       .dcid = h->scid,
                       .dcid_len = h->scid_len,
                       .scid = rscid,
                       .scid_len = sizeof rscid,
                       .token = tok,
                       .token_len = n};
    vega_ssize w = vega_quic_retry_write(out, sizeof out, &r, 0, h->dcid, h->dcid_len);
    if (w > 0 && sendto(s->fd, out, (size_t)w, 0, (const struct sockaddr *)peer, peer_len) > 0)
        s->retries_sent++;
}

/* Checks a token from our Retry; *odcid receives the original DCID. */
static bool token_check(const struct server *s, const vega_quic_hdr *h,
                        const struct sockaddr_storage *peer, socklen_t peer_len, uint8_t *odcid,
                        size_t *odcid_len)
{
    if (h->token_len < 8 + 1 + 16)
        return false;
    size_t cl = h->token[8];
    if (cl > VEGA_QUIC_MAX_CID_LEN || h->token_len != 8 + 1 + cl + 16)
        return false;
    uint8_t mac[16];
    if (token_mac(s, h->token, 9 + cl, peer, peer_len, h->dcid, h->dcid_len, mac) != 16 ||
        !vega_crypto_ct_equal(mac, h->token + 9 + cl, 16))
        return false;
    uint64_t t = 0;
    for (int i = 0; i < 8; i++)
        t = (t << 8) | h->token[i];
    uint64_t now = now_ns();
    if (t > now || now - t > TOKEN_TTL_NS)
        return false;
    memcpy(odcid, h->token + 9, cl);
    *odcid_len = cl;
    return true;
}

static struct sconn *route(struct server *s, const vega_quic_hdr *h)
{
    for (size_t i = 0; i < MAX_CONNS; i++) {
        struct sconn *sc = &s->conns[i];
        if (!sc->c)
            continue;
        /* Every CID we issued (NEW_CONNECTION_ID too: a migrating client switches, §9.5), and
         * the one the client's first Initials carry. */
        const uint8_t *ids[MAX_SCIDS];
        size_t lens[MAX_SCIDS];
        size_t n = vega_quic_conn_scids(sc->c, ids, lens, MAX_SCIDS);
        for (size_t k = 0; k < n && k < MAX_SCIDS; k++)
            if (lens[k] == h->dcid_len && memcmp(ids[k], h->dcid, h->dcid_len) == 0)
                return sc;
        if (sc->first_dcid_len == h->dcid_len && memcmp(sc->first_dcid, h->dcid, h->dcid_len) == 0)
            return sc;
    }
    return NULL;
}

static struct sconn *accept_initial(struct server *s, const vega_quic_hdr *h, size_t dgram_len,
                                    const struct sockaddr_storage *peer, socklen_t peer_len)
{
    if (h->type == VEGA_QUIC_PKT_UNKNOWN && dgram_len >= VEGA_QUIC_MIN_INITIAL_SIZE) {
        /* RFC 9000 §6: answer a long header of an unknown version with Version Negotiation. */
        static const uint32_t versions[] = {VEGA_QUIC_V1, VEGA_QUIC_V2};
        uint8_t out[512], unused = 0;
        vega_crypto_random(&unused, 1);
        vega_ssize w = vega_quic_vn_write(out, sizeof out, unused, h->scid, h->scid_len, h->dcid,
                                          h->dcid_len, versions, 2);
        if (w > 0 && sendto(s->fd, out, (size_t)w, 0, (const struct sockaddr *)peer, peer_len) > 0)
            s->vn_sent++;
        return NULL;
    }
    if (h->type != VEGA_QUIC_PKT_INITIAL || dgram_len < VEGA_QUIC_MIN_INITIAL_SIZE)
        return NULL;
    vega_quic_server_params sp = {.version = h->version,
                                  .dcid = h->dcid,
                                  .dcid_len = h->dcid_len,
                                  .scid = h->scid,
                                  .scid_len = h->scid_len};
    uint8_t odcid[VEGA_QUIC_MAX_CID_LEN];
    size_t odcid_len = 0;
    bool retried = false;
    if (h->token_len > 0 && token_check(s, h, peer, peer_len, odcid, &odcid_len)) {
        sp.original_dcid = odcid;
        sp.original_dcid_len = odcid_len;
        sp.address_validated = true;
        retried = true;
    } else if (s->retry) {
        send_retry(s, h, peer, peer_len);
        return NULL;
    }
    struct sconn *sc = NULL;
    for (size_t i = 0; i < MAX_CONNS && !sc; i++)
        if (!s->conns[i].c)
            sc = &s->conns[i];
    if (!sc)
        return NULL; /* full: the client retries */
    memset(sc, 0, sizeof *sc);
    vega_quic_path path = s->local;
    memcpy(&path.remote, peer, peer_len);
    path.remote_len = peer_len;
    int rc = vega_quic_conn_server_new(&sc->c, &s->cfg, &path, &sp, now_ns());
    if (rc < 0) {
        fprintf(stderr, "%s: vega_quic_conn_server_new: %s\n", prog, vega_crypto_strerror(rc));
        sc->c = NULL;
        return NULL;
    }
    memcpy(&sc->peer, peer, peer_len);
    sc->peer_len = peer_len;
    memcpy(sc->first_dcid, h->dcid, h->dcid_len);
    sc->first_dcid_len = h->dcid_len;
    sc->retried = retried;
    return sc;
}

static struct req *find_req(struct sconn *sc, uint64_t id)
{
    for (size_t i = 0; i < sc->nreqs; i++)
        if (sc->reqs[i].id == id)
            return &sc->reqs[i];
    if (sc->nreqs == MAX_REQS)
        return NULL;
    struct req *r = &sc->reqs[sc->nreqs++];
    memset(r, 0, sizeof *r);
    r->id = id;
    return r;
}

static void pump_resp(struct server *s, struct sconn *sc, struct req *r)
{
    if (!r->answered || r->sent == s->resp_len)
        return;
    vega_ssize w =
        vega_quic_stream_write(sc->c, r->id, s->resp + r->sent, s->resp_len - r->sent, true);
    if (w > 0)
        r->sent += (size_t)w;
}

static void server_events(struct server *s, struct sconn *sc)
{
    vega_quic_event ev;
    uint8_t buf[4096];
    while (vega_quic_conn_next_event(sc->c, &ev)) {
        switch (ev.type) {
        case VEGA_QUIC_EV_HANDSHAKE_DONE:
            if (!sc->ctrl_open) {
                uint64_t id;
                if (vega_quic_stream_open(sc->c, false, &id) == 0)
                    vega_quic_stream_write(sc->c, id, H3_SETTINGS_STREAM, 3, false);
                sc->ctrl_open = true;
            }
            break;
        case VEGA_QUIC_EV_STREAM_OPENED:
        case VEGA_QUIC_EV_STREAM_READABLE: {
            if (ev.stream_id & 2) { /* unidirectional: control, QPACK, grease */
                discard_stream(sc->c, ev.stream_id);
                break;
            }
            struct req *r = find_req(sc, ev.stream_id);
            if (!r) {
                vega_quic_stream_reset(sc->c, ev.stream_id, 0x10b); /* H3_REQUEST_REJECTED */
                discard_stream(sc->c, ev.stream_id);
                break;
            }
            bool fin = false;
            for (int i = 0; i < 1024 && !fin; i++) {
                vega_ssize n = vega_quic_stream_read(sc->c, ev.stream_id, buf, sizeof buf, &fin);
                if (n <= 0)
                    break;
                r->got += (size_t)n;
                sc->req_bytes += (uint64_t)n;
            }
            /* The request (HEADERS, and DATA for an upload) is not parsed: it ends with the
             * stream, and the answer is the same for every request. */
            if (!r->answered && fin) {
                r->answered = true;
                sc->answered++;
                pump_resp(s, sc, r);
            }
            break;
        }
        case VEGA_QUIC_EV_STREAM_WRITABLE:
            for (size_t i = 0; i < sc->nreqs; i++)
                pump_resp(s, sc, &sc->reqs[i]);
            break;
        case VEGA_QUIC_EV_PATH_CHANGED:
            sc->path_changes++;
            if (ev.error_code == 1)
                sc->paths_validated++;
            break;
        case VEGA_QUIC_EV_CLOSED:
            describe_close(sc->close_desc, sizeof sc->close_desc, &ev);
            break;
        default:
            break;
        }
    }
}

static void finish_conn(struct server *s, struct sconn *sc)
{
    vega_quic_conn_info info;
    vega_quic_conn_get_info(sc->c, &info);
    static const char *early[] = {"none", "offered", "accepted", "rejected"};
    printf("connection done: version=0x%08" PRIx32 " alpn=%s suite=%s retry=%s handshake=%s "
           "resumed=%s early_data=%s requests=%zu req_bytes=%" PRIu64 " bytes_in=%" PRIu64
           " bytes_out=%" PRIu64 " key_updates=%" PRIu64 " migrations=%" PRIu64
           " paths_validated=%u pmtu=%zu"
           " close=%s\n",
           info.version, info.alpn[0] ? info.alpn : "-", suite_name(info.suite),
           sc->retried ? "yes" : "no", info.handshake_done ? "yes" : "no",
           info.resumed ? "yes" : "no",
           (unsigned)info.early_data <= 3 ? early[info.early_data] : "?", sc->answered,
           sc->req_bytes, sc->bytes_in, sc->bytes_out, info.key_updates, info.migrations,
           sc->paths_validated, info.pmtu, sc->close_desc[0] ? sc->close_desc : "none");
    fflush(stdout);
    vega_quic_conn_free(sc->c);
    sc->c = NULL;
    s->done++;
}

static int run_server(const char *addr, const char *port, const char *cert, const char *keyf,
                      const char *alpn, bool retry, bool early, unsigned count, uint64_t body_len,
                      uint64_t timeout_ms, uint64_t idle_ms)
{
    struct server *s = calloc(1, sizeof *s);
    if (!s)
        die("out of memory");
    s->retry = retry;
    s->count = count;
    char *pem = NULL, *kpem = NULL;
    size_t pem_len = 0, kpem_len = 0;
    int rc = read_file(cert, &pem, &pem_len);
    if (rc < 0)
        die("--cert %s: %s", cert, strerror(-rc));
    rc = read_file(keyf, &kpem, &kpem_len);
    if (rc < 0)
        die("--key %s: %s", keyf, strerror(-rc));
    vega_crypto_cert_chain *chain = NULL;
    vega_crypto_key *key = NULL;
    if ((rc = vega_crypto_cert_chain_new(&chain)) < 0 ||
        (rc = vega_crypto_cert_chain_add(chain, pem, pem_len)) < 0)
        die("--cert %s: %s", cert, vega_crypto_strerror(rc));
    if ((rc = vega_crypto_key_load_private(&key, kpem, kpem_len)) < 0)
        die("--key %s: %s", keyf, vega_crypto_strerror(rc));
    vega_crypto_cleanse(kpem, kpem_len);
    free(kpem);
    free(pem);
    uint8_t ticket_key[32];
    if (vega_crypto_random(ticket_key, sizeof ticket_key) < 0 ||
        vega_crypto_random(s->token_key, sizeof s->token_key) < 0)
        die("no randomness");

    /* The response: HEADERS with a QPACK field section of ":status: 200" (Required Insert
     * Count 0, Base 0, static index 25), then one DATA frame of the body. */
    if (body_len > MAX_BODY)
        die("--body-size: at most %u", MAX_BODY);
    s->resp = malloc(16 + body_len);
    if (!s->resp)
        die("out of memory");
    size_t n = 0;
    s->resp[n++] = 0x01;
    s->resp[n++] = 0x03;
    s->resp[n++] = 0x00;
    s->resp[n++] = 0x00;
    s->resp[n++] = 0xd9;
    s->resp[n++] = 0x00;
    n += (size_t)vega_quic_varint_write(s->resp + n, 8, body_len);
    static const char pat[] = "vega-quic-probe\n";
    for (uint64_t i = 0; i < body_len; i++)
        s->resp[n++] = (uint8_t)pat[i % (sizeof pat - 1)];
    s->resp_len = n;

    struct sockaddr_storage bind_ss;
    socklen_t bind_len;
    if (resolve(addr, port, &bind_ss, &bind_len) < 0)
        die("cannot resolve %s port %s", addr, port);
    s->fd = socket(bind_ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&bind_ss, bind_len) < 0)
        die("bind %s:%s: %s", addr, port, strerror(errno));
    set_nonblock(s->fd);
    ecn_enable(s->fd, bind_ss.ss_family);
    s->tos = -1;
    s->local.local_len = sizeof s->local.local;
    getsockname(s->fd, (struct sockaddr *)&s->local.local, &s->local.local_len);
    unsigned bound_port = ntohs(s->local.local.ss_family == AF_INET
                                    ? ((struct sockaddr_in *)&s->local.local)->sin_port
                                    : ((struct sockaddr_in6 *)&s->local.local)->sin6_port);

    vega_quic_opts_init(&s->cfg);
    s->cfg.wall_ms = wall_ms();
    s->cfg.tls.chain = chain;
    s->cfg.tls.key = key;
    s->cfg.tls.alpn[0] = alpn;
    s->cfg.tls.n_alpn = 1;
    s->cfg.tls.ticket_key = ticket_key;
    s->cfg.tls.early_data = early;
    if (idle_ms)
        s->cfg.idle_timeout_ms = idle_ms;
    printf("listening on %s:%u alpn=%s retry=%s\n", addr, bound_port, alpn, retry ? "yes" : "no");
    fflush(stdout);

    uint8_t *buf = malloc(RECV_CAP);
    if (!buf)
        die("out of memory");
    uint64_t deadline = timeout_ms ? now_ns() + timeout_ms * 1000000ull : UINT64_MAX;
    int result = 0;
    while (s->done < s->count || s->count == 0) {
        uint64_t t = now_ns();
        if (t >= deadline) {
            fprintf(stderr,
                    "%s: server timed out after %" PRIu64 " ms with %u of %u "
                    "connections done\n",
                    prog, timeout_ms, s->done, s->count);
            result = 1;
            break;
        }
        uint64_t wake = deadline;
        for (size_t i = 0; i < MAX_CONNS; i++)
            if (s->conns[i].c) {
                uint64_t e = vega_quic_conn_expiry(s->conns[i].c);
                wake = e < wake ? e : wake;
            }
        int ms = wake == UINT64_MAX ? 1000 : wake <= t ? 0 : (int)((wake - t + 999999) / 1000000);
        if (ms > 1000)
            ms = 1000;
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
        if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int i = 0; i < RECV_BATCH; i++) {
            struct sockaddr_storage peer;
            socklen_t peer_len = sizeof peer;
            uint8_t ecn;
            ssize_t r = recv_dgram(s->fd, buf, RECV_CAP, &peer, &peer_len, &ecn);
            if (r <= 0)
                break;
            vega_quic_hdr h;
            if (vega_quic_hdr_parse(&h, buf, (size_t)r, s->cfg.scid_len) < 0)
                continue;
            struct sconn *sc = route(s, &h);
            bool fresh = false;
            if (!sc) {
                sc = accept_initial(s, &h, (size_t)r, &peer, peer_len);
                fresh = sc != NULL;
            }
            if (!sc)
                continue;
            sc->bytes_in += (uint64_t)r;
            vega_quic_path path = s->local;
            memcpy(&path.remote, &peer, peer_len);
            path.remote_len = peer_len;
            rc = vega_quic_conn_read(sc->c, &path, ecn, buf, (size_t)r, now_ns());
            if (rc < 0 && rc != VEGA_ERR_CLOSED)
                fprintf(stderr, "%s: vega_quic_conn_read: %s\n", prog, vega_crypto_strerror(rc));
            if (fresh) {
                /* A first Initial that did not authenticate is noise (or an attack): keep no
                 * state for it rather than a connection that waits for its idle timeout. */
                vega_quic_conn_info info;
                vega_quic_conn_get_info(sc->c, &info);
                if (info.pkts_recv == 0) {
                    vega_quic_conn_free(sc->c);
                    sc->c = NULL;
                    s->dropped++;
                    continue;
                }
            }
            server_events(s, sc);
        }
        t = now_ns();
        for (size_t i = 0; i < MAX_CONNS; i++) {
            struct sconn *sc = &s->conns[i];
            if (!sc->c)
                continue;
            if (vega_quic_conn_expiry(sc->c) <= t)
                vega_quic_conn_handle_expiry(sc->c, t);
            server_events(s, sc);
            flush_conn(s->fd, s->local.local.ss_family, &s->tos, sc->c, &sc->peer, &sc->peer_len,
                       &sc->bytes_out);
            server_events(s, sc);
            if (vega_quic_conn_is_closed(sc->c))
                finish_conn(s, sc);
        }
    }
    printf("server done: connections=%u retries_sent=%u vn_sent=%u dropped_initials=%u\n", s->done,
           s->retries_sent, s->vn_sent, s->dropped);
    for (size_t i = 0; i < MAX_CONNS; i++)
        vega_quic_conn_free(s->conns[i].c);
    vega_crypto_cleanse(ticket_key, sizeof ticket_key);
    vega_crypto_cert_chain_free(chain);
    vega_crypto_key_free(key);
    close(s->fd);
    free(buf);
    free(s->resp);
    free(s);
    return result;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: %s client HOST PORT [--alpn P] [--version v1|v2] [--chacha|--aes256]\n"
        "            [--key-update] [--migrate] [--resume [--early-data]] [--insecure|--ca FILE]\n"
        "            [--sni NAME] [--get PATH [--out FILE]] [--timeout-ms N] [--no-ecn]\n"
        "       %s server ADDR PORT --cert FILE --key FILE [--alpn P] [--retry] [--count N]\n"
        "            [--body-size N] [--early-data] [--idle-ms N] [--timeout-ms N] [--no-ecn]\n",
        prog, prog);
    exit(2);
}

static uint64_t num_arg(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s)
        die("%s: not a number: %s", what, s);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        usage();
    const char *mode = argv[1];
    const char *alpn = "h3", *ca = NULL, *sni = NULL, *cert = NULL, *key = NULL, *get = NULL,
               *out = NULL;
    uint32_t version = VEGA_QUIC_V1;
    uint16_t suite = 0;
    bool ku = false, insecure = false, retry = false, resume = false, early = false,
         migrate = false;
    uint64_t timeout_ms = 5000, count = 1, body = 1000, idle_ms = 0;
    bool timeout_set = false;
    for (int i = 4; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                                     \
    do {                                                                                           \
        if (!v)                                                                                    \
            die("%s needs a value", a);                                                            \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--alpn")) {
            NEED();
            if (strlen(v) == 0 || strlen(v) > 255)
                die("--alpn: 1 to 255 bytes");
            alpn = v;
        } else if (!strcmp(a, "--version")) {
            NEED();
            if (!strcmp(v, "v1"))
                version = VEGA_QUIC_V1;
            else if (!strcmp(v, "v2"))
                version = VEGA_QUIC_V2;
            else
                die("--version: v1 or v2");
        } else if (!strcmp(a, "--chacha")) {
            suite = VEGA_QUIC_TLS_CHACHA20_POLY1305_SHA256;
        } else if (!strcmp(a, "--aes256")) {
            suite = VEGA_QUIC_TLS_AES_256_GCM_SHA384;
        } else if (!strcmp(a, "--aes128")) {
            suite = VEGA_QUIC_TLS_AES_128_GCM_SHA256;
        } else if (!strcmp(a, "--get")) {
            NEED();
            if (v[0] != '/' || strlen(v) > 126)
                die("--get: a path starting with / (at most 126 bytes)");
            get = v;
        } else if (!strcmp(a, "--out")) {
            NEED();
            out = v;
        } else if (!strcmp(a, "--no-ecn")) {
            ecn_on = false;
        } else if (!strcmp(a, "--migrate")) {
            migrate = true;
        } else if (!strcmp(a, "--resume")) {
            resume = true;
        } else if (!strcmp(a, "--early-data")) {
            early = true;
        } else if (!strcmp(a, "--key-update")) {
            ku = true;
        } else if (!strcmp(a, "--insecure")) {
            insecure = true;
        } else if (!strcmp(a, "--ca")) {
            NEED();
            ca = v;
        } else if (!strcmp(a, "--sni")) {
            NEED();
            sni = v;
        } else if (!strcmp(a, "--timeout-ms")) {
            NEED();
            timeout_ms = num_arg(v, a);
            timeout_set = true;
        } else if (!strcmp(a, "--cert")) {
            NEED();
            cert = v;
        } else if (!strcmp(a, "--key")) {
            NEED();
            key = v;
        } else if (!strcmp(a, "--retry")) {
            retry = true;
        } else if (!strcmp(a, "--count")) {
            NEED();
            count = num_arg(v, a);
            if (count > 1000000)
                die("--count: at most 1000000");
        } else if (!strcmp(a, "--idle-ms")) {
            NEED();
            idle_ms = num_arg(v, a);
            if (idle_ms > 600000)
                die("--idle-ms: at most 600000");
        } else if (!strcmp(a, "--body-size")) {
            NEED();
            body = num_arg(v, a);
        } else {
            die("unknown option %s", a);
        }
#undef NEED
    }
    if (timeout_ms > 3600000)
        die("--timeout-ms: at most 3600000");
    if (!strcmp(mode, "client")) {
        if (!insecure && !ca)
            die("client: --ca FILE or --insecure is required");
        struct client_opts o = {.host = argv[2],
                                .port = argv[3],
                                .alpn = alpn,
                                .ca = ca,
                                .sni = sni,
                                .version = version,
                                .suite = suite,
                                .key_update = ku,
                                .insecure = insecure,
                                .resume = resume,
                                .early_data = early,
                                .migrate = migrate,
                                .get = get,
                                .out = out,
                                .timeout_ms = timeout_ms};
        return run_client(&o);
    }
    if (!strcmp(mode, "server")) {
        if (!cert || !key)
            die("server: --cert and --key are required");
        return run_server(argv[2], argv[3], cert, key, alpn, retry, early, (unsigned)count, body,
                          timeout_set ? timeout_ms : 0, idle_ms);
    }
    usage();
    return 2;
}
