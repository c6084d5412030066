/* TEMPORARY (branch js-scfg): a minimal jserr.c so that stream_cfg links; replaced by the real
 * one from branch js-jserr. */
#include "js/jserr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const nd_jse_info_t infos[] = {
    {0, 0, ""},
#define ND_JSE_INFO(name, code, err_code, desc) {code, err_code, desc},
    ND_JSE_TABLE(ND_JSE_INFO)
#undef ND_JSE_INFO
};

const nd_jse_info_t *
nd_jse_info(nd_jse_t e)
{
    return (e > 0 && e < ND_JSE_COUNT) ? &infos[e] : &infos[0];
}

static void
fill(nd_jserr_t *out, nd_jse_t e, va_list ap)
{
    const nd_jse_info_t *in = nd_jse_info(e);
    out->e = e;
    out->code = in->code;
    out->err_code = in->err_code;
    size_t o = 0;
    for (const char *p = in->desc; *p && o + 1 < sizeof out->desc;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (close) {
            va_list aq;
            va_copy(aq, ap);
            const char *k, *val = NULL;
            while ((k = va_arg(aq, const char *)) != NULL) {
                const char *v = va_arg(aq, const char *);
                if (strlen(k) == (size_t)(close - p - 1) && !strncmp(k, p + 1, close - p - 1)) {
                    val = v;
                    break;
                }
            }
            va_end(aq);
            if (val) {
                int n = snprintf(out->desc + o, sizeof out->desc - o, "%s", val);
                o += (size_t)n < sizeof out->desc - o ? (size_t)n : sizeof out->desc - o - 1;
                p = close + 1;
                continue;
            }
        }
        out->desc[o++] = *p++;
    }
    out->desc[o] = '\0';
}

bool
nd_jserr_set(nd_jserr_t *out, nd_jse_t e, ...)
{
    va_list ap;
    va_start(ap, e);
    fill(out, e, ap);
    va_end(ap);
    return false;
}

bool
nd_jserr_setf(nd_jserr_t *out, nd_jse_t e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return nd_jserr_set(out, e, "err", buf, (const char *)NULL);
}

json_t *
nd_jserr_json(const nd_jserr_t *err)
{
    return json_pack("{s:i,s:i,s:s}", "code", err->code, "err_code", err->err_code, "description",
                     err->desc);
}
