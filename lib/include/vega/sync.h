/* SPDX-License-Identifier: MIT */
/* Task synchronisation: mutex, rwlock, semaphore, notify, barrier (caller-owned storage, never
 * allocate), and channels: oneshot, mpsc (bounded/unbounded), broadcast, watch.
 *
 * Common rules for everything in this header:
 *  - Waiting never allocates: waiter nodes live on the waiting task's stack.
 *  - Every call that can suspend takes a deadline (absolute, see vega/time.h). It returns
 *    -ETIMEDOUT when the deadline (or the task's deadline scope) passes and -ECANCELED when the
 *    task is cancelled. With dl == 0 such a call never suspends: it returns -ETIMEDOUT at once
 *    where it would have to wait.
 *  - A wait that was completed (lock handed over, value delivered) wins over a timeout or
 *    cancellation that races with it: the call then succeeds, so nothing is lost.
 *  - A call that succeeds without waiting spends one unit of the task's cooperative budget
 *    (vega_coop, which may yield; a cancelled task then gets -ECANCELED) unless dl == 0.
 *  - All objects may be used from tasks on any worker (and of any runtime). A thread outside
 *    any task may use them too: it then blocks the thread (futex) instead of parking a task,
 *    its deadline is on CLOCK_MONOTONIC and it is never cancelled.
 *  - Calls that never suspend (unlock, release, notify, send on an unbounded or broadcast
 *    channel, try-variants) may be called from any thread.
 * Semantics follow Tokio's tokio::sync. */
#ifndef VEGA_SYNC_H
#define VEGA_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/err.h>
#include <vega/export.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal wait-queue head embedded in the objects below; treat as opaque. `lock_` is a spin
 * lock word that guards the whole object. */
typedef struct vega_waitq {
    unsigned lock_;
    void *head_, *tail_;
} vega_waitq;

/* ---- mutex (fair hand-off to the longest waiter) ------------------------------------------- */

/* Opaque; storage owned by the caller. VEGA_MUTEX_INIT is a static initialiser. */
typedef struct vega_mutex {
    vega_waitq q_;
    bool locked_;
} vega_mutex;

/* clang-format off */
#define VEGA_MUTEX_INIT {{0, NULL, NULL}, false}
/* clang-format on */

/* Initialises an unlocked mutex. Never fails. Since 0.1. */
VEGA_API void vega_mutex_init(vega_mutex *m);

/* Releases nothing (no allocation); m must be unlocked with no waiters. Since 0.1. */
VEGA_API void vega_mutex_fini(vega_mutex *m);

/*
 * Locks m. When it is held, waits in FIFO order; unlock hands m directly to the longest waiter,
 * so a task that keeps relocking cannot starve the others.
 * Returns 0 (the caller holds m), -ETIMEDOUT, -ECANCELED (the caller does not hold m).
 * Context: suspends; inside a task (or a plain thread, see above). Not recursive. Since 0.1.
 */
VEGA_API int vega_mutex_lock(vega_mutex *m, vega_deadline dl);

/* Locks m if it is free (and nobody waits). Returns true when the caller now holds it.
 * Context: never suspends; any thread. Since 0.1. */
VEGA_API bool vega_mutex_trylock(vega_mutex *m);

/* Unlocks m, handing it to the longest waiter if there is one. The caller must hold m; any task
 * or thread may unlock on its behalf. Context: never suspends. Since 0.1. */
VEGA_API void vega_mutex_unlock(vega_mutex *m);

/* ---- rwlock (writer-preferring, FIFO: a waiting writer blocks new readers) ----------------- */

/* Opaque; storage owned by the caller. Waiters are served in arrival order: a run of readers
 * at the head of the queue enters together, a writer enters alone. */
typedef struct vega_rwlock {
    vega_waitq q_;
    long state_; /* >0 readers, -1 writer */
} vega_rwlock;

/* clang-format off */
#define VEGA_RWLOCK_INIT {{0, NULL, NULL}, 0}
/* clang-format on */

/* Initialises an unlocked rwlock. Since 0.1. */
VEGA_API void vega_rwlock_init(vega_rwlock *l);
/* l must be unlocked with no waiters. Since 0.1. */
VEGA_API void vega_rwlock_fini(vega_rwlock *l);

/*
 * Takes l shared (rdlock) or exclusive (wrlock). A reader waits while a writer holds l or any
 * task waits before it; a writer waits until l is free and it is first in line.
 * Returns 0, -ETIMEDOUT, -ECANCELED. Context: suspends. Since 0.1.
 */
