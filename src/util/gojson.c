/* Client JSON decoded with Go's encoding/json rules (gojson.h), on top of jansson.
 *
 * Algorithm: a single pass rewrites the text before jansson sees it, inside string literals
 * only (keys and values alike), and only where Go's unquote (encoding/json/decode.go) would
 * produce a character jansson refuses:
 *   - a byte that does not start a valid UTF-8 sequence (utf8.DecodeRune: overlong forms,
 *     encoded surrogates, above U+10FFFF, truncated) becomes U+FFFD, one per byte, as Go does;
 *   - `\uD800`-`\uDBFF` not followed by an escaped low surrogate, and a low surrogate alone,
 *     become `\ufffd` (Go: utf16.DecodeRune fails, unicode.ReplacementChar); a valid pair stays;
 *   - `\u0000` becomes `\ufffd` (see gojson.h: the NUL cannot be carried in a C string).
 * Everything else (syntax, escapes Go refuses too, bytes outside strings) is left for jansson
 * to judge, which agrees with Go on it. The rewrite never grows a byte by more than 3.
 *
 * Key matching follows Go 1.19's fold.go: the struct's json names are ASCII, so a key matches a
 * name when each ASCII letter matches in either case, every other ASCII byte matches exactly,
 * and the only non-ASCII runes that can match are U+017F for 's' and U+212A for 'k'.
 */
#include "util/gojson.h"

#include <string.h>

#include "actors/alloc.h"

static int
hex4(const char *p, const char *end)
{
    if (end - p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        int d;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            d = ch - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Returns: the length of the valid UTF-8 sequence at p (2-4), or 0 when the byte at p does not
 * start one (the rules of Go's utf8.DecodeRune, which are RFC 3629's). */
static size_t
utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F; /* no encoded surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

static const char replacement_utf8[] = "\xEF\xBF\xBD";
static const char replacement_escape[] = "\\ufffd";

/* Rewrites text as the top of the file says. Returns: an owned buffer of *outlen bytes. */
static char *
rewrite(const char *text, size_t len, size_t *outlen)
{
    char *out = nd_xmalloc(len * 3 + 1);
    size_t o = 0;
    const char *p = text, *end = text + len;
    bool in_str = false;
    while (p < end) {
        unsigned char b = (unsigned char)*p;
        if (!in_str) {
            in_str = b == '"';
            out[o++] = *p++;
            continue;
        }
        if (b == '"') {
            in_str = false;
            out[o++] = *p++;
        } else if (b == '\\' && end - p >= 2 && p[1] == 'u') {
            int u = hex4(p + 2, end);
            if (u < 0) {
                /* A bad escape: jansson refuses it, as Go does. */
                out[o++] = *p++;
                continue;
            }
            bool bad = u == 0 || (u >= 0xDC00 && u <= 0xDFFF);
            if (u >= 0xD800 && u <= 0xDBFF) {
                int lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8, end) : -1;
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    memcpy(out + o, p, 12); /* a valid pair */
                    o += 12;
                    p += 12;
                    continue;
                }
                bad = true;
            }
            if (bad)
                memcpy(out + o, replacement_escape, 6);
            else
                memcpy(out + o, p, 6);
            o += 6;
            p += 6;
        } else if (b == '\\' && end - p >= 2) {
            out[o++] = *p++; /* \" \\ and the other one-character escapes */
            out[o++] = *p++;
        } else if (b < 0x80) {
            out[o++] = *p++;
        } else {
            size_t n = utf8_len((const unsigned char *)p, (const unsigned char *)end);
            if (n == 0) {
                memcpy(out + o, replacement_utf8, 3);
                o += 3;
                p++;
            } else {
                memcpy(out + o, p, n);
                o += n;
                p += n;
            }
        }
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

json_t *
nd_gojson_load_object(const char *text, size_t len)
{
    size_t n;
    char *clean = rewrite(text, len, &n);
    json_t *v = json_loadb(clean, n, JSON_DECODE_ANY, NULL);
    nd_free(clean);
    if (json_is_null(v)) {
        json_decref(v);
        return json_object();
    }
    if (!json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

bool
nd_gojson_key_is(const char *key, const char *name)
{
    const unsigned char *k = (const unsigned char *)key;
    for (const char *s = name; *s; s++) {
        unsigned char sb = (unsigned char)*s;
        if (*k < 0x80) {
            bool letter = (sb | 0x20) >= 'a' && (sb | 0x20) <= 'z';
            if (*k != sb && !(letter && (*k | 0x20) == (sb | 0x20)))
                return false;
            k++;
        } else if ((sb | 0x20) == 's' && k[0] == 0xC5 && k[1] == 0xBF) {
            k += 2; /* U+017F LATIN SMALL LETTER LONG S */
        } else if ((sb | 0x20) == 'k' && k[0] == 0xE2 && k[1] == 0x84 && k[2] == 0xAA) {
            k += 3; /* U+212A KELVIN SIGN */
        } else {
            return false;
        }
    }
    return *k == '\0';
}

json_t *
nd_gojson_field(json_t *o, const char *name)
{
    json_t *found = NULL, *v;
    const char *key;
    json_object_foreach(o, key, v)
    {
        /* A null leaves the field as the keys before it set it (Go: null is a no-op). */
        if (!json_is_null(v) && nd_gojson_key_is(key, name))
            found = v;
    }
    return found;
}

/* Returns: whether key holds a secret: contains pass, token, sig or jwt after Go's folding. */
static bool
secret_key(const char *key)
{
    static const char *const words[] = {"pass", "token", "sig", "jwt"};
    size_t len = strlen(key);
    char *f = nd_xmalloc(len + 1);
    size_t n = 0;
    for (const unsigned char *k = (const unsigned char *)key; *k;) {
        if (*k >= 'A' && *k <= 'Z') {
            f[n++] = (char)(*k++ | 0x20);
        } else if (k[0] == 0xC5 && k[1] == 0xBF) {
            f[n++] = 's';
            k += 2;
        } else if (k[0] == 0xE2 && k[1] == 0x84 && k[2] == 0xAA) {
            f[n++] = 'k';
            k += 3;
        } else {
            f[n++] = (char)*k++;
        }
    }
    f[n] = '\0';
    bool secret = false;
    for (size_t i = 0; i < sizeof words / sizeof words[0] && !secret; i++)
        secret = strstr(f, words[i]) != NULL;
    nd_free(f);
    return secret;
}

void
nd_gojson_redact(json_t *o)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *v;
        json_array_foreach(o, i, v)
        {
            nd_gojson_redact(v);
        }
        return;
    }
    if (!json_is_object(o))
        return;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (secret_key(key))
            json_object_set_new(o, key, json_string("[REDACTED]"));
        else
            nd_gojson_redact(v);
    }
}
