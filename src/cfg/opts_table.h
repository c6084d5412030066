/* Options declared once: a table per config block describes each member of the block's struct
 * (its keys and aliases, where it lives, its type, how it is read, what a reload does with it),
 * and generic functions drive parsing, freeing, deep copying and the reload comparison from it.
 *
 * A member is written once, in its block's table (next to the block's special-case readers in
 * src/cfg/opts_<block>.c); nothing else lists the members of a tabled block. A member that no
 * key writes directly (a listen port, an authorization user) has keys NULL: it is still freed,
 * copied and compared, and the reader of the key that fills it (.parse) names it in .aux or
 * writes it through the block pointer.
 *
 * Parsing keeps nats-server's texts: keys are matched ignoring case (nd_cfg_key_is), a key no
 * row has fails with `unknown field "<key>"` (nd_cfg_unknown), a value that is not a map fails
 * with the block's own .notmap text, and the readers are those of opts_parse.h.
 * Ctx: any thread; the tables are immutable.
 */
#ifndef ND_CFG_OPTS_TABLE_H
#define ND_CFG_OPTS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/opts_parse.h"

/* The storage of a member. */
typedef enum nd_opt_type {
    ND_OT_END = 0, /* ends a table */
    ND_OT_STR,     /* char *, owned */
    ND_OT_BOOL,    /* bool */
    ND_OT_INT,     /* int (and enums) */
    ND_OT_I32,     /* int32_t */
    ND_OT_U32,     /* uint32_t */
    ND_OT_UINT,    /* unsigned */
    ND_OT_I64,     /* int64_t (sizes in bytes) */
    ND_OT_DUR,     /* int64_t milliseconds: nats-server's parseDuration */
    ND_OT_DBL,     /* double */
    ND_OT_STRLIST, /* nd_strlist_t, owned */
    ND_OT_STRUCT,  /* a struct embedded at off, described by .sub */
    ND_OT_PTR,     /* a pointer to a struct described by .sub, owned (NULL: absent) */
    ND_OT_ARRAY,   /* a pointer to *count_off structs described by .sub, owned */
    ND_OT_NONE,    /* no storage: a key whose reader (.parse) fills other members */
} nd_opt_type_t;

/* What a config reload does when the member changed (src/server/reload.c). */
typedef enum nd_opt_reload {
    ND_RL_INHERIT = 0, /* as the block that holds it */
    ND_RL_REFUSE,      /* not reloadable: the reload fails with nats-server's text */
    ND_RL_LIVE,        /* a limit connections read live (nd_server_live_t) */
    ND_RL_LOG,         /* the log module's */
    ND_RL_AUTH,        /* authorization: rebuilt */
    ND_RL_KEEP,        /* accepted and kept: nothing running uses it yet */
    ND_RL_TLS,         /* the client TLS context: rebuilt */
    ND_RL_MON,         /* the monitor's (http_auth) */
    ND_RL_UNBUILT,     /* accepted and kept, with a warning that it is not applied */
    ND_RL_CLUSTER,     /* the routes: nd_routes_reload (the listen address is refused) */
    ND_RL_MQTT,        /* the MQTT service: its ND_OF_LIVE members (nd_mqtt_reload) */
} nd_opt_reload_t;

/* Member flags. */
#define ND_OF_LISTEN  1u  /* part of the listen address (cluster compares it on its own) */
#define ND_OF_WRITTEN 2u  /* texts name the key as written, not .name */
#define ND_OF_BOUNDED 4u  /* an integer within [min, max], natsd's range text otherwise */
#define ND_OF_DEFAULT 8u  /* nd_opts_defaults writes .def */
#define ND_OF_ZERO    16u /* .zero says what a written 0 means (nd_opts_baseline) */
#define ND_OF_NOPOS   32u /* nd_opt_array: the "not an array" error has no position */
#define ND_OF_GOVALUE 64u /* nd_opt_array: that error prints the value (Go's %v), not its type */
#define ND_OF_LIVE    128u /* a reload may change it in a block it refuses otherwise (mqtt) */

/* Options the reload compares through a view of other members rather than a member of its own
 * (nats-server's Options has them as fields of their own): src/server/reload.c computes them. */