VEGA_API int vega_rwlock_rdlock(vega_rwlock *l, vega_deadline dl);
VEGA_API int vega_rwlock_wrlock(vega_rwlock *l, vega_deadline dl);

/* Non-waiting variants: true when taken. Context: never suspends; any thread. Since 0.1. */
VEGA_API bool vega_rwlock_tryrdlock(vega_rwlock *l);
VEGA_API bool vega_rwlock_trywrlock(vega_rwlock *l);

/* Releases a shared or exclusive hold; wakes the next writer or run of readers.
 * Context: never suspends. Since 0.1. */
VEGA_API void vega_rwlock_rdunlock(vega_rwlock *l);
VEGA_API void vega_rwlock_wrunlock(vega_rwlock *l);

/* ---- counting semaphore (FIFO: a large acquire is not starved by small ones) --------------- */

/* Opaque; storage owned by the caller. */
typedef struct vega_sem {
    vega_waitq q_;
    uint64_t permits_;
    bool closed_;
} vega_sem;

/* Initialises s with `permits` permits. Since 0.1. */
VEGA_API void vega_sem_init(vega_sem *s, uint64_t permits);
/* s must have no waiters. Since 0.1. */
VEGA_API void vega_sem_fini(vega_sem *s);

/*
 * Takes n permits (n == 0 succeeds at once unless closed). Waiters are served strictly in FIFO
 * order: while a task waits, later acquires queue behind it even if enough permits are free
 * for them, so a large request is never starved.
 * Returns 0, -ETIMEDOUT, -ECANCELED, VEGA_ERR_CLOSED. Context: suspends. Since 0.1.
 */
VEGA_API int vega_sem_acquire(vega_sem *s, uint64_t n, vega_deadline dl);

/* Takes n permits if they are free and nobody waits. Returns true when taken.
 * Context: never suspends; any thread. Since 0.1. */
VEGA_API bool vega_sem_try_acquire(vega_sem *s, uint64_t n);

/* Gives n permits back (saturating), waking waiters in order. Context: never suspends. */
VEGA_API void vega_sem_release(vega_sem *s, uint64_t n);

/* Permits free now (a snapshot). Since 0.1. */
VEGA_API uint64_t vega_sem_available(vega_sem *s);

/* Wakes every waiter with VEGA_ERR_CLOSED; later acquires fail with it too. Since 0.1. */
VEGA_API void vega_sem_close(vega_sem *s);

/* ---- notify (Tokio's Notify: one stored permit for notify_one) ---------------------------- */

/* Opaque; storage owned by the caller. */
typedef struct vega_notify {
    vega_waitq q_;
    bool permit_;
} vega_notify;

/* Initialises n with no stored permit. Since 0.1. */
VEGA_API void vega_notify_init(vega_notify *n);
/* n must have no waiters. Since 0.1. */
VEGA_API void vega_notify_fini(vega_notify *n);

/* Waits for a notification (consumes a stored permit at once if there is one).
 * Returns 0, -ETIMEDOUT, -ECANCELED. Context: suspends. Since 0.1. */
VEGA_API int vega_notify_wait(vega_notify *n, vega_deadline dl);

/* Wakes the longest waiter, or stores one permit for the next wait if nobody waits (several
 * calls store still just one). Context: never suspends; any thread. Since 0.1. */
VEGA_API void vega_notify_one(vega_notify *n);

/* Wakes every current waiter; stores nothing. Context: never suspends; any thread. Since 0.1. */
VEGA_API void vega_notify_all(vega_notify *n);

/* ---- barrier ------------------------------------------------------------------------------- */

/* Opaque; storage owned by the caller. */
typedef struct vega_barrier {
    vega_waitq q_;
    unsigned n_, arrived_;
    uint64_t generation_;
} vega_barrier;

/* Initialises a barrier for n tasks (0 behaves as 1). Since 0.1. */
VEGA_API void vega_barrier_init(vega_barrier *b, unsigned n);
/* b must have no waiters. Since 0.1. */
VEGA_API void vega_barrier_fini(vega_barrier *b);

/* Waits until n tasks arrived; the barrier then resets for the next generation.
 * Returns 1 in exactly one task of each generation (the leader, the last to arrive), 0 in the
 * others, or -ETIMEDOUT/-ECANCELED (the task then no longer counts as arrived).
 * Context: suspends. Since 0.1. */
