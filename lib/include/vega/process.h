/* SPDX-License-Identifier: MIT */
/* Child processes on the runtime: spawn with arguments, environment, working directory and
 * stdio wiring; exit watched through a pidfd (no SIGCHLD handler, no waitpid(-1)); signals;
 * and a run-to-completion helper that collects the output under a hard cap. */
#ifndef VEGA_PROCESS_H
#define VEGA_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A child process and the parent's ends of its pipes. Owned by whoever spawned it. One task may
 * wait while others kill it or use its pipes; several tasks may wait at once (all see the same
 * status).
 *
 * Exit is watched through a pidfd, so the process must not reap children it did not wait for
 * itself (waitpid(-1), SIGCHLD set to SIG_IGN or SA_NOCLDWAIT): that would take the status away
 * from vega_process_wait (which then fails with -ECHILD).
 */
typedef struct vega_process vega_process;

/* How one of the child's standard descriptors (0, 1, 2) is set up. */
typedef enum vega_stdio_mode {
    VEGA_STDIO_INHERIT = 0, /* the parent's own descriptor (the default) */
    VEGA_STDIO_NULL,        /* /dev/null */
    VEGA_STDIO_PIPE,        /* a pipe; the parent's end is non-blocking and close-on-exec, for
                               vega_fd_read/vega_fd_write (see vega_process_pipe) */
    VEGA_STDIO_FD,          /* `fd` below, borrowed for the call (the child gets a copy) */
} vega_stdio_mode;

typedef struct vega_stdio {
    vega_stdio_mode mode;
    int fd; /* VEGA_STDIO_FD only */
} vega_stdio;

typedef struct vega_process_opts {
    const char *path;    /* program; NULL = argv[0]. Without a '/', searched in the parent's
                            $PATH (posix_spawnp); with one, relative to cwd when cwd is set */
    char *const *argv;   /* borrowed; NULL-terminated, argv[0] required */
    char *const *envp;   /* borrowed; NULL-terminated "NAME=value" list; NULL = the parent's */
    const char *cwd;     /* borrowed; the child's working directory; NULL = the parent's */
    vega_stdio stdio[3]; /* stdin, stdout, stderr */
    bool close_fds;      /* close every descriptor above 2 in the child, not only the close-on-exec
                            ones (libvega opens all of its own descriptors close-on-exec) */
    bool kill_on_free;   /* vega_process_free sends SIGKILL to a child still running */
} vega_process_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_PROCESS_OPTS_VERSION 1

/* How a process ended. */
typedef struct vega_process_status {
    int code;         /* exit status 0..255 when it exited, -1 when a signal killed it */
    int signal;       /* the signal that killed it, 0 when it exited */
    bool core_dumped; /* killed with a core dump */
} vega_process_status;

/* Zeroes o: every stdio inherited, the parent's environment and directory. Since 0.1. */
VEGA_API void vega_process_opts_init_versioned(vega_process_opts *o, int opts_version);
#define vega_process_opts_init(...)                                                                \
    vega_process_opts_init_versioned(__VA_ARGS__, VEGA_PROCESS_OPTS_VERSION)

/*
 * Starts a child. The child begins with an empty signal mask and every signal at its default
 * action, whatever the runtime blocked (e.g. for vega_signal_wait) or ignored (SIGPIPE); it
 * gets only the descriptors named in o->stdio plus those not marked close-on-exec. The calling
 * thread waits the few microseconds until the child has called execve (posix_spawn), so a
 * failed exec is reported here and leaves no zombie.
 * o: borrowed. *out receives the process only on success.
 * Returns 0; -EINVAL (no argv[0], a bad stdio mode or fd); the exec's -errno: -ENOENT (no such
 * program, or cwd missing), -EACCES, -ENOEXEC, -ENOTDIR, -E2BIG; -EMFILE, -ENFILE, -ENOMEM,
 * -EAGAIN (process limit); -ENOSYS (kernel without pidfds, before 5.3).
 * Context: any thread; does not suspend. Since 0.1.
 */
VEGA_API int vega_process_spawn_versioned(vega_process **out, const vega_process_opts *o,
                                          int opts_version);
