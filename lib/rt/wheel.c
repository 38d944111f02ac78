/* SPDX-License-Identifier: MIT */
/* Hierarchical timer wheel: 6 levels of 64 slots, 1 ms resolution (about 2.2 years of range).
 * Entries are embedded in the waiting tasks, so arming a deadline allocates nothing. */
#include "sched_int.h"

#define SLOT_BITS 6u
#define SLOTS     64u
#define MAX_MS    ((1ull << (SLOT_BITS * VEGA__WHEEL_LEVELS)) - 1)

static inline struct vega__wheel *timer_wheel(struct vega__timer *t)
{
    return __atomic_load_n(&t->wheel, __ATOMIC_ACQUIRE);
}

static unsigned level_for(uint64_t elapsed, uint64_t when)
{
    uint64_t masked = (elapsed ^ when) | (SLOTS - 1);
    if (masked >= MAX_MS)
        masked = MAX_MS - 1;
    unsigned significant = 63u - (unsigned)__builtin_clzll(masked);
    return significant / SLOT_BITS;
}

static void link_entry(struct vega__wheel *wh, struct vega__timer *t)
{
    uint64_t when = t->when_ms;
    if (when < wh->elapsed)
        when = wh->elapsed; /* already due: fire at the next advance, never a lap late */
    if (when - wh->elapsed > MAX_MS)
        when = wh->elapsed + MAX_MS; /* beyond the range: re-armed when it comes round */
    unsigned level = level_for(wh->elapsed, when);
    unsigned slot = (unsigned)(when >> (level * SLOT_BITS)) & (SLOTS - 1);
    t->level = (uint8_t)level;
    t->slot = (uint8_t)slot;
    struct vega__timer **head = &wh->slots[level][slot];
    t->prev = NULL;
    t->next = *head;
    if (*head)
        (*head)->prev = t;
    *head = t;
    wh->occupied[level] |= 1ull << slot;
}

static void unlink_entry(struct vega__wheel *wh, struct vega__timer *t)
{
    struct vega__timer **head = &wh->slots[t->level][t->slot];
    if (t->prev)
        t->prev->next = t->next;
    else
        *head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (!*head)
        wh->occupied[t->level] &= ~(1ull << t->slot);
    t->next = t->prev = NULL;
}

/* Earliest slot deadline at or after elapsed; UINT64_MAX if empty. Sets *lvl and *slt. */
static uint64_t next_expiration(struct vega__wheel *wh, unsigned *lvl, unsigned *slt)
{
    for (unsigned level = 0; level < VEGA__WHEEL_LEVELS; level++) {
        uint64_t occ = wh->occupied[level];
        if (!occ)
            continue;
        uint64_t slot_range = 1ull << (level * SLOT_BITS);
        uint64_t level_range = slot_range << SLOT_BITS;
        unsigned now_slot = (unsigned)(wh->elapsed >> (level * SLOT_BITS)) & (SLOTS - 1);
        uint64_t rot = now_slot ? (occ >> now_slot) | (occ << (64 - now_slot)) : occ;
        unsigned slot = (now_slot + (unsigned)__builtin_ctzll(rot)) & (SLOTS - 1);
        uint64_t level_start = wh->elapsed & ~(level_range - 1);
        uint64_t deadline = level_start + slot * slot_range;
        if (deadline < wh->elapsed && level > 0)
            deadline += level_range;
        if (deadline < wh->elapsed)
            deadline = wh->elapsed;
        *lvl = level;
        *slt = slot;
        return deadline;
    }
    return UINT64_MAX;
}

static void update_next(struct vega__wheel *wh)
{
    unsigned l = 0, s = 0;
    uint64_t n = wh->count ? next_expiration(wh, &l, &s) : UINT64_MAX;
    atomic_store_explicit(&wh->next_ms, n, memory_order_relaxed);
}

void vega__wheel_init(struct vega__wheel *wh, uint64_t now_ms)
{
    vega__spin_init(&wh->lock);
    wh->elapsed = now_ms;
    wh->count = 0;
    for (unsigned l = 0; l < VEGA__WHEEL_LEVELS; l++) {
        wh->occupied[l] = 0;
        for (unsigned s = 0; s < SLOTS; s++)
            wh->slots[l][s] = NULL;
    }
    atomic_init(&wh->next_ms, UINT64_MAX);
}

void vega__wheel_insert(struct vega__wheel *wh, struct vega__timer *t, uint64_t when_ms)
{
    vega__spin_lock(&wh->lock);
    t->when_ms = when_ms;
    t->fired = false;
    link_entry(wh, t);
    wh->count++;
    __atomic_store_n(&t->wheel, wh, __ATOMIC_RELEASE);
    uint64_t cur = atomic_load_explicit(&wh->next_ms, memory_order_relaxed);
    uint64_t eff = when_ms < wh->elapsed ? wh->elapsed : when_ms;
    if (eff < cur)
        update_next(wh);
    vega__spin_unlock(&wh->lock);
}

void vega__wheel_remove(struct vega__timer *t)
{
    struct vega__wheel *wh = timer_wheel(t);
    if (!wh)
        return;
    vega__spin_lock(&wh->lock);
    if (t->wheel == wh) {
        unlink_entry(wh, t);
        wh->count--;
        __atomic_store_n(&t->wheel, NULL, __ATOMIC_RELEASE);
        if (!wh->count)
            atomic_store_explicit(&wh->next_ms, UINT64_MAX, memory_order_relaxed);
    }
    vega__spin_unlock(&wh->lock);
}

size_t vega__wheel_advance(struct vega__wheel *wh, uint64_t now_ms)
{
    if (atomic_load_explicit(&wh->next_ms, memory_order_relaxed) > now_ms) {
        /* Nothing due. elapsed may lag; it only matters for placement, which stays correct
         * because placement is relative to elapsed and expirations are computed from it. */
        return 0;
    }
    size_t fired = 0;
    vega__spin_lock(&wh->lock);
    for (;;) {
        unsigned level = 0, slot = 0;
        uint64_t d = wh->count ? next_expiration(wh, &level, &slot) : UINT64_MAX;
        if (d > now_ms)
            break;
        if (d > wh->elapsed)
            wh->elapsed = d;
        struct vega__timer *list = wh->slots[level][slot];
        wh->slots[level][slot] = NULL;
        wh->occupied[level] &= ~(1ull << slot);
        while (list) {
            struct vega__timer *t = list;
            list = t->next;
            t->next = t->prev = NULL;
            if (t->when_ms <= now_ms) {
                wh->count--;
                fired++;
                bool call = t->call;
                struct vega_task *task = call ? NULL : t->task;
                t->fired = true;
                /* A task's entry lives in its park frame, and a task woken by something else
                 * that finds wheel NULL does not take our lock: it may return and reuse that
                 * stack at once. So nothing of t is read after the store (TSan saw the read of
                 * t->task race with the stack's next use); a wake of a task that has moved on
                 * is merely spurious (type-stable task memory). */
                __atomic_store_n(&t->wheel, NULL, __ATOMIC_RELEASE);
                if (!call)
                    vega__task_wake(task);
                else
                    t->fire(t); /* a watch's entry: not on a task's stack */
            } else {
                link_entry(wh, t); /* cascade to a finer level */
            }
        }
    }
    if (now_ms > wh->elapsed)
        wh->elapsed = now_ms;
    update_next(wh);
    vega__spin_unlock(&wh->lock);
    return fired;
}

uint64_t vega__wheel_next(struct vega__wheel *wh)
{
    return atomic_load_explicit(&wh->next_ms, memory_order_relaxed);
}
