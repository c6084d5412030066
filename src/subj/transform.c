/* Subject transforms and mapping tables. See src/subj/transform.h for the functions.
 *
 * Compilation follows nats-server 2.11 (server/subject_transform.go) step by step, because the
 * errors and their order are visible to users in config errors. Versions: 2.10.16 to 2.10.x are
 * the same except that the size argument of splitFromLeft() and its kin was read with Atoi (64
 * bits) instead of ParseInt(.., 32); before 2.10.16 there was no left()/right(); 2.12 adds the
 * one-argument partition(n) over the whole subject and random(n), both left out here.
 *  1. (mapping mode) ValidateMapping: each destination token must be non-empty and nothing may
 *     follow `>` ("invalid transform in <tok>"); a token shaped `{{...}}` must be found by one
 *     of the function regular expressions (left/right are not among them) or it is "unknown
 *     function in <tok>"; other tokens may hold no whitespace.
 *  2. NewSubjectTransform: source and destination must be subjects (non-empty tokens, `>` last;
 *     whitespace is not checked here), the destination has no `*` and has `>` exactly when the
 *     source does, else ErrBadSubject. Each destination token is then parsed
 *     (indexPlaceHolders): `$<Atoi>` is a wildcard reference (`$foo` stays literal); a token
 *     starting `{{` and ending `}}` (length > 4) is tried against the function expressions in
 *     the order wildcard, partition, splitFromLeft, splitFromRight, sliceFromLeft,
 *     sliceFromRight, right, left, split. Parse errors come first, then (strict) only
 *     wildcard references are allowed, then with a source without `*` every function is "out
 *     of range", then every referenced index must be <= the number of `*` tokens. Index <= 0
 *     is not refused: Go reads a missing map key as 0, so it names source token 0. Strict mode
 *     also wants every `*` referenced.
 * The regular expressions are emulated by hand (find_fn): they are not anchored, `\s` is
 * [\t\n\f\r ], `.*` is greedy and stops at '\n'; arguments are split on `,\s*`, trimmed of
 * spaces and read with Go's Atoi (optional sign, decimal, 64-bit) or ParseInt(.., 32).
 * partition(n, ...) keeps Go's int32 conversion of n and then uint32 modulus; n = 0 gives "0"
 * (2.11 panics there, 2.12 answers "0").
 *
 * Deliberate differences: more than 63 partition() indexes is "too many arguments" (nats-server
 * takes any number); nd_xf_table_add refuses an empty destination (nats-server accepts it and
 * crashes on the first publish); a missing source token (only in nd_xf_apply without a match)
 * yields nothing instead of a panic.
 *
 * Application (TransformTokenizedSubject) walks the destination tokens once, writing into a
 * caller buffer; the subject is cut into (offset, length) tokens first. Weighted mappings keep
 * nats-server's layout: destinations sorted by weight (stable), weights made cumulative, and a
 * draw w = rnd % 100 takes the first destination with w < cumulative weight.
 *
 * Measured (quick loop, -O2, one core of the shared build machine, noisy): nd_xf_apply 30-50 ns
 * for "$2.$1"-style and "prefix.>" destinations, ~90 ns with a partition() over two tokens, 7 ns
 * for a literal source; nd_xf_table_map over 111 mappings (100 literal, 10 wildcard) 17 ns for
 * a literal hit added before the wildcards, ~100 ns for a miss (every wildcard source tried,
 * ~8 ns each) and 75-170 ns for wildcard hits. Reproduce with a loop over nd_xf_table_map.
 */
#include "subj/transform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "subj/subject.h"

/* ---- errors ------------------------------------------------------------------------------ */

#define MDEST "invalid mapping destination"

static const char *const err_text[] = {
    [ND_XF_OK] = "success",
    [ND_XF_ERR_BAD_SUBJECT] = "invalid subject",
    [ND_XF_ERR_DEST_INVALID] = MDEST ": invalid transform",
    [ND_XF_ERR_NOT_ALL_WC] = MDEST ": not using all of the token wildcard(s)",
    [ND_XF_ERR_UNKNOWN_FN] = MDEST ": unknown function",
    [ND_XF_ERR_INDEX_RANGE] = MDEST ": wildcard index out of range",
    [ND_XF_ERR_NOT_ENOUGH_ARGS] = MDEST ": not enough arguments passed to the function",
    [ND_XF_ERR_INVALID_ARG] = MDEST ": function argument is invalid or in the wrong format",
    [ND_XF_ERR_TOO_MANY_ARGS] = MDEST ": too many arguments passed to the function",
    [ND_XF_ERR_IMPORT_FN] =
        MDEST ": the only mapping function allowed for import transforms is {{Wildcard()}}",
    [ND_XF_ERR_DUPLICATE] = "duplicate entry",
    [ND_XF_ERR_WEIGHT] = "individual weights need to be <= 100",
    [ND_XF_ERR_TOTAL_WEIGHT] = "total weight needs to be <= 100",
};

const char *
nd_xf_strerror(nd_xf_err_t err)
{
    if ((size_t)err < sizeof err_text / sizeof err_text[0] && err_text[err])
        return err_text[err];
    return "unknown transform error";
}

/* mappingDestinationErr: "<base> in <token>" (tok may be NULL: the base text alone). */
static nd_xf_err_t
fail(char *err, size_t errlen, nd_xf_err_t code, const char *tok, size_t toklen)
{
    if (err && errlen) {
        if (tok)
            snprintf(err, errlen, "%s in %.*s", nd_xf_strerror(code), (int)toklen, tok);
        else
            snprintf(err, errlen, "%s", nd_xf_strerror(code));
    }
    return code;
}

/* ---- Go number parsing --------------------------------------------------------------------- */

/* strconv.Atoi (bits 64) / ParseInt(s, 10, 32) (bits 32): optional sign, then decimal digits
 * only, in range. */
