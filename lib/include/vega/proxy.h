/* SPDX-License-Identifier: MIT */
/* Proxy clients: the handshakes of SOCKS5 (RFC 1928, with RFC 1929 username/password), SOCKS4
 * and SOCKS4a, and HTTP CONNECT tunnels (RFC 9110 §9.3.6, Basic auth RFC 7617) as a sans-I/O
 * core (bytes in, bytes out: lib/proxy), and a driver that connects through a proxy on the
 * runtime and hands back a vega_stream (lib/proxy_io), or for UDP ASSOCIATE a UDP socket that
 * talks through the relay. Also the SOCKS5 UDP request header (RFC 1928 §7), proxy URLs as curl
 * spells them, and curl's NO_PROXY matching. */
#ifndef VEGA_PROXY_H
#define VEGA_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/mem.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of the proxy layers (range -11400). The wire-level cause (a SOCKS reply code, an
 * HTTP status) is in the vega_proxy_reply, never in the return value. */
enum {
    VEGA_ERR_PROXY_BASE = -11400,
    VEGA_ERR_PROXY_RESOLVE = -11401,     /* the proxy's own host name did not resolve */
    VEGA_ERR_PROXY_HANDSHAKE = -11402,   /* a malformed or oversized reply, or the proxy closed
                                            during the handshake */
    VEGA_ERR_PROXY_AUTH = -11403,        /* the proxy wants credentials or refused ours (SOCKS5
                                            method 0xFF or auth status, HTTP 407) */
    VEGA_ERR_PROXY_REFUSED = -11404,     /* the proxy did not connect: a SOCKS reply other than
                                            success, an HTTP status other than 2xx */
    VEGA_ERR_PROXY_UNSUPPORTED = -11405, /* the destination cannot be said in this protocol
                                            (SOCKS4 and a name or IPv6, a name over 255 bytes) */
};

/* The kinds of proxy, as curl's URL schemes name them. */
typedef enum vega_proxy_kind {
    VEGA_PROXY_NONE = 0,
    VEGA_PROXY_HTTP,    /* http://: CONNECT tunnels; absolute-form forwarding of http:// URLs */
    VEGA_PROXY_HTTPS,   /* https://: the same over TLS to the proxy */
    VEGA_PROXY_SOCKS4,  /* socks4://: IPv4 destinations, resolved by us */
    VEGA_PROXY_SOCKS4A, /* socks4a://: the proxy resolves names */
    VEGA_PROXY_SOCKS5,  /* socks5://: names resolved by us */
    VEGA_PROXY_SOCKS5H, /* socks5h://: the proxy resolves names */
} vega_proxy_kind;

/* What a SOCKS5 request asks (RFC 1928 §4). */
typedef enum vega_proxy_command {
    VEGA_PROXY_CMD_CONNECT = 1,
    VEGA_PROXY_CMD_BIND = 2, /* since 0.2: a listening port on the proxy, for one connection */
    VEGA_PROXY_CMD_UDP_ASSOCIATE = 3,
} vega_proxy_command;

/* Limits. */
#define VEGA_PROXY_MAX_NAME          255   /* a SOCKS domain name, RFC 1928 §5 */
#define VEGA_PROXY_MAX_CRED          255   /* RFC 1929: user and password, 1..255 bytes */
#define VEGA_PROXY_DEFAULT_MAX_REPLY 16384 /* an HTTP CONNECT reply head, default */
#define VEGA_PROXY_MAX_REPLY         65536 /* ... and at most */

/* A SOCKS address: an IPv4 or IPv6 address or a domain name, and a port (plain data). */
typedef enum vega_proxy_atyp {
    VEGA_PROXY_ATYP_NONE = 0,
    VEGA_PROXY_ATYP_IPV4 = 1,
    VEGA_PROXY_ATYP_NAME = 3,
    VEGA_PROXY_ATYP_IPV6 = 4,
} vega_proxy_atyp;

typedef struct vega_proxy_addr {
    vega_proxy_atyp type;
    uint8_t ip[16];                     /* network order: 4 bytes for IPv4, 16 for IPv6 */
    char name[VEGA_PROXY_MAX_NAME + 1]; /* NUL-terminated, for ATYP_NAME */
    uint16_t port;
} vega_proxy_addr;

