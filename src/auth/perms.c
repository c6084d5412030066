/* Publish/subscribe permissions, reply permissions and their per-connection caches; see perms.h
 * for the rules (nats-server's) and the references.
 *
 * Invariants:
 *  - A sealed nd_permset_t is never written again except for its reference count, so readers on
 *    any thread need no synchronisation beyond the reference they hold.
 *  - Within a list, each entry ends at the trie node reached by its subject's tokens (`*` and `>`
 *    tokens go to the node's pwc/fwc child, others to the literal child of that text); a node
 *    has `plain` set when a plain entry ends there and lists the queue entries that end there.
 *    Literal children are sorted by (length, bytes) once the list is sealed.
 *  - Matching follows nats-server's matchLevel: at a node with tokens left, the fwc child matches
 *    all of them, the pwc child and the literal child each take one token; with no token left the
 *    node itself matches. Each node is reached by exactly one token position, so it is visited at
 *    most once per match.
 *  - Caches are set associative (4 ways) with round-robin replacement inside a set, so they never
 *    exceed their size and need no pruning pass; an entry's key is owned by the entry.
 */
#include "auth/perms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "subj/subject.h"
#include "auth/jwt.h"

#define WAYS 4

/* Subject hash for the caches and the build table: whole 8-byte words folded in with one
 * multiply each, the tail read as one (overlapping) word, then the splitmix64 finaliser; about
 * as fast as the sublist's hash (bench_perms: ~8 ns per cache hit). Not keyed: a client choosing
 * subjects can at worst make its own connection's bounded caches miss. */
