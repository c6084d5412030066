/* accounts {} and mappings {} -> nd_account_opts_t, with nats-server's shapes, checks and texts.
 *
 * Algorithm (nats-server's parseAccounts): each account's entries are parsed on their own
 * (users, exports, imports, mappings, limits, jetstream); its users join nd_opts_t.users with
 * the account's name, checked for duplicates against every user seen so far. Only when every
 * account parsed cleanly are exports and then imports resolved across accounts, in that order,
 * because an import is authorised by the exporting account's export list:
 *   - an export's approved accounts must exist;
 *   - a stream import needs an export of the exporter whose subject contains the import subject
 *     (exact match first, then subset), public or approving the importer (or naming it at the
 *     export's account_token_position); a prefix must be literal; a repeated import is refused;
 *   - a service import likewise, then must not form a cycle: following the exporter's own service
 *     imports whose subjects collide must never come back to an account already visited (and a
 *     stream import likewise over stream imports of matching exports).
 * Those cross-account errors are reported at the top-level `accounts` key, as nats-server does.
 * Subject mappings are validated as nats-server's AddWeightedMappings does (weights, duplicate
 * destinations, destination tokens and functions, wildcard use).
 * References: nats-server 2.9.10 server/opts.go (parseAccounts, parseAccountExports/Imports,
 * parseExportStreamOrService, parseImportStreamOrService, parseServiceLatency,
 * parseAccountMappings, parseAccountMapDest, parseAccountLimits, parseJetStreamForAccount),
 * server/accounts.go (add*Export*, Add*Import*, check*ImportAuthorized, checkAuth, cycle checks,
 * AddWeightedMappings, newTransform), server/sublist.go ValidateMappingDestination.
 */
#include <stdio.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

/* ---- subjects ----------------------------------------------------------------------------- */

/* Splits s at '.' into at most max tokens (pointers into buf). Returns: the token count. */
static size_t
tokens(const char *s, char *buf, size_t buflen, char **tok, size_t max)
{
    snprintf(buf, buflen, "%s", s);
    size_t n = 0;
    char *p = buf;
    for (;;) {
        char *d = strchr(p, '.');
        if (n < max)
            tok[n] = p;
        n++;
        if (!d)
            break;
        *d = '\0';
        p = d + 1;
    }
    return n;
}

/* nats-server's isSubsetMatch(tokens(sub), test): every subject sub matches, test matches. */
static bool
subset_match(const char *sub, const char *test)
{
    char b1[512], b2[512], *t1[64], *t2[64];
    size_t n1 = tokens(sub, b1, sizeof b1, t1, 64), n2 = tokens(test, b2, sizeof b2, t2, 64);
    if (n1 > 64 || n2 > 64)
        return false;
    for (size_t i = 0; i < n2; i++) {
        if (i >= n1)
            return false;
        const char *t = t2[i];
        if (strcmp(t, ">") == 0)
            return true;
        if (strcmp(t, "*") == 0) {
            if (strcmp(t1[i], ">") == 0)
                return false;
            continue;
        }
        if (strcmp(t, t1[i]) != 0)
            return false;
    }
    return n1 == n2;
}

/* nats-server's SubjectsCollide: whether some literal subject matches both. */
static bool
subjects_collide(const char *a, const char *b)
{
    char b1[512], b2[512], *t1[64], *t2[64];
    size_t n1 = tokens(a, b1, sizeof b1, t1, 64), n2 = tokens(b, b2, sizeof b2, t2, 64);
    if (n1 > 64 || n2 > 64)
        return false;
    for (size_t i = 0; i < n1 && i < n2; i++) {
        if (strcmp(t1[i], ">") == 0 || strcmp(t2[i], ">") == 0)
            return true;
        if (strcmp(t1[i], "*") == 0 || strcmp(t2[i], "*") == 0)
            continue;
        if (strcmp(t1[i], t2[i]) != 0)
            return false;
    }
    return n1 == n2;
}

static bool
is_literal(const char *s)
{
    char b[512], *t[64];
    size_t n = tokens(s, b, sizeof b, t, 64);
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(t[i], "*") == 0 || strcmp(t[i], ">") == 0)
            return false;
    return true;
}

/* ---- mappings ----------------------------------------------------------------------------- */

static const char *const map_funcs[] = {"partition",      "wildcard",      "splitfromleft",
                                        "splitfromright", "slicefromleft", "slicefromright",
                                        "split"};

/* Whether t is "{{ <known function> ( ... ) }}" (nats-server's regular expressions). */
static bool
known_function(const char *t, size_t len)
{
    const char *p = t + 2, *end = t + len - 2;
    while (p < end && isspace((unsigned char)*p))
        p++;
    for (size_t f = 0; f < sizeof map_funcs / sizeof map_funcs[0]; f++) {
        size_t fl = strlen(map_funcs[f]);
        if ((size_t)(end - p) < fl || strncasecmp(p, map_funcs[f], fl) != 0)
            continue;
        const char *q = p + fl;
        while (q < end && isspace((unsigned char)*q))
            q++;
        if (q < end && *q == '(' && memchr(q, ')', (size_t)(end - q)) != NULL)
            return true;
    }
    return false;
}