typedef enum nd_opt_derived {
    ND_DV_NONE = 0,
    ND_DV_PORT,         /* compared with the bound port (0: random) */
    ND_DV_CLUSTER,      /* the listen address refused on its own, the rest per the policy */
    ND_DV_AUTH_TIMEOUT, /* AuthTimeout as setBaselineOptions sets it */
    ND_DV_TLS_TIMEOUT,  /* TLSTimeout: the tls timeout, 2 s when unset */
    ND_DV_TLS_MAP,      /* TLSMap: tls.verify_and_map */
    ND_DV_TLS_CONFIG,   /* TLSConfig: "enabled"/"disabled"; never equal while TLS is on */
    ND_DV_TLS_PINNED,   /* TLSPinnedCerts: tls.pinned_certs, printed as its length */
    ND_DV_TLS_RATE,     /* TLSRateLimit: tls.connection_rate_limit */
    ND_DV_MQTT,         /* MQTT: refused unless only its ND_OF_LIVE members changed */
} nd_opt_derived_t;

struct nd_opt_desc;
struct nd_opt_block;

/* A special-case reader: parses entry e into the block struct blk. seen is a bit set private to
 * one parse of one block map (zeroed before its first key), for readers that depend on an
 * earlier key of the same map. Returns: 0, or -1 with the error in a. */
typedef int (*nd_opt_parse_fn)(nd_cfg_apply_t *a, const nd_cfg_entry_t *e,
                               const struct nd_opt_desc *d, void *blk, unsigned *seen);

typedef struct nd_opt_desc {
    const char *keys; /* the config keys: the name, then its aliases, space-separated; NULL:
                       * filled by another row's reader */
    const char *name; /* the name in texts (parseDuration's warning, parseStringArray's error);
                       * NULL: the first key */
    size_t off;       /* offsetof the member in the block struct */
    nd_opt_type_t type;
    nd_opt_parse_fn parse;          /* NULL: the type's reader */
    const struct nd_opt_block *sub; /* ND_OT_STRUCT, ND_OT_PTR, ND_OT_ARRAY */
    size_t count_off;               /* ND_OT_ARRAY: offsetof its size_t count */
    size_t aux;                     /* reader-specific (a listener's port offset) */
    int arg;                        /* reader-specific (tls: the client context) */
    unsigned flags;                 /* ND_OF_* */
    int64_t min, max;               /* ND_OF_BOUNDED */
    int64_t def;         /* ND_OF_DEFAULT, and what 0 stands for under ND_ZERO_DEFAULT, in the
                          * member's unit */
    nd_zero_rule_t zero; /* ND_OF_ZERO */
    const char *note;    /* why, or where an ND_ZERO_DEFAULT_AT_USE is resolved */
    const char *errfmt;  /* the reader's own error text (nd_opt_array: not an array, "%s") */
    /* config reload (src/server/reload.c); rows without .go are not compared */
    nd_opt_reload_t reload;
    const char *go;   /* nats-server's Options field, for the refusal text; table order is the
                       * order of nats-server's Options struct, the order of its log lines */
    const char *text; /* "Reloaded: <name> = %s" (a text without "%" is logged alone);
                       * ND_RL_UNBUILT: the name in the warning */
    nd_opt_derived_t derive;
} nd_opt_desc_t;

typedef struct nd_opt_block {
    const char *name;       /* the block's key, for readers' texts */
    const char *notmap;     /* nats-server's text when the block is not a map ("%s": Go type) */
    size_t size;            /* sizeof the block struct */
    const nd_opt_desc_t *d; /* ends with ND_OT_END */
    nd_opt_reload_t reload; /* the block's policy (src/server/reload.c) */
    const char *unknown;    /* the text for a key no row has ("%s": the key, even one only used
                             * as a $variable); NULL: nd_cfg_unknown's */
} nd_opt_block_t;

/* A row for member f of struct T: ND_OPT(T, keys, f, type[, .parse = ..., ...]). */
#define ND_OPT(T, k, f, ...)                                                                       \
    {                                                                                              \
        .keys = (k), .off = offsetof(T, f), .type = __VA_ARGS__                                    \
    }
#define ND_OPT_END                                                                                 \
    {                                                                                              \
        .type = ND_OT_END                                                                          \
    }

/* The stock special readers. */
/* nd_cfg_listener: keys ND_CFG_LISTENER_KEYS into the ND_OT_STR host at off, port at aux. */
int nd_opt_listener(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                    unsigned *seen);
/* nd_cfg_tls into the ND_OT_PTR at off; arg: the client context (else cluster and gateway). */
int nd_opt_tls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
               unsigned *seen);

/* parseSimpleAuth (websocket, mqtt): the user at off; the three rows that follow are the
 * password, the token (ND_OT_STR) and the timeout (ND_OT_DBL), in that order. */
int nd_opt_simple_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d,
                       void *blk, unsigned *seen);