static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t
load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t
load4(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint32_t
subj_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;
    if (len >= 8) {
        /* Whole words, then the last eight bytes (overlapping the previous word if need be). */
        const char *end = s + len;
        for (; s + 8 < end; s += 8)
            h = (h ^ load8(s)) * 0xff51afd7ed558ccdull;
        w = load8(end - 8);
    } else if (len >= 4) {
        w = load4(s) | load4(s + len - 4) << 32;
    } else if (len > 0) {
        w = (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[len / 2] << 8 |
            (uint64_t)(unsigned char)s[len - 1] << 16;
    } else {
        w = 0;
    }
    h = mix64(h ^ w);
    return (uint32_t)(h ^ (h >> 32));
}

/* ---- building -------------------------------------------------------------------------------- */

nd_permset_t *
nd_perms_new(void)
{
    nd_permset_t *p = nd_new(nd_permset_t);
    atomic_init(&p->refs, 1);
    return p;
}

static bool
has_wild(const char *s, size_t len)
{
    return !nd_subj_is_literal(s, len);
}

/* A binary-safe copy (subjects may hold any byte but blanks, NUL included), NUL-terminated. */
static char *
dup_bytes(const char *s, size_t n)
{
    char *d = nd_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void
list_push(nd_perm_list_t *l, const char *s, size_t slen, const char *q, size_t qlen)
{
    if (l->n == l->cap) {
        l->cap = (uint32_t)nd_grow_cap(l->cap, (size_t)l->n + 1, 4);
        l->v = nd_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    nd_perm_entry_t *e = &l->v[l->n++];
    e->subject = dup_bytes(s, slen);
    e->slen = (uint32_t)slen;
    e->subj_wild = has_wild(s, slen);
    e->queue = q != NULL ? dup_bytes(q, qlen) : NULL;
    e->qlen = q != NULL ? (uint32_t)qlen : 0;
    e->queue_wild = q != NULL && has_wild(q, qlen);
    if (q != NULL)
        l->has_queue = true;
}

static bool
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* strings.Fields: up to three blank-separated fields (the third only to detect too many). */
static size_t
fields(const char *s, size_t len, const char *f[3], size_t fl[3])
{
    size_t n = 0, i = 0;
    while (i < len && n < 3) {
        while (i < len && is_blank(s[i]))
            i++;
        if (i == len)
            break;
        size_t st = i;
        while (i < len && !is_blank(s[i]))
            i++;
        f[n] = s + st;
        fl[n] = i - st;
        n++;
    }
    return n;
}

nd_perms_add_t
nd_perms_add(nd_permset_t *p, nd_perms_kind_t kind, const char *entry, size_t len)
{
    if (p->sealed || entry == NULL)
        return ND_PERMS_ADD_INVALID;
    const char *f[3];
    size_t fl[3];
    size_t nf;
    switch (kind) {
    case ND_PERMS_PUB_ALLOW:
        /* Only a valid subject; "subj queue" is invalid here (and was refused by the config). */
        p->pub_allow_set = true;
        if (!nd_subj_valid_sub(entry, len))
            return ND_PERMS_ADD_INVALID;
        list_push(&p->pub_allow, entry, len, NULL, 0);
        return ND_PERMS_ADD_OK;
    case ND_PERMS_PUB_DENY:
        if (nd_subj_valid_sub(entry, len)) {
            list_push(&p->pub_deny, entry, len, NULL, 0);
            return ND_PERMS_ADD_OK;
        }
        /* A queue qualifier means nothing for publish: keep the subject's scope. */
        nf = fields(entry, len, f, fl);
        if (nf < 1 || nf > 2 || !nd_subj_valid_sub(f[0], fl[0]) ||
            (nf == 2 && !nd_subj_valid_sub(f[1], fl[1])))
            return ND_PERMS_ADD_INVALID;
        list_push(&p->pub_deny, f[0], fl[0], NULL, 0);
        return nf == 2 ? ND_PERMS_ADD_QUEUE_IGNORED : ND_PERMS_ADD_OK;
    case ND_PERMS_SUB_ALLOW:
    case ND_PERMS_SUB_DENY:
        if (kind == ND_PERMS_SUB_ALLOW)
            p->sub_allow_set = true;
        /* splitSubjectQueue: one or two fields, each a valid subject. */
        nf = fields(entry, len, f, fl);
        if (nf < 1 || nf > 2 || !nd_subj_valid_sub(f[0], fl[0]) ||
            (nf == 2 && !nd_subj_valid_sub(f[1], fl[1])))
            return ND_PERMS_ADD_INVALID;
        list_push(kind == ND_PERMS_SUB_ALLOW ? &p->sub_allow : &p->sub_deny, f[0], fl[0],
                  nf == 2 ? f[1] : NULL, nf == 2 ? fl[1] : 0);
        return ND_PERMS_ADD_OK;
    }
    return ND_PERMS_ADD_INVALID;
}

void
nd_perms_set_pub_allow_present(nd_permset_t *p)
{
    if (!p->sealed)
        p->pub_allow_set = true;
}

void
nd_perms_set_responses(nd_permset_t *p, int64_t max, int64_t ttl_ns)
{
    if (p->sealed)
        return;
    p->has_resp = true;
    p->resp_max = max != 0 ? max : ND_PERMS_RESP_DEFAULT_MAX;
    p->resp_ttl_ns = ttl_ns != 0 ? ttl_ns : ND_PERMS_RESP_DEFAULT_TTL_NS;
    /* "We turn off the blanket allow statement": responses only make sense when publishing is
     * otherwise restricted. */
    p->pub_allow_set = true;
}

struct nd_perm_node {
    struct nd_perm_edge *lit; /* literal children, sorted by (len, bytes) after sealing */
    uint32_t nlit, caplit;
    nd_perm_node_t *pwc, *fwc;
    uint32_t *qents; /* indexes of queue entries ending here */
    uint32_t nq, capq;
    bool plain;
};

typedef struct nd_perm_edge {
    const char *tok; /* points into the entry's subject, which lives as long as the list */
    uint32_t len;
    nd_perm_node_t *child;
} nd_perm_edge_t;

/* While a list is built, (parent, token) -> child lookups go through one temporary hash table,
 * so building is linear in the total number of tokens even when a node has thousands of literal
 * children (big allow lists made from JWT permissions). */
typedef struct build_slot {
    const nd_perm_node_t *parent;
    const char *tok;
    uint32_t len;
    nd_perm_node_t *child;
} build_slot_t;

typedef struct build {
    build_slot_t *slots;
    size_t mask;
} build_t;

static nd_perm_node_t *
child_for(build_t *b, nd_perm_node_t *n, const char *t, size_t len)
{
    if (len == 1 && t[0] == ND_SUBJ_PWC)
        return n->pwc != NULL ? n->pwc : (n->pwc = nd_new(nd_perm_node_t));
    if (len == 1 && t[0] == ND_SUBJ_FWC)
        return n->fwc != NULL ? n->fwc : (n->fwc = nd_new(nd_perm_node_t));
    size_t h = (subj_hash(t, len) ^ (size_t)((uintptr_t)n * 0x9e3779b97f4a7c15ull)) & b->mask;
    for (;; h = (h + 1) & b->mask) {
        build_slot_t *sl = &b->slots[h];
        if (sl->parent == NULL)
            break;
        if (sl->parent == n && sl->len == len && memcmp(sl->tok, t, len) == 0)
            return sl->child;
    }
    if (n->nlit == n->caplit) {
        n->caplit = (uint32_t)nd_grow_cap(n->caplit, (size_t)n->nlit + 1, 2);
        n->lit = nd_xrealloc(n->lit, n->caplit * sizeof *n->lit);
    }
    nd_perm_edge_t *e = &n->lit[n->nlit++];
    e->tok = t;
    e->len = (uint32_t)len;
    e->child = nd_new(nd_perm_node_t);
    b->slots[h] = (build_slot_t){n, t, (uint32_t)len, e->child};
    return e->child;
}

static int
edge_cmp(const void *a, const void *b)
{
    const nd_perm_edge_t *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->tok, y->tok, x->len);
}

/* Every node of a trie, breadth first. Iterative on purpose: a pattern may have tens of thousands
 * of tokens (a JWT can carry one), and recursion that deep could overflow a worker's stack. */
static nd_perm_node_t **
all_nodes(nd_perm_node_t *root, size_t *count)
{
    size_t n = 0, cap = 16;
    nd_perm_node_t **v = nd_xmalloc(cap * sizeof *v);
    if (root != NULL)
        v[n++] = root;
    for (size_t i = 0; i < n; i++) {
        nd_perm_node_t *x = v[i];
        size_t need = n + x->nlit + 2;
        if (need > cap) {
            cap = nd_grow_cap(cap, need, 16);
            v = nd_xrealloc(v, cap * sizeof *v);
        }
        for (uint32_t k = 0; k < x->nlit; k++)
            v[n++] = x->lit[k].child;
        if (x->pwc != NULL)
            v[n++] = x->pwc;
        if (x->fwc != NULL)
            v[n++] = x->fwc;
    }
    *count = n;
    return v;
}

static void
trie_seal(nd_perm_node_t *root)
{
    size_t n;
    nd_perm_node_t **v = all_nodes(root, &n);
    for (size_t i = 0; i < n; i++)
        if (v[i]->nlit > 1)
            qsort(v[i]->lit, v[i]->nlit, sizeof *v[i]->lit, edge_cmp);
    nd_free(v);
}

static void
trie_free(nd_perm_node_t *root)
{
    size_t n;
    nd_perm_node_t **v = all_nodes(root, &n);
    for (size_t i = 0; i < n; i++) {
        nd_free(v[i]->lit);
        nd_free(v[i]->qents);
        nd_free(v[i]);
    }
    nd_free(v);
}

static void
list_seal(nd_perm_list_t *l)
{
    l->root = nd_new(nd_perm_node_t);
    size_t ntok = 0;
    for (uint32_t i = 0; i < l->n; i++)
        ntok += nd_subj_tokens(l->v[i].subject, l->v[i].slen);
    build_t b;
    size_t size = 16;
    while (size < ntok * 2)
        size *= 2;
    b.slots = nd_xcalloc(size, sizeof *b.slots);
    b.mask = size - 1;
    for (uint32_t i = 0; i < l->n; i++) {
        const nd_perm_entry_t *e = &l->v[i];
        nd_perm_node_t *n = l->root;
        size_t pos = 0;
        for (;;) {
            const char *dot = memchr(e->subject + pos, '.', e->slen - pos);
            size_t end = dot ? (size_t)(dot - e->subject) : e->slen;
            n = child_for(&b, n, e->subject + pos, end - pos);
            if (dot == NULL)
                break;
            pos = end + 1;
        }
        if (e->queue == NULL) {
            n->plain = true;
        } else {
            if (n->nq == n->capq) {
                n->capq = (uint32_t)nd_grow_cap(n->capq, (size_t)n->nq + 1, 2);
                n->qents = nd_xrealloc(n->qents, n->capq * sizeof *n->qents);
            }
            n->qents[n->nq++] = i;
        }
    }
    nd_free(b.slots);
    trie_seal(l->root);
}

void
nd_perms_seal(nd_permset_t *p)
{
    if (p->sealed)
        return;
    list_seal(&p->pub_allow);
    list_seal(&p->pub_deny);
    list_seal(&p->sub_allow);
    list_seal(&p->sub_deny);
    p->sealed = true;
}

static void
list_free(nd_perm_list_t *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        nd_free(l->v[i].subject);
        nd_free(l->v[i].queue);
    }
    nd_free(l->v);
    trie_free(l->root);
}

static void
add_all(nd_permset_t *p, nd_perms_kind_t k, const nd_jwt_strlist_t *l, size_t *skipped)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *e = l->v[i];
        size_t len = strlen(e);
        /* The jwt library's checkPermission first: split at single spaces, one token, or two
         * for subscribe entries ("subject queue"), none of them empty. */
        const char *sp = memchr(e, ' ', len);
        bool queue_ok = k == ND_PERMS_SUB_ALLOW || k == ND_PERMS_SUB_DENY;
        bool jwt_ok =
            len > 0 && (sp == NULL || (queue_ok && sp != e && sp + 1 < e + len &&
                                       memchr(sp + 1, ' ', len - (size_t)(sp + 1 - e)) == NULL));
        if (!jwt_ok || nd_perms_add(p, k, e, len) != ND_PERMS_ADD_OK) {
            if (skipped != NULL)
                (*skipped)++;
        }
    }
}