VEGA_API int vega_barrier_wait(vega_barrier *b, vega_deadline dl);

/* ---- oneshot: one value, one sender, one receiver ----------------------------------------- */

/* Heap object shared by the sending and the receiving side; one of them frees it once neither
 * will touch it again (typically the receiver after recv returned). */
typedef struct vega_oneshot vega_oneshot;

/* Creates an empty oneshot. Returns 0 or -ENOMEM. Since 0.1. */
VEGA_API int vega_oneshot_new(vega_oneshot **out);

/* Sends v (borrowed pointer value, handed over as is). Returns 0, or VEGA_ERR_CLOSED (already
 * sent, sender closed, or receiver closed). After a successful send the sender must not touch
 * o again. Context: never suspends; any thread. Since 0.1. */
VEGA_API int vega_oneshot_send(vega_oneshot *o, void *v);

/* Receives the value into *v. Returns 0, VEGA_ERR_CLOSED (sender closed without sending, or
 * the value was already received), -ETIMEDOUT, -ECANCELED. Context: suspends. Since 0.1. */
VEGA_API int vega_oneshot_recv(vega_oneshot *o, void **v, vega_deadline dl);

/* Non-waiting receive: 0, VEGA_ERR_EMPTY (nothing sent yet), VEGA_ERR_CLOSED. Since 0.1. */
VEGA_API int vega_oneshot_try_recv(vega_oneshot *o, void **v);

/* The sender gives up without sending: a waiting receiver gets VEGA_ERR_CLOSED. Since 0.1. */
VEGA_API void vega_oneshot_close(vega_oneshot *o);

/* The receiver gives up: later sends fail with VEGA_ERR_CLOSED (a value sent before stays
 * receivable). Since 0.1. */
VEGA_API void vega_oneshot_rx_close(vega_oneshot *o);

/* Frees o (no task may be waiting on it). NULL is a no-op. Since 0.1. */
VEGA_API void vega_oneshot_free(vega_oneshot *o);

/* ---- mpsc: many senders, any number of receivers; messages are pointers ------------------ */

/* Heap object. Despite the name, any number of tasks (and threads) may receive from one
 * channel at once: each message goes to exactly one receiver, waiting receivers are served in
 * FIFO order, and a producer's messages are received in the order it sent them. Messages are
 * opaque pointers; NULL is a valid message. Bounded channels keep a fixed ring; unbounded
 * ones a list of fixed-size blocks that grows on send and is freed as it is drained. */
typedef struct vega_mpsc vega_mpsc;

/* capacity 0 = unbounded. Returns 0 or -ENOMEM. Since 0.1. */
VEGA_API int vega_mpsc_new(vega_mpsc **out, size_t capacity);

/* Sends v; on a full bounded channel waits for room (senders are served in FIFO order, and a
 * sender whose wait completed has its message queued even if it timed out at the same time).
 * Returns 0, VEGA_ERR_CLOSED (channel closed), -ETIMEDOUT, -ECANCELED, -ENOMEM (unbounded
 * growth failed). Context: may suspend (bounded only). Since 0.1. */
VEGA_API int vega_mpsc_send(vega_mpsc *c, void *v, vega_deadline dl);

/* Returns 0, VEGA_ERR_FULL, VEGA_ERR_CLOSED, -ENOMEM (unbounded growth failed).
 * Context: never suspends; any thread. Since 0.1. */
VEGA_API int vega_mpsc_try_send(vega_mpsc *c, void *v);

/* Receives in FIFO order into *v. Returns 0, VEGA_ERR_CLOSED (closed and drained),
 * -ETIMEDOUT, -ECANCELED. Context: suspends. Since 0.1. */
VEGA_API int vega_mpsc_recv(vega_mpsc *c, void **v, vega_deadline dl);

/* Returns 0, VEGA_ERR_EMPTY, VEGA_ERR_CLOSED (closed and drained). Never suspends. */
VEGA_API int vega_mpsc_try_recv(vega_mpsc *c, void **v);

/* No more sends: senders (waiting ones too) get VEGA_ERR_CLOSED; the receiver drains what is
 * queued, then gets VEGA_ERR_CLOSED. Either side may close; closing twice is a no-op. */
VEGA_API void vega_mpsc_close(vega_mpsc *c);

