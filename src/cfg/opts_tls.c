/* tls {} blocks -> nd_tls_opts_t, with nats-server's checks and texts (parseTLS, then
 * GenTLSConfig's: both halves of a key pair, files that load as PEM, a CA file that parses).
 *
 * Loading the files now, as nats-server's -t does, means a config that names a missing or
 * malformed certificate is refused at startup rather than at the first TLS handshake. The TLS
 * transport (a later issue) builds its SSL_CTX from the validated nd_tls_opts_t.
 * References: nats-server 2.9.10 server/opts.go parseTLS and GenTLSConfig, 2.10.29 parseTLS
 * (min_version, handshake_first, certs, ocsp_peer), server/ciphersuites.go.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

/* nats-server's cipherMap and curvePreferenceMap keys (Go's names). */
static const char *const cipher_names[] = {
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
};

static const char *const curve_names[] = {"X25519", "CurveP256", "CurveP384", "CurveP521"};

static bool
in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* Go's text for a failed os.Open: "open <path>: no such file or directory". */
static void
open_err(const char *path, int e, char *buf, size_t len)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s", strerror(e));
    msg[0] = (char)tolower((unsigned char)msg[0]);
    snprintf(buf, len, "open %s: %s", path, msg);
}

/* tls.LoadX509KeyPair's checks. Returns: NULL, or Go's error text in buf. */
static const char *
load_key_pair(const char *cert, const char *key, char *buf, size_t len)
{
    const char *why = NULL;
    FILE *cf = fopen(cert, "r"), *kf = NULL;
    X509 *x = NULL;
    EVP_PKEY *pk = NULL;
    if (cf == NULL) {
        open_err(cert, errno, buf, len);
        return buf;
    }
    kf = fopen(key, "r");
    if (kf == NULL) {
        open_err(key, errno, buf, len);
        why = buf;
        goto out;
    }
    x = PEM_read_X509(cf, NULL, NULL, NULL);
    if (x == NULL) {
        why = "tls: failed to find any PEM data in certificate input";
        goto out;
    }
    pk = PEM_read_PrivateKey(kf, NULL, NULL, NULL);
    if (pk == NULL) {
        why = "tls: failed to find any PEM data in key input";
        goto out;
    }
    if (X509_check_private_key(x, pk) != 1)
        why = "tls: private key does not match public key";
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(pk);
    if (kf)
        fclose(kf);
    fclose(cf);
    return why;
}

/* GenTLSConfig's checks, reported at the tls key. */
static int
gen_check(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_tls_opts_t *t)
{
    char buf[600];
    if (t->cert_file && !t->key_file)
        return nd_cfg_fail(a, at, "missing 'key_file' in TLS configuration");
    if (!t->cert_file && t->key_file)
        return nd_cfg_fail(a, at, "missing 'cert_file' in TLS configuration");
    if (t->cert_file) {
        const char *why = load_key_pair(t->cert_file, t->key_file, buf, sizeof buf);
        if (why)
            return nd_cfg_fail(a, at, "error parsing X509 certificate/key pair: %s", why);
    }
    for (size_t i = 0; i < t->ncerts; i++) {
        const char *why =
            load_key_pair(t->certs[i].cert_file, t->certs[i].key_file, buf, sizeof buf);
        if (why)
            return nd_cfg_fail(a, at, "error parsing X509 certificate/key pair: %s", why);
    }
    if (t->ca_file) {
        FILE *f = fopen(t->ca_file, "r");
        if (f == NULL) {
            open_err(t->ca_file, errno, buf, sizeof buf);
            return nd_cfg_fail(a, at, "%s", buf);
        }
        X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
        ERR_clear_error();
        if (x == NULL)
            return nd_cfg_fail(a, at, "failed to parse root ca certificate");
        X509_free(x);
    }
    return 0;
}

/* The client context (not cluster or gateway), in the readers' seen set. */
#define SEEN_CLIENT_CTX (1u << 31)

#define FIELD(blk, d, T) ((T *)((char *)(blk) + (d)->off))

/* cert_file, key_file, ca_file. */
static int
want_file(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)seen;
    if (e->val->type != ND_CFG_STRING)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "error parsing tls config, expected '%s' to be filename", d->keys);
    nd_set_str(FIELD(blk, d, char *), e->val->u.str.s);
    return 0;
}

static int
bool_of(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const char *key, bool *dst)
{
    if (e->val->type != ND_CFG_BOOL)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "error parsing tls config, expected '%s' to be a boolean", key);
    *dst = e->val->u.b;
    return 0;
}

