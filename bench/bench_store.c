/* bench_store: the message stores (natsd/store.h).
 *
 *   store    messages per second and MB/s for 16 B, 1 KiB and 64 KiB payloads (1000 subjects),
 *            on the memory store and on the file store with the default sync interval and with
 *            sync_always (fewer messages there: every one waits for fdatasync);
 *   load     ns per load by a random sequence, and per load_last of a random literal subject;
 *   memory   memstore bytes per message beyond subject + payload, from mallinfo2 before and
 *            after 1 M messages of 16 B;
 *   recovery file store open time for 1 M messages of 16 B: after a clean close (intact index)
 *            and with index.db deleted (a full rebuild from the blocks).
 *   scan     file store, reopened after a clean close: ns per load_next walking the whole
 *            stream in order (what a consumer does), 16 B and 1 KiB; ns per unfiltered
 *            filtered_state from the middle of the stream (a consumer's num_pending).
 *
 * Usage: bench_store [-s mem|file|all] [-n messages-of-16B] [-d dir]
 * Wall-clock figures; they depend on the machine and the disk. Plain figures, one per line.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "js/store/store.h"

/* The file store is part of the build once its source exists. */
#if __has_include("../src/js/store/filestore.c")
#define HAVE_FILESTORE 1
#else
#define HAVE_FILESTORE 0
#endif

#define NSUBJ 1000

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char subjects[NSUBJ][24];
static size_t subj_lens[NSUBJ];

static uint64_t
rnd(void)
{
    static uint64_t x = 88172645463325252ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

static const char *base_dir = "/tmp";

static nd_store_t *
open_store(bool file, bool sync_always, char *dir, size_t dirlen)
{
    nd_store_cfg_t cfg = {0};
    nd_store_t *st = NULL;
    nd_err_t e;
    if (!file) {
        e = nd_memstore_open(&cfg, &st);
    } else {
#if HAVE_FILESTORE
        snprintf(dir, dirlen, "%s/ndbench.XXXXXX", base_dir);
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
        cfg.dir = dir;
        cfg.sync_always = sync_always;
        e = nd_filestore_open(&cfg, &st, NULL);
#else
        e = ND_ERR_STORE_BAD_ARG;
#endif
    }
    if (e != ND_OK) {
        fprintf(stderr, "open: %s\n", nd_strerror(e));
        exit(1);
    }
    return st;
}

static void
destroy_store(nd_store_t *st)
{
    nd_err_t e = st->ops->destroy(st);
    if (e != ND_OK)
        fprintf(stderr, "destroy: %s\n", nd_strerror(e));
}

static void
fill(nd_store_t *st, size_t n, const uint8_t *payload, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        size_t s = i % NSUBJ;
        nd_err_t e = nd_store_put(st, subjects[s], subj_lens[s], NULL, 0, payload, len, NULL, NULL);
        if (e != ND_OK) {
            fprintf(stderr, "store: %s\n", nd_strerror(e));
            exit(1);
        }
    }
}

static void
bench_kind(const char *label, bool file, bool sync_always, size_t n16)
{
    static const size_t sizes[] = {16, 1024, 65536};
    uint8_t *payload = malloc(65536);
    memset(payload, 'x', 65536);
    for (size_t k = 0; k < 3; k++) {
        size_t len = sizes[k];
        /* About the same volume per size, and far fewer when each store waits for the disk. */
        size_t n = len == 16 ? n16 : len == 1024 ? n16 / 5 : n16 / 200;
        if (sync_always)
            n = len == 65536 ? 500 : 2000;
        if (n < 100)
            n = 100;
        char dir[256];
        nd_store_t *st = open_store(file, sync_always, dir, sizeof dir);
        double t0 = now_s();
        fill(st, n, payload, len);
        if (file && st->ops->sync(st) != ND_OK) {
            fprintf(stderr, "sync failed\n");
            exit(1);
        }
        double dt = now_s() - t0;
        printf("%-22s store %6zu B: %10.0f msgs/s %9.1f MB/s  (%zu msgs)\n", label, len,
               (double)n / dt, (double)n * (double)len / dt / 1e6, n);

        if (len != 1024 && !(len == 16 && !sync_always))
            goto done;
        /* Loads: random sequences and random subjects' last messages. */
        nd_store_msg_t m = {0};
        size_t loads = n < 200000 ? n : 200000;
        t0 = now_s();
        for (size_t i = 0; i < loads; i++) {
            if (nd_store_load(st, 1 + rnd() % n, &m) != ND_OK)
                abort();
        }
        dt = now_s() - t0;
        printf("%-22s load by seq %6zu B: %8.0f ns/op\n", label, len, dt * 1e9 / (double)loads);
        t0 = now_s();
        for (size_t i = 0; i < loads; i++) {
            size_t s = rnd() % NSUBJ;
            if (st->ops->load_last(st, subjects[s], subj_lens[s], &m) != ND_OK)
                abort();
        }
        dt = now_s() - t0;
        printf("%-22s last by subj %5zu B: %8.0f ns/op\n", label, len, dt * 1e9 / (double)loads);
        nd_store_msg_free(&m);
    done:
        destroy_store(st);
    }
    free(payload);
}

