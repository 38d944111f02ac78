/* SPDX-License-Identifier: MIT */
/* vega-serve: what the folder-archive formats (tar.c, zip.c) share with the walk and the
 * output of archive.c. */
#ifndef VEGA_SERVE_ARCHIVE_H
#define VEGA_SERVE_ARCHIVE_H

#include <vega/compress.h>

#include "serve.h"

#define ARCHIVE_BUF      (64 * 1024)
#define ARCHIVE_PATH_MAX 4096
#define ARCHIVE_DEPTH    64

struct archive;

/* A format: its entries as the walk meets them, and its end. path[0, len) is the entry's path
 * in the archive ("TOP/.../NAME", a folder's with a final "/"). */
struct archive_format {
    int (*init)(struct archive *a); /* before the response starts (may fail: 500) */
    int (*dir)(struct archive *a, size_t len, const struct stat *st);
    int (*file)(struct archive *a, int fd, size_t len, const struct stat *st);
    int (*end)(struct archive *a);
    void (*fini)(struct archive *a);
};

struct archive {
    vega_http_exchange *x;
    const struct archive_format *fmt;
    uint8_t *buf;  /* ARCHIVE_BUF: file reads */
    uint8_t *obuf; /* ARCHIVE_BUF: output gathered into larger writes */
    size_t olen;
    uint8_t *zout;       /* ARCHIVE_BUF: the gzip output (tar.gz) */
    vega_compressor *gz; /* tar.gz: the tar goes through it; NULL otherwise */
    uint64_t off;        /* archive bytes so far (before gzip) */
    void *state;         /* the format's */
    char path[ARCHIVE_PATH_MAX + 2];
};

/* Appends n bytes to the archive. Returns 0 or a negative error (the download is cut). */
int archive_out(struct archive *a, const void *p, size_t n);

/* Reads the next piece of fd's announced size (off < size) into a->buf: at most ARCHIVE_BUF
 * bytes, zeros when the file shrank since its fstat (said with -v). Returns the count or
 * -errno. */
vega_ssize archive_read(struct archive *a, int fd, uint64_t off, uint64_t size);

extern const struct archive_format serve_tar_format, serve_zip_format;

#endif
