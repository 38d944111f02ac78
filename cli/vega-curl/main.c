/* SPDX-License-Identifier: MIT */
/* vega-curl: the command line (curl's options and habits), the client's settings, and the
 * transfers run one after the other on one client so that they share its connection pool. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "curl.h"

static const char usage_text[] =
    "Usage: vega-curl [options] URL...\n"
    "An HTTP client with curl's options and exit codes (HTTP/1.1 and HTTP/2 over TCP and\n"
    "TLS, HTTP/3 over QUIC).\n"
    "\n"
    "Request:\n"
    "  -X, --request METHOD     the method (default GET; POST with -d; PUT with -T)\n"
    "  -H, --header 'N: V'      an extra header field (repeatable); 'N:' removes a field the\n"
    "                           tool would send (Host, Accept, User-Agent, ...), 'N;' sends\n"
    "                           N with an empty value; @FILE: one field a line\n"
    "  -d, --data DATA          POST DATA as application/x-www-form-urlencoded (repeatable,\n"
    "                           joined with '&'); @FILE reads FILE without its newlines,\n"
    "                           @- reads stdin\n"
    "      --data-binary DATA   the same, but @FILE is sent as it is\n"
    "      --data-raw DATA      the same, with no @FILE meaning\n"
    "      --data-urlencode D   the same, percent-encoded: 'content', 'name=content',\n"
    "                           '@FILE', 'name@FILE'\n"
    "  -G, --get                send the -d data as the URL's query, with GET\n"
    "  -T, --upload-file FILE   PUT FILE, streamed (- = stdin, chunked); with several URLs the\n"
    "                           n-th -T goes with the n-th URL; a URL ending in / gets FILE's\n"
    "                           name\n"
    "      --json DATA          POST DATA as --data-binary, with Content-Type and Accept\n"
    "                           application/json (repeatable, joined as they are)\n"
    "  -F, --form NAME=CONTENT  POST multipart/form-data (repeatable): NAME=value, NAME=@FILE\n"
    "                           (upload), NAME=<FILE (its content as the value); ;type=T,\n"
    "                           ;filename=F; \"quoted\" words\n"
    "      --form-string N=S    a -F part whose value S is taken as it is\n"
    "  -K, --config FILE        read options from FILE (curl's syntax: one a line, \"--opt\n"
    "                           value\", \"opt = value\", quoted values, # comments; \"-\" =\n"
    "                           stdin); ~/.curlrc is read first unless -q comes first\n"
    "      --unix-socket PATH   connect to the Unix socket PATH instead of the URL's host\n"
    "      --abstract-unix-socket NAME  the same, NAME in the abstract namespace\n"
    "  -q, --disable            as the first argument: do not read ~/.curlrc\n"
    "  -n, --netrc              credentials for the URL's host from ~/.netrc (those in the URL\n"
    "                           are ignored)\n"
    "      --netrc-file FILE    as -n with FILE (at most 64 KiB)\n"
    "      --netrc-optional     as -n, but credentials in the URL win\n"
    "  -I, --head               HEAD: show the response header only\n"
    "  -r, --range RANGE        ask for part of the document: Range: bytes=RANGE (0-9, 10-,\n"
    "                           -500, 0-0,5-9)\n"
    "  -u, --user U[:P]         Basic credentials; without :P the password is asked on the\n"
    "                           terminal (or read as a line from stdin where there is none)\n"
    "      --oauth2-bearer TOK  Authorization: Bearer TOK\n"
    "  -b, --cookie DATA|FILE   'N=V; N2=V2' sent as it is (to every host, as curl does), or\n"
    "                           a cookie file (Netscape format, as curl writes it) whose\n"
    "                           cookies go where RFC 6265 lets them; a FILE (even one not\n"
    "                           there) also keeps the Set-Cookie cookies for the next hops\n"
    "  -c, --cookie-jar FILE    write every cookie at the end, in curl's format (- = stdout)\n"
    "  -j, --junk-session-cookies  leave out the -b file's session cookies\n"
    "  -z, --time-cond T        If-Modified-Since T (an HTTP date, or a file's mtime);\n"
    "                           -T: If-Unmodified-Since; nothing written when not met\n"
    "  -A, --user-agent NAME    User-Agent (default vega-curl/VERSION; '' = none)\n"
    "  -e, --referer URL        Referer\n"
    "      --compressed         ask for gzip, deflate, br and zstd and decode the body\n"
    "      --http1.1            HTTP/1.1 only (ALPN offers http/1.1 alone)\n"
    "      --http1.0            HTTP/1.0\n"
    "      --http2              HTTP/2 over TLS by ALPN h2, falling back to HTTP/1.1 when the\n"
    "                           server does not take it (the default for https, as curl's);\n"
    "                           on http:// URLs a request without a body asks\n"
    "                           'Upgrade: h2c' and goes on over HTTP/2 after a 101; on\n"
    "                           wss:// a WebSocket over HTTP/2 (RFC 8441), else the\n"
    "                           HTTP/1.1 Upgrade (ws:// stays HTTP/1.1)\n"
    "      --http2-prior-knowledge  HTTP/2 without negotiation: h2c on http://, ALPN h2 on\n"
    "                           https://; ws:// and wss:// over HTTP/2 only (RFC 8441)\n"
    "      --http3              HTTP/3 over QUIC for https URLs; if QUIC has not connected\n"
    "                           after 200 ms (or failed), race TCP: the first connected\n"
    "                           wins; on wss:// a WebSocket over HTTP/3 (RFC 9220), the\n"
    "                           HTTP/1.1 Upgrade when QUIC fails or the server does not\n"
    "                           do it\n"
    "      --http3-only         HTTP/3 and nothing else (wss:// over HTTP/3 only)\n"
    "\n"
    "Connection:\n"
    "      --resolve H:P:ADDR   connect to ADDR for host H port P (repeatable)\n"
    "      --connect-timeout S  seconds for DNS + TCP + TLS (decimals allowed; default 30)\n"
    "  -4, --ipv4 / -6, --ipv6  resolve names to IPv4 (IPv6) addresses only\n"
    "      --no-tcp-nodelay     leave Nagle's algorithm on (--tcp-nodelay, the default: off)\n"
    "      --keepalive-time S   TCP keep-alive probes after S idle seconds (default 60);\n"
    "                           --no-keepalive: none\n"
    "      --interface NAME     connect from interface NAME (SO_BINDTODEVICE) or address\n"
    "                           NAME; if!NAME an interface only, host!NAME an address or host\n"
    "                           only (not through a proxy or over HTTP/3; unknown: exit 45)\n"
    "      --local-port N[-M]   connect from local port N, or the first free one of N-M\n"
    "                           (none free: exit 45)\n"
    "      --limit-rate SPEED   at most SPEED body bytes a second on average, down and up\n"
    "                           (-T) (K, M, G)\n"
    "      --retry N            try a transient failure N more times: a timeout, HTTP 408,\n"
    "                           429, 500, 502, 503, 504; after 1 s doubling to 10 min, or\n"
    "                           Retry-After when longer\n"
    "      --retry-delay S      S seconds between retries instead (0: the doubling)\n"
    "      --retry-max-time S   no retry after S seconds\n"
    "      --retry-connrefused  a refused connection is transient too\n"
    "      --retry-all-errors   every failure is\n"
    "  -x, --proxy URL          go through a proxy: http:// (default), https://, socks4://,\n"
    "                           socks4a://, socks5://, socks5h:// (the proxy resolves); port\n"
    "                           1080 unless given (443 for https://); \"\" = none. HTTP/3\n"
    "                           goes through socks5:// and socks5h:// (UDP ASSOCIATE relay);\n"
    "                           other proxies: --http3 falls back to TCP, --http3-only exit 97\n"
    "  -U, --proxy-user U:P     proxy credentials (SOCKS5 RFC 1929, HTTP Basic)\n"
    "      --socks5 H:P         SOCKS5 proxy, names resolved here (also --socks5-hostname,\n"
    "                           --socks4, --socks4a)\n"
    "  -p, --proxytunnel        CONNECT through an HTTP proxy for http:// URLs too\n"
    "      --noproxy LIST       hosts that go direct (as NO_PROXY: names, suffixes, IPs, CIDR)\n"
    "      --proxy-insecure     do not verify an https:// proxy's certificate\n"
    "      --proxy-cacert FILE  CA certificates for an https:// proxy\n"
    "                           env: http_proxy, https_proxy/HTTPS_PROXY, all_proxy/ALL_PROXY,\n"
    "                           no_proxy/NO_PROXY (curl's rules; HTTP_PROXY is ignored)\n"
    "  -m, --max-time S         seconds for each whole transfer, redirects included\n"
    "  -k, --insecure           do not verify the server's certificate\n"
    "      --cacert FILE        CA certificates (PEM) to verify the server with\n"
    "      --cert FILE          client certificate (PEM) for mutual TLS (--key: its key)\n"
    "      --key FILE           the client certificate's private key (PEM)\n"
    "  SSLKEYLOGFILE=FILE       append TLS secrets to FILE (for Wireshark; TCP and QUIC;\n"
    "                           created with mode 0600)\n"
    "  QLOGDIR=DIR              a qlog trace of each QUIC connection in DIR\n"
    "                           (<ODCID>_client.sqlog, JSON-SEQ; for debugging)\n"
    "      --alt-svc FILE       learn Alt-Svc from https responses into FILE (curl's\n"
    "                           format) and go over HTTP/3 where it names an h3\n"
    "                           alternative, falling back to TCP; '' = in memory only\n"
    "      --tls-session-file FILE  keep QUIC session tickets and tokens in FILE (mode\n"
    "                           0600) to resume next time, with 0-RTT for GET and HEAD\n"
    "      --quic-version 1|2   the QUIC version to start with (default 1; 2 = RFC 9369)\n"
    "      --quic-key-update    start a QUIC key update once the handshake is confirmed\n"
    "                           (a test of the server's; not a curl option)\n"
    "      --quic-migrate[=MS]  move the HTTP/3 connection to a new local port MS ms\n"
    "                           (default 0) after the handshake, once it is confirmed;\n"
    "                           -v says whether the new path validated (a test of the\n"
    "                           server's; ngtcp2's --change-local-addr; not a curl option)\n"
    "      --tls13-ciphers LIST  TLS 1.3 cipher suites to offer, in order, over TCP and QUIC\n"
    "                           (TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256 ...)\n"
    "      --tls-earlydata, --no-tls-earlydata  send GET and HEAD in 0-RTT when resuming\n"
    "                           (default: on with --tls-session-file)\n"
    "  -1, --tlsv1              TLS 1.0 or later (libvega speaks 1.2 and 1.3: the default;\n"
    "                           also --tlsv1.0, --tlsv1.1)\n"
    "      --tlsv1.2, --tlsv1.3  the lowest TLS version to use\n"
    "      --tls-max VERSION    the highest: 1.2, 1.3 or default (1.0, 1.1: exit 35)\n"
    "  -2, --sslv2, -3, --sslv3  ignored with a warning, as curl 7.88 does\n"
    "      --ciphers LIST       TLS 1.2 cipher suites, OpenSSL syntax (ECDHE+AESGCM:...)\n"
    "      --curves LIST        key-exchange groups, most preferred first (X25519:P-256)\n"
    "      --pinnedpubkey PINS  the server's public key must be one of sha256//BASE64[;\n"
    "                           sha256//...] or the key in a PEM or DER FILE (exit 90;\n"
    "                           checked with -k too, and over HTTP/3)\n"
    "      --digest             -u goes as HTTP Digest (RFC 7616: MD5, SHA-256, -sess;\n"
    "                           qop auth, auth-int; userhash) in answer to the server's\n"
    "                           401 challenge\n"
    "      --anyauth            Digest or Basic, whichever the server's 401 offers\n"
    "      --basic              -u goes as Basic, at once (the default)\n"
    "      --dns-servers LIST   name servers to ask instead of the system's: ADDR[:PORT] or\n"
    "                           [IPv6]:PORT, comma-separated (port 53 unless given; at\n"
    "                           most 8); the hosts file still comes first\n"
    "      --happy-eyeballs-timeout-ms MS  how long one connection attempt runs before the\n"
    "                           next address (the other IP family first) is tried (default\n"
    "                           250; at least 10)\n"
    "\n"
    "Redirects:\n"
    "  -L, --location           follow redirects (301, 302, 303, 307, 308); Authorization\n"
    "                           (-u, --oauth2-bearer, -H), Cookie and Proxy-Authorization go\n"
    "                           only to the original scheme, host and port\n"
    "      --location-trusted   -L that sends them to every host it is redirected to\n"
    "      --max-redirs N       at most N redirects (default 50; -1 = no limit; exit 47)\n"
    "\n"
    "Parallel:\n"
    "  -Z, --parallel           the URLs at once instead of one after another (over one\n"
    "                           HTTP/2 connection per origin, as streams); bodies to stdout\n"
    "                           come whole per read, mixed between transfers as curl's\n"
    "      --parallel-max N     at most N transfers at once (default 50, at most 300)\n"
    "\n"
    "Output:\n"
    "  -o, --output FILE        write the body to FILE (- = stdout); the n-th -o goes with\n"
    "                           the n-th URL\n"
    "  -O, --remote-name        write it to a file named like the URL's last path segment\n"
    "  -J, --remote-header-name  -O takes the name from Content-Disposition (its last path\n"
    "                           segment) and never overwrites a file (exit 23)\n"
    "      --output-dir DIR     put -o and -O files in DIR\n"
    "      --create-dirs        make the missing directories of their paths\n"
    "  -C, --continue-at N|-    resume: ask from byte N (-: the output file's size) and\n"
    "                           append to the file (416 for a complete file: exit 0); with\n"
    "                           -T, send the file from byte N with its Content-Range\n"
    "  -R, --remote-time        give the file the document's Last-Modified time\n"
    "      --fail-early         stop at the first URL that fails\n"
    "      --remote-name-all    -O for every URL\n"
    "      --etag-save FILE     write the response's ETag to FILE (- = stdout)\n"
    "      --etag-compare FILE  send If-None-Match with the ETag FILE holds (missing: exit\n"
    "                           26, unless --etag-save is given too)\n"
    "  -i, --include            write the response header before the body\n"
    "  -D, --dump-header FILE   write the response headers to FILE (- = stdout), every\n"
    "                           transfer's and every redirect's in order\n"
    "  -f, --fail               exit 22 without output on a status >= 400\n"
    "      --fail-with-body     exit 22 on a status >= 400, after writing the body\n"
    "      --max-filesize SIZE  fail (exit 63) on a body above SIZE bytes (K, M, G suffixes)\n"
    "  -w, --write-out FORMAT   print FORMAT after each transfer: %{http_code} %{http_version}\n"
    "                           %{time_namelookup} %{time_connect} %{time_appconnect}\n"
    "                           %{time_pretransfer} %{time_starttransfer} %{time_redirect}\n"
    "                           %{time_total} %{size_download} %{size_upload} %{size_header}\n"
    "                           %{size_request} %{speed_download} %{url_effective} %{url}\n"
    "                           %{num_redirects} %{redirect_url} %{remote_ip} %{remote_port}\n"
    "                           %{content_type} %{method} %{scheme} %{num_connects}\n"
    "                           %{num_headers} %{exitcode} %{errormsg} %{filename_effective};\n"
    "                           %{stderr} and %{stdout} switch the stream; \\n \\r \\t\n"
    "                           escapes, %% for %\n"
    "  -s, --silent             no progress meter, no error messages\n"
    "  -S, --show-error         error messages even with -s\n"
    "  -v, --verbose            the request (> ) and response (< ) headers and connection\n"
    "                           notes (* ) on stderr, the TLS handshake's messages too\n"
    "      --trace FILE         write what is sent and received to FILE (- = stdout) as\n"
    "                           curl's hex and text dump, with the -v notes as \"== Info:\"\n"
    "                           TLS messages as \"SSL data\", HTTP/2 frames as notes\n"
    "      --trace-ascii FILE   the same as text only\n"
    "      --trace-time         prefix -v and --trace lines with the time of day\n"
    "  -#, --progress-bar       a progress bar instead of the meter\n"
    "      --no-progress-meter  no progress meter\n"
    "WebSocket (ws://, wss://): stdin lines go as text messages, each message received is\n"
    "written to stdout with a newline; the end of stdin sends Close 1000 and waits for the\n"
    "server's (-v: the close code). -H, -u, --oauth2-bearer, -k, --cacert, -x, --compressed\n"
    "(permessage-deflate) apply. Exit: 0 after the server's Close, 22 upgrade refused, 56 no\n"
    "Close or a protocol error\n"
    "      --binary             stdin in chunks (up to 64 KiB) as binary messages\n"
    "      --ws-ping SECS       send a ping every SECS seconds\n"
    "      --max-messages N     close after N messages received\n"
    "  -h, --help               this help\n"
    "  -V, --version            the version\n"
    "\n"
    "The progress meter is shown on stderr when it is a terminal and the body goes to a file\n"
    "or a pipe. Several URLs in one command reuse connections (-v says \"Re-using\").\n"
    "\n"
    "Exit codes are curl's: 1 unsupported protocol (or HTTP version), 2 usage, 3 malformed\n"
    "URL, 6 host not found, 7 connection failed, 8 malformed reply, 18 body cut short, 22\n"
    "HTTP error with -f, 23 write error, 26 read error, 28 timeout, 33 -C without range\n"
    "support, 35 TLS or QUIC handshake, 47 too many redirects, 52 empty reply, 55 send\n"
    "error, 56 receive error, 58 client certificate, 60 server certificate not trusted,\n"
    "59 --ciphers or --curves list refused, 61 bad content encoding, 63 body too large, 65\n"
    "cannot resend the body, 77 CA file, 90 --pinnedpubkey mismatch, 16\n"
    "HTTP/2 connection error, 92 HTTP/2 stream reset, 95 HTTP/3 error (a stream reset, a\n"
    "connection error).\n"
    "\n"
    "Examples:\n"
    "  vega-curl https://example.com/\n"
    "  vega-curl -sSfL -o page.html http://example.com/old\n"
    "  vega-curl -d name=vega -d lang=c http://127.0.0.1:8080/form\n"
    "  vega-curl -T big.iso http://127.0.0.1:8080/upload/\n"
    "  vega-curl -s -o /dev/null -w '%{http_code} %{time_total}\\n' http://127.0.0.1:8080/\n"
    "  vega-curl --resolve example.com:443:127.0.0.1 --cacert ca.pem https://example.com/\n"
    "  vega-curl --http3 -o big.iso https://example.com/big.iso\n"
    "  vega-curl --http3-only -x socks5h://127.0.0.1:1080 https://example.com/\n"
    "  vega-curl --alt-svc altsvc.txt --tls-session-file sess.txt https://example.com/\n";

enum {
    OPT_DATA_BINARY = 256,
    OPT_DATA_RAW,
    OPT_MAX_REDIRS,
    OPT_CACERT,
    OPT_CERT,
    OPT_KEY,
    OPT_RESOLVE,
    OPT_CONNECT_TIMEOUT,
    OPT_COMPRESSED,
    OPT_HTTP10,
    OPT_HTTP11,
    OPT_HTTP2,
    OPT_HTTP2_PRIOR,
    OPT_HTTP3,
    OPT_HTTP3_ONLY,
    OPT_FAIL_WITH_BODY,
    OPT_REMOTE_NAME_ALL,
    OPT_MAX_FILESIZE,
    OPT_NO_PROGRESS,
    OPT_URL,
    OPT_DATA_URLENCODE,
    OPT_LOCATION_TRUSTED,
    OPT_ALT_SVC,
    OPT_QUIC_VERSION,
    OPT_QUIC_KEY_UPDATE,
    OPT_QUIC_MIGRATE,
    OPT_SESSION_FILE,
    OPT_TLS13_CIPHERS,
    OPT_EARLYDATA,
    OPT_NO_EARLYDATA,
    OPT_PARALLEL_MAX,
    OPT_SOCKS5,
    OPT_SOCKS5_HOSTNAME,
    OPT_SOCKS4,
    OPT_SOCKS4A,
    OPT_NOPROXY,
    OPT_PROXY_INSECURE,
    OPT_PROXY_CACERT,
    OPT_WS_BINARY,
    OPT_WS_PING,
    OPT_WS_MAX_MESSAGES,
    OPT_OAUTH2_BEARER,
    OPT_JSON,
    OPT_CREATE_DIRS,
    OPT_NO_CREATE_DIRS,
    OPT_OUTPUT_DIR,
    OPT_NO_REMOTE_TIME,
    OPT_RETRY,
    OPT_RETRY_DELAY,
    OPT_RETRY_MAX_TIME,
    OPT_RETRY_ALL,
    OPT_NO_RETRY_ALL,
    OPT_RETRY_CONNREFUSED,
    OPT_NO_RETRY_CONNREFUSED,
    OPT_KEEPALIVE,
    OPT_NO_KEEPALIVE,
    OPT_KEEPALIVE_TIME,
    OPT_TCP_NODELAY,
    OPT_NO_TCP_NODELAY,
    OPT_FAIL_EARLY,
    OPT_NO_FAIL_EARLY,
    OPT_LIMIT_RATE,
    OPT_NO_JUNK_SESSION,
    OPT_NO_REMOTE_HEADER_NAME,
    OPT_FORM_STRING,
    OPT_NO_NETRC,
    OPT_NETRC_FILE,
    OPT_NETRC_OPTIONAL,
    OPT_NO_NETRC_OPTIONAL,
    OPT_UNIX_SOCKET,
    OPT_ABSTRACT_UNIX_SOCKET,
    OPT_TRACE,
    OPT_TRACE_ASCII,
    OPT_TRACE_TIME,
    OPT_ETAG_SAVE,
    OPT_ETAG_COMPARE,
    OPT_INTERFACE,
    OPT_LOCAL_PORT,
};

static const struct option long_opts[] = {
    {"request", required_argument, NULL, 'X'},
    {"header", required_argument, NULL, 'H'},
    {"data", required_argument, NULL, 'd'},
    {"data-ascii", required_argument, NULL, 'd'},
    {"data-binary", required_argument, NULL, OPT_DATA_BINARY},
    {"data-raw", required_argument, NULL, OPT_DATA_RAW},
    {"data-urlencode", required_argument, NULL, OPT_DATA_URLENCODE},
    {"get", no_argument, NULL, 'G'},
    {"upload-file", required_argument, NULL, 'T'},
    {"output", required_argument, NULL, 'o'},
    {"remote-name", no_argument, NULL, 'O'},
    {"remote-name-all", no_argument, NULL, OPT_REMOTE_NAME_ALL},
    {"location", no_argument, NULL, 'L'},
    {"location-trusted", no_argument, NULL, OPT_LOCATION_TRUSTED},
    {"max-redirs", required_argument, NULL, OPT_MAX_REDIRS},
    {"include", no_argument, NULL, 'i'},
    {"dump-header", required_argument, NULL, 'D'},
    {"head", no_argument, NULL, 'I'},
    {"silent", no_argument, NULL, 's'},
    {"show-error", no_argument, NULL, 'S'},
    {"verbose", no_argument, NULL, 'v'},
    {"fail", no_argument, NULL, 'f'},
    {"fail-with-body", no_argument, NULL, OPT_FAIL_WITH_BODY},
    {"insecure", no_argument, NULL, 'k'},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"resolve", required_argument, NULL, OPT_RESOLVE},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"max-time", required_argument, NULL, 'm'},
    {"max-filesize", required_argument, NULL, OPT_MAX_FILESIZE},
    {"compressed", no_argument, NULL, OPT_COMPRESSED},
    {"write-out", required_argument, NULL, 'w'},
    {"http1.0", no_argument, NULL, OPT_HTTP10},
    {"http1.1", no_argument, NULL, OPT_HTTP11},
    {"http2", no_argument, NULL, OPT_HTTP2},
    {"http2-prior-knowledge", no_argument, NULL, OPT_HTTP2_PRIOR},
    {"http3", no_argument, NULL, OPT_HTTP3},
    {"http3-only", no_argument, NULL, OPT_HTTP3_ONLY},
    {"alt-svc", required_argument, NULL, OPT_ALT_SVC},
    {"quic-version", required_argument, NULL, OPT_QUIC_VERSION},
    {"quic-key-update", no_argument, NULL, OPT_QUIC_KEY_UPDATE},
    {"quic-migrate", optional_argument, NULL, OPT_QUIC_MIGRATE},
    {"tls13-ciphers", required_argument, NULL, OPT_TLS13_CIPHERS},
    {"tls-earlydata", no_argument, NULL, OPT_EARLYDATA},
    {"no-tls-earlydata", no_argument, NULL, OPT_NO_EARLYDATA},
    {"tls-session-file", required_argument, NULL, OPT_SESSION_FILE},
    {"parallel", no_argument, NULL, 'Z'},
    {"parallel-max", required_argument, NULL, OPT_PARALLEL_MAX},
    {"progress-bar", no_argument, NULL, '#'},
    {"no-progress-meter", no_argument, NULL, OPT_NO_PROGRESS},
    {"user-agent", required_argument, NULL, 'A'},
    {"referer", required_argument, NULL, 'e'},
    {"url", required_argument, NULL, OPT_URL},
    {"proxy", required_argument, NULL, 'x'},
    {"proxy-user", required_argument, NULL, 'U'},
    {"proxytunnel", no_argument, NULL, 'p'},
    {"socks5", required_argument, NULL, OPT_SOCKS5},
    {"socks5-hostname", required_argument, NULL, OPT_SOCKS5_HOSTNAME},
    {"socks4", required_argument, NULL, OPT_SOCKS4},
    {"socks4a", required_argument, NULL, OPT_SOCKS4A},
    {"noproxy", required_argument, NULL, OPT_NOPROXY},
    {"proxy-insecure", no_argument, NULL, OPT_PROXY_INSECURE},
    {"proxy-cacert", required_argument, NULL, OPT_PROXY_CACERT},
    {"binary", no_argument, NULL, OPT_WS_BINARY},
    {"ws-ping", required_argument, NULL, OPT_WS_PING},
    {"max-messages", required_argument, NULL, OPT_WS_MAX_MESSAGES},
    {"range", required_argument, NULL, 'r'},
    {"user", required_argument, NULL, 'u'},
    {"oauth2-bearer", required_argument, NULL, OPT_OAUTH2_BEARER},
    {"json", required_argument, NULL, OPT_JSON},
    {"form", required_argument, NULL, 'F'},
    {"form-string", required_argument, NULL, OPT_FORM_STRING},
    {"netrc", no_argument, NULL, 'n'},
    {"config", required_argument, NULL, 'K'},
    {"unix-socket", required_argument, NULL, OPT_UNIX_SOCKET},
    {"abstract-unix-socket", required_argument, NULL, OPT_ABSTRACT_UNIX_SOCKET},
    {"disable", no_argument, NULL, 'q'},
    {"no-netrc", no_argument, NULL, OPT_NO_NETRC},
    {"netrc-file", required_argument, NULL, OPT_NETRC_FILE},
    {"netrc-optional", no_argument, NULL, OPT_NETRC_OPTIONAL},
    {"no-netrc-optional", no_argument, NULL, OPT_NO_NETRC_OPTIONAL},
    {"ipv4", no_argument, NULL, '4'},
    {"ipv6", no_argument, NULL, '6'},
    {"create-dirs", no_argument, NULL, OPT_CREATE_DIRS},
    {"no-create-dirs", no_argument, NULL, OPT_NO_CREATE_DIRS},
    {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
    {"continue-at", required_argument, NULL, 'C'},
    {"remote-time", no_argument, NULL, 'R'},
    {"no-remote-time", no_argument, NULL, OPT_NO_REMOTE_TIME},
    {"time-cond", required_argument, NULL, 'z'},
    {"retry", required_argument, NULL, OPT_RETRY},
    {"retry-delay", required_argument, NULL, OPT_RETRY_DELAY},
    {"retry-max-time", required_argument, NULL, OPT_RETRY_MAX_TIME},
    {"retry-all-errors", no_argument, NULL, OPT_RETRY_ALL},
    {"no-retry-all-errors", no_argument, NULL, OPT_NO_RETRY_ALL},
    {"retry-connrefused", no_argument, NULL, OPT_RETRY_CONNREFUSED},
    {"no-retry-connrefused", no_argument, NULL, OPT_NO_RETRY_CONNREFUSED},
    {"keepalive", no_argument, NULL, OPT_KEEPALIVE},
    {"no-keepalive", no_argument, NULL, OPT_NO_KEEPALIVE},
    {"keepalive-time", required_argument, NULL, OPT_KEEPALIVE_TIME},
    {"tcp-nodelay", no_argument, NULL, OPT_TCP_NODELAY},
    {"no-tcp-nodelay", no_argument, NULL, OPT_NO_TCP_NODELAY},
    {"fail-early", no_argument, NULL, OPT_FAIL_EARLY},
    {"no-fail-early", no_argument, NULL, OPT_NO_FAIL_EARLY},
    {"limit-rate", required_argument, NULL, OPT_LIMIT_RATE},
    {"cookie", required_argument, NULL, 'b'},
    {"cookie-jar", required_argument, NULL, 'c'},
    {"junk-session-cookies", no_argument, NULL, 'j'},
    {"no-junk-session-cookies", no_argument, NULL, OPT_NO_JUNK_SESSION},
    {"remote-header-name", no_argument, NULL, 'J'},
    {"no-remote-header-name", no_argument, NULL, OPT_NO_REMOTE_HEADER_NAME},
    {"tlsv1", no_argument, NULL, '1'},
    {"tlsv1.0", no_argument, NULL, CURL_OPT_TLSV10},
    {"tlsv1.1", no_argument, NULL, CURL_OPT_TLSV11},
    {"tlsv1.2", no_argument, NULL, CURL_OPT_TLSV12},
    {"tlsv1.3", no_argument, NULL, CURL_OPT_TLSV13},
    {"sslv2", no_argument, NULL, '2'},
    {"sslv3", no_argument, NULL, '3'},
    {"tls-max", required_argument, NULL, CURL_OPT_TLS_MAX},
    {"ciphers", required_argument, NULL, CURL_OPT_CIPHERS},
    {"curves", required_argument, NULL, CURL_OPT_CURVES},
    {"pinnedpubkey", required_argument, NULL, CURL_OPT_PINNEDPUBKEY},
    {"dns-servers", required_argument, NULL, CURL_OPT_DNS_SERVERS},
    {"happy-eyeballs-timeout-ms", required_argument, NULL, CURL_OPT_HAPPY_EYEBALLS},
    {"basic", no_argument, NULL, CURL_OPT_BASIC},
    {"digest", no_argument, NULL, CURL_OPT_DIGEST},
    {"anyauth", no_argument, NULL, CURL_OPT_ANYAUTH},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-ascii", required_argument, NULL, OPT_TRACE_ASCII},
    {"trace-time", no_argument, NULL, OPT_TRACE_TIME},
    {"etag-save", required_argument, NULL, OPT_ETAG_SAVE},
    {"etag-compare", required_argument, NULL, OPT_ETAG_COMPARE},
    {"interface", required_argument, NULL, OPT_INTERFACE},
    {"local-port", required_argument, NULL, OPT_LOCAL_PORT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

int curl_fail(const struct curl_opts *o, int code, const char *fmt, ...)
{
    if (o->silent && !o->show_error)
        return code;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cli_err(NULL, "(%d) %s", code, msg);
    return code;
}

/* A usage problem that curl reports with its own code (not 2). */
#define fail_exit(o, code, ...) (curl_fail((o), (code), __VA_ARGS__), exit(code))

