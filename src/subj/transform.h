/* Subject transforms and per-account subject mapping tables, as nats-server 2.10/2.11 has them.
 *
 * A transform is compiled from a (source pattern, destination) pair and rewrites a literal
 * subject matched by the source. The destination names source wildcards by their 1-based
 * position among the source's `*` tokens, either as `$N` or with mustache functions, whose names
 * are case-insensitive on the first letter of each word (`{{SplitFromLeft(..)}}` and
 * `{{splitfromleft(..)}}`, not `{{SPLITFROMLEFT(..)}}`), exactly as nats-server's regular
 * expressions allow:
 *   {{wildcard(i)}}            token i (same as $i)
 *   {{partition(n, i, j...)}}  FNV-1a 32 of tokens i, j... concatenated without separators, mod n
 *   {{split(i, delim)}}        token i split on delim (empty pieces dropped)
 *   {{splitFromLeft(i, p)}}    token i split in two after p bytes (p in 1..len-1, else as is)
 *   {{splitFromRight(i, p)}}   token i split in two p bytes before its end
 *   {{sliceFromLeft(i, n)}}    token i cut into n-byte pieces from the left (rest last)
 *   {{sliceFromRight(i, n)}}   token i cut into n-byte pieces from the right (rest first)
 *   {{left(i, n)}}, {{right(i, n)}}  the first / last n bytes of token i
 * A `>` in the source must be matched by a `>` as the destination's last token, which carries
 * the tokens that the source's `>` matched. Reference: nats-server server/subject_transform.go
 * (NewSubjectTransformWithStrict, indexPlaceHolders, TransformTokenizedSubject, reverse),
 * server/sublist.go ValidateMapping, server/accounts.go AddWeightedMappings and
 * selectMappedSubject, server/errors.go (texts). Version notes in src/subj/transform.c.
 *
 * Ctx: any thread. A compiled nd_xf_t is immutable; a table is built by its owner (the account
 * actor), then immutable and readable by any number of threads at once.
 */
#ifndef NATSD_TRANSFORM_H
#define NATSD_TRANSFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nd_mapping; /* cfg/opts.h */

/* Compile errors; nd_xf_strerror gives the base text, the err buffer of the compiling call the
 * whole nats-server text ("<base> in <token>" where nats-server names the token). */
typedef enum {
    ND_XF_OK = 0,
    ND_XF_ERR_BAD_SUBJECT,     /* "invalid subject" (ErrBadSubject) */
    ND_XF_ERR_DEST_INVALID,    /* "invalid mapping destination: invalid transform" */
    ND_XF_ERR_NOT_ALL_WC,      /* "...: not using all of the token wildcard(s)" (strict) */
    ND_XF_ERR_UNKNOWN_FN,      /* "...: unknown function" */
    ND_XF_ERR_INDEX_RANGE,     /* "...: wildcard index out of range" */
    ND_XF_ERR_NOT_ENOUGH_ARGS, /* "...: not enough arguments passed to the function" */
    ND_XF_ERR_INVALID_ARG,     /* "...: function argument is invalid or in the wrong format" */
    ND_XF_ERR_TOO_MANY_ARGS,   /* "...: too many arguments passed to the function" */
    ND_XF_ERR_IMPORT_FN,       /* "...: the only mapping function allowed for import ..." */
    ND_XF_ERR_DUPLICATE,       /* "duplicate entry for \"x\"" (weighted mappings) */
    ND_XF_ERR_WEIGHT,          /* "individual weights need to be <= 100" */
    ND_XF_ERR_TOTAL_WEIGHT,    /* "total weight needs to be <= 100" */
} nd_xf_err_t;

/* Which nats-server constructor's rules apply. */
typedef enum {
    ND_XF_MODE_TRANSFORM, /* NewSubjectTransform: stream subject_transform, sources, mirrors */
    ND_XF_MODE_STRICT,    /* NewSubjectTransformStrict: import/export remapping (reversible):
                           * only $N / {{wildcard(N)}}, every source `*` used */
    ND_XF_MODE_MAPPING,   /* ValidateMapping + NewSubjectTransform: account `mappings`. Note that
                           * ValidateMapping does not know left()/right(), so nats-server refuses
                           * them here ("unknown function") while streams accept them. */
} nd_xf_mode_t;

typedef struct nd_xf nd_xf_t;

/* Returns: the base text of err (nats-server's error string without the " in <token>" tail). */
const char *nd_xf_strerror(nd_xf_err_t err);

/* Compiles src -> dest under mode's rules. An empty src means ">". An empty dest is "no
 * transform" as in nats-server: ND_XF_OK with *out = NULL. On error *out = NULL and err (errlen
 * bytes, may be NULL) receives nats-server's full text.
 * Owns: *out (nd_xf_free). Ctx: any thread (cold path: allocates). */
nd_xf_err_t nd_xf_new(const char *src, const char *dest, nd_xf_mode_t mode, nd_xf_t **out,
                      char *err, size_t errlen) __attribute__((warn_unused_result));
