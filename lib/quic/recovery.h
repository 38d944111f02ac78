/* SPDX-License-Identifier: MIT */
/*
 * QUIC loss detection and congestion control (RFC 9002), sans I/O: the sent-packet record per
 * packet number space, RTT estimation, ACK processing, time- and packet-threshold loss
 * detection, the PTO, persistent congestion, NewReno and CUBIC (RFC 9438) congestion
 * controllers, a pacer, and ECN validation (RFC 9000 §13.4.2). All times are nanoseconds on
 * the caller's monotonic clock; nothing here reads a clock.
 *
 * The connection owns what a packet carried: each sent packet holds an opaque `frames` pointer
 * that comes back through on_acked or on_lost exactly once (or through on_lost with
 * discarded=true when its space's keys are dropped).
 */
#ifndef VEGA_QUIC_RECOVERY_H
#define VEGA_QUIC_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/quic_wire.h>

#define VEGA__QUIC_NS_PER_MS 1000000ull
#define VEGA__QUIC_TIME_INF  UINT64_MAX

/* Packet number spaces (RFC 9000 §12.3). */
enum {
    VEGA__QUIC_SPACE_INITIAL = 0,
    VEGA__QUIC_SPACE_HANDSHAKE,
    VEGA__QUIC_SPACE_APP,
    VEGA__QUIC_NSPACES
};

/* RFC 9002 §6.1.1, §6.1.2, §6.2, §7.6 constants. */
#define VEGA__QUIC_PACKET_THRESHOLD      3
#define VEGA__QUIC_GRANULARITY_NS        (1 * VEGA__QUIC_NS_PER_MS)
#define VEGA__QUIC_INITIAL_RTT_NS        (333 * VEGA__QUIC_NS_PER_MS)
#define VEGA__QUIC_PERSISTENT_CONGESTION 3

/* ---- RTT (RFC 9002 §5) ----------------------------------------------------------------------- */

struct vega__quic_rtt {
    uint64_t latest, smoothed, var, min; /* ns */
    bool has_sample;
    uint64_t first_sample_time; /* when the first sample was taken (persistent congestion) */
};

/* Starts with smoothed = initial (0 = 333 ms), var = initial / 2, no sample. */
void vega__quic_rtt_init(struct vega__quic_rtt *r, uint64_t initial);

/* Takes a sample (§5.3): latest = now - time_sent of the largest newly acknowledged packet;
 * ack_delay (ns, already decoded with the peer's exponent) is capped at max_ack_delay once the
 * handshake is confirmed and only subtracted when it leaves at least min_rtt. */
void vega__quic_rtt_sample(struct vega__quic_rtt *r, uint64_t latest, uint64_t ack_delay,
                           uint64_t max_ack_delay, bool handshake_confirmed, uint64_t now);

/* The PTO period without backoff (§6.2.1): smoothed + max(4 * var, granularity) (+
 * max_ack_delay in the application space). */
uint64_t vega__quic_rtt_pto(const struct vega__quic_rtt *r, uint64_t max_ack_delay);

/* ---- congestion control (RFC 9002 §7, RFC 9438) ---------------------------------------------- */

typedef enum vega__quic_cc_algo {
    VEGA__QUIC_CC_NEWRENO = 0,
    VEGA__QUIC_CC_CUBIC,
} vega__quic_cc_algo;