static void *grow(void *p, size_t n, size_t size)
{
    void *q = realloc(p, n * size);
    if (!q) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    return q;
}

static void add_url(struct curl_opts *o, const char *u)
{
    if (o->nurls >= CURL_MAX_URLS)
        cli_usage_error("too many URLs (at most %d)", CURL_MAX_URLS);
    o->urls = grow(o->urls, o->nurls + 1, sizeof(*o->urls));
    o->urls[o->nurls++] = u;
    o->ws_any |= curl_ws_url(u);
}

static void add_out(struct curl_opts *o, const char *file, bool remote)
{
    if (o->nouts >= CURL_MAX_URLS)
        cli_usage_error("too many -o/-O (at most %d)", CURL_MAX_URLS);
    o->outs = grow(o->outs, o->nouts + 1, sizeof(*o->outs));
    o->outs[o->nouts++] = (struct curl_outspec){.file = file, .remote_name = remote};
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* -H "Name: value", "Name:" (remove a field the tool adds), "Name;" (empty value). The spans
 * point into argv, which lives as long as the process. */
static void add_header(struct curl_opts *o, const char *h)
{
    const char *colon = strchr(h, ':'), *semi = strchr(h, ';');
    bool empty_value = false;
    if (!colon || (semi && semi < colon)) {
        if (semi && semi[1] == '\0') {
            empty_value = true;
            colon = semi;
        } else {
            cli_usage_error("-H: expected 'Name: value', got '%s'", h);
        }
    }
    size_t nlen = (size_t)(colon - h);
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vlen = strlen(v);
    while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t' || v[vlen - 1] == '\r' ||
                    v[vlen - 1] == '\n'))
        vlen--;
    if (!vega_http_token_is_valid(h, nlen))
        cli_usage_error("-H: '%.*s' is not a valid field name", (int)nlen, h);
    if (!vega_http_field_value_is_valid(v, vlen))
        cli_usage_error("-H: the value of %.*s has characters a field may not hold", (int)nlen, h);
    if (vlen == 0 && !empty_value) {
        /* curl's way to drop a field it would send. */
        if (name_is(h, nlen, "User-Agent"))
            o->user_agent = "";
        else if (name_is(h, nlen, "Content-Type"))
            o->no_content_type = true;
        else if (name_is(h, nlen, "Referer"))
            o->no_referer = true;
        else if (o->nheaders < CURL_MAX_HEADERS)
            /* Host, Accept, ...: the client leaves out its own field of that name. */
            o->headers[o->nheaders++] = (vega_http_field){{h, nlen}, {NULL, 0}};
        else
            cli_usage_error("too many -H (at most %d)", CURL_MAX_HEADERS);
        return;
    }
    if (o->nheaders >= CURL_MAX_HEADERS)
        cli_usage_error("too many -H (at most %d)", CURL_MAX_HEADERS);
    o->headers[o->nheaders++] = (vega_http_field){{h, nlen}, {v, vlen}};
}

