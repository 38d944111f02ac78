/* SPDX-License-Identifier: MIT */
/* Method names and properties, status reason phrases (RFC 9110 §9, §15; RFC 5789). */
#include <string.h>

#include <vega/http.h>

static const char *const method_names[VEGA_HTTP_METHOD_COUNT] = {
    "", "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
};

int vega_http_method_parse(const char *s, size_t len)
{
    if (!vega_http_token_is_valid(s, len))
        return VEGA_ERR_PROTO;
    for (int m = 1; m < VEGA_HTTP_METHOD_COUNT; m++)
        if (strlen(method_names[m]) == len && memcmp(s, method_names[m], len) == 0)
            return m;
    return VEGA_HTTP_METHOD_OTHER;
}

const char *vega_http_method_name(vega_http_method m)
{
    return (unsigned)m < VEGA_HTTP_METHOD_COUNT ? method_names[m] : "";
}

bool vega_http_method_is_safe(vega_http_method m)
{
    return m == VEGA_HTTP_METHOD_GET || m == VEGA_HTTP_METHOD_HEAD ||
           m == VEGA_HTTP_METHOD_OPTIONS || m == VEGA_HTTP_METHOD_TRACE;
}

bool vega_http_method_is_idempotent(vega_http_method m)
{
    return vega_http_method_is_safe(m) || m == VEGA_HTTP_METHOD_PUT || m == VEGA_HTTP_METHOD_DELETE;
}

const char *vega_http_status_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 103:
        return "Early Hints";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 203:
        return "Non-Authoritative Information";
    case 204:
        return "No Content";
    case 205:
        return "Reset Content";
    case 206:
        return "Partial Content";
    case 207:
        return "Multi-Status";
    case 300:
        return "Multiple Choices";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 305:
        return "Use Proxy";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 407:
        return "Proxy Authentication Required";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 417:
        return "Expectation Failed";
    case 421:
        return "Misdirected Request";
    case 422:
        return "Unprocessable Content";
    case 425:
        return "Too Early";
    case 426:
        return "Upgrade Required";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 451:
        return "Unavailable For Legal Reasons";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    case 511:
        return "Network Authentication Required";
    default:
        return "";
    }
}

bool vega_http_status_is_valid(int status)
{
    return status >= 100 && status <= 599;
}

bool vega_http_status_has_no_content(int status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}
