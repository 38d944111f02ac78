/* SPDX-License-Identifier: MIT */
/* HTTP types shared by HTTP/1.1, HTTP/2 and HTTP/3: URLs and request targets (RFC 3986,
 * RFC 9110 §4 and RFC 9112 §3.2), percent-decoding, dot-segment removal and reference
 * resolution, methods and status codes (RFC 9110 §9, §15). Sans I/O, no allocation. */
#ifndef VEGA_HTTP_H
#define VEGA_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HTTP codes (-10500..-10599; vega_strerror knows them). */
enum {
    VEGA_ERR_HTTP_BASE = -10500,
    VEGA_ERR_HTTP_URL = -10501,            /* malformed URL */
    VEGA_ERR_HTTP_SCHEME = -10502,         /* URL scheme not supported (not http/https) */
    VEGA_ERR_HTTP_EMPTY_REPLY = -10503,    /* the server closed without sending a response */
    VEGA_ERR_HTTP_BODY_TOO_LARGE = -10504, /* a body exceeded its configured limit */
    VEGA_ERR_HTTP_LAST = -10505,
};

/* Deprecated (0.1) spellings of the codes above, until 1.0. */
#define VEGA_HTTP_ERR_BASE           VEGA_ERR_HTTP_BASE
#define VEGA_HTTP_ERR_URL            VEGA_ERR_HTTP_URL
#define VEGA_HTTP_ERR_SCHEME         VEGA_ERR_HTTP_SCHEME
#define VEGA_HTTP_ERR_EMPTY_REPLY    VEGA_ERR_HTTP_EMPTY_REPLY
#define VEGA_HTTP_ERR_BODY_TOO_LARGE VEGA_ERR_HTTP_BODY_TOO_LARGE
#define VEGA_HTTP_ERR_LAST           VEGA_ERR_HTTP_LAST

/* Plain data: a span into caller-owned text. ptr == NULL means "absent", which differs from
 * present-but-empty (ptr != NULL, len == 0), e.g. "http://a/?" has an empty query. */
typedef struct vega_http_str {
    const char *ptr;
    size_t len;
} vega_http_str;

/* A span over a string literal, as an initialiser: vega_http_str m = VEGA_HTTP_LIT("GET"). */
#define VEGA_HTTP_LIT(lit)                                                                         \
    {                                                                                              \
        "" lit, sizeof(lit) - 1                                                                    \
    }

/* True when s holds exactly the C string c (bytes compared, as for paths and methods).
 * c: NUL-terminated. Context: any thread. Since 0.1. */
VEGA_API bool vega_http_str_eq(vega_http_str s, const char *c);
/* The same, ASCII letters compared without case (field names, tokens). Since 0.1. */
VEGA_API bool vega_http_str_eq_nocase(vega_http_str s, const char *c);
/* True when s starts with the C string prefix (a route's path prefix). Since 0.1. */
VEGA_API bool vega_http_str_has_prefix(vega_http_str s, const char *prefix);

/* Plain data: the components of a URI or URI reference (RFC 3986 §3). Every span borrows the
 * parsed input, which must outlive it. Delimiters are excluded: scheme without ":",
 * userinfo without "@", host without "[" "]" (see host_is_ip_literal), query without "?",
 * fragment without "#". Nothing is decoded or case-folded. */
typedef struct vega_http_url {
    vega_http_str scheme;    /* absent in a relative reference */
    vega_http_str authority; /* the raw "userinfo@host:port" text after "//"; absent without */
    vega_http_str userinfo;  /* absent unless an authority has "user@" */
    vega_http_str host;      /* absent iff there is no authority ("//") */
    vega_http_str path;      /* always present, may be empty */
    vega_http_str query;
    vega_http_str fragment;
    uint16_t port;           /* the explicit port, else the scheme default, else 0 */
    bool has_port;           /* a non-empty port was written in the authority */
    bool host_is_ip_literal; /* host was "[IPv6]" (brackets stripped) */
} vega_http_url;