/* -H @FILE (curl 7.55+): one field a line (LF or CRLF), empty lines skipped; FILE is at most
 * CURL_MAX_HEADER_FILE bytes (26 past it, or unreadable: curl ignores a file it cannot read). The
 * buffer is kept for the process's life, as argv is. */
static void add_header_file(struct curl_opts *o, const char *path)
{
    size_t len;
    char *buf = curl_read_file(o, path, &len);
    if (len > CURL_MAX_HEADER_FILE) {
        curl_fail(o, CE_READ_ERROR, "-H @%s: larger than %d bytes", path, CURL_MAX_HEADER_FILE);
        exit(CE_READ_ERROR);
    }
    if (memchr(buf, '\0', len))
        cli_usage_error("-H @%s: the file holds a NUL byte", path);
    char *nb = realloc(buf, len + 1); /* room for the last line's end */
    if (!nb) {
        cli_err(NULL, "out of memory");
        exit(CE_OUT_OF_MEMORY);
    }
    buf = nb;
    for (char *line = buf, *end; line < buf + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(buf + len - line));
        if (!end)
            end = buf + len;
        *end = '\0';
        if (end > line && end[-1] == '\r')
            end[-1] = '\0';
        if (*line)
            add_header(o, line);
    }
}

/* --resolve HOST:PORT:ADDR[,ADDR...]; the first address is used. */
static void add_resolve(struct curl_opts *o, const char *arg)
{
    const char *s = arg;
    if (*s == '+')
        s++;
    else if (*s == '-')
        cli_usage_error("--resolve: removing entries ('-%s') is not supported", s + 1);
    const char *c1 = strchr(s, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2 || c1 == s || (size_t)(c1 - s) >= sizeof(o->resolve[0].host))
        cli_usage_error("--resolve: expected HOST:PORT:ADDRESS, got '%s'", arg);
    if (o->nresolve >= CURL_MAX_RESOLVE)
        cli_usage_error("too many --resolve (at most %d)", CURL_MAX_RESOLVE);
    struct curl_resolve *r = &o->resolve[o->nresolve];
    memcpy(r->host, s, (size_t)(c1 - s));
    r->host[c1 - s] = '\0';
    char port[8], addr[128];
    size_t plen = (size_t)(c2 - c1 - 1);
    if (plen == 0 || plen >= sizeof(port))
        cli_usage_error("--resolve: bad port in '%s'", arg);
    memcpy(port, c1 + 1, plen);
    port[plen] = '\0';
    uint64_t p;
    if (cli_parse_uint(port, 1, 65535, &p) < 0)
        cli_usage_error("--resolve: bad port '%s'", port);
    const char *a = c2 + 1;
    size_t alen = strcspn(a, ",");
    if (alen == 0 || alen >= sizeof(addr))
        cli_usage_error("--resolve: no address in '%s'", arg);
    memcpy(addr, a, alen);
    addr[alen] = '\0';
    if (vega_addr_from_ip(&r->addr, addr, (uint16_t)p) < 0)
        cli_usage_error("--resolve: '%s' is not an IP address", addr);
    r->port = (uint16_t)p;
    o->nresolve++;
}

