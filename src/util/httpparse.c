/* HTTP/1.x request parsing; see httpparse.h. */
#include "util/httpparse.h"
#include "util/hex.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar. */
static bool
is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

bool
nd_http_ieq(const char *a, size_t alen, const char *b)
{
    return alen == strlen(b) && strncasecmp(a, b, alen) == 0;
}

void
nd_http_trim(const char **p, size_t *n)
{
    while (*n > 0 && (**p == ' ' || **p == '\t')) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

int
nd_http_parse(const char *buf, size_t len, nd_http_req_t *pr)
{
    memset(pr, 0, sizeof(*pr));
    /* The request line: refuse early what cannot be one (binary bytes, an endless line). */
    const char *nl = memchr(buf, '\n', len < ND_HTTP_MAX_LINE ? len : ND_HTTP_MAX_LINE);
    size_t scan =
        nl != NULL ? (size_t)(nl - buf) : (len < ND_HTTP_MAX_LINE ? len : ND_HTTP_MAX_LINE);
    size_t sp1 = 0;
    while (sp1 < scan && buf[sp1] != ' ')
        if (!is_tchar((unsigned char)buf[sp1++]))
            return 400;
    for (size_t i = 0; i < scan; i++) {
        unsigned char c = (unsigned char)buf[i];
        if ((c < 0x20 && c != '\r' && c != '\t') || c == 0x7f)
            return 400;
    }
    if (nl == NULL)
        return len >= ND_HTTP_MAX_LINE ? 414 : 0;
    size_t line_len = scan;
    if (line_len > 0 && buf[line_len - 1] == '\r')
        line_len--;
    const char *sp = memchr(buf, ' ', line_len);
    const char *sp2 = sp != NULL ? memchr(sp + 1, ' ', line_len - (size_t)(sp + 1 - buf)) : NULL;
    if (sp == NULL || sp2 == NULL || sp == buf || sp2 == sp + 1)
        return 400;
    pr->method = buf;
    pr->method_len = (size_t)(sp - buf);
    pr->target = sp + 1;
    pr->target_len = (size_t)(sp2 - sp - 1);
    const char *ver = sp2 + 1;
    size_t ver_len = line_len - (size_t)(ver - buf);
    if (ver_len == 8 && memcmp(ver, "HTTP/1.1", 8) == 0)
        pr->http11 = true;
    else if (!(ver_len == 8 && memcmp(ver, "HTTP/1.0", 8) == 0))
        return 400;
    pr->keep = pr->http11;

    /* Header lines up to an empty one. */
    size_t pos = (size_t)(nl - buf) + 1;
    size_t nheaders = 0;
    int64_t clen = -1;
    for (;;) {
        size_t avail = len - pos;
        const char *e = memchr(buf + pos, '\n', avail);
        if (e == NULL)
            return len >= ND_HTTP_MAX_HEAD ? 431 : 0;
        if ((size_t)(e - buf) + 1 > ND_HTTP_MAX_HEAD)
            return 431;
        const char *l = buf + pos;
        size_t ll = (size_t)(e - l);
        pos = (size_t)(e - buf) + 1;
        if (ll > 0 && l[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            break;
        if (++nheaders > ND_HTTP_MAX_HEADERS)
            return 431;
        const char *colon = memchr(l, ':', ll);
        if (colon == NULL || colon == l)
            return 400;
        for (const char *q = l; q < colon; q++)
            if (!is_tchar((unsigned char)*q))
                return 400; /* also a folded line or a space before the colon */
        for (size_t i = 0; i < ll; i++)
            if ((unsigned char)l[i] < 0x20 && l[i] != '\t')
                return 400;
        size_t nlen = (size_t)(colon - l);
        const char *v = colon + 1;
        size_t vl = ll - nlen - 1;
        nd_http_trim(&v, &vl);
        if (nd_http_ieq(l, nlen, "content-length")) {
            int64_t n = 0;
            if (vl == 0 || vl > 18)
                return vl == 0 ? 400 : 413;
            for (size_t i = 0; i < vl; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return 400;
                n = n * 10 + (v[i] - '0');
            }
            if (clen >= 0 && clen != n)
                return 400;
            clen = n;
        } else if (nd_http_ieq(l, nlen, "transfer-encoding")) {
            return 501;
        } else if (nd_http_ieq(l, nlen, "connection")) {
            if (nd_http_ieq(v, vl, "close"))
                pr->keep = false;
            else if (nd_http_ieq(v, vl, "keep-alive"))
                pr->keep = true;
        } else if (nd_http_ieq(l, nlen, "authorization")) {
            pr->authz = v;
            pr->authz_len = vl;
        } else if (nd_http_ieq(l, nlen, "accept")) {
            pr->accept = v;
            pr->accept_len = vl;
        }
    }
    if (clen > ND_HTTP_MAX_BODY)
        return 413;
    if (clen > 0 && len - pos < (size_t)clen)
        return 0;
    pr->total = pos + (size_t)(clen > 0 ? clen : 0);
    return 1;
}

/* The q parameter of one media range's parameters p[0..n) (";q=0.5;..."), 1 when absent, -1
 * when malformed (the range is then ignored). Thousandths, as RFC 9110 allows three digits. */
static int
accept_q(const char *p, size_t n)
{
    int q = 1000;
    while (n > 0) {
        const char *semi = memchr(p, ';', n);
        size_t pl = semi != NULL ? (size_t)(semi - p) : n;
        const char *a = p;
        size_t al = pl;
        nd_http_trim(&a, &al);
        if (al >= 2 && (a[0] == 'q' || a[0] == 'Q') && a[1] == '=') {
            a += 2;
            al -= 2;
            if (al == 0 || (a[0] != '0' && a[0] != '1'))
                return -1;
            q = (a[0] - '0') * 1000;
            size_t i = 1;
            if (i < al && a[i] == '.') {
                int scale = 100;
                for (i++; i < al && scale > 0; i++, scale /= 10) {
                    if (a[i] < '0' || a[i] > '9')
                        return -1;
                    q += (a[i] - '0') * scale;
                }
            }
            if (i != al || q > 1000)
                return -1;
        }
        if (semi == NULL)
            break;
        n -= pl + 1;
        p = semi + 1;
    }
    return q;
}

bool
nd_http_accepts_openmetrics(const char *v, size_t n)
{
    int om = -1, text = -1;
    while (v != NULL && n > 0) {
        const char *comma = memchr(v, ',', n);
        size_t rl = comma != NULL ? (size_t)(comma - v) : n;
        const char *semi = memchr(v, ';', rl);
        const char *t = v;
        size_t tl = semi != NULL ? (size_t)(semi - v) : rl;
        nd_http_trim(&t, &tl);
        int q = semi != NULL ? accept_q(semi + 1, rl - (size_t)(semi + 1 - v)) : 1000;
        if (nd_http_ieq(t, tl, "application/openmetrics-text")) {
            if (q > om)
                om = q;
        } else if (nd_http_ieq(t, tl, "text/plain") || nd_http_ieq(t, tl, "text/*") ||
                   nd_http_ieq(t, tl, "*/*")) {
            if (q > text)
                text = q;
        }
        if (comma == NULL)
            break;
        n -= rl + 1;
        v = comma + 1;
    }
    return om > 0 && om >= text;
}

bool
nd_http_pct_decode(const char *s, size_t n, char *out, bool plus)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n)
                return false;
            int a = nd_hex_value(s[i + 1]), b = nd_hex_value(s[i + 2]);
            if (a < 0 || b < 0)
                return false;
            out[o++] = (char)(a * 16 + b);
            i += 2;
        } else {
            out[o++] = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    out[o] = '\0';
    return true;
}

bool
nd_http_header(const char *buf, const nd_http_req_t *pr, const char *name, size_t idx,
               const char **v, size_t *vn)
{
    const char *end = buf + pr->total;
    const char *l = memchr(buf, '\n', pr->total); /* the request line (parsed: it has one) */
    for (l = l + 1; l < end;) {
        const char *e = memchr(l, '\n', (size_t)(end - l));
        if (e == NULL)
            return false;
        size_t ll = (size_t)(e - l);
        if (ll > 0 && l[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            return false; /* the end of the headers */
        const char *colon = memchr(l, ':', ll);
        if (colon != NULL && nd_http_ieq(l, (size_t)(colon - l), name) && idx-- == 0) {
            *v = colon + 1;
            *vn = ll - (size_t)(colon - l) - 1;
            nd_http_trim(v, vn);
            return true;
        }
        l = e + 1;
    }
    return false;
}