/* ValidateMappingDestination, then newTransform's checks. Returns: NULL or the error text. */
static const char *
check_destination(const char *src, const char *dest, char *buf, size_t len)
{
    char b[1024], *t[128];
    size_t n = tokens(dest, b, sizeof b, t, 128);
    if (n > 128)
        return "invalid subject";
    bool fwc = false;
    size_t placeholders = 0;
    for (size_t i = 0; i < n; i++) {
        size_t tl = strlen(t[i]);
        if (tl == 0 || fwc) {
            snprintf(buf, len, "invalid mapping destination: invalid subject in %s", t[i]);
            return buf;
        }
        if (tl > 4 && t[i][0] == '{' && t[i][1] == '{' && t[i][tl - 2] == '}' &&
            t[i][tl - 1] == '}') {
            if (!known_function(t[i], tl)) {
                snprintf(buf, len, "invalid mapping destination: unknown function in %s", t[i]);
                return buf;
            }
            placeholders++;
            continue;
        }
        if (t[i][0] == '$' && tl > 1 && isdigit((unsigned char)t[i][1]))
            placeholders++;
        if (tl == 1 && t[i][0] == '>')
            fwc = true;
        else if (strpbrk(t[i], "\t\n\f\r "))
            return "invalid mapping destination: invalid subject";
    }
    /* newTransform: both valid, the same full wildcard, no '*' in the destination, and every
     * '*' of the source used by a placeholder. */
    size_t spwc = 0;
    bool sfwc = false;
    char sb[512], *st[64];
    size_t sn = tokens(src, sb, sizeof sb, st, 64);
    for (size_t i = 0; i < sn && i < 64; i++) {
        spwc += strcmp(st[i], "*") == 0;
        sfwc = sfwc || strcmp(st[i], ">") == 0;
    }
    bool dpwc = false;
    for (size_t i = 0; i < n; i++)
        dpwc = dpwc || strcmp(t[i], "*") == 0;
    if (dpwc || sfwc != fwc || !nd_cfg_valid_subject(src))
        return "invalid subject";
    if ((spwc > 0 || sfwc) && placeholders < spwc) {
        snprintf(buf, len,
                 "invalid mapping destination: not using all of the token wildcard(s) in %s", dest);
        return buf;
    }
    return NULL;
}

static void
mapping_clear(nd_mapping_t *m)
{
    nd_free(m->src);
    for (size_t d = 0; d < m->ndests; d++) {
        nd_free(m->dests[d].subject);
        nd_free(m->dests[d].cluster);
    }
    nd_free(m->dests);
    memset(m, 0, sizeof(*m));
}

/* parseAccountMapDest: {destination, weight, cluster}; reported at the element (el). */
static int
map_dest(nd_cfg_apply_t *a, nd_cfg_at_t el, const nd_cfg_node_t *v, nd_mapping_dest_t *d)
{
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, el, "Expected an entry for the mapping destination");
    bool weight = false;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *x = e->val;
        if (nd_cfg_key_is(e->key, "dest destination")) {
            if (nd_cfg_str(a, at, x, &d->subject) < 0)
                return -1;
        } else if (nd_cfg_key_is(e->key, "weight")) {
            long long w;
            if (x->type == ND_CFG_STRING) {
                char ws[128], *end;
                snprintf(ws, sizeof ws, "%s", x->u.str.s);
                size_t l = strlen(ws);
                if (l && ws[l - 1] == '%')
                    ws[l - 1] = '\0';
                errno = 0;
                w = strtoll(ws, &end, 10);
                if (ws[0] == '\0' || *end != '\0' || errno || isspace((unsigned char)ws[0]))
                    return nd_cfg_fail(a, at, "Invalid weight \"%s\" for mapping destination", ws);
            } else if (x->type == ND_CFG_INT) {
                w = x->u.i;
            } else {
                char val[128];
                nd_cfg_go_value(x, val, sizeof val);
                return nd_cfg_fail(a, at, "Unknown entry type for weight of %s\n", val);
            }
            if (w > 100 || w < 0)
                return nd_cfg_fail(a, at, "Invalid weight %lld for mapping destination", w);
            d->weight = (int)w;
            weight = true;
        } else if (nd_cfg_key_is(e->key, "cluster")) {
            if (nd_cfg_str(a, at, x, &d->cluster) < 0)
                return -1;
        } else {
            return nd_cfg_fail(a, at, "Unknown field \"%s\" for mapping destination", e->key);
        }
    }
    if (!weight)
        return nd_cfg_fail(a, el, "Missing weight for mapping destination \"%s\"",
                           d->subject ? d->subject : "");
    return 0;
}

/* AddWeightedMappings' checks. Returns: NULL or the error text. */
static const char *
check_mapping(const nd_mapping_t *m, char *buf, size_t len)
{
    if (!nd_cfg_valid_subject(m->src))
        return "invalid subject";
    int total = 0;
    nd_cfg_strset_t seen = {0};
    const char *why = NULL;
    for (size_t i = 0; i < m->ndests && why == NULL; i++) {
        const char *ds = m->dests[i].subject ? m->dests[i].subject : "";
        if (!nd_cfg_strset_add(&seen, ds, i, NULL)) {
            snprintf(buf, len, "duplicate entry for \"%s\"", ds);
            why = buf;
        } else if (m->dests[i].weight > 100) {
            why = "individual weights need to be <= 100";
        } else if ((total += m->dests[i].weight) > 100) {
            why = "total weight needs to be <= 100";
        } else {
            why = check_destination(m->src, ds, buf, len);
        }
    }
    nd_cfg_strset_free(&seen);
    return why;
}