static void
bench_memory(size_t n)
{
    nd_store_t *st = NULL;
    nd_store_cfg_t cfg = {0};
    malloc_trim(0);
    struct mallinfo2 before = mallinfo2();
    if (nd_memstore_open(&cfg, &st) != ND_OK)
        abort();
    uint8_t payload[16];
    memset(payload, 'x', sizeof payload);
    fill(st, n, payload, sizeof payload);
    struct mallinfo2 after = mallinfo2();
    size_t used = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
    size_t data = 0;
    for (size_t i = 0; i < n; i++)
        data += subj_lens[i % NSUBJ] + sizeof payload;
    printf("memstore memory: %zu msgs of 16 B: %.1f bytes/msg in use, %.1f beyond subject + "
           "payload (avg subject %.1f B)\n",
           n, (double)used / (double)n, (double)(used - data) / (double)n,
           (double)(data - n * sizeof payload) / (double)n);
    nd_store_close(st);
}

#if HAVE_FILESTORE
static void
bench_recovery(size_t n)
{
    char dir[256];
    nd_store_t *st = open_store(true, false, dir, sizeof dir);
    uint8_t payload[16];
    memset(payload, 'x', sizeof payload);
    fill(st, n, payload, sizeof payload);
    nd_store_close(st);

    nd_store_cfg_t cfg = {.dir = dir};
    nd_store_recovery_t rep;
    double t0 = now_s();
    if (nd_filestore_open(&cfg, &st, &rep) != ND_OK)
        abort();
    double dt = now_s() - t0;
    nd_store_state_t s;
    nd_store_state(st, &s);
    printf("filestore recovery, intact index: %zu msgs in %.3f s (msgs %lu, rebuilt %d)\n", n, dt,
           (unsigned long)s.msgs, rep.index_rebuilt);
    nd_store_close(st);

    char path[512];
    snprintf(path, sizeof path, "%s/index.db", dir);
    if (unlink(path) != 0)
        perror("unlink index.db");
    t0 = now_s();
    if (nd_filestore_open(&cfg, &st, &rep) != ND_OK)
        abort();
    dt = now_s() - t0;
    nd_store_state(st, &s);
    printf("filestore recovery, no index:     %zu msgs in %.3f s (msgs %lu, rebuilt %d)\n", n, dt,
           (unsigned long)s.msgs, rep.index_rebuilt);
    destroy_store(st);
}
#endif

#if HAVE_FILESTORE
static void
bench_scan(size_t n16)
{
    static const size_t sizes[] = {16, 1024};
    uint8_t payload[1024];
    memset(payload, 'x', sizeof payload);
    for (size_t k = 0; k < 2; k++) {
        size_t len = sizes[k], n = len == 16 ? n16 : n16 / 5;
        char dir[256];
        nd_store_t *st = open_store(true, false, dir, sizeof dir);
        fill(st, n, payload, len);
        nd_store_close(st);
        nd_store_cfg_t cfg = {.dir = dir};
        if (nd_filestore_open(&cfg, &st, NULL) != ND_OK)
            abort();
        nd_store_msg_t m = {0};
        size_t got = 0;
        double t0 = now_s();
        for (uint64_t s = 1; st->ops->load_next(st, ">", 1, s, &m) == ND_OK; s = m.seq + 1)
            got++;
        double dt = now_s() - t0;
        if (got != n)
            abort();
        printf("filestore scan load_next %4zu B: %8.0f ns/op  (%zu msgs)\n", len,
               dt * 1e9 / (double)n, n);
        nd_store_msg_free(&m);
        size_t reps = 2000;
        uint64_t sum = 0;
        t0 = now_s();
        for (size_t i = 0; i < reps; i++) {
            nd_store_subj_state_t ss;
            st->ops->filtered_state(st, ">", 1, n / 2 + i, &ss);
            sum += ss.msgs;
        }
        dt = now_s() - t0;
        if (sum == 0)
            abort();
        printf("filestore pending mid   %4zu B: %8.0f ns/op\n", len, dt * 1e9 / (double)reps);
        destroy_store(st);
    }
}
#endif

int
main(int argc, char **argv)
{
    const char *which = "all";
    size_t n = 1000000;
    int c;
    while ((c = getopt(argc, argv, "s:n:d:")) != -1) {
        switch (c) {
        case 's':
            which = optarg;
            break;
        case 'n':
            n = strtoull(optarg, NULL, 10);
            break;
        case 'd':
            base_dir = optarg;
            break;
        default:
            fprintf(stderr, "usage: bench_store [-s mem|file|all] [-n msgs] [-d dir]\n");
            return 2;
        }
    }
    for (int i = 0; i < NSUBJ; i++)
        subj_lens[i] = (size_t)snprintf(subjects[i], sizeof subjects[i], "bench.subj.%d", i);
    bool mem = strcmp(which, "mem") == 0 || strcmp(which, "all") == 0;
    bool file = strcmp(which, "file") == 0 || strcmp(which, "all") == 0;
    if (mem) {
        bench_memory(n);
        bench_kind("memstore", false, false, n);
    }
    if (file) {
#if HAVE_FILESTORE
        bench_kind("filestore interval", true, false, n);
        bench_kind("filestore sync_always", true, true, n);
        bench_recovery(n);
        bench_scan(n);
#else
        printf("filestore: not built yet\n");
#endif
    }
    return 0;
}
