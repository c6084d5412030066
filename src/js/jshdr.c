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
