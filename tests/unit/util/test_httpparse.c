/* Unit tests of the monitoring port's HTTP request parser (src/util/httpparse.c). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/httpparse.h"

static int
p(const char *s, nd_http_req_t *r)
{
    return nd_http_parse(s, strlen(s), r);
}

Test(http, complete_get_and_keep_alive)
{
    nd_http_req_t r;
    const char *s = "GET /varz?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization:  Basic abc \r\n\r\nNEXT";
    cr_assert_eq(p(s, &r), 1);
    cr_assert_eq(r.total, strlen(s) - 4);
    cr_assert(nd_http_ieq(r.method, r.method_len, "get"));
    cr_assert_eq(r.target_len, strlen("/varz?x=1"));
    cr_assert(r.http11 && r.keep);
    cr_assert_eq(r.authz_len, strlen("Basic abc"));
    cr_assert_eq(strncmp(r.authz, "Basic abc", r.authz_len), 0);
    cr_assert_eq(p("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &r), 1);
    cr_assert(!r.keep);
    cr_assert_eq(p("GET / HTTP/1.0\r\n\r\n", &r), 1);
    cr_assert(!r.keep);
    cr_assert_eq(p("GET / HTTP/1.0\nConnection: Keep-Alive\n\n", &r), 1);
    cr_assert(r.keep);
}

Test(http, incomplete_needs_more)
{
    nd_http_req_t r;
    cr_assert_eq(p("", &r), 0);
    cr_assert_eq(p("GE", &r), 0);
    cr_assert_eq(p("GET /varz HTTP/1.1\r\nHost: a\r\n", &r), 0);
    cr_assert_eq(p("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", &r), 0);
    cr_assert_eq(p("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", &r), 1);
}

Test(http, refusals)
{
    nd_http_req_t r;
    cr_assert_eq(p("\x16\x03\x01", &r), 400); /* TLS hello: refused before any newline */
    cr_assert_eq(p("CONNECT {}\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET /\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/2.0\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/1.1\r\n folded\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", &r), 400);
    cr_assert_eq(p("GET / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", &r), 413);
    cr_assert_eq(p("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r), 501);
    char *big = malloc(ND_HTTP_MAX_LINE + 16);
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', ND_HTTP_MAX_LINE + 10);
    cr_assert_eq(nd_http_parse(big, ND_HTTP_MAX_LINE + 15, &r), 414);
    cr_assert_eq(nd_http_parse(big, 100, &r), 0);
    free(big);
    char hdrs[8192];
    size_t n = (size_t)sprintf(hdrs, "GET / HTTP/1.1\r\n");
    for (int i = 0; i <= ND_HTTP_MAX_HEADERS; i++)
        n += (size_t)sprintf(hdrs + n, "X%d: v\r\n", i);
    sprintf(hdrs + n, "\r\n");
    cr_assert_eq(p(hdrs, &r), 431);
}

Test(http, percent_decoding)
{
    char out[32];
    cr_assert(nd_http_pct_decode("a%41+b", 6, out, true));
    cr_assert_str_eq(out, "aA b");
    cr_assert(nd_http_pct_decode("a+b", 3, out, false));
    cr_assert_str_eq(out, "a+b");
    cr_assert(!nd_http_pct_decode("%4", 2, out, true));
    cr_assert(!nd_http_pct_decode("%zz", 3, out, true));
    cr_assert(!nd_http_pct_decode("x%", 2, out, true));
}

static bool
om(const char *v)
{
    return nd_http_accepts_openmetrics(v, v != NULL ? strlen(v) : 0);
}

Test(http, accept_openmetrics)
{
    /* What Prometheus 2.x sends when it may scrape OpenMetrics. */
    cr_assert(om("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                 "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
    cr_assert(om("application/openmetrics-text; version=1.0.0; charset=utf-8"));
    cr_assert(om("Application/OpenMetrics-Text"));
    /* What it sends when OpenMetrics is off, and what curl and browsers send. */
    cr_assert(!om("text/plain;version=0.0.4;q=1,*/*;q=0.1"));
    cr_assert(!om("*/*"));
    cr_assert(!om(NULL));
    cr_assert(!om(""));
    cr_assert(!om("text/html,application/xhtml+xml,*/*;q=0.8"));
    /* q decides; a refused or malformed range counts for nothing. */
    cr_assert(!om("application/openmetrics-text;q=0"));
    cr_assert(!om("application/openmetrics-text;q=0.4,text/plain;q=0.5"));
    cr_assert(om("text/plain;q=0.5,application/openmetrics-text;q=0.9"));
    cr_assert(!om("application/openmetrics-text;q=2"));
    cr_assert(!om("application/openmetrics-text;q=x"));
    nd_http_req_t r;
    cr_assert_eq(p("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n", &r), 1);
    cr_assert(r.accept != NULL && r.accept_len == 28);
}
