/* SPDX-License-Identifier: MIT */
/* Base64 and base64url (RFC 4648): the §10 test vectors both ways, both alphabets, padding
 * optional or refused, blanks, the strictness rules and the output bounds. */
#include <string.h>

#include <vega/base64.h>

#include "vtest.h"

static const struct {
    const char *raw, *b64, *nopad;
} rfc[] = {
    /* RFC 4648 §10 */
    {"", "", ""},
    {"f", "Zg==", "Zg"},
    {"fo", "Zm8=", "Zm8"},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg==", "Zm9vYg"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

VTEST(rfc4648_vectors)
{
    for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
        char enc[16];
        uint8_t dec[16];
        size_t rl = strlen(rfc[i].raw), bl = strlen(rfc[i].b64), nl = strlen(rfc[i].nopad);
        VCHECK_EQ(vega_base64_encoded_len(rl, 0), bl);
        VCHECK_EQ(vega_base64_encoded_len(rl, VEGA_BASE64_NOPAD), nl);
        VCHECK_EQ(vega_base64_encode(rfc[i].raw, rl, enc, sizeof enc, 0), (vega_ssize)bl);
        VCHECK(memcmp(enc, rfc[i].b64, bl) == 0);
        VCHECK_EQ(vega_base64_encode(rfc[i].raw, rl, enc, sizeof enc, VEGA_BASE64_NOPAD),
                  (vega_ssize)nl);
        VCHECK(memcmp(enc, rfc[i].nopad, nl) == 0);
        VCHECK_EQ(vega_base64_decode(rfc[i].b64, bl, dec, sizeof dec, 0), (vega_ssize)rl);
        VCHECK(memcmp(dec, rfc[i].raw, rl) == 0);
        /* without padding: refused by default, taken with NOPAD (padded input too) */
        VCHECK_EQ(vega_base64_decode(rfc[i].nopad, nl, dec, sizeof dec, VEGA_BASE64_NOPAD),
                  (vega_ssize)rl);
        VCHECK(memcmp(dec, rfc[i].raw, rl) == 0);
        VCHECK_EQ(vega_base64_decode(rfc[i].b64, bl, dec, sizeof dec, VEGA_BASE64_NOPAD),
                  (vega_ssize)rl);
        if (nl != bl)
            VCHECK_EQ(vega_base64_decode(rfc[i].nopad, nl, dec, sizeof dec, 0), -EINVAL);
    }
}

/* The two alphabets differ in 62 and 63 only: 0xfb 0xff -> "+/8" and "-_8". */
VTEST(url_alphabet)
{
    const uint8_t raw[] = {0xfb, 0xff};
    char enc[8];
    uint8_t dec[8];
    VCHECK_EQ(vega_base64_encode(raw, 2, enc, sizeof enc, 0), 4);
    VCHECK(memcmp(enc, "+/8=", 4) == 0);
    VCHECK_EQ(vega_base64_encode(raw, 2, enc, sizeof enc, VEGA_BASE64_URL | VEGA_BASE64_NOPAD), 3);
    VCHECK(memcmp(enc, "-_8", 3) == 0);
    VCHECK_EQ(vega_base64_decode("-_8", 3, dec, sizeof dec, VEGA_BASE64_URL | VEGA_BASE64_NOPAD),
              2);
    VCHECK(memcmp(dec, raw, 2) == 0);
    /* each alphabet refuses the other's two characters */
    VCHECK_EQ(vega_base64_decode("-_8=", 4, dec, sizeof dec, 0), -EINVAL);
    VCHECK_EQ(vega_base64_decode("+/8=", 4, dec, sizeof dec, VEGA_BASE64_URL), -EINVAL);
}

