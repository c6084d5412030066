/* The sublist: a subject trie with one writer and lock-free concurrent readers.
 *
 * Shape. As in nats-server's sublist.go, a node stands for one token position: it has a map of
 * literal children (token -> node), a `*` child and a `>` child, the plain subscriptions whose
 * subject ends at this node, and its queue groups (name -> members). Matching walks the literal
 * subject token by token: at each node the `>` child (if any) matches whatever remains (at least
 * one token), the `*` child continues the walk one token deeper (recursively), and the literal
 * child for the token continues the loop. A subject with an empty token matches nothing.
 * Queue groups of the same name found in several matching nodes are merged in the result, so a
 * message goes to one member per queue name, as in nats-server's addNodeToResults/findQSlot.
 *
 * Concurrency. Exactly one thread at a time writes (the account actor); readers run on any worker
 * inside epoch sections and take no locks. Every reader-visible field is an atomic pointer or
 * counter that the writer changes only in ways a concurrent reader tolerates:
 *  - children and queue-group maps are SPMC hash sets (sltab.h: slots never move, tombstones,
 *    replaced wholesale when resized);
 *  - subscriptions live in vectors (nd_sl_vec_t) that are appended in place (fill the slot with a
 *    release store, then publish n with a release store) and removed from in place (the slot goes
 *    NULL; trailing NULLs shrink n). A sub never moves inside a published vector, so a reader never
 *    sees one twice nor misses one that stays subscribed. When a vector is full, or less than half
 *    of its used prefix is live, a compacted copy of twice the live size (one slot for a lone
 *    sub) replaces it. Growth and
 *    compaction each cost O(live) after Omega(live) cheap operations, so inserting or removing
 *    100k subscriptions on one subject or in one queue group is linear overall, never the O(n^2)
 *    of copying a big array per change; and the half-full rule keeps queue picks O(1).
 *  - a node's links (children map, wildcard children, queue-group map) live in an sl_ext_t that
 *    the node points to; it is published once (release) and then changed in place like the
 *    fields above, and lives as long as the node, except that the writer may unpublish an empty
 *    one of its own block (readers then see either the old, empty ext or NULL: both mean "no
 *    links");
 *  - nodes, vectors, maps, exts and queue groups that become unreachable are retired through the
 *    epoch.
 * Writer order for every change: (1) unlink or replace, (2) bump the generation with a release
 * increment, (3) retire what was unlinked (nd_sl_pend_t collects it during the change and hands
 * it to the epoch as one batch). Step 3 must follow step 2 for per-connection caches (slcache.c):
 * a reader whose section re-reads the generation and finds it unchanged may use pointers from a
 * result computed earlier, because any object freed under it would have been retired after a
 * bump that its re-read would have seen.
 *
 * Memory. A server may hold millions of subscriptions, most on subjects of their own, so a node
 * is kept small: its token inline after its key (no string pointer), no parent pointer or kind
 * (removal walks down from the root along the sub's own subject to find the path it prunes, and
 * a node's kind follows from its token: a lone `*` or `>` can only be a wildcard), no retirement
 * record (retired blocks are freed in one batch per change), and the links in a separate ext that
 * a leaf does not have. One allocation holds the node and, 8-byte aligned after the token, either
 * its ext (a node created on the way to a deeper token, or for a queue subscription) or a
 * one-slot vector for its first plain subscription (a leaf). A leaf with one subscription is thus
 * one 56-byte allocation (a 64-byte glibc chunk) for tokens up to 8 bytes, where it used to take
 * a node and a 4-slot vector (112 + 80 bytes of chunks). An in-node vector that is replaced or
 * emptied is never reused (a stale reader may still look at it); its memory goes with the node.
 *
 * Cost. A match does one hash probe per token plus one recursion per `*` node met, independent of
 * the number of unrelated subjects; it allocates nothing unless a result outgrows its arrays. An
 * interior node's ext usually sits in the node's own block, so following it seldom costs a miss.
 * Removing a subscription walks the subject again only when its vector becomes empty (pruning).
 *
 * References: nats-server server/sublist.go (semantics), Concurrency Kit ck_epoch and ck_hs (the
 * SPMC discipline), Mosquitto src/subs.c (topic tree essay).
 */
#include "subj/sublist.h"

#include <string.h>

#include "actors/alloc.h"
#include "subj/subject.h"
#include "subj/sltab.h"

typedef struct sl_node sl_node_t;

/* A node's links. Readers: acquire loads; the writer: release stores. */
typedef struct sl_ext {
    _Atomic(nd_sl_tab_t *) children; /* of sl_node_t, by token */
    _Atomic(sl_node_t *) pwc;
    _Atomic(sl_node_t *) fwc;
    _Atomic(nd_sl_tab_t *) qgroups; /* of sl_qgroup_t, by name */
} sl_ext_t;

struct sl_node {
    /* readers: acquire loads; the writer: release stores */
    _Atomic(sl_ext_t *) ext; /* NULL while the node has no links */
    _Atomic(nd_sl_vec_t *) psubs;
    nd_sl_key_t key; /* immutable; the node is its parent's map entry */
    char tok[];      /* key.len bytes (not NUL-terminated), then the in-node area (node_area) */
};

typedef struct sl_qgroup {
    _Atomic(nd_sl_vec_t *) vec; /* readers: acquire; the writer: release */
    nd_sl_key_t key;            /* immutable */
    char name[];                /* NUL-terminated */
} sl_qgroup_t;

_Static_assert(offsetof(sl_node_t, tok) == offsetof(sl_node_t, key) + sizeof(nd_sl_key_t),
               "a node's token must follow its key");
_Static_assert(offsetof(sl_qgroup_t, name) == offsetof(sl_qgroup_t, key) + sizeof(nd_sl_key_t),
               "a queue group's name must follow its key");