/*
 * Parses an absolute URI, "scheme:hier-part[?query][#fragment]" (RFC 3986 §3). Strict: any
 * character outside its component's grammar, a bad %-escape, a port above 65535, an
 * unparseable IPv6 literal or an IPvFuture literal is rejected. For "http", "https", "ws" and
 * "wss" an authority with a non-empty host is required (RFC 9110 §4.2). u: borrowed, filled;
 * s: borrowed, retained by the spans in u (need not be NUL-terminated).
 * Returns 0; VEGA_ERR_PROTO (malformed; u is then unspecified).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_url_parse(vega_http_url *u, const char *s, size_t len);

/*
 * Parses a URI reference (RFC 3986 §4.1): an absolute URI as above, or a relative reference
 * (network-path "//host/p", absolute-path "/p", relative-path "p", or just "?q" / "#f").
 * Plain RFC 3986: unlike vega_http_url_parse, "http:g" (no authority) is accepted, as §5.4.2
 * requires of strict resolvers. Arguments and Returns as for vega_http_url_parse.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_url_parse_ref(vega_http_url *u, const char *s, size_t len);

/*
 * Parses an HTTP request target in origin-form ("/path[?query]", RFC 9112 §3.2.1) or
 * absolute-form (an absolute URI with an authority and without a fragment, §3.2.2).
 * Fragments, the authority-form and the asterisk-form are rejected. Arguments as for
 * vega_http_url_parse.
 * Returns 0; VEGA_ERR_PROTO (malformed or another form).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_url_parse_target(vega_http_url *u, const char *s, size_t len);

/*
 * Recomposes u into text (RFC 3986 §5.3), adding the delimiters back ("[" "]" around an
 * IP-literal host, ":port" only when has_port). u: borrowed; out: borrowed, written with a
 * terminating NUL.
 * Returns the length written, NUL excluded; VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_url_format(const vega_http_url *u, char *out, size_t cap);

/* The default port of a scheme (case-insensitive): http/ws 80, https/wss 443, else 0. */
VEGA_API uint16_t vega_http_scheme_default_port(const char *scheme, size_t len);

/*
 * Resolves the reference ref against the absolute URI base (RFC 3986 §5.2, strict parser:
 * "http:g" keeps its scheme), writing the target URI. The authority is copied as written; a
 * path that would start with "//" without an authority gets a "/." prefix (as in the WHATWG
 * URL standard) so the result reparses to the same components. base, ref: borrowed; out:
 * borrowed, must not overlap either, written with a terminating NUL.
 * Returns the length written, NUL excluded; VEGA_ERR_PROTO (base not an absolute URI, or ref
 * not a URI reference); VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_url_resolve(const char *base, size_t base_len, const char *ref,
                                          size_t ref_len, char *out, size_t cap);

/* Flags for vega_http_pct_decode. */
enum {
    VEGA_HTTP_PCT_PLUS_SPACE = 1u << 0,   /* decode "+" as a space (form-urlencoded) */
    VEGA_HTTP_PCT_REJECT_NUL = 1u << 1,   /* fail on "%00" */
    VEGA_HTTP_PCT_REJECT_SLASH = 1u << 2, /* fail on "%2F" / "%2f" and "%5C" / "%5c" */
};

/*
 * Decodes %XX escapes of in into out; out may equal in (decoding never grows). in: borrowed;
 * out: borrowed, not NUL-terminated.
 * Returns the decoded length; VEGA_ERR_PROTO (a "%" not followed by two hex digits, or a
 * rejected escape per flags); VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_pct_decode(const char *in, size_t len, char *out, size_t cap,
                                         unsigned flags);

/*
 * Removes "." and ".." segments from a path (RFC 3986 §5.2.4, remove_dot_segments), exactly
 * as the RFC specifies: ".." above the root is dropped, escapes are left alone. in: borrowed;
 * out: borrowed, may equal in (the result is never longer), not NUL-terminated.
 * Returns the output length; VEGA_ERR_NOBUF (cap < the output length).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_path_remove_dots(const char *in, size_t len, char *out, size_t cap);

/*
 * The file-server variant: turns an origin-form path (must start with "/", no query) into a
 * decoded, normalised path that cannot leave the root. Escapes are decoded first (so "%2e%2e"
 * counts as ".."); "%2F", "%5C", "%00", a raw "\" or a control byte is rejected; empty
 * segments collapse ("//" -> "/"); "." is dropped; ".." removes the previous segment and is
 * rejected when it would climb above the root. The result starts with "/" and contains no
 * "." or ".." segment, NUL or "\". in: borrowed; out: borrowed, may equal in, not
 * NUL-terminated.
 * Returns the output length; VEGA_ERR_PROTO (rejected as above or a bad escape);
 * VEGA_ERR_NOBUF (cap < the output length; cap >= len always suffices).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_path_normalize_safe(const char *in, size_t len, char *out,
                                                  size_t cap);

/* ---- Header fields (RFC 9110 §5) ---- */

