/* The MQTT state's indexes (src/mqtt/mqtt_index.c): the map by key, and the retained subjects'
 * trie checked against nd_subj_match (with MQTT-4.7.2-1) over every subject stored, through
 * random sets and deletes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "mqtt/mqtt_index.h"
#include "subj/subject.h"

typedef struct obj {
    nd_mqtt_mkey_t key;
    int v;
    char id[];
} obj_t;

static obj_t *
obj_new(const void *owner, const char *id, int v)
{
    size_t n = strlen(id);
    obj_t *o = nd_xcalloc(1, sizeof *o + n + 1);
    memcpy(o->id, id, n + 1);
    o->key.owner = owner;
    o->key.s = o->id;
    o->key.len = n;
    o->v = v;
    return o;
}

Test(mqtt_index, map)
{
    nd_mqtt_map_t m;
    nd_mqtt_map_init(&m);
    enum { N = 20000 };
    static obj_t *objs[N];
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "client-%d", i);
        objs[i] = obj_new(NULL, id, i);
        nd_mqtt_map_put(&m, &objs[i]->key);
    }
    /* the same bytes under another owner are another key */
    obj_t *other = obj_new(&m, "client-7", -1);
    nd_mqtt_map_put(&m, &other->key);
    cr_assert_eq(nd_mqtt_map_count(&m), N + 1);
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "client-%d", i);
        obj_t *o = (obj_t *)nd_mqtt_map_get(&m, NULL, id, strlen(id));
        cr_assert_not_null(o, "%s", id);
        cr_assert_eq(o->v, i);
    }
    cr_assert_eq(((obj_t *)nd_mqtt_map_get(&m, &m, "client-7", 8))->v, -1);
    cr_assert_null(nd_mqtt_map_get(&m, NULL, "client-", 7));
    cr_assert_null(nd_mqtt_map_get(&m, NULL, "client-20000", 12));
    for (int i = 0; i < N; i += 2) {
        nd_mqtt_map_del(&m, &objs[i]->key);
        nd_free(objs[i]);
    }
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "client-%d", i);
        nd_mqtt_mkey_t *k = nd_mqtt_map_get(&m, NULL, id, strlen(id));
        if (i % 2 == 0)
            cr_assert_null(k, "%s", id);
        else
            cr_assert_not_null(k, "%s", id);
    }
    size_t seen = 0;
    ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
    nd_mqtt_mkey_t *k;
    while (nd_mqtt_map_next(&m, &it, &k)) {
        seen++;
        nd_free(k); /* the key is each object's first member */
    }
    cr_assert_eq(seen, N / 2 + 1);
    nd_mqtt_map_fini(&m);
}

/* ---- the trie ---- */