int
nd_cfg_mappings(nd_cfg_apply_t *a, const nd_cfg_entry_t *me, nd_account_opts_t *acc)
{
    const nd_cfg_node_t *v = me->val;
    nd_cfg_at_t mat = nd_cfg_at_entry(me);
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, mat, v, ND_CFG_MAP);
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        if (!nd_cfg_valid_subject(e->key))
            return nd_cfg_fail(a, mat, "Subject \"%s\" is not a valid subject", e->key);
        nd_mapping_t m = {.src = nd_xstrdup(e->key)};
        const nd_cfg_node_t *x = e->val;
        int rc = 0;
        if (x->type == ND_CFG_STRING) {
            m.dests = nd_xcalloc(1, sizeof(*m.dests));
            m.ndests = 1;
            m.dests[0].subject = nd_xstrdup(x->u.str.s);
            m.dests[0].weight = 100;
        } else {
            /* nats-server's `case interface{}` sends every other type through the
             * {destination, weight} reader, which wants a map. */
            m.weighted = true;
            size_t n = x->type == ND_CFG_ARRAY ? x->u.arr.n : 1;
            m.dests = nd_xcalloc(n ? n : 1, sizeof(*m.dests));
            for (size_t d = 0; d < n && rc == 0; d++) {
                const nd_cfg_node_t *el = x->type == ND_CFG_ARRAY ? x->u.arr.v[d] : x;
                m.ndests++;
                rc =
                    map_dest(a, x->type == ND_CFG_ARRAY ? nd_cfg_at_node(el) : at, el, &m.dests[d]);
            }
        }
        char buf[512];
        const char *why = rc == 0 ? check_mapping(&m, buf, sizeof buf) : NULL;
        if (why != NULL) {
            /* nats-server formats the plain form's destination; for the weighted forms its
             * v.(string) panics with a conversion error instead. */
            if (x->type == ND_CFG_STRING)
                rc = nd_cfg_fail(a, at, "Error adding mapping for \"%s\" to \"%s\" : %s", e->key,
                                 x->u.str.s, why);
            else if (x->type == ND_CFG_ARRAY && x->u.arr.n > 0)
                rc = nd_cfg_type_err(a, nd_cfg_at_node(x->u.arr.v[x->u.arr.n - 1]), x,
                                     ND_CFG_STRING);
            else
                rc = nd_cfg_type_err(a, at, x, ND_CFG_STRING);
        }
        if (rc < 0) {
            mapping_clear(&m);
            return -1;
        }
        acc->mappings = nd_xrealloc(acc->mappings, (acc->nmappings + 1) * sizeof(*acc->mappings));
        acc->mappings[acc->nmappings++] = m;
    }
    return 0;
}

/* ---- exports ------------------------------------------------------------------------------ */

/* parseServiceLatency: a results subject, or {sampling, subject}. */
static int
latency(nd_cfg_apply_t *a, const nd_cfg_entry_t *le, nd_export_t *x)
{
    const nd_cfg_node_t *v = le->val;
    nd_cfg_at_t at = nd_cfg_at_entry(le);
    if (v->type == ND_CFG_STRING) {
        nd_set_str(&x->latency_subject, v->u.str.s);
        x->latency_sampling = 100;
        return 0;
    }
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, at, "Expected latency entry to be a map/struct or string, got %s",
                           nd_cfg_go_type(v));
    int sampling = 100;
    const nd_cfg_entry_t *se = nd_cfg_map_entry(v, "sampling");
    if (se != NULL && se->val) {
        const nd_cfg_node_t *s = se->val;
        nd_cfg_at_t sat = nd_cfg_at_entry(se);
        long long n;
        bool header = false;
        if (s->type == ND_CFG_INT) {
            n = s->u.i;
        } else if (s->type == ND_CFG_STRING) {
            char t[128], *end;
            snprintf(t, sizeof t, "%s", s->u.str.s);
            char *p = t;
            while (isspace((unsigned char)*p))
                p++;
            size_t l = strlen(p);
            while (l && isspace((unsigned char)p[l - 1]))
                p[--l] = '\0';
            if (strcasecmp(p, "headers") == 0) {
                header = true;
                n = 0;
            } else {
                snprintf(t, sizeof t, "%s", s->u.str.s);
                l = strlen(t);
                if (l && t[l - 1] == '%')
                    t[l - 1] = '\0';
                errno = 0;
                n = strtoll(t, &end, 10);
                if (t[0] == '\0' || *end != '\0' || errno || isspace((unsigned char)t[0]))
                    return nd_cfg_fail(a, sat,
                                       "Failed to parse latency sample: strconv.Atoi: parsing "
                                       "\"%s\": invalid syntax",
                                       t);
            }
        } else {
            return nd_cfg_fail(a, sat,
                               "Expected latency sample to be a string or map/struct, got %s",
                               nd_cfg_go_type(s));
        }
        if (!header && (n < 1 || n > 100))
            return nd_cfg_fail(a, sat, "bad sampling percentage, should be 1-100");
        sampling = (int)n;
    }
    const nd_cfg_entry_t *sub = nd_cfg_map_entry(v, "subject");
    if (sub == NULL || sub->val == NULL)
        return nd_cfg_fail(a, at, "Latency subject required, but missing");
    if (sub->val->type != ND_CFG_STRING)
        return nd_cfg_fail(a, nd_cfg_at_entry(sub),
                           "Expected latency subject to be a string, got string");
    nd_set_str(&x->latency_subject, sub->val->u.str.s);
    x->latency_sampling = sampling;
    return 0;
}

static void
export_clear(nd_export_t *x)
{
    nd_free(x->subject);
    nd_strlist_free(&x->accounts);
    nd_free(x->latency_subject);
    memset(x, 0, sizeof(*x));
}

/* parseExportStreamOrService. Returns: 1 with *x filled, 0 for an entry with neither stream nor
 * service (nats-server ignores it), -1 on error. */
