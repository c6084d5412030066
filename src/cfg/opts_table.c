/* The generic side of the option tables (opts_table.h): parse, free, copy and compare a block
 * struct by walking its table. Each function is one switch over nd_opt_type_t, so a new type is
 * added in one place and a new member in its table only.
 */
#include "cfg/opts_table.h"

#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"

#define AT(blk, d)  ((char *)(blk) + (d)->off)
#define CAT(blk, d) ((const char *)(blk) + (d)->off)

/* The first key of a row, for texts that name the option (parseDuration's warning). */
static const char *
row_name(const nd_opt_desc_t *d, const char *e_key, char *buf, size_t len)
{
    if (d->name != NULL)
        return d->name;
    if (e_key != NULL)
        return e_key;
    size_t n = strcspn(d->keys, " ");
    if (n >= len)
        n = len - 1;
    memcpy(buf, d->keys, n);
    buf[n] = '\0';
    return buf;
}

int
nd_opt_listener(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                unsigned *seen)
{
    (void)seen;
    return nd_cfg_listener(a, e, (char **)AT(blk, d), (int *)((char *)blk + d->aux));
}

int
nd_opt_tls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
           unsigned *seen)
{
    (void)seen;
    return nd_cfg_tls(a, e, d->arg != 0, (nd_tls_opts_t **)AT(blk, d));
}

static int read_bounded(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d,
                        void *p);

int
nd_opt_array(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
             unsigned *seen)
{
    (void)seen;
    const nd_cfg_node_t *v = e->val;
    char val[256];
    if (v->type != ND_CFG_ARRAY) {
        if (d->flags & ND_OF_GOVALUE)
            nd_cfg_go_value(v, val, sizeof val);
        nd_cfg_at_t at = (d->flags & ND_OF_NOPOS) ? (nd_cfg_at_t){0} : nd_cfg_at_entry(e);
        return nd_cfg_fail(a, at, d->errfmt, (d->flags & ND_OF_GOVALUE) ? val : nd_cfg_go_type(v));
    }
    const nd_opt_block_t *sub = d->sub;
    char **arr = (char **)AT(blk, d);
    size_t *n = (size_t *)((char *)blk + d->count_off);
    for (size_t i = 0; i < *n; i++)
        nd_opt_clear(sub, *arr + i * sub->size);
    nd_free(*arr);
    *arr = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sub->size) : NULL;
    *n = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *m = v->u.arr.v[i];
        if (m->type != ND_CFG_MAP) {
            nd_cfg_go_value(m, val, sizeof val);
            return nd_cfg_fail(a, nd_cfg_at_node(m), sub->notmap, val);
        }
        if (nd_opt_parse_map(a, sub, *arr + (*n)++ * sub->size, m) < 0)
            return -1;
    }
    return 0;
}

int
nd_opt_simple_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                   unsigned *seen)
{
    (void)seen;
    return nd_cfg_simple_auth(a, e, (char **)AT(blk, d), (char **)AT(blk, d + 1),
                              (char **)AT(blk, d + 2), (double *)AT(blk, d + 3));
}

/* The type's own reader, for rows without .parse. */
static int
read_value(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk)
{
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    char name[64];
    void *p = AT(blk, d);
    const char *written = (d->flags & ND_OF_WRITTEN) ? e->key : NULL;
    if (d->flags & ND_OF_BOUNDED)
        return read_bounded(a, e, d, p);
    switch (d->type) {
    case ND_OT_STR:
        return nd_cfg_str(a, at, v, (char **)p);
    case ND_OT_BOOL:
        return nd_cfg_bool(a, at, v, (bool *)p);
    case ND_OT_INT:
        return nd_cfg_int(a, at, v, (int *)p);
    case ND_OT_I64:
        return nd_cfg_i64(a, at, v, (int64_t *)p);
    case ND_OT_DUR:
        return nd_cfg_duration(a, at, row_name(d, written, name, sizeof name), v, (int64_t *)p);
    case ND_OT_STRLIST:
        return nd_cfg_strarray(a, at, row_name(d, written, name, sizeof name), v,
                               (nd_strlist_t *)p);
    case ND_OT_PTR:
        return nd_opt_parse_block(a, d->sub, e, (void **)p);
    default:
        /* A row of a type without a reader of its own must name one: a table error. */
        return nd_cfg_unknown(a, e);
    }
}