static uint64_t seconds_arg(const char *opt, const char *v)
{
    uint64_t ns;
    if (cli_parse_duration(v, VEGA_NS_PER_S, &ns) < 0)
        cli_usage_error("%s: expected seconds (decimals allowed), got '%s'", opt, v);
    return ns;
}

/* A whole number of seconds or a count, curl's way for --retry and its companions. */
static uint64_t count_arg(const char *opt, const char *v, uint64_t min, uint64_t max)
{
    uint64_t n;
    if (cli_parse_uint(v, min, max, &n) < 0)
        cli_usage_error("%s: expected a whole number from %llu to %llu, got '%s'", opt,
                        (unsigned long long)min, (unsigned long long)max, v);
    return n;
}

/* -z DATE|FILE: an existing file's mtime, else an HTTP date; a leading '-' asks for
 * If-Unmodified-Since, '=' sends Last-Modified (as curl does), '+' is the default. curl warns about
 * a date it cannot read and sends no condition. */
static void set_time_cond(struct curl_opts *o, const char *arg)
{
    o->time_cond = NULL;
    o->time_cond_unmodified = arg[0] == '-';
    o->time_cond_lastmod = arg[0] == '=';
    const char *s = arg + (arg[0] == '-' || arg[0] == '+' || arg[0] == '=');
    struct stat st;
    if (stat(s, &st) == 0) {
        o->time_cond_at = (int64_t)st.st_mtime;
        o->time_cond = s;
        return;
    }
    int64_t t;
    if (vega_http_date_parse(s, strlen(s), (int64_t)time(NULL), &t) < 0) {
        cli_err(NULL, "Warning: Illegal date format for -z, --time-cond (and not a file name). "
                      "Disabling time condition. See curl_getdate(3) for valid date syntax.");
        return;
    }
    o->time_cond_at = t;
    o->time_cond = s;
}

