/* See jshdr.h. */
#include "js/jshdr.h"

#include <string.h>

const char *
js_hdr_get(const char *hdr, size_t len, const char *key, size_t *n)
{
    if (hdr == NULL || len == 0)
        return NULL;
    size_t kl = strlen(key);
    const char *end = hdr + len;
    const char *p = memchr(hdr, '\n', len); /* skip the status line */
    while (p != NULL && p + 1 < end) {
        const char *line = p + 1;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - line) > kl && memcmp(line, key, kl) == 0 && line[kl] == ':') {
            const char *v = line + kl + 1, *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == '\n' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *n = (size_t)(ve - v);
            return v;
        }
        p = eol < end ? eol : NULL;
    }
    return NULL;
}

bool
js_parse_ttl(const char *v, size_t n, int64_t *secs)
{
    if (n == 5 && memcmp(v, "never", 5) == 0) {
        *secs = -1;
        return true;
    }
    if (n == 0)
        return false;
    bool digits = true;
    for (size_t i = 0; i < n; i++)
        digits = digits && v[i] >= '0' && v[i] <= '9';
    if (digits) {
        if (n > 18)
            return false;
        int64_t s = 0;
        for (size_t i = 0; i < n; i++)
            s = s * 10 + (v[i] - '0');
        *secs = s;
        return s >= 1 || s == 0;
    }
    /* A Go duration: numbers with units h, m, s, ms, us, ns. */
    double total = 0;
    size_t i = 0;
    while (i < n) {
        double num = 0, frac = 0.1;
        bool any = false, dot = false;
        for (; i < n && ((v[i] >= '0' && v[i] <= '9') || v[i] == '.'); i++) {
            if (v[i] == '.') {
                if (dot)
                    return false;
                dot = true;
                continue;
            }
            any = true;
            if (!dot)
                num = num * 10 + (v[i] - '0');
            else {
                num += (v[i] - '0') * frac;
                frac /= 10;
            }
        }
        if (!any)
            return false;
        double unit;
        if (i + 1 < n && v[i] == 'm' && v[i + 1] == 's') {
            unit = 1e-3;
            i += 2;
        } else if (i + 1 < n && (v[i] == 'u' || v[i] == 'n') && v[i + 1] == 's') {
            unit = v[i] == 'u' ? 1e-6 : 1e-9;
            i += 2;
        } else if (i < n && v[i] == 'h') {
            unit = 3600;
            i++;
        } else if (i < n && v[i] == 'm') {
            unit = 60;
            i++;
        } else if (i < n && v[i] == 's') {
            unit = 1;
            i++;
        } else {
            return false;
        }
        total += num * unit;
    }
    if (total < 1 || total > 9.2e9)
        return false;
    *secs = (int64_t)total;
    return true;
}

bool
js_xform(nd_xf_t **cache, const char *src, const char *dest, const char *subj, size_t len,
         char *out, size_t cap)
{
    if (*cache == NULL) {
        if (nd_xf_new(src, dest, ND_XF_MODE_TRANSFORM, cache, NULL, 0) != ND_XF_OK ||
            *cache == NULL)
            return false;
    }
    size_t outlen;
    return nd_xf_match(*cache, subj, len, out, cap, &outlen) == ND_XF_MATCHED && outlen < cap;
}
