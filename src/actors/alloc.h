/* Allocation helpers that abort on out-of-memory.
 *
 * natsd treats running out of memory as fatal: handlers carry no dead NOMEM branches. Sizes that
 * a client controls must be checked against their limits *before* calling these.
 * Ctx: any thread.
 */
#ifndef NATSD_ALLOC_H
#define NATSD_ALLOC_H

#include <stddef.h>

#define ND_CACHELINE 64
#define ND_CACHE_ALIGNED __attribute__((aligned(ND_CACHELINE)))

/* Returns: memory that is never NULL; the process aborts with a message when none is left. */
void *nd_xmalloc(size_t size) __attribute__((malloc, alloc_size(1), returns_nonnull));
void *nd_xcalloc(size_t n, size_t size) __attribute__((malloc, alloc_size(1, 2), returns_nonnull));
void *nd_xrealloc(void *p, size_t size) __attribute__((alloc_size(2), returns_nonnull));
/* Cache-line aligned allocation, for structs with fields written by different threads. */
void *nd_xaligned(size_t size) __attribute__((malloc, returns_nonnull));
char *nd_xstrdup(const char *s) __attribute__((malloc, returns_nonnull));
char *nd_xstrndup(const char *s, size_t n) __attribute__((malloc, returns_nonnull));
void nd_free(void *p);

/* Returns: the capacity to grow a buffer of capacity cap to so that it holds need bytes:
 * doubling from cap (or from min when cap is 0). */
static inline size_t
nd_grow_cap(size_t cap, size_t need, size_t min)
{
    if (cap == 0)
        cap = min;
    while (cap < need)
        cap *= 2;
    return cap;
}

/* Typed helpers: nd_new(T) allocates one zeroed T. */
#define nd_new(T) ((T *)nd_xcalloc(1, sizeof(T)))

/* Aborts the process after printing "natsd: fatal: <what>". For broken invariants and OOM. */
void nd_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* The allocator handed to Concurrency Kit containers (ck_hs): nd_xmalloc and nd_free. Its free
 * ignores ck's `defer` hint, so a container that readers walk while a writer grows it must not
 * use it (ours are read under their owner's lock, or by their owner alone). */
struct ck_malloc;
extern struct ck_malloc nd_ck_malloc;

#endif