/* A proxy's answer (plain data), filled as the handshake goes. */
typedef struct vega_proxy_reply {
    vega_proxy_kind kind;
    int code;              /* SOCKS5 REP (0 = succeeded), SOCKS4 CD (90 = granted), HTTP status;
                              -1 before the reply arrived */
    int auth_method;       /* SOCKS5: the method the server chose (0, 2, 0xFF); -1 otherwise */
    int auth_status;       /* RFC 1929 STATUS (0 = success), -1 when no such step */
    vega_proxy_addr bound; /* SOCKS: BND.ADDR and BND.PORT (UDP ASSOCIATE: the relay) */
    char reason[128];      /* printable text for the code: the HTTP reason phrase, or the
                              RFC's wording for a SOCKS code ("Connection refused") */
} vega_proxy_reply;

/* The RFC's words for a SOCKS5 REP (RFC 1928 §6) or a SOCKS4 CD code ("unassigned" else). */
VEGA_API const char *vega_proxy_socks5_reply_str(int rep);
VEGA_API const char *vega_proxy_socks4_reply_str(int cd);

/* ---- the handshake core (sans I/O) ------------------------------------------------------------
 */

typedef struct vega_proxy_handshake vega_proxy_handshake;

/* Events of a handshake; each optional (NULL). They return 0, or nonzero to fail the handshake
 * with VEGA_ERR_CALLBACK. They may call get_ accessors, never read, write or free. */
typedef struct vega_proxy_callbacks {
    /* The final reply arrived (before it is judged: also for a refusal). r: borrowed. */
    int (*on_reply)(void *user, const vega_proxy_reply *r);
    /* A field of an HTTP CONNECT reply (interim 1xx heads included); spans borrow the input. */
    int (*on_field)(void *user, const char *name, size_t name_len, const char *value,
                    size_t value_len);
} vega_proxy_callbacks;

/* Settings of one handshake. Initialise with vega_proxy_handshake_opts_init. Strings are
 * borrowed for vega_proxy_handshake_new (copied). */
typedef struct vega_proxy_handshake_opts {
    vega_proxy_kind kind;       /* any but NONE; HTTP and HTTPS both mean CONNECT */
    vega_proxy_command command; /* CONNECT (default); UDP_ASSOCIATE for SOCKS5 only; BIND
                                   (since 0.2) for SOCKS5/5h/4/4a: host and port are where
                                   the connection is expected from */
    const char *host;           /* the destination: an IP literal (IPv6 without brackets) goes as
                                   an address, anything else as a name (SOCKS5/5h, SOCKS4a,
                                   HTTP); SOCKS4 needs an IPv4 literal. UDP ASSOCIATE: the
                                   address we will send from, NULL = 0.0.0.0 */
    uint16_t port;
    const char *user;       /* NULL: no credentials. SOCKS5: RFC 1929 (1..255 bytes each);
                               SOCKS4/4a: the USERID (password unused); HTTP: Basic */
    const char *password;   /* NULL = "" */
    const char *user_agent; /* HTTP CONNECT's User-Agent; NULL = none */
    size_t max_reply;       /* HTTP reply head bound in bytes; 0 = 16 KiB, at most 64 KiB */
} vega_proxy_handshake_opts;
#define VEGA_PROXY_HANDSHAKE_OPTS_VERSION 1

/* Fills o with the defaults (CONNECT, no credentials, 16 KiB). Since 0.1. */
VEGA_API void vega_proxy_handshake_opts_init_versioned(vega_proxy_handshake_opts *o,
                                                       int opts_version);
#define vega_proxy_handshake_opts_init(...)                                                        \
    vega_proxy_handshake_opts_init_versioned(__VA_ARGS__, VEGA_PROXY_HANDSHAKE_OPTS_VERSION)

/*
 * Creates a client handshake. cb: borrowed (copied), NULL = none. opts: borrowed (copied).
 * mem: retained, NULL = libc. user: passed to the callbacks (retained).
 * Returns 0; -EINVAL (a bad argument: no host for CONNECT or BIND, kind NONE, UDP ASSOCIATE on
 * anything but SOCKS5, BIND on HTTP(S), an unknown layout version, credentials over 255 bytes, a
 * host with a CR, LF or NUL); VEGA_ERR_PROXY_UNSUPPORTED (SOCKS4 and a host that is not an IPv4
 * literal, a name over 255 bytes); -ENOMEM. Context: any; never suspends. Since 0.1.
 */
