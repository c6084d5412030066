/* Typed readers for config option values, shared by the option layer (opts_conf.c and the block
 * parsers opts_<block>.c): type checks, durations, listen addresses, string arrays, and the
 * error and warning texts of nats-server 2.9.10, each prefixed "<file>:<line>:<col>: ".
 *
 * Positions follow nats-server's tokens: a value written in a map is reported at its key (the
 * Go parser moves a map value's position to its key), an array element at the element itself.
 * nd_cfg_at_entry / nd_cfg_at_node give those positions. Go prints 0-based columns on line 1
 * and 1-based ones on later lines (its lexer counts from the previous newline); the reader here
 * has 1-based columns everywhere, so line 1 prints col - 1.
 *
 * Every reader returns 0, or -1 with the error text in the apply context (the first error stops
 * the walk: nats-server collects all of them in random map order, so only the first of several
 * could ever match). Ctx: any thread; the context is owned by one apply call.
 */
#ifndef ND_NET_OPTS_PARSE_H
#define ND_NET_OPTS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/opts.h"
#include "cfg/conf.h"

/* A set of borrowed strings (open addressing, FNV-1a), for the duplicate checks: configs may
 * hold hundreds of thousands of users or routes, so no check may be quadratic. */
typedef struct nd_cfg_strset {
    const char **slot;
    size_t *val; /* a value per string (an index) */
    size_t cap, n;
} nd_cfg_strset_t;

/* Adds s (borrowed: it must outlive the set) with value v unless present. Returns: true when
 * added, false when s was already there (*old, if non-NULL, gets its value). */
bool nd_cfg_strset_add(nd_cfg_strset_t *set, const char *s, size_t v, size_t *old);
/* Returns: whether s is in the set (*v, if non-NULL, gets its value). */
bool nd_cfg_strset_get(const nd_cfg_strset_t *set, const char *s, size_t *v);
void nd_cfg_strset_free(nd_cfg_strset_t *set);

/* The state of one nd_opts_apply_config call. */
typedef struct nd_cfg_apply {
    nd_opts_t *o;
    char *err; /* the error text, errlen bytes */
    size_t errlen;
    char *warns; /* newline-separated warnings, owned */
    size_t nwarns, warns_len, warns_cap;
    nd_cfg_strset_t user_ids; /* names and nkeys of a->o->users, for duplicate checks */
    char first_strict[512];   /* the first warning that makes nats-server's -t fail */
    char stricts[2048];       /* those warnings, each ending in a newline (as many as fit) */
    size_t stricts_len;
} nd_cfg_apply_t;

/* Where nats-server reports a value. */
typedef struct nd_cfg_at {
    const char *file;
    int line, col; /* 1-based, as the reader gives them */
} nd_cfg_at_t;

/* Returns: the position of a map entry's value (its key). */
nd_cfg_at_t nd_cfg_at_entry(const nd_cfg_entry_t *e);
/* Returns: the position of an array element (or any node) as written. */
nd_cfg_at_t nd_cfg_at_node(const nd_cfg_node_t *n);

/* Fills the error "<at>: <text>". Returns: -1. */
int nd_cfg_fail(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds the warning "<at>: <text>"; strict ones make -t fail (nats-server's configWarningErr). */
void nd_cfg_warn(nd_cfg_apply_t *a, bool strict, nd_cfg_at_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fails with Go's panic text for a failed type assertion (v.(T)). Returns: -1. */
int nd_cfg_type_err(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, nd_cfg_type_t want);
/* Go's name of the dynamic type of v ("int64", "map[string]interface {}", ...), for %T texts. */
const char *nd_cfg_go_type(const nd_cfg_node_t *v);
/* Go's %v of a scalar or container value, for texts that print the value (bounded). */
void nd_cfg_go_value(const nd_cfg_node_t *v, char *buf, size_t len);
/* Fails with `unknown field "<key>"` unless the key was only used as a $variable.
 * Returns: -1 when it failed, 0 when the key is to be skipped. */
int nd_cfg_unknown(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);

/* Type-checked scalars (v.(string), v.(bool), v.(int64)); set_str replaces *dst. */
int nd_cfg_str(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, char **dst);
int nd_cfg_bool(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, bool *dst);
int nd_cfg_i64(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, int64_t *dst);
/* int(v.(int64)) as Go does on 64-bit: stored in an int, clamped to its range. */
int nd_cfg_int(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, int *dst);
/* A seconds value written as an integer or a float (auth and TLS timeouts); other types keep
 * dflt, as nats-server's switch does. */
void nd_cfg_seconds(const nd_cfg_node_t *v, double dflt, double *dst);
void nd_set_str(char **dst, const char *s);

/* Parses a Go time.ParseDuration string. Returns: 0 with *ns, or -1 with Go's error text
 * ("time: invalid duration \"x\"") in why. */
int nd_cfg_go_duration(const char *s, int64_t *ns, char *why, size_t whylen);
/* nats-server's parseDuration: a duration string, or an integer of seconds with the strict
 * warning `invalid use of field "<field>": <field> should be converted to a duration`. */
int nd_cfg_duration(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *field, const nd_cfg_node_t *v,
                    int64_t *ms);
/* time.ParseDuration(v.(string)) with the error "<prefix>: <Go error>" (prefix NULL: the bare
 * Go error). */
int nd_cfg_duration_str(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *prefix,
                        const nd_cfg_node_t *v, int64_t *ms);
/* Go's time.Duration.String() of ms milliseconds, for texts that print a duration. */
void nd_cfg_go_dur_string(int64_t ms, char *buf, size_t len);
/* nats-server's parseListen: a port integer or "host:port". */
int nd_cfg_listen(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, char **host,
                  int *port);
/* The listener keys of the cluster, gateway, leafnodes, mqtt and websocket blocks, for
 * nd_cfg_key_is. */
#define ND_CFG_LISTENER_KEYS "listen port host net"
/* One of ND_CFG_LISTENER_KEYS into *host and *port: listen as nd_cfg_listen, port as
 * nd_cfg_int, host and net as nd_cfg_str. */
int nd_cfg_listener(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, char **host, int *port);
/* A string or an array of strings, into *out (a new list; no error text, so that each caller
 * keeps its own). Returns: 0, or -1 with *bad the offending node (v itself when v is neither a
 * string nor an array, else the first element that is not a string). */
int nd_cfg_strs(const nd_cfg_node_t *v, nd_strlist_t *out, const nd_cfg_node_t **bad);
/* nats-server's parseStringArray: a string or an array of strings, into *dst (replaced). */
int nd_cfg_strarray(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *field, const nd_cfg_node_t *v,
                    nd_strlist_t *dst);
/* nats-server's parseURLs over an array (duplicates warned and dropped) into *dst (replaced). */
int nd_cfg_urls(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *typ, const nd_cfg_node_t *v,
                nd_strlist_t *dst);
/* nats-server's parseURL: trims and checks the URL as Go's url.Parse would. */
int nd_cfg_url(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *typ, const char *u, char **dst);

/* Returns: whether key equals one of the space-separated names, ignoring ASCII case. */
bool nd_cfg_key_is(const char *key, const char *names);
/* Returns: whether s is a valid subject for nats-server's IsValidSubject. */
bool nd_cfg_valid_subject(const char *s);

#endif