/* Plain data: one field line. Both spans borrow caller memory (see vega_http_fields_add). */
typedef struct vega_http_field {
    vega_http_str name;
    vega_http_str value;
} vega_http_field;

/* A field from two string literals, as an initialiser:
 *   static const vega_http_field json[] = {VEGA_HTTP_FIELD("content-type", "application/json")};
 */
#define VEGA_HTTP_FIELD(name, value)                                                               \
    {                                                                                              \
        VEGA_HTTP_LIT(name), VEGA_HTTP_LIT(value)                                                  \
    }

/* Plain data: an ordered list of fields in caller storage; repeated names are kept in order.
 * Initialise with vega_http_fields_init; read items[0..count) directly. size counts the
 * bytes of every name and value. */
typedef struct vega_http_fields {
    vega_http_field *items; /* borrowed caller storage for cap fields */
    size_t count, cap;
    size_t size, max_size;
} vega_http_fields;

/* True when s is a non-empty token (RFC 9110 §5.6.2): the field-name and method grammar. */
VEGA_API bool vega_http_token_is_valid(const char *s, size_t len);

/* True when s is a valid field-value (RFC 9110 §5.5): VCHAR, obs-text, SP and HTAB, without
 * leading or trailing whitespace; empty is valid. CR, LF and NUL never are. */
VEGA_API bool vega_http_field_value_is_valid(const char *s, size_t len);

/*
 * Sets up f over storage, which holds at most cap fields (the count limit); max_size limits
 * the total bytes of names and values (0 = no limit). f, storage: borrowed, storage retained
 * by f. Context: any thread. Since 0.1.
 */
VEGA_API void vega_http_fields_init(vega_http_fields *f, vega_http_field *storage, size_t cap,
                                    size_t max_size);

/*
 * Appends a field. Leading and trailing SP/HTAB of value are trimmed (the span shrinks;
 * nothing is copied), then name must be a token and value a field-value. name, value:
 * borrowed, retained by f: they must outlive its use.
 * Returns 0; VEGA_ERR_PROTO (invalid name or value); -E2BIG (cap fields already);
 * -EMSGSIZE (max_size would be exceeded). On error f is unchanged.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_fields_add(vega_http_fields *f, const char *name, size_t name_len,
                                  const char *value, size_t value_len);

/*
 * The index of the first field at or after start whose name equals name, ASCII
 * case-insensitively. Returns the index; -ENOENT (none). Since 0.1.
 */
VEGA_API vega_ssize vega_http_fields_find(const vega_http_fields *f, const char *name,
                                          size_t name_len, size_t start);

/* The first field named name (case-insensitive), or NULL; borrowed from f. Since 0.1. */
VEGA_API const vega_http_field *vega_http_fields_get(const vega_http_fields *f, const char *name,
                                                     size_t name_len);

/*
 * Joins the values of every field named name with ", " (RFC 9110 §5.3), in order, into out
 * with a terminating NUL. Not meaningful for Set-Cookie (RFC 6265 §3). out: borrowed.
 * Returns the length, NUL excluded; -ENOENT (no such field); VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_fields_get_combined(const vega_http_fields *f, const char *name,
                                                  size_t name_len, char *out, size_t cap);

/* Removes every field named name, keeping the order of the rest. Returns how many. Since 0.1. */
VEGA_API size_t vega_http_fields_remove(vega_http_fields *f, const char *name, size_t name_len);

/* ---- Dates (RFC 9110 §5.6.7) ---- */

/* Length of an IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", NUL excluded. */
#define VEGA_HTTP_DATE_LEN 29

