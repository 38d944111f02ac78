/* SPDX-License-Identifier: MIT */
/* Names for the frames the raw peer (h2_test.h) builds by hand, RFC 9113 §6: the frame types
 * and flags, and the WINDOW_UPDATE and SETTINGS frames the conformance tests send. */
#ifndef VEGA_TEST_H2_RAW_FRAMES_H
#define VEGA_TEST_H2_RAW_FRAMES_H

#include "h2_test.h"

enum {
    DATA,
    HEADERS,
    PRIORITY,
    RST,
    SETTINGS,
    PUSH,
    PING,
    GOAWAY,
    WINDOW,
    CONT
};
enum {
    ACK = 1,
    END_STREAM = 1,
    END_HEADERS = 4,
    PADDED = 8,
    PRIO = 0x20
};

static inline void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* WINDOW_UPDATE of inc on sid (0: the connection's window). */
static inline int window(struct raw *r, uint32_t sid, uint32_t inc)
{
    uint8_t p[4];
    be32(p, inc);
    return raw_frame(r, WINDOW, 0, sid, p, 4);
}

/* SETTINGS with the one parameter id = v. */
static inline int setting(struct raw *r, uint16_t id, uint32_t v)
{
    uint8_t p[6] = {(uint8_t)(id >> 8), (uint8_t)id};
    be32(p + 2, v);
    return raw_frame(r, SETTINGS, 0, 0, p, 6);
}

#endif
