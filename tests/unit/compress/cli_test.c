/* SPDX-License-Identifier: MIT */
/* Interoperability with the reference tools: streams made by gzip, zstd and brotli decode with
 * libvega, and libvega's streams decode with them. A case whose tool is missing is skipped. */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vega/compress.h>

#include "base.h"
#include "vtest.h"

static char dir[256];

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* Makes the temporary directory (removed at exit); skips unless tool is installed. */
static void setup(const char *tool)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    if (system(cmd) != 0) {
        char why[200];
        snprintf(why, sizeof why, "%s is not installed", tool);
        vtest_skip(why);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vega-compress-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    VCHECK(mkdtemp(dir) != NULL);
    atexit(cleanup);
}

/* Runs a shell command built from fmt; returns its exit status. */
__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void write_file(const char *name, const uint8_t *p, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    VCHECK(f);
    VCHECK(len == 0 || fwrite(p, 1, len, f) == len);
    VCHECK(fclose(f) == 0);
}

static uint8_t *read_file(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    VCHECK(f);
    size_t cap = 1 << 16, n = 0;
    uint8_t *p = malloc(cap);
    for (;;) {
        if (n == cap)
            p = realloc(p, cap *= 2);
        size_t k = fread(p + n, 1, cap - n, f);
        if (k == 0)
            break;
        n += k;
    }
    fclose(f);
    *len = n;
    return p;
}

/* The test body: text, then random bytes (so that every block type shows up). */
static uint8_t *body(size_t *len)
{
    static const char *const words[] = {"lorem", "ipsum",       "dolor",      "sit",
                                        "amet",  "consectetur", "adipiscing", "elit",
                                        "sed",   "do",          "eiusmod",    "tempor"};
    size_t text = 300000, rnd = 65536;
    uint8_t *p = malloc(text + rnd);
    uint64_t s = 42;
    size_t i = 0;
    while (i < text) {
        const char *w = words[vega__rand_below(&s, VEGA__ARRAY_LEN(words))];
        for (; *w && i < text; w++)
            p[i++] = (uint8_t)*w;
        if (i < text)
            p[i++] = vega__rand_below(&s, 10) ? ' ' : '\n';
    }
    for (size_t j = 0; j < rnd; j++)
        p[text + j] = (uint8_t)vega__rand_next(&s);
    *len = text + rnd;
    return p;
}

/* Decodes a file with tiny chunks and output buffers; checks it equals want. */
static void check_decodes(vega_compress_kind k, const char *name, const uint8_t *want,
                          size_t want_len)
{
    size_t zl;
    uint8_t *z = read_file(name, &zl);
    vega_decompressor *d;
    VCHECK_EQ(vega_decompressor_new(&d, k, 0, NULL), 0);
    uint8_t *out = malloc(want_len + 1);
    size_t made = 0, pos = 0;
    uint64_t rng = 7;
    for (;;) {
        size_t chunk = 1 + vega__rand_below(&rng, 600);
        chunk = VEGA__MIN(chunk, zl - pos);
        vega_compress_flush fl =
            pos + chunk == zl ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t cap = 1 + vega__rand_below(&rng, 4000), took;
            cap = VEGA__MIN(cap, want_len + 1 - made);
            vega_ssize n =
                vega_decompressor_write(d, z + pos + off, chunk - off, &took, out + made, cap, fl);
            if (n < 0)
                vtest_fail(__FILE__, __LINE__, "%s: %s", name, vega_err_name((int)n));
            made += (size_t)n;
            off += took;
            if ((size_t)n < cap)
                break;
        }
        pos += chunk;
        if (pos == zl)
            break;
    }
    VCHECK(vega_decompressor_is_done(d));
    VCHECK_EQ(made, want_len);
    VCHECK(want_len == 0 || memcmp(out, want, want_len) == 0);
    vega_decompressor_free(d);
    free(out);
    free(z);
}

/* Compresses want with libvega (level, with a SYNC flush every sync_every bytes if nonzero)
 * into a file. */
static void write_ours(vega_compress_kind k, int level, const char *name, const uint8_t *in,
                       size_t len, size_t sync_every)
{
    vega_compressor *c;
    VCHECK_EQ(vega_compressor_new(&c, k, level, NULL), 0);
    size_t cap = len + len / 4 + 4096, made = 0, pos = 0;
    uint8_t *out = malloc(cap);
    do {
        size_t chunk = sync_every ? VEGA__MIN(sync_every, len - pos) : len - pos;
        vega_compress_flush fl =
            pos + chunk == len ? VEGA_COMPRESS_FLUSH_FINISH
                               : (sync_every ? VEGA_COMPRESS_FLUSH_SYNC : VEGA_COMPRESS_FLUSH_NONE);
        size_t took;
        vega_ssize n = vega_compressor_write(c, in + pos, chunk, &took, out + made, cap - made, fl);
        VCHECK(n >= 0 && (size_t)n < cap - made && took == chunk);
        made += (size_t)n;
        pos += chunk;
    } while (!vega_compressor_is_done(c));
    write_file(name, out, made);
    free(out);
    vega_compressor_free(c);
}