VEGA_API int vega_proxy_handshake_new_versioned(vega_proxy_handshake **out,
                                                const vega_proxy_callbacks *cb,
                                                const vega_proxy_handshake_opts *opts,
                                                const vega_mem *mem, void *user, int opts_version);
#define vega_proxy_handshake_new(...)                                                              \
    vega_proxy_handshake_new_versioned(__VA_ARGS__, VEGA_PROXY_HANDSHAKE_OPTS_VERSION)

/* Frees h (NULL: no-op). Since 0.1. */
VEGA_API void vega_proxy_handshake_free(vega_proxy_handshake *h);

/*
 * The next message to send into out (cap bytes of room): messages are written whole.
 * Returns its length, 0 when nothing is to be sent now (wait for the proxy, or done);
 * VEGA_ERR_NOBUF (cap too small: nothing written; 600 bytes always suffice for SOCKS, a CONNECT
 * request needs about 100 + 2 * host + 4/3 of the credentials); the sticky error of a failed
 * handshake; -EINVAL (h NULL, or out NULL with cap). Context: any; never suspends. Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_handshake_write(vega_proxy_handshake *h, uint8_t *out, size_t cap);

/*
 * Feeds bytes from the proxy. in: borrowed. *consumed receives how many bytes the handshake
 * took: it never takes a byte past the end of the proxy's final reply, so what follows it
 * belongs to the tunnel (picotls-style in/out length, docs/ARCHITECTURE.md).
 * Returns 1 when the tunnel is up (the final reply said yes), 0 when more is needed (or a
 * message must be written first); VEGA_PROXY_BIND_LISTENING for BIND's first reply (granted:
 * the proxy listens at vega_proxy_handshake_reply's bound; read on for the second, which
 * names the peer that connected, and then returns 1); VEGA_ERR_PROXY_AUTH, VEGA_ERR_PROXY_REFUSED
 * (reply: see vega_proxy_handshake_reply), VEGA_ERR_PROXY_HANDSHAKE (a malformed reply, a head over
 * max_reply), VEGA_ERR_CALLBACK; -EINVAL (bytes before a message was sent, or after done).
 * Errors are sticky. Context: any; never suspends. Since 0.1.
 */
VEGA_API int vega_proxy_handshake_read(vega_proxy_handshake *h, const uint8_t *in, size_t len,
                                       size_t *consumed);

/* vega_proxy_handshake_read's result for BIND's first reply. Since 0.2. */
#define VEGA_PROXY_BIND_LISTENING 2

/* How many bytes the handshake can take now without reading past the proxy's reply (at least 1
 * while a reply is awaited; 0 when a message is to be written first, or when done or failed).
 * A driver that reads at most this much never reads tunnel bytes. Since 0.1. */
VEGA_API size_t vega_proxy_handshake_want(const vega_proxy_handshake *h);

/* True once the tunnel is up. Since 0.1. */
VEGA_API bool vega_proxy_handshake_is_done(const vega_proxy_handshake *h);

/* The reply so far (borrowed, valid until h is freed). Since 0.1. */
VEGA_API const vega_proxy_reply *vega_proxy_handshake_reply(const vega_proxy_handshake *h);

/* ---- SOCKS5 UDP request header (RFC 1928 §7) --------------------------------------------------
 */

/* Writes RSV RSV FRAG ATYP DST.ADDR DST.PORT for dst into out. Returns its length;
 * VEGA_ERR_NOBUF; -EINVAL (no address type, a name of 0 or over 255 bytes). Since 0.1. */
VEGA_API vega_ssize vega_proxy_udp_header_write(uint8_t *out, size_t cap, uint8_t frag,
                                                const vega_proxy_addr *dst);

/* Parses the header at the start of a datagram: *frag, *addr. Returns the header's length (the
 * payload follows); VEGA_ERR_PROXY_HANDSHAKE (truncated, RSV not zero, an unknown ATYP, an empty
 * name); -EINVAL (a NULL argument). Since 0.1. */
VEGA_API vega_ssize vega_proxy_udp_header_parse(const uint8_t *in, size_t len, uint8_t *frag,
                                                vega_proxy_addr *addr);

/* ---- proxy URLs and NO_PROXY ------------------------------------------------------------------
 */