static int
export_entry(nd_cfg_apply_t *a, const nd_cfg_node_t *v, nd_export_t *x)
{
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_node(v),
                           "Export Items should be a map with type entry, got %s",
                           nd_cfg_go_type(v));
    bool stream = false, service = false, rt_seen = false, thr_seen = false;
    nd_cfg_at_t rt_at = {0}, lat_at = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        char val[256];
        if (nd_cfg_key_is(e->key, "stream")) {
            nd_cfg_go_value(m, val, sizeof val);
            if (service)
                return nd_cfg_fail(a, at, "Detected stream \"%s\" but already saw a service", val);
            if (rt_at.file)
                return nd_cfg_fail(a, rt_at, "Detected response directive on non-service");
            if (lat_at.file)
                return nd_cfg_fail(a, lat_at, "Detected latency directive on non-service");
            if (m->type != ND_CFG_STRING)
                return nd_cfg_fail(a, at, "Expected stream name to be string, got %s",
                                   nd_cfg_go_type(m));
            stream = true;
            nd_set_str(&x->subject, m->u.str.s);
        } else if (nd_cfg_key_is(e->key, "service")) {
            nd_cfg_go_value(m, val, sizeof val);
            if (stream)
                return nd_cfg_fail(a, at, "Detected service \"%s\" but already saw a stream", val);
            if (m->type != ND_CFG_STRING)
                return nd_cfg_fail(a, at, "Expected service name to be string, got %s",
                                   nd_cfg_go_type(m));
            service = true;
            nd_set_str(&x->subject, m->u.str.s);
        } else if (nd_cfg_key_is(e->key, "response response_type")) {
            if (rt_seen)
                return nd_cfg_fail(a, at, "Duplicate response type definition");
            rt_seen = true;
            rt_at = at;
            if (m->type != ND_CFG_STRING)
                return nd_cfg_fail(a, at, "Expected response type to be string, got %s",
                                   nd_cfg_go_type(m));
            const char *s = m->u.str.s;
            if (strcasecmp(s, "single") == 0 || strcasecmp(s, "singleton") == 0)
                x->resp_type = ND_RESP_SINGLETON;
            else if (strcasecmp(s, "stream") == 0)
                x->resp_type = ND_RESP_STREAM;
            else if (strcasecmp(s, "chunk") == 0 || strcasecmp(s, "chunked") == 0)
                x->resp_type = ND_RESP_CHUNKED;
            else
                return nd_cfg_fail(a, at, "Unknown response type: \"%s\"", s);
            if (stream)
                return nd_cfg_fail(a, at, "Detected response directive on non-service");
        } else if (nd_cfg_key_is(e->key,
                                 "threshold response_threshold response_max_time response_time")) {
            if (thr_seen)
                return nd_cfg_fail(a, at, "Duplicate response threshold detected");
            thr_seen = true;
            if (m->type != ND_CFG_STRING)
                return nd_cfg_fail(
                    a, at, "Expected response threshold to be a parseable time duration, got %s",
                    nd_cfg_go_type(m));
            int64_t ns;
            char why[300];
            if (nd_cfg_go_duration(m->u.str.s, &ns, why, sizeof why) < 0)
                return nd_cfg_fail(
                    a, at,
                    "Expected response threshold to be a parseable time duration, got \"%s\"",
                    m->u.str.s);
            x->resp_threshold_ms = ns / 1000000;
            if (stream)
                return nd_cfg_fail(a, at, "Detected response directive on non-service");
        } else if (nd_cfg_key_is(e->key, "accounts")) {
            if (m->type != ND_CFG_ARRAY)
                return nd_cfg_type_err(a, at, m, ND_CFG_ARRAY);
            nd_strlist_free(&x->accounts);
            for (size_t k = 0; k < m->u.arr.n; k++) {
                const nd_cfg_node_t *an = m->u.arr.v[k];
                if (an->type != ND_CFG_STRING)
                    return nd_cfg_type_err(a, nd_cfg_at_node(an), an, ND_CFG_STRING);
                nd_strlist_add(&x->accounts, an->u.str.s);
            }
        } else if (nd_cfg_key_is(e->key, "latency")) {
            lat_at = at;
            if (latency(a, e, x) < 0)
                return -1;
            if (stream)
                return nd_cfg_fail(a, at, "Detected latency directive on non-service");
        } else if (nd_cfg_key_is(e->key, "account_token_position")) {
            int64_t p;
            if (nd_cfg_i64(a, at, m, &p) < 0)
                return -1;
            x->account_token_position = (uint32_t)p;
        } else if (nd_cfg_unknown(a, e) < 0) {
            return -1;
        }
    }
    x->service = service;
    return stream || service ? 1 : 0;
}

static int
exports(nd_cfg_apply_t *a, const nd_cfg_entry_t *xe, nd_account_opts_t *acc)
{
    const nd_cfg_node_t *v = xe->val;
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, nd_cfg_at_entry(xe), "Exports should be an array, got %s",
                           nd_cfg_go_type(v));
    for (size_t i = 0; i < v->u.arr.n; i++) {
        nd_export_t x = {0};
        int rc = export_entry(a, v->u.arr.v[i], &x);
        if (rc <= 0) {
            export_clear(&x);
            if (rc < 0)
                return -1;
            continue;
        }
        acc->exports = nd_xrealloc(acc->exports, (acc->nexports + 1) * sizeof(*acc->exports));
        acc->exports[acc->nexports++] = x;
    }
    return 0;
}

/* ---- imports ------------------------------------------------------------------------------ */

static void
import_clear(nd_import_t *im)
{
    nd_free(im->account);
    nd_free(im->subject);
    nd_free(im->to);
    nd_free(im->prefix);
    memset(im, 0, sizeof(*im));
}

/* parseImportStreamOrService. Returns: 1 with *im filled, 0 for neither, -1 on error. */
static int
import_entry(nd_cfg_apply_t *a, const nd_cfg_node_t *v, nd_import_t *im)
{
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_node(v),
                           "Import Items should be a map with type entry, got %s",
                           nd_cfg_go_type(v));
    bool stream = false, service = false;
    nd_cfg_at_t to_at = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        bool is_stream = nd_cfg_key_is(e->key, "stream");
        if (is_stream || nd_cfg_key_is(e->key, "service")) {
            if (is_stream && service)
                return nd_cfg_fail(a, at, "Detected stream but already saw a service");
            if (!is_stream && stream)
                return nd_cfg_fail(a, at, "Detected service but already saw a stream");
            if (m->type != ND_CFG_MAP)
                return nd_cfg_fail(a, at, "%s entry should be an account map, got %s",
                                   is_stream ? "Stream" : "Service", nd_cfg_go_type(m));
            nd_free(im->account);
            nd_free(im->subject);
            im->account = im->subject = NULL;
            if (nd_opt_parse_map(a, &nd_opt_import_block, im, m) < 0)
                return -1;
            if (!im->account || !im->account[0] || !im->subject || !im->subject[0])
                return nd_cfg_fail(a, at, "Expect an account name and a subject");
            stream = stream || is_stream;
            service = service || !is_stream;
        } else if (nd_cfg_key_is(e->key, "prefix")) {
            if (nd_cfg_str(a, at, m, &im->prefix) < 0)
                return -1;
        } else if (nd_cfg_key_is(e->key, "to")) {
            if (nd_cfg_str(a, at, m, &im->to) < 0)
                return -1;
            to_at = at;
        } else if (nd_cfg_key_is(e->key, "share")) {
            if (nd_cfg_bool(a, at, m, &im->share) < 0)
                return -1;
        } else if (nd_cfg_unknown(a, e) < 0) {
            return -1;
        }
    }
    if (stream && im->prefix && im->prefix[0] && im->to && im->to[0])
        return nd_cfg_fail(a, to_at, "Stream import can not have a 'prefix' and a 'to' property");
    im->service = service;
    if (service) {
        nd_free(im->prefix);
        im->prefix = NULL;
        if (!im->to || !im->to[0])
            nd_set_str(&im->to, im->subject);
    }
    return stream || service ? 1 : 0;
}