static bool
go_atoi(const char *s, size_t n, int bits, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return false;
    uint64_t lim = bits == 32 ? (uint64_t)1 << 31 : (uint64_t)1 << 63; /* |min| */
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (!neg && v > lim - 1)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* ---- the function regular expressions ------------------------------------------------------ */

enum {
    FN_NONE = 0, /* a literal token (or the final `>`) */
    FN_WILDCARD,
    FN_PARTITION,
    FN_SPLIT_LEFT,
    FN_SPLIT_RIGHT,
    FN_SLICE_LEFT,
    FN_SLICE_RIGHT,
    FN_RIGHT,
    FN_LEFT,
    FN_SPLIT,
};

/* The names as nats-server's expressions spell them: an upper-case letter stands for [xX]. In
 * indexPlaceHolders' order. */
static const struct {
    const char *name;
    int fn;
} fn_names[] = {
    {"Wildcard", FN_WILDCARD},
    {"Partition", FN_PARTITION},
    {"SplitFromLeft", FN_SPLIT_LEFT},
    {"SplitFromRight", FN_SPLIT_RIGHT},
    {"SliceFromLeft", FN_SLICE_LEFT},
    {"SliceFromRight", FN_SLICE_RIGHT},
    {"Right", FN_RIGHT},
    {"Left", FN_LEFT},
    {"Split", FN_SPLIT},
};
#define N_FN (sizeof fn_names / sizeof fn_names[0])

static inline bool
re_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* FindStringSubmatch of `{{\s*<name>\s*\((.*)\)\s*}}` in t: the leftmost match, with the
 * greedy group's bounds in [*a, *b). */
static bool
find_fn(const char *t, size_t n, const char *name, size_t *a, size_t *b)
{
    size_t nl = strlen(name);
    for (size_t st = 0; st + 1 < n; st++) {
        if (t[st] != '{' || t[st + 1] != '{')
            continue;
        size_t q = st + 2;
        while (q < n && re_space(t[q]))
            q++;
        if (n - q < nl)
            continue;
        bool ok = true;
        for (size_t k = 0; k < nl && ok; k++) {
            char p = name[k], c = t[q + k];
            ok = c == p || (p >= 'A' && p <= 'Z' && c == p - 'A' + 'a');
        }
        if (!ok)
            continue;
        q += nl;
        while (q < n && re_space(t[q]))
            q++;
        if (q >= n || t[q] != '(')
            continue;
        q++;
        /* The group cannot cross a newline; take the last ')' before it that is followed by
         * optional space and "}}". */
        const char *nlp = memchr(t + q, '\n', n - q);
        size_t lim = nlp ? (size_t)(nlp - t) : n;
        for (size_t e = lim; e-- > q;) {
            if (t[e] != ')')
                continue;
            size_t r = e + 1;
            while (r < n && re_space(t[r]))
                r++;
            if (r + 1 < n && t[r] == '}' && t[r + 1] == '}') {
                *a = q;
                *b = e;
                return true;
            }
        }
    }
    return false;
}

#define MAX_ARGS 64

typedef struct {
    const char *p;
    size_t n;
} span_t;

/* commaSeparatorRegEx.Split(s, -1): pieces between matches of `,\s*`. Returns: the count (at
 * most MAX_ARGS are kept; more are counted). */
static size_t
split_args(const char *s, size_t n, span_t *out)
{
    size_t cnt = 0, beg = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ',')
            continue;
        if (cnt < MAX_ARGS)
            out[cnt] = (span_t){s + beg, i - beg};
        cnt++;
        size_t j = i + 1;
        while (j < n && re_space(s[j]))
            j++;
        beg = j;
        i = j - 1;
    }
    if (cnt < MAX_ARGS)
        out[cnt] = (span_t){s + beg, n - beg};
    return cnt + 1;
}

/* strings.Trim(s, " ") then Atoi / ParseInt(.., 32). */
static bool
arg_int(span_t a, int bits, int64_t *v)
{
    while (a.n && a.p[0] == ' ') {
        a.p++;
        a.n--;
    }
    while (a.n && a.p[a.n - 1] == ' ')
        a.n--;
    return go_atoi(a.p, a.n, bits, v);
}

/* ---- compiled form ------------------------------------------------------------------------- */

typedef struct {
    int fn;
    const char *lit; /* FN_NONE: the token; FN_SPLIT: the delimiter */
    size_t litlen;
    int32_t iarg; /* partition count, position, size */
    size_t nidx;  /* source token positions */
    size_t *idx;
    size_t idx1[1]; /* inline storage for the usual single index */
} dtok_t;

struct nd_xf {
    char *src, *dest;
    size_t nstoks; /* source tokens */
    size_t ndt;    /* destination tokens; 0 when the source has no wildcard */
    dtok_t *dt;
    bool dest_fwc; /* the destination's last token is `>` */
    bool identity; /* source and destination both `>`: Match returns the subject */
    bool src_fwc;
    size_t npwc;
};

/* One parsed destination token (indexPlaceHolders' results). */
typedef struct {
    int fn;
    size_t nidx;
    int64_t idx[MAX_ARGS];
    int32_t iarg;
    span_t sarg;
} ph_t;

/* The helper for fn(index, int) functions. */
static nd_xf_err_t
ph_index_int(const char *tok, size_t tl, span_t *args, size_t na, int fn, ph_t *ph, char *err,
             size_t errlen)
{
    if (na < 2)
        return fail(err, errlen, ND_XF_ERR_NOT_ENOUGH_ARGS, tok, tl);
    if (na > 2)
        return fail(err, errlen, ND_XF_ERR_TOO_MANY_ARGS, tok, tl);
    int64_t i, v;
    if (!arg_int(args[0], 64, &i) || !arg_int(args[1], 32, &v))
        return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
    ph->fn = fn;
    ph->nidx = 1;
    ph->idx[0] = i;
    ph->iarg = (int32_t)v;
    return ND_XF_OK;
}

