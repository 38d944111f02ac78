/* SPDX-License-Identifier: MIT */
/* Helpers shared by the vega-* tools: messages, exit codes, option values, host:port splitting,
 * the runtime's start and run, QUIC's cipher suites and stdin/stdout on the runtime. Public
 * libvega API only. */
#ifndef VEGA_CLI_H
#define VEGA_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/vega.h>

/* Exit codes shared by the tools (ncat's: 0 ok, 1 network error, 2 usage or other error). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NET = 1,
    CLI_EXIT_USAGE = 2,
};

/* ---- messages (log.c) ------------------------------------------------------------------------ */

/* Sets the name messages start with (default "vega"); call first in main. */
void cli_set_prog(const char *name);
const char *cli_prog(void);

/* Verbosity: 0 = errors only, 1 = -v, 2 = -vv ... */
extern int cli_verbose;

/* "<prog>: <what>: <why>\n" on stderr; what may be NULL ("<prog>: <why>"). One write(2) per
 * message, so lines from different threads do not interleave. */
void cli_err(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_err with the message of a libvega code (negative errno or VEGA_ERR_*). */
void cli_err_code(const char *what, int err);

/* "<prog>: <message>\n" on stderr when cli_verbose >= level. */
void cli_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error: "<prog>: <message>" + "Try '<prog> --help' for more information." then exit 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends printf output to buf (cap bytes, text in [0, *len)) without ever writing past cap,
 * unlike `len += snprintf(buf + len, cap - len, ...)`, whose cap - len wraps once a cut text
 * left len above cap. *len stays below cap and buf NUL-terminated; a text that does not fit
 * is cut. Returns false when it was cut (or *len was already at cap, or an encoding error). */
bool cli_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- option values (opts.c) ------------------------------------------------------------------ */

/*
 * A duration: a number (decimals allowed) with an optional unit ns, us, ms, s, m, h;
 * no unit means default_unit_ns (e.g. VEGA_NS_PER_S). "1.5" "250ms" "2m".
 * Returns 0 or -EINVAL (syntax, negative, overflow).
 */
int cli_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns);

/* A byte size with an optional binary suffix K, M, G, T (optionally followed by "B" or "iB"):
 * "64K" = 65536. Returns 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *out);

/* A count with an optional SI suffix k, M, G (1k = 1000). Returns 0 or -EINVAL. */
int cli_parse_count(const char *s, uint64_t *out);

/* A plain decimal integer in [min, max]. Returns 0 or -EINVAL / -ERANGE. */
int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* ---- addresses (hostport.c) ------------------------------------------------------------------ */

/* True when s is a decimal port 0..65535. */
bool cli_is_port(const char *s);

/*
 * Splits "host:port", "[v6]:port" into host (brackets removed) and port. A bare IPv6 address
 * without brackets is not split. Returns 0, -EINVAL (no port / bad syntax), -ENAMETOOLONG.
 */
int cli_split_hostport(const char *s, char *host, size_t hcap, char *port, size_t pcap);

/* An address to listen on: "host:port" or "[v6]:port" as cli_split_hostport splits them, or
 * ":port" alone, which is loopback (127.0.0.1, the safe default). Returns 0, -EINVAL,
 * -ENAMETOOLONG. */
int cli_split_listen(const char *s, char *host, size_t hcap, char *port, size_t pcap);

/* ---- the runtime (rt.c) ---------------------------------------------------------------------- */

/* --driver's value: "uring" (or "io_uring") or "epoll"; anything else is a usage error ("--driver:
 * expected uring or epoll, got '<s>'", exit 2). */
vega_driver_kind cli_driver_arg(const char *s);

/* Ignores SIGPIPE, fills *stop with SIGINT and SIGTERM (what the tool's task waits for with
 * vega_signal_wait) and blocks them, with extra too unless it is 0, in every thread started from
 * now on: call it before the runtime starts. Returns CLI_EXIT_OK, or CLI_EXIT_NET after saying
 * "signals: <why>". */
int cli_block_signals(sigset_t *stop, int extra);