struct vega__quic_cc {
    vega__quic_cc_algo algo;
    uint64_t max_datagram;   /* bytes; the window is kept in multiples of it for its floors */
    uint64_t cwnd, ssthresh; /* bytes; ssthresh UINT64_MAX = slow start */
    uint64_t in_flight;      /* bytes in flight (ack-eliciting or padded packets) */
    uint64_t recovery_start; /* congestion_recovery_start_time, valid when recovery is set */
    bool app_limited;        /* set by the connection when it had nothing to send */
    /* NewReno congestion avoidance: bytes acknowledged since the last cwnd increase. */
    uint64_t acked_bytes;
    /* CUBIC (RFC 9438 §4), in bytes and ns: W_max (after fast convergence), cwnd_prior (the
     * window before the last reduction), the epoch's start and its cwnd_epoch, W_est (the
     * Reno-friendly estimate) and K. */
    uint64_t w_max, w_last_max, epoch_start, cwnd_epoch_start, w_est, k_ns;
    /* Pacer (§7.7): a token bucket refilled at N * cwnd / smoothed_rtt, N = 1.25, holding at
     * most a burst of VEGA__QUIC_PACER_BURST_PKTS datagrams (about the initial window) or, when
     * that is more, a send quantum: 1 ms of that rate, up to VEGA__QUIC_PACER_QUANTUM_MAX. */
    uint64_t tokens, pacer_last;
    bool refill;      /* the tokens ran short: nothing leaves before a whole quantum is earned */
    bool recovery;    /* in a recovery period since recovery_start (a clock may start at 0) */
    bool cubic_epoch; /* a CUBIC congestion avoidance epoch runs (epoch_start is set) */
    /* CUBIC: remainders of the per-ACK W_est and cwnd increases, so that small ACKs still
     * add up instead of truncating to nothing. */
    uint64_t w_est_acc, cwnd_acc;
};

/* The largest window the controllers grow to (1 TiB: keeps every product in 64 bits). */
#define VEGA__QUIC_CC_MAX_CWND (1ull << 40)
/* The pacer's bucket (burst): 10 datagrams, or a send quantum of at most 64 KiB. RFC 9002
 * §7.7: "Senders SHOULD limit bursts to the initial congestion window" but "A sender with
 * knowledge that the network path to the receiver can absorb larger bursts MAY use a higher
 * limit": once 1 ms of the pacing rate is more than 10 datagrams (about 15 MB/s), a burst is
 * 1 ms of the rate, up to 64 KiB (reached at 64 MiB/s): the burst ngtcp2 (its send quantum),
 * BBR and Linux TCP (TSO autosizing) allow. */
#define VEGA__QUIC_PACER_BURST_PKTS  10
#define VEGA__QUIC_PACER_QUANTUM_MAX (64u * 1024)

/* Initial window: min(10 * max_datagram, max(14720, 2 * max_datagram)) (§7.2). max_datagram
 * 0 means 1200; it is clamped to 1200..65527. */
void vega__quic_cc_init(struct vega__quic_cc *cc, vega__quic_cc_algo algo, uint64_t max_datagram);

/* Bytes that may be sent now under the window (0 when cwnd <= in_flight). */
uint64_t vega__quic_cc_available(const struct vega__quic_cc *cc);

/* A packet of bytes in flight left at now: in_flight grows, the pacer's tokens shrink (to 0
 * at most: a probe sent ahead of the pacer leaves no debt). */
void vega__quic_cc_on_sent(struct vega__quic_cc *cc, uint64_t bytes, uint64_t now);

/* An in-flight packet sent at time_sent was acknowledged: its bytes leave in_flight and the
 * window grows (§7.3.1, §7.3.2; not while in recovery, i.e. time_sent <= recovery_start, nor
 * while app-limited, which also restarts CUBIC's epoch, RFC 9438 §5.8). */
void vega__quic_cc_on_acked(struct vega__quic_cc *cc, uint64_t bytes, uint64_t time_sent,
                            const struct vega__quic_rtt *rtt, uint64_t now);

/* In-flight packets were declared lost (their bytes leave in_flight first with
 * vega__quic_cc_on_removed), the latest of them sent at time_sent: one congestion event per
 * recovery period (§7.3.2; CUBIC's multiplicative decrease 0.7 and fast convergence). Also
 * used for an increase of the peer's ECN-CE count (§7.1). */
void vega__quic_cc_on_congestion(struct vega__quic_cc *cc, uint64_t time_sent, uint64_t now);

/* Persistent congestion (§7.6.2): cwnd to the minimum window (2 * max_datagram), the
 * recovery period ends (Appendix A.9); ssthresh stays, so slow start follows. */
void vega__quic_cc_on_persistent_congestion(struct vega__quic_cc *cc);

/* bytes leave in_flight without an ack (lost, or their space discarded). */
void vega__quic_cc_on_removed(struct vega__quic_cc *cc, uint64_t bytes);