/*
 * Formats t (seconds since the Unix epoch, UTC) as an IMF-fixdate with a terminating NUL.
 * out: borrowed, needs VEGA_HTTP_DATE_LEN + 1 bytes.
 * Returns VEGA_HTTP_DATE_LEN; VEGA_ERR_NOBUF (cap too small); -EINVAL (t before
 * year 1 or after year 9999).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_date_format(int64_t t, char *out, size_t cap);

/*
 * Parses an HTTP-date: IMF-fixdate, or the obsolete RFC 850 ("Sunday, 06-Nov-94 08:49:37
 * GMT") and asctime ("Sun Nov  6 08:49:37 1994") forms. Names and "GMT" are case-sensitive;
 * the weekday is checked for spelling, not consistency. An RFC 850 two-digit year that would
 * be more than 50 years after now is taken as the most recent past year with those digits
 * (§5.6.7). s: borrowed; t: borrowed, set on success (seconds since the epoch, UTC).
 * Returns 0; VEGA_ERR_PROTO (any other text, or an impossible date or time).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_date_parse(const char *s, size_t len, int64_t now, int64_t *t);

/* ---- Range requests (RFC 9110 §14) ---- */

/* Plain data: a resolved byte range, both ends inclusive, first <= last < the length. */
typedef struct vega_http_range {
    uint64_t first, last;
} vega_http_range;

/* A sensible value for vega_http_range_parse's max: more ranges is a denial-of-service smell
 * (RFC 9110 §17.15). */
#define VEGA_HTTP_RANGES_MAX 16

/*
 * Parses a Range field value, "bytes=" range-set (§14.1.2, the unit case-insensitive, OWS
 * and empty list elements allowed), and resolves it against a representation of length
 * bytes: "a-b" becomes a..min(b, length-1), "a-" a..length-1 and "-n" the last n bytes.
 * Unsatisfiable ranges (a >= length, "-0") are dropped; order and overlaps are kept as sent.
 * Numbers too large for 64 bits saturate. s: borrowed; out: borrowed, receives up to max
 * ranges; count: set to how many on success.
 * Returns 0 (at least one range); -ERANGE (none satisfiable: answer 416 with
 * "Content-Range: bytes *" "/length"); -E2BIG (more than max range-specs); -ENOTSUP (a unit
 * other than bytes); VEGA_ERR_PROTO (malformed, e.g. last < first). On the last three
 * RFC 9110 §14.2 lets a server ignore the field and send 200.
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_range_parse(const char *s, size_t len, uint64_t length, vega_http_range *out,
                                   size_t max, size_t *count);

/*
 * Formats a Content-Range value (§14.4): "bytes first-last/length", or "bytes *" "/length"
 * when r is NULL (for a 416). r: borrowed, may be NULL; out: borrowed, written with a NUL.
 * Returns the length, NUL excluded; VEGA_ERR_NOBUF (cap too small).
 * Context: any thread. Since 0.1.
 */
VEGA_API vega_ssize vega_http_content_range_format(const vega_http_range *r, uint64_t length,
                                                   char *out, size_t cap);

/* ---- Entity tags (RFC 9110 §8.8.3, §13.1.1, §13.1.2) ---- */

/* Plain data: an entity-tag. opaque borrows the text between the quotes. */
typedef struct vega_http_etag {
    vega_http_str opaque;
    bool weak; /* written W/"..." */
} vega_http_etag;

/*
 * Parses exactly one entity-tag, [W/] DQUOTE *etagc DQUOTE, e.g. an ETag field value.
 * s: borrowed, retained by tag->opaque; tag: borrowed, set on success.
 * Returns 0; VEGA_ERR_PROTO (anything else). Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_etag_parse(const char *s, size_t len, vega_http_etag *tag);

/* Strong comparison (§8.8.3.2): neither weak and the opaque tags equal. Since 0.1. */
VEGA_API bool vega_http_etag_eq_strong(const vega_http_etag *a, const vega_http_etag *b);

/* Weak comparison: the opaque tags equal, W/ ignored. Since 0.1. */
VEGA_API bool vega_http_etag_eq_weak(const vega_http_etag *a, const vega_http_etag *b);