/* A proxy URL taken apart (plain data). */
typedef struct vega_proxy_url {
    vega_proxy_kind kind;
    char host[VEGA_PROXY_MAX_NAME + 1]; /* without the brackets of an IPv6 literal */
    uint16_t port;
    bool has_user;
    char user[VEGA_PROXY_MAX_CRED + 1];     /* percent-decoded */
    char password[VEGA_PROXY_MAX_CRED + 1]; /* percent-decoded */
} vega_proxy_url;

/*
 * Parses a proxy URL as curl's -x takes it: [scheme://][user[:password]@]host[:port][/],
 * scheme http, https, socks4, socks4a, socks5, socks5h (any case), no scheme = http. The port
 * defaults to 1080 (443 for https), as curl's does. url: borrowed.
 * Returns 0; -EINVAL (an unknown scheme, no host, a bad port, a host or credential too long,
 * a path other than "/"). Since 0.1.
 */
VEGA_API int vega_proxy_url_parse(vega_proxy_url *out, const char *url);

/*
 * curl's NO_PROXY rule: list is comma-separated (spaces around entries ignored); "*" alone
 * matches every host; an entry matches host when equal to it or a domain suffix of it (a
 * leading dot in the entry is ignored: "example.com" and ".example.com" both match
 * "www.example.com"), case-insensitively; an IP entry matches that address, and one with a
 * /prefix (CIDR) every address in it. host: a name or IP literal (IPv6 with or without
 * brackets). Returns true when host must go direct. Since 0.1.
 */
VEGA_API bool vega_proxy_noproxy_match(const char *list, const char *host);

/* ---- the server side of the handshakes (sans I/O) ---------------------------------------------
 *
 * Stateless parsers over a caller's buffer: the caller keeps the bytes a client sent so far and
 * calls the parser again when more arrive. Each returns the length of the whole message when it
 * is complete (what follows it belongs to the next step or the tunnel), 0 when more bytes are
 * needed (never when len reached the message's bound), or an error. Nothing is allocated.
 */

/* Bounds of the client messages: a buffer of VEGA_PROXY_SERVER_MAX_MSG bytes holds any SOCKS
 * message whole. */
#define VEGA_PROXY_SOCKS5_MAX_GREETING 257 /* VER NMETHODS METHODS[255] */
#define VEGA_PROXY_SOCKS5_MAX_AUTH     513 /* VER ULEN UNAME[255] PLEN PASSWD[255] */
#define VEGA_PROXY_SOCKS5_MAX_REQUEST  262 /* VER CMD RSV ATYP 1+255 PORT */
#define VEGA_PROXY_SOCKS4_MAX_REQUEST  520 /* VN CD PORT IP USERID[255] NUL HOST[255] NUL */
#define VEGA_PROXY_SERVER_MAX_MSG      520

/* SOCKS5 methods (RFC 1928 §3). */
#define VEGA_PROXY_METHOD_NONE         0x00
#define VEGA_PROXY_METHOD_USERPASS     0x02
#define VEGA_PROXY_METHOD_UNACCEPTABLE 0xFF

/* Credentials as a client sent them (RFC 1929, or HTTP Basic), NUL-terminated (plain data). A
 * credential holding a NUL byte is refused by the parsers. */
typedef struct vega_proxy_credentials {
    char user[VEGA_PROXY_MAX_CRED + 1];
    char password[VEGA_PROXY_MAX_CRED + 1];
} vega_proxy_credentials;

/* A SOCKS request as a server receives it (plain data). */
typedef struct vega_proxy_server_request {
    int version;                          /* 4 or 5 */
    int command;                          /* as sent: 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE (SOCKS5) */
    vega_proxy_addr dst;                  /* SOCKS4: IPv4, SOCKS4a: a name */
    char userid[VEGA_PROXY_MAX_CRED + 1]; /* SOCKS4/4a USERID; "" for SOCKS5 */
} vega_proxy_server_request;