/* insecure, verify. */
static int
want_bool(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)seen;
    return bool_of(a, e, d->keys, FIELD(blk, d, bool));
}

/* cipher_suites and curve_preferences: a non-empty array of known names. */
static int
name_list(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *key, const nd_cfg_node_t *v,
          const char *const *names, size_t nnames, const char *what, nd_strlist_t *dst)
{
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_type_err(a, at, v, ND_CFG_ARRAY);
    if (v->u.arr.n == 0)
        return nd_cfg_fail(a, at, "error parsing tls config, '%s' cannot be empty", key);
    nd_strlist_free(dst);
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *e = v->u.arr.v[i];
        if (e->type != ND_CFG_STRING)
            return nd_cfg_type_err(a, nd_cfg_at_node(e), e, ND_CFG_STRING);
        if (!in_list(e->u.str.s, names, nnames))
            return nd_cfg_fail(a, nd_cfg_at_node(e), "unrecognized %s %s", what, e->u.str.s);
        nd_strlist_add(dst, e->u.str.s);
    }
    return 0;
}

static int
certs(nd_cfg_apply_t *a, const nd_cfg_entry_t *ce, const nd_opt_desc_t *d, void *blk,
      unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    nd_cfg_at_t at = nd_cfg_at_entry(ce);
    const nd_cfg_node_t *v = ce->val;
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, at, "error parsing certificates config: unsupported type %s",
                           nd_cfg_go_type(v));
    t->certs = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sizeof(*t->certs)) : NULL;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *p = v->u.arr.v[i];
        nd_cfg_at_t pat = nd_cfg_at_node(p);
        if (p->type != ND_CFG_MAP)
            return nd_cfg_fail(a, pat, "error parsing certificates config: unsupported type %s",
                               nd_cfg_go_type(p));
        nd_tls_cert_pair_t *cp = &t->certs[t->ncerts++];
        for (size_t k = 0; k < p->u.map.n; k++) {
            const nd_cfg_entry_t *e = &p->u.map.e[k];
            pat = nd_cfg_at_entry(e);
            if (e->val->type != ND_CFG_STRING)
                return nd_cfg_fail(a, pat, "error parsing certificates config: unsupported type %s",
                                   nd_cfg_go_type(e->val));
            if (strcmp(e->key, "cert_file") == 0)
                nd_set_str(&cp->cert_file, e->val->u.str.s);
            else if (strcmp(e->key, "key_file") == 0)
                nd_set_str(&cp->key_file, e->val->u.str.s);
            else
                return nd_cfg_fail(a, pat, "error parsing tls certs config, unknown field \"%s\"",
                                   e->key);
        }
        if (!cp->cert_file || !cp->key_file)
            return nd_cfg_fail(a, pat,
                               "error parsing certificates config: both 'cert_file' and "
                               "'cert_key' options are required");
    }
    return 0;
}

static int
verify_and_map(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
               unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    bool b = false;
    if (bool_of(a, e, "verify_and_map", &b) < 0)
        return -1;
    t->verify = t->verify || b;
    t->verify_and_map = b;
    return 0;
}

static int
check_known_urls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                 unsigned *seen)
{
    (void)d;
    nd_tls_opts_t *t = blk;
    bool b = false;
    if (bool_of(a, e, "verify_cert_and_check_known_urls", &b) < 0)
        return -1;
    if (b && (*seen & SEEN_CLIENT_CTX))
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "verify_cert_and_check_known_urls not supported in this context");
    t->verify = t->verify || b;
    t->check_known_urls = b;
    return 0;
}

static int
cipher_suites(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
              unsigned *seen)
{
    (void)d, (void)seen;
    return name_list(a, nd_cfg_at_entry(e), "cipher_suites", e->val, cipher_names,
                     sizeof cipher_names / sizeof cipher_names[0], "cipher",
                     &((nd_tls_opts_t *)blk)->cipher_suites);
}

static int
curve_preferences(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                  unsigned *seen)
{
    (void)d, (void)seen;
    return name_list(a, nd_cfg_at_entry(e), "curve_preferences", e->val, curve_names,
                     sizeof curve_names / sizeof curve_names[0], "curve preference",
                     &((nd_tls_opts_t *)blk)->curve_preferences);
}