/* Starts a runtime with *ro (borrowed), runs fn(arg) on it to its end and frees the runtime.
 * Returns CLI_EXIT_OK, or CLI_EXIT_NET after saying "runtime: <why>" (when io_uring was asked
 * for and the runtime could not start, with a hint to try --driver epoll); fn's own outcome
 * travels in arg. */
int cli_rt_run(const vega_rt_opts *ro, vega_task_fn fn, void *arg);

/* ---- QUIC's cipher suites (quic.c) ----------------------------------------------------------- */

/* How many TLS 1.3 suites QUIC offers: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and
 * TLS_CHACHA20_POLY1305_SHA256. */
#define CLI_QUIC_SUITES 3

/* The name cli_quic_suites could not take: len bytes at name (not NUL-terminated). */
typedef struct cli_quic_bad_suite {
    const char *name;
    int len;
} cli_quic_bad_suite;

/* Appends the suites a list of names separated by ':' or ',' gives, in its order, to
 * suites[*n ...] as VEGA_QUIC_TLS_* ids (list NULL or "": none). Returns 0, or -EINVAL with *bad
 * (when bad is not NULL) naming the first name that is no QUIC suite or that would make more than
 * CLI_QUIC_SUITES (the ones before it are kept). Prints nothing: each tool says it its own way. */
int cli_quic_suites(const char *list, uint16_t suites[CLI_QUIC_SUITES], size_t *n,
                    cli_quic_bad_suite *bad);

/* ---- stdin / stdout on the runtime (stdio.c) ------------------------------------------------ */

/* One standard stream or output file, by what the descriptor is:
 * - CLI_STDIO_POLL: pipes, sockets and ttys, switched to O_NONBLOCK and waited on by the
 *   runtime (the original flags come back at cli_stdio_fini);
 * - CLI_STDIO_FILE: regular files and devices, read and written as <vega/fs.h> operations at
 *   the file position (io_uring operations on the worker; the blocking pool under epoll);
 * - CLI_STDIO_NULL: /dev/null, never touched: writes succeed at once, reads see end of file;
 * - CLI_STDIO_BLOCKING: the rest (and a tty kept blocking), on the blocking pool. */
typedef enum cli_stdio_kind {
    CLI_STDIO_POLL,
    CLI_STDIO_FILE,
    CLI_STDIO_NULL,
    CLI_STDIO_BLOCKING,
} cli_stdio_kind;

typedef struct cli_stdio {
    int fd;
    cli_stdio_kind kind;
    bool owned; /* cli_stdio_adopt: cli_stdio_close closes fd */
    bool restore;
    int saved_flags;
    vega_file *file; /* CLI_STDIO_FILE: fd itself when owned, else a duplicate of it */
} cli_stdio;

/* Prepares fd, borrowed (it stays open after cli_stdio_fini). Returns 0 or -errno (fd is not
 * open). Does not suspend. */
int cli_stdio_init(cli_stdio *io, int fd);

/* The same for a descriptor the cli_stdio takes: cli_stdio_close closes it. On failure the
 * caller still owns fd. */
int cli_stdio_adopt(cli_stdio *io, int fd);

/* Keeps a pollable descriptor blocking (its flags restored) and uses the blocking pool: a tty
 * shared with stderr must not become O_NONBLOCK. */
void cli_stdio_use_pool(cli_stdio *io);

/* Restores the descriptor's flags (and lets go of the duplicate of a borrowed file). Safe to
 * call more than once. */
void cli_stdio_fini(cli_stdio *io);

/* cli_stdio_fini, then closes an adopted descriptor. Returns 0 or the -errno of close(2)
 * (-EIO: data written earlier may be lost); 0 for a borrowed one. May suspend (inside a task
 * the close is a kernel operation). */
int cli_stdio_close(cli_stdio *io);

/* Reads up to len bytes: the count, 0 at end of file, or a negative code. Inside a task. */
vega_ssize cli_stdio_read(cli_stdio *io, void *buf, size_t len, vega_deadline dl);

/* Writes all len bytes: len or a negative code. Inside a task. */
vega_ssize cli_stdio_write(cli_stdio *io, const void *buf, size_t len, vega_deadline dl);

#endif