static void print_version(void)
{
    printf("vega-curl %s (libvega %s)\n"
           "Protocols: http https\n"
           "Features: alt-svc HTTP/1.1 HTTP3 TLS brotli gzip deflate zstd\n",
           VEGA_VERSION_STRING, vega_version());
}

/* -r RANGE: "bytes=" + RANGE, as curl sends it. A lone number gets the dash curl appends for
 * it; other odd characters are warned about and sent, as curl does (the server decides), but
 * nothing that could end the field line. */
static void set_range(struct curl_opts *o, const char *r)
{
    static char fixed[32];
    if (!vega_http_field_value_is_valid(r, strlen(r)) || !*r || strlen(r) > 400)
        cli_usage_error("-r: '%s' is not a range (expected START-END, START-, -SUFFIX, ...)", r);
    if (r[0] >= '0' && r[0] <= '9' && !strchr(r, '-')) {
        uint64_t n;
        if (cli_parse_uint(r, 0, INT64_MAX, &n) < 0)
            cli_usage_error("-r: '%s' is not a range", r);
        cli_err(NULL, "Warning: A specified range MUST include at least one dash (-). Appending "
                      "one for you");
        snprintf(fixed, sizeof fixed, "%llu-", (unsigned long long)n);
        o->range = fixed;
        return;
    }
    if (r[strspn(r, "0123456789-,")])
        cli_err(NULL, "Warning: Invalid character is found in given range. A specified range "
                      "MUST have only digits in 'start'-'stop'. The server's response to this "
                      "request is uncertain.");
    o->range = r;
}

/* -u USER without ":PASSWORD": curl asks for the password on the terminal (/dev/tty, echo
 * off) and, where the process has none, reads the line from stdin; the end of input gives an
 * empty password. */
static void ask_password(const char *user, char *out, size_t cap)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    bool tty = fd >= 0;
    if (!tty)
        fd = STDIN_FILENO;
    fprintf(stderr, "Enter host password for user '%s':", user);
    struct termios old, quiet;
    bool echo_off = isatty(fd) && tcgetattr(fd, &old) == 0;
    if (echo_off) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(fd, TCSANOW, &quiet);
    }
    size_t n = 0;
    for (;;) {
        char ch;
        ssize_t r = read(fd, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || ch == '\n' || ch == '\r')
            break;
        if (n + 1 < cap)
            out[n++] = ch;
    }
    out[n] = '\0';
    if (echo_off)
        tcsetattr(fd, TCSANOW, &old);
    fputc('\n', stderr);
    if (tty)
        close(fd);
}

/* The Authorization value of -u or --oauth2-bearer (the bearer wins, as curl's auth type then
 * is Bearer alone). */
static void set_auth(struct curl_opts *o, const char *user_arg, const char *bearer)
{
    if (!user_arg && !bearer)
        return;
    char *v;
    if (bearer) {
        if (!vega_http_field_value_is_valid(bearer, strlen(bearer)))
            cli_usage_error("--oauth2-bearer: the token has characters a field may not hold");
        size_t n = strlen(bearer) + sizeof("Bearer ");
        v = grow(NULL, n, 1);
        snprintf(v, n, "Bearer %s", bearer);
    } else {
        char user[1024], pass[1024];
        const char *colon = strchr(user_arg, ':');
        size_t ulen = colon ? (size_t)(colon - user_arg) : strlen(user_arg);
        if (ulen >= sizeof user || (colon && strlen(colon + 1) >= sizeof pass))
            cli_usage_error("-u: the user name or password is longer than %zu bytes",
                            sizeof user - 1);
        memcpy(user, user_arg, ulen);
        user[ulen] = '\0';
        if (colon)
            snprintf(pass, sizeof pass, "%s", colon + 1);
        else
            ask_password(user, pass, sizeof pass);
        if (o->authmode != CURL_AUTH_BASIC) {
            /* --digest/--anyauth: nothing goes before the server's challenge (auth.c) */
            o->auth_user = grow(NULL, ulen + 1, 1);
            memcpy(o->auth_user, user, ulen + 1);
            size_t plen = strlen(pass);
            o->auth_pass = grow(NULL, plen + 1, 1);
            memcpy(o->auth_pass, pass, plen + 1);
            memset(pass, 0, sizeof pass);
            memset((char *)user_arg, ' ', strlen(user_arg));
            return;
        }
        size_t cap = 16 + (ulen + 1 + strlen(pass) + 2) / 3 * 4;
        v = grow(NULL, cap, 1);
        if (vega_proxy_basic_auth(v, cap, user, pass) < 0)
            cli_usage_error("-u: cannot encode the credentials");
        memset(pass, 0, sizeof pass);
    }
    o->auth = v;
    /* as curl: the secret leaves the process listing (/proc/PID/cmdline) once copied */
    memset((char *)(bearer ? bearer : user_arg), ' ', strlen(bearer ? bearer : user_arg));
}

/* -b: curl's rule, a string with '=' is cookies to send as they are (';' between several, as
 * curl 7.88 joins them);
 * anything else (or "@FILE") is a cookie file, which also turns the cookie engine on. */
