/* MQTT 3.1.1 packet fields and topic conversion; see mqtt_codec.h. */
#include "mqtt/mqtt_codec.h"

#include <string.h>

nd_mqtt_hdr_status_t
nd_mqtt_read_header(const uint8_t *buf, size_t len, uint8_t *type_flags, uint32_t *rem,
                    size_t *hdr_len)
{
    if (len < 2)
        return ND_MQTT_HDR_MORE;
    uint32_t v = 0;
    for (size_t i = 1; i <= 4; i++) {
        if (i >= len)
            return ND_MQTT_HDR_MORE;
        v |= (uint32_t)(buf[i] & 0x7f) << (7 * (i - 1));
        if ((buf[i] & 0x80) == 0) {
            *type_flags = buf[0];
            *rem = v;
            *hdr_len = i + 1;
            return ND_MQTT_HDR_OK;
        }
    }
    return ND_MQTT_HDR_MALFORMED; /* the fourth length byte says more follow */
}

size_t
nd_mqtt_put_remaining(uint8_t *p, uint32_t n)
{
    size_t k = 0;
    do {
        uint8_t b = (uint8_t)(n & 0x7f);
        n >>= 7;
        if (n > 0)
            b |= 0x80;
        p[k++] = b;
    } while (n > 0 && k < 4);
    return k;
}

bool
nd_mqtt_read_u8(nd_mqtt_reader_t *r, uint8_t *v)
{
    if (r->off + 1 > r->len)
        return false;
    *v = r->p[r->off++];
    return true;
}

bool
nd_mqtt_read_u16(nd_mqtt_reader_t *r, uint16_t *v)
{
    if (r->off + 2 > r->len)
        return false;
    *v = (uint16_t)((r->p[r->off] << 8) | r->p[r->off + 1]);
    r->off += 2;
    return true;
}

bool
nd_mqtt_read_bytes(nd_mqtt_reader_t *r, const uint8_t **s, size_t *n)
{
    uint16_t l;
    if (!nd_mqtt_read_u16(r, &l) || r->off + l > r->len)
        return false;
    *s = r->p + r->off;
    *n = l;
    r->off += l;
    return true;
}

bool
nd_mqtt_valid_string(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        if (b == 0)
            return false;
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if ((b & 0xe0) == 0xc0) {
            k = 1;
            cp = b & 0x1f;
        } else if ((b & 0xf0) == 0xe0) {
            k = 2;
            cp = b & 0x0f;
        } else if ((b & 0xf8) == 0xf0) {
            k = 3;
            cp = b & 0x07;
        } else {
            return false;
        }
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        /* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
        i += k + 1;
    }
    return true;
}

nd_mqtt_topic_status_t
nd_mqtt_topic_to_subject(const uint8_t *t, size_t n, bool filter, bool dots, char *out,
                         size_t *out_len)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = t[i];
        switch (ch) {
        case '/':
            if (i == 0 || out[j - 1] == '.') {
                /* An empty level before this separator. */
                out[j++] = '/';
                out[j++] = '.';
            } else if (i == n - 1 || t[i + 1] == '/') {
                /* An empty level after it. */
                out[j++] = '.';
                out[j++] = '/';
            } else {
                out[j++] = '.';
            }
            break;
        case ' ':
        case '\t':
        case '\n':
        case '\r':
        case '\f':
        case 0x7f:
            return ND_MQTT_TOPIC_SPACE;
        case '.':
            if (!dots)
                return ND_MQTT_TOPIC_DOT;
            out[j++] = '/';
            out[j++] = '/';
            break;
        case '+':
        case '#':
            if (!filter)
                return ND_MQTT_TOPIC_WILDCARD;
            out[j++] = ch == '+' ? '*' : '>';
            break;
        default:
            out[j++] = (char)ch;
            break;
        }
    }
    if (j > 0 && out[j - 1] == '.')
        out[j++] = '/'; /* an empty last level */
    out[j] = '\0';
    *out_len = j;
    return ND_MQTT_TOPIC_OK;
}

size_t
nd_mqtt_subject_to_topic(const char *s, size_t n, bool dots, uint8_t *out)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '/' && !dots) {
            /* 2.9.10: "/." marks an empty level, a '.' followed by '/' is one separator, any
             * other '/' is itself. */
            if (i + 1 < n && s[i + 1] == '.')
                continue;
            out[j++] = '/';
        } else if (ch == '.' && !dots) {
            out[j++] = '/';
            if (i + 1 < n && s[i + 1] == '/')
                i++;
        } else if (ch == '/') {
            if (i + 1 < n && (s[i + 1] == '.' || s[i + 1] == '/')) {
                out[j++] = s[i + 1] == '.' ? '/' : '.';
                i++;
            }
            /* a lone '/' marked an empty level: nothing of its own */
        } else if (ch == '.') {
            out[j++] = '/';
        } else {
            out[j++] = (uint8_t)ch;
        }
    }
    return j;
}

bool
nd_mqtt_needs_parent_sub(const char *subject, size_t n)
{
    return n >= 3 && subject[n - 2] == '.' && subject[n - 1] == '>';
}

bool
nd_mqtt_filter_reserved(const char *subject, size_t n)
{
    if (n == 1 && (subject[0] == '>' || subject[0] == '*'))
        return true;
    return n > 1 && subject[0] == '*' && subject[1] == '.';
}