static void check_file_equals(const char *name, const uint8_t *want, size_t want_len)
{
    size_t n;
    uint8_t *p = read_file(name, &n);
    VCHECK_EQ(n, want_len);
    VCHECK(n == 0 || memcmp(p, want, n) == 0);
    free(p);
}

/* ---- gzip ---------------------------------------------------------------------------------- */

VTEST(gzip_cli_to_vega)
{
    setup("gzip");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_file("empty", (const uint8_t *)"", 0);
    VCHECK_EQ(sh("gzip -c -n -1 '%s/in' > '%s/in1.gz'", dir, dir), 0);
    VCHECK_EQ(sh("gzip -c -n -9 '%s/in' > '%s/in9.gz'", dir, dir), 0);
    /* Without -n the header carries FNAME and MTIME. */
    VCHECK_EQ(sh("gzip -c '%s/in' > '%s/named.gz'", dir, dir), 0);
    VCHECK_EQ(sh("gzip -c -n '%s/empty' > '%s/empty.gz'", dir, dir), 0);
    check_decodes(VEGA_COMPRESS_GZIP, "in1.gz", b, len);
    check_decodes(VEGA_COMPRESS_GZIP, "in9.gz", b, len);
    check_decodes(VEGA_COMPRESS_GZIP, "named.gz", b, len);
    check_decodes(VEGA_COMPRESS_GZIP, "empty.gz", (const uint8_t *)"", 0);
    /* Several members in one file (RFC 1952 section 2.2), as `cat a.gz b.gz` makes. */
    VCHECK_EQ(sh("cd '%s' && head -c 1000 in > a && tail -c 5000 in > c && "
                 "gzip -c -n a > multi.gz && gzip -c -n empty >> multi.gz && "
                 "gzip -c -n c >> multi.gz",
                 dir),
              0);
    uint8_t *want = malloc(6000);
    memcpy(want, b, 1000);
    memcpy(want + 1000, b + len - 5000, 5000);
    check_decodes(VEGA_COMPRESS_GZIP, "multi.gz", want, 6000);
    free(want);
    /* Raw deflate: the gzip body without its 10-byte header and 8-byte trailer, as some
     * servers send for "deflate". */
    VCHECK_EQ(sh("cd '%s' && tail -c +11 in9.gz | head -c -8 > in9.raw", dir), 0);
    check_decodes(VEGA_COMPRESS_DEFLATE, "in9.raw", b, len);
    free(b);
}

VTEST(vega_to_gzip_cli)
{
    setup("gzip");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_ours(VEGA_COMPRESS_GZIP, 1, "l1.gz", b, len, 0);
    write_ours(VEGA_COMPRESS_GZIP, VEGA_COMPRESS_LEVEL_DEFAULT, "l6.gz", b, len, 0);
    write_ours(VEGA_COMPRESS_GZIP, 9, "l9.gz", b, len, 0);
    write_ours(VEGA_COMPRESS_GZIP, 6, "sync.gz", b, len, 777);
    write_ours(VEGA_COMPRESS_GZIP, 0, "stored.gz", b, len, 0);
    write_ours(VEGA_COMPRESS_GZIP, 6, "empty.gz", (const uint8_t *)"", 0, 0);
    const char *names[] = {"l1", "l6", "l9", "sync", "stored"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++) {
        VCHECK_EQ(sh("cd '%s' && gzip -t %s.gz && gzip -dc %s.gz > %s.out", dir, names[i], names[i],
                     names[i]),
                  0);
        char out[64];
        snprintf(out, sizeof out, "%s.out", names[i]);
        check_file_equals(out, b, len);
    }
    VCHECK_EQ(sh("cd '%s' && gzip -dc empty.gz > empty.out", dir), 0);
    check_file_equals("empty.out", (const uint8_t *)"", 0);
    free(b);
}

/* ---- deflate (zlib) ------------------------------------------------------------------------ */

/* zlib has no reference command; Python's zlib module (the same library) stands in. */
VTEST(deflate_python_zlib)
{
    setup("python3");
    if (sh("python3 -c 'import zlib' >/dev/null 2>&1") != 0)
        vtest_skip("python3 has no zlib module");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    VCHECK_EQ(sh("cd '%s' && python3 -c 'import sys,zlib; d=open(\"in\",\"rb\").read(); "
                 "open(\"in.zz\",\"wb\").write(zlib.compress(d, 9)); "
                 "c=zlib.compressobj(6, zlib.DEFLATED, -15); "
                 "open(\"in.raw\",\"wb\").write(c.compress(d)+c.flush())'",
                 dir),
              0);
    check_decodes(VEGA_COMPRESS_DEFLATE, "in.zz", b, len);
    check_decodes(VEGA_COMPRESS_DEFLATE, "in.raw", b, len);
    write_ours(VEGA_COMPRESS_DEFLATE, 6, "ours.zz", b, len, 1000);
    VCHECK_EQ(
        sh("cd '%s' && python3 -c 'import zlib; "
           "open(\"ours.out\",\"wb\").write(zlib.decompress(open(\"ours.zz\",\"rb\").read()))'",
           dir),
        0);
    check_file_equals("ours.out", b, len);
    free(b);
}

