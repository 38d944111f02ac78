/* SPDX-License-Identifier: MIT */
/* Runs a libFuzzer target without libFuzzer: replays every file of the corpus directories
 * given on the command line, then a seeded smoke run of mutated and random inputs. CTest runs
 * this for every target; scripts/test.sh also runs the real fuzzers for a while (clang). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

#define REPLAY_MAX_INPUT (64 * 1024)
#define MAX_FILES        4096

static uint8_t *files[MAX_FILES];
static size_t sizes[MAX_FILES];
static size_t nfiles;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static void load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f || nfiles == MAX_FILES) {
        if (f)
            fclose(f);
        return;
    }
    uint8_t *buf = malloc(REPLAY_MAX_INPUT);
    size_t n = fread(buf, 1, REPLAY_MAX_INPUT, f);
    fclose(f);
    files[nfiles] = buf;
    sizes[nfiles] = n;
    nfiles++;
}

static void load_arg(const char *arg)
{
    struct stat st;
    if (stat(arg, &st) < 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        load(arg);
        return;
    }
    DIR *d = opendir(arg);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", arg, e->d_name);
        load(p);
    }
    if (d)
        closedir(d);
}

int main(int argc, char **argv)
{
    unsigned iterations = 20000;
    const char *it = getenv("VEGA_FUZZ_ITERATIONS");
    if (it)
        iterations = (unsigned)strtoul(it, NULL, 10);
    /* sanitizer runs (VEGA_TEST_SCALE=10) do a share of the generated inputs; every corpus
     * input still runs */
    const char *scale = getenv("VEGA_TEST_SCALE");
    if (scale && strtoul(scale, NULL, 10) > 1)
        iterations /= (unsigned)strtoul(scale, NULL, 10);
    for (int i = 1; i < argc; i++)
        load_arg(argv[i]);
    for (size_t i = 0; i < nfiles; i++)
        LLVMFuzzerTestOneInput(files[i], sizes[i]);
    /* Smoke: byte flips, truncations and splices of corpus inputs, and random bytes. */
    uint8_t *buf = malloc(REPLAY_MAX_INPUT);
    for (unsigned i = 0; i < iterations; i++) {
        size_t n;
        if (nfiles && (next() & 3)) {
            size_t k = next() % nfiles;
            n = sizes[k];
            memcpy(buf, files[k], n);
            unsigned flips = 1 + (unsigned)(next() % 8);
            for (unsigned j = 0; j < flips && n; j++)
                buf[next() % n] ^= (uint8_t)(1u << (next() % 8));
            if (next() & 1)
                n = n ? (size_t)(next() % (n + 1)) : 0;
        } else {
            n = (size_t)(next() % 1500);
            for (size_t j = 0; j < n; j++)
                buf[j] = (uint8_t)next();
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
    printf("replayed %zu corpus inputs and %u generated inputs\n", nfiles, iterations);
    for (size_t i = 0; i < nfiles; i++)
        free(files[i]);
    return 0;
}
