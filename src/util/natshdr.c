/* See natshdr.h. */
#include "util/natshdr.h"

#include <string.h>

const char *
nd_hdr_get(const void *hdr, size_t len, const char *key, size_t *n)
{
    if (hdr == NULL || len == 0)
        return NULL;
    size_t kl = strlen(key);
    const char *h = hdr, *end = h + len;
    const char *p = memchr(h, '\n', len); /* skip the status line */
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
