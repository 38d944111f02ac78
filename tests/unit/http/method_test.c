/* SPDX-License-Identifier: MIT */
/* Tests for method parsing and properties and status reason phrases. */
#include <vega/http.h>

#include "vtest.h"

VTEST(methods)
{
    for (int m = 1; m < VEGA_HTTP_METHOD_COUNT; m++) {
        const char *n = vega_http_method_name((vega_http_method)m);
        VCHECK_EQ(vega_http_method_parse(n, strlen(n)), m);
    }
    VCHECK_EQ(vega_http_method_parse("get", 3), VEGA_HTTP_METHOD_OTHER);
    VCHECK_EQ(vega_http_method_parse("PROPFIND", 8), VEGA_HTTP_METHOD_OTHER);
    VCHECK_EQ(vega_http_method_parse("GETX", 4), VEGA_HTTP_METHOD_OTHER);
    VCHECK_EQ(vega_http_method_parse("GE", 2), VEGA_HTTP_METHOD_OTHER);
    VCHECK_EQ(vega_http_method_parse("", 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_http_method_parse("G T", 3), VEGA_ERR_PROTO);
    VCHECK_STR(vega_http_method_name(VEGA_HTTP_METHOD_OTHER), "");
    VCHECK_STR(vega_http_method_name((vega_http_method)42), "");
    VCHECK(vega_http_method_is_safe(VEGA_HTTP_METHOD_HEAD));
    VCHECK(!vega_http_method_is_safe(VEGA_HTTP_METHOD_PUT));
    VCHECK(vega_http_method_is_idempotent(VEGA_HTTP_METHOD_PUT));
    VCHECK(vega_http_method_is_idempotent(VEGA_HTTP_METHOD_DELETE));
    VCHECK(!vega_http_method_is_idempotent(VEGA_HTTP_METHOD_POST));
    VCHECK(!vega_http_method_is_idempotent(VEGA_HTTP_METHOD_PATCH));
    VCHECK(!vega_http_method_is_idempotent(VEGA_HTTP_METHOD_OTHER));
}

VTEST(status)
{
    VCHECK_STR(vega_http_status_reason(200), "OK");
    VCHECK_STR(vega_http_status_reason(404), "Not Found");
    VCHECK_STR(vega_http_status_reason(413), "Content Too Large");
    VCHECK_STR(vega_http_status_reason(416), "Range Not Satisfiable");
    VCHECK_STR(vega_http_status_reason(599), "");
    VCHECK_STR(vega_http_status_reason(-1), "");
    VCHECK(vega_http_status_is_valid(100) && vega_http_status_is_valid(599));
    VCHECK(!vega_http_status_is_valid(99) && !vega_http_status_is_valid(600));
    VCHECK(vega_http_status_has_no_content(101) && vega_http_status_has_no_content(204) &&
           vega_http_status_has_no_content(304));
    VCHECK(!vega_http_status_has_no_content(200) && !vega_http_status_has_no_content(404));
}
