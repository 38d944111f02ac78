/* SPDX-License-Identifier: MIT */
/* vega-serve: Content-Type by file extension (a built-in table; no /etc/mime.types lookup, so
 * answers do not depend on the host). */
#include <string.h>
#include <strings.h>

#include "serve.h"

struct mime {
    const char *ext;
    const char *type;
    bool text; /* compressible */
};

#define U8 "; charset=utf-8"

/* Sorted by extension for the binary search below. */
static const struct mime table[] = {
    {"7z", "application/x-7z-compressed", false},
    {"aac", "audio/aac", false},
    {"apng", "image/apng", false},
    {"avif", "image/avif", false},
    {"bmp", "image/bmp", true},
    {"bz2", "application/x-bzip2", false},
    {"c", "text/x-c" U8, true},
    {"cjs", "text/javascript" U8, true},
    {"conf", "text/plain" U8, true},
    {"cpp", "text/x-c++" U8, true},
    {"css", "text/css" U8, true},
    {"csv", "text/csv" U8, true},
    {"doc", "application/msword", false},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", false},
    {"eot", "application/vnd.ms-fontobject", true},
    {"epub", "application/epub+zip", false},
    {"flac", "audio/flac", false},
    {"gif", "image/gif", false},
    {"gz", "application/gzip", false},
    {"h", "text/x-c" U8, true},
    {"htm", "text/html" U8, true},
    {"html", "text/html" U8, true},
    {"ico", "image/vnd.microsoft.icon", true},
    {"ics", "text/calendar" U8, true},
    {"jpeg", "image/jpeg", false},
    {"jpg", "image/jpeg", false},
    {"js", "text/javascript" U8, true},
    {"json", "application/json", true},
    {"jsonld", "application/ld+json", true},
    {"log", "text/plain" U8, true},
    {"m4a", "audio/mp4", false},
    {"m4v", "video/mp4", false},
    {"map", "application/json", true},
    {"md", "text/markdown" U8, true},
    {"mjs", "text/javascript" U8, true},
    {"mkv", "video/x-matroska", false},
    {"mov", "video/quicktime", false},
    {"mp3", "audio/mpeg", false},
    {"mp4", "video/mp4", false},
    {"mpeg", "video/mpeg", false},
    {"oga", "audio/ogg", false},
    {"ogg", "audio/ogg", false},
    {"ogv", "video/ogg", false},
    {"opus", "audio/ogg", false},
    {"otf", "font/otf", true},
    {"pdf", "application/pdf", false},
    {"pem", "application/x-pem-file", true},
    {"png", "image/png", false},
    {"py", "text/x-python" U8, true},
    {"rs", "text/x-rust" U8, true},
    {"rss", "application/rss+xml", true},
    {"sh", "text/x-shellscript" U8, true},
    {"svg", "image/svg+xml", true},
    {"tar", "application/x-tar", false},
    {"tif", "image/tiff", false},
    {"tiff", "image/tiff", false},
    {"toml", "text/plain" U8, true},
    {"ts", "video/mp2t", false},
    {"tsv", "text/tab-separated-values" U8, true},
    {"ttf", "font/ttf", true},
    {"txt", "text/plain" U8, true},
    {"wasm", "application/wasm", true},
    {"wav", "audio/wav", false},
    {"weba", "audio/webm", false},
    {"webm", "video/webm", false},
    {"webmanifest", "application/manifest+json", true},
    {"webp", "image/webp", false},
    {"woff", "font/woff", false},
    {"woff2", "font/woff2", false},
    {"xhtml", "application/xhtml+xml", true},
    {"xls", "application/vnd.ms-excel", false},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", false},
    {"xml", "application/xml", true},
    {"xz", "application/x-xz", false},
    {"yaml", "application/yaml", true},
    {"yml", "application/yaml", true},
    {"zip", "application/zip", false},
    {"zst", "application/zstd", false},
};

const char *serve_mime_type(const char *name, size_t len, bool *text)
{
    size_t dot = len;
    while (dot > 0 && name[dot - 1] != '.' && name[dot - 1] != '/')
        dot--;
    *text = false;
    if (dot == 0 || name[dot - 1] != '.' || len - dot == 0 || len - dot > 15)
        return "application/octet-stream";
    char ext[16];
    size_t n = len - dot;
    for (size_t i = 0; i < n; i++) {
        char c = name[dot + i];
        ext[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    ext[n] = '\0';
    size_t lo = 0, hi = sizeof(table) / sizeof(table[0]);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(ext, table[mid].ext);
        if (c == 0) {
            *text = table[mid].text;
            return table[mid].type;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return "application/octet-stream";
}