/*
 * Parses a SOCKS5 greeting (RFC 1928 §3: VER NMETHODS METHODS). in: borrowed. *offered receives
 * a bit per method offered among 0..31 (bit 0: no authentication, bit 2: username/password);
 * methods above 31 are ignored. Returns the greeting's length, 0 (incomplete);
 * VEGA_ERR_PROXY_HANDSHAKE (VER not 5, NMETHODS 0); -EINVAL (a NULL argument). Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_socks5_greeting_parse(const uint8_t *in, size_t len,
                                                     uint32_t *offered);

/*
 * Parses a username/password request (RFC 1929 §2: VER 1 ULEN UNAME PLEN PASSWD) into *cred.
 * Returns its length, 0 (incomplete); VEGA_ERR_PROXY_HANDSHAKE (VER not 1, ULEN 0, a NUL byte
 * in a field); -EINVAL. Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_socks5_auth_parse(const uint8_t *in, size_t len,
                                                 vega_proxy_credentials *cred);

/*
 * Parses a SOCKS5 request (RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT) into *req (any
 * CMD: the caller answers 7 for one it does not serve). Returns its length, 0 (incomplete);
 * VEGA_ERR_PROXY_UNSUPPORTED (an unknown ATYP: answer 8, then close, since the length is
 * unknown); VEGA_ERR_PROXY_HANDSHAKE (VER not 5, RSV not 0, an empty name or one holding a
 * NUL); -EINVAL. Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_socks5_request_parse(const uint8_t *in, size_t len,
                                                    vega_proxy_server_request *req);

/*
 * Parses a SOCKS4 or SOCKS4a request (VN 4 CD DSTPORT DSTIP USERID NUL; with DSTIP 0.0.0.x,
 * x != 0, a host name and NUL follow: SOCKS4a) into *req. Returns its length, 0 (incomplete);
 * VEGA_ERR_PROXY_HANDSHAKE (VN not 4, a USERID or host over 255 bytes, an empty host);
 * -EINVAL. Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_socks4_request_parse(const uint8_t *in, size_t len,
                                                    vega_proxy_server_request *req);

/* The 2-byte method selection (VER 5, METHOD) and RFC 1929 status reply (VER 1, STATUS).
 * Return 2; VEGA_ERR_NOBUF; -EINVAL. Since 0.1. */
VEGA_API vega_ssize vega_proxy_socks5_method_write(uint8_t *out, size_t cap, uint8_t method);
VEGA_API vega_ssize vega_proxy_socks5_auth_reply_write(uint8_t *out, size_t cap, uint8_t status);

/*
 * A SOCKS5 reply (RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT); bnd NULL = 0.0.0.0:0.
 * Returns its length (at most 262); VEGA_ERR_NOBUF; -EINVAL (no address type, a bad name).
 * Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_socks5_reply_write(uint8_t *out, size_t cap, uint8_t rep,
                                                  const vega_proxy_addr *bnd);

/* A SOCKS4 reply (VN 0, CD, DSTPORT, DSTIP; 90 granted, 91 rejected); bnd NULL or not IPv4 =
 * zeros. Returns 8; VEGA_ERR_NOBUF; -EINVAL. Since 0.1. */
VEGA_API vega_ssize vega_proxy_socks4_reply_write(uint8_t *out, size_t cap, uint8_t cd,
                                                  const vega_proxy_addr *bnd);

/* Bounds of an HTTP proxy request head. */
#define VEGA_PROXY_HTTP_DEFAULT_MAX_HEAD 16384
#define VEGA_PROXY_HTTP_MAX_METHOD       31

/* An HTTP proxy request head (plain data): offsets point into the parsed buffer. */
typedef struct vega_proxy_http_request {
    char method[VEGA_PROXY_HTTP_MAX_METHOD + 1];
    bool connect;                       /* CONNECT host:port (authority-form) */
    char host[VEGA_PROXY_MAX_NAME + 1]; /* without the brackets of an IPv6 literal */
    bool host_ipv6;                     /* host is an IPv6 literal */
    uint16_t port;                      /* absolute-form without a port: 80 */
    size_t path_off, path_len;          /* absolute-form: the origin-form part (path and query);
                                           path_len 0 means "/" */
    int minor;                          /* HTTP/1.minor */
    bool has_auth;                      /* a Proxy-Authorization field came */
    bool auth_basic;                    /* ... with Basic credentials that decoded into cred */
    vega_proxy_credentials cred;
    size_t head_len; /* the head's length, CRLF CRLF included */
} vega_proxy_http_request;

