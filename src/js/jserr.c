/* The JetStream API error table (js/jserr_table.h) turned into lookups and filled-in errors.
 *
 * Descriptions are built into the fixed nd_jserr_t.desc buffer. Values come from clients and
 * configs (subjects, stream names, parser messages), so every append is bounded: text that
 * does not fit is cut, never at a byte inside a UTF-8 sequence, and the buffer always ends in
 * a NUL. nd_jserr_json still copes with invalid UTF-8 in a value, as nats-server's encoder
 * does, by writing U+FFFD for each bad byte.
 */
#include "js/jserr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* clang-format off */
static const nd_jse_info_t infos[ND_JSE_COUNT] = {
    [ND_JSE_NONE] = {0, 0, ""},
#define ND_JSE_INFO(name, c, ec, d) [ND_JSE_##name] = {c, ec, d},
    ND_JSE_TABLE(ND_JSE_INFO)
#undef ND_JSE_INFO
};
/* clang-format on */

const nd_jse_info_t *
nd_jse_info(nd_jse_t e)
{
    if ((int)e <= (int)ND_JSE_NONE || (int)e >= (int)ND_JSE_COUNT)
        return NULL;
    return &infos[e];
}

/* A bounded writer over out->desc: len never exceeds sizeof(desc) - 1. */
typedef struct {
    char *buf;
    size_t cap, len;
} sbuf_t;

static void
put(sbuf_t *b, const char *s, size_t n)
{
    size_t room = b->cap - 1 - b->len;
    if (n > room) {
        /* Cut where a character starts, so no half UTF-8 sequence is left at the end. */
        n = room;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

/* The value given for placeholder `name` (n bytes) in a NULL-terminated name/value list, or
 * NULL. A name given with a NULL value ends the list there. */
static const char *
lookup(va_list ap, const char *name, size_t n)
{
    va_list cp;
    const char *found = NULL;
    va_copy(cp, ap);
    for (;;) {
        const char *k = va_arg(cp, const char *);
        if (k == NULL)
            break;
        const char *v = va_arg(cp, const char *);
        if (v == NULL)
            break;
        if (strlen(k) == n && memcmp(k, name, n) == 0) {
            found = v;
            break;
        }
    }
    va_end(cp);
    return found;
}

static void
fill(nd_jserr_t *out, nd_jse_t e, va_list ap)
{
    const nd_jse_info_t *info = nd_jse_info(e);
    sbuf_t b = {out->desc, sizeof(out->desc), 0};
    out->desc[0] = '\0';
    if (info == NULL) {
        out->e = ND_JSE_NONE;
        out->code = out->err_code = 0;
        return;
    }
    out->e = e;
    out->code = info->code;
    out->err_code = info->err_code;
    const char *p = info->desc;
    while (*p != '\0') {
        const char *open = strchr(p, '{');
        const char *close = open != NULL ? strchr(open + 1, '}') : NULL;
        if (close == NULL) {
            put(&b, p, strlen(p));
            break;
        }
        put(&b, p, (size_t)(open - p));
        const char *v = lookup(ap, open + 1, (size_t)(close - open - 1));
        if (v != NULL)
            put(&b, v, strlen(v));
        else
            put(&b, open, (size_t)(close + 1 - open)); /* left as written */
        p = close + 1;
    }
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

/* va_list cannot be built by hand, so the {err} value goes through a variadic helper. */
static void
fill_err(nd_jserr_t *out, nd_jse_t e, ...)
{
    va_list ap;
    va_start(ap, e);
    fill(out, e, ap);
    va_end(ap);
}

bool
nd_jserr_setf(nd_jserr_t *out, nd_jse_t e, const char *fmt, ...)
{
    /* The formatted text can be at most as long as the description it ends up in. */
    char text[sizeof(out->desc)];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0) {
        text[0] = '\0';
    } else if ((size_t)n >= sizeof(text)) {
        /* vsnprintf cut at a byte; drop a half character it may have left at the end. */
        size_t len = sizeof(text) - 1, i = len;
        while (i > 0 && ((unsigned char)text[i - 1] & 0xC0) == 0x80)
            i--;
        if (i > 0 && ((unsigned char)text[i - 1] & 0xC0) == 0xC0) {
            unsigned char lead = (unsigned char)text[i - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - (i - 1) < need)
                text[i - 1] = '\0';
        }
    }
    fill_err(out, e, "err", text, (const char *)NULL);
    return false;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes available), or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    /* Overlong forms, surrogates and code points past U+10FFFF are invalid. */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

json_t *
nd_jserr_json(const nd_jserr_t *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "code", json_integer(err->code));
    json_object_set_new(o, "err_code", json_integer(err->err_code));
    size_t n = strnlen(err->desc, sizeof(err->desc));
    json_t *d = json_stringn(err->desc, n);
    if (d == NULL) {
        /* Invalid UTF-8 from some value: each bad byte becomes U+FFFD (3 bytes). */
        char clean[sizeof(err->desc) * 3];
        const unsigned char *s = (const unsigned char *)err->desc;
        size_t j = 0;
        for (size_t i = 0; i < n;) {
            size_t l = utf8_seq(s + i, n - i);
            if (l == 0) {
                memcpy(clean + j, "\xEF\xBF\xBD", 3);
                j += 3;
                i++;
            } else {
                memcpy(clean + j, s + i, l);
                j += l;
                i += l;
            }
        }
        d = json_stringn(clean, j);
    }
    json_object_set_new(o, "description", d);
    return o;
}
