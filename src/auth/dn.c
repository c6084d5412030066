/* Distinguished names: see dn.h.
 *
 * Grammar (RFC 4514 section 3, as go-ldap's ParseDN accepts it): a DN is RDNs separated by ','
 * (or ';'), an RDN is attributes separated by '+', an attribute is `type=value`. Spaces around
 * types, around '=' and around separators are ignored; a value's leading and trailing unescaped
 * spaces are dropped. In a value, '\' followed by two hex digits is that byte (`\2C` is ','),
 * '\' followed by any other character is that character (`\,` `\+` `\"` `\\`), and a value may
 * be a quoted string ("a, b") in which separators are plain characters. A value starting with
 * '#' (hex-encoded BER) is kept as written. The type must be non-empty and made of letters,
 * digits, '-' and '.' (a descriptor or an OID).
 * Comparison: types case-insensitively (`cn` = `CN`), values byte for byte; the attributes of a
 * multi-valued RDN as a set (`CN=a+O=b` = `O=b+CN=a`), which needs O(n^2) for n attributes:
 * RDNs have one or two.
 */
#include "auth/dn.h"
#include "util/hex.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"


static const char *
skip_spaces(const char *p)
{
    while (*p == ' ')
        p++;
    return p;
}

/* Parses a value at *pp into a new string; stops at an unescaped ',' ';' '+' or the end.
 * Returns: the value, or NULL on a bad escape or unterminated quote. */
static char *
parse_value(const char **pp)
{
    const char *p = skip_spaces(*pp);
    size_t cap = strlen(p) + 1, n = 0, keep = 0; /* keep: length up to the last non-space */
    char *v = nd_xmalloc(cap);
    bool quoted = *p == '"';
    if (quoted)
        p++;
    for (;;) {
        char c = *p;
        if (c == '\0') {
            if (quoted)
                goto bad;
            break;
        }
        if (quoted && c == '"') {
            p = skip_spaces(p + 1);
            keep = n;
            break;
        }
        if (!quoted && (c == ',' || c == ';' || c == '+'))
            break;
        if (c == '\\') {
            int h = nd_hex_value(p[1]), l = p[1] != '\0' ? nd_hex_value(p[2]) : -1;
            if (h >= 0 && l >= 0) {
                v[n++] = (char)(h * 16 + l);
                p += 3;
            } else if (p[1] != '\0') {
                v[n++] = p[1];
                p += 2;
            } else {
                goto bad;
            }
            keep = n; /* an escaped space is part of the value */
            continue;
        }
        v[n++] = c;
        if (c != ' ' || quoted)
            keep = n;
        p++;
    }
    if (quoted && *p != '\0' && *p != ',' && *p != ';' && *p != '+')
        goto bad;
    v[keep] = '\0';
    *pp = p;
    return v;
bad:
    nd_free(v);
    return NULL;
}

/* Parses `type=value` at *pp into *a. Returns: false when it is malformed. */
static bool
parse_attr(const char **pp, nd_dn_attr_t *a)
{
    const char *p = skip_spaces(*pp), *t = p;
    while (isalnum((unsigned char)*p) || *p == '-' || *p == '.')
        p++;
    size_t tlen = (size_t)(p - t);
    p = skip_spaces(p);
    if (tlen == 0 || *p != '=')
        return false;
    p++;
    char *v = parse_value(&p);
    if (v == NULL)
        return false;
    a->type = nd_xstrndup(t, tlen);
    a->value = v;
    *pp = p;
    return true;
}

bool
nd_dn_parse(const char *s, nd_dn_t *out)
{
    out->rdns = NULL;
    out->n = 0;
    const char *p = s;
    if (*skip_spaces(p) == '\0')
        return false;
    size_t cap = 0;
    for (;;) {
        if (out->n == cap) {
            cap = nd_grow_cap(cap, out->n + 1, 4);
            out->rdns = nd_xrealloc(out->rdns, cap * sizeof *out->rdns);
        }
        nd_dn_rdn_t *r = &out->rdns[out->n++];
        r->attrs = NULL;
        r->n = 0;
        size_t acap = 0;
        for (;;) {
            if (r->n == acap) {
                acap = nd_grow_cap(acap, r->n + 1, 2);
                r->attrs = nd_xrealloc(r->attrs, acap * sizeof *r->attrs);
            }
            if (!parse_attr(&p, &r->attrs[r->n]))
                goto bad;
            r->n++;
            if (*p != '+')
                break;
            p++;
        }
        if (*p == '\0')
            return true;
        p++; /* ',' or ';' */
    }
bad:
    nd_dn_free(out);
    return false;
}

void
nd_dn_free(nd_dn_t *dn)
{
    for (size_t i = 0; i < dn->n; i++) {
        for (size_t k = 0; k < dn->rdns[i].n; k++) {
            nd_free(dn->rdns[i].attrs[k].type);
            nd_free(dn->rdns[i].attrs[k].value);
        }
        nd_free(dn->rdns[i].attrs);
    }
    nd_free(dn->rdns);
    dn->rdns = NULL;
    dn->n = 0;
}

static bool
attr_equal(const nd_dn_attr_t *a, const nd_dn_attr_t *b)
{
    return strcasecmp(a->type, b->type) == 0 && strcmp(a->value, b->value) == 0;
}

/* Whether every attribute of a is in b; with equal counts (and no duplicates, which a DN does not
 * have), that is set equality. */
static bool
rdn_equal(const nd_dn_rdn_t *a, const nd_dn_rdn_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        bool found = false;
        for (size_t k = 0; k < b->n && !found; k++)
            found = attr_equal(&a->attrs[i], &b->attrs[k]);
        if (!found)
            return false;
    }
    return true;
}

bool
nd_dn_equal(const nd_dn_t *a, const nd_dn_t *b, bool reverse)
{
    if (a->n != b->n || a->n == 0)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!rdn_equal(&a->rdns[i], &b->rdns[reverse ? b->n - 1 - i : i]))
            return false;
    return true;
}

bool
nd_dn_match(const char *a, const char *b)
{
    nd_dn_t da, db;
    bool r = false;
    if (nd_dn_parse(a, &da) && nd_dn_parse(b, &db)) {
        r = nd_dn_equal(&da, &db, false) || nd_dn_equal(&da, &db, true);
        nd_dn_free(&db);
    }
    nd_dn_free(&da);
    return r;
}