VTEST(strict_forms_refused)
{
    uint8_t dec[16];
    static const char *bad[] = {
        "Z",        /* one character: 6 bits, no byte */
        "Zm9vY",    /* the same at the end of a longer input */
        "Z===",     /* '=' after one character */
        "====",     /* '=' alone */
        "Zg=",      /* padding cut short */
        "Zg==Zg==", /* data after padding */
        "Zm=v",     /* '=' inside a group */
        "Zm9v\n",   /* a blank without VEGA_BASE64_SPACE */
        "Zm9*",     /* outside the alphabet */
        "Zm9v\0",   /* NUL */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i]);
        if (i == sizeof bad / sizeof bad[0] - 1)
            n = 5;
        VCHECK_EQ(vega_base64_decode(bad[i], n, dec, sizeof dec, 0), -EINVAL);
        VCHECK_EQ(vega_base64_decode(bad[i], n, dec, sizeof dec, VEGA_BASE64_NOPAD), -EINVAL);
    }
    VCHECK_EQ(vega_base64_decode("Zg", 2, dec, sizeof dec, 0x80), -EINVAL);
    VCHECK_EQ(vega_base64_encode("f", 1, (char *)dec, sizeof dec, 0x80), -EINVAL);
}

/* PEM's line breaks and indentation are skipped only when asked. */
VTEST(blanks)
{
    static const char pem[] = " Zm9v\r\nYmFy\n\tZm9v Yg==\n";
    uint8_t dec[16];
    VCHECK_EQ(vega_base64_decode(pem, sizeof pem - 1, dec, sizeof dec, VEGA_BASE64_SPACE), 10);
    VCHECK(memcmp(dec, "foobarfoob", 10) == 0);
    VCHECK_EQ(vega_base64_decode(pem, sizeof pem - 1, dec, sizeof dec, 0), -EINVAL);
}

/* Output bounds: exactly enough room works, one byte less is VEGA_ERR_NOBUF, and nothing is
 * written past cap (the guard bytes stay). */
VTEST(bounds)
{
    char enc[12];
    uint8_t dec[12];
    memset(enc, '#', sizeof enc);
    VCHECK_EQ(vega_base64_encode("foobar", 6, enc, 7, 0), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_base64_encode("foobar", 6, enc, 8, 0), 8);
    VCHECK_EQ(enc[8], '#');
    VCHECK_EQ(vega_base64_encode("fooba", 5, enc, 7, VEGA_BASE64_NOPAD), 7);
    memset(dec, '#', sizeof dec);
    VCHECK_EQ(vega_base64_decode("Zm9vYmFy", 8, dec, 5, 0), VEGA_ERR_NOBUF);
    VCHECK_EQ(dec[5], '#');
    VCHECK_EQ(vega_base64_decode("Zm9vYmE=", 8, dec, 4, 0), VEGA_ERR_NOBUF);
    VCHECK_EQ(dec[4], '#');
    VCHECK_EQ(vega_base64_decode("Zm9vYmE=", 8, dec, 5, 0), 5);
    VCHECK_EQ(dec[5], '#');
    VCHECK_EQ(vega_base64_decode("", 0, NULL, 0, 0), 0);
    VCHECK_EQ(vega_base64_encode(NULL, 0, NULL, 0, 0), 0);
    VCHECK_EQ(vega_base64_encoded_len(SIZE_MAX, 0), SIZE_MAX);
}

/* Every length from 0 to 200 of every byte value round-trips in all four forms. */
VTEST(round_trip)
{
    uint8_t raw[200], dec[200];
    char enc[272];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (uint8_t)(i * 151 + 7);
    for (unsigned f = 0; f < 4; f++)
        for (size_t n = 0; n <= sizeof raw; n++) {
            vega_ssize e = vega_base64_encode(raw, n, enc, sizeof enc, f);
            VCHECK_EQ(e, (vega_ssize)vega_base64_encoded_len(n, f));
            VCHECK_EQ(vega_base64_decode(enc, (size_t)e, dec, sizeof dec, f), (vega_ssize)n);
            VCHECK(memcmp(dec, raw, n) == 0);
        }
}