const nd_opt_desc_t *
nd_opt_find(const nd_opt_block_t *b, const char *key)
{
    for (const nd_opt_desc_t *d = b->d; d->type != ND_OT_END; d++)
        if (d->keys != NULL && nd_cfg_key_is(key, d->keys))
            return d;
    return NULL;
}

/* natsd's own range check of the keys it implemented first. */
static int
read_bounded(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *p)
{
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    char name[64];
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    if (v->u.i < d->min || v->u.i > d->max)
        return nd_cfg_fail(a, at, "invalid value %lld for %s: out of range [%lld, %lld]",
                           (long long)v->u.i, row_name(d, NULL, name, sizeof name),
                           (long long)d->min, (long long)d->max);
    switch (d->type) {
    case ND_OT_INT:
        *(int *)p = (int)v->u.i;
        break;
    case ND_OT_I32:
        *(int32_t *)p = (int32_t)v->u.i;
        break;
    case ND_OT_UINT:
        *(unsigned *)p = (unsigned)v->u.i;
        break;
    default:
        *(int64_t *)p = v->u.i;
        break;
    }
    return 0;
}

int
nd_opt_parse_row(nd_cfg_apply_t *a, const nd_opt_desc_t *d, void *blk, const nd_cfg_entry_t *e,
                 unsigned *seen)
{
    return d->parse != NULL ? d->parse(a, e, d, blk, seen) : read_value(a, e, d, blk);
}

int
nd_opt_parse_map_seen(nd_cfg_apply_t *a, const nd_opt_block_t *b, void *blk, const nd_cfg_node_t *v,
                      unsigned seen)
{
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        const nd_opt_desc_t *d = nd_opt_find(b, e->key);
        int rc;
        if (d != NULL)
            rc = nd_opt_parse_row(a, d, blk, e, &seen);
        else if (b->unknown != NULL)
            rc = nd_cfg_fail(a, nd_cfg_at_entry(e), b->unknown, e->key);
        else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int
nd_opt_parse_map(nd_cfg_apply_t *a, const nd_opt_block_t *b, void *blk, const nd_cfg_node_t *v)
{
    return nd_opt_parse_map_seen(a, b, blk, v, 0);
}

int
nd_opt_parse_block(nd_cfg_apply_t *a, const nd_opt_block_t *b, const nd_cfg_entry_t *e, void **pp)
{
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), b->notmap, nd_cfg_go_type(v));
    if (*pp == NULL)
        *pp = nd_xcalloc(1, b->size);
    return nd_opt_parse_map(a, b, *pp, v);
}

void
nd_opt_release(const nd_opt_block_t *b, void *blk)
{
    for (const nd_opt_desc_t *d = b->d; d->type != ND_OT_END; d++) {
        void *p = AT(blk, d);
        switch (d->type) {
        case ND_OT_STR:
            nd_free(*(char **)p);
            *(char **)p = NULL;
            break;
        case ND_OT_STRLIST:
            nd_strlist_free((nd_strlist_t *)p);
            break;
        case ND_OT_STRUCT:
            nd_opt_clear(d->sub, p);
            break;
        case ND_OT_PTR:
            nd_opt_free(d->sub, *(void **)p);
            *(void **)p = NULL;
            break;
        case ND_OT_ARRAY: {
            char *arr = *(char **)p;
            size_t *n = (size_t *)((char *)blk + d->count_off);
            for (size_t i = 0; i < *n; i++)
                nd_opt_clear(d->sub, arr + i * d->sub->size);
            nd_free(arr);
            *(char **)p = NULL;
            *n = 0;
            break;
        }
        default:
            break;
        }
    }
}

void
nd_opt_clear(const nd_opt_block_t *b, void *blk)
{
    nd_opt_release(b, blk);
    memset(blk, 0, b->size);
}

void
nd_opt_free(const nd_opt_block_t *b, void *blk)
{
    if (blk == NULL)
        return;
    nd_opt_clear(b, blk);
    nd_free(blk);
}

