/* SPDX-License-Identifier: MIT */
/* Receive watches at the runtime layer (io_uring: a multishot receive into the worker's
 * provided-buffer ring; epoll: readiness): bytes reach the fired tasks whole and in order while
 * they re-arm from whichever worker they run on, EOF comes after the bytes, and closing a watch
 * that holds unread bytes gives the ring its buffers back. */
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/rt.h>

#include "sched_int.h"
#include "vtest.h"

#define TOTAL (2u << 20)

struct stream {
    struct vega__watch w;
    int fd;
    uint8_t *got;
    size_t n;
    atomic_bool eof, gone;
    atomic_uint fired, from_ring;
};

static uint8_t pattern(size_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13);
}

static void on_fire(struct vega__watch *w, int status);

static void take(struct stream *st, const uint8_t *b, size_t n)
{
    VCHECK(st->n + n <= TOTAL);
    memcpy(st->got + st->n, b, n);
    st->n += n;
}

/* A fresh task per wake-up: reads what the watch holds, then the socket, then re-arms. */
static void on_fire(struct vega__watch *w, int status)
{
    struct stream *st = VEGA__CONTAINER_OF(w, struct stream, w);
    VCHECK(status > 0);
    atomic_fetch_add(&st->fired, 1);
    uint8_t buf[3000];
    for (;;) {
        vega_ssize n = vega__watch_read(w, buf, sizeof buf, 0);
        if (n > 0) {
            atomic_fetch_add(&st->from_ring, 1);
            take(st, buf, (size_t)n);
            continue;
        }
        if (n == -ETIMEDOUT)
            break; /* a receive is in flight: it will fire the watch */
        if (n == 0) {
            atomic_store(&st->eof, true);
            return;
        }
        VCHECK_EQ(n, -EAGAIN);
        ssize_t k = read(st->fd, buf, sizeof buf);
        if (k > 0) {
            take(st, buf, (size_t)k);
            continue;
        }
        if (k == 0) {
            atomic_store(&st->eof, true);
            return;
        }
        VCHECK(errno == EAGAIN);
        break;
    }
    VCHECK_EQ(vega__watch_arm(w, st->fd, POLLIN | POLLRDHUP, VEGA_DEADLINE_NEVER,
                              VEGA__WATCH_ARM_RECV, on_fire),
              0);
}

static void on_gone(struct vega__watch *w)
{
    struct stream *st = VEGA__CONTAINER_OF(w, struct stream, w);
    atomic_store(&st->gone, true);
}

static void body_order(void)
{
    int sv[2];
    VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    static struct stream st;
    memset(&st, 0, sizeof st);
    st.fd = sv[0];
    st.got = malloc(TOTAL);
    VCHECK(st.got != NULL);
    VCHECK_EQ(vega__watch_arm(&st.w, st.fd, POLLIN | POLLRDHUP, VEGA_DEADLINE_NEVER,
                              VEGA__WATCH_ARM_RECV, on_fire),
              0);
    uint8_t chunk[9000];
    size_t sent = 0;
    for (unsigned k = 0; sent < TOTAL; k++) {
        size_t n = 1 + (k * 7919u) % sizeof chunk;
        if (n > TOTAL - sent)
            n = TOTAL - sent;
        for (size_t i = 0; i < n; i++)
            chunk[i] = pattern(sent + i);
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(sv[1], chunk + off, n - off);
            if (w < 0) {
                VCHECK(errno == EAGAIN);
                VCHECK_EQ(vega_sleep_ms(1), 0); /* the socket is full: let the reader run */
                continue;
            }
            off += (size_t)w;
        }
        sent += n;
        if (k % 16 == 0)
            vega_yield();
    }
    VCHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
    for (int i = 0; i < 5000 && !atomic_load(&st.eof); i++)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK(atomic_load(&st.eof));
    VCHECK_EQ(st.n, TOTAL);
    for (size_t i = 0; i < TOTAL; i++)
        if (st.got[i] != pattern(i))
            VCHECK_EQ(i, (size_t)-1); /* the first wrong byte */
    if (vtest_driver() == VEGA_DRIVER_URING)
        VCHECK(atomic_load(&st.from_ring) > 0);
    else
        VCHECK_EQ(atomic_load(&st.from_ring), 0);
    vega__watch_close(&st.w, on_gone);
    for (int i = 0; i < 5000 && !atomic_load(&st.gone); i++)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK(atomic_load(&st.gone));
    close(sv[0]);
    close(sv[1]);
    free(st.got);
}

VTEST(bytes_in_order)
{
    vtest_run(body_order, 1);
}

VTEST(bytes_in_order_two_workers)
{
    vtest_run(body_order, 2);
}

/* More closes with held bytes than the ring has buffers, then a watch that must still find a
 * free buffer for its bytes. */
struct held {
    struct vega__watch w;
    atomic_bool fired, gone;
    bool held;
};

static void held_fire(struct vega__watch *w, int status)
{
    (void)status;
    struct held *h = VEGA__CONTAINER_OF(w, struct held, w);
    struct vega__worker *home = w->op.owner;
    vega__spin_lock(&home->cancel_lock);
    h->held = w->op.rb_bid >= 0;
    vega__spin_unlock(&home->cancel_lock);
    atomic_store(&h->fired, true);
}

static void held_gone(struct vega__watch *w)
{
    struct held *h = VEGA__CONTAINER_OF(w, struct held, w);
    atomic_store(&h->gone, true);
}

static void body_close_held(void)
{
    for (int round = 0; round < 400; round++) {
        int sv[2];
        VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        struct held h;
        memset(&h, 0, sizeof h);
        VCHECK_EQ(vega__watch_arm(&h.w, sv[0], POLLIN | POLLRDHUP, VEGA_DEADLINE_NEVER,
                                  VEGA__WATCH_ARM_RECV, held_fire),
                  0);
        VCHECK_EQ(write(sv[1], "held bytes", 10), 10);
        for (int i = 0; i < 5000 && !atomic_load(&h.fired); i++)
            VCHECK_EQ(vega_sleep_ms(1), 0);
        VCHECK(atomic_load(&h.fired));
        VCHECK_EQ(h.held, vtest_driver() == VEGA_DRIVER_URING);
        vega__watch_close(&h.w, held_gone); /* unread: the buffer goes back to the ring */
        for (int i = 0; i < 5000 && !atomic_load(&h.gone); i++)
            VCHECK_EQ(vega_sleep_ms(1), 0);
        VCHECK(atomic_load(&h.gone));
        close(sv[0]);
        close(sv[1]);
    }
}

VTEST(close_with_held_bytes)
{
    vtest_run(body_close_held, 1);
}