/* An array of maps into the ND_OT_ARRAY at off (replaced), each element read with .sub (whose
 * .notmap, with Go's %v of the element, is the error for an element that is not a map). */
int nd_opt_array(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                 unsigned *seen);
/* nd_cfg_compression (opts_cluster.c) into the ND_OT_STR at off. */
int nd_opt_compression(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d,
                       void *blk, unsigned *seen);

/* Parses entry e into blk with row d (its .parse, or its type's reader). */
int nd_opt_parse_row(nd_cfg_apply_t *a, const nd_opt_desc_t *d, void *blk, const nd_cfg_entry_t *e,
                     unsigned *seen);
/* Parses the map v into blk with the table b. Returns: 0, or -1 with the error in a. */
int nd_opt_parse_map(nd_cfg_apply_t *a, const nd_opt_block_t *b, void *blk, const nd_cfg_node_t *v);
/* As nd_opt_parse_map, the readers' seen set starting as seen (a context of the caller's in its
 * high bits, as tls {} passes whether it is a client context). */
int nd_opt_parse_map_seen(nd_cfg_apply_t *a, const nd_opt_block_t *b, void *blk,
                          const nd_cfg_node_t *v, unsigned seen);
/* A block key at entry e: b->notmap unless a map; *pp allocated zeroed when NULL, then parsed
 * over (a later block of the same key adds to the earlier one, as today). */
int nd_opt_parse_block(nd_cfg_apply_t *a, const nd_opt_block_t *b, const nd_cfg_entry_t *e,
                       void **pp);

/* Frees what blk owns (not blk) and zeroes those members only (nd_opts_free keeps scalars). */
void nd_opt_release(const nd_opt_block_t *b, void *blk);
/* Frees what blk owns (not blk) and zeroes it. */
void nd_opt_clear(const nd_opt_block_t *b, void *blk);
/* Frees what blk owns and blk itself (NULL is fine). */
void nd_opt_free(const nd_opt_block_t *b, void *blk);
/* Fills dst with a deep copy of src (dst's old contents are overwritten, not freed). */
void nd_opt_copy(const nd_opt_block_t *b, void *dst, const void *src);
/* Returns: an owned deep copy of src, or NULL for NULL. */
void *nd_opt_dup(const nd_opt_block_t *b, const void *src);
/* Whether x and y (either may be NULL: absent) hold the same values in every member, members
 * with a flag of skip left out; NULL and "" strings are equal. */
bool nd_opt_equal(const nd_opt_block_t *b, const void *x, const void *y, unsigned skip);

/* Whether the member of row d holds the same value in the structs x and y (both non-NULL). */
bool nd_opt_row_equal(const nd_opt_desc_t *d, const void *x, const void *y);

/* The tables (their files: opts_blocks.c for the storage-only ones). */
extern const nd_opt_block_t nd_opt_tls_block;         /* nd_tls_opts_t (read by nd_cfg_tls) */
extern const nd_opt_block_t nd_opt_perms_block;       /* nd_perms_t */
extern const nd_opt_block_t nd_opt_user_block;        /* nd_user_t */
extern const nd_opt_block_t nd_opt_cluster_block;     /* cluster {} */
extern const nd_opt_block_t nd_opt_gateway_block;     /* gateway {} */
extern const nd_opt_block_t nd_opt_gw_remote_block;   /* gateway { gateways: [...] } */
extern const nd_opt_block_t nd_opt_leaf_block;        /* leafnodes {} */
extern const nd_opt_block_t nd_opt_leaf_remote_block; /* leafnodes { remotes: [...] } */
extern const nd_opt_block_t nd_opt_js_block;          /* jetstream {} */
extern const nd_opt_block_t nd_opt_mqtt_block;        /* mqtt {} */
extern const nd_opt_block_t nd_opt_ws_block;          /* websocket {} */
extern const nd_opt_block_t nd_opt_account_block;     /* accounts { X {} } */
extern const nd_opt_block_t nd_opt_import_block; /* imports: {stream|service: {account, subject}} */
extern const nd_opt_block_t nd_opt_resolver_block; /* resolver */
extern const nd_opt_block_t nd_opt_callout_block;  /* authorization { auth_callout } */
/* nd_opts_t: the top-level keys (opts_conf.c), in the order of nats-server's Options. */
extern const nd_opt_block_t nd_opt_top_block;
/* The row of the top-level key (any alias, any case), or NULL. */
const nd_opt_desc_t *nd_opt_find(const nd_opt_block_t *b, const char *key);

#endif