/* ---- zstd ---------------------------------------------------------------------------------- */

VTEST(zstd_cli_to_vega)
{
    setup("zstd");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_file("empty", (const uint8_t *)"", 0);
    VCHECK_EQ(sh("cd '%s' && zstd -q -c -1 in > in1.zst && zstd -q -c -19 in > in19.zst && "
                 "zstd -q -c --no-check in > nocheck.zst && zstd -q -c empty > empty.zst",
                 dir),
              0);
    check_decodes(VEGA_COMPRESS_ZSTD, "in1.zst", b, len);
    check_decodes(VEGA_COMPRESS_ZSTD, "in19.zst", b, len);
    check_decodes(VEGA_COMPRESS_ZSTD, "nocheck.zst", b, len);
    check_decodes(VEGA_COMPRESS_ZSTD, "empty.zst", (const uint8_t *)"", 0);
    /* Concatenated frames decode as the concatenation (RFC 8878 section 3.1). */
    VCHECK_EQ(sh("cd '%s' && cat in1.zst empty.zst in19.zst > multi.zst", dir), 0);
    uint8_t *want = malloc(2 * len);
    memcpy(want, b, len);
    memcpy(want + len, b, len);
    check_decodes(VEGA_COMPRESS_ZSTD, "multi.zst", want, 2 * len);
    free(want);
    free(b);
}

VTEST(vega_to_zstd_cli)
{
    setup("zstd");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_ours(VEGA_COMPRESS_ZSTD, 1, "l1.zst", b, len, 0);
    write_ours(VEGA_COMPRESS_ZSTD, VEGA_COMPRESS_LEVEL_DEFAULT, "l3.zst", b, len, 0);
    write_ours(VEGA_COMPRESS_ZSTD, 19, "l19.zst", b, len, 0);
    write_ours(VEGA_COMPRESS_ZSTD, 3, "sync.zst", b, len, 777);
    write_ours(VEGA_COMPRESS_ZSTD, 3, "empty.zst", (const uint8_t *)"", 0, 0);
    const char *names[] = {"l1", "l3", "l19", "sync"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++) {
        VCHECK_EQ(sh("cd '%s' && zstd -q -t %s.zst && zstd -q -dc %s.zst > %s.out", dir, names[i],
                     names[i], names[i]),
                  0);
        char out[64];
        snprintf(out, sizeof out, "%s.out", names[i]);
        check_file_equals(out, b, len);
    }
    VCHECK_EQ(sh("cd '%s' && zstd -q -dc empty.zst > empty.out", dir), 0);
    check_file_equals("empty.out", (const uint8_t *)"", 0);
    free(b);
}

/* ---- brotli -------------------------------------------------------------------------------- */

VTEST(brotli_cli_to_vega)
{
    setup("brotli");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_file("empty", (const uint8_t *)"", 0);
    VCHECK_EQ(sh("cd '%s' && brotli -c -q 1 in > in1.br && brotli -c -q 11 in > in11.br && "
                 "brotli -c -q 5 -w 10 in > w10.br && brotli -c empty > empty.br",
                 dir),
              0);
    check_decodes(VEGA_COMPRESS_BROTLI, "in1.br", b, len);
    check_decodes(VEGA_COMPRESS_BROTLI, "in11.br", b, len);
    check_decodes(VEGA_COMPRESS_BROTLI, "w10.br", b, len);
    check_decodes(VEGA_COMPRESS_BROTLI, "empty.br", (const uint8_t *)"", 0);
    free(b);
}

VTEST(vega_to_brotli_cli)
{
    setup("brotli");
    size_t len;
    uint8_t *b = body(&len);
    write_file("in", b, len);
    write_ours(VEGA_COMPRESS_BROTLI, 0, "l0.br", b, len, 0);
    write_ours(VEGA_COMPRESS_BROTLI, VEGA_COMPRESS_LEVEL_DEFAULT, "l5.br", b, len, 0);
    write_ours(VEGA_COMPRESS_BROTLI, 9, "l9.br", b, len, 0);
    write_ours(VEGA_COMPRESS_BROTLI, 5, "sync.br", b, len, 777);
    write_ours(VEGA_COMPRESS_BROTLI, 5, "empty.br", (const uint8_t *)"", 0, 0);
    const char *names[] = {"l0", "l5", "l9", "sync"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++) {
        VCHECK_EQ(sh("cd '%s' && brotli -t %s.br && brotli -dc %s.br > %s.out", dir, names[i],
                     names[i], names[i]),
                  0);
        char out[64];
        snprintf(out, sizeof out, "%s.out", names[i]);
        check_file_equals(out, b, len);
    }
    VCHECK_EQ(sh("cd '%s' && brotli -dc empty.br > empty.out", dir), 0);
    check_file_equals("empty.out", (const uint8_t *)"", 0);
    free(b);
}