/* indexPlaceHolders. */
static nd_xf_err_t
parse_ph(const char *tok, size_t tl, ph_t *ph, char *err, size_t errlen)
{
    memset(ph, 0, sizeof(*ph));
    ph->fn = FN_NONE;
    if (tl <= 1)
        return ND_XF_OK;
    if (tok[0] == '$') {
        /* Other things rely on tokens starting with '$', so a non-number stays literal. */
        int64_t i;
        if (go_atoi(tok + 1, tl - 1, 64, &i)) {
            ph->fn = FN_WILDCARD;
            ph->nidx = 1;
            ph->idx[0] = i;
        }
        return ND_XF_OK;
    }
    if (!(tl > 4 && tok[0] == '{' && tok[1] == '{' && tok[tl - 2] == '}' && tok[tl - 1] == '}'))
        return ND_XF_OK;
    for (size_t f = 0; f < N_FN; f++) {
        size_t a, b;
        if (!find_fn(tok, tl, fn_names[f].name, &a, &b))
            continue;
        span_t args[MAX_ARGS];
        size_t na = split_args(tok + a, b - a, args);
        int fn = fn_names[f].fn;
        switch (fn) {
        case FN_WILDCARD: {
            if (na == 1 && args[0].n == 0)
                return fail(err, errlen, ND_XF_ERR_NOT_ENOUGH_ARGS, tok, tl);
            if (na != 1)
                return fail(err, errlen, ND_XF_ERR_TOO_MANY_ARGS, tok, tl);
            int64_t i;
            if (!arg_int(args[0], 64, &i))
                return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
            ph->fn = FN_WILDCARD;
            ph->nidx = 1;
            ph->idx[0] = i;
            return ND_XF_OK;
        }
        case FN_PARTITION: {
            if (na < 2)
                return fail(err, errlen, ND_XF_ERR_NOT_ENOUGH_ARGS, tok, tl);
            int64_t n;
            if (!arg_int(args[0], 64, &n))
                return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
            if (na - 1 > MAX_ARGS - 1)
                return fail(err, errlen, ND_XF_ERR_TOO_MANY_ARGS, tok, tl); /* ours, not Go's */
            for (size_t k = 1; k < na; k++)
                if (!arg_int(args[k], 64, &ph->idx[k - 1]))
                    return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
            ph->fn = FN_PARTITION;
            ph->nidx = na - 1;
            ph->iarg = (int32_t)(uint32_t)(uint64_t)n; /* Go's int32(int) conversion */
            return ND_XF_OK;
        }
        case FN_SPLIT: {
            if (na < 2)
                return fail(err, errlen, ND_XF_ERR_NOT_ENOUGH_ARGS, tok, tl);
            if (na > 2)
                return fail(err, errlen, ND_XF_ERR_TOO_MANY_ARGS, tok, tl);
            int64_t i;
            if (!arg_int(args[0], 64, &i))
                return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
            if (memchr(args[1].p, ' ', args[1].n) || memchr(args[1].p, '.', args[1].n))
                return fail(err, errlen, ND_XF_ERR_INVALID_ARG, tok, tl);
            ph->fn = FN_SPLIT;
            ph->nidx = 1;
            ph->idx[0] = i;
            ph->sarg = args[1];
            return ND_XF_OK;
        }
        default:
            return ph_index_int(tok, tl, args, na, fn, ph, err, errlen);
        }
    }
    return fail(err, errlen, ND_XF_ERR_UNKNOWN_FN, tok, tl);
}

/* Cuts s into '.'-separated spans; returns the count (all of them; at most max stored). */
static size_t
tokenize(const char *s, size_t n, span_t *out, size_t max)
{
    size_t cnt = 0, beg = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (cnt < max)
                out[cnt] = (span_t){s + beg, i - beg};
            cnt++;
            beg = i + 1;
        }
    }
    return cnt;
}

static inline bool
is_wc(span_t t, char c)
{
    return t.n == 1 && t.p[0] == c;
}

/* subjectInfo: valid (non-empty tokens, nothing after `>`), number of `*`, has `>`. */
static bool
subject_info(const span_t *t, size_t n, size_t *npwc, bool *fwc)
{
    *npwc = 0;
    *fwc = false;
    for (size_t i = 0; i < n; i++) {
        if (t[i].n == 0 || *fwc)
            return false;
        if (is_wc(t[i], '>'))
            *fwc = true;
        else if (is_wc(t[i], '*'))
            (*npwc)++;
    }
    return true;
}

/* ValidateMapping's token loop (before it calls NewSubjectTransform). */
static nd_xf_err_t
validate_mapping(const span_t *t, size_t n, char *err, size_t errlen)
{
    bool fwc = false;
    for (size_t i = 0; i < n; i++) {
        const char *p = t[i].p;
        size_t l = t[i].n;
        if (l == 0 || fwc)
            return fail(err, errlen, ND_XF_ERR_DEST_INVALID, p, l);
        if (l > 4 && p[0] == '{' && p[1] == '{' && p[l - 2] == '}' && p[l - 1] == '}') {
            static const char *const known[] = {"Partition",      "Wildcard",      "SplitFromLeft",
                                                "SplitFromRight", "SliceFromLeft", "SliceFromRight",
                                                "Split"};
            bool found = false;
            for (size_t k = 0; k < sizeof known / sizeof known[0] && !found; k++) {
                size_t a, b;
                found = find_fn(p, l, known[k], &a, &b);
            }
            if (!found)
                return fail(err, errlen, ND_XF_ERR_UNKNOWN_FN, p, l);
            continue;
        }
        if (l == 1 && p[0] == '>')
            fwc = true;
        else
            for (size_t k = 0; k < l; k++)
                if (re_space(p[k]))
                    return fail(err, errlen, ND_XF_ERR_DEST_INVALID, NULL, 0);
    }
    return ND_XF_OK;
}

void
nd_xf_free(nd_xf_t *xf)
{
    if (!xf)
        return;
    for (size_t i = 0; i < xf->ndt; i++)
        if (xf->dt[i].idx != xf->dt[i].idx1)
            nd_free(xf->dt[i].idx);
    nd_free(xf->dt);
    nd_free(xf->src);
    nd_free(xf->dest);
    nd_free(xf);
}