/*
 * Evaluates an If-Match (strong = true, §13.1.1) or If-None-Match (strong = false, §13.1.2)
 * field value, "*" or a list of entity-tags, against the selected representation's tag.
 * "*" matches when has_current (a current representation exists). s: borrowed; current:
 * borrowed, NULL when the representation has no entity-tag (then only "*" can match).
 * Returns 1 (some member matches), 0 (none does); VEGA_ERR_PROTO (malformed list).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_etag_list_match(const char *s, size_t len, const vega_http_etag *current,
                                       bool has_current, bool strong);

/* ---- Content-coding negotiation (RFC 9110 §12.5.3) ---- */

typedef enum vega_http_coding {
    VEGA_HTTP_CODING_IDENTITY = 0,
    VEGA_HTTP_CODING_GZIP, /* also matches "x-gzip" (§8.4.1.3) */
    VEGA_HTTP_CODING_BR,
    VEGA_HTTP_CODING_ZSTD,
    VEGA_HTTP_CODING_DEFLATE,
    VEGA_HTTP_CODING_COUNT,
} vega_http_coding;

/* The token of a coding ("gzip", "identity"), or "" for values out of range. Since 0.1. */
VEGA_API const char *vega_http_coding_name(vega_http_coding c);

/*
 * Chooses a content coding for a response from an Accept-Encoding field value: the coding
 * with the highest q-value among prefs, ties going to the earlier in prefs. A coding not
 * listed gets the q of "*" if present; identity is acceptable unless excluded by
 * "identity;q=0" or by "*;q=0" without an identity entry; q=0 means "not acceptable".
 * Coding names are case-insensitive; unknown codings are ignored. accept NULL (no field)
 * accepts anything: prefs[0] is chosen. An empty value accepts identity only. accept, prefs:
 * borrowed; prefs lists the codings the server can produce, most preferred first (identity
 * included if it may be chosen).
 * Returns the chosen vega_http_coding; -ENOENT (nothing in prefs acceptable: send 415/406,
 * or identity anyway, §12.5.3); VEGA_ERR_PROTO (malformed field, e.g. a bad qvalue).
 * Context: any thread. Since 0.1.
 */
VEGA_API int vega_http_coding_choose(const char *accept, size_t len, const vega_http_coding *prefs,
                                     size_t nprefs);

/* ---- Methods and status codes (RFC 9110 §9, §15; RFC 5789) ---- */

typedef enum vega_http_method {
    VEGA_HTTP_METHOD_OTHER = 0, /* a valid token that is none of the below */
    VEGA_HTTP_METHOD_GET,
    VEGA_HTTP_METHOD_HEAD,
    VEGA_HTTP_METHOD_POST,
    VEGA_HTTP_METHOD_PUT,
    VEGA_HTTP_METHOD_DELETE,
    VEGA_HTTP_METHOD_CONNECT,
    VEGA_HTTP_METHOD_OPTIONS,
    VEGA_HTTP_METHOD_TRACE,
    VEGA_HTTP_METHOD_PATCH,
    VEGA_HTTP_METHOD_COUNT,
} vega_http_method;

/*
 * The method named by s; method names are case-sensitive (§9.1), so "get" is OTHER.
 * Returns a vega_http_method (OTHER for an unregistered token); VEGA_ERR_PROTO (s is not a
 * token). Since 0.1.
 */
VEGA_API int vega_http_method_parse(const char *s, size_t len);

/* The name of m ("GET"), or "" for OTHER and out-of-range values. Since 0.1. */
VEGA_API const char *vega_http_method_name(vega_http_method m);

/* Safe (§9.2.1): GET, HEAD, OPTIONS, TRACE. Since 0.1. */
VEGA_API bool vega_http_method_is_safe(vega_http_method m);

/* Idempotent (§9.2.2): the safe methods plus PUT and DELETE. Since 0.1. */
VEGA_API bool vega_http_method_is_idempotent(vega_http_method m);

/* The reason phrase registered for status (RFC 9110 §15 and the IANA registry's common
 * entries, e.g. "Not Found"), or "" for unknown codes. Since 0.1. */
VEGA_API const char *vega_http_status_reason(int status);

/* True for 100..599, the range a status-code may take (§15). Since 0.1. */
VEGA_API bool vega_http_status_is_valid(int status);

/* True when a response with this status has no content (1xx, 204, 304; §6.4.1). Since 0.1. */
VEGA_API bool vega_http_status_has_no_content(int status);

#ifdef __cplusplus
}
#endif
#endif
