/* SPDX-License-Identifier: MIT */
/* HdrHistogram's interval log (the format HistogramLogWriter writes and HistogramLogProcessor
 * reads): comment lines "#[...]", a legend line, then one line per interval:
 *   [Tag=NAME,]START,LENGTH,MAX,BASE64
 * START and LENGTH in seconds, MAX the interval's largest value divided by a unit ratio, and
 * BASE64 a histogram in HdrHistogram's compressed V2 encoding (big-endian header, ZigZag
 * LEB128 counts with runs of zeros, zlib-deflated). */
#ifndef VEGA_CLI_HDRLOG_H
#define VEGA_CLI_HDRLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

/* Limits on what is read (a log is untrusted input). */
#define HDRLOG_MAX_LINE    (1u << 20)   /* characters in one line */
#define HDRLOG_MAX_DECODED (8u << 20)   /* bytes a histogram may inflate to */
#define HDRLOG_MAX_HIGHEST (1ull << 53) /* highest trackable value accepted */
#define HDRLOG_MAX_SLOTS   (1u << 22)   /* counts slots of a decoded histogram */

/*
 * Encodes h in the compressed V2 encoding into a new buffer (*out, owned: free()).
 * Returns 0, -ENOMEM or a libvega code from the compressor.
 */
int hdrlog_encode(const struct cli_hist *h, uint8_t **out, size_t *out_len);

/*
 * Decodes a compressed V2 (or plain V2) histogram into h, which it sets up (free with
 * cli_hist_fini; left zeroed on error). Only histograms with a lowest discernible value of 1
 * are taken (the layout cli_hist has). Returns 0, or -EINVAL with a reason in err.
 */
int hdrlog_decode(struct cli_hist *h, const uint8_t *in, size_t len, char *err, size_t ecap);

/* The writer. */
struct hdrlog_writer {
    FILE *f;
    double start_s;    /* seconds since the epoch: the StartTime line, base of the timestamps */
    double unit_ratio; /* MAX is written as max / unit_ratio */
};

/* Writes the header: version, StartTime (start_s, seconds since the epoch), BaseTime, a
 * comment (may be NULL) and the legend. Returns 0 or -errno. */
int hdrlog_write_header(struct hdrlog_writer *w, const char *comment);

/* Writes one interval that began at start_s (since the epoch) and lasted len_s. Returns 0 or
 * a negative code. */
int hdrlog_write_interval(struct hdrlog_writer *w, double start_s, double len_s,
                          const struct cli_hist *h);

/* The reader: one interval per call. */
struct hdrlog_reader {
    FILE *f;
    const char *name; /* for messages */
    double start_s;   /* StartTime, 0 until seen */
    double base_s;    /* BaseTime, or StartTime when the timestamps are relative */
    bool base_seen;
    unsigned long line;
    char *buf;
    size_t cap;
};

/* The next interval: its absolute start time (seconds since the epoch when the log says when
 * it started, else as written), its length and its histogram (set up here; the caller
 * frees it). Returns 1 with an interval, 0 at the end, or -EINVAL with a reason in err
 * (naming the line). */
int hdrlog_read_interval(struct hdrlog_reader *r, double *start_s, double *len_s,
                         struct cli_hist *h, char *err, size_t ecap);

void hdrlog_reader_fini(struct hdrlog_reader *r);

#endif