/* Pacing: the earliest time a packet of bytes may leave (<= now: send now). Call
 * vega__quic_cc_on_sent when it does, which takes its tokens. Refills the bucket up to now;
 * once the tokens fall short, nothing leaves until a send quantum (or the packet, if larger)
 * has been earned, so a sender wakes and bursts once per quantum; the answer is never more than
 * one smoothed RTT ahead of now (the initial RTT before a sample; no pacing at all with a
 * smoothed RTT of 0). */
uint64_t vega__quic_cc_pace(struct vega__quic_cc *cc, uint64_t bytes,
                            const struct vega__quic_rtt *rtt, uint64_t now);

/* CUBIC's W_cubic(t) (RFC 9438 §4.2) of the current epoch in bytes, t in ns since the epoch
 * started: C * (t - K)^3 * max_datagram + W_max, clamped to 0..VEGA__QUIC_CC_MAX_CWND. Only
 * meaningful while cc->cubic_epoch (for tests and qlog). */
uint64_t vega__quic_cc_cubic_window(const struct vega__quic_cc *cc, uint64_t t);

/* ---- loss detection (RFC 9002 §6, Appendix A) ------------------------------------------------ */

/* One sent packet. */
struct vega__quic_sent {
    uint64_t pn;
    uint64_t time_sent;
    uint32_t bytes; /* the datagram share this packet took; counts in flight if in_flight */
    bool ack_eliciting;
    bool in_flight;  /* ack-eliciting or padding: counts for congestion control */
    bool ecn;        /* sent with ECT(0) */
    bool probe;      /* a PTO probe (for the connection's own bookkeeping) */
    bool pmtu_probe; /* a path MTU probe: its loss is no congestion signal (RFC 9000
                        §14.4), it only leaves in_flight */
    void *frames;    /* the connection's: what it carried */
};

struct vega__quic_recovery;

/* The callbacks run once the recovery state is consistent again; they must not call back
 * into recovery except for its read-only getters (a re-entrant on_sent, on_ack, on_timeout or
 * discard_space is refused: -EINVAL, -1, or nothing). */
struct vega__quic_recovery_cbs {
    void *ud;
    /* The packet's frames were acknowledged: drop them. */
    void (*on_acked)(void *ud, int space, struct vega__quic_sent *p);
    /* The packet was declared lost (discarded: its space's keys were dropped instead): queue
     * again what must be retransmitted, then drop the frames. */
    void (*on_lost)(void *ud, int space, struct vega__quic_sent *p, bool discarded);
};

/* Counters for the connection's stats and tests. lost: declared lost (not discarded);
 * spurious: declared lost, then acknowledged after all (tracked for the last 16 runs of lost
 * packet numbers per space); ecn_ce: the increase of the peer's ECN-CE counts. */
struct vega__quic_recovery_stats {
    uint64_t sent, acked, lost, pto_count_total, spurious, persistent_congestion, ecn_ce;
};

/*
 * Creates the recovery state for one connection path. algo, max_datagram: the congestion
 * controller's (see vega__quic_cc_init); initial_rtt: ns (0 = 333 ms); cbs: copied; mem:
 * the allocator (NULL = libc), borrowed for r's life.
 * Returns 0 or -ENOMEM.
 */
int vega__quic_recovery_new(struct vega__quic_recovery **out, vega__quic_cc_algo algo,
                            uint64_t max_datagram, uint64_t initial_rtt,
                            const struct vega__quic_recovery_cbs *cbs, const vega_quic_mem *mem);

/* Frees r, calling on_lost(discarded) for every packet still recorded. */
void vega__quic_recovery_free(struct vega__quic_recovery *r);

/* The peer's max_ack_delay (ns) from its transport parameters (default 25 ms). */
void vega__quic_recovery_set_max_ack_delay(struct vega__quic_recovery *r, uint64_t ns);

/* The handshake is confirmed (RFC 9001 §4.1.2): ack_delay caps apply and the application
 * space's PTO may be armed. It also means the peer validated our address (Appendix A.7). */
void vega__quic_recovery_set_handshake_confirmed(struct vega__quic_recovery *r);

/* Client only: whether the server has validated our address (§6.2.2.1: until then the client
 * arms the PTO even with nothing in flight, to unblock the anti-amplification limit). Server:
 * leave at the default (true). An ACK received in the Handshake space sets it too (Appendix
 * A.7's PeerCompletedAddressValidation); until then an ACK does not reset the PTO backoff. */
