/* SPDX-License-Identifier: MIT */
/* Accept-Encoding parsing with q-values and content-coding choice (RFC 9110 §12.4.2,
 * §12.5.3). */
#include <string.h>
#include <strings.h>

#include <vega/http.h>

static const char *const names[VEGA_HTTP_CODING_COUNT] = {"identity", "gzip", "br", "zstd",
                                                          "deflate"};

const char *vega_http_coding_name(vega_http_coding c)
{
    return (unsigned)c < VEGA_HTTP_CODING_COUNT ? names[c] : "";
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths. */
static bool qvalue(const char *s, size_t n, int *q)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return false;
    int v = (s[0] - '0') * 1000;
    if (n > 1) {
        if (s[1] != '.' || n > 5)
            return false;
        int scale = 100;
        for (size_t i = 2; i < n; i++, scale /= 10) {
            if (s[i] < '0' || s[i] > '9')
                return false;
            v += (s[i] - '0') * scale;
        }
    }
    if (v > 1000)
        return false;
    *q = v;
    return true;
}

static int coding_of(const char *s, size_t n)
{
    for (int c = 0; c < VEGA_HTTP_CODING_COUNT; c++)
        if (strlen(names[c]) == n && strncasecmp(s, names[c], n) == 0)
            return c;
    if (n == 6 && strncasecmp(s, "x-gzip", 6) == 0)
        return VEGA_HTTP_CODING_GZIP;
    return -1;
}

int vega_http_coding_choose(const char *accept, size_t len, const vega_http_coding *prefs,
                            size_t nprefs)
{
    int q[VEGA_HTTP_CODING_COUNT];
    int star = -1;
    for (int c = 0; c < VEGA_HTTP_CODING_COUNT; c++)
        q[c] = -1; /* not listed */
    if (!accept) {
        for (size_t i = 0; i < nprefs; i++)
            if ((unsigned)prefs[i] < VEGA_HTTP_CODING_COUNT)
                return (int)prefs[i];
        return -ENOENT;
    }
    size_t i = 0;
    while (i < len) {
        while (i < len && (is_ws(accept[i]) || accept[i] == ','))
            i++;
        if (i == len)
            break;
        size_t ns = i;
        while (i < len && !is_ws(accept[i]) && accept[i] != ',' && accept[i] != ';')
            i++;
        const char *name = accept + ns;
        size_t nl = i - ns;
        if (!(nl == 1 && name[0] == '*') && !vega_http_token_is_valid(name, nl))
            return VEGA_ERR_PROTO;
        int w = 1000;
        while (i < len && is_ws(accept[i]))
            i++;
        if (i < len && accept[i] == ';') { /* weight = OWS ";" OWS "q=" qvalue */
            i++;
            while (i < len && is_ws(accept[i]))
                i++;
            if (len - i < 2 || (accept[i] != 'q' && accept[i] != 'Q') || accept[i + 1] != '=')
                return VEGA_ERR_PROTO;
            i += 2;
            size_t qs = i;
            while (i < len && !is_ws(accept[i]) && accept[i] != ',')
                i++;
            if (!qvalue(accept + qs, i - qs, &w))
                return VEGA_ERR_PROTO;
            while (i < len && is_ws(accept[i]))
                i++;
        }
        if (i < len && accept[i] != ',')
            return VEGA_ERR_PROTO;
        if (nl == 1 && name[0] == '*') {
            star = w > star ? w : star;
        } else {
            int c = coding_of(name, nl);
            if (c >= 0 && w > q[c])
                q[c] = w; /* listed twice: the larger q wins */
        }
    }
    for (int c = 0; c < VEGA_HTTP_CODING_COUNT; c++) {
        if (q[c] >= 0)
            continue;
        if (star >= 0)
            q[c] = star;
        else
            q[c] = c == VEGA_HTTP_CODING_IDENTITY ? 1 : 0; /* identity: acceptable, lowest */
    }
    int best = -ENOENT, best_q = 0;
    for (size_t k = 0; k < nprefs; k++) {
        unsigned c = (unsigned)prefs[k];
        if (c < VEGA_HTTP_CODING_COUNT && q[c] > best_q) {
            best = (int)c;
            best_q = q[c];
        }
    }
    return best;
}