nd_xf_err_t
nd_xf_new(const char *src, const char *dest, nd_xf_mode_t mode, nd_xf_t **out, char *err,
          size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!src)
        src = "";
    if (!dest || !*dest)
        return ND_XF_OK; /* nats-server: no transform */
    size_t dl = strlen(dest);
    size_t ndt = tokenize(dest, dl, NULL, 0);
    span_t *dts = nd_xmalloc(ndt * sizeof(*dts));
    tokenize(dest, dl, dts, ndt);
    nd_xf_err_t rc = ND_XF_OK;
    nd_xf_t *xf = NULL;
    span_t *sts = NULL;

    if (mode == ND_XF_MODE_MAPPING && (rc = validate_mapping(dts, ndt, err, errlen)) != ND_XF_OK)
        goto out;
    if (!*src)
        src = ">";
    size_t sl = strlen(src);
    size_t nst = tokenize(src, sl, NULL, 0);
    sts = nd_xmalloc(nst * sizeof(*sts));
    tokenize(src, sl, sts, nst);
    size_t npwc, dnpwc;
    bool sfwc, dfwc;
    bool sv = subject_info(sts, nst, &npwc, &sfwc), dv = subject_info(dts, ndt, &dnpwc, &dfwc);
    if (!sv || !dv || dnpwc > 0 || sfwc != dfwc) {
        rc = fail(err, errlen, ND_XF_ERR_BAD_SUBJECT, NULL, 0);
        goto out;
    }

    xf = nd_new(nd_xf_t);
    xf->src = nd_xstrdup(src);
    xf->dest = nd_xstrdup(dest);
    xf->nstoks = nst;
    xf->npwc = npwc;
    xf->src_fwc = sfwc;
    xf->dest_fwc = is_wc(dts[ndt - 1], '>');
    xf->identity = strcmp(src, ">") == 0 && strcmp(dest, ">") == 0;

    ph_t ph;
    if (npwc == 0 && !sfwc) {
        /* A literal source: the result is always dest, and no function may appear. */
        for (size_t i = 0; i < ndt; i++) {
            if ((rc = parse_ph(dts[i].p, dts[i].n, &ph, err, errlen)) != ND_XF_OK)
                goto out;
            if (ph.fn != FN_NONE) {
                rc = fail(err, errlen, ND_XF_ERR_INDEX_RANGE, dts[i].p, dts[i].n);
                goto out;
            }
        }
        goto out;
    }

    /* sti: the position in the source of the k-th `*` (1-based); other k read as 0. */
    size_t *sti = nd_xcalloc(npwc + 1, sizeof(*sti));
    for (size_t i = 0, k = 0; i < nst; i++)
        if (is_wc(sts[i], '*'))
            sti[++k] = i;
    xf->dt = nd_xcalloc(ndt, sizeof(*xf->dt));
    xf->ndt = ndt;
    size_t nphs = 0;
    for (size_t i = 0; i < ndt && rc == ND_XF_OK; i++) {
        dtok_t *d = &xf->dt[i];
        d->idx = d->idx1;
        if ((rc = parse_ph(dts[i].p, dts[i].n, &ph, err, errlen)) != ND_XF_OK)
            break;
        if (mode == ND_XF_MODE_STRICT && ph.fn != FN_NONE && ph.fn != FN_WILDCARD) {
            rc = fail(err, errlen, ND_XF_ERR_IMPORT_FN, dts[i].p, dts[i].n);
            break;
        }
        if (npwc == 0 && ph.fn != FN_NONE) {
            rc = fail(err, errlen, ND_XF_ERR_INDEX_RANGE, dts[i].p, dts[i].n);
            break;
        }
        d->fn = ph.fn;
        /* Pointers into xf->dest, which outlives the spans into the caller's string. */
        size_t off = (size_t)(dts[i].p - dest);
        d->lit = xf->dest + off;
        d->litlen = dts[i].n;
        if (ph.fn == FN_NONE)
            continue;
        if (ph.fn == FN_SPLIT) {
            d->lit = xf->dest + (size_t)(ph.sarg.p - dest);
            d->litlen = ph.sarg.n;
        }
        d->iarg = ph.iarg;
        nphs += ph.nidx;
        if (ph.nidx > 1)
            d->idx = nd_xcalloc(ph.nidx, sizeof(*d->idx));
        d->nidx = ph.nidx;
        for (size_t k = 0; k < ph.nidx; k++) {
            if (ph.idx[k] > (int64_t)npwc) {
                if (err && errlen)
                    snprintf(err, errlen, "%s in %.*s: [%lld]",
                             nd_xf_strerror(ND_XF_ERR_INDEX_RANGE), (int)dts[i].n, dts[i].p,
                             (long long)ph.idx[k]);
                rc = ND_XF_ERR_INDEX_RANGE;
                break;
            }
            d->idx[k] = ph.idx[k] >= 1 ? sti[ph.idx[k]] : 0;
        }
    }
    nd_free(sti);
    if (rc == ND_XF_OK && mode == ND_XF_MODE_STRICT && nphs < npwc)
        rc = fail(err, errlen, ND_XF_ERR_NOT_ALL_WC, dest, dl);

out:
    nd_free(dts);
    nd_free(sts);
    if (rc != ND_XF_OK) {
        nd_xf_free(xf);
        return rc;
    }
    *out = xf;
    return ND_XF_OK;
}

const char *
nd_xf_src(const nd_xf_t *xf)
{
    return xf->src;
}

const char *
nd_xf_dest(const nd_xf_t *xf)
{
    return xf->dest;
}

bool
nd_xf_is_constant(const nd_xf_t *xf)
{
    return xf->ndt == 0;
}

/* ---- application --------------------------------------------------------------------------- */

uint32_t
nd_xf_fnv1a32(const void *p, size_t n)
{
    uint32_t h = 2166136261u;
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 16777619u;
    }
    return h;
}

typedef struct {
    char *p;
    size_t cap, n;
} wr_t;