/* The sizes the memory budget in the header comment counts on. */
_Static_assert(sizeof(sl_node_t) == 24 && sizeof(sl_ext_t) == 32 && sizeof(nd_sl_vec_t) == 16 &&
                   sizeof(nd_sl_tab_t) == 16,
               "sublist structs grew");

static inline const sl_node_t *
node_of_key(const nd_sl_key_t *k)
{
    return k == NULL ? NULL : (const sl_node_t *)((const char *)k - offsetof(sl_node_t, key));
}

static inline const sl_qgroup_t *
qgroup_of_key(const nd_sl_key_t *k)
{
    return k == NULL ? NULL : (const sl_qgroup_t *)((const char *)k - offsetof(sl_qgroup_t, key));
}

/* ---- results ---- */

void
nd_sl_result_init(nd_sl_result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->pvecs = r->pvecs_buf;
    r->qgroups = r->qgroups_buf;
    r->qvecs = r->qvecs_buf;
    r->cap_pvecs = ND_SL_RESULT_INLINE_P;
    r->cap_qgroups = ND_SL_RESULT_INLINE_Q;
    r->cap_qvecs = ND_SL_RESULT_INLINE_Q;
}

void
nd_sl_result_fini(nd_sl_result_t *r)
{
    if (r->pvecs != r->pvecs_buf)
        nd_free(r->pvecs);
    if (r->qgroups != r->qgroups_buf)
        nd_free(r->qgroups);
    if (r->qvecs != r->qvecs_buf)
        nd_free(r->qvecs);
    nd_sl_result_init(r);
}

/* Doubles an array that starts in the result's inline buffer. */
static void *
grow(void *arr, const void *inline_buf, uint32_t *cap, size_t elem)
{
    uint32_t ncap = *cap * 2;
    void *p;
    if (arr == inline_buf) {
        p = nd_xmalloc(ncap * elem);
        memcpy(p, arr, *cap * elem);
    } else {
        p = nd_xrealloc(arr, ncap * elem);
    }
    *cap = ncap;
    return p;
}

static void
push_pvec(nd_sl_result_t *r, const nd_sl_vec_t *v)
{
    if (r->npvecs == r->cap_pvecs)
        r->pvecs = grow(r->pvecs, r->pvecs_buf, &r->cap_pvecs, sizeof(*r->pvecs));
    r->pvecs[r->npvecs++] = v;
}

/* Adds vector v to group g, keeping each group's vectors contiguous in qvecs. */
static void
push_qvec(nd_sl_result_t *r, uint32_t g, const nd_sl_vec_t *v)
{
    if (r->nqvecs == r->cap_qvecs)
        r->qvecs = grow(r->qvecs, r->qvecs_buf, &r->cap_qvecs, sizeof(*r->qvecs));
    nd_sl_qres_t *q = &r->qgroups[g];
    uint32_t at = q->first + q->nvecs;
    if (at != r->nqvecs) {
        /* Rare: the same queue name in two matching nodes, with other groups after it. */
        memmove(&r->qvecs[at + 1], &r->qvecs[at], (r->nqvecs - at) * sizeof(*r->qvecs));
        for (uint32_t k = g + 1; k < r->nqgroups; k++)
            r->qgroups[k].first++;
    }
    r->qvecs[at] = v;
    q->nvecs++;
    r->nqvecs++;
}

/* Adds the queue groups of one node. Names are unique within a node, so a group only needs to
 * be searched among those added by earlier nodes, [0, base). */
static void
add_qgroups(nd_sl_result_t *r, const nd_sl_tab_t *t)
{
    uint32_t base = r->nqgroups;
    for (uint32_t i = 0; i <= t->mask; i++) {
        const sl_qgroup_t *qg = qgroup_of_key(nd_sl_tab_at(t, i));
        if (qg == NULL)
            continue;
        /* acquire: pairs with the writer's release store publishing the vector. */
        const nd_sl_vec_t *v = atomic_load_explicit(&qg->vec, memory_order_acquire);
        if (v == NULL || atomic_load_explicit(&v->live, memory_order_relaxed) == 0)
            continue;
        uint32_t g = base;
        for (uint32_t k = 0; k < base; k++) {
            const nd_sl_qres_t *q = &r->qgroups[k];
            if (q->name_len == qg->key.len && memcmp(q->name, qg->name, q->name_len) == 0) {
                g = k;
                break;
            }
        }
        if (g == base) {
            if (r->nqgroups == r->cap_qgroups)
                r->qgroups = grow(r->qgroups, r->qgroups_buf, &r->cap_qgroups, sizeof(*r->qgroups));
            g = r->nqgroups++;
            r->qgroups[g] = (nd_sl_qres_t){
                .name = qg->name, .name_len = qg->key.len, .first = r->nqvecs, .nvecs = 0};
        }
        push_qvec(r, g, v);
    }
}

static void
add_node(nd_sl_result_t *r, const sl_node_t *n)
{
    /* acquire (all three): pairs with the writer's release stores publishing the vector, the ext
     * and the map. */
    const nd_sl_vec_t *v = atomic_load_explicit(&n->psubs, memory_order_acquire);
    if (v != NULL && atomic_load_explicit(&v->live, memory_order_relaxed) != 0)
        push_pvec(r, v);
    const sl_ext_t *x = atomic_load_explicit(&n->ext, memory_order_acquire);
    if (x == NULL)
        return;
    const nd_sl_tab_t *qt = atomic_load_explicit(&x->qgroups, memory_order_acquire);
    if (qt != NULL)
        add_qgroups(r, qt);
}