void vega__quic_recovery_set_peer_validated(struct vega__quic_recovery *r, bool validated);

/* Records a sent packet (copied; packet numbers must increase per space; an ack-eliciting
 * packet always counts in flight). Packet numbers the connection skips (optimistic-ACK
 * defence, RFC 9000 §21.4) are simply never recorded. Returns 0; -ENOMEM (also past
 * VEGA__QUIC_MAX_SENT packets recorded in the space); -EINVAL (a packet number
 * not above the last one or above 2^62 - 1, a discarded or unknown space, a call from a
 * callback). Nothing is recorded on error: the caller drops the frames itself. */
int vega__quic_recovery_on_sent(struct vega__quic_recovery *r, int space,
                                const struct vega__quic_sent *p);

/* Makes room for n more packets in space, so that recording them cannot run out of memory:
 * called before a packet is built, since a packet that goes out unrecorded would have its
 * acknowledgement taken for one of a packet never sent. Returns 0, -ENOMEM (also past
 * VEGA__QUIC_MAX_SENT), -EINVAL (an unknown space). */
int vega__quic_recovery_reserve(struct vega__quic_recovery *r, int space, size_t n);

/* Packets recorded per space at most (unacknowledged ones: 2^20, some 1.5 GB of data). */
#define VEGA__QUIC_MAX_SENT (1u << 20)

/*
 * Processes an ACK (or ACK_ECN) frame received in space at now. ack_delay_exponent: the
 * peer's. Calls on_acked for each newly acknowledged packet, takes an RTT sample when the
 * largest is newly acknowledged and at least one newly acknowledged packet is ack-eliciting
 * (ack_delay ignored in the Initial space), validates ECN counts when the ACK advances the
 * largest acknowledged (ecn_ce increases are congestion events), detects losses (on_lost,
 * called before the on_acked of the same ACK), resets the PTO count (once the peer validated
 * our address), re-arms the timer. An ACK that acknowledges nothing new changes nothing but
 * the largest acknowledged (Appendix A.7).
 * Returns 0; VEGA_ERR_PROTO with *wire_err PROTOCOL_VIOLATION (it acknowledges a packet number
 * never sent in this space, RFC 9000 §13.1) and nothing changed.
 *
 * What counts as "never sent": a packet number above the largest sent in the space (or any,
 * when nothing was sent there). Acknowledgements of numbers below it that are not recorded (a
 * number the connection skipped, or one already acknowledged, declared lost or discarded) are
 * ignored: recovery cannot tell a skipped number from a forgotten one, so the optimistic-ACK
 * check for skipped numbers is the connection's (it knows which it skipped).
 *
 * ack: a decoded frame (gaps walked with vega_quic_ack_iter), or one filled by hand with a
 * ranges list (descending, disjoint, not adjacent; largest/first_range/gaps then ignored; a
 * malformed list is VEGA_ERR_PROTO with FRAME_ENCODING_ERROR). This form cannot tell ACK from
 * ACK_ECN, so it takes ECN counts as present when one is non-zero; prefer
 * vega__quic_recovery_on_ack_frame, which knows the frame type. A discarded space's ACKs are
 * ignored (0). Refused from a callback (-EINVAL).
 */
int vega__quic_recovery_on_ack(struct vega__quic_recovery *r, int space,
                               const vega_quic_frame_ack *ack, uint64_t ack_delay_exponent,
                               uint64_t now, uint64_t *wire_err);

/* vega__quic_recovery_on_ack for a decoded frame f of type ACK or ACK_ECN (any other type is
 * -EINVAL): ECN counts are present exactly when it is ACK_ECN (RFC 9000
 * §13.4.2.1: an ACK without counts that newly acknowledges ECT(0) packets fails validation). */
int vega__quic_recovery_on_ack_frame(struct vega__quic_recovery *r, int space,
                                     const vega_quic_frame *f, uint64_t ack_delay_exponent,
                                     uint64_t now, uint64_t *wire_err);