static void add_cookie(struct curl_opts *o, const char *arg)
{
    if (arg[0] != '@' && strchr(arg, '=')) {
        size_t have = o->cookie_str ? strlen(o->cookie_str) : 0, add = strlen(arg);
        if (have + 1 + add > 8190)
            cli_usage_error("-b: the cookie strings are longer than 8190 bytes in all");
        for (const char *p = arg; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                cli_usage_error("-b: the cookie string has characters a field may not hold");
        char *s = realloc(o->cookie_str, have + 1 + add + 1);
        if (!s)
            cli_usage_error("out of memory");
        snprintf(s + have, 1 + add + 1, "%s%s", have ? ";" : "", arg);
        o->cookie_str = s;
        return;
    }
    if (arg[0] == '@')
        arg++;
    const char **f = realloc(o->cookie_files, (o->ncookie_files + 1) * sizeof *f);
    if (!f)
        cli_usage_error("out of memory");
    f[o->ncookie_files++] = arg;
    o->cookie_files = f;
}

static const char short_opts[] =
    ":X:H:d:GT:o:OLiIsSvfkm:w:A:e:#ZD:hVx:U:pr:u:46C:Rz:b:c:jJF:nqK:123";

static void parse_args(struct curl_opts *o, int argc, char **argv)
{
    uint64_t v;
    int c;
    const char *user_arg = NULL, *bearer = NULL;
    bool netrc_req = false, netrc_opt = false;
    opterr = 0;
    while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
        switch (c) {
        case 'X':
            if (!vega_http_token_is_valid(optarg, strlen(optarg)))
                cli_usage_error("-X: '%s' is not a valid method", optarg);
            o->method = optarg;
            break;
        case 'H':
            if (optarg[0] == '@')
                add_header_file(o, optarg + 1);
            else
                add_header(o, optarg);
            break;
        case 'd':
            curl_data_add(o, optarg, true, true);
            break;
        case OPT_DATA_BINARY:
            curl_data_add(o, optarg, true, false);
            break;
        case OPT_DATA_RAW:
            curl_data_add(o, optarg, false, false);
            break;
        case OPT_DATA_URLENCODE:
            curl_data_add_urlencoded(o, optarg);
            break;
        case OPT_JSON:
            curl_data_add_json(o, optarg);
            break;
        case OPT_UNIX_SOCKET:
        case OPT_ABSTRACT_UNIX_SOCKET: {
            /* sun_path's 108 bytes: a path and its NUL, or the abstract name after its NUL */
            size_t max = 107;
            if (!*optarg || strlen(optarg) > max)
                cli_usage_error("--%s: expected 1 to %zu bytes, got %zu",
                                c == OPT_UNIX_SOCKET ? "unix-socket" : "abstract-unix-socket", max,
                                strlen(optarg));
            snprintf(o->unix_path, sizeof o->unix_path, "%s%s", c == OPT_UNIX_SOCKET ? "" : "@",
                     optarg);
            break;
        }
        case 'q': /* only as the first argument (config.c); ignored elsewhere, as curl */
            break;
        case 'n':
        case OPT_NO_NETRC:
            netrc_req = c == 'n';
            break;
        case OPT_NETRC_OPTIONAL:
        case OPT_NO_NETRC_OPTIONAL:
            netrc_opt = c == OPT_NETRC_OPTIONAL;
            break;
        case OPT_NETRC_FILE:
            o->netrc_file = optarg;
            break;
        case 'F':
        case OPT_FORM_STRING:
            curl_form_add(o, optarg, c == OPT_FORM_STRING);
            break;
        case 'r':
            set_range(o, optarg);
            break;
        case 'u':
            user_arg = optarg;
            break;
        case OPT_OAUTH2_BEARER:
            bearer = optarg;
            break;
        case '4':
            o->ip_family = AF_INET;
            break;
        case OPT_CREATE_DIRS:
        case OPT_NO_CREATE_DIRS:
            o->create_dirs = c == OPT_CREATE_DIRS;
            break;
        case OPT_OUTPUT_DIR:
            o->output_dir = optarg;
            break;
        case 'C':
            o->resume = true;
            o->resume_auto = strcmp(optarg, "-") == 0;
            if (!o->resume_auto && cli_parse_uint(optarg, 0, INT64_MAX, &o->resume_from) < 0)
                cli_usage_error("-C: expected an offset in bytes or '-', got '%s'", optarg);
            break;
        case 'R':
        case OPT_NO_REMOTE_TIME:
            o->remote_time = c == 'R';
            break;
        case 'z':
            set_time_cond(o, optarg);
            break;
        case OPT_RETRY:
            o->retry = (long)count_arg("--retry", optarg, 0, 1000000);
            break;
        case OPT_RETRY_DELAY:
            o->retry_delay_ns = count_arg("--retry-delay", optarg, 0, 86400 * 365) * VEGA_NS_PER_S;
            /* curl takes 0 as "not given": the doubling backoff from 1 s */
            o->retry_delay_set = o->retry_delay_ns != 0;
            break;
        case OPT_RETRY_MAX_TIME:
            o->retry_max_ns = count_arg("--retry-max-time", optarg, 0, 86400 * 365) * VEGA_NS_PER_S;
            break;
        case OPT_RETRY_ALL:
        case OPT_NO_RETRY_ALL:
            o->retry_all = c == OPT_RETRY_ALL;
            break;
        case OPT_RETRY_CONNREFUSED:
        case OPT_NO_RETRY_CONNREFUSED:
            o->retry_connrefused = c == OPT_RETRY_CONNREFUSED;
            break;
        case OPT_KEEPALIVE:
            o->keepalive_s = 60;
            break;
        case OPT_NO_KEEPALIVE:
            o->keepalive_s = 0;
            break;
        case OPT_KEEPALIVE_TIME:
            o->keepalive_s = (unsigned)count_arg("--keepalive-time", optarg, 1, 86400);
            break;
        case OPT_TCP_NODELAY:
        case OPT_NO_TCP_NODELAY:
            o->tcp_nagle = c == OPT_NO_TCP_NODELAY;
            break;
        case OPT_FAIL_EARLY:
        case OPT_NO_FAIL_EARLY:
            o->fail_early = c == OPT_FAIL_EARLY;
            break;
        case 'b':
            add_cookie(o, optarg);
            break;
        case 'c':
            o->cookie_jar = optarg;
            break;
        case 'j':
            o->junk_session = true;
            break;
        case OPT_NO_JUNK_SESSION:
            o->junk_session = false;
            break;
        case 'J':
            o->remote_header_name = true;
            break;
        case OPT_NO_REMOTE_HEADER_NAME:
            o->remote_header_name = false;
            break;
        case OPT_LIMIT_RATE:
            if (cli_parse_size(optarg, &v) < 0)
                cli_usage_error("--limit-rate: expected bytes per second (K, M, G), got '%s'",
                                optarg);
            o->limit_rate = v;
            break;
        case '6':
            o->ip_family = AF_INET6;
            break;
        case 'G':
            o->get = true;
            break;
        case 'T':
            if (o->nuploads >= CURL_MAX_URLS)
                cli_usage_error("too many -T");
            o->uploads = grow(o->uploads, o->nuploads + 1, sizeof(*o->uploads));
            o->uploads[o->nuploads++] = optarg;
            break;
        case 'o':
            add_out(o, optarg, false);
            break;
        case 'O':
            add_out(o, NULL, true);
            break;
        case OPT_REMOTE_NAME_ALL:
            o->remote_name_all = true;
            break;
        case 'L':
            o->location = true;
            break;
        case OPT_LOCATION_TRUSTED:
            o->location = o->location_trusted = true;
            break;
        case OPT_MAX_REDIRS:
            if (strcmp(optarg, "-1") == 0)
                o->max_redirs = -1;
            else if (cli_parse_uint(optarg, 0, 1000000, &v) == 0)
                o->max_redirs = (long)v;
            else
                cli_usage_error("--max-redirs: expected a number or -1, got '%s'", optarg);
            break;
        case 'i':
            o->include = true;
            break;
        case 'I':
            o->head = true;
            break;
        case 's':
            o->silent = true;
            break;
        case 'S':
            o->show_error = true;
            break;
        case 'v':
            if (o->trace_file && !o->silent) /* curl: the last of -v, --trace* wins */
                cli_err(NULL, "Warning: -v, --verbose overrides an earlier trace/verbose option");
            o->verbose = true;
            o->trace_file = NULL;
            break;
        case OPT_TRACE:
        case OPT_TRACE_ASCII: {
            bool ascii = c == OPT_TRACE_ASCII;
            if ((o->verbose || (o->trace_file && o->trace_ascii != ascii)) && !o->silent)
                cli_err(NULL, "Warning: %s overrides an earlier trace/verbose option",
                        ascii ? "--trace-ascii" : "--trace");
            o->verbose = false;
            o->trace_file = optarg;
            o->trace_ascii = ascii;
            break;
        }
        case OPT_TRACE_TIME:
            o->trace_time = true;
            break;
        case OPT_ETAG_SAVE:
            o->etag_save = optarg;
            break;
        case OPT_ETAG_COMPARE:
            o->etag_compare = optarg;
            break;
        case OPT_INTERFACE:
            o->interface = optarg;
            break;
        case OPT_LOCAL_PORT:
            curl_local_port_parse(o, optarg);
            break;
        case 'f':
            o->fail = true;
            break;
        case OPT_FAIL_WITH_BODY:
            o->fail = o->fail_with_body = true;
            break;
        case 'k':
            o->insecure = true;
            break;
        case 'x':
            o->proxy = optarg;
            if (!o->proxy_kind_from_flag)
                o->proxy_kind = VEGA_PROXY_NONE;
            break;
        case 'U':
            o->proxy_user = optarg;
            break;
        case 'p':
            o->proxytunnel = true;
            break;
        case OPT_SOCKS5:
        case OPT_SOCKS5_HOSTNAME:
        case OPT_SOCKS4:
        case OPT_SOCKS4A:
            /* curl: --socks5 HOST[:PORT] is -x socks5://HOST[:PORT] */
            o->proxy = optarg;
            o->proxy_kind = c == OPT_SOCKS5            ? VEGA_PROXY_SOCKS5
                            : c == OPT_SOCKS5_HOSTNAME ? VEGA_PROXY_SOCKS5H
                            : c == OPT_SOCKS4          ? VEGA_PROXY_SOCKS4
                                                       : VEGA_PROXY_SOCKS4A;
            o->proxy_kind_from_flag = true;
            break;
        case OPT_NOPROXY:
            o->noproxy = optarg;
            break;
        case OPT_PROXY_INSECURE:
            o->proxy_insecure = true;
            break;
        case OPT_PROXY_CACERT:
            o->proxy_cacert = optarg;
            break;
        case OPT_CACERT:
            o->cacert = optarg;
            break;
        case OPT_CERT:
            o->cert = optarg;
            break;
        case OPT_KEY:
            o->key = optarg;
            break;
        case OPT_RESOLVE:
            add_resolve(o, optarg);
            break;
        case OPT_CONNECT_TIMEOUT:
            o->connect_timeout_ns = seconds_arg("--connect-timeout", optarg);
            break;
        case 'm':
            o->max_time_ns = seconds_arg("-m", optarg);
            break;
        case OPT_MAX_FILESIZE:
            if (cli_parse_size(optarg, &v) < 0)
                cli_usage_error("--max-filesize: expected a size (K, M, G), got '%s'", optarg);
            o->max_filesize = v;
            break;
        case OPT_COMPRESSED:
            o->compressed = true;
            break;
        case 'w':
            o->write_out = optarg;
            break;
        case OPT_HTTP10:
            o->http_version = 10;
            break;
        case OPT_HTTP11:
            o->http_version = 11;
            break;
        case OPT_ALT_SVC:
            o->alt_svc = optarg;
            break;
        case OPT_SESSION_FILE:
            if (!*optarg)
                cli_usage_error("--tls-session-file: expected a file name");
            o->session_file = optarg;
            break;
        case OPT_TLS13_CIPHERS:
            o->tls13_ciphers = optarg;
            break;
        case OPT_EARLYDATA:
            o->earlydata = 1;
            break;
        case OPT_NO_EARLYDATA:
            o->earlydata = 0;
            break;
        case OPT_QUIC_VERSION:
            if (!strcmp(optarg, "1"))
                o->quic_version = VEGA_QUIC_V1;
            else if (!strcmp(optarg, "2"))
                o->quic_version = VEGA_QUIC_V2;
            else
                cli_usage_error("--quic-version: expected 1 or 2, got '%s'", optarg);
            break;
        case OPT_QUIC_KEY_UPDATE:
            o->quic_key_update = true;
            break;
        case OPT_QUIC_MIGRATE: {
            o->quic_migrate = true;
            o->quic_migrate_after_ms = 0;
            if (optarg) {
                char *end;
                errno = 0;
                unsigned long long ms = strtoull(optarg, &end, 10);
                /* an hour at most: a delay beyond any transfer's is a typo */
                if (!*optarg || *end || errno || optarg[0] == '-' || ms > 3600000)
                    cli_usage_error("--quic-migrate: expected milliseconds (0..3600000), got "
                                    "'%s'",
                                    optarg);
                o->quic_migrate_after_ms = ms;
            }
            break;
        }
        case OPT_HTTP2:
            o->http_version = 20;
            break;
        case OPT_HTTP2_PRIOR:
            o->http_version = 21;
            break;
        case OPT_HTTP3:
            o->http_version = 30;
            o->h3_fallback = true;
            break;
        case OPT_HTTP3_ONLY:
            o->http_version = 30;
            o->h3_fallback = false;
            break;
        case '#':
            o->progress_bar = true;
            break;
        case 'D':
            o->dump_header = optarg;
            break;
        case 'Z':
            o->parallel = true;
            break;
        case OPT_WS_BINARY:
            o->ws_binary = true;
            break;
        case OPT_WS_PING:
        case OPT_WS_MAX_MESSAGES: {
            char *end;
            unsigned long long wv = strtoull(optarg, &end, 10);
            /* --ws-ping: 1 s to a day; --max-messages: 1 to 2^32 */
            unsigned long long max = c == OPT_WS_PING ? 86400 : 4294967296ull;
            if (*optarg < '0' || *optarg > '9' || *end || wv < 1 || wv > max)
                cli_usage_error("--%s: expected 1 to %llu, got '%s'",
                                c == OPT_WS_PING ? "ws-ping" : "max-messages", max, optarg);
            if (c == OPT_WS_PING)
                o->ws_ping_ms = wv * 1000;
            else
                o->ws_max_messages = wv;
            break;
        }
        case OPT_PARALLEL_MAX: {
            char *end;
            unsigned long pm = strtoul(optarg, &end, 10);
            /* curl's range: 1..300 */
            if (*optarg < '0' || *optarg > '9' || *end || pm < 1 || pm > 300)
                cli_usage_error("--parallel-max: expected 1 to 300, got '%s'", optarg);
            o->parallel_max = (unsigned)pm;
            break;
        }
        case OPT_NO_PROGRESS:
            o->no_progress = true;
            break;
        case 'A':
            o->user_agent = optarg;
            break;
        case 'e':
            o->referer = optarg;
            break;
        case OPT_URL:
            add_url(o, optarg);
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(CE_OK);
        case 'V':
            print_version();
            exit(CE_OK);
        case ':':
            cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (curl_tls_opt(c)) {
                curl_tls_option(o, c, optarg);
                break;
            }
            if (optopt)
                cli_usage_error("unknown option '-%c'", optopt);
            cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    for (int i = optind; i < argc; i++)
        add_url(o, argv[i]);
    if (o->nurls == 0)
        cli_usage_error("no URL specified");
    curl_form_finish(o);
    /* curl's modes: --netrc-optional wins; -n or --netrc-file alone make it required */
    o->netrc = netrc_opt                    ? CURL_NETRC_OPTIONAL
               : netrc_req || o->netrc_file ? CURL_NETRC_REQUIRED
                                            : 0;
    curl_netrc_load(o);
    if (o->head && ((o->has_data && !o->get) || o->nuploads))
        cli_usage_error("-I cannot be combined with -d or -T (one request method only)");
    if (o->has_data && o->nuploads)
        cli_usage_error("-d and -T cannot be combined (one request body only)");
    /* curl's two refusals for -J (exit 2); -J without -O is ignored, as curl ignores it */
    if (o->remote_header_name && o->include)
        cli_usage_error("showing headers and --remote-header-name cannot be combined");
    if (o->remote_header_name && o->resume)
        cli_usage_error("--continue-at and --remote-header-name cannot be combined");
    if (o->key && !o->cert)
        cli_usage_error("--key needs --cert");
    set_auth(o, user_arg, bearer);
    if (o->nouts > o->nurls && !o->silent)
        cli_err(NULL, "warning: more -o/-O than URLs; the extra ones are ignored");
    curl_files_load(o);
}

/* The TLS configuration: system CAs unless --cacert, -k, a client certificate, ALPN. */
static int make_tls_alpn(const struct curl_opts *o, bool h1_only, vega_tls_config **out);

static int make_tls(const struct curl_opts *o, vega_tls_config **out)
{
    return make_tls_alpn(o, false, out);
}

static int make_tls_alpn(const struct curl_opts *o, bool h1_only, vega_tls_config **out)
{
    vega_tls_config *cfg;
    int r = vega_tls_config_new(&cfg, VEGA_TLS_CLIENT);
    if (r < 0)
        return curl_fail(o, CE_FAILED_INIT, "TLS: %s", vega_tls_strerror(r));
    /* h2 first unless HTTP/1.x was asked for (curl's default), then http/1.1 */
    const char *alpn[] = {"h2", "http/1.1"};
    /* a WebSocket goes over HTTP/2 (RFC 8441) only when --http2 or --http2-prior-knowledge
     * asks: otherwise a ws URL offers http/1.1 alone */
    bool h1 = h1_only || o->http_version == 10 || o->http_version == 11 ||
              (o->ws_any && o->http_version != 20 && o->http_version != 21);
    if ((r = vega_tls_config_set_alpn(cfg, alpn + h1, 2 - h1)) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_FAILED_INIT, "TLS ALPN: %s", vega_tls_strerror(r));
    }
    if (o->cacert && (r = vega_tls_config_set_ca_file(cfg, o->cacert)) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_SSL_CACERT_BADFILE, "error setting certificate file: %s (%s)",
                         o->cacert, vega_tls_strerror(r));
    }
    if (o->tls13_ciphers && vega_tls_config_set_ciphers(cfg, NULL, o->tls13_ciphers) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_SSL_CIPHER, "failed setting cipher list: %s", o->tls13_ciphers);
    }
    if ((r = curl_tls_apply(o, cfg)) != 0) {
        vega_tls_config_free(cfg);
        return r;
    }
    if (o->insecure && (r = vega_tls_config_set_verify(cfg, VEGA_TLS_VERIFY_NONE)) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_FAILED_INIT, "TLS: %s", vega_tls_strerror(r));
    }
    if (o->cert && (r = vega_tls_config_set_cert_files(cfg, o->cert, o->key)) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_SSL_CERTPROBLEM, "could not load client certificate %s%s%s: %s",
                         o->cert, o->key ? " with key " : "", o->key ? o->key : "",
                         vega_tls_strerror(r));
    }
    /* -v and --trace show the TLS messages as curl does */
    if ((o->verbose || curl_trace_on()) &&
        (r = vega_tls_config_set_msg_callback(cfg, curl_trace_tls, (void *)o)) < 0) {
        vega_tls_config_free(cfg);
        return curl_fail(o, CE_FAILED_INIT, "TLS: %s", vega_tls_strerror(r));
    }
    const char *keylog = getenv("SSLKEYLOGFILE");
    if (keylog && *keylog) {
        /* secrets: a file this creates is its owner's alone, whichever side opens it first */
        int fd = open(keylog, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
        if ((r = vega_tls_config_set_keylog_file(cfg, keylog)) < 0 && !o->silent)
            cli_err(keylog, "SSLKEYLOGFILE: %s (ignored)", vega_tls_strerror(r));
    }
    *out = cfg;
    return 0;
}