static inline uint32_t
pick_below(nd_ctx_t *ctx, uint32_t n)
{
    /* Multiply-shift maps 32 random bits onto [0, n) without a division. */
    return (uint32_t)(((nd_ctx_rand(ctx) >> 32) * (uint64_t)n) >> 32);
}

nd_sub_t *
nd_sl_result_qpick(nd_ctx_t *ctx, const nd_sl_result_t *r, uint32_t g)
{
    const nd_sl_qres_t *q = &r->qgroups[g];
    const nd_sl_vec_t *const *vs = r->qvecs + q->first;
    /* Rejection sampling over the union of the group's used slots: uniform among live members.
     * Vectors are kept at least half live, so each try succeeds with probability >= 1/2. */
    for (int tries = 0; tries < 32; tries++) {
        uint64_t total = 0;
        for (uint32_t k = 0; k < q->nvecs; k++)
            total += nd_sl_vec_len(vs[k]);
        if (total == 0)
            return NULL;
        uint32_t x = pick_below(ctx, total > UINT32_MAX ? UINT32_MAX : (uint32_t)total);
        for (uint32_t k = 0; k < q->nvecs; k++) {
            uint32_t n = nd_sl_vec_len(vs[k]);
            if (x < n) {
                nd_sub_t *s = nd_sl_vec_get(vs[k], x);
                if (s != NULL)
                    return s;
                break;
            }
            x -= n;
        }
    }
    /* Members are vanishing under us: take the first one still there. */
    for (uint32_t k = 0; k < q->nvecs; k++) {
        uint32_t n = nd_sl_vec_len(vs[k]);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *s = nd_sl_vec_get(vs[k], i);
            if (s != NULL)
                return s;
        }
    }
    return NULL;
}

nd_sub_t *
nd_sl_result_qeach(nd_ctx_t *ctx, const nd_sl_result_t *r, uint32_t g, const nd_sub_t *skip,
                   bool (*fn)(nd_sub_t *sub, void *arg), void *arg)
{
    const nd_sl_qres_t *q = &r->qgroups[g];
    const nd_sl_vec_t *const *vs = r->qvecs + q->first;
    uint64_t total = 0;
    for (uint32_t k = 0; k < q->nvecs; k++)
        total += nd_sl_vec_len(vs[k]);
    if (total == 0)
        return NULL;
    /* The start: slot i0 of vector k0, at a random position of the group's used slots. */
    uint32_t x = pick_below(ctx, total > UINT32_MAX ? UINT32_MAX : (uint32_t)total);
    uint32_t k0 = 0, i0 = 0;
    for (uint32_t k = 0; k < q->nvecs; k++) {
        uint32_t n = nd_sl_vec_len(vs[k]);
        if (x < n) {
            k0 = k;
            i0 = x;
            break;
        }
        x -= n;
    }
    /* Once around: [i0, len) of k0, every slot of the vectors after it (wrapping), then [0, i0)
     * of k0. A length is read when its vector is reached, so slots published meanwhile are
     * seen and a vector that shrank is not read past its end. */
    for (uint32_t step = 0; step <= q->nvecs; step++) {
        uint32_t k = (k0 + step) % q->nvecs;
        uint32_t from = step == 0 ? i0 : 0;
        uint32_t to = nd_sl_vec_len(vs[k]);
        if (step == q->nvecs && i0 < to)
            to = i0;
        for (uint32_t i = from; i < to; i++) {
            nd_sub_t *s = nd_sl_vec_get(vs[k], i);
            if (s != NULL && s != skip && fn(s, arg))
                return s;
        }
    }
    return NULL;
}

bool
nd_sl_result_each_psub(const nd_sl_result_t *r, bool (*fn)(nd_sub_t *sub, void *arg), void *arg)
{
    for (uint32_t k = 0; k < r->npvecs; k++) {
        const nd_sl_vec_t *v = r->pvecs[k];
        uint32_t n = nd_sl_vec_len(v);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *s = nd_sl_vec_get(v, i);
            if (s != NULL && !fn(s, arg))
                return false;
        }
    }
    return true;
}

/* ---- matching ---- */

/* True when [p, end) has an empty token (including an empty range: a trailing separator). */
static bool
has_empty_token(const char *p, const char *end)
{
    const char *tok = p;
    for (; p < end; p++) {
        if (*p == ND_SUBJ_SEP) {
            if (p == tok)
                return true;
            tok = p + 1;
        }
    }
    return tok == end;
}

/* Matches the tokens in [p, end) below node n. Only the outermost call (top) checks the rest of
 * the subject for empty tokens when it stops early with something matched: nested calls return
 * before it, so its check covers the final result.
 * Returns: false when an empty token was found (the caller then discards the result). */
static bool
match_level(nd_sl_result_t *r, const sl_node_t *n, const char *p, const char *end,
            const char *start, bool top)
{
    for (;;) {
        uint32_t h;
        const char *q = nd_sl_tok_scan(p, end, start, &h);
        if (q == p)
            return false;
        bool last = q == end;
        /* acquire: pairs with the writer's release store publishing the ext. */
        const sl_ext_t *x = atomic_load_explicit(&n->ext, memory_order_acquire);
        const sl_node_t *c = NULL;
        if (x != NULL) {
            /* acquire (all three): pairs with the writer's release stores publishing the nodes
             * and the map. */
            const sl_node_t *w = atomic_load_explicit(&x->fwc, memory_order_acquire);
            if (w != NULL)
                add_node(r, w);
            w = atomic_load_explicit(&x->pwc, memory_order_acquire);
            if (w != NULL) {
                if (last)
                    add_node(r, w);
                else if (!match_level(r, w, q + 1, end, start, false))
                    return false;
            }
            const nd_sl_tab_t *t = atomic_load_explicit(&x->children, memory_order_acquire);
            c = node_of_key(nd_sl_tab_get(t, p, (uint32_t)(q - p), h));
        }
        if (c == NULL) {
            if (last || !top || nd_sl_result_empty(r))
                return true;
            return !has_empty_token(q + 1, end);
        }
        if (last) {
            add_node(r, c);
            return true;
        }
        n = c;
        p = q + 1;
    }
}

