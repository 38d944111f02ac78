/* SPDX-License-Identifier: MIT */
/* What an idle keep-alive connection costs the server: its struct, its socket and the socket's
 * park (the runtime watch inside it). The idle-memory benchmark (bench/run-http.sh -n) measures
 * the sum of their malloc chunks; these checks keep a change from growing them silently
 * (docs/BENCHMARKS.md, issue 16: at most 400 bytes per idle connection). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <sys/un.h>

#include "io_int.h"
#include "rt_int.h"
#include "server_int.h"
#include "vtest.h"

/* glibc's chunk for a malloc of n bytes on LP64: n plus the 8-byte size word, rounded up to 16,
 * at least 32. */
static size_t chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

#if UINTPTR_MAX == UINT64_MAX
/* The pieces (LP64). A task's operation and a receive watch share the op's bytes; a timer entry
 * wakes a task or calls a function, never both. */
_Static_assert(sizeof(struct vega__op) <= 64, "vega__op grew: every parked connection holds one");
_Static_assert(sizeof(struct vega__timer) <= 48,
               "vega__timer grew: every parked connection holds one");
_Static_assert(sizeof(struct vega__watch) <= 176,
               "vega__watch grew: every parked connection holds one");
_Static_assert(sizeof(struct vega_sock) <= 216, "vega_sock grew: every connection holds one");
_Static_assert(sizeof(struct srv_conn) <= 136, "srv_conn grew: every connection holds one");
#endif

VTEST(idle_connection_bytes)
{
    if (sizeof(void *) != 8)
        return;
    size_t total = chunk(sizeof(struct srv_conn)) + chunk(sizeof(struct vega_sock));
    printf("op %zu, timer %zu, watch %zu, sock %zu (chunk %zu), srv_conn %zu (chunk %zu): %zu",
           sizeof(struct vega__op), sizeof(struct vega__timer), sizeof(struct vega__watch),
           sizeof(struct vega_sock), chunk(sizeof(struct vega_sock)), sizeof(struct srv_conn),
           chunk(sizeof(struct srv_conn)), total);
    VCHECK(total <= 368);
}

/* The compact address gives back exactly what was stored, for every kind it keeps. */
static void roundtrip(const vega_addr *a)
{
    struct srv_addr sa = {0};
    VCHECK_EQ(vega__srv_addr_set(NULL, &sa, a), 0);
    vega_addr back;
    vega__srv_addr_get(&sa, &back);
    VCHECK_EQ(back.len, a->len);
    VCHECK(memcmp(&back.ss, &a->ss, a->len) == 0);
    vega__srv_addr_fini(NULL, &sa);
}

VTEST(addr_roundtrip)
{
    vega_addr a;
    VCHECK_EQ(vega_addr_from_ip(&a, "192.0.2.7", 8080), 0);
    roundtrip(&a);
    VCHECK_EQ(vega_addr_from_ip(&a, "2001:db8::1", 443), 0);
    ((struct sockaddr_in6 *)&a.ss)->sin6_scope_id = 3;
    roundtrip(&a);
    ((struct sockaddr_in6 *)&a.ss)->sin6_flowinfo = htonl(0x12345); /* kept on the heap */
    roundtrip(&a);
    VCHECK_EQ(vega_addr_from_unix(&a, "/run/vega/a-socket-path.sock"), 0); /* on the heap */
    roundtrip(&a);
    memset(&a, 0, sizeof a); /* an unnamed Unix socket: the family alone */
    a.ss.ss_family = AF_UNIX;
    a.len = sizeof(sa_family_t);
    roundtrip(&a);
    memset(&a, 0, sizeof a); /* none */
    roundtrip(&a);
}