/*
 * Parses an HTTP/1.x proxy request head (RFC 9112 §3, §5): CONNECT with an authority-form
 * target (RFC 9112 §3.2.3), or any method with an absolute-form http:// target (§3.2.2);
 * Proxy-Authorization Basic (RFC 7617) decoded into req->cred. in: borrowed. max_head: the
 * bound on the head (0 = 16 KiB). Returns the head's length, 0 (incomplete and under the
 * bound); VEGA_ERR_NOBUF (no end of head within max_head: answer 431); VEGA_ERR_PROXY_UNSUPPORTED
 * (a scheme other than http://: answer 501); VEGA_ERR_PROXY_HANDSHAKE (a malformed head, an
 * origin-form target, a host over 255 bytes, a bad port, userinfo in the target, both
 * Content-Length and Transfer-Encoding: answer 400); -EINVAL. Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_http_request_parse(const char *in, size_t len, size_t max_head,
                                                  vega_proxy_http_request *req);

/*
 * The head to send to the origin for a forwarded (non-CONNECT) request, from the client's head
 * and its parse: the request line in origin-form, Host set to the target's authority (RFC 9112
 * §3.2.2: a Host the client sent is replaced), the client's other fields without
 * Proxy-Authorization, Proxy-Connection, Keep-Alive, Connection and the fields Connection names
 * (RFC 9110 §7.6.1), then "Connection: close" (one request per tunnel). Returns its length;
 * VEGA_ERR_NOBUF; -EINVAL (req is a CONNECT). Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_http_forward_head_write(char *out, size_t cap, const char *head,
                                                       const vega_proxy_http_request *req);

/*
 * A proxy's own reply head: "HTTP/1.1 <status> <reason>", for 407 a Proxy-Authenticate Basic
 * challenge with realm (NULL = "proxy"; no '"' or control bytes), and for anything but a 2xx
 * "Content-Length: 0" and "Connection: close". A 2xx to a CONNECT has no other field. Returns
 * its length; VEGA_ERR_NOBUF; -EINVAL (status outside 100..599, a bad realm). Since 0.1.
 */
VEGA_API vega_ssize vega_proxy_http_reply_write(char *out, size_t cap, int status,
                                                const char *realm);

/* ---- the driver: connecting through a proxy on the runtime (lib/proxy_io) ---------------------
 */

/* The stream, TLS and resolver types are those of <vega/stream.h>, <vega/tls.h> and
 * <vega/dns.h>, named by their struct tags here so that the core's users need not include
 * the I/O headers. */
struct vega_stream;
struct vega_tls_config;
struct vega_dns_resolver;
/* Kinds of trace lines, as curl -v shows them ("* ", "> ", "< "). */
typedef enum vega_proxy_trace_kind {
    VEGA_PROXY_TRACE_INFO = 0, /* what is being done ("SOCKS5 connect to ...") */
    VEGA_PROXY_TRACE_SENT,     /* a line of an HTTP CONNECT request, without CRLF */
    VEGA_PROXY_TRACE_RECV,     /* a line of an HTTP CONNECT reply, without CRLF */
} vega_proxy_trace_kind;

/* How to reach a proxy. Initialise with vega_proxy_opts_init. */
typedef struct vega_proxy_opts {
    vega_proxy_kind kind;
    const char *host; /* the proxy: a name or an IP literal (borrowed for each call) */
    uint16_t port;
    const char *user; /* NULL: no credentials (see vega_proxy_handshake_opts) */
    const char *password;
    bool tunnel;                   /* HTTP(S) proxies: tunnel http:// URLs with CONNECT too (curl's
                                      -p); false: they are forwarded (absolute-form). Read by the
                                      HTTP client; vega_proxy_connect always tunnels */
    struct vega_tls_config *tls;   /* https proxies: the client config for the TLS to the proxy
                                  (retained for each call); NULL = system CAs, verification on */
    const char *user_agent;        /* CONNECT's User-Agent; NULL = none */
    size_t max_reply;              /* see vega_proxy_handshake_opts; 0 = 16 KiB */
    struct vega_dns_resolver *dns; /* for the proxy's name and, with SOCKS4/SOCKS5, the
                                destination's; NULL = the process-wide resolver */
    /* Optional: each trace line (text borrowed for the call, no newline), and the reply of each
     * handshake. Called inside the connecting task. */
    void (*trace)(void *user, vega_proxy_trace_kind kind, const char *text, size_t len);
    void (*on_reply)(void *user, const vega_proxy_reply *r);
    void *trace_user;
} vega_proxy_opts;
#define VEGA_PROXY_OPTS_VERSION 1

