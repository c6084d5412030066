/* The indexes of an account's MQTT state (see mqtt_index.h).
 *
 * The map is a ck_hs set of pointers to the keys the objects embed, hashed on (owner, bytes).
 * The trie keeps no table per node: each node is in the one map under (its parent, its token),
 * and lists its children (a doubly linked list, so a node leaves its parent in O(1)) for the
 * wildcards. A node lives while it holds a value or has children; removing a subject prunes the
 * nodes it leaves empty, up to the root, which always stays.
 */
#include <string.h>

#include "actors/alloc.h"
#include "mqtt/mqtt_index.h"
#include "util/log.h"

/* ---- the map ---- */

static unsigned long
hs_hash(const void *obj, unsigned long seed)
{
    const nd_mqtt_mkey_t *k = obj;
    uint64_t h = (uint64_t)seed ^ 0xcbf29ce484222325ull;
    h = (h ^ (uint64_t)(uintptr_t)k->owner) * 0x100000001b3ull;
    for (size_t i = 0; i < k->len; i++)
        h = (h ^ (uint8_t)k->s[i]) * 0x100000001b3ull;
    /* FNV's low bits are weak on short keys: ck_hs takes the slot from them. */
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (unsigned long)h;
}

static bool
hs_cmp(const void *a, const void *b)
{
    const nd_mqtt_mkey_t *x = a, *y = b;
    return x->owner == y->owner && x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

void
nd_mqtt_map_init(nd_mqtt_map_t *m)
{
    if (!ck_hs_init(&m->hs, CK_HS_MODE_SPMC | CK_HS_MODE_OBJECT | CK_HS_MODE_DELETE, hs_hash,
                    hs_cmp, &nd_ck_malloc, 16, 0x9e3779b9))
        nd_fatal("mqtt: cannot allocate an index");
}

void
nd_mqtt_map_fini(nd_mqtt_map_t *m)
{
    ck_hs_destroy(&m->hs);
}

nd_mqtt_mkey_t *
nd_mqtt_map_get(nd_mqtt_map_t *m, const void *owner, const char *s, size_t len)
{
    nd_mqtt_mkey_t k = {.owner = owner, .s = s, .len = len};
    return ck_hs_get(&m->hs, CK_HS_HASH(&m->hs, hs_hash, &k), &k);
}

void
nd_mqtt_map_put(nd_mqtt_map_t *m, nd_mqtt_mkey_t *k)
{
    if (!ck_hs_put(&m->hs, CK_HS_HASH(&m->hs, hs_hash, k), k))
        nd_fatal("mqtt: cannot grow an index");
}

void
nd_mqtt_map_del(nd_mqtt_map_t *m, nd_mqtt_mkey_t *k)
{
    ck_hs_remove(&m->hs, CK_HS_HASH(&m->hs, hs_hash, k), k);
}

size_t
nd_mqtt_map_count(nd_mqtt_map_t *m)
{
    return ck_hs_count(&m->hs);
}

bool
nd_mqtt_map_next(nd_mqtt_map_t *m, ck_hs_iterator_t *it, nd_mqtt_mkey_t **k)
{
    void *p;
    if (!ck_hs_next(&m->hs, it, &p))
        return false;
    *k = p;
    return true;
}

/* ---- the retained subjects' trie ---- */

typedef struct nd_mqtt_rnode {
    nd_mqtt_mkey_t key; /* (parent, token) */
    struct nd_mqtt_rnode *parent;
    struct nd_mqtt_rnode *kids;        /* the first child */
    struct nd_mqtt_rnode *prev, *next; /* siblings */
    void *val;
    char tok[];
} rnode_t;

static rnode_t *
node_new(rnode_t *parent, const char *tok, size_t len)
{
    rnode_t *n = nd_xcalloc(1, sizeof *n + len + 1);
    memcpy(n->tok, tok, len);
    n->key.owner = parent;
    n->key.s = n->tok;
    n->key.len = len;
    n->parent = parent;
    return n;
}

void
nd_mqtt_rtree_init(nd_mqtt_rtree_t *t)
{
    nd_mqtt_map_init(&t->edges);
    t->root = node_new(NULL, "", 0);
    t->count = 0;
}

static void
free_subtree(rnode_t *n, void (*free_val)(void *val))
{
    while (n->kids != NULL) {
        rnode_t *k = n->kids;
        n->kids = k->next;
        free_subtree(k, free_val);
    }
    if (n->val != NULL && free_val != NULL)
        free_val(n->val);
    nd_free(n);
}

void
nd_mqtt_rtree_fini(nd_mqtt_rtree_t *t, void (*free_val)(void *val))
{
    free_subtree(t->root, free_val);
    t->root = NULL;
    nd_mqtt_map_fini(&t->edges);
    t->count = 0;
}

/* The token at p (p <= end): its end, the next '.' or end. */
static const char *
tok_end(const char *p, const char *end)
{
    const char *d = memchr(p, '.', (size_t)(end - p));
    return d != NULL ? d : end;
}

static rnode_t *
child(nd_mqtt_rtree_t *t, rnode_t *n, const char *tok, size_t len)
{
    nd_mqtt_mkey_t *k = nd_mqtt_map_get(&t->edges, n, tok, len);
    return (rnode_t *)k; /* the key is the node's first member */
}

static rnode_t *
find(nd_mqtt_rtree_t *t, const char *subj, size_t len)
{
    if (len == 0)
        return NULL;
    rnode_t *n = t->root;
    const char *p = subj, *end = subj + len;
    for (;;) {
        const char *te = tok_end(p, end);
        n = child(t, n, p, (size_t)(te - p));
        if (n == NULL || te == end)
            return n;
        p = te + 1;
    }
}

void *
nd_mqtt_rtree_get(nd_mqtt_rtree_t *t, const char *subj, size_t len)
{
    rnode_t *n = find(t, subj, len);
    return n != NULL ? n->val : NULL;
}

void *
nd_mqtt_rtree_set(nd_mqtt_rtree_t *t, const char *subj, size_t len, void *val)
{
    if (len == 0 || val == NULL)
        return NULL;
    rnode_t *n = t->root;
    const char *p = subj, *end = subj + len;
    for (;;) {
        const char *te = tok_end(p, end);
        size_t tl = (size_t)(te - p);
        rnode_t *c = child(t, n, p, tl);
        if (c == NULL) {
            c = node_new(n, p, tl);
            nd_mqtt_map_put(&t->edges, &c->key);
            c->next = n->kids;
            if (n->kids != NULL)
                n->kids->prev = c;
            n->kids = c;
        }
        n = c;
        if (te == end)
            break;
        p = te + 1;
    }
    void *old = n->val;
    n->val = val;
    if (old == NULL)
        t->count++;
    return old;
}

void *
nd_mqtt_rtree_del(nd_mqtt_rtree_t *t, const char *subj, size_t len)
{
    rnode_t *n = find(t, subj, len);
    if (n == NULL || n->val == NULL)
        return NULL;
    void *val = n->val;
    n->val = NULL;
    t->count--;
    while (n != t->root && n->val == NULL && n->kids == NULL) {
        rnode_t *parent = n->parent;
        if (n->prev != NULL)
            n->prev->next = n->next;
        else
            parent->kids = n->next;
        if (n->next != NULL)
            n->next->prev = n->prev;
        nd_mqtt_map_del(&t->edges, &n->key);
        nd_free(n);
        n = parent;
    }
    return val;
}

typedef struct match_ctx {
    nd_mqtt_rtree_t *t;
    const char *end;
    void (*fn)(void *val, void *arg);
    void *arg;
    size_t n;
} match_ctx_t;

/* A first-level wildcard skips the subjects that start with '$' (MQTT-4.7.2-1). */
static bool
skipped(const match_ctx_t *mc, const rnode_t *parent, const rnode_t *c)
{
    return parent == mc->t->root && c->key.len > 0 && c->tok[0] == '$';
}

static void
emit_subtree(match_ctx_t *mc, rnode_t *n)
{
    if (n->val != NULL) {
        mc->fn(n->val, mc->arg);
        mc->n++;
    }
    for (rnode_t *c = n->kids; c != NULL; c = c->next)
        emit_subtree(mc, c);
}

/* Matches the filter's tokens from p (NULL: all consumed) below n. */
static void
walk(match_ctx_t *mc, rnode_t *n, const char *p)
{
    if (p == NULL) {
        if (n->val != NULL) {
            mc->fn(n->val, mc->arg);
            mc->n++;
        }
        return;
    }
    const char *te = tok_end(p, mc->end);
    size_t tl = (size_t)(te - p);
    const char *next = te < mc->end ? te + 1 : NULL;
    if (tl == 1 && p[0] == '>' && next == NULL) {
        for (rnode_t *c = n->kids; c != NULL; c = c->next)
            if (!skipped(mc, n, c))
                emit_subtree(mc, c);
    } else if (tl == 1 && p[0] == '*') {
        for (rnode_t *c = n->kids; c != NULL; c = c->next)
            if (!skipped(mc, n, c))
                walk(mc, c, next);
    } else {
        rnode_t *c = child(mc->t, n, p, tl);
        if (c != NULL)
            walk(mc, c, next);
    }
}

size_t
nd_mqtt_rtree_match(nd_mqtt_rtree_t *t, const char *filter, size_t len,
                    void (*fn)(void *val, void *arg), void *arg)
{
    if (len == 0 || t->count == 0)
        return 0;
    match_ctx_t mc = {.t = t, .end = filter + len, .fn = fn, .arg = arg};
    walk(&mc, t->root, filter);
    return mc.n;
}