/* The loss detection timer (time threshold or PTO; §6.2.1 and Appendix A.8):
 * VEGA__QUIC_TIME_INF when not armed. Computed from the state on each call (cheap: three
 * spaces). The client's anti-deadlock PTO (nothing in flight, peer not validated) counts from
 * the last time the timer was re-armed, i.e. the `now` of the latest on_sent (in flight),
 * on_ack or on_timeout, as SetLossDetectionTimer() would have. */
uint64_t vega__quic_recovery_timer(const struct vega__quic_recovery *r);

/* Client: it has Handshake keys now (a client with nothing in flight and an unvalidated peer
 * arms its PTO for, and probes at, Handshake once it has those keys, else Initial;
 * Appendix A.8). */
void vega__quic_recovery_set_has_handshake_keys(struct vega__quic_recovery *r);

/*
 * The timer fired (call when now >= vega__quic_recovery_timer). Declares time-threshold
 * losses (on_lost) or, for a PTO, increments the backoff and returns the space that must send
 * probes: the connection then sends one or two ack-eliciting packets there (new data, a
 * retransmission, or a PING) ahead of the congestion window.
 * Returns -1 (losses declared or nothing to do) or the probe space (>= 0).
 */
int vega__quic_recovery_on_timeout(struct vega__quic_recovery *r, uint64_t now);

/* Drops a space (its keys were discarded, RFC 9002 §6.4): every packet of it leaves in_flight
 * and goes to on_lost(discarded = true); its timers reset, as does the PTO backoff (Appendix
 * A.11). Later on_sent in it fail, its ACKs are ignored. Meant for Initial and Handshake; the
 * application space may be dropped the same way (closing). */
void vega__quic_recovery_discard_space(struct vega__quic_recovery *r, int space);

/* As discard_space, but the space stays usable (a client after a Retry, RFC 9000 §17.2.5.2:
 * the Initial packets sent so far are forgotten and their data goes again under new keys). */
void vega__quic_recovery_reset_space(struct vega__quic_recovery *r, int space);

/* The largest packet number the peer acknowledged in space (-1: none), for packet number
 * encoding. */
int64_t vega__quic_recovery_largest_acked(const struct vega__quic_recovery *r, int space);

/* Bytes in flight in space (0: nothing to wait for). */
uint64_t vega__quic_recovery_in_flight(const struct vega__quic_recovery *r, int space);

/* Ack-eliciting packets in flight in space (what the PTO waits for). */
uint64_t vega__quic_recovery_ack_eliciting_in_flight(const struct vega__quic_recovery *r,
                                                     int space);

/* Packets recorded in space: sent, neither acknowledged, lost nor discarded. */
size_t vega__quic_recovery_outstanding(const struct vega__quic_recovery *r, int space);

/* Server: it is blocked by the anti-amplification limit (RFC 9000 §8.1), so the PTO timer is
 * not armed (Appendix A.8: nothing could be sent); time-threshold loss still is. */
void vega__quic_recovery_set_amplification_blocked(struct vega__quic_recovery *r, bool blocked);

/* Bytes of memory r holds: the records shrink back as packets leave; the scratch space for
 * one ACK's packets stays as large as the largest record was. */
size_t vega__quic_recovery_mem(const struct vega__quic_recovery *r);

/* Checks the internal invariants (packet numbers ascending, counts, bytes in flight per space
 * adding up to the controller's, at most two acknowledged or lost records left in the middle
 * of a space's record). For tests and fuzzing: O(packets). */
bool vega__quic_recovery_check(const struct vega__quic_recovery *r);

/* The congestion controller and RTT estimate (read-only for the connection, except
 * cc->app_limited). */
struct vega__quic_cc *vega__quic_recovery_cc(struct vega__quic_recovery *r);
const struct vega__quic_rtt *vega__quic_recovery_rtt(const struct vega__quic_recovery *r);
unsigned vega__quic_recovery_pto_count(const struct vega__quic_recovery *r);
const struct vega__quic_recovery_stats *
vega__quic_recovery_stats(const struct vega__quic_recovery *r);

/* Whether ECN is still in use on this path: it turns false when validation fails (ACKs that
 * do not count our ECT(0) marks, or counts that decrease, RFC 9000 §13.4.2.1); the
 * connection then stops marking. */
bool vega__quic_recovery_ecn_ok(const struct vega__quic_recovery *r);

#endif