static int
timeout(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
        unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    const nd_cfg_node_t *v = e->val;
    if (v->type == ND_CFG_INT || v->type == ND_CFG_FLOAT) {
        nd_cfg_seconds(v, 0, &t->timeout_s);
        return 0;
    }
    if (v->type != ND_CFG_STRING)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), "error parsing tls config, 'timeout' wrong type");
    int64_t ns;
    char why[300];
    if (nd_cfg_go_duration(v->u.str.s, &ns, why, sizeof why) < 0)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), "error parsing tls config, 'timeout' %s", why);
    t->timeout_s = (double)ns / 1e9;
    return 0;
}

static int
rate_limit(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
           unsigned *seen)
{
    (void)d, (void)seen;
    if (e->val->type != ND_CFG_INT)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "error parsing tls config, 'connection_rate_limit' wrong type");
    ((nd_tls_opts_t *)blk)->rate_limit = e->val->u.i;
    return 0;
}

static int
pinned_certs(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
             unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "error parsing tls config, expected 'pinned_certs' to be a list of "
                           "hex-encoded sha256 of DER encoded SubjectPublicKeyInfo");
    nd_strlist_free(&t->pinned_certs);
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *el = v->u.arr.v[i];
        if (el->type != ND_CFG_STRING)
            return nd_cfg_type_err(a, nd_cfg_at_node(el), el, ND_CFG_STRING);
        char low[256];
        snprintf(low, sizeof low, "%s", el->u.str.s);
        bool ok = strlen(el->u.str.s) == 64;
        for (size_t c = 0; low[c]; c++) {
            low[c] = (char)tolower((unsigned char)low[c]);
            ok = ok && isxdigit((unsigned char)low[c]);
        }
        if (!ok)
            return nd_cfg_fail(a, nd_cfg_at_node(el),
                               "error parsing tls config, 'pinned_certs' key %s does not look "
                               "like hex-encoded sha256 of DER encoded SubjectPublicKeyInfo",
                               low);
        nd_strlist_add(&t->pinned_certs, low);
    }
    return 0;
}

/* 2.10 */
static int
min_version(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
            unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_STRING) {
        char val[128];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, at, "error parsing tls config: 'min_version' wrong type: %s", val);
    }
    static const struct {
        const char *s;
        int v;
    } vers[] = {{"1.0", 0x0301}, {"1.1", 0x0302}, {"1.2", 0x0303}, {"1.3", 0x0304}};
    int ver = 0;
    for (size_t i = 0; i < sizeof vers / sizeof vers[0]; i++)
        if (strcmp(v->u.str.s, vers[i].s) == 0)
            ver = vers[i].v;
    if (ver == 0)
        return nd_cfg_fail(a, at, "error parsing tls config: unknown version: %s", v->u.str.s);
    if (ver < 0x0303)
        return nd_cfg_fail(a, at, "error parsing tls config: unsupported TLS version: TLS %s",
                           v->u.str.s);
    ((nd_tls_opts_t *)blk)->min_version = ver;
    return 0;
}

/* 2.10 */
static int
handshake_first(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    const char *k = e->key;
    if (v->type == ND_CFG_BOOL) {
        t->handshake_first = v->u.b;
        return 0;
    }
    if (v->type != ND_CFG_STRING)
        return nd_cfg_fail(a, at, "field \"%s\" should be a boolean or a string, got %s", k,
                           nd_cfg_go_type(v));
    const char *s = v->u.str.s;
    int64_t ns;
    char why[300];
    if (strcasecmp(s, "true") == 0 || strcasecmp(s, "on") == 0) {
        t->handshake_first = true;
    } else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "off") == 0) {
        t->handshake_first = false;
    } else if (strcasecmp(s, "auto") == 0 || strcasecmp(s, "auto_fallback") == 0) {
        t->handshake_first = true;
        t->fallback_delay_ms = 50; /* DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY */
    } else if (nd_cfg_go_duration(s, &ns, why, sizeof why) == 0) {
        t->handshake_first = true;
        t->fallback_delay_ms = ns / 1000000;
    } else {
        return nd_cfg_fail(a, at, "field \"%s\"'s value \"%s\" is invalid", k, s);
    }
    return 0;
}