/* Fills o with the defaults (kind NONE). Since 0.1. */
VEGA_API void vega_proxy_opts_init_versioned(vega_proxy_opts *o, int opts_version);
#define vega_proxy_opts_init(...)                                                                  \
    vega_proxy_opts_init_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/*
 * Connects to host:port through the proxy p: TCP to the proxy (TLS for HTTPS), then the
 * handshake (HTTP proxies: CONNECT). With SOCKS4 and SOCKS5 the destination is resolved here
 * (IPv4 only for SOCKS4); SOCKS4a, SOCKS5h and HTTP send the name. out: on 0 receives the
 * tunnel, returned owned (for HTTPS proxies, the TLS stream to the proxy: run the origin's TLS
 * inside it). host: borrowed; IPv6 literals without brackets. reply: NULL, or receives the
 * proxy's reply (also on failure). dl: the whole connect and handshake.
 * Returns 0; VEGA_ERR_PROXY_RESOLVE (the proxy's name); the destination's DNS codes (SOCKS4/5);
 * -ECONNREFUSED and other connect codes (the proxy); a TLS code (HTTPS); VEGA_ERR_PROXY_AUTH,
 * VEGA_ERR_PROXY_REFUSED, VEGA_ERR_PROXY_HANDSHAKE, VEGA_ERR_PROXY_UNSUPPORTED; -ETIMEDOUT;
 * -ECANCELED; -ENOMEM; -EINVAL (a bad argument, kind NONE, an unknown layout version).
 * Context: inside a task; suspends. Since 0.1.
 */
VEGA_API int vega_proxy_connect_versioned(struct vega_stream **out, const vega_proxy_opts *p,
                                          const char *host, uint16_t port, vega_proxy_reply *reply,
                                          vega_deadline dl, int opts_version);