/* --unix-socket / --abstract-unix-socket: the connect hook; the URL's host still names the
 * server (Host, TLS's SNI and certificate check). */
static int unix_connect(void *user, const char *host, uint16_t port, bool tls, vega_stream **out,
                        vega_deadline dl)
{
    (void)host, (void)port, (void)tls;
    vega_addr a;
    vega_sock *s;
    int r = vega_addr_from_unix(&a, user);
    if (r < 0)
        return r;
    if ((r = vega_tcp_connect(&s, &a, dl)) < 0)
        return r;
    if ((r = vega_stream_from_sock(out, s, 0)) < 0)
        vega_sock_close(s);
    return r;
}

static int make_client(const struct curl_opts *o, vega_tls_config *tls, struct curl_quic *q,
                       vega_http_client **out)
{
    static char ua[64];
    vega_http_client_opts co;
    vega_http_client_opts_init(&co);
    co.tls = tls;
    if (curl_trace_on())
        co.h2_frame = curl_trace_h2_frame; /* --trace: each HTTP/2 frame, as curl 8 shows them */
    int code = curl_quic_setup(o, q, &co);
    if (code)
        return code;
    if (o->connect_timeout_ns)
        co.connect_timeout_ns = o->connect_timeout_ns;
    co.ip_family = o->ip_family;
    curl_net_apply(o, &co);
    co.tcp_nagle = o->tcp_nagle;
    co.tcp_keepalive_s = o->keepalive_s;
    /* curl sets no body limit: a download is as large as the user asks for. */
    co.max_body = o->max_filesize ? o->max_filesize : UINT64_MAX;
    snprintf(ua, sizeof(ua), "vega-curl/%s", VEGA_VERSION_STRING);
    co.user_agent = o->user_agent ? o->user_agent : ua;
    if ((code = curl_proxy_setup(o, &co)) != 0)
        return code;
    if ((code = curl_local_setup(o, &co.local)) != 0)
        return code;
    if (o->interface || o->local_port_min)
        co.alt_svc = false; /* HTTP/3's connections are not bound: no Alt-Svc switch to them */
    if (co.proxy && (o->interface || o->local_port_min))
        return curl_fail(o, CE_FAILED_INIT,
                         "--interface and --local-port are not supported through a proxy");
    if (o->unix_path[0]) {
        /* every connection goes to the socket, whatever the URL's host (proxies too) */
        co.connect = unix_connect;
        co.connect_user = (void *)o->unix_path;
    }
    int r = vega_http_client_new(out, &co);
    if (r < 0)
        return curl_fail(o, CE_FAILED_INIT, "HTTP client: %s", vega_tls_strerror(r));
    for (size_t i = 0; i < o->nresolve; i++) {
        r = vega_http_client_add_resolve(*out, o->resolve[i].host, o->resolve[i].port,
                                         &o->resolve[i].addr);
        if (r < 0) {
            vega_http_client_free(*out);
            return curl_fail(o, CE_OUT_OF_MEMORY, "--resolve: %s", vega_strerror(r));
        }
    }
    curl_files_apply(o, *out);
    return 0;
}

