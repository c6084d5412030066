/* See jsxform.h. */
#include "js/jsxform.h"

#include <string.h>

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