#define vega_proxy_connect(...) vega_proxy_connect_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/*
 * BIND through the SOCKS proxy p (RFC 1928 §4 CMD X'02', SOCKS4 CD 2): asks it to listen for
 * one connection from host:port (the peer expected, e.g. an FTP server for active mode;
 * 0.0.0.0 for any, where the proxy allows it). The first reply (granted: the address the proxy
 * listens at, to be told to the peer) goes to p->on_reply, called inside this task before the
 * wait for the peer; it must not suspend. Then waits for the second reply: on 0, out receives
 * the stream to the peer, returned owned, and reply (may be NULL) the second reply (bound: the
 * peer's address). host: borrowed; with SOCKS4 and SOCKS5 resolved here. dl: the whole call,
 * the peer's connection included.
 * Returns vega_proxy_connect's codes; -EINVAL also for an HTTP(S) proxy. A refusal in either
 * reply is VEGA_ERR_PROXY_REFUSED (reply->code says which: SOCKS5 REP, SOCKS4 CD).
 * Context: inside a task; suspends. Since 0.2.
 */
VEGA_API int vega_proxy_bind_versioned(struct vega_stream **out, const vega_proxy_opts *p,
                                       const char *host, uint16_t port, vega_proxy_reply *reply,
                                       vega_deadline dl, int opts_version);
#define vega_proxy_bind(...) vega_proxy_bind_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/*
 * Opens a stream to the proxy itself, without a handshake: TCP, and TLS for HTTPS (for HTTP
 * forwarding of http:// URLs, where requests go to the proxy in absolute-form).
 * Returns as vega_proxy_connect without the handshake codes; -EINVAL (a bad argument, kind
 * NONE, no host or port, an unknown layout version). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_proxy_open_versioned(struct vega_stream **out, const vega_proxy_opts *p,
                                       vega_deadline dl, int opts_version);
#define vega_proxy_open(...) vega_proxy_open_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/*
 * UDP ASSOCIATE through the SOCKS5 or SOCKS5h proxy p (RFC 1928 section 7): TCP to the proxy,
 * the handshake (p's credentials; DST.ADDR 0.0.0.0:0, as dante's client sends: our source is
 * not known before the first datagram), then a UDP socket in relay mode (vega_udp_set_socks5
 * in <vega/io.h>) that any UDP user can take: vega_udp_send_batch / vega_udp_recv_batch (the
 * QUIC endpoint's vega_quic_connect_opts.sock too) put the header on and take it off. The
 * relay is the reply's BND.ADDR:BND.PORT (an all-zeros BND.ADDR means the proxy's own
 * address, as many proxies answer); the socket is bound to the address the control connection
 * goes out from (port 0), or the wildcard when the relay is of the other family. The control
 * connection stays open inside the socket for the association's life: its close by the proxy
 * makes each call on the socket return -ECONNABORTED, and closing the socket closes it (which
 * ends the association).
 * dst_name: NULL = each datagram names its destination's address (resolve names yourself, as
 * socks5:// does); else (socks5h://: the proxy resolves) every datagram goes to
 * dst_name:dst_port, and every datagram back from that port reports dst_as (borrowed; any
 * IPv4/IPv6 address the caller uses as that peer's) as its sender: one peer per socket.
 * out: on 0 receives the socket, returned owned (vega_sock_close). reply: NULL, or receives the
 * proxy's reply (also on failure). p->trace gets "UDP relay at ADDR". dl: the whole call.
 * Returns 0; vega_proxy_connect's codes (VEGA_ERR_PROXY_REFUSED: the proxy refused the
 * association, e.g. REP 7 "Command not supported"); VEGA_ERR_PROXY_UNSUPPORTED (p is not
 * SOCKS5 or SOCKS5h); VEGA_ERR_PROXY_HANDSHAKE (a BND.ADDR that is a name); -errno of the UDP
 * socket; -EINVAL (a bad argument, a dst_name without a dst_as, an unknown layout version).
 * Context: inside a task; suspends. Since 0.3.
 */
struct vega_sock;
struct vega_addr;
VEGA_API int vega_proxy_udp_associate_versioned(struct vega_sock **out, const vega_proxy_opts *p,
                                                const char *dst_name, uint16_t dst_port,
                                                const struct vega_addr *dst_as,
                                                vega_proxy_reply *reply, vega_deadline dl,
                                                int opts_version);
#define vega_proxy_udp_associate(...)                                                              \
    vega_proxy_udp_associate_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/*
 * The control half of vega_proxy_udp_associate, for a program that writes and reads the SOCKS5
 * UDP request header itself (a SOCKS5 server relaying through another, as vega-proxy
 * --upstream does): TCP to the SOCKS5 or SOCKS5h proxy p and the UDP ASSOCIATE handshake
 * (p's credentials, DST.ADDR 0.0.0.0:0), nothing more. control: on 0 receives the control
 * connection, returned owned: the association lasts while it is open (close it to end the
 * association; a read that returns 0 or an error is the proxy ending it). relay: on 0 receives
 * where to send the datagrams (BND.ADDR:BND.PORT; an all-zeros BND.ADDR means the proxy's own
 * address); the proxy takes them from the address the control connection goes out from.
 * reply, dl, p->trace: as vega_proxy_udp_associate. Returns 0; vega_proxy_connect's codes
 * (VEGA_ERR_PROXY_REFUSED: the proxy refused the association); VEGA_ERR_PROXY_UNSUPPORTED (p is
 * not SOCKS5 or SOCKS5h); VEGA_ERR_PROXY_HANDSHAKE (a BND.ADDR that is a name); -EINVAL (a bad
 * argument, an unknown layout version). Context: inside a task; suspends. Since 0.3.
 */
VEGA_API int vega_proxy_udp_associate_control_versioned(struct vega_sock **control,
                                                        struct vega_addr *relay,
                                                        const vega_proxy_opts *p,
                                                        vega_proxy_reply *reply, vega_deadline dl,
                                                        int opts_version);
#define vega_proxy_udp_associate_control(...)                                                      \
    vega_proxy_udp_associate_control_versioned(__VA_ARGS__, VEGA_PROXY_OPTS_VERSION)

/* The value of a Proxy-Authorization field for Basic auth ("Basic " + base64(user:password),
 * RFC 7617) into out, NUL-terminated. Returns its length; VEGA_ERR_NOBUF; -EINVAL. Since 0.1. */
VEGA_API vega_ssize vega_proxy_basic_auth(char *out, size_t cap, const char *user,
                                          const char *password);

#ifdef __cplusplus
}
#endif
#endif
