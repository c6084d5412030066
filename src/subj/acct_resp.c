/* Service-import response routes; see acct_resp.h.
 *
 * A chained hash keyed by the `_R_` subject (XXH3 of its bytes), buckets doubling past a load of
 * 2. Sweeping: an insertion at or after next_sweep walks the whole table once and drops expired
 * routes, then sets next_sweep half the smallest threshold seen later, so the walk is amortized
 * over the insertions of that half-period.
 */
#include "subj/acct_resp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <xxhash.h>

#include "actors/alloc.h"

typedef struct resp_ent {
    struct resp_ent *next;
    uint64_t hash;
    int64_t expires;
    nd_acct_t *importer;
    bool singleton;
    char subj[ND_ACCT_RESP_SUBJ_LEN];
    size_t reply_len;
    char reply[]; /* not NUL-terminated */
} resp_ent_t;

struct nd_acct_resp {
    pthread_mutex_t mu;
    resp_ent_t **b;
    size_t nb, n;
    int64_t next_sweep;
    int64_t min_ttl;
    char pfx[10]; /* the first token after `_R_.`: the same for every route of the table */
};

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void rand_token(char *p, uint64_t r);

/* A random number drawn once per process: the prefixes of two processes differ, those of one
 * account in one process do not change when a reload builds a new table. */
static uint64_t
process_seed(void)
{
    static _Atomic uint64_t seed;
    uint64_t s = atomic_load_explicit(&seed, memory_order_relaxed);
    while (s == 0) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)now_ns();
        r |= 1;
        uint64_t zero = 0;
        if (atomic_compare_exchange_strong_explicit(&seed, &zero, r, memory_order_relaxed,
                                                    memory_order_relaxed))
            s = r;
        else
            s = zero;
    }
    return s;
}

nd_acct_resp_t *
nd_acct_resp_new(const char *acct_name)
{
    nd_acct_resp_t *t = nd_new(nd_acct_resp_t);
    rand_token(t->pfx, XXH3_64bits_withSeed(acct_name, strlen(acct_name), process_seed()));
    pthread_mutex_init(&t->mu, NULL);
    t->nb = 64;
    t->b = nd_xcalloc(t->nb, sizeof(*t->b));
    t->min_ttl = ND_ACCT_RESP_DEFAULT_NS;
    return t;
}

void
nd_acct_resp_free(nd_acct_resp_t *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nb; i++) {
        resp_ent_t *e = t->b[i];
        while (e != NULL) {
            resp_ent_t *next = e->next;
            nd_free(e);
            e = next;
        }
    }
    nd_free(t->b);
    pthread_mutex_destroy(&t->mu);
    nd_free(t);
}

static void
grow(nd_acct_resp_t *t)
{
    size_t nb = t->nb * 2;
    resp_ent_t **b = nd_xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < t->nb; i++) {
        resp_ent_t *e = t->b[i];
        while (e != NULL) {
            resp_ent_t *next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = next;
        }
    }
    nd_free(t->b);
    t->b = b;
    t->nb = nb;
}

static void
sweep(nd_acct_resp_t *t, int64_t now)
{
    for (size_t i = 0; i < t->nb; i++) {
        resp_ent_t **pp = &t->b[i];
        while (*pp != NULL) {
            resp_ent_t *e = *pp;
            if (e->expires <= now) {
                *pp = e->next;
                t->n--;
                nd_free(e);
            } else {
                pp = &e->next;
            }
        }
    }
    t->next_sweep = now + t->min_ttl / 2;
}

/* Ten base-62 characters of a 64-bit random number (59.5 bits of it). */
static void
rand_token(char *p, uint64_t r)
{
    static const char al[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < 10; i++) {
        p[i] = al[r % 62];
        r /= 62;
    }
}

void
nd_acct_resp_add(nd_ctx_t *ctx, nd_acct_resp_t *t, char *subj, nd_acct_t *importer,
                 const char *reply, size_t reply_len, bool singleton, int64_t ttl_ns)
{
    if (ttl_ns <= 0)
        ttl_ns = ND_ACCT_RESP_DEFAULT_NS;
    memcpy(subj, ND_ACCT_RESP_PREFIX, ND_ACCT_RESP_PREFIX_LEN);
    memcpy(subj + ND_ACCT_RESP_PREFIX_LEN, t->pfx, sizeof t->pfx);
    subj[ND_ACCT_RESP_PREFIX_LEN + 10] = '.';
    rand_token(subj + ND_ACCT_RESP_PREFIX_LEN + 11, nd_ctx_rand(ctx));
    resp_ent_t *e = nd_xmalloc(sizeof(*e) + reply_len);
    memcpy(e->subj, subj, ND_ACCT_RESP_SUBJ_LEN);
    memcpy(e->reply, reply, reply_len);
    e->reply_len = reply_len;
    e->importer = importer;
    e->singleton = singleton;
    e->hash = XXH3_64bits(subj, ND_ACCT_RESP_SUBJ_LEN);
    int64_t now = now_ns();
    e->expires = now + ttl_ns;
    pthread_mutex_lock(&t->mu);
    if (ttl_ns < t->min_ttl)
        t->min_ttl = ttl_ns;
    if (now >= t->next_sweep)
        sweep(t, now);
    if (t->n >= t->nb * 2)
        grow(t);
    e->next = t->b[e->hash & (t->nb - 1)];
    t->b[e->hash & (t->nb - 1)] = e;
    t->n++;
    pthread_mutex_unlock(&t->mu);
}

nd_acct_t *
nd_acct_resp_take(nd_acct_resp_t *t, const char *subj, size_t len, char **reply, size_t *reply_len)
{
    if (len != ND_ACCT_RESP_SUBJ_LEN)
        return NULL;
    uint64_t h = XXH3_64bits(subj, len);
    nd_acct_t *acct = NULL;
    resp_ent_t *gone = NULL;
    int64_t now = now_ns();
    pthread_mutex_lock(&t->mu);
    for (resp_ent_t **pp = &t->b[h & (t->nb - 1)]; *pp != NULL; pp = &(*pp)->next) {
        resp_ent_t *e = *pp;
        if (e->hash != h || memcmp(e->subj, subj, len) != 0)
            continue;
        bool live = e->expires > now;
        if (!live || e->singleton) {
            *pp = e->next;
            t->n--;
            gone = e;
        }
        if (live) {
            acct = e->importer;
            *reply = nd_xmalloc(e->reply_len + 1);
            memcpy(*reply, e->reply, e->reply_len);
            (*reply)[e->reply_len] = '\0';
            *reply_len = e->reply_len;
        }
        break;
    }
    pthread_mutex_unlock(&t->mu);
    nd_free(gone);
    return acct;
}

size_t
nd_acct_resp_count(nd_acct_resp_t *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

size_t
nd_acct_resp_wildcard(const nd_acct_resp_t *t, char *out)
{
    memcpy(out, ND_ACCT_RESP_PREFIX, ND_ACCT_RESP_PREFIX_LEN);
    memcpy(out + ND_ACCT_RESP_PREFIX_LEN, t->pfx, sizeof t->pfx);
    memcpy(out + ND_ACCT_RESP_PREFIX_LEN + sizeof t->pfx, ".>", 2);
    return ND_ACCT_RESP_WC_LEN;
}