static int
imports(nd_cfg_apply_t *a, const nd_cfg_entry_t *ie, nd_account_opts_t *acc)
{
    const nd_cfg_node_t *v = ie->val;
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, nd_cfg_at_entry(ie), "Imports should be an array, got %s",
                           nd_cfg_go_type(v));
    /* Service import subjects of this block, by index into acc->imports (whose strings do not
     * move when the array grows). */
    nd_cfg_strset_t tos = {0};
    int rc = 0;
    for (size_t i = 0; i < v->u.arr.n && rc == 0; i++) {
        nd_import_t im = {0};
        int got = import_entry(a, v->u.arr.v[i], &im);
        size_t j;
        if (got > 0 && im.service && nd_cfg_strset_get(&tos, im.to, &j)) {
            const nd_import_t *d = &acc->imports[j];
            nd_cfg_fail(a, nd_cfg_at_node(v->u.arr.v[i]),
                        "Duplicate service import subject \"%s\", previously used in import for "
                        "account \"%s\", subject \"%s\"",
                        im.to, d->account, d->subject);
            got = -1;
        }
        if (got <= 0) {
            import_clear(&im);
            rc = got < 0 ? -1 : 0;
            continue;
        }
        acc->imports = nd_xrealloc(acc->imports, (acc->nimports + 1) * sizeof(*acc->imports));
        acc->imports[acc->nimports++] = im;
        if (im.service)
            nd_cfg_strset_add(&tos, acc->imports[acc->nimports - 1].to, acc->nimports - 1, NULL);
    }
    nd_cfg_strset_free(&tos);
    return rc;
}

/* ---- limits and jetstream ----------------------------------------------------------------- */

static int
limits(nd_cfg_apply_t *a, const nd_cfg_entry_t *le, nd_account_opts_t *acc)
{
    const nd_cfg_node_t *v = le->val;
    if (v->type != ND_CFG_MAP) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nd_cfg_at_entry(le),
                           "Expected account limits to be a map/struct, got %s", val);
    }
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        int32_t *dst = NULL;
        if (nd_cfg_key_is(e->key, "max_connections max_conn"))
            dst = &acc->max_connections;
        else if (nd_cfg_key_is(e->key, "max_subscriptions max_subs"))
            dst = &acc->max_subscriptions;
        else if (nd_cfg_key_is(e->key, "max_payload max_pay"))
            dst = &acc->max_payload;
        else if (nd_cfg_key_is(e->key, "max_leafnodes max_leafs"))
            dst = &acc->max_leafnodes;
        else if (!e->used_as_var)
            return nd_cfg_fail(a, at, "Unknown field \"%s\" parsing account limits", e->key);
        int64_t x;
        if (dst == NULL)
            continue;
        if (nd_cfg_i64(a, at, e->val, &x) < 0)
            return -1;
        *dst = (int32_t)x; /* int32(v.(int64)), as nats-server truncates */
    }
    return 0;
}

int
nd_cfg_account_js(nd_cfg_apply_t *a, const nd_cfg_entry_t *je, nd_acct_js_t *js)
{
    const nd_cfg_node_t *v = je->val;
    /* nats-server passes the unwrapped value: its own errors have no position. */
    const nd_cfg_at_t nopos = {0};
    nd_acct_js_t l = {
        .max_memory = -1,
        .max_store = -1,
        .max_streams = -1,
        .max_consumers = -1,
        .memory_max_stream_bytes = -1,
        .store_max_stream_bytes = -1,
        .max_ack_pending = -1,
    };
    if (v->type == ND_CFG_BOOL) {
        l.enabled = v->u.b;
    } else if (v->type == ND_CFG_STRING) {
        const char *s = v->u.str.s;
        if (strcasecmp(s, "enabled") == 0 || strcasecmp(s, "enable") == 0)
            l.enabled = true;
        else if (strcasecmp(s, "disabled") == 0 || strcasecmp(s, "disable") == 0)
            l.enabled = false;
        else
            return nd_cfg_fail(a, nopos,
                               "Expected 'enabled' or 'disabled' for string value, got '%s'", s);
    } else if (v->type == ND_CFG_MAP) {
        l.enabled = true;
        for (size_t i = 0; i < v->u.map.n; i++) {
            const nd_cfg_entry_t *e = &v->u.map.e[i];
            nd_cfg_at_t eat = nd_cfg_at_entry(e);
            const nd_cfg_node_t *m = e->val;
            int64_t *dst = NULL;
            if (nd_cfg_key_is(e->key, "max_memory max_mem mem memory"))
                dst = &l.max_memory;
            else if (nd_cfg_key_is(e->key, "max_store max_file max_disk store disk"))
                dst = &l.max_store;
            else if (nd_cfg_key_is(e->key, "max_streams streams"))
                dst = &l.max_streams;
            else if (nd_cfg_key_is(e->key, "max_consumers consumers"))
                dst = &l.max_consumers;
            else if (nd_cfg_key_is(e->key, "mem_max_stream_bytes memory_max_stream_bytes"))
                dst = &l.memory_max_stream_bytes;
            else if (nd_cfg_key_is(e->key, "disk_max_stream_bytes store_max_stream_bytes"))
                dst = &l.store_max_stream_bytes;
            else if (nd_cfg_key_is(e->key, "max_ack_pending"))
                dst = &l.max_ack_pending;
            if (dst != NULL) {
                if (m->type != ND_CFG_INT) {
                    char val[256];
                    nd_cfg_go_value(m, val, sizeof val);
                    return nd_cfg_fail(a, eat, "Expected a parseable size for \"%s\", got %s",
                                       e->key, val);
                }
                *dst = m->u.i;
            } else if (nd_cfg_key_is(e->key, "max_bytes_required max_stream_bytes max_bytes")) {
                if (m->type != ND_CFG_BOOL) {
                    char val[256];
                    nd_cfg_go_value(m, val, sizeof val);
                    return nd_cfg_fail(a, eat, "Expected a parseable bool for \"%s\", got %s",
                                       e->key, val);
                }
                l.max_bytes_required = m->u.b;
            } else if (nd_cfg_unknown(a, e) < 0) {
                return -1;
            }
        }
    } else {
        return nd_cfg_fail(a, nopos, "Expected map, bool or string to define JetStream, got %s",
                           nd_cfg_go_type(v));
    }
    *js = l;
    return 0;
}

