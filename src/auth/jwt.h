/* NATS JWTs: decoding, signature and time checks, revocation, encoding and signing, creds files
 * and CONNECT nonce signatures. The trust chain itself (operator -> account -> user, signing keys,
 * resolvers) is the caller's: this module checks one token at a time.
 *
 * Format (github.com/nats-io/jwt v2: header.go, claims.go, decoder.go):
 *   token  = b64(header) "." b64(claims) "." b64(signature), b64 = base64 RawURL (no padding)
 *   header = {"typ":"JWT","alg":"ed25519-nkey"}; typ is compared case-insensitively, alg
 *            lower-cased must be "ed25519-nkey" or the v1 "ed25519".
 *   claims = {"jti","iat","iss","name","sub","exp","nbf","aud", "nats":{...,"type","version":2}};
 *            a v1 token has "type" at the top level instead of in "nats"; a "nats" without a
 *            version (0) is also taken for v1 when the signature is checked, as Go does.
 *   signature = ed25519 by the issuer's nkey over "<header>.<claims>" (the two encoded segments
 *            and the dot) for v2, and over the encoded claims segment alone for v1.
 *   jti    = base32 (no padding) of SHA-512/256 of the standard claims (jti left out), so the id
 *            names the content.
 * Which roles may issue what (ExpectedPrefixes): an operator claim by an operator key, an account
 * claim by an operator key, a user claim by an account key. The subject must be a key of the
 * claim's own role. A claim is expired when exp > 0 and now > exp, not yet valid when nbf > 0 and
 * nbf > now (ClaimsData.Validate). Revocations (revocation_list.go) map a user key, or "*" for all
 * users, to a time: a user JWT is revoked when that time >= the JWT's iat.
 *
 * Decoding follows Go's encoding/json where it matters for security: a field of the wrong JSON
 * type is an error (not silently ignored), null is the same as absent, unknown fields are
 * ignored, numbers must be integers where Go has int64. Stricter than Go on purpose: duplicate
 * keys, NUL inside strings and null inside string lists are refused, and keys match exactly
 * (Go's encoding/json also matches them case-insensitively). Tokens over 1 MiB are refused before
 * any work (jwt.MaxTokenSize). Every field below is owned by the nd_jwt_t and freed by nd_jwt_free;
 * absent strings are NULL, absent numbers 0 (as Go's zero values; v2 encoders write -1 for
 * "unlimited", so 0 really means zero when a field is present).
 *
 * Creds files (creds_utils.go): blocks "-----BEGIN NATS USER JWT-----\n<jwt>\n------END...------"
 * then "-----BEGIN USER NKEY SEED-----\n<seed>\n------END...------"; the first block is the JWT,
 * the second the seed. CONNECT nonce signatures (server/auth.go): sig = base64 RawURL (standard
 * base64 accepted too) of ed25519(nonce) by the user's key.
 *
 * Ctx: any thread; no shared state.
 */
#ifndef ND_JWT_H
#define ND_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/err.h"

#define ND_JWT_MAX_TOKEN (1024 * 1024) /* jwt.MaxTokenSize */

typedef enum {
    ND_JWT_GENERIC = 0, /* any other "type": decoded, signature checked, no nats fields */
    ND_JWT_OPERATOR,
    ND_JWT_ACCOUNT,
    ND_JWT_USER,
    ND_JWT_ACTIVATION,
} nd_jwt_type_t;

typedef struct nd_jwt_strlist {
    char **v;
    size_t n;
} nd_jwt_strlist_t;

typedef struct nd_jwt_perm {
    nd_jwt_strlist_t allow, deny; /* subscribe entries may be "subject queue" */
} nd_jwt_perm_t;

typedef struct nd_jwt_perms {
    nd_jwt_perm_t pub, sub;
    bool has_resp;       /* "resp" present: allow responses */
    int64_t resp_max;    /* "max" */
    int64_t resp_ttl_ns; /* "ttl", a Go time.Duration in nanoseconds */
} nd_jwt_perms_t;

typedef struct nd_jwt_time_range {
    char *start, *end; /* "15:04:05" */
} nd_jwt_time_range_t;

/* A user's permissions and limits: the user claim's body, and a scoped signing key's template. */
typedef struct nd_jwt_user_limits {
    nd_jwt_perms_t perms;
    int64_t subs, data, payload; /* NatsLimits; -1 = unlimited */
    nd_jwt_strlist_t src;        /* CIDRs (a v1 comma-separated string is split) */
    nd_jwt_time_range_t *times;
    size_t ntimes;
    char *locale; /* "times_location" */
    bool bearer_token;
    bool proxy_required;
    nd_jwt_strlist_t allowed_connection_types;
} nd_jwt_user_limits_t;

typedef struct nd_jwt_user {
    nd_jwt_user_limits_t lim;
    char *issuer_account; /* set when a signing key issued the user */
} nd_jwt_user_t;

