/* Unit tests for natsd/alloc.h: the abort-on-OOM allocation helpers and nd_fatal().
 *
 * The out-of-memory paths are provoked with requests no allocator can satisfy (sizes near
 * SIZE_MAX, an overflowing calloc). Under ASan the allocator would report those as errors of its
 * own, so the sanitizer build asks it (allocator_may_return_null) to return NULL like glibc does.
 */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/alloc.h"

#ifdef ND_SANITIZED
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

/* A size the compiler cannot see, so that -Walloc-size-larger-than does not reject the call. */
static volatile size_t huge = SIZE_MAX / 2;

static bool
all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return false;
    return true;
}

Test(alloc, xmalloc_gives_writable_memory)
{
    static const size_t sizes[] = {0, 1, 7, 64, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *p = nd_xmalloc(sizes[i]);
        cr_assert_not_null(p);
        memset(p, 0xA5, sizes[i]);
        if (sizes[i] > 0)
            cr_assert_eq(p[sizes[i] - 1], 0xA5);
        nd_free(p);
    }
}

Test(alloc, xcalloc_zeroes)
{
    unsigned char *p = nd_xcalloc(1000, 7);
    cr_assert(all_zero(p, 7000));
    nd_free(p);
    /* Zero counts still give a pointer that can be freed. */
    nd_free(nd_xcalloc(0, 8));
    nd_free(nd_xcalloc(8, 0));
}

Test(alloc, xrealloc_keeps_contents)
{
    char *p = nd_xmalloc(16);
    memcpy(p, "0123456789abcdef", 16);
    p = nd_xrealloc(p, 1 << 16);
    cr_assert_eq(memcmp(p, "0123456789abcdef", 16), 0);
    p[(1 << 16) - 1] = 'z';
    p = nd_xrealloc(p, 4);
    cr_assert_eq(memcmp(p, "0123", 4), 0);
    nd_free(p);
    /* realloc of NULL allocates. */
    p = nd_xrealloc(NULL, 32);
    memset(p, 1, 32);
    nd_free(p);
}

Test(alloc, xaligned_is_aligned_and_zeroed)
{
    static const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 4096};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *p = nd_xaligned(sizes[i]);
        cr_assert_eq((uintptr_t)p % ND_CACHELINE, 0, "size %zu not aligned", sizes[i]);
        /* The whole rounded-up block is zeroed, not just the requested bytes. */
        size_t rounded = (sizes[i] + ND_CACHELINE - 1) / ND_CACHELINE * ND_CACHELINE;
        cr_assert(all_zero(p, rounded), "size %zu not zeroed", sizes[i]);
        nd_free(p);
    }
}

typedef struct pair {
    int a;
    void *b;
    char c[40];
} pair_t;

Test(alloc, new_gives_zeroed_struct)
{
    pair_t *p = nd_new(pair_t);
    cr_assert(all_zero(p, sizeof(*p)));
    nd_free(p);
}

Test(alloc, strdup_and_strndup)
{
    const char *src = "subject.with.tokens";
    char *d = nd_xstrdup(src);
    cr_assert_neq(d, src);
    cr_assert_str_eq(d, src);
    nd_free(d);

    d = nd_xstrndup(src, 7);
    cr_assert_str_eq(d, "subject");
    nd_free(d);

    /* n larger than the string copies only up to the terminator. */
    d = nd_xstrndup("abc", 100);
    cr_assert_str_eq(d, "abc");
    nd_free(d);

    d = nd_xstrndup("abc", 0);
    cr_assert_str_eq(d, "");
    nd_free(d);

    d = nd_xstrdup("");
    cr_assert_str_eq(d, "");
    nd_free(d);
}

Test(alloc, free_null_is_harmless)
{
    nd_free(NULL);
}

/* Runs fn in a child with stderr on a pipe. Returns: the signal that ended it (0 if it exited)
 * and what it wrote to stderr in buf. */
static int
run_child(void (*fn)(void), char *buf, size_t cap)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fds[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fds[0]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void
call_fatal(void)
{
    nd_fatal("broken invariant %d in %s", 42, "mbox");
}

static void
call_xmalloc_huge(void)
{
    void *p = nd_xmalloc(huge);
    nd_free(p);
}

static void
call_xcalloc_overflow(void)
{
    void *p = nd_xcalloc(huge, 4);
    nd_free(p);
}

static void
call_xrealloc_huge(void)
{
    void *p = nd_xmalloc(8);
    p = nd_xrealloc(p, huge);
    nd_free(p);
}

static void
call_xaligned_huge(void)
{
    void *p = nd_xaligned(huge);
    nd_free(p);
}

Test(alloc, fatal_prints_and_aborts)
{
    char buf[512];
    int sig = run_child(call_fatal, buf, sizeof(buf));
    cr_assert_eq(sig, SIGABRT);
    cr_assert_str_eq(buf, "natsd: fatal: broken invariant 42 in mbox\n");
}

Test(alloc, oom_aborts_with_message)
{
    void (*const fns[])(void) = {call_xmalloc_huge, call_xcalloc_overflow, call_xrealloc_huge,
                                 call_xaligned_huge};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        char buf[512];
        int sig = run_child(fns[i], buf, sizeof(buf));
        cr_assert_eq(sig, SIGABRT, "case %zu ended with signal %d", i, sig);
        cr_assert_not_null(strstr(buf, "natsd: fatal: out of memory allocating"),
                           "case %zu wrote: %s", i, buf);
    }
}