nd_permset_t *
nd_perms_from_jwt(const struct nd_jwt_perms *jp, size_t *skipped)
{
    if (skipped != NULL)
        *skipped = 0;
    if (jp == NULL)
        return NULL;
    bool has_pub = jp->pub.allow.n > 0 || jp->pub.deny.n > 0;
    bool has_sub = jp->sub.allow.n > 0 || jp->sub.deny.n > 0;
    if (!has_pub && !has_sub && !jp->has_resp)
        return NULL;
    nd_permset_t *p = nd_perms_new();
    add_all(p, ND_PERMS_PUB_ALLOW, &jp->pub.allow, skipped);
    add_all(p, ND_PERMS_PUB_DENY, &jp->pub.deny, skipped);
    add_all(p, ND_PERMS_SUB_ALLOW, &jp->sub.allow, skipped);
    add_all(p, ND_PERMS_SUB_DENY, &jp->sub.deny, skipped);
    if (jp->has_resp)
        nd_perms_set_responses(p, jp->resp_max, jp->resp_ttl_ns);
    nd_perms_seal(p);
    return p;
}

nd_permset_t *
nd_perms_ref(nd_permset_t *p)
{
    if (p != NULL)
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void
nd_perms_unref(nd_permset_t *p)
{
    /* acq_rel: the release orders this holder's reads before the free; the acquire of the last
     * holder pairs with every other holder's release, so nothing reads after the free. */
    if (p == NULL || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
        return;
    list_free(&p->pub_allow);
    list_free(&p->pub_deny);
    list_free(&p->sub_allow);
    list_free(&p->sub_deny);
    nd_free(p);
}

/* ---- matching ------------------------------------------------------------------------------- */

typedef struct mres {
    bool plain;  /* a plain entry matched */
    bool queued; /* a queue entry matched */
    bool q_ok;   /* ... and the subscription's queue matches one of those (queueMatches) */
} mres_t;

/* queueMatches for one entry: the literal name, or a subset of a wildcard queue pattern. */
static bool
queue_ok(const nd_perm_entry_t *e, const char *q, size_t qlen)
{
    if (e->qlen == qlen && memcmp(e->queue, q, qlen) == 0)
        return true;
    return e->queue_wild && nd_subj_subset(q, qlen, e->queue, e->qlen);
}

typedef struct mctx {
    const nd_perm_list_t *l;
    const char *s, *q;
    size_t slen, qlen;
    mres_t *r;
} mctx_t;

/* Whether the answer is final: a plain entry matched, and for queues nothing more can change. */
static inline bool
decided(const mctx_t *m)
{
    return m->r->plain && m->r->queued && (m->qlen == 0 || m->r->q_ok);
}

static void
record(const mctx_t *m, const nd_perm_node_t *n)
{
    if (n->plain)
        m->r->plain = true;
    if (n->nq > 0) {
        m->r->queued = true;
        for (uint32_t i = 0; i < n->nq && m->qlen > 0 && !m->r->q_ok; i++)
            m->r->q_ok = queue_ok(&m->l->v[n->qents[i]], m->q, m->qlen);
    }
}

static const nd_perm_node_t *
lit_child(const nd_perm_node_t *n, const char *t, size_t len)
{
    uint32_t lo = 0, hi = n->nlit;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const nd_perm_edge_t *e = &n->lit[mid];
        int c = e->len != len ? (e->len < len ? -1 : 1) : memcmp(e->tok, t, len);
        if (c == 0)
            return e->child;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A depth-first walk with an explicit stack (see all_nodes for why not recursion). A frame is a
 * node whose children stand for the token at pos; pos == slen + 1 means no token is left, so the
 * node itself matches. The stack starts on the C stack and moves to the heap only for subjects
 * with very many tokens. */
typedef struct frame {
    const nd_perm_node_t *n;
    size_t pos;
} frame_t;

static void
walk(const mctx_t *m, const nd_perm_node_t *root)
{
    frame_t local[64], *st = local;
    size_t cap = sizeof local / sizeof local[0], top = 0;
    st[top++] = (frame_t){root, 0};
    while (top > 0 && !decided(m)) {
        frame_t f = st[--top];
        if (f.pos > m->slen) {
            record(m, f.n);
            continue;
        }
        if (f.n->fwc != NULL)
            record(m, f.n->fwc);
        const char *dot = memchr(m->s + f.pos, '.', m->slen - f.pos);
        size_t end = dot ? (size_t)(dot - m->s) : m->slen;
        if (top + 2 > cap) {
            size_t ncap = cap * 2;
            frame_t *nst = nd_xmalloc(ncap * sizeof *nst);
            memcpy(nst, st, top * sizeof *st);
            if (st != local)
                nd_free(st);
            st = nst;
            cap = ncap;
        }
        const nd_perm_node_t *c = lit_child(f.n, m->s + f.pos, end - f.pos);
        if (c != NULL)
            st[top++] = (frame_t){c, end + 1};
        if (f.n->pwc != NULL)
            st[top++] = (frame_t){f.n->pwc, end + 1};
    }
    if (st != local)
        nd_free(st);
}

/* Matches subject (its tokens taken literally) against the entries of l. A subject with an empty
 * token matches nothing, as in the sublist. */
static void
list_match(const nd_perm_list_t *l, const char *s, size_t slen, const char *q, size_t qlen,
           mres_t *r)
{
    r->plain = r->queued = r->q_ok = false;
    if (l->root == NULL || slen == 0 || s[0] == '.' || s[slen - 1] == '.' ||
        memmem(s, slen, "..", 2) != NULL)
        return;
    mctx_t m = {l, s, q, slen, qlen, r};
    walk(&m, l->root);
}

bool
nd_perms_pub_allowed(const nd_permset_t *p, const char *subj, size_t len)
{
    if (p == NULL)
        return true;
    mres_t r;
    if (p->pub_allow_set) {
        list_match(&p->pub_allow, subj, len, NULL, 0, &r);
        if (!r.plain)
            return false;
    }
    if (p->pub_deny.n > 0) {
        list_match(&p->pub_deny, subj, len, NULL, 0, &r);
        if (r.plain)
            return false;
    }
    return true;
}

bool
nd_perms_sub_allowed(const nd_permset_t *p, const char *subj, size_t slen, const char *queue,
                     size_t qlen)
{
    if (p == NULL)
        return true;
    bool allowed = true;
    mres_t r;
    if (p->sub_allow_set) {
        list_match(&p->sub_allow, subj, slen, queue, qlen, &r);
        allowed = r.plain;
        if (qlen > 0 && r.queued)
            allowed = r.q_ok;
    }
    if (allowed && p->sub_deny.n > 0) {
        list_match(&p->sub_deny, subj, slen, queue, qlen, &r);
        allowed = !r.plain;
        if (allowed && qlen > 0 && r.queued)
            allowed = !r.q_ok;
    }
    return allowed;
}

/* SubjectsCollide: could one literal subject match both a and b (both valid, may hold
 * wildcards)? Token by token, a wildcard matches anything; a `>` ends the comparison with a
 * yes; otherwise both must have the same number of tokens. */
static bool
collide(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0, j = 0;
    for (;;) {
        size_t ie = i, je = j;
        while (ie < al && a[ie] != '.')
            ie++;
        while (je < bl && b[je] != '.')
            je++;
        bool afwc = ie - i == 1 && a[i] == '>', bfwc = je - j == 1 && b[j] == '>';
        if (afwc || bfwc)
            return true;
        bool apwc = ie - i == 1 && a[i] == '*', bpwc = je - j == 1 && b[j] == '*';
        if (!apwc && !bpwc && (ie - i != je - j || memcmp(a + i, b + j, ie - i) != 0))
            return false;
        bool aend = ie >= al, bend = je >= bl;
        if (aend || bend)
            return aend && bend;
        i = ie + 1;
        j = je + 1;
    }
}

bool
nd_perms_sub_needs_deny_filter(const nd_permset_t *p, const char *subj, size_t slen)
{
    /* Only plain entries filter deliveries, and a literal subscription that one of them matches
     * was refused, so only a wildcard can receive what the filter drops. */
    if (p == NULL || p->sub_deny.n == 0 || nd_subj_is_literal(subj, slen))
        return false;
    for (uint32_t i = 0; i < p->sub_deny.n; i++) {
        const nd_perm_entry_t *e = &p->sub_deny.v[i];
        if (e->queue == NULL && collide(e->subject, e->slen, subj, slen))
            return true;
    }
    return false;
}

bool
nd_perms_deliver_denied(const nd_permset_t *p, const char *subj, size_t slen)
{
    if (p == NULL || p->sub_deny.n == 0)
        return false;
    /* Plain entries only: nats-server 2.9.10's delivery filter (loadMsgDenyFilter) holds the
     * entries as configured, so a "subject queue" one is a subject with a space that no message
     * matches; such an entry refuses SUBs in its queue and nothing else. */
    mres_t r;
    list_match(&p->sub_deny, subj, slen, NULL, 0, &r);
    return r.plain;
}

/* ---- per-connection caches ------------------------------------------------------------------ */

void
nd_perms_conn_init(nd_perms_conn_t *c, nd_permset_t *perms)
{
    memset(c, 0, sizeof *c);
    c->perms = nd_perms_ref(perms);
}

static void
cache_free(nd_perms_cache_entry_t *v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        nd_free(v[i].key);
    nd_free(v);
}

void
nd_perms_conn_fini(nd_perms_conn_t *c)
{
    cache_free(c->pub, ND_PERMS_PUB_CACHE);
    cache_free(c->deny, ND_PERMS_DENY_CACHE);
    if (c->replies != NULL) {
        for (uint32_t i = 0; i <= c->replies_mask; i++) {
            for (nd_perms_reply_t *r = c->replies[i], *nx; r != NULL; r = nx) {
                nx = r->next;
                nd_free(r);
            }
        }
        nd_free(c->replies);
    }
    nd_perms_unref(c->perms);
    memset(c, 0, sizeof *c);
}

static nd_perms_cache_entry_t *
cache_find(nd_perms_cache_entry_t *v, size_t n, const char *key, size_t len, uint32_t hash)
{
    if (v == NULL)
        return NULL;
    nd_perms_cache_entry_t *set = &v[(hash % (n / WAYS)) * WAYS];
    for (int w = 0; w < WAYS; w++)
        if (set[w].key != NULL && set[w].hash == hash && set[w].len == len &&
            memcmp(set[w].key, key, len) == 0)
            return &set[w];
    return NULL;
}

static void
cache_put(nd_perms_cache_entry_t **vp, size_t n, uint32_t *clock, const char *key, size_t len,
          uint32_t hash, bool value)
{
    if (*vp == NULL)
        *vp = nd_xcalloc(n, sizeof **vp);
    nd_perms_cache_entry_t *v = *vp;
    nd_perms_cache_entry_t *set = &v[(hash % (n / WAYS)) * WAYS], *e = NULL;
    for (int w = 0; w < WAYS && e == NULL; w++)
        if (set[w].key == NULL)
            e = &set[w];
    if (e == NULL)
        e = &set[(*clock)++ % WAYS];
    nd_free(e->key);
    e->key = nd_xmalloc(len + 1);
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->len = (uint32_t)len;
    e->hash = hash;
    e->value = value;
}

static nd_perms_reply_t **
reply_slot(nd_perms_conn_t *c, const char *s, size_t len, uint32_t hash)
{
    nd_perms_reply_t **pp = &c->replies[hash & c->replies_mask];
    for (; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->hash == hash && (*pp)->len == len && memcmp((*pp)->subj, s, len) == 0)
            return pp;
    return pp;
}

static void
reply_remove(nd_perms_conn_t *c, nd_perms_reply_t **pp)
{
    nd_perms_reply_t *r = *pp;
    *pp = r->next;
    nd_free(r);
    c->nreplies--;
}

/* responseAllowed: one use of a tracked reply subject. */
static bool
response_allowed(nd_perms_conn_t *c, const char *s, size_t len, int64_t now)
{
    const nd_permset_t *p = c->perms;
    if (c->replies == NULL || c->nreplies == 0)
        return false;
    uint32_t hash = subj_hash(s, len);
    nd_perms_reply_t **pp = reply_slot(c, s, len, hash);
    nd_perms_reply_t *r = *pp;
    if (r == NULL)
        return false;
    r->n++;
    if ((p->resp_max > 0 && r->n > p->resp_max) ||
        (p->resp_ttl_ns > 0 && now - r->t > p->resp_ttl_ns)) {
        reply_remove(c, pp);
        return false;
    }
    return true;
}

/* pubAllowedFullCheck (always the full check: the reduced one is for paths we do not have). */
static bool
pub_check(nd_perms_conn_t *c, const char *subj, size_t len, int64_t now)
{
    const nd_permset_t *p = c->perms;
    if (p == NULL || (!p->pub_allow_set && p->pub_deny.n == 0))
        return true;
    uint32_t hash = subj_hash(subj, len);
    nd_perms_cache_entry_t *e = cache_find(c->pub, ND_PERMS_PUB_CACHE, subj, len, hash);
    if (e != NULL) {
        c->pub_hits++;
        return e->value;
    }
    c->pub_misses++;
    bool allowed = nd_perms_pub_allowed(p, subj, len);
    if (!allowed && p->has_resp) {
        /* Depends on the reply table, which changes: never cached. */
        return response_allowed(c, subj, len, now);
    }
    cache_put(&c->pub, ND_PERMS_PUB_CACHE, &c->pub_clock, subj, len, hash, allowed);
    return allowed;
}

bool
nd_perms_conn_pub(nd_perms_conn_t *c, const char *subj, size_t len, int64_t now_ns)
{
    return pub_check(c, subj, len, now_ns);
}

void
nd_perms_conn_prune_replies(nd_perms_conn_t *c, int64_t now_ns)
{
    const nd_permset_t *p = c->perms;
    if (c->replies == NULL || p == NULL)
        return;
    for (uint32_t i = 0; i <= c->replies_mask; i++) {
        nd_perms_reply_t **pp = &c->replies[i];
        while (*pp != NULL) {
            nd_perms_reply_t *r = *pp;
            if ((p->resp_max > 0 && r->n >= p->resp_max) ||
                (p->resp_ttl_ns > 0 && now_ns - r->t > p->resp_ttl_ns))
                reply_remove(c, pp);
            else
                pp = &r->next;
        }
    }
    c->since_prune = 0;
    c->last_prune = now_ns;
}

static void
replies_grow(nd_perms_conn_t *c)
{
    uint32_t nsize = c->replies == NULL ? 16 : (c->replies_mask + 1) * 2;
    nd_perms_reply_t **nt = nd_xcalloc(nsize, sizeof *nt);
    if (c->replies != NULL) {
        for (uint32_t i = 0; i <= c->replies_mask; i++) {
            for (nd_perms_reply_t *r = c->replies[i], *nx; r != NULL; r = nx) {
                nx = r->next;
                r->next = nt[r->hash & (nsize - 1)];
                nt[r->hash & (nsize - 1)] = r;
            }
        }
        nd_free(c->replies);
    }
    c->replies = nt;
    c->replies_mask = nsize - 1;
}

void
nd_perms_conn_track_reply(nd_perms_conn_t *c, const char *reply, size_t len, int64_t now_ns)
{
    const nd_permset_t *p = c->perms;
    if (p == NULL || !p->has_resp || len == 0)
        return;
    /* Publishable anyway: nothing to track. Like deliverMsg, this uses the full check, so a reply
     * that is tracked already spends one use here and is then started afresh below; a denial is
     * never cached while reply permissions are on. */
    if (pub_check(c, reply, len, now_ns))
        return;
    if (c->replies == NULL || c->nreplies >= (c->replies_mask + 1) * 2)
        replies_grow(c);
    uint32_t hash = subj_hash(reply, len);
    nd_perms_reply_t **pp = reply_slot(c, reply, len, hash);
    if (*pp == NULL) {
        nd_perms_reply_t *r = nd_xmalloc(sizeof *r + len + 1);
        r->next = NULL;
        r->hash = hash;
        r->len = (uint32_t)len;
        memcpy(r->subj, reply, len);
        r->subj[len] = '\0';
        *pp = r;
        c->nreplies++;
    }
    /* A new delivery with the same reply starts it afresh, as the map assignment in deliverMsg. */
    (*pp)->t = now_ns;
    (*pp)->n = 0;
    if (++c->since_prune > ND_PERMS_REPLY_PRUNE_EVERY ||
        now_ns - c->last_prune > ND_PERMS_REPLY_PRUNE_NS)
        nd_perms_conn_prune_replies(c, now_ns);
}

bool
nd_perms_conn_sub(nd_perms_conn_t *c, const char *subj, size_t slen, const char *queue, size_t qlen)
{
    if (c->perms == NULL)
        return true;
    if (!nd_perms_sub_allowed(c->perms, subj, slen, queue, qlen))
        return false;
    if (!c->deny_filter && nd_perms_sub_needs_deny_filter(c->perms, subj, slen))
        c->deny_filter = true;
    return true;
}

bool
nd_perms_conn_deliver_denied(nd_perms_conn_t *c, const char *subj, size_t slen)
{
    if (!c->deny_filter)
        return false;
    uint32_t hash = subj_hash(subj, slen);
    nd_perms_cache_entry_t *e = cache_find(c->deny, ND_PERMS_DENY_CACHE, subj, slen, hash);
    if (e != NULL)
        return e->value;
    bool denied = nd_perms_deliver_denied(c->perms, subj, slen);
    cache_put(&c->deny, ND_PERMS_DENY_CACHE, &c->deny_clock, subj, slen, hash, denied);
    return denied;
}

/* ---- error texts ---------------------------------------------------------------------------- */

size_t
nd_perms_err_pub(char *buf, size_t cap, const char *subj, size_t len)
{
    int n = snprintf(buf, cap, "Permissions Violation for Publish to \"%.*s\"", (int)len, subj);
    return n < 0 ? 0 : (size_t)n;
}

size_t
nd_perms_err_sub(char *buf, size_t cap, const char *subj, size_t slen, const char *queue,
                 size_t qlen)
{
    int n = qlen > 0 ? snprintf(buf, cap,
                                "Permissions Violation for Subscription to \"%.*s\" using queue "
                                "\"%.*s\"",
                                (int)slen, subj, (int)qlen, queue)
                     : snprintf(buf, cap, "Permissions Violation for Subscription to \"%.*s\"",
                                (int)slen, subj);
    return n < 0 ? 0 : (size_t)n;
}

size_t
nd_perms_err_reply(char *buf, size_t cap, const char *reply, size_t len)
{
    int n = snprintf(buf, cap, "Permissions Violation for Publish with Reply of \"%.*s\"", (int)len,
                     reply);
    return n < 0 ? 0 : (size_t)n;
}
