/* Allocation helpers that abort on out-of-memory; see src/actors/alloc.h. */
#include "actors/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ck_malloc.h>

void
nd_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("natsd: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void *
check(void *p, size_t size)
{
    if (p == NULL)
        nd_fatal("out of memory allocating %zu bytes", size);
    return p;
}

void *
nd_xmalloc(size_t size)
{
    return check(malloc(size ? size : 1), size);
}

void *
nd_xcalloc(size_t n, size_t size)
{
    return check(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *
nd_xrealloc(void *p, size_t size)
{
    return check(realloc(p, size ? size : 1), size);
}

void *
nd_xaligned(size_t size)
{
    void *p = NULL;
    size_t rounded = (size + ND_CACHELINE - 1) & ~(size_t)(ND_CACHELINE - 1);
    if (posix_memalign(&p, ND_CACHELINE, rounded ? rounded : ND_CACHELINE) != 0)
        p = NULL;
    check(p, size);
    memset(p, 0, rounded);
    return p;
}

char *
nd_xstrdup(const char *s)
{
    return nd_xstrndup(s, strlen(s));
}

char *
nd_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = nd_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void
nd_free(void *p)
{
    free(p);
}

static void *
ck_alloc(size_t n)
{
    return nd_xmalloc(n);
}

static void
ck_release(void *p, size_t n, bool defer)
{
    (void)n, (void)defer;
    nd_free(p);
}

struct ck_malloc nd_ck_malloc = {.malloc = ck_alloc, .free = ck_release};