static inline void
put(wr_t *w, const char *s, size_t n)
{
    if (w->n < w->cap) {
        size_t k = w->cap - w->n < n ? w->cap - w->n : n;
        memcpy(w->p + w->n, s, k);
    }
    w->n += n;
}

static inline void
put_sep(wr_t *w)
{
    put(w, ".", 1);
}

/* Length of the UTF-8 sequence at p as Go's utf8.DecodeRuneInString reads it (1 when invalid),
 * for strings.Split with an empty separator. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 1;
    if (n < need || p[1] < lo || p[1] > hi)
        return 1;
    for (size_t i = 2; i < need; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 1;
    return need;
}

/* Iterates strings.Split(s, sep)'s pieces. */
typedef struct {
    const char *s, *end, *sep;
    size_t seplen;
    bool done;
} splitter_t;

static bool
split_next(splitter_t *it, span_t *piece)
{
    if (it->done)
        return false;
    if (it->seplen == 0) {
        if (it->s >= it->end) {
            it->done = true;
            return false;
        }
        size_t l = utf8_len((const unsigned char *)it->s, (size_t)(it->end - it->s));
        *piece = (span_t){it->s, l};
        it->s += l;
        return true;
    }
    const char *f = memmem(it->s, (size_t)(it->end - it->s), it->sep, it->seplen);
    if (!f) {
        *piece = (span_t){it->s, (size_t)(it->end - it->s)};
        it->done = true;
        return true;
    }
    *piece = (span_t){it->s, (size_t)(f - it->s)};
    it->s = f + it->seplen;
    return true;
}

static void
apply_fn(wr_t *w, const dtok_t *d, const span_t *tk, size_t ntk)
{
    if (d->fn == FN_PARTITION) {
        uint32_t h = 2166136261u;
        for (size_t k = 0; k < d->nidx; k++) {
            if (d->idx[k] >= ntk)
                continue;
            const unsigned char *b = (const unsigned char *)tk[d->idx[k]].p;
            for (size_t i = 0; i < tk[d->idx[k]].n; i++) {
                h ^= b[i];
                h *= 16777619u;
            }
        }
        uint32_t nb = (uint32_t)d->iarg, v = nb ? h % nb : 0u;
        char num[16], *e = num + sizeof num, *q = e;
        do { /* by hand: snprintf doubled the cost of a partition */
            *--q = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        put(w, q, (size_t)(e - q));
        return;
    }
    if (d->idx[0] >= ntk)
        return; /* only without a match: nats-server would panic (or write nothing) */
    span_t t = tk[d->idx[0]];
    int64_t len = (int64_t)t.n, k = d->iarg;
    switch (d->fn) {
    case FN_WILDCARD:
        put(w, t.p, t.n);
        break;
    case FN_SPLIT_LEFT:
    case FN_SPLIT_RIGHT:
        if (k > 0 && k < len) {
            size_t at = (size_t)(d->fn == FN_SPLIT_LEFT ? k : len - k);
            put(w, t.p, at);
            put_sep(w);
            put(w, t.p + at, t.n - at);
        } else {
            put(w, t.p, t.n);
        }
        break;
    case FN_SLICE_LEFT:
        if (k > 0 && k < len) {
            for (int64_t i = 0; i + k <= len; i += k) {
                if (i != 0)
                    put_sep(w);
                put(w, t.p + i, (size_t)k);
                if (i + k != len && i + k + k > len) {
                    put_sep(w);
                    put(w, t.p + i + k, (size_t)(len - i - k));
                    break;
                }
            }
        } else {
            put(w, t.p, t.n);
        }
        break;
    case FN_SLICE_RIGHT:
        if (k > 0 && k < len) {
            int64_t rem = len % k;
            if (rem > 0) {
                put(w, t.p, (size_t)rem);
                put_sep(w);
            }
            for (int64_t i = rem; i + k <= len; i += k) {
                put(w, t.p + i, (size_t)k);
                if (i + k < len)
                    put_sep(w);
            }
        } else {
            put(w, t.p, t.n);
        }
        break;
    case FN_LEFT:
        put(w, t.p, k > 0 && k < len ? (size_t)k : t.n);
        break;
    case FN_RIGHT:
        if (k > 0 && k < len)
            put(w, t.p + (len - k), (size_t)k);
        else
            put(w, t.p, t.n);
        break;
    case FN_SPLIT: {
        /* Empty pieces are dropped; a separator goes before each non-empty piece but the
         * first one when that follows an empty first piece (nats-server's exact loop, which
         * can still start with a '.' after two leading delimiters). */
        splitter_t it = {t.p, t.p + t.n, d->lit, d->litlen, false};
        span_t cur, nxt;
        bool have = split_next(&it, &cur);
        for (size_t j = 0; have; j++) {
            bool more = split_next(&it, &nxt);
            if (cur.n)
                put(w, cur.p, cur.n);
            if (more && nxt.n && !(j == 0 && cur.n == 0))
                put_sep(w);
            cur = nxt;
            have = more;
        }
        break;
    }
    default:
        break;
    }
}

#define INLINE_TOKS 32

static size_t
apply_tokens(const nd_xf_t *xf, const span_t *tk, size_t ntk, wr_t *w)
{
    if (xf->ndt == 0) {
        put(w, xf->dest, strlen(xf->dest));
        return w->n;
    }
    size_t li = xf->ndt - 1;
    for (size_t i = 0; i < xf->ndt; i++) {
        const dtok_t *d = &xf->dt[i];
        if (d->fn == FN_NONE) {
            if (d->litlen == 1 && d->lit[0] == '>')
                break;
            put(w, d->lit, d->litlen);
        } else {
            apply_fn(w, d, tk, ntk);
        }
        if (i < li)
            put_sep(w);
    }
    if (xf->dest_fwc)
        for (size_t i = xf->nstoks - 1; i < ntk; i++) {
            put(w, tk[i].p, tk[i].n);
            if (i + 1 < ntk)
                put_sep(w);
        }
    return w->n;
}

static size_t
finish(wr_t *w)
{
    if (w->cap)
        w->p[w->n < w->cap ? w->n : w->cap - 1] = '\0';
    return w->n;
}

size_t
nd_xf_apply(const nd_xf_t *xf, const char *subj, size_t len, char *out, size_t cap)
{
    wr_t w = {out, cap, 0};
    if (xf->ndt == 0) {
        put(&w, xf->dest, strlen(xf->dest));
        return finish(&w);
    }
    span_t inl[INLINE_TOKS], *tk = inl;
    size_t ntk = tokenize(subj, len, inl, INLINE_TOKS);
    if (ntk > INLINE_TOKS) {
        tk = nd_xmalloc(ntk * sizeof(*tk));
        tokenize(subj, len, tk, ntk);
    }
    apply_tokens(xf, tk, ntk, &w);
    if (tk != inl)
        nd_free(tk);
    return finish(&w);
}

/* isValidLiteralSubject: no empty token and no token that is exactly `*` or `>` (whitespace is
 * not checked here). */
static bool
valid_literal(const char *s, size_t len)
{
    size_t beg = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        size_t n = i - beg;
        if (n == 0 || (n == 1 && (s[beg] == '*' || s[beg] == '>')))
            return false;
        beg = i + 1;
    }
    return true;
}

