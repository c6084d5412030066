/* Base64, RawURL and standard; see base64.h. */
#include "util/base64.h"

static const char url_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
nd_b64_encoded_len(nd_b64_kind_t kind, size_t n)
{
    if (kind == ND_B64_STD)
        return (n + 2) / 3 * 4;
    return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

size_t
nd_b64_encode(nd_b64_kind_t kind, const void *p, size_t n, char *out)
{
    const char *a = kind == ND_B64_STD ? std_alpha : url_alpha;
    const uint8_t *b = p;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = a[(v >> 6) & 63];
        out[o++] = a[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)b[i] << 16;
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        if (kind == ND_B64_STD) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8;
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = a[(v >> 6) & 63];
        if (kind == ND_B64_STD)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

static int
val(nd_b64_kind_t kind, unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (kind == ND_B64_RAWURL) {
        if (c == '-')
            return 62;
        if (c == '_')
            return 63;
    } else {
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
    }
    return -1;
}

bool
nd_b64_decode(nd_b64_kind_t kind, const char *s, size_t len, uint8_t *out, size_t cap,
              size_t *outlen)
{
    if (s == NULL)
        return false;
    if (kind == ND_B64_STD) {
        /* Padded: a multiple of 4, with at most two '=' at the very end. */
        if (len % 4 != 0)
            return false;
        if (len > 0 && s[len - 1] == '=') {
            len--;
            if (s[len - 1] == '=')
                len--;
        }
    }
    if (len % 4 == 1)
        return false;
    size_t need = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    if (need > cap)
        return false;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = val(kind, (unsigned char)s[i]);
        if (v < 0)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            out[o++] = (uint8_t)(acc >> (bits - 8));
            bits -= 8;
        }
    }
    *outlen = o;
    return true;
}
