/* SPDX-License-Identifier: MIT */
/* HTTP-date formatting and parsing: IMF-fixdate, RFC 850 and asctime (RFC 9110 §5.6.7). */
#include <string.h>

#include <vega/http.h>

static const char wday_short[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const wday_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
static const char month_name[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned mp = m > 2 ? m - 3 : m + 9; /* March = 0 */
    unsigned doy = (153 * mp + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void put2(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
}

vega_ssize vega_http_date_format(int64_t t, char *out, size_t cap)
{
    /* 0001-01-01 and 9999-12-31T23:59:59 */
    if (t < -62135596800LL || t > 253402300799LL)
        return -EINVAL;
    if (cap < VEGA_HTTP_DATE_LEN + 1)
        return VEGA_ERR_NOBUF;
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    unsigned secs = (unsigned)(t - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    unsigned wd = (unsigned)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    memcpy(out, wday_short[wd], 3);
    memcpy(out + 3, ", ", 2);
    put2(out + 5, d);
    out[7] = ' ';
    memcpy(out + 8, month_name[m - 1], 3);
    out[11] = ' ';
    put2(out + 12, (unsigned)(y / 100));
    put2(out + 14, (unsigned)(y % 100));
    out[16] = ' ';
    put2(out + 17, secs / 3600);
    out[19] = ':';
    put2(out + 20, secs / 60 % 60);
    out[22] = ':';
    put2(out + 23, secs % 60);
    memcpy(out + 25, " GMT", 5); /* with the NUL */
    return VEGA_HTTP_DATE_LEN;
}

/* n digits at s into *v. */
static bool digits(const char *s, unsigned n, unsigned *v)
{
    *v = 0;
    for (unsigned i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (unsigned)(s[i] - '0');
    }
    return true;
}

static int month_of(const char *s)
{
    for (int i = 0; i < 12; i++)
        if (memcmp(s, month_name[i], 3) == 0)
            return i + 1;
    return 0;
}

/* "HH:MM:SS" */
static bool time_of_day(const char *s, unsigned *secs)
{
    unsigned h, mi, se;
    if (!digits(s, 2, &h) || s[2] != ':' || !digits(s + 3, 2, &mi) || s[5] != ':' ||
        !digits(s + 6, 2, &se))
        return false;
    if (h > 23 || mi > 59 || se > 60) /* 60: a leap second */
        return false;
    *secs = h * 3600 + mi * 60 + se;
    return true;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int finish(int64_t y, unsigned m, unsigned d, unsigned secs, int64_t *t)
{
    static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1] + (m == 2 && is_leap(y)))
        return VEGA_ERR_PROTO;
    *t = days_from_civil(y, m, d) * 86400 + secs;
    return 0;
}

int vega_http_date_parse(const char *s, size_t len, int64_t now, int64_t *t)
{
    unsigned d, y, secs;
    int m;
    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    if (len == 29 && s[3] == ',') {
        int wd = -1;
        for (int i = 0; i < 7; i++)
            if (memcmp(s, wday_short[i], 3) == 0)
                wd = i;
        if (wd < 0 || s[4] != ' ' || !digits(s + 5, 2, &d) || s[7] != ' ' ||
            !(m = month_of(s + 8)) || s[11] != ' ' || !digits(s + 12, 4, &y) || s[16] != ' ' ||
            !time_of_day(s + 17, &secs) || memcmp(s + 25, " GMT", 4) != 0)
            return VEGA_ERR_PROTO;
        return finish(y, (unsigned)m, d, secs, t);
    }
    /* asctime: "Sun Nov  6 08:49:37 1994" */
    if (len == 24 && s[3] == ' ') {
        int wd = -1;
        for (int i = 0; i < 7; i++)
            if (memcmp(s, wday_short[i], 3) == 0)
                wd = i;
        if (wd < 0 || !(m = month_of(s + 4)) || s[7] != ' ')
            return VEGA_ERR_PROTO;
        if (s[8] == ' ') {
            if (!digits(s + 9, 1, &d))
                return VEGA_ERR_PROTO;
        } else if (!digits(s + 8, 2, &d)) {
            return VEGA_ERR_PROTO;
        }
        if (s[10] != ' ' || !time_of_day(s + 11, &secs) || s[19] != ' ' || !digits(s + 20, 4, &y))
            return VEGA_ERR_PROTO;
        return finish(y, (unsigned)m, d, secs, t);
    }
    /* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
    for (int i = 0; i < 7; i++) {
        size_t wl = strlen(wday_long[i]);
        if (len != wl + 24 || memcmp(s, wday_long[i], wl) != 0)
            continue;
        const char *p = s + wl;
        unsigned yy;
        if (p[0] != ',' || p[1] != ' ' || !digits(p + 2, 2, &d) || p[4] != '-' ||
            !(m = month_of(p + 5)) || p[8] != '-' || !digits(p + 9, 2, &yy) || p[11] != ' ' ||
            !time_of_day(p + 12, &secs) || memcmp(p + 20, " GMT", 4) != 0)
            return VEGA_ERR_PROTO;
        /* §5.6.7: the year with these last two digits that is not > 50 years after now */
        int64_t ny, cy;
        unsigned nm, nd;
        int64_t nd_days = now >= 0 ? now / 86400 : -((-now + 86399) / 86400);
        civil_from_days(nd_days, &ny, &nm, &nd);
        cy = ny - ((ny % 100) + 100) % 100 + yy; /* same century as now */
        if (cy > ny + 50)
            cy -= 100;
        else if (cy <= ny - 50)
            cy += 100;
        return finish(cy, (unsigned)m, d, secs, t);
    }
    return VEGA_ERR_PROTO;
}