nd_xf_match_t
nd_xf_match(const nd_xf_t *xf, const char *subj, size_t len, char *out, size_t cap, size_t *outlen)
{
    wr_t w = {out, cap, 0};
    if (xf->identity) {
        put(&w, subj, len);
        *outlen = finish(&w);
        return ND_XF_MATCHED;
    }
    if (!valid_literal(subj, len)) {
        *outlen = 0;
        return ND_XF_BAD;
    }
    if (strcmp(xf->src, ">") != 0 && !nd_subj_match(xf->src, strlen(xf->src), subj, len)) {
        *outlen = 0;
        return ND_XF_NO_MATCH;
    }
    *outlen = nd_xf_apply(xf, subj, len, out, cap);
    return ND_XF_MATCHED;
}

/* ---- reverse (imports) ----------------------------------------------------------------------- */

/* A growable string for the cold paths. */
typedef struct {
    char *p;
    size_t n, cap;
} sb_t;

static void
sb_put(sb_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = nd_grow_cap(b->cap, b->n + n + 1, 64);
        b->p = nd_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

nd_xf_t *
nd_xf_reverse(const nd_xf_t *xf)
{
    nd_xf_t *r = NULL;
    char e[8];
    if (xf->ndt == 0) {
        if (nd_xf_new(xf->dest, xf->src, ND_XF_MODE_STRICT, &r, e, sizeof e) != ND_XF_OK)
            return NULL;
        return r;
    }
    /* transformUntokenize: wildcard references in the destination become `*` of the new
     * source, in order; the new destination puts them where the old source had its `*`s. */
    size_t dl = strlen(xf->dest), sl = strlen(xf->src);
    size_t ndt = tokenize(xf->dest, dl, NULL, 0), nst = tokenize(xf->src, sl, NULL, 0);
    span_t *dts = nd_xmalloc(ndt * sizeof(*dts)), *sts = nd_xmalloc(nst * sizeof(*sts));
    span_t *phs = nd_xmalloc(ndt * sizeof(*phs));
    tokenize(xf->dest, dl, dts, ndt);
    tokenize(xf->src, sl, sts, nst);
    sb_t nsrc = {0}, ndest = {0};
    size_t nph = 0, used = 0;
    for (size_t i = 0; i < ndt; i++) {
        span_t t = dts[i];
        bool ph = t.n > 1 && t.p[0] == '$' && t.p[1] >= '1' && t.p[1] <= '9';
        size_t a, b;
        if (!ph && find_fn(t.p, t.n, "Wildcard", &a, &b)) {
            span_t args[MAX_ARGS];
            ph = split_args(t.p + a, b - a, args) == 1 && args[0].n > 0;
        }
        if (i)
            sb_put(&nsrc, ".", 1);
        if (ph) {
            phs[nph++] = t;
            sb_put(&nsrc, "*", 1);
        } else {
            sb_put(&nsrc, t.p, t.n);
        }
    }
    bool ok = true;
    for (size_t i = 0; i < nst && ok; i++) {
        if (i)
            sb_put(&ndest, ".", 1);
        if (is_wc(sts[i], '*')) {
            if (used == nph)
                ok = false;
            else
                sb_put(&ndest, phs[used].p, phs[used].n), used++;
        } else {
            sb_put(&ndest, sts[i].p, sts[i].n);
        }
    }
    if (ok && nd_xf_new(nsrc.p, ndest.p, ND_XF_MODE_STRICT, &r, e, sizeof e) != ND_XF_OK)
        r = NULL;
    nd_free(nsrc.p);
    nd_free(ndest.p);
    nd_free(dts);
    nd_free(sts);
    nd_free(phs);
    return r;
}

/* ---- mapping tables -------------------------------------------------------------------------- */

typedef struct {
    nd_xf_t *xf;
    unsigned cum; /* cumulative weight, 1..100 */
} wdest_t;

typedef struct {
    char *cluster; /* NULL for the main list */
    wdest_t *d;
    size_t n;
} dlist_t;

typedef struct {
    char *src;
    size_t srclen;
    bool wc;
    dlist_t main;
    dlist_t *cl; /* cluster-scoped lists */
    size_t ncl;
} entry_t;

struct nd_xf_table {
    entry_t *e;
    size_t n, cap;
    /* Literal sources: open addressing on XXH3 of the source, slot = entry index + 1. */
    uint32_t *slot;
    size_t nslot; /* power of two, > 2 * literals */
    /* Wildcard sources' entry indexes, ascending. */
    size_t *wc;
    size_t nwc;
};

static void
dlist_free(dlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nd_xf_free(l->d[i].xf);
    nd_free(l->d);
    nd_free(l->cluster);
}

static void
entry_free(entry_t *e)
{
    nd_free(e->src);
    dlist_free(&e->main);
    for (size_t i = 0; i < e->ncl; i++)
        dlist_free(&e->cl[i]);
    nd_free(e->cl);
}

nd_xf_table_t *
nd_xf_table_new(void)
{
    return nd_new(nd_xf_table_t);
}

void
nd_xf_table_free(nd_xf_table_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        entry_free(&t->e[i]);
    nd_free(t->e);
    nd_free(t->slot);
    nd_free(t->wc);
    nd_free(t);
}

size_t
nd_xf_table_count(const nd_xf_table_t *t)
{
    return t->n;
}

/* Rebuilds the literal hash and the wildcard list (cold: after every add or remove). */
static void
reindex(nd_xf_table_t *t)
{
    nd_free(t->slot);
    nd_free(t->wc);
    t->slot = NULL;
    t->wc = NULL;
    t->nslot = t->nwc = 0;
    size_t nlit = 0;
    for (size_t i = 0; i < t->n; i++)
        nlit += !t->e[i].wc;
    t->wc = nd_xmalloc((t->n - nlit + 1) * sizeof(*t->wc));
    if (nlit) {
        size_t ns = 4;
        while (ns < nlit * 2 + 1)
            ns *= 2;
        t->slot = nd_xcalloc(ns, sizeof(*t->slot));
        t->nslot = ns;
    }
    for (size_t i = 0; i < t->n; i++) {
        entry_t *e = &t->e[i];
        if (e->wc) {
            t->wc[t->nwc++] = i;
            continue;
        }
        size_t h = (size_t)XXH3_64bits(e->src, e->srclen) & (t->nslot - 1);
        while (t->slot[h])
            h = (h + 1) & (t->nslot - 1);
        t->slot[h] = (uint32_t)(i + 1);
    }
}

/* processDestinations: the remainder to src, stable sort by weight, cumulative weights. */
static nd_xf_err_t
finish_list(dlist_t *l, const char *src, bool wc, bool have_src, char *err, size_t errlen)
{
    unsigned tw = 0;
    for (size_t i = 0; i < l->n; i++)
        tw += l->d[i].cum;
    if (tw != 100 && !have_src) {
        /* transformTokenize: foo.*.* -> foo.$1.$2. */
        sb_t d = {0};
        if (wc) {
            size_t sl = strlen(src), k = 1;
            size_t ns = tokenize(src, sl, NULL, 0);
            span_t *st = nd_xmalloc(ns * sizeof(*st));
            tokenize(src, sl, st, ns);
            for (size_t i = 0; i < ns; i++) {
                char num[32];
                if (i)
                    sb_put(&d, ".", 1);
                if (is_wc(st[i], '*')) {
                    int nl = snprintf(num, sizeof num, "$%zu", k++);
                    sb_put(&d, num, (size_t)nl);
                } else {
                    sb_put(&d, st[i].p, st[i].n);
                }
            }
            nd_free(st);
        } else {
            sb_put(&d, src, strlen(src));
        }
        nd_xf_t *xf;
        nd_xf_err_t rc = nd_xf_new(src, d.p, ND_XF_MODE_TRANSFORM, &xf, err, errlen);
        nd_free(d.p);
        if (rc != ND_XF_OK)
            return rc;
        unsigned aw = l->n == 0 ? 100 : 100 - tw;
        l->d = nd_xrealloc(l->d, (l->n + 1) * sizeof(*l->d));
        l->d[l->n++] = (wdest_t){xf, aw};
    }
    for (size_t i = 1; i < l->n; i++) { /* insertion sort: stable, as Go's for short lists */
        wdest_t x = l->d[i];
        size_t j = i;
        for (; j > 0 && l->d[j - 1].cum > x.cum; j--)
            l->d[j] = l->d[j - 1];
        l->d[j] = x;
    }
    unsigned acc = 0;
    for (size_t i = 0; i < l->n; i++) {
        acc += l->d[i].cum;
        l->d[i].cum = acc;
    }
    return ND_XF_OK;
}

/* Go's %q for the duplicate error: quotes, backslash escapes for quotes, backslashes and
 * control bytes (other bytes are written as they are). */
static void
go_quote(char *buf, size_t len, const char *s)
{
    size_t n = 0;
#define PUTC(c)                                                                                    \
    do {                                                                                           \
        if (n + 1 < len)                                                                           \
            buf[n++] = (c);                                                                        \
    } while (0)
    PUTC('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        static const char esc[] = "\a\b\f\n\r\t\v";
        static const char let[] = "abfnrtv";
        const char *q = *p ? strchr(esc, *p) : NULL;
        if (*p == '"' || *p == '\\') {
            PUTC('\\');
            PUTC((char)*p);
        } else if (q) {
            PUTC('\\');
            PUTC(let[q - esc]);
        } else if (*p < 0x20 || *p == 0x7f) {
            char hx[5];
            snprintf(hx, sizeof hx, "\\x%02x", *p);
            for (int k = 0; k < 4; k++)
                PUTC(hx[k]);
        } else {
            PUTC((char)*p);
        }
    }
    PUTC('"');
#undef PUTC
    if (len)
        buf[n < len ? n : len - 1] = '\0';
}

nd_xf_err_t
nd_xf_table_add(nd_xf_table_t *t, const char *src, const nd_xf_dest_spec_t *dests, size_t ndests,
                char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    size_t sl = src ? strlen(src) : 0;
    if (!src || !nd_subj_valid_sub(src, sl))
        return fail(err, errlen, ND_XF_ERR_BAD_SUBJECT, NULL, 0);
    entry_t e = {.src = nd_xstrdup(src), .srclen = sl, .wc = !nd_subj_is_literal(src, sl)};
    nd_xf_err_t rc = ND_XF_OK;
    bool have_src = false;
    /* Per-cluster weight totals, in the order clusters first appear; index 0 = no cluster. */
    unsigned *tw = nd_xcalloc(ndests + 1, sizeof(*tw));
    for (size_t i = 0; i < ndests && rc == ND_XF_OK; i++) {
        const nd_xf_dest_spec_t *d = &dests[i];
        const char *ds = d->subject ? d->subject : "";
        const char *cl = d->cluster && *d->cluster ? d->cluster : NULL;
        for (size_t j = 0; j < i; j++) {
            const char *o = dests[j].subject ? dests[j].subject : "";
            if (strcmp(o, ds) == 0) {
                if (err && errlen) {
                    char q[256];
                    go_quote(q, sizeof q, ds);
                    snprintf(err, errlen, "duplicate entry for %s", q);
                }
                rc = ND_XF_ERR_DUPLICATE;
                break;
            }
        }
        if (rc != ND_XF_OK)
            break;
        if (strcmp(ds, src) == 0)
            have_src = true;
        if (d->weight > 100 || d->weight < 0) {
            rc = fail(err, errlen, ND_XF_ERR_WEIGHT, NULL, 0);
            break;
        }
        /* Find (or open) this destination's list. */
        dlist_t *l = &e.main;
        size_t li = 0;
        if (cl) {
            size_t k = 0;
            while (k < e.ncl && strcmp(e.cl[k].cluster, cl) != 0)
                k++;
            if (k == e.ncl) {
                e.cl = nd_xrealloc(e.cl, (e.ncl + 1) * sizeof(*e.cl));
                e.cl[e.ncl++] = (dlist_t){.cluster = nd_xstrdup(cl)};
            }
            l = &e.cl[k];
            li = k + 1;
        }
        tw[li] += (unsigned)d->weight;
        if (tw[li] > 100) {
            rc = fail(err, errlen, ND_XF_ERR_TOTAL_WEIGHT, NULL, 0);
            break;
        }
        if (!*ds) {
            rc = fail(err, errlen, ND_XF_ERR_BAD_SUBJECT, NULL, 0);
            break;
        }
        nd_xf_t *xf;
        if ((rc = nd_xf_new(src, ds, ND_XF_MODE_MAPPING, &xf, err, errlen)) != ND_XF_OK)
            break;
        l->d = nd_xrealloc(l->d, (l->n + 1) * sizeof(*l->d));
        l->d[l->n++] = (wdest_t){xf, (unsigned)d->weight};
    }
    nd_free(tw);
    if (rc == ND_XF_OK)
        rc = finish_list(&e.main, src, e.wc, have_src, err, errlen);
    for (size_t k = 0; k < e.ncl && rc == ND_XF_OK; k++)
        rc = finish_list(&e.cl[k], src, e.wc, have_src, err, errlen);
    if (rc != ND_XF_OK) {
        entry_free(&e);
        return rc;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->e[i].src, src) == 0) {
            entry_free(&t->e[i]);
            t->e[i] = e;
            reindex(t);
            return ND_XF_OK;
        }
    }
    if (t->n == t->cap) {
        t->cap = nd_grow_cap(t->cap, t->n + 1, 4);
        t->e = nd_xrealloc(t->e, t->cap * sizeof(*t->e));
    }
    t->e[t->n++] = e;
    reindex(t);
    return ND_XF_OK;
}