/* -Z: up to parallel_max tasks take the next URL each until none is left. */
struct par {
    struct curl_ctx *cx;
    size_t next;
    int last_code; /* the last URL's, as without -Z */
};

static void *par_task(void *arg)
{
    struct par *p = arg;
    const struct curl_opts *o = p->cx->o;
    for (;;) {
        size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= o->nurls)
            return NULL;
        int code = curl_transfer(p->cx, i);
        if (i + 1 == o->nurls)
            p->last_code = code;
        if (code && o->fail_early) {
            /* --fail-early: no URL starts after a failure; its code is the run's */
            __atomic_store_n(&p->next, o->nurls, __ATOMIC_RELAXED);
            p->last_code = code;
            return NULL;
        }
    }
}

static int run_parallel(struct curl_ctx *cx)
{
    const struct curl_opts *o = cx->o;
    struct par p = {.cx = cx};
    size_t n = o->parallel_max ? o->parallel_max : 50;
    if (n > o->nurls)
        n = o->nurls;
    vega_task **t = calloc(n, sizeof *t);
    if (!t)
        return curl_fail(o, CE_OUT_OF_MEMORY, "out of memory");
    curl_stdout_set_shared(true);
    size_t started = 0;
    for (; started < n; started++)
        if (vega_task_spawn(&t[started], par_task, &p) < 0)
            break;
    if (started == 0)
        par_task(&p); /* no task could start: one after another here */
    for (size_t i = 0; i < started; i++)
        (void)vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER);
    curl_stdout_set_shared(false);
    free(t);
    return p.last_code;
}

/* The HTTP/1.1-only client of the WebSocket fall back (curl_ctx.h1_client), made once. */
static vega_tls_config *h1_tls;
static struct curl_quic h1_quic;
static pthread_mutex_t h1_mu = PTHREAD_MUTEX_INITIALIZER;

static vega_http_client *h1_client(struct curl_ctx *cx)
{
    pthread_mutex_lock(&h1_mu);
    if (!cx->client_h1 && make_tls_alpn(cx->o, true, &h1_tls) == 0 &&
        make_client(cx->o, h1_tls, &h1_quic, &cx->client_h1) != 0)
        cx->client_h1 = NULL;
    vega_http_client *c = cx->client_h1;
    pthread_mutex_unlock(&h1_mu);
    return c;
}

struct main_arg {
    const struct curl_opts *o;
    int code;
    bool stdout_closed;
    struct curl_saved saved; /* the caches for --alt-svc and --tls-session-file */
};

static void *main_task(void *arg)
{
    struct main_arg *m = arg;
    const struct curl_opts *o = m->o;
    vega_tls_config *tls = NULL;
    struct curl_quic q = {0};
    struct curl_ctx cx = {.o = o, .h1_client = h1_client};
    curl_stdout_init();
    if (m->stdout_closed)
        curl_stdout.err = -EBADF;
    if ((m->code = make_tls(o, &tls)) != 0 ||
        (m->code = make_client(o, tls, &q, &cx.client)) != 0) {
        vega_tls_config_free(tls);
        curl_quic_free(&q);
        curl_proxy_free();
        curl_proxy_free();
        curl_stdout_fini();
        return NULL;
    }
    /* As curl does: every URL is tried, and the exit code is the last transfer's. */
    m->code = CE_OK;
    if (o->parallel && o->nurls > 1)
        m->code = run_parallel(&cx);
    else
        for (size_t i = 0; i < o->nurls; i++) {
            m->code = curl_ws_url(o->urls[i]) ? curl_ws_transfer(&cx, i) : curl_transfer(&cx, i);
            if (m->code && o->fail_early)
                break; /* curl: "Fail and exit on the first detected transfer error" */
        }
    curl_dump_close();
    curl_files_take(o, cx.client, &m->saved);
    /* the connections' ends (close_notify, GOAWAY) are not shown, as curl 7.88 shows none
     * after its transfers */
    curl_trace_conn_notes_end();
    vega_http_client_free(cx.client);
    vega_tls_config_free(tls);
    curl_quic_free(&q);
    vega_http_client_free(cx.client_h1);
    vega_tls_config_free(h1_tls);
    curl_quic_free(&h1_quic);
    curl_stdout_fini();
    return NULL;
}

/* A closed stdin, stdout or stderr would be reused by the next open (the runtime's own
 * descriptors, an output file), and bodies would land there: hold /dev/null in its place and
 * remember that stdout was closed, so that writing to it fails as curl's does (23). */
static bool guard_std_fds(void)
{
    bool stdout_closed = false;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        if (fd == STDOUT_FILENO)
            stdout_closed = true;
        int n = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
    return stdout_closed;
}

int main(int argc, char **argv)
{
    static struct curl_opts o;
    bool stdout_closed = guard_std_fds();
    o.max_redirs = 50;
    o.keepalive_s = 60; /* curl's default: probes after 60 s idle, every 60 s */
    o.earlydata = -1;
    cli_set_prog("vega-curl");
    curl_config_expand(&argc, &argv, long_opts, short_opts);
    parse_args(&o, argc, argv);
    signal(SIGPIPE, SIG_IGN);

    curl_cookie_init(&o);
    curl_trace_open(&o);

    vega_rt_opts ro;
    vega_rt_opts_init(&ro);
    ro.flavor = VEGA_RT_MULTI_THREAD;
    ro.workers = 1;
    ro.stack_size = 1u << 20; /* the transfer keeps its large buffers on the heap anyway */
    vega_rt *rt;
    int r = vega_rt_new(&rt, &ro);
    if (r < 0) {
        curl_fail(&o, CE_FAILED_INIT, "runtime: %s", vega_strerror(r));
        return CE_FAILED_INIT;
    }
    struct main_arg m = {.o = &o, .code = CE_FAILED_INIT, .stdout_closed = stdout_closed};
    r = vega_rt_block_on(rt, main_task, &m, NULL);
    if (r < 0)
        m.code = curl_fail(&o, CE_FAILED_INIT, "runtime: %s", vega_strerror(r));
    vega_rt_free(rt);
    curl_trace_close();
    (void)curl_cookie_save(&o); /* curl only warns when the jar cannot be written */
    int fcode = curl_files_store(&o, &m.saved);
    if (fcode && m.code == CE_OK)
        m.code = fcode;
    free(o.alt_svc_text);
    free(o.session_text);
    free(o.data);
    free(o.form);
    curl_netrc_free();
    free(o.auth);
    free(o.urls);
    free(o.outs);
    free(o.uploads);
    free(o.cookie_str);
    free(o.cookie_files);
    return m.code;
}