void
nd_opt_copy(const nd_opt_block_t *b, void *dst, const void *src)
{
    memcpy(dst, src, b->size);
    for (const nd_opt_desc_t *d = b->d; d->type != ND_OT_END; d++) {
        void *p = AT(dst, d);
        const void *s = CAT(src, d);
        switch (d->type) {
        case ND_OT_STR: {
            const char *str = *(char *const *)s;
            *(char **)p = str != NULL ? nd_xstrdup(str) : NULL;
            break;
        }
        case ND_OT_STRLIST:
            *(nd_strlist_t *)p = nd_strlist_dup((const nd_strlist_t *)s);
            break;
        case ND_OT_STRUCT:
            nd_opt_copy(d->sub, p, s);
            break;
        case ND_OT_PTR:
            *(void **)p = nd_opt_dup(d->sub, *(void *const *)s);
            break;
        case ND_OT_ARRAY: {
            const char *arr = *(char *const *)s;
            size_t n = *(const size_t *)((const char *)src + d->count_off);
            char *c = n ? nd_xmalloc(n * d->sub->size) : NULL;
            for (size_t i = 0; i < n; i++)
                nd_opt_copy(d->sub, c + i * d->sub->size, arr + i * d->sub->size);
            *(char **)p = c;
            break;
        }
        default:
            break;
        }
    }
}

void *
nd_opt_dup(const nd_opt_block_t *b, const void *src)
{
    if (src == NULL)
        return NULL;
    void *c = nd_xmalloc(b->size);
    nd_opt_copy(b, c, src);
    return c;
}

static bool
str_eq(const char *x, const char *y)
{
    if (x == NULL || y == NULL)
        return (x == NULL || *x == '\0') && (y == NULL || *y == '\0');
    return strcmp(x, y) == 0;
}

static bool
member_eq(const nd_opt_desc_t *d, const char *x, const char *y, const char *bx, const char *by,
          unsigned skip)
{
    switch (d->type) {
    case ND_OT_STR:
        return str_eq(*(char *const *)x, *(char *const *)y);
    case ND_OT_BOOL:
        return *(const bool *)x == *(const bool *)y;
    case ND_OT_INT:
        return *(const int *)x == *(const int *)y;
    case ND_OT_I32:
        return *(const int32_t *)x == *(const int32_t *)y;
    case ND_OT_U32:
        return *(const uint32_t *)x == *(const uint32_t *)y;
    case ND_OT_UINT:
        return *(const unsigned *)x == *(const unsigned *)y;
    case ND_OT_I64:
    case ND_OT_DUR:
        return *(const int64_t *)x == *(const int64_t *)y;
    case ND_OT_DBL:
        return *(const double *)x == *(const double *)y;
    case ND_OT_STRLIST: {
        const nd_strlist_t *lx = (const nd_strlist_t *)x, *ly = (const nd_strlist_t *)y;
        if (lx->n != ly->n)
            return false;
        for (size_t i = 0; i < lx->n; i++)
            if (!str_eq(lx->v[i], ly->v[i]))
                return false;
        return true;
    }
    case ND_OT_STRUCT:
        return nd_opt_equal(d->sub, x, y, skip);
    case ND_OT_PTR:
        return nd_opt_equal(d->sub, *(void *const *)x, *(void *const *)y, skip);
    case ND_OT_ARRAY: {
        size_t nx = *(const size_t *)(bx + d->count_off), ny = *(const size_t *)(by + d->count_off);
        if (nx != ny)
            return false;
        const char *ax = *(char *const *)x, *ay = *(char *const *)y;
        for (size_t i = 0; i < nx; i++)
            if (!nd_opt_equal(d->sub, ax + i * d->sub->size, ay + i * d->sub->size, skip))
                return false;
        return true;
    }
    default:
        return true;
    }
}

bool
nd_opt_row_equal(const nd_opt_desc_t *d, const void *x, const void *y)
{
    return member_eq(d, CAT(x, d), CAT(y, d), (const char *)x, (const char *)y, 0);
}

bool
nd_opt_equal(const nd_opt_block_t *b, const void *x, const void *y, unsigned skip)
{
    if (x == NULL || y == NULL)
        return x == y;
    for (const nd_opt_desc_t *d = b->d; d->type != ND_OT_END; d++)
        if ((d->flags & skip) == 0 &&
            !member_eq(d, CAT(x, d), CAT(y, d), (const char *)x, (const char *)y, skip))
            return false;
    return true;
}