#define vega_process_spawn(...) vega_process_spawn_versioned(__VA_ARGS__, VEGA_PROCESS_OPTS_VERSION)

/*
 * Waits until the child exits and reaps it; *status (may be NULL) receives how it ended. Once
 * reaped, every later call returns the same status at once. A deadline of 0 only checks.
 * Returns 0; -ETIMEDOUT or -ECANCELED (the child is still there: wait again later); -ECHILD
 * (someone else reaped it); other -errno.
 * Context: inside a task (outside one only a deadline of 0 works). Since 0.1.
 */
VEGA_API int vega_process_wait(vega_process *p, vega_process_status *status, vega_deadline dl);

/*
 * Sends sig to the child through its pidfd (pidfd_send_signal), so the signal can never reach
 * another process that reused the pid. Returns 0, -ESRCH (the child was reaped), -EINVAL (bad
 * signal), -EPERM. Context: any thread; does not suspend. Since 0.1.
 */
VEGA_API int vega_process_kill(vega_process *p, int sig);

/* The child's process id. Since 0.1. */
VEGA_API int vega_process_pid(const vega_process *p);

/* The pidfd (owned by p; readable when the child exited). Since 0.1. */
VEGA_API int vega_process_pidfd(const vega_process *p);

/*
 * The parent's end of the pipe for child descriptor which (0 = its stdin, written by the
 * parent; 1, 2 = its stdout/stderr, read by the parent), or -1 when that descriptor is not a
 * pipe or was closed. Owned by p: use it with vega_fd_read/vega_fd_write, do not close it.
 * Since 0.1.
 */
VEGA_API int vega_process_pipe(const vega_process *p, int which);

/* Closes the parent's end of pipe `which` (closing stdin is how the child sees end of file).
 * No task may be inside a call on it. No-op when it is not open. Since 0.1. */
VEGA_API void vega_process_pipe_close(vega_process *p, int which);

/*
 * Closes the pipes and the pidfd and frees p (NULL is a no-op); no task may be inside a call
 * on p. A child that already exited is reaped. With kill_on_free a running child gets SIGKILL.
 * A child still running keeps running: inside a task a detached task takes over the pidfd
 * and reaps the child when it exits (or stops when the runtime is freed); outside a task it
 * is left alone (after SIGKILL it is reaped at once) and becomes a zombie when it exits,
 * until this process exits. A waited handle never leaves a zombie.
 * Context: any thread. Since 0.1.
 */
VEGA_API void vega_process_free(vega_process *p);

/* Where vega_process_output puts one output stream. */
typedef struct vega_process_capture {
    void *buf;  /* borrowed: receives the bytes */
    size_t cap; /* room in buf; more output than this fails the call with VEGA_ERR_NOBUF */
    size_t len; /* out: bytes stored */
} vega_process_capture;

/*
 * Runs a child to completion: writes input (may be NULL) to its stdin and closes it, collects
 * its stdout into *out and stderr into *err (each may be NULL) at the same time, and waits.
 * o: borrowed; its stdio entries apply except that stdin is a pipe when input != NULL, and
 * stdout/stderr are pipes when captured (a PIPE entry without a capture becomes NULL). A child
 * that closes stdin without reading all input is not an error.
 * On any failure after the spawn the child is killed (SIGKILL) and reaped, and out/err hold
 * what arrived. *status (may be NULL) is filled on success.
 * Returns 0; VEGA_ERR_NOBUF (a stream went past its cap); -ETIMEDOUT; -ECANCELED; the errors of
 * vega_process_spawn and vega_process_wait; -errno from the pipes; -EINVAL (a bad argument, or
 * options of a layout version this library does not know); VEGA_ERR_NOTASK (not called from a
 * task). Context: inside a task (it runs helper tasks for the other streams). Since 0.1.
 */
VEGA_API int vega_process_output_versioned(const vega_process_opts *o, const void *input,
                                           size_t input_len, vega_process_capture *out,
                                           vega_process_capture *err, vega_process_status *status,
                                           vega_deadline dl, int opts_version);
#define vega_process_output(...)                                                                   \
    vega_process_output_versioned(__VA_ARGS__, VEGA_PROCESS_OPTS_VERSION)

#ifdef __cplusplus
}
#endif
#endif