/*
 * Sender counting, for a receiver that must learn when every producer is gone (Tokio's recv()
 * returning None once the last Sender is dropped): each producer calls vega_mpsc_sender_add
 * before it starts (or its spawner does, before spawning it) and vega_mpsc_sender_done when it
 * will send no more. When the count comes back to zero the channel closes as vega_mpsc_close
 * does: the receiver drains what is queued, then gets VEGA_ERR_CLOSED. A channel on which
 * sender_add was never called is never closed this way. Context: any thread. Since 0.1.
 */
VEGA_API void vega_mpsc_sender_add(vega_mpsc *c);
VEGA_API void vega_mpsc_sender_done(vega_mpsc *c);

/* Messages queued now (a snapshot). Since 0.1. */
VEGA_API size_t vega_mpsc_len(vega_mpsc *c);

/* Frees c and the messages' slots (not what they point to). No task may be waiting on it.
 * NULL is a no-op. Since 0.1. */
VEGA_API void vega_mpsc_free(vega_mpsc *c);

/* ---- broadcast: every receiver sees every message, bounded ring, lagging receivers skip ---- */
typedef struct vega_broadcast vega_broadcast;
typedef struct vega_broadcast_rx vega_broadcast_rx;

/* capacity >= 1 messages kept. Returns 0, -ENOMEM, -EINVAL. Since 0.1. */
VEGA_API int vega_broadcast_new(vega_broadcast **out, size_t capacity);

/* Publishes v to every receiver; never waits (the oldest message is overwritten). Returns the
 * number of receivers (0 is not an error), or VEGA_ERR_CLOSED. Any thread. Since 0.1. */
VEGA_API int vega_broadcast_send(vega_broadcast *b, void *v);

/* A receiver that sees messages sent from now on. Returns 0 or -ENOMEM. Since 0.1. */
VEGA_API int vega_broadcast_subscribe(vega_broadcast *b, vega_broadcast_rx **out);

/* Receives the next message into *v. Returns 0, VEGA_ERR_LAGGED (*missed, if not NULL, gets
 * how many messages were overwritten before this receiver saw them; the next recv returns the
 * oldest kept message), VEGA_ERR_CLOSED (closed and drained), -ETIMEDOUT, -ECANCELED.
 * One task at a time per receiver. Context: suspends. Since 0.1. */
VEGA_API int vega_broadcast_recv(vega_broadcast_rx *r, void **v, uint64_t *missed,
                                 vega_deadline dl);

/* Frees a receiver (not while a task waits on it). NULL is a no-op. Since 0.1. */
VEGA_API void vega_broadcast_rx_free(vega_broadcast_rx *r);

/* Later sends fail; receivers drain what they have not seen, then get VEGA_ERR_CLOSED. */
VEGA_API void vega_broadcast_close(vega_broadcast *b);

/* Frees b, after every receiver was freed. NULL is a no-op. Since 0.1. */
VEGA_API void vega_broadcast_free(vega_broadcast *b);

/* ---- watch: one current value, receivers wait for changes --------------------------------- */
typedef struct vega_watch vega_watch;

/* Creates a watch holding `initial` at version 0. Returns 0 or -ENOMEM. Since 0.1. */
VEGA_API int vega_watch_new(vega_watch **out, void *initial);

/* Replaces the value and wakes every waiter. Returns 0 or VEGA_ERR_CLOSED. Any thread. */
VEGA_API int vega_watch_send(vega_watch *w, void *v);

/* Reads the current value and its version (starts at 0, +1 per send); version may be NULL. */
VEGA_API void *vega_watch_get(vega_watch *w, uint64_t *version);

/* Waits until the version differs from *seen; stores the new value (v may be NULL) and version.
 * A change is reported even after close; only when nothing changed does it return
 * VEGA_ERR_CLOSED. Returns 0, VEGA_ERR_CLOSED, -ETIMEDOUT, -ECANCELED.
 * Context: suspends. Since 0.1. */
VEGA_API int vega_watch_changed(vega_watch *w, uint64_t *seen, void **v, vega_deadline dl);

/* Later sends fail; waiters wake with VEGA_ERR_CLOSED. Since 0.1. */
VEGA_API void vega_watch_close(vega_watch *w);

/* Frees w (no task may be waiting on it). NULL is a no-op. Since 0.1. */
VEGA_API void vega_watch_free(vega_watch *w);

#ifdef __cplusplus
}
#endif
#endif
