/* The indexes of an account's MQTT state (mqtt_acct.c), so that neither a CONNECT nor a
 * SUBSCRIBE costs time in proportion to everything the account has stored:
 *
 * - nd_mqtt_map_t: objects by a byte-string key (and an owner pointer, NULL for a flat map), a
 *   Concurrency Kit hash set; the session records by client id.
 * - nd_mqtt_rtree_t: the retained messages by subject, a trie of the subjects' tokens whose
 *   edges all live in one nd_mqtt_map_t keyed by (parent node, token). A literal subject costs
 *   one lookup per token; a filter with wildcards visits only the branches it can match ('*'
 *   each child of its level, '>' the whole subtree below), the way nats-server keeps retained
 *   subjects in a sublist and asks it for a reverse match.
 *
 * Neither is thread-safe: the account's mutex guards them. Private to src/mqtt (and its tests).
 */
#ifndef ND_MQTT_INDEX_H
#define ND_MQTT_INDEX_H

#include <ck_hs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The key an indexed object embeds (anywhere; the map stores a pointer to the key). */
typedef struct nd_mqtt_mkey {
    const void *owner; /* part of the key: the parent node in a trie, NULL in a flat map */
    const char *s;
    size_t len;
} nd_mqtt_mkey_t;

typedef struct nd_mqtt_map {
    ck_hs_t hs;
} nd_mqtt_map_t;

void nd_mqtt_map_init(nd_mqtt_map_t *m);
/* Frees the table, not the objects. */
void nd_mqtt_map_fini(nd_mqtt_map_t *m);
/* Returns: the key of (owner, s, len), or NULL. */
nd_mqtt_mkey_t *nd_mqtt_map_get(nd_mqtt_map_t *m, const void *owner, const char *s, size_t len);
/* Adds k, whose key must not be present. */
void nd_mqtt_map_put(nd_mqtt_map_t *m, nd_mqtt_mkey_t *k);
/* Removes k, which must be present. */
void nd_mqtt_map_del(nd_mqtt_map_t *m, nd_mqtt_mkey_t *k);
size_t nd_mqtt_map_count(nd_mqtt_map_t *m);
/* Iteration: ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER; while (nd_mqtt_map_next(m, &it,
 * &k)) ... (removing the key just returned is allowed). */
bool nd_mqtt_map_next(nd_mqtt_map_t *m, ck_hs_iterator_t *it, nd_mqtt_mkey_t **k);

/* ---- the retained subjects ---- */

struct nd_mqtt_rnode;

typedef struct nd_mqtt_rtree {
    nd_mqtt_map_t edges;        /* every node by (parent, token) */
    struct nd_mqtt_rnode *root; /* the empty subject: never holds a value */
    size_t count;               /* subjects holding a value */
} nd_mqtt_rtree_t;

void nd_mqtt_rtree_init(nd_mqtt_rtree_t *t);
/* Frees the trie; free_val (may be NULL) gets each value. */
void nd_mqtt_rtree_fini(nd_mqtt_rtree_t *t, void (*free_val)(void *val));
/* Returns: the value of a literal subject, or NULL. */
void *nd_mqtt_rtree_get(nd_mqtt_rtree_t *t, const char *subj, size_t len);
/* Sets the value (not NULL) of a literal subject (non-empty). Returns: the value it replaces,
 * or NULL. */
void *nd_mqtt_rtree_set(nd_mqtt_rtree_t *t, const char *subj, size_t len, void *val);
/* Removes a subject, pruning the nodes left empty. Returns: its value, or NULL when absent. */
void *nd_mqtt_rtree_del(nd_mqtt_rtree_t *t, const char *subj, size_t len);
/* Calls fn(val, arg) for the value of every subject that filter (a NATS subject, '*' one token
 * and a last '>' one or more) matches, in no particular order. As MQTT-4.7.2-1 has it, a filter
 * whose first token is a wildcard matches no subject whose first token starts with '$'.
 * Returns: how many values fn got. */
size_t nd_mqtt_rtree_match(nd_mqtt_rtree_t *t, const char *filter, size_t len,
                           void (*fn)(void *val, void *arg), void *arg);

#endif
