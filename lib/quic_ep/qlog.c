/* SPDX-License-Identifier: MIT */
/* qlog files (vega_quic_endpoint_opts.qlog_dir): each connection's core events
 * (vega_quic_opts.qlog) become qlog JSON-SEQ records (vega_quic_qlog_write) in
 * <dir>/<ODCID hex>_<client|server>.sqlog, as ngtcp2's examples and curl (QLOGDIR) name theirs.
 * Records collect in a buffer of the connection's and go out with write(2) when it fills, on
 * connection state changes and when the connection ends. The file is opened only once the
 * connection is real (a server: its first Initial decrypted and the connection registered), so
 * junk that looks like an Initial creates no file; records made before wait in the buffer. A
 * trace stops at qlog_max_bytes with a last record that says so. The hook runs with the
 * connection locked, so the state needs no lock of its own. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vega/quic_qlog.h>

#include "ep_int.h"

#define QLOG_BUF     (16 * 1024)
#define QLOG_DEFAULT (64ull << 20)

struct ep_qlog {
    int fd;          /* -1 until opened (or when opening failed) */
    bool opened;     /* open was tried */
    bool stopped;    /* the size limit was reached: nothing more is written */
    bool have_start; /* start below is set */
    bool server;
    uint64_t start; /* the core's time of the first event (the trace's time 0) */
    uint64_t max, written;
    uint8_t odcid[VEGA_QUIC_MAX_CID_LEN];
    size_t odcid_len;
    size_t len;
    char buf[QLOG_BUF];
    char rec[VEGA_QUIC_QLOG_RECORD_MAX];
};

static void flush(struct ep_qlog *q)
{
    if (q->fd < 0 || q->len == 0)
        return;
    size_t off = 0;
    while (off < q->len) {
        ssize_t n = write(q->fd, q->buf + off, q->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* a full disk: the trace ends here */
            q->stopped = true;
            break;
        }
        off += (size_t)n;
    }
    q->len = 0;
}

/* Appends a record when it fits within the limit (keeping room for the record that says the
 * trace was cut); else ends the trace with that record. */
static void append(struct ep_qlog *q, const char *rec, size_t n, uint64_t time)
{
    if (q->stopped)
        return;
    if (q->written + n + 512 > q->max) {
        vega_ssize t =
            vega_quic_qlog_write_truncated(q->rec, sizeof q->rec, time, q->start, q->max);
        q->stopped = true;
        if (t <= 0)
            return;
        rec = q->rec;
        n = (size_t)t;
    }
    if (q->len + n > sizeof q->buf)
        flush(q);
    if (q->len + n > sizeof q->buf)
        return; /* not open yet and the buffer is full: the record is lost */
    memcpy(q->buf + q->len, rec, n);
    q->len += n;
    q->written += n;
}

static void on_event(void *user, const struct vega_quic_qlog_event *ev)
{
    struct vega_quic_ep_conn *c = user;
    struct ep_qlog *q = c->qlog;
    if (!q || q->stopped)
        return;
    if (!q->have_start) {
        q->have_start = true;
        q->start = ev->time;
        q->server = ev->server;
        if (ev->type == VEGA_QUIC_QLOG_CONNECTION_STARTED && ev->odcid_len <= sizeof q->odcid) {
            memcpy(q->odcid, ev->odcid, ev->odcid_len);
            q->odcid_len = ev->odcid_len;
        }
        vega_ssize h = vega_quic_qlog_write_header(q->rec, sizeof q->rec, q->server, q->odcid,
                                                   q->odcid_len, vega__ep_wall_ms(), NULL);
        if (h > 0)
            append(q, q->rec, (size_t)h, ev->time);
    }
    vega_ssize n = vega_quic_qlog_write(q->rec, sizeof q->rec, ev, q->start);
    if (n > 0)
        append(q, q->rec, (size_t)n, ev->time);
    if (ev->type == VEGA_QUIC_QLOG_CONNECTION_STATE || ev->type == VEGA_QUIC_QLOG_CONNECTION_CLOSED)
        flush(q);
}

int vega__ep_qlog_new(struct vega_quic_ep_conn *c, vega_quic_opts *q)
{
    const struct vega_quic_endpoint *ep = c->ep;
    if (!ep->o.qlog_dir)
        return 0;
    struct ep_qlog *l = vega__mem_calloc(c->mem, 1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->fd = -1;
    l->max = ep->o.qlog_max_bytes ? ep->o.qlog_max_bytes : QLOG_DEFAULT;
    c->qlog = l;
    q->qlog = on_event;
    q->qlog_user = c;
    return 0;
}

void vega__ep_qlog_open(struct vega_quic_ep_conn *c)
{
    struct ep_qlog *q = c->qlog;
    if (!q || q->opened)
        return;
    q->opened = true;
    char name[4096], hex[2 * VEGA_QUIC_MAX_CID_LEN + 1];
    for (size_t i = 0; i < q->odcid_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", q->odcid[i]);
    hex[2 * q->odcid_len] = 0;
    int n = snprintf(name, sizeof name, "%s/%s_%s.sqlog", c->ep->o.qlog_dir, hex,
                     q->server ? "server" : "client");
    if (n < 0 || (size_t)n >= sizeof name || q->odcid_len == 0) {
        q->stopped = true;
        return;
    }
    q->fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (q->fd < 0) {
        q->stopped = true;
        return;
    }
    flush(q);
}

void vega__ep_qlog_close(struct vega_quic_ep_conn *c)
{
    struct ep_qlog *q = c->qlog;
    if (!q)
        return;
    flush(q);
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -1;
    q->stopped = true;
}

void vega__ep_qlog_free(struct vega_quic_ep_conn *c)
{
    if (!c->qlog)
        return;
    vega__ep_qlog_close(c);
    vega__mem_free(c->mem, c->qlog);
    c->qlog = NULL;
}