/* 2.10 */
static int
ocsp_peer(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)d, (void)seen;
    nd_tls_opts_t *t = blk;
    const nd_cfg_node_t *v = e->val;
    if (v->type == ND_CFG_BOOL) {
        t->ocsp_peer = v->u.b;
        return 0;
    }
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "error parsing ocsp peer config: unsupported type %s",
                           nd_cfg_go_type(v));
    /* The map form's tuning (timeouts, cache) waits for the OCSP work. */
    t->ocsp_peer = true;
    const nd_cfg_node_t *ver = nd_cfg_get(v, "verify");
    if (ver && ver->type == ND_CFG_BOOL)
        t->ocsp_peer = ver->u.b;
    return 0;
}

#define R(T, ...) ND_OPT(T, NULL, __VA_ARGS__)

static const nd_opt_desc_t cert_pair_d[] = {
    R(nd_tls_cert_pair_t, cert_file, ND_OT_STR),
    R(nd_tls_cert_pair_t, key_file, ND_OT_STR),
    ND_OPT_END,
};
static const nd_opt_block_t cert_pair_block = {
    "certs", NULL, sizeof(nd_tls_cert_pair_t), cert_pair_d, ND_RL_INHERIT, NULL};
#undef R

#define T(...) ND_OPT(nd_tls_opts_t, __VA_ARGS__)
static const nd_opt_desc_t tls_d[] = {
    T("cert_file", cert_file, ND_OT_STR, .parse = want_file),
    T("key_file", key_file, ND_OT_STR, .parse = want_file),
    T("ca_file", ca_file, ND_OT_STR, .parse = want_file),
    T("certs certificates", certs, ND_OT_ARRAY, .sub = &cert_pair_block,
      .count_off = offsetof(nd_tls_opts_t, ncerts), .parse = certs),
    T("verify", verify, ND_OT_BOOL, .parse = want_bool),
    T("verify_and_map", verify_and_map, ND_OT_BOOL, .parse = verify_and_map),
    T("verify_cert_and_check_known_urls", check_known_urls, ND_OT_BOOL, .parse = check_known_urls),
    T("insecure", insecure, ND_OT_BOOL, .parse = want_bool),
    T("cipher_suites", cipher_suites, ND_OT_STRLIST, .parse = cipher_suites),
    T("curve_preferences", curve_preferences, ND_OT_STRLIST, .parse = curve_preferences),
    T("pinned_certs", pinned_certs, ND_OT_STRLIST, .parse = pinned_certs),
    T("timeout", timeout_s, ND_OT_DBL, .parse = timeout, .flags = ND_OF_ZERO,
      .zero = ND_ZERO_DEFAULT_AT_USE,
      .note = "ND_TLS_DEFAULT_TIMEOUT_MS: tls.c, for every tls {} block"),
    T("connection_rate_limit", rate_limit, ND_OT_I64, .parse = rate_limit),
    T("min_version", min_version, ND_OT_INT, .parse = min_version),
    T("handshake_first first immediate", handshake_first, ND_OT_BOOL, .parse = handshake_first),
    T(NULL, fallback_delay_ms, ND_OT_I64),
    T("ocsp_peer", ocsp_peer, ND_OT_BOOL, .parse = ocsp_peer),
    ND_OPT_END,
};
#undef T

const nd_opt_block_t nd_opt_tls_block = {
    "tls", NULL,          sizeof(nd_tls_opts_t),
    tls_d, ND_RL_INHERIT, "error parsing tls config, unknown field [\"%s\"]"};

/* Parses a tls block at the entry tls_e into *out (replaced). client_ctx: false for cluster and
 * gateway blocks (the only ones allowing verify_cert_and_check_known_urls). */
int
nd_cfg_tls(nd_cfg_apply_t *a, const nd_cfg_entry_t *tls_e, bool client_ctx, nd_tls_opts_t **out)
{
    const nd_cfg_node_t *v = tls_e->val;
    nd_cfg_at_t at = nd_cfg_at_entry(tls_e);
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, at, v, ND_CFG_MAP);
    nd_tls_opts_t *t = nd_xcalloc(1, sizeof(*t));
    int rc = nd_opt_parse_map_seen(a, &nd_opt_tls_block, t, v, client_ctx ? SEEN_CLIENT_CTX : 0);
    if (rc == 0 && t->ncerts > 0 && t->cert_file)
        rc = nd_cfg_fail(a, at,
                         "error parsing tls config, cannot combine 'cert_file' option with "
                         "'certs' option");
    if (rc == 0)
        rc = gen_check(a, at, t);
    if (rc < 0) {
        nd_tls_opts_free(t);
        return -1;
    }
    nd_tls_opts_free(*out);
    *out = t;
    return 0;
}