/* ---- accounts ----------------------------------------------------------------------------- */

static nd_account_opts_t *
new_account(nd_opts_t *o, const char *name)
{
    o->accounts = nd_xrealloc(o->accounts, (o->naccounts + 1) * sizeof(*o->accounts));
    nd_account_opts_t *acc = &o->accounts[o->naccounts++];
    memset(acc, 0, sizeof(*acc));
    acc->name = nd_xstrdup(name);
    acc->max_connections = acc->max_subscriptions = acc->max_payload = acc->max_leafnodes = -1;
    acc->js.max_memory = acc->js.max_store = -1;
    return acc;
}

/* Returns: the account named name (by the index set names), or NULL. */
static nd_account_opts_t *
find_account(nd_opts_t *o, const nd_cfg_strset_t *names, const char *name)
{
    size_t i;
    return nd_cfg_strset_get(names, name, &i) ? &o->accounts[i] : NULL;
}

static bool
is_reserved(const char *name)
{
    return strcmp(name, "$G") == 0;
}

/* One account's entries (the map form). */
static int
account_body(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae, nd_account_opts_t *acc)
{
    const nd_cfg_node_t *v = ae->val;
    nd_user_t *users = NULL;
    size_t nusers = 0;
    nd_cfg_at_t users_at = {0};
    int rc = 0;
    for (size_t i = 0; i < v->u.map.n && rc == 0; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        if (nd_cfg_key_is(e->key, "nkey")) {
            const nd_cfg_node_t *m = e->val;
            if (m->type != ND_CFG_STRING || !nd_cfg_valid_nkey(m->u.str.s, 'A')) {
                char val[256];
                nd_cfg_go_value(m, val, sizeof val);
                rc = nd_cfg_fail(a, at, "Not a valid public nkey for an account: \"%s\"", val);
            } else {
                nd_set_str(&acc->nkey, m->u.str.s);
            }
        } else if (nd_cfg_key_is(e->key, "imports")) {
            rc = imports(a, e, acc);
        } else if (nd_cfg_key_is(e->key, "exports")) {
            rc = exports(a, e, acc);
        } else if (nd_cfg_key_is(e->key, "jetstream")) {
            rc = nd_cfg_account_js(a, e, &acc->js);
        } else if (nd_cfg_key_is(e->key, "users")) {
            users_at = at;
            rc = nd_cfg_users(a, e, true, &users, &nusers);
        } else if (nd_cfg_key_is(e->key, "default_permissions")) {
            rc = nd_cfg_perms(a, e, false, &acc->default_perms);
            acc->has_default_perms = rc == 0;
        } else if (nd_cfg_key_is(e->key, "mappings maps")) {
            rc = nd_cfg_mappings(a, e, acc);
        } else if (nd_cfg_key_is(e->key, "limits")) {
            rc = limits(a, e, acc);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
    }
    nd_opts_t *o = a->o;
    if (rc == 0 && nusers > 0) {
        if (o->user && o->user[0])
            rc = nd_cfg_fail(a, users_at, "Can not have a single user/pass and accounts");
        else if (o->token && o->token[0])
            rc = nd_cfg_fail(a, users_at, "Can not have a token and accounts");
    }
    if (rc == 0 && acc->has_default_perms)
        nd_cfg_apply_default_perms(users, nusers, &acc->default_perms);
    if (rc == 0)
        rc = nd_cfg_check_new_users(a, users_at, users, nusers);
    for (size_t i = 0; i < nusers; i++) {
        if (rc == 0) {
            nd_set_str(&users[i].account, acc->name);
            nd_cfg_add_user(a, &users[i]);
        } else {
            nd_user_clear(&users[i]);
        }
    }
    nd_free(users);
    return rc;
}

/* Where a import/export resolution error is reported, and the text's prefix. */
typedef struct resolve {
    nd_cfg_apply_t *a;
    nd_cfg_at_t at;        /* the accounts key */
    size_t first;          /* the first account of this accounts block */
    nd_cfg_strset_t names; /* every account name -> its index in o->accounts */
} resolve_t;

/* checkAuth for an export against an importing account; tokens are the import subject's. */
static bool
export_allows(const nd_export_t *x, const char *importer, const char *subject, bool exact)
{
    if (x->accounts.n == 0 && x->account_token_position == 0)
        return true; /* public (an explicit empty list is read as public too: no activations) */
    if (x->account_token_position > 0) {
        if (exact)
            return false; /* nats-server passes no tokens for an exact match */
        char b[512], *t[64];
        size_t n = tokens(subject, b, sizeof b, t, 64);
        return x->account_token_position <= n && x->account_token_position <= 64 &&
               strcmp(t[x->account_token_position - 1], importer) == 0;
    }
    for (size_t i = 0; i < x->accounts.n; i++)
        if (strcmp(x->accounts.v[i], importer) == 0)
            return true;
    return false;
}

/* check{Stream,Service}ImportAuthorized: an exact export first, then one containing subject. */
static bool
import_authorized(const nd_account_opts_t *exporter, bool service, const char *importer,
                  const char *subject)
{
    if (!nd_cfg_valid_subject(subject))
        return false;
    for (size_t i = 0; i < exporter->nexports; i++) {
        const nd_export_t *x = &exporter->exports[i];
        if (x->service == service && strcmp(x->subject, subject) == 0)
            return export_allows(x, importer, subject, true);
    }
    for (size_t i = 0; i < exporter->nexports; i++) {
        const nd_export_t *x = &exporter->exports[i];
        if (x->service == service && subset_match(subject, x->subject))
            return export_allows(x, importer, subject, false);
    }
    return false;
}

/* An import already accepted, for the cycle checks. */
typedef struct added {
    const nd_account_opts_t *acc; /* the importing account */
    const nd_account_opts_t *from_acc;
    bool service;
    const char *from, *to; /* service: local subject, exporter's subject; stream: its, local */
    char *own;             /* stream: the local subject when built here (owned), else NULL */
} added_t;

typedef struct added_list {
    added_t *v;
    size_t n;
} added_list_t;

#define MAX_CYCLE_DEPTH 1024

static bool
visited_has(const char **vis, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(vis[i], name) == 0)
            return true;
    return false;
}