static void
collect(void *val, void *arg)
{
    char **acc = arg;
    size_t n = strlen(*acc), l = strlen(val);
    *acc = nd_xrealloc(*acc, n + l + 2);
    memcpy(*acc + n, val, l);
    (*acc)[n + l] = '|';
    (*acc)[n + l + 1] = '\0';
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the '|'-separated list (in place). */
static char *
sorted(char *list)
{
    char *v[4096];
    size_t n = 0;
    for (char *p = strtok(list, "|"); p != NULL; p = strtok(NULL, "|"))
        v[n++] = p;
    qsort(v, n, sizeof *v, cmp_str);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(v[i]) + 1;
    char *out = nd_xcalloc(1, len + 1);
    for (size_t i = 0; i < n; i++) {
        strcat(out, v[i]);
        strcat(out, "|");
    }
    return out;
}

static char *
match(nd_mqtt_rtree_t *t, const char *filter, size_t *n)
{
    char *acc = nd_xcalloc(1, 1);
    *n = nd_mqtt_rtree_match(t, filter, strlen(filter), collect, &acc);
    char *s = sorted(acc);
    nd_free(acc);
    return s;
}

Test(mqtt_index, rtree_basic)
{
    nd_mqtt_rtree_t t;
    nd_mqtt_rtree_init(&t);
    const char *subs[] = {"a", "a.b", "a.b.c", "a.c", "b.b", "$SYS.x", "$x", "a.$y"};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        cr_assert_null(nd_mqtt_rtree_set(&t, subs[i], strlen(subs[i]), (void *)subs[i]));
    cr_assert_eq(t.count, 8);
    cr_assert_eq(nd_mqtt_rtree_set(&t, "a.b", 3, (void *)"a.b"), (void *)subs[1]);
    cr_assert_eq(t.count, 8);
    cr_assert_str_eq(nd_mqtt_rtree_get(&t, "a.b.c", 5), "a.b.c");
    cr_assert_null(nd_mqtt_rtree_get(&t, "a.b.d", 5));
    cr_assert_null(nd_mqtt_rtree_get(&t, "", 0));
    cr_assert_null(nd_mqtt_rtree_get(&t, "b", 1)); /* an inner node without a value */

    struct {
        const char *filter, *want;
    } cases[] = {
        {">", "a|a.$y|a.b|a.b.c|a.c|b.b|"},
        {"*", "a|"},
        {"a", "a|"},
        {"a.>", "a.$y|a.b|a.b.c|a.c|"},
        {"a.*", "a.$y|a.b|a.c|"},
        {"*.b", "a.b|b.b|"},
        {"*.*.c", "a.b.c|"},
        {"$SYS.>", "$SYS.x|"},
        {"$SYS.*", "$SYS.x|"},
        {"$x", "$x|"},
        {"*.x", ""},
        {"a.b.c.>", ""},
        {"c", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n;
        char *got = match(&t, cases[i].filter, &n);
        cr_assert_str_eq(got, cases[i].want, "%s", cases[i].filter);
        nd_free(got);
    }

    cr_assert_str_eq(nd_mqtt_rtree_del(&t, "a.b", 3), "a.b");
    cr_assert_null(nd_mqtt_rtree_del(&t, "a.b", 3));
    cr_assert_null(nd_mqtt_rtree_del(&t, "b", 1));
    cr_assert_str_eq(nd_mqtt_rtree_get(&t, "a.b.c", 5), "a.b.c");
    cr_assert_str_eq(nd_mqtt_rtree_del(&t, "a.b.c", 5), "a.b.c");
    cr_assert_eq(t.count, 6);
    size_t n;
    char *got = match(&t, "a.>", &n);
    cr_assert_str_eq(got, "a.$y|a.c|");
    nd_free(got);
    /* every edge of the pruned branch a.b.c is gone */
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        nd_mqtt_rtree_del(&t, subs[i], strlen(subs[i]));
    cr_assert_eq(t.count, 0);
    cr_assert_eq(nd_mqtt_map_count(&t.edges), 0);
    nd_mqtt_rtree_fini(&t, NULL);
}

/* What the trie must answer: nd_subj_match, and no '$' subject for a leading wildcard. */
static bool
want_match(const char *filter, const char *subj)
{
    bool reserved =
        (filter[0] == '*' || filter[0] == '>') && (filter[1] == '\0' || filter[1] == '.');
    if (reserved && subj[0] == '$')
        return false;
    return nd_subj_match(filter, strlen(filter), subj, strlen(subj));
}

static void
rand_subject(char *out, size_t room, bool filter, unsigned *seed)
{
    static const char *toks[] = {"a", "b", "cc", "$d", "e"};
    int n = 1 + rand_r(seed) % 4;
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *tok = toks[rand_r(seed) % 5];
        if (filter) {
            int r = rand_r(seed) % 6;
            if (r == 0)
                tok = "*";
            else if (r == 1 && i == n - 1)
                tok = ">";
        }
        len += (size_t)snprintf(out + len, room - len, "%s%s", i ? "." : "", tok);
    }
}

Test(mqtt_index, rtree_random)
{
    nd_mqtt_rtree_t t;
    nd_mqtt_rtree_init(&t);
    enum { U = 5 * 5 * 5 * 5 + 5 * 5 * 5 + 5 * 5 + 5 };
    static char present[U][16]; /* the reference: subjects stored ("" when not) */
    unsigned seed = 12345;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 300; i++) {
            char s[64];
            rand_subject(s, sizeof s, false, &seed);
            size_t slot = 0;
            while (slot < U && strcmp(present[slot], s) != 0)
                slot++;
            bool del = rand_r(&seed) % 3 == 0;
            if (slot < U) {
                /* present: delete it or set it again */
                if (del) {
                    char *v = nd_mqtt_rtree_del(&t, s, strlen(s));
                    cr_assert_not_null(v, "%s", s);
                    present[slot][0] = '\0';
                } else {
                    cr_assert_eq(nd_mqtt_rtree_set(&t, s, strlen(s), present[slot]),
                                 (void *)present[slot]);
                }
            } else if (!del) {
                size_t free_slot = 0;
                while (present[free_slot][0] != '\0')
                    free_slot++;
                snprintf(present[free_slot], sizeof present[free_slot], "%s", s);
                cr_assert_null(nd_mqtt_rtree_set(&t, s, strlen(s), present[free_slot]));
            } else {
                cr_assert_null(nd_mqtt_rtree_del(&t, s, strlen(s)));
            }
        }
        size_t count = 0;
        for (size_t i = 0; i < U; i++)
            count += present[i][0] != '\0';
        cr_assert_eq(t.count, count);
        for (int f = 0; f < 200; f++) {
            char filter[64];
            rand_subject(filter, sizeof filter, true, &seed);
            char *acc = nd_xcalloc(1, 1);
            size_t want_n = 0;
            for (size_t i = 0; i < U; i++)
                if (present[i][0] != '\0' && want_match(filter, present[i])) {
                    collect(present[i], &acc);
                    want_n++;
                }
            char *want = sorted(acc);
            nd_free(acc);
            size_t n;
            char *got = match(&t, filter, &n);
            cr_assert_str_eq(got, want, "filter %s", filter);
            cr_assert_eq(n, want_n);
            nd_free(got);
            nd_free(want);
        }
    }
    nd_mqtt_rtree_fini(&t, NULL);
}
