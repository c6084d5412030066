/* Subject rules: validation, token counting, matching and subsets. See src/subj/subject.h.
 *
 * Every scan is one pass over the bytes with a 256-entry class table, so a validation costs about
 * a cycle or two per byte and no function calls. Tokens are walked as [start, end) byte ranges.
 */
#include "subj/subject.h"

#include <stdint.h>
#include <string.h>

enum { C_PLAIN = 0, C_SEP = 1, C_SPACE = 2 };

static const uint8_t byte_class[256] = {
    ['.'] = C_SEP,    [' '] = C_SPACE,  ['\t'] = C_SPACE,
    ['\r'] = C_SPACE, ['\n'] = C_SPACE, ['\f'] = C_SPACE,
};

/* A wildcard is a token of exactly one byte, `*` or `>`. */
static inline bool
is_tok(const char *t, size_t n, char c)
{
    return n == 1 && t[0] == c;
}

/* One pass over s; `wild` says whether `*` and a final `>` are allowed. */
static bool
valid_subject(const char *s, size_t len, bool wild)
{
    if (len == 0)
        return false;
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + len;
    const unsigned char *tok = p;
    for (; p < end; p++) {
        uint8_t c = byte_class[*p];
        if (c == C_PLAIN)
            continue;
        if (c == C_SPACE)
            return false;
        /* A separator ends a token that is not the last: it must be non-empty, and `>` is never
         * allowed here because it must be the last token. */
        size_t n = (size_t)(p - tok);
        if (n == 0)
            return false;
        if (n == 1 && (*tok == ND_SUBJ_FWC || (*tok == ND_SUBJ_PWC && !wild)))
            return false;
        tok = p + 1;
    }
    size_t n = (size_t)(end - tok);
    if (n == 0)
        return false;
    if (!wild && n == 1 && (*tok == ND_SUBJ_FWC || *tok == ND_SUBJ_PWC))
        return false;
    return true;
}

bool
nd_subj_valid_pub(const char *s, size_t len)
{
    return valid_subject(s, len, false);
}

bool
nd_subj_valid_sub(const char *s, size_t len)
{
    return valid_subject(s, len, true);
}

bool
nd_subj_valid_queue(const char *q, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (byte_class[(unsigned char)q[i]] == C_SPACE)
            return false;
    return true;
}

bool
nd_subj_is_literal(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if ((c == ND_SUBJ_PWC || c == ND_SUBJ_FWC) && (i == 0 || s[i - 1] == ND_SUBJ_SEP) &&
            (i + 1 == len || s[i + 1] == ND_SUBJ_SEP))
            return false;
    }
    return true;
}

size_t
nd_subj_tokens(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    size_t n = 1;
    const char *p = s, *end = s + len;
    while ((p = memchr(p, ND_SUBJ_SEP, (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* Token cursor over a subject: next() yields [*t, *t + *n) and advances; false at the end. */
typedef struct tok_iter {
    const char *p, *end;
    bool done;
} tok_iter_t;

static inline void
iter_init(tok_iter_t *it, const char *s, size_t len)
{
    it->p = s;
    it->end = s + len;
    it->done = len == 0;
}

static inline bool
iter_next(tok_iter_t *it, const char **t, size_t *n)
{
    if (it->done)
        return false;
    const char *q = memchr(it->p, ND_SUBJ_SEP, (size_t)(it->end - it->p));
    *t = it->p;
    if (q == NULL) {
        *n = (size_t)(it->end - it->p);
        it->done = true;
    } else {
        *n = (size_t)(q - it->p);
        it->p = q + 1;
    }
    return true;
}

/* True when some remaining token of the iterator is empty. */
static bool
rest_has_empty(tok_iter_t *it)
{
    const char *t;
    size_t n;
    while (iter_next(it, &t, &n))
        if (n == 0)
            return true;
    return false;
}

bool
nd_subj_match(const char *pattern, size_t plen, const char *subj, size_t slen)
{
    tok_iter_t pi, si;
    iter_init(&pi, pattern, plen);
    iter_init(&si, subj, slen);
    if (plen == 0 || slen == 0)
        return false;
    for (;;) {
        const char *pt, *st;
        size_t pn, sn;
        bool hp = iter_next(&pi, &pt, &pn);
        bool hs = iter_next(&si, &st, &sn);
        if (!hp || !hs)
            return !hp && !hs; /* both exhausted together: a full match */
        if (sn == 0)
            return false;
        if (is_tok(pt, pn, ND_SUBJ_FWC))
            return !rest_has_empty(&si); /* `>` takes this token and all the rest */
        if (is_tok(pt, pn, ND_SUBJ_PWC))
            continue;
        if (pn != sn || memcmp(pt, st, pn) != 0)
            return false;
    }
}

bool
nd_subj_subset(const char *sub, size_t sublen, const char *super, size_t superlen)
{
    tok_iter_t ai, bi;
    iter_init(&ai, sub, sublen);
    iter_init(&bi, super, superlen);
    if (sublen == 0 || superlen == 0)
        return false;
    for (;;) {
        const char *at, *bt;
        size_t an, bn;
        bool ha = iter_next(&ai, &at, &an);
        bool hb = iter_next(&bi, &bt, &bn);
        if (!ha || !hb)
            return !ha && !hb;
        /* super's `>` covers one or more tokens, which is whatever sub has left (>= 1 here,
         * including a `>` of its own). */
        if (is_tok(bt, bn, ND_SUBJ_FWC))
            return true;
        /* Any other super token covers exactly one token, so sub's `>` is too wide. */
        if (is_tok(at, an, ND_SUBJ_FWC))
            return false;
        if (is_tok(bt, bn, ND_SUBJ_PWC))
            continue;
        /* super's token is literal: sub must have the same literal there, not `*`. */
        if (is_tok(at, an, ND_SUBJ_PWC) || an != bn || memcmp(at, bt, an) != 0)
            return false;
    }
}