/* Adds one walk's fanout (its plain subscriptions, stale slots included, plus its queue groups)
 * to the statistics. Only walks pay for this: a connection's cache answers most publishes. */
static void
count_fanout(nd_sl_t *sl, const nd_sl_result_t *r)
{
    uint64_t f = r->nqgroups;
    for (uint32_t i = 0; i < r->npvecs; i++)
        f += nd_sl_vec_len(r->pvecs[i]);
    if (f == 0)
        return;
    atomic_fetch_add_explicit(&sl->fanout_sum, f, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&sl->fanout_max, memory_order_relaxed);
    while (f > m && !atomic_compare_exchange_weak_explicit(
                        &sl->fanout_max, &m, f, memory_order_relaxed, memory_order_relaxed))
        ;
}

bool
nd_sl_match(nd_ctx_t *ctx, nd_sl_t *sl, const char *subject, size_t len, nd_sl_result_t *r)
{
    (void)ctx;
    r->npvecs = r->nqgroups = r->nqvecs = 0;
    atomic_fetch_add_explicit(&sl->matches, 1, memory_order_relaxed);
    /* The generation is read before the walk: a change racing with the walk bumps it past the
     * recorded value, so a cache never keeps a result newer changes might contradict. */
    r->gen = nd_sl_generation(sl);
    /* acquire: pairs with the release store publishing the root. */
    const sl_node_t *root = atomic_load_explicit(&sl->root, memory_order_acquire);
    if (root == NULL || len == 0 || len > UINT32_MAX)
        return false;
    if (!match_level(r, root, subject, subject + len, subject, true)) {
        r->npvecs = r->nqgroups = r->nqvecs = 0;
        return false;
    }
    count_fanout(sl, r);
    return !nd_sl_result_empty(r);
}

void
nd_sl_stats_add(const nd_sl_t *sl, nd_sl_stats_t *st)
{
    uint64_t walks = atomic_load_explicit(&sl->matches, memory_order_relaxed);
    uint64_t hits = atomic_load_explicit(&sl->cache_hits, memory_order_relaxed);
    uint64_t max = atomic_load_explicit(&sl->fanout_max, memory_order_relaxed);
    st->count += nd_sl_count(sl);
    st->inserts += atomic_load_explicit(&sl->inserts, memory_order_relaxed);
    st->removes += atomic_load_explicit(&sl->removes, memory_order_relaxed);
    st->walks += walks;
    st->cache_hits += hits;
    st->matches += walks + hits;
    st->fanout_sum += atomic_load_explicit(&sl->fanout_sum, memory_order_relaxed);
    if (max > st->fanout_max)
        st->fanout_max = max;
}

/* ---- writer: vectors ---- */

static nd_sl_vec_t *
vec_new(uint32_t cap)
{
    nd_sl_vec_t *v = nd_xcalloc(1, sizeof(*v) + (size_t)cap * sizeof(v->slot[0]));
    v->cap = cap;
    return v;
}

/* Capacity for a vector about to hold `want` subs: exact for one (most subjects have a single
 * subscriber), else twice as many, so growth and compaction stay amortised O(1) per change. */
static uint32_t
vec_cap_for(uint32_t want)
{
    if (want > UINT32_MAX / 2)
        nd_fatal("sublist: too many subscriptions in one vector");
    return want <= 1 ? 1 : 2 * want;
}

/* A compacted copy of old's live subs (old may be NULL) in a private vector of cap slots. */
static nd_sl_vec_t *
vec_rebuild(const nd_sl_vec_t *old, uint32_t cap)
{
    nd_sl_vec_t *v = vec_new(cap);
    uint32_t j = 0;
    if (old != NULL) {
        uint32_t n = atomic_load_explicit(&old->n, memory_order_relaxed);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *s =
                atomic_load_explicit(&((nd_sl_vec_t *)old)->slot[i], memory_order_relaxed);
            if (s == NULL)
                continue;
            atomic_store_explicit(&v->slot[j], s, memory_order_relaxed);
            s->sl_index = j++;
        }
    }
    atomic_store_explicit(&v->n, j, memory_order_relaxed);
    atomic_store_explicit(&v->live, j, memory_order_relaxed);
    return v;
}

/* Retires an unpublished vector; an in-node one is only marked dead (cap 0, so that it is never
 * reused while stale readers may look at it) and freed with its node. */
static void
vec_drop(nd_sl_t *sl, nd_sl_vec_t *v)
{
    if (v->flags & ND_SL_VEC_INNODE)
        v->cap = 0;
    else
        nd_sl_pend_add(&sl->pend, v);
}

static void
vec_publish(nd_sl_t *sl, _Atomic(nd_sl_vec_t *) *ref, nd_sl_vec_t *old, nd_sl_vec_t *v)
{
    /* release: pairs with the readers' acquire load of *ref, publishing v's contents. */
    atomic_store_explicit(ref, v, memory_order_release);
    if (old != NULL)
        vec_drop(sl, old);
}

/* Appends sub to the vector at *ref. When there is none, `first` (an unused in-node vector, or
 * NULL) is published rather than a new one allocated. */