void nd_xf_free(nd_xf_t *xf);

const char *nd_xf_src(const nd_xf_t *xf);
const char *nd_xf_dest(const nd_xf_t *xf);
/* Returns: true when the source has no wildcard, so the result is always the destination. */
bool nd_xf_is_constant(const nd_xf_t *xf);

/* TransformSubject: rewrites subj (not checked against the source) into out, snprintf-style:
 * writes at most cap-1 bytes plus a NUL (when cap > 0). Returns: the full length of the result;
 * a result >= cap was truncated and the caller retries with a larger buffer. A source token
 * missing from a short subject yields nothing where nats-server would panic. Allocates only for
 * subjects of more than 32 tokens. */
size_t nd_xf_apply(const nd_xf_t *xf, const char *subj, size_t len, char *out, size_t cap);

typedef enum {
    ND_XF_MATCHED,  /* *outlen = nd_xf_apply's result */
    ND_XF_NO_MATCH, /* "no matching transforms available" */
    ND_XF_BAD,      /* subj is not a valid literal subject ("invalid subject") */
} nd_xf_match_t;

/* Match: transforms subj when the source matches it. */
nd_xf_match_t nd_xf_match(const nd_xf_t *xf, const char *subj, size_t len, char *out, size_t cap,
                          size_t *outlen);

/* reverse(): the strict transform that maps results back (for imports), or NULL when there is
 * none. Owns: the result. */
nd_xf_t *nd_xf_reverse(const nd_xf_t *xf);

/* Returns: FNV-1a 32-bit of p[0..n) (Go's hash/fnv New32a), the partition() hash. */
uint32_t nd_xf_fnv1a32(const void *p, size_t n);

/* ---- Per-account mapping tables -------------------------------------------------------- */

typedef struct nd_xf_dest_spec {
    const char *subject;
    int weight;          /* percent, 0..100 */
    const char *cluster; /* NULL or "" = any cluster */
} nd_xf_dest_spec_t;

typedef struct nd_xf_table nd_xf_table_t;

typedef enum {
    ND_XF_MAP_NONE,   /* no mapping applies: publish to the subject as it is */
    ND_XF_MAP_MAPPED, /* publish to the subject written to out */
    ND_XF_MAP_DROP,   /* the mapping chose no destination (weights under 100 with the source
                       * itself listed): nats-server publishes to "" and the message is lost */
} nd_xf_map_t;

nd_xf_table_t *nd_xf_table_new(void);
void nd_xf_table_free(nd_xf_table_t *t);
size_t nd_xf_table_count(const nd_xf_table_t *t);

/* AddWeightedMappings: adds src -> dests, replacing an earlier mapping of the same src in
 * place. Checks (in nats-server's order): src valid, then per destination duplicates, weight <=
 * 100, total per cluster <= 100, ValidateMapping + NewSubjectTransform. When a cluster's weights
 * total under 100 and src is not itself a destination, src -> src gets the remainder. An empty
 * destination is refused as an invalid subject (nats-server accepts it and then crashes on the
 * first publish). Ctx: the table's owner, before the table is shared. */
nd_xf_err_t nd_xf_table_add(nd_xf_table_t *t, const char *src, const nd_xf_dest_spec_t *dests,
                            size_t ndests, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Adds every mapping of an account's options (cfg/opts.h), in order. On error, *bad (if not
 * NULL) is the index of the refused mapping and err holds nats-server's reason (the caller adds
 * its own "Error adding mapping for ..." context). */
nd_xf_err_t nd_xf_table_add_opts(nd_xf_table_t *t, const struct nd_mapping *m, size_t n,
                                 size_t *bad, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* RemoveMapping: nats-server moves the last mapping into the removed one's place (order
 * matters: the first matching mapping wins). Returns: whether src was there. */
bool nd_xf_table_remove(nd_xf_table_t *t, const char *src);

/* selectMappedSubject: finds the first mapping (in insertion order) whose source matches the
 * literal subject subj and picks a destination with rnd (any uniformly random 32-bit number;
 * rnd % 100 is the weighted draw, so tests pass 0..99). cluster (NULL = none) selects a
 * cluster-scoped destination list when the mapping has one for it. The new subject is written
 * to out as by nd_xf_apply, its length to *outlen (retry with a larger out when >= cap).
 *
 * Cost: a literal source is found by one hash probe of subj (XXH3); wildcard sources are then
 * tried in insertion order, only those added before the literal hit, each an nd_subj_match
 * (linear in the subject's length); the transform itself is linear in the output, allocation
 * free up to 32 subject tokens. The publish path calls this once per PUB, and only for an
 * account that has mappings. Ctx: any thread, concurrently, once the table is built. */
nd_xf_map_t nd_xf_table_map(const nd_xf_table_t *t, const char *subj, size_t len,
                            const char *cluster, uint32_t rnd, char *out, size_t cap,
                            size_t *outlen);

#endif