typedef struct nd_jwt_js_limits {
    int64_t mem_storage, disk_storage, streams, consumer, max_ack_pending;
    int64_t mem_max_stream_bytes, disk_max_stream_bytes;
    bool max_bytes_required;
} nd_jwt_js_limits_t;

typedef struct nd_jwt_js_tier {
    char *name;
    nd_jwt_js_limits_t lim;
} nd_jwt_js_tier_t;

typedef struct nd_jwt_revocation {
    char *key; /* a public key, or "*" for all */
    int64_t at;
} nd_jwt_revocation_t;

typedef enum {
    ND_JWT_EXPORT_UNKNOWN = 0,
    ND_JWT_EXPORT_STREAM,
    ND_JWT_EXPORT_SERVICE
} nd_jwt_export_type_t;
typedef enum {
    ND_JWT_RESP_DEFAULT = 0, /* absent: Singleton */
    ND_JWT_RESP_SINGLETON,
    ND_JWT_RESP_STREAM,
    ND_JWT_RESP_CHUNKED,
} nd_jwt_resp_type_t;

typedef struct nd_jwt_export {
    char *name, *subject;
    nd_jwt_export_type_t type;
    bool token_req, advertise, allow_trace;
    nd_jwt_revocation_t *revocations;
    size_t nrevocations;
    nd_jwt_resp_type_t response_type;
    int64_t response_threshold_ns;
    bool has_latency;
    int64_t latency_sampling; /* 0 = "headers" */
    char *latency_results;
    uint32_t account_token_position;
} nd_jwt_export_t;

typedef struct nd_jwt_import {
    char *name, *subject, *account, *token, *to, *local_subject;
    nd_jwt_export_type_t type;
    bool share, allow_trace;
} nd_jwt_import_t;

typedef struct nd_jwt_signing_key {
    char *key;
    bool scoped; /* an object of kind "user_scope" rather than a plain key */
    char *role, *description;
    nd_jwt_user_limits_t template; /* scoped only */
} nd_jwt_signing_key_t;

typedef struct nd_jwt_mapping_dest {
    char *subject, *cluster;
    uint32_t weight; /* 0..100 */
} nd_jwt_mapping_dest_t;

typedef struct nd_jwt_mapping {
    char *source;
    nd_jwt_mapping_dest_t *dests;
    size_t ndests;
} nd_jwt_mapping_t;

typedef struct nd_jwt_account {
    /* limits (OperatorLimits: NatsLimits + AccountLimits + JetStreamLimits, flattened) */
    int64_t subs, data, payload, imports_max, exports_max, conn, leaf;
    bool wildcards, disallow_bearer;
    nd_jwt_js_limits_t js;
    nd_jwt_js_tier_t *tiers;
    size_t ntiers;
    nd_jwt_import_t *imports;
    size_t nimports;
    nd_jwt_export_t *exports;
    size_t nexports;
    nd_jwt_signing_key_t *signing_keys;
    size_t nsigning_keys;
    nd_jwt_revocation_t *revocations;
    size_t nrevocations;
    nd_jwt_perms_t default_permissions;
    nd_jwt_mapping_t *mappings;
    size_t nmappings;
    nd_jwt_strlist_t auth_users, auth_allowed_accounts; /* "authorization" (auth callout) */
    char *auth_xkey;
    char *cluster_traffic;
} nd_jwt_account_t;

typedef struct nd_jwt_operator {
    nd_jwt_strlist_t signing_keys;
    char *account_server_url;
    nd_jwt_strlist_t operator_service_urls;
    char *system_account;
    char *assert_server_version;
    bool strict_signing_key_usage;
} nd_jwt_operator_t;

typedef struct nd_jwt {
    nd_jwt_type_t type;
    char *type_name; /* the claim's "type" string as sent */
    int version;     /* 1 or 2 */
    char *jti, *iss, *sub, *name, *aud;
    int64_t iat, exp, nbf;
    nd_jwt_strlist_t tags;
    union {
        nd_jwt_operator_t op;
        nd_jwt_account_t acc;
        nd_jwt_user_t user;
    } u;            /* by type; zeroed for GENERIC and ACTIVATION */
    json_t *claims; /* the whole decoded claims object, for fields not mapped above */
} nd_jwt_t;

/* Decodes tok[0..len), checks its header, parses the claims, verifies the signature with the
 * issuer key named in "iss", checks the issuer's and the subject's roles for the claim type.
 * Time is not checked here (nd_jwt_check_times). On error *out is NULL and, when detail is not
 * NULL, a one-line explanation (never containing key material beyond public keys) is written
 * there (cap bytes, NUL-terminated).
 * Owns: *out (nd_jwt_free). Returns: ND_OK or the first error found. */
