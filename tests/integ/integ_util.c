/* Small helpers the multi-server integration tests share (see integ_util.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "integ_util.h"

#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t
nd_integ_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
nd_integ_poll_gap(void)
{
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
}

int
nd_integ_fresh_port(void)
{
    static int given[256];
    static size_t ngiven;
    for (;;) {
        int p = nd_integ_free_port();
        bool dup = false;
        for (size_t i = 0; i < ngiven && i < 256 && !dup; i++)
            dup = given[i] == p;
        if (dup)
            continue;
        given[ngiven++ % 256] = p;
        return p;
    }
}

json_t *
nd_integ_get_json(int port, const char *path)
{
    char *body = nd_integ_http_get(port, path);
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    cr_assert(json_is_object(o), "GET %s: not JSON (%s): %s", path, err.text, body);
    free(body);
    return o;
}

void
nd_integ_sendf_at(const char *file, int line, nd_integ_conn_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    cr_assert(vasprintf(&s, fmt, ap) >= 0);
    va_end(ap);
    nd_integ_send_at(file, line, c, s, strlen(s));
    free(s);
}

void
nd_integ_expectf_at(const char *file, int line, nd_integ_conn_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    cr_assert(vasprintf(&s, fmt, ap) >= 0);
    va_end(ap);
    nd_integ_expect_at(file, line, c, s, strlen(s));
    free(s);
}

bool
nd_integ_bin_is_reference(const char *bin)
{
    if (strcmp(bin, nd_integ_server_path()) == 0)
        return nd_integ_is_reference();
    const char *ref = nd_integ_reference_path();
    return ref != NULL && strcmp(bin, ref) == 0;
}
