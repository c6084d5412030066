/* Per-message TTLs: the deadline heap and the headers the stores read (store_ttl.h). */
#include "js/store/store_ttl.h"
#include "util/natshdr.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"

#define NS_PER_S 1000000000LL

/* ---- the heap ---------------------------------------------------------------------------- */

static inline bool
before(const nd_store_ttl_ent_t *a, const nd_store_ttl_ent_t *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void
sift_up(nd_store_ttls_t *h, size_t i)
{
    nd_store_ttl_ent_t e = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&e, &h->v[p]))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
}

static void
sift_down(nd_store_ttls_t *h, size_t i)
{
    nd_store_ttl_ent_t e = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &e))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    h->v[i] = e;
}

void
nd_store_ttls_push(nd_store_ttls_t *h, int64_t at, uint64_t seq)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = nd_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->n] = (nd_store_ttl_ent_t){at, seq};
    sift_up(h, h->n++);
}

void
nd_store_ttls_add(nd_store_ttls_t *h, uint64_t seq, int64_t ts, int64_t ttl_s)
{
    if (ttl_s <= 0)
        return;
    if (ttl_s > (INT64_MAX - (ts > 0 ? ts : 0)) / NS_PER_S)
        return; /* past the end of time: never */
    nd_store_ttls_push(h, ts + ttl_s * NS_PER_S, seq);
}

bool
nd_store_ttls_pop(nd_store_ttls_t *h, int64_t now, uint64_t *seq)
{
    if (h->n == 0 || h->v[0].at > now)
        return false;
    *seq = h->v[0].seq;
    h->v[0] = h->v[--h->n];
    if (h->n)
        sift_down(h, 0);
    return true;
}

void
nd_store_ttls_filter(nd_store_ttls_t *h, bool (*keep)(void *arg, uint64_t seq), void *arg)
{
    size_t j = 0;
    for (size_t i = 0; i < h->n; i++)
        if (keep(arg, h->v[i].seq))
            h->v[j++] = h->v[i];
    h->n = j;
    /* Floyd's heap construction. */
    for (size_t i = h->n / 2; i-- > 0;)
        sift_down(h, i);
    if (h->cap > 64 && h->n * 4 < h->cap) {
        h->cap = h->n < 16 ? 16 : h->n * 2;
        h->v = nd_xrealloc(h->v, h->cap * sizeof *h->v);
    }
}

void
nd_store_ttls_trim(nd_store_ttls_t *h, uint64_t msgs, bool (*keep)(void *arg, uint64_t seq),
                   void *arg)
{
    if (h->n > 2 * msgs + 64)
        nd_store_ttls_filter(h, keep, arg);
}

void
nd_store_ttls_clear(nd_store_ttls_t *h)
{
    h->n = 0;
}

void
nd_store_ttls_free(nd_store_ttls_t *h)
{
    free(h->v);
    memset(h, 0, sizeof *h);
}

/* ---- headers ---------------------------------------------------------------------------- */


/* Go's time.ParseDuration, in nanoseconds. Returns: false when malformed or out of range. */
static bool
parse_go_duration(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) {
        neg = s[i] == '-';
        i++;
    }
    if (n - i == 1 && s[i] == '0') {
        *out = 0;
        return true;
    }
    if (i == n)
        return false;
    uint64_t total = 0;
    while (i < n) {
        uint64_t v = 0, f = 0, scale = 1;
        bool any = false;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (v > (UINT64_MAX - 9) / 10)
                return false;
            v = v * 10 + (uint64_t)(s[i] - '0');
            any = true;
        }
        if (i < n && s[i] == '.') {
            i++;
            for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
                any = true;
                if (scale < 1000000000000000000ULL) { /* further digits cannot matter */
                    f = f * 10 + (uint64_t)(s[i] - '0');
                    scale *= 10;
                }
            }
        }
        if (!any)
            return false;
        size_t u = i;
        while (i < n && s[i] != '.' && (s[i] < '0' || s[i] > '9'))
            i++;
        size_t ul = i - u;
        const char *us = s + u;
        uint64_t unit;
        if (ul == 2 && memcmp(us, "ns", 2) == 0)
            unit = 1;
        else if ((ul == 2 && memcmp(us, "us", 2) == 0) ||
                 (ul == 3 && (memcmp(us, "\xc2\xb5s", 3) == 0 || memcmp(us, "\xce\xbcs", 3) == 0)))
            unit = 1000;
        else if (ul == 2 && memcmp(us, "ms", 2) == 0)
            unit = 1000000;
        else if (ul == 1 && us[0] == 's')
            unit = 1000000000ULL;
        else if (ul == 1 && us[0] == 'm')
            unit = 60ULL * 1000000000ULL;
        else if (ul == 1 && us[0] == 'h')
            unit = 3600ULL * 1000000000ULL;
        else
            return false;
        if (v > (uint64_t)INT64_MAX / unit)
            return false;
        uint64_t add = v * unit;
        if (f)
            add += (uint64_t)((long double)f * (long double)unit / (long double)scale);
        total += add;
        if (total > (uint64_t)INT64_MAX)
            return false;
    }
    *out = neg ? -(int64_t)total : (int64_t)total;
    return true;
}

bool
nd_store_parse_ttl(const char *v, size_t n, int64_t *secs)
{
    if (n == 5 && strncasecmp(v, "never", 5) == 0) {
        *secs = -1;
        return true;
    }
    int64_t d;
    if (parse_go_duration(v, n, &d)) {
        if (d < NS_PER_S)
            return false;
        *secs = d / NS_PER_S;
        return true;
    }
    /* Whole seconds: digits only (nats-server's parseInt64, which has no sign). */
    if (n == 0 || n > 18)
        return false;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        s = s * 10 + (v[i] - '0');
    }
    *secs = s;
    return true;
}

int64_t
nd_store_hdr_ttl(const void *hdr, size_t len)
{
    size_t n;
    const char *v = nd_hdr_get(hdr, len, "Nats-TTL", &n);
    int64_t s;
    if (v == NULL || !nd_store_parse_ttl(v, n, &s))
        return 0;
    return s;
}

bool
nd_store_hdr_is_marker(const void *hdr, size_t len)
{
    size_t n;
    if (hdr == NULL || len == 0)
        return false;
    const char *v = nd_hdr_get(hdr, len, "Nats-Marker-Reason", &n);
    if (v != NULL && n > 0)
        return true;
    v = nd_hdr_get(hdr, len, "KV-Operation", &n);
    return v != NULL && n == 5 && memcmp(v, "PURGE", 5) == 0;
}