nd_xf_err_t
nd_xf_table_add_opts(nd_xf_table_t *t, const struct nd_mapping *m, size_t n, size_t *bad, char *err,
                     size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        nd_xf_dest_spec_t *d = nd_xcalloc(m[i].ndests + 1, sizeof(*d));
        for (size_t k = 0; k < m[i].ndests; k++)
            d[k] = (nd_xf_dest_spec_t){m[i].dests[k].subject, m[i].dests[k].weight,
                                       m[i].dests[k].cluster};
        nd_xf_err_t rc = nd_xf_table_add(t, m[i].src, d, m[i].ndests, err, errlen);
        nd_free(d);
        if (rc != ND_XF_OK) {
            if (bad)
                *bad = i;
            return rc;
        }
    }
    return ND_XF_OK;
}

bool
nd_xf_table_remove(nd_xf_table_t *t, const char *src)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->e[i].src, src) == 0) {
            entry_free(&t->e[i]);
            t->e[i] = t->e[t->n - 1];
            t->n--;
            reindex(t);
            return true;
        }
    }
    return false;
}

nd_xf_map_t
nd_xf_table_map(const nd_xf_table_t *t, const char *subj, size_t len, const char *cluster,
                uint32_t rnd, char *out, size_t cap, size_t *outlen)
{
    *outlen = 0;
    if (t->n == 0)
        return ND_XF_MAP_NONE;
    size_t lit = SIZE_MAX;
    if (t->nslot) {
        size_t h = (size_t)XXH3_64bits(subj, len) & (t->nslot - 1);
        for (uint32_t s; (s = t->slot[h]) != 0; h = (h + 1) & (t->nslot - 1)) {
            const entry_t *e = &t->e[s - 1];
            if (e->srclen == len && memcmp(e->src, subj, len) == 0) {
                lit = s - 1;
                break;
            }
        }
    }
    const entry_t *m = lit == SIZE_MAX ? NULL : &t->e[lit];
    for (size_t k = 0; k < t->nwc && t->wc[k] < lit; k++) {
        const entry_t *e = &t->e[t->wc[k]];
        if (nd_subj_match(e->src, e->srclen, subj, len)) {
            m = e;
            break;
        }
    }
    if (!m)
        return ND_XF_MAP_NONE;
    const dlist_t *l = &m->main;
    if (m->ncl && cluster)
        for (size_t k = 0; k < m->ncl; k++)
            if (strcmp(m->cl[k].cluster, cluster) == 0) {
                l = &m->cl[k];
                break;
            }
    const wdest_t *d = NULL;
    if (l->n == 1 && l->d[0].cum == 100) {
        d = &l->d[0];
    } else {
        unsigned w = rnd % 100;
        for (size_t i = 0; i < l->n && !d; i++)
            if (w < l->d[i].cum)
                d = &l->d[i];
    }
    if (!d) {
        if (cap)
            out[0] = '\0';
        return ND_XF_MAP_DROP;
    }
    *outlen = nd_xf_apply(d->xf, subj, len, out, cap);
    return ND_XF_MAP_MAPPED;
}