/* checkServiceImportsForCycles. Returns: NULL or the error text. */
static const char *
service_cycle(const added_list_t *l, const nd_account_opts_t *acc, const char *from,
              const char **vis, size_t *nvis)
{
    if (*nvis >= MAX_CYCLE_DEPTH)
        return "search cycle depth exhausted";
    for (size_t i = 0; i < l->n; i++) {
        const added_t *si = &l->v[i];
        if (!si->service || si->acc != acc || !subjects_collide(from, si->to))
            continue;
        if (visited_has(vis, *nvis, si->from_acc->name))
            return "import forms a cycle";
        if (!visited_has(vis, *nvis, acc->name))
            vis[(*nvis)++] = acc->name;
        const char *f = subset_match(si->from, from) ? si->from : from;
        const char *why = service_cycle(l, si->from_acc, f, vis, nvis);
        if (why)
            return why;
    }
    return NULL;
}

/* checkStreamImportsForCycles. Returns: NULL or the error text. */
static const char *
stream_cycle(const added_list_t *l, const nd_account_opts_t *acc, const char *to, const char **vis,
             size_t *nvis)
{
    if (*nvis >= MAX_CYCLE_DEPTH)
        return "search cycle depth exhausted";
    bool matching = false;
    for (size_t i = 0; i < acc->nexports && !matching; i++)
        matching = !acc->exports[i].service && subset_match(to, acc->exports[i].subject);
    if (!matching)
        return NULL;
    for (size_t i = 0; i < l->n; i++) {
        const added_t *si = &l->v[i];
        if (si->service || si->acc != acc || !subjects_collide(to, si->to))
            continue;
        if (visited_has(vis, *nvis, si->from_acc->name))
            return "import forms a cycle";
        if (!visited_has(vis, *nvis, acc->name))
            vis[(*nvis)++] = acc->name;
        const char *t = subset_match(si->to, to) ? si->to : to;
        const char *why = stream_cycle(l, si->from_acc, t, vis, nvis);
        if (why)
            return why;
    }
    return NULL;
}

/* transformUntokenize: a destination's $N tokens as `*`. Returns: an nd_xmalloc'ed copy. */
static char *
untokenize(const char *to)
{
    char *out = nd_xstrdup(to);
    char *w = out;
    for (const char *p = to; *p != '\0';) {
        const char *e = strchr(p, '.');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        if (n > 1 && p[0] == '$' && p[1] >= '1' && p[1] <= '9') {
            *w++ = '*';
        } else {
            memcpy(w, p, n);
            w += n;
        }
        p += n;
        if (*p == '.')
            *w++ = *p++;
    }
    *w = '\0';
    return out;
}