__attribute__((warn_unused_result)) nd_err_t
nd_jwt_decode(const char *tok, size_t len, nd_jwt_t **out, char *detail, size_t cap);

void nd_jwt_free(nd_jwt_t *jwt);

/* Returns: ND_ERR_JWT_EXPIRED, ND_ERR_JWT_NOT_YET_VALID or ND_OK for a check at `now` (Unix
 * seconds). */
ND_MUST_CHECK nd_err_t nd_jwt_check_times(const nd_jwt_t *jwt, int64_t now);

/* The outcome of a user's connect-time windows (jwt_times.c). */
typedef enum {
    ND_JWT_TIMES_OK,      /* no window, or now is inside one */
    ND_JWT_TIMES_OUTSIDE, /* now is outside every window */
    ND_JWT_TIMES_INVALID, /* a window is not "hh:mm:ss", or times_location is not a zone */
} nd_jwt_times_t;

/* Checks lim's "times" and "times_location" at now_ns (Unix nanoseconds), as nats-server's
 * validateTimes: *left_ns is set to the nanoseconds until the admitting window closes (0 when
 * lim has no window). Reads zoneinfo files for a named location. */
nd_jwt_times_t nd_jwt_check_user_times(const nd_jwt_user_limits_t *lim, int64_t now_ns,
                                       int64_t *left_ns);

/* Returns: true when the revocation list revokes key for a JWT issued at `issued_at` (an entry
 * for key, or for "*", whose time is >= issued_at). */
bool nd_jwt_revoked(const nd_jwt_revocation_t *list, size_t n, const char *key, int64_t issued_at);

/* Returns: true when the account revokes the user JWT: nd_jwt_revoked over its revocations with
 * the user's subject and iat; a user JWT without iat or subject counts as revoked (as
 * AccountClaims.IsClaimRevoked). */
bool nd_jwt_user_revoked(const nd_jwt_t *account, const nd_jwt_t *user);

/* Returns: true when key is the account itself or one of its signing keys; *scope (when not
 * NULL) is set to the signing key entry, or NULL for the account key itself. */
bool nd_jwt_account_has_signer(const nd_jwt_t *account, const char *key,
                               const nd_jwt_signing_key_t **scope);

#define ND_JWT_ENC_RAW 1u /* sign the claims exactly as given: no iss/iat/jti, no role check */
#define ND_JWT_ENC_V1  2u /* header alg "ed25519" and a v1 signature (tests of old tokens) */

/* Encodes and signs claims (a JSON object) with the nkey seed: sets "iss" to the seed's public
 * key, "iat" to now when absent, "jti" to the content hash, and checks that the seed's role may
 * issue the claim type (nats.type or type). The claims object is not modified.
 * Owns: *out (nd_free). Returns: ND_OK, ND_ERR_JWT_SEED, ND_ERR_JWT_SEED_ROLE or
 * ND_ERR_JWT_ENCODE. */
__attribute__((warn_unused_result)) nd_err_t
nd_jwt_encode(const json_t *claims, const char *seed, size_t seedlen, unsigned flags, char **out);

/* Finds the JWT and the seed of a creds file (either output may be NULL when not wanted).
 * Without decorated blocks the whole text (trimmed) is taken as the JWT and the seed is the
 * first line that starts with "SO", "SA" or "SU" after leading blanks.
 * Owns: *jwt and *seed (nd_free; wipe the seed first). Returns: ND_OK or ND_ERR_JWT_CREDS. */
__attribute__((warn_unused_result)) nd_err_t nd_jwt_creds_parse(const char *text, size_t len,
                                                                char **jwt, char **seed);

#define ND_JWT_NONCE_LEN 15 /* base64 RawURL of 11 random bytes (server/nkey.go nonceLen) */

/* Makes the nonce for an INFO challenge: 11 bytes from the CSPRNG, base64 RawURL, NUL-terminated.
 * Returns: false only when the generator fails (then nothing may be sent). */
__attribute__((warn_unused_result)) bool nd_jwt_nonce(char out[ND_JWT_NONCE_LEN + 1]);

/* Returns: true when sig (base64 RawURL, or standard base64) is an ed25519 signature of
 * nonce[0..nlen) by the public nkey pub of role `role` (ND_NKEY_PREFIX_USER for clients, or
 * ND_NKEY_PREFIX_ANY). */
bool nd_jwt_verify_nonce(const char *pub, size_t publen, uint8_t role, const void *nonce,
                         size_t nlen, const char *sig, size_t siglen);

/* Signs nonce with a seed the way clients do: base64 RawURL of the ed25519 signature.
 * Owns: *out (nd_free). Returns: false on a bad seed. For tests and for leafnode solicits. */
bool nd_jwt_sign_nonce(const char *seed, size_t seedlen, const void *nonce, size_t nlen,
                       char **out);

#endif
