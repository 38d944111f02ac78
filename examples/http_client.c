/* SPDX-License-Identifier: MIT */
/* http_client: fetches several URLs at once, one task per URL, each with its own deadline,
 * over one client (and its pool of keep-alive connections). Uses only the installed headers.
 *
 *   http_client [-t MS] URL... [-t MS] URL...    -t sets the deadline of the URLs after it
 *                                                (default 5000 ms)
 *   http_client http://127.0.0.1:8080/ -t 50 http://127.0.0.1:8080/slow
 *
 * One line per URL, in the order given: "URL -> 200 (19 bytes, 3 ms): first line of the body",
 * or "URL -> ETIMEDOUT after 50 ms: Connection timed out". Exit status 0 when every URL got a
 * response (whatever its status), 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/vega.h>

#define MAX_URLS 32

/* One fetch: what main fills in, and what its task reports back. */
struct fetch {
    vega_http_client *client;
    const char *url;
    uint64_t timeout_ms;
    int status;          /* the HTTP status, or 0 */
    int err;             /* 0, or why it failed (a negative libvega code) */
    uint64_t bytes, ms;  /* body bytes read, and how long it all took */
    char first_line[64]; /* the start of the body, for the report */
};

/* The task of one URL: send, read the body to the end, free. The request's deadline covers
 * the whole exchange (connect, send, head and body), so a slow server cannot hold us longer. */
static void *fetch_task(void *arg)
{
    struct fetch *f = arg;
    vega_tstamp t0 = vega_now();
    vega_http_client_request req;
    vega_http_client_request_init(&req);
    req.url = f->url;
    req.deadline = vega_deadline_in_ms(f->timeout_ms);

    vega_http_client_response *r;
    f->err = vega_http_client_send(f->client, &req, &r); /* suspends this task only */
    if (f->err == 0) {
        f->status = vega_http_client_response_info(r)->status;
        char buf[16384];
        vega_ssize n;
        while ((n = vega_http_client_response_read(r, buf, sizeof(buf), req.deadline)) > 0) {
            if (f->bytes == 0) { /* keep the first line of the body */
                size_t k = 0;
                while (k < (size_t)n && k < sizeof(f->first_line) - 1 && buf[k] != '\r' &&
                       buf[k] != '\n')
                    k++;
                memcpy(f->first_line, buf, k);
            }
            f->bytes += (uint64_t)n;
        }
        if (n < 0)
            f->err = (int)n;
        vega_http_client_response_free(r); /* back to the pool when read to the end */
    }
    f->ms = (vega_now() - t0) / VEGA_NS_PER_MS;
    return NULL;
}

static struct fetch fetches[MAX_URLS];
static size_t nfetch;

static void *main_task(void *arg)
{
    (void)arg;
    vega_http_client *client;
    int rc = vega_http_client_new(&client, NULL); /* defaults: pool, TLS with the system CAs */
    if (rc < 0) {
        fprintf(stderr, "vega_http_client_new: %s\n", vega_strerror(rc));
        return (void *)1;
    }
    vega_task *tasks[MAX_URLS];
    size_t started = 0;
    for (; started < nfetch; started++) { /* every fetch runs at the same time */
        fetches[started].client = client;
        if (vega_task_spawn(&tasks[started], fetch_task, &fetches[started]) < 0)
            break;
    }
    for (size_t i = 0; i < started; i++) /* then wait for each; their deadlines bound this */
        vega_task_join(tasks[i], NULL, VEGA_DEADLINE_NEVER);
    vega_http_client_free(client);
    return started == nfetch ? NULL : (void *)1;
}

int main(int argc, char **argv)
{
    uint64_t timeout_ms = 5000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            timeout_ms = strtoull(argv[++i], NULL, 10);
        } else if (nfetch < MAX_URLS) {
            fetches[nfetch].url = argv[i];
            fetches[nfetch++].timeout_ms = timeout_ms;
        }
    }
    if (nfetch == 0) {
        fprintf(stderr, "usage: http_client [-t MS] URL... (up to %d URLs)\n", MAX_URLS);
        return 2;
    }
    vega_rt *rt;
    int rc = vega_rt_new(&rt, NULL);
    if (rc < 0) {
        fprintf(stderr, "vega_rt_new: %s\n", vega_strerror(rc));
        return 1;
    }
    void *failed = NULL;
    rc = vega_rt_block_on(rt, main_task, NULL, &failed);
    vega_rt_free(rt);
    int errors = rc < 0 || failed != NULL;
    for (size_t i = 0; i < nfetch; i++) {
        struct fetch *f = &fetches[i];
        if (f->err == 0)
            printf("%s -> %d (%llu bytes, %llu ms): %s\n", f->url, f->status,
                   (unsigned long long)f->bytes, (unsigned long long)f->ms, f->first_line);
        else
            printf("%s -> %s after %llu ms: %s\n", f->url, vega_err_name(f->err),
                   (unsigned long long)f->ms, vega_strerror(f->err));
        errors += f->err != 0;
    }
    return errors ? 1 : 0;
}