static int
resolve(resolve_t *r)
{
    nd_cfg_apply_t *a = r->a;
    nd_opts_t *o = a->o;
    /* Exports: approved accounts exist, token positions name a '*' token, latency subjects are
     * publishable and no system-account opt-out stands in the way. */
    for (int pass = 0; pass < 2; pass++) {
        bool service = pass == 1;
        for (size_t i = r->first; i < o->naccounts; i++) {
            const nd_account_opts_t *acc = &o->accounts[i];
            for (size_t k = 0; k < acc->nexports; k++) {
                const nd_export_t *x = &acc->exports[k];
                if (x->service != service)
                    continue;
                for (size_t n = 0; n < x->accounts.n; n++)
                    if (!find_account(o, &r->names, x->accounts.v[n]))
                        return nd_cfg_fail(a, r->at, "\"%s\" account not defined for %s export",
                                           x->accounts.v[n], service ? "service" : "stream");
                if (x->account_token_position > 0) {
                    char b[512], *t[64];
                    size_t n = tokens(x->subject, b, sizeof b, t, 64);
                    if (n < x->account_token_position || x->account_token_position > 64 ||
                        strcmp(t[x->account_token_position - 1], "*") != 0)
                        return nd_cfg_fail(a, r->at, "Error adding %s export \"%s\": %s",
                                           service ? "service" : "stream", x->subject,
                                           "sublist: invalid subject");
                }
                if (service && x->latency_subject) {
                    if (o->no_system_account)
                        return nd_cfg_fail(a, r->at,
                                           "Error adding service latency sampling for \"%s\": "
                                           "system account not setup",
                                           x->subject);
                    bool bad = !nd_cfg_valid_subject(x->latency_subject) ||
                               !is_literal(x->latency_subject);
                    for (size_t e = 0; e < acc->nexports && !bad; e++)
                        bad = acc->exports[e].service &&
                              strcmp(acc->exports[e].subject, x->latency_subject) == 0;
                    if (bad)
                        return nd_cfg_fail(a, r->at,
                                           "Error adding service latency sampling for \"%s\" on "
                                           "subject \"%s\": invalid publish subject",
                                           x->subject, x->latency_subject);
                }
            }
        }
    }
    /* Imports: streams first, then services, as nats-server does. */
    added_list_t added = {0};
    size_t cap = 0;
    for (size_t i = r->first; i < o->naccounts; i++)
        cap += o->accounts[i].nimports;
    added.v = cap ? nd_xcalloc(cap, sizeof(*added.v)) : NULL;
    const char **vis = nd_xcalloc(MAX_CYCLE_DEPTH + 1, sizeof(*vis));
    int rc = 0;
    char to_buf[1024];
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        bool service = pass == 1;
        for (size_t i = r->first; i < o->naccounts && rc == 0; i++) {
            const nd_account_opts_t *acc = &o->accounts[i];
            for (size_t k = 0; k < acc->nimports && rc == 0; k++) {
                const nd_import_t *im = &acc->imports[k];
                if (im->service != service)
                    continue;
                const nd_account_opts_t *ta = find_account(o, &r->names, im->account);
                const char *kind = service ? "service" : "stream";
                if (ta == NULL) {
                    rc = nd_cfg_fail(a, r->at, "\"%s\" account not defined for %s import",
                                     im->account, kind);
                    break;
                }
                const char *why = NULL, *from = im->subject, *to = im->to;
                if (!service) {
                    if (!import_authorized(ta, false, acc->name, im->subject)) {
                        why = "stream import not authorized";
                    } else if (im->prefix && im->prefix[0]) {
                        if (!is_literal(im->prefix)) {
                            why = "stream import prefix can not contain wildcard tokens";
                        } else {
                            size_t pl = strlen(im->prefix);
                            snprintf(to_buf, sizeof to_buf, "%s%s%s", im->prefix,
                                     im->prefix[pl - 1] == '.' ? "" : ".", im->subject);
                            to = to_buf;
                        }
                    }
                    if (!to || !to[0])
                        to = im->subject;
                    size_t nvis = 1;
                    vis[0] = acc->name;
                    if (!why)
                        why = stream_cycle(&added, ta, to, vis, &nvis);
                    for (size_t d = 0; d < added.n && !why; d++)
                        if (!added.v[d].service && added.v[d].acc == acc &&
                            added.v[d].from_acc == ta && strcmp(added.v[d].from, from) == 0)
                            why = "stream import already exists";
                } else {
                    /* AddServiceImport(ta, to, subject): the local subject is `to`. */
                    from = im->to;
                    to = im->subject;
                    size_t nvis = 1;
                    vis[0] = acc->name;
                    if (!nd_cfg_valid_subject(from) || !nd_cfg_valid_subject(to))
                        why = "invalid subject";
                    else if (!import_authorized(ta, true, acc->name, to))
                        why = "service import not authorized";
                    else
                        why = service_cycle(&added, ta, from, vis, &nvis);
                }
                if (why) {
                    rc = nd_cfg_fail(a, r->at, "Error adding %s import \"%s\": %s", kind,
                                     im->subject, why);
                    break;
                }
                /* A stream import's local subject as nats-server's AddMappedStreamImport keeps
                 * it for the cycle checks: the prefixed subject, or `to` with its $N tokens as
                 * wildcards. Reading a prefixed import as its bare subject would see two-way
                 * imports with prefixes as a cycle, which they are not. */
                char *own = NULL;
                if (!service && to != im->subject) {
                    bool wild = !is_literal(im->subject) && strcmp(to, im->subject) != 0;
                    own = wild ? untokenize(to) : nd_xstrdup(to);
                }
                added.v[added.n++] =
                    (added_t){.acc = acc,
                              .from_acc = ta,
                              .service = service,
                              .from = service ? im->to : im->subject,
                              .to = service ? im->subject : (own != NULL ? own : im->subject),
                              .own = own};
            }
        }
    }
    nd_free(vis);
    for (size_t i = 0; i < added.n; i++)
        nd_free(added.v[i].own);
    nd_free(added.v);
    return rc;
}

int
nd_cfg_apply_accounts(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae)
{
    nd_opts_t *o = a->o;
    const nd_cfg_node_t *v = ae->val;
    nd_cfg_at_t at = nd_cfg_at_entry(ae);
    size_t first = o->naccounts;
    if (v->type == ND_CFG_ARRAY) {
        nd_cfg_strset_t seen = {0};
        int rc = 0;
        for (size_t i = 0; i < v->u.arr.n && rc == 0; i++) {
            const nd_cfg_node_t *n = v->u.arr.v[i];
            nd_cfg_at_t nat = nd_cfg_at_node(n);
            if (n->type != ND_CFG_STRING)
                rc = nd_cfg_type_err(a, nat, n, ND_CFG_STRING);
            else if (is_reserved(n->u.str.s))
                rc = nd_cfg_fail(a, nat, "\"%s\" is a Reserved Account", n->u.str.s);
            else if (!nd_cfg_strset_add(&seen, n->u.str.s, i, NULL))
                rc = nd_cfg_fail(a, nat, "Duplicate Account Entry: %s", n->u.str.s);
            else
                new_account(o, n->u.str.s);
        }
        nd_cfg_strset_free(&seen);
        return rc;
    }
    if (v->type != ND_CFG_MAP)
        return 0; /* nats-server ignores other types here */
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t eat = nd_cfg_at_entry(e);
        if (e->used_as_var)
            continue;
        if (e->val->type != ND_CFG_MAP)
            return nd_cfg_fail(a, eat, "Expected map entries for accounts");
        if (is_reserved(e->key))
            return nd_cfg_fail(a, eat, "\"%s\" is a Reserved Account", e->key);
        nd_account_opts_t *acc = new_account(o, e->key);
        if (account_body(a, e, acc) < 0)
            return -1;
    }
    resolve_t r = {.a = a, .at = at, .first = first};
    for (size_t i = 0; i < o->naccounts; i++)
        nd_cfg_strset_add(&r.names, o->accounts[i].name, i, NULL);
    int rc = resolve(&r);
    nd_cfg_strset_free(&r.names);
    return rc;
}

int
nd_cfg_apply_mappings(nd_cfg_apply_t *a, const nd_cfg_entry_t *me)
{
    nd_account_opts_t *g = new_account(a->o, "$G");
    return nd_cfg_mappings(a, me, g);
}
