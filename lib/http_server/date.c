/* SPDX-License-Identifier: MIT */
/* The Date field (RFC 9110 §6.6.1), formatted once per second per thread. */
#include <time.h>

#include "server_int.h"

static _Thread_local struct {
    int64_t sec;
    char line[SRV_DATE_LINE_LEN + 1];
} date_cache = {.sec = -1};

const char *vega__srv_date_line(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (vega__unlikely(ts.tv_sec != date_cache.sec)) {
        memcpy(date_cache.line, "Date: ", 6);
        if (vega_http_date_format(ts.tv_sec, date_cache.line + 6, VEGA_HTTP_DATE_LEN + 1) < 0)
            memcpy(date_cache.line + 6, "Thu, 01 Jan 1970 00:00:00 GMT", VEGA_HTTP_DATE_LEN);
        memcpy(date_cache.line + 6 + VEGA_HTTP_DATE_LEN, "\r\n", 3);
        date_cache.sec = ts.tv_sec;
    }
    return date_cache.line;
}