static void
vec_add(nd_sl_t *sl, _Atomic(nd_sl_vec_t *) *ref, nd_sub_t *sub, nd_sl_vec_t *first)
{
    nd_sl_vec_t *v = atomic_load_explicit(ref, memory_order_relaxed);
    uint32_t n = v != NULL ? atomic_load_explicit(&v->n, memory_order_relaxed) : 0;
    if (v == NULL || n == v->cap) {
        nd_sl_vec_t *nv = first;
        if (v != NULL || nv == NULL) {
            uint32_t live = v != NULL ? atomic_load_explicit(&v->live, memory_order_relaxed) : 0;
            nv = vec_rebuild(v, vec_cap_for(live + 1));
        }
        vec_publish(sl, ref, v, nv);
        v = nv;
        n = atomic_load_explicit(&v->n, memory_order_relaxed);
    }
    sub->sl_index = n;
    /* release (slot): pairs with the readers' acquire load of the slot, which may see it through
     * a stale, larger n. release (n): pairs with nd_sl_vec_len's acquire. */
    atomic_store_explicit(&v->slot[n], sub, memory_order_release);
    atomic_store_explicit(&v->n, n + 1, memory_order_release);
    atomic_store_explicit(&v->live, atomic_load_explicit(&v->live, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Removes sub from the vector at *ref. Returns: the number of subs left. */
static uint32_t
vec_del(nd_sl_t *sl, _Atomic(nd_sl_vec_t *) *ref, nd_sub_t *sub)
{
    nd_sl_vec_t *v = atomic_load_explicit(ref, memory_order_relaxed);
    uint32_t i = sub->sl_index;
    uint32_t n = v != NULL ? atomic_load_explicit(&v->n, memory_order_relaxed) : 0;
    if (i >= n || atomic_load_explicit(&v->slot[i], memory_order_relaxed) != sub)
        nd_fatal("sublist: subscription %s not in its vector", sub->subject);
    /* relaxed: a reader that sees NULL does not dereference it. */
    atomic_store_explicit(&v->slot[i], NULL, memory_order_relaxed);
    uint32_t live = atomic_load_explicit(&v->live, memory_order_relaxed) - 1;
    atomic_store_explicit(&v->live, live, memory_order_relaxed);
    if (live == 0) {
        vec_publish(sl, ref, v, NULL);
        return 0;
    }
    if (i + 1 == n) {
        while (n > 0 && atomic_load_explicit(&v->slot[n - 1], memory_order_relaxed) == NULL)
            n--;
        /* release: keeps the ordering of n with the slot stores for nd_sl_vec_len's acquire. */
        atomic_store_explicit(&v->n, n, memory_order_release);
    }
    if (live * 2 < n)
        vec_publish(sl, ref, v, vec_rebuild(v, vec_cap_for(live)));
    return live;
}

/* ---- writer: nodes and queue groups ---- */

/* Offset of a node's in-node area: after the token, 8-byte aligned. */
static inline size_t
area_off(uint32_t len)
{
    return (offsetof(sl_node_t, tok) + len + 7) & ~(size_t)7;
}

static inline void *
node_area(sl_node_t *n)
{
    return (char *)n + area_off(n->key.len);
}

/* A node whose area holds a vector (a leaf when created) or its ext (any other node). The area's
 * content is fixed at creation: the node's ext pointer equals the area exactly when it holds the
 * ext, since a separately allocated ext is never at that address. */
static sl_node_t *
node_new(nd_sl_t *sl, const char *tok, uint32_t len, uint32_t hash, bool leaf)
{
    size_t off = area_off(len);
    size_t size = off + (leaf ? sizeof(nd_sl_vec_t) + sizeof(nd_sub_t *) : sizeof(sl_ext_t));
    sl_node_t *n = nd_xcalloc(1, size);
    memcpy(n->tok, tok, len);
    n->key.len = len;
    n->key.hash = hash;
    if (leaf) {
        nd_sl_vec_t *v = node_area(n);
        v->cap = 1;
        v->flags = ND_SL_VEC_INNODE;
    } else {
        /* relaxed: the node is private until it is published (with release) in its parent. */
        atomic_store_explicit(&n->ext, (sl_ext_t *)node_area(n), memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&sl->nodes, 1, memory_order_relaxed);
    return n;
}

static inline sl_ext_t *
node_ext(sl_node_t *n)
{
    return atomic_load_explicit(&n->ext, memory_order_relaxed);
}

static inline bool
ext_in_node(sl_node_t *n, const sl_ext_t *x)
{
    return (const void *)x == node_area(n);
}

/* The node's unused in-node vector, or NULL (the area holds the ext, or the vector was used). */
static nd_sl_vec_t *
node_first_vec(sl_node_t *n)
{
    nd_sl_vec_t *v = node_area(n);
    if (ext_in_node(n, node_ext(n)) || v->cap == 0)
        return NULL;
    return v;
}

static sl_ext_t *
node_ext_get_or_add(sl_node_t *n)
{
    sl_ext_t *x = node_ext(n);
    if (x == NULL) {
        x = nd_xcalloc(1, sizeof(*x));
        /* release: pairs with the readers' acquire load of n->ext. */
        atomic_store_explicit(&n->ext, x, memory_order_release);
    }
    return x;
}

static bool
ext_empty(sl_ext_t *x)
{
    return atomic_load_explicit(&x->children, memory_order_relaxed) == NULL &&
           atomic_load_explicit(&x->pwc, memory_order_relaxed) == NULL &&
           atomic_load_explicit(&x->fwc, memory_order_relaxed) == NULL &&
           atomic_load_explicit(&x->qgroups, memory_order_relaxed) == NULL;
}

static bool
node_empty(sl_node_t *n)
{
    sl_ext_t *x = node_ext(n);
    return atomic_load_explicit(&n->psubs, memory_order_relaxed) == NULL &&
           (x == NULL || ext_empty(x));
}

/* Queues an unlinked node (and its own ext block, if any) for retirement. */
static void
node_retire(nd_sl_t *sl, sl_node_t *n)
{
    sl_ext_t *x = node_ext(n);
    if (x != NULL && !ext_in_node(n, x))
        nd_sl_pend_add(&sl->pend, x);
    nd_sl_pend_add(&sl->pend, n);
    atomic_fetch_sub_explicit(&sl->nodes, 1, memory_order_relaxed);
}

/* Which link of its parent a node of this token hangs from: a lone `*` or `>` can only be a
 * wildcard (nd_subj_valid_sub accepts no other lone token with these characters as literal). */
static _Atomic(sl_node_t *) *
wildcard_link(sl_ext_t *x, const char *t, uint32_t len)
{
    if (len == 1 && t[0] == ND_SUBJ_PWC)
        return &x->pwc;
    if (len == 1 && t[0] == ND_SUBJ_FWC)
        return &x->fwc;
    return NULL;
}

/* The child of n for token t, or NULL. Ctx: the writer. */
static sl_node_t *
child_get(sl_node_t *n, const char *t, uint32_t len)
{
    sl_ext_t *x = node_ext(n);
    if (x == NULL)
        return NULL;
    _Atomic(sl_node_t *) *wref = wildcard_link(x, t, len);
    if (wref != NULL)
        return atomic_load_explicit(wref, memory_order_relaxed);
    nd_sl_tab_t *tab = atomic_load_explicit(&x->children, memory_order_relaxed);
    return (sl_node_t *)node_of_key(nd_sl_tab_get(tab, t, len, nd_sl_tok_hash(t, len)));
}

/* The child of n for token t, created when missing (as a leaf when `leaf`). */
static sl_node_t *
child_get_or_add(nd_sl_t *sl, sl_node_t *n, const char *t, uint32_t len, bool leaf)
{
    sl_ext_t *x = node_ext_get_or_add(n);
    _Atomic(sl_node_t *) *wref = wildcard_link(x, t, len);
    if (wref != NULL) {
        sl_node_t *c = atomic_load_explicit(wref, memory_order_relaxed);
        if (c == NULL) {
            c = node_new(sl, t, len, 0, leaf);
            /* release: pairs with match_level's acquire load, publishing the new node. */
            atomic_store_explicit(wref, c, memory_order_release);
        }
        return c;
    }
    uint32_t h = nd_sl_tok_hash(t, len);
    nd_sl_tab_t *tab = atomic_load_explicit(&x->children, memory_order_relaxed);
    sl_node_t *c = (sl_node_t *)node_of_key(nd_sl_tab_get(tab, t, len, h));
    if (c == NULL) {
        c = node_new(sl, t, len, h, leaf);
        nd_sl_tab_put(&x->children, &c->key, &sl->pend);
    }
    return c;
}

/* Unlinks child c from its parent p. */
static void
child_unlink(nd_sl_t *sl, sl_node_t *p, sl_node_t *c)
{
    sl_ext_t *x = node_ext(p);
    _Atomic(sl_node_t *) *wref = wildcard_link(x, c->tok, c->key.len);
    if (wref != NULL)
        /* relaxed: unlinking publishes nothing; readers that still hold c keep using it. */
        atomic_store_explicit(wref, NULL, memory_order_relaxed);
    else
        nd_sl_tab_del(&x->children, &c->key, &sl->pend);
}

/* The path from the root to the node of `subject`: path[0] is the root, path[depth] that node.
 * Returns: depth, with *pathp set to buf (cap entries) or to an nd_xmalloc'ed array when the
 * subject is deeper; NULL entries mean the subject's node does not exist. Ctx: the writer. */
static uint32_t
walk_path(nd_sl_t *sl, const char *subject, uint32_t len, sl_node_t **buf, uint32_t cap,
          sl_node_t ***pathp)
{
    sl_node_t **path = buf;
    uint32_t d = 0;
    path[0] = atomic_load_explicit(&sl->root, memory_order_relaxed);
    const char *p = subject, *end = subject + len;
    for (;;) {
        const char *q = memchr(p, ND_SUBJ_SEP, (size_t)(end - p));
        if (q == NULL)
            q = end;
        if (d + 1 == cap) {
            cap *= 2;
            if (path == buf) {
                path = nd_xmalloc(cap * sizeof(*path));
                memcpy(path, buf, (d + 1) * sizeof(*path));
            } else {
                path = nd_xrealloc(path, cap * sizeof(*path));
            }
        }
        sl_node_t *c = path[d] != NULL ? child_get(path[d], p, (uint32_t)(q - p)) : NULL;
        path[++d] = c;
        if (q == end)
            break;
        p = q + 1;
    }
    *pathp = path;
    return d;
}

/* Unlinks the empty nodes at the bottom of path (never the root), and drops the empty ext of the
 * first node that stays, if it has one of its own. */
static void
prune(nd_sl_t *sl, sl_node_t **path, uint32_t depth)
{
    uint32_t d = depth;
    while (d > 0 && node_empty(path[d])) {
        child_unlink(sl, path[d - 1], path[d]);
        node_retire(sl, path[d]);
        d--;
    }
    sl_node_t *n = path[d];
    sl_ext_t *x = node_ext(n);
    if (x != NULL && !ext_in_node(n, x) && ext_empty(x)) {
        /* relaxed: unpublishing; readers see the old, empty ext (alive until they exit) or NULL. */
        atomic_store_explicit(&n->ext, NULL, memory_order_relaxed);
        nd_sl_pend_add(&sl->pend, x);
    }
}

/* Ends a change: generation bump, then retirement of what the change unlinked. */
static void
commit(nd_ctx_t *ctx, nd_sl_t *sl)
{
    /* release: pairs with nd_sl_generation's acquire; orders every store of this change (and the
     * unlinks) before the new value, and precedes the retirements below in program order. */
    atomic_fetch_add_explicit(&sl->gen, 1, memory_order_release);
    nd_sl_pend_flush(ctx, &sl->pend);
}

/* ---- writer: public operations ---- */

void
nd_sl_init(nd_sl_t *sl)
{
    memset(sl, 0, sizeof(*sl));
    atomic_init(&sl->root, NULL);
    atomic_init(&sl->gen, 0);
    atomic_init(&sl->count, 0);
    atomic_init(&sl->nodes, 0);
}

bool
nd_sl_insert(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *sub)
{
    if (sub->sl_owner != NULL || !nd_subj_valid_sub(sub->subject, sub->subject_len))
        return false;
    if (sub->queue != NULL && !nd_subj_valid_queue(sub->queue, sub->queue_len))
        return false;
    sl_node_t *n = atomic_load_explicit(&sl->root, memory_order_relaxed);
    if (n == NULL) {
        n = node_new(sl, "", 0, 0, false);
        /* release: pairs with nd_sl_match's acquire load of the root. */
        atomic_store_explicit(&sl->root, n, memory_order_release);
    }
    /* A node created for the last token of a plain subscription is a leaf (its area holds a
     * vector); any other gets its ext in its area. */
    bool plain = sub->queue == NULL;
    const char *p = sub->subject, *end = p + sub->subject_len;
    for (;;) {
        const char *q = memchr(p, ND_SUBJ_SEP, (size_t)(end - p));
        if (q == NULL)
            q = end;
        n = child_get_or_add(sl, n, p, (uint32_t)(q - p), plain && q == end);
        if (q == end)
            break;
        p = q + 1;
    }
    if (!plain) {
        sl_ext_t *x = node_ext_get_or_add(n);
        uint32_t h = nd_sl_hash_bytes(sub->queue, sub->queue_len);
        nd_sl_tab_t *qt = atomic_load_explicit(&x->qgroups, memory_order_relaxed);
        sl_qgroup_t *qg =
            (sl_qgroup_t *)qgroup_of_key(nd_sl_tab_get(qt, sub->queue, sub->queue_len, h));
        if (qg == NULL) {
            qg = nd_xcalloc(1, sizeof(*qg) + sub->queue_len + 1);
            memcpy(qg->name, sub->queue, sub->queue_len);
            qg->key.len = sub->queue_len;
            qg->key.hash = h;
            nd_sl_tab_put(&x->qgroups, &qg->key, &sl->pend);
        }
        vec_add(sl, &qg->vec, sub, NULL);
        sub->sl_set = qg;
    } else {
        vec_add(sl, &n->psubs, sub, node_first_vec(n));
        sub->sl_set = n;
    }
    sub->sl_owner = sl;
    atomic_fetch_add_explicit(&sl->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sl->inserts, 1, memory_order_relaxed);
    commit(ctx, sl);
    return true;
}

/* Removes sub (which is in sl) without committing. Only when its vector empties does it walk the
 * subject from the root, to find the queue group's node and the path to prune. */
static void
remove_one(nd_sl_t *sl, nd_sub_t *sub)
{
    sl_qgroup_t *qg = NULL;
    uint32_t left;
    if (sub->queue != NULL) {
        qg = sub->sl_set;
        left = vec_del(sl, &qg->vec, sub);
    } else {
        left = vec_del(sl, &((sl_node_t *)sub->sl_set)->psubs, sub);
    }
    if (left == 0) {
        sl_node_t *buf[16], **path;
        uint32_t depth = walk_path(sl, sub->subject, sub->subject_len, buf, 16, &path);
        sl_node_t *n = path[depth];
        if (n == NULL || (qg == NULL && n != sub->sl_set))
            nd_fatal("sublist: subscription %s not at its node", sub->subject);
        if (qg != NULL) {
            nd_sl_tab_del(&node_ext(n)->qgroups, &qg->key, &sl->pend);
            nd_sl_pend_add(&sl->pend, qg);
        }
        prune(sl, path, depth);
        if (path != buf)
            nd_free(path);
    }
    sub->sl_owner = NULL;
    sub->sl_set = NULL;
    atomic_fetch_sub_explicit(&sl->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sl->removes, 1, memory_order_relaxed);
}

bool
nd_sl_remove(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *sub)
{
    if (sub->sl_owner != sl)
        return false;
    remove_one(sl, sub);
    commit(ctx, sl);
    return true;
}

size_t
nd_sl_remove_batch(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *const *subs, size_t n, bool *removed)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = subs[i] != NULL && subs[i]->sl_owner == sl;
        if (ok) {
            remove_one(sl, subs[i]);
            k++;
        }
        if (removed != NULL)
            removed[i] = ok;
    }
    if (k != 0)
        commit(ctx, sl);
    return k;
}

/* ---- writer: teardown ---- */

typedef void (*on_remove_fn)(nd_ctx_t *ctx, nd_sub_t *sub, void *arg);

/* Hands every sub of a detached vector to on_remove and queues the vector for retirement. */
static void
clear_vec(nd_ctx_t *ctx, nd_sl_t *sl, nd_sl_vec_t *v, on_remove_fn on_remove, void *arg)
{
    if (v == NULL)
        return;
    uint32_t n = atomic_load_explicit(&v->n, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        nd_sub_t *s = atomic_load_explicit(&v->slot[i], memory_order_relaxed);
        if (s == NULL)
            continue;
        s->sl_owner = NULL;
        s->sl_set = NULL;
        /* Last use of s here: on_remove may drop the last reference. */
        if (on_remove != NULL)
            on_remove(ctx, s, arg);
    }
    vec_drop(sl, v);
}

/* Tears down a detached subtree (the generation was bumped already); everything goes to the
 * pending list, which the caller flushes. */
static void
clear_node(nd_ctx_t *ctx, nd_sl_t *sl, sl_node_t *n, on_remove_fn on_remove, void *arg)
{
    sl_ext_t *x = node_ext(n);
    if (x != NULL) {
        nd_sl_tab_t *t = atomic_load_explicit(&x->children, memory_order_relaxed);
        if (t != NULL) {
            for (uint32_t i = 0; i <= t->mask; i++) {
                sl_node_t *c = (sl_node_t *)node_of_key(nd_sl_tab_at(t, i));
                if (c != NULL)
                    clear_node(ctx, sl, c, on_remove, arg);
            }
            nd_sl_pend_add(&sl->pend, t);
        }
        sl_node_t *w = atomic_load_explicit(&x->pwc, memory_order_relaxed);
        if (w != NULL)
            clear_node(ctx, sl, w, on_remove, arg);
        w = atomic_load_explicit(&x->fwc, memory_order_relaxed);
        if (w != NULL)
            clear_node(ctx, sl, w, on_remove, arg);
        nd_sl_tab_t *qt = atomic_load_explicit(&x->qgroups, memory_order_relaxed);
        if (qt != NULL) {
            for (uint32_t i = 0; i <= qt->mask; i++) {
                sl_qgroup_t *qg = (sl_qgroup_t *)qgroup_of_key(nd_sl_tab_at(qt, i));
                if (qg == NULL)
                    continue;
                clear_vec(ctx, sl, atomic_load_explicit(&qg->vec, memory_order_relaxed), on_remove,
                          arg);
                nd_sl_pend_add(&sl->pend, qg);
            }
            nd_sl_pend_add(&sl->pend, qt);
        }
    }
    clear_vec(ctx, sl, atomic_load_explicit(&n->psubs, memory_order_relaxed), on_remove, arg);
    node_retire(sl, n);
}

static void
each_vec(nd_sl_vec_t *v, void (*fn)(nd_sub_t *sub, void *arg), void *arg)
{
    if (v == NULL)
        return;
    uint32_t n = atomic_load_explicit(&v->n, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        nd_sub_t *s = atomic_load_explicit(&v->slot[i], memory_order_relaxed);
        if (s != NULL)
            fn(s, arg);
    }
}

static void
each_node(sl_node_t *n, void (*fn)(nd_sub_t *sub, void *arg), void *arg)
{
    sl_ext_t *x = node_ext(n);
    if (x != NULL) {
        nd_sl_tab_t *t = atomic_load_explicit(&x->children, memory_order_relaxed);
        for (uint32_t i = 0; t != NULL && i <= t->mask; i++) {
            sl_node_t *c = (sl_node_t *)node_of_key(nd_sl_tab_at(t, i));
            if (c != NULL)
                each_node(c, fn, arg);
        }
        sl_node_t *w = atomic_load_explicit(&x->pwc, memory_order_relaxed);
        if (w != NULL)
            each_node(w, fn, arg);
        w = atomic_load_explicit(&x->fwc, memory_order_relaxed);
        if (w != NULL)
            each_node(w, fn, arg);
        nd_sl_tab_t *qt = atomic_load_explicit(&x->qgroups, memory_order_relaxed);
        for (uint32_t i = 0; qt != NULL && i <= qt->mask; i++) {
            sl_qgroup_t *qg = (sl_qgroup_t *)qgroup_of_key(nd_sl_tab_at(qt, i));
            if (qg != NULL)
                each_vec(atomic_load_explicit(&qg->vec, memory_order_relaxed), fn, arg);
        }
    }
    each_vec(atomic_load_explicit(&n->psubs, memory_order_relaxed), fn, arg);
}

void
nd_sl_each(nd_sl_t *sl, void (*fn)(nd_sub_t *sub, void *arg), void *arg)
{
    sl_node_t *root = atomic_load_explicit(&sl->root, memory_order_relaxed);
    if (root != NULL)
        each_node(root, fn, arg);
}

void
nd_sl_fini(nd_ctx_t *ctx, nd_sl_t *sl, on_remove_fn on_remove, void *arg)
{
    sl_node_t *root = atomic_load_explicit(&sl->root, memory_order_relaxed);
    /* relaxed: unpublishing; readers either see the old root (alive until they exit) or NULL. */
    atomic_store_explicit(&sl->root, NULL, memory_order_relaxed);
    atomic_store_explicit(&sl->count, 0, memory_order_relaxed);
    commit(ctx, sl);
    if (root != NULL)
        clear_node(ctx, sl, root, on_remove, arg);
    /* The generation was bumped above, before anything below the root was queued. */
    nd_sl_pend_flush(ctx, &sl->pend);
    nd_sl_pend_fini(&sl->pend);
}

typedef struct sl_heap {
    nd_sl_t sl;
    nd_epoch_entry_t retire;
} sl_heap_t;

nd_sl_t *
nd_sl_new(void)
{
    sl_heap_t *h = nd_xaligned(sizeof(*h));
    nd_sl_init(&h->sl);
    return &h->sl;
}

static void
sl_heap_free_cb(nd_epoch_entry_t *e)
{
    nd_free(ND_EPOCH_CONTAINER(e, sl_heap_t, retire));
}

void
nd_sl_free(nd_ctx_t *ctx, nd_sl_t *sl, on_remove_fn on_remove, void *arg)
{
    sl_heap_t *h = ND_EPOCH_CONTAINER(sl, sl_heap_t, sl);
    nd_sl_fini(ctx, sl, on_remove, arg);
    nd_epoch_retire(ctx, &h->retire, sl_heap_free_cb);
}
