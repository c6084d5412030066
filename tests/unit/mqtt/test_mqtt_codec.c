/* MQTT packet fields and topic conversion (src/mqtt/mqtt_codec.c); the expected subjects are
 * nats-server's (mqttToNATSSubjectConversion / natsSubjectToMQTTTopic). */
#include <criterion/criterion.h>
#include <string.h>

#include "mqtt/mqtt_codec.h"

static nd_mqtt_topic_status_t
conv(const char *topic, bool filter, char *out)
{
    size_t n;
    return nd_mqtt_topic_to_subject((const uint8_t *)topic, strlen(topic), filter, true, out, &n);
}

static void
check(const char *topic, bool filter, const char *want)
{
    char out[256];
    cr_assert_eq(conv(topic, filter, out), ND_MQTT_TOPIC_OK, "%s", topic);
    cr_assert_str_eq(out, want, "%s", topic);
}

Test(mqtt_codec, topic_to_subject)
{
    check("foo", false, "foo");
    check("foo/bar", false, "foo.bar");
    check("foo/bar/baz", false, "foo.bar.baz");
    check("/foo", false, "/.foo");
    check("foo/", false, "foo./");
    check("/foo/", false, "/.foo./");
    check("foo//bar", false, "foo./.bar");
    check("foo///bar", false, "foo././.bar");
    check("/", false, "/./");
    check("//", false, "/././");
    check("foo.bar", false, "foo//bar");
    check("foo.bar/baz", false, "foo//bar.baz");
    check("$SYS/x", false, "$SYS.x");
}

Test(mqtt_codec, filter_to_subject)
{
    check("foo/+", true, "foo.*");
    check("foo/#", true, "foo.>");
    check("+/bar/#", true, "*.bar.>");
    check("#", true, ">");
    check("+", true, "*");
    check("/+/", true, "/.*./");
}

Test(mqtt_codec, topic_refusals)
{
    char out[64];
    cr_assert_eq(conv("foo bar", false, out), ND_MQTT_TOPIC_SPACE);
    cr_assert_eq(conv("foo\tbar", true, out), ND_MQTT_TOPIC_SPACE);
    cr_assert_eq(conv("foo/+", false, out), ND_MQTT_TOPIC_WILDCARD);
    cr_assert_eq(conv("foo/#", false, out), ND_MQTT_TOPIC_WILDCARD);
}

static void
back(const char *subject, const char *want)
{
    uint8_t out[256];
    size_t n = nd_mqtt_subject_to_topic(subject, strlen(subject), true, out);
    cr_assert_eq(n, strlen(want), "%s", subject);
    cr_assert(memcmp(out, want, n) == 0, "%s -> %.*s", subject, (int)n, out);
}

Test(mqtt_codec, subject_to_topic)
{
    back("foo", "foo");
    back("foo.bar", "foo/bar");
    back("/.foo", "/foo");
    back("foo./", "foo/");
    back("foo./.bar", "foo//bar");
    back("foo//bar", "foo.bar");
    back("/./", "/");
}

Test(mqtt_codec, round_trip)
{
    const char *topics[] = {"a", "a/b", "/a", "a/", "a//b", "a.b", "/", "x/y.z/", "a///b/"};
    for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++) {
        char subj[64];
        uint8_t t[64];
        size_t n;
        cr_assert_eq(nd_mqtt_topic_to_subject((const uint8_t *)topics[i], strlen(topics[i]), false,
                                              true, subj, &n),
                     ND_MQTT_TOPIC_OK);
        size_t k = nd_mqtt_subject_to_topic(subj, n, true, t);
        cr_assert(k == strlen(topics[i]) && memcmp(t, topics[i], k) == 0, "%s -> %s -> %.*s",
                  topics[i], subj, (int)k, t);
    }
}

Test(mqtt_codec, parent_and_reserved)
{
    cr_assert(nd_mqtt_needs_parent_sub("foo.>", 5));
    cr_assert_not(nd_mqtt_needs_parent_sub(">", 1));
    cr_assert_not(nd_mqtt_needs_parent_sub("foo.*", 5));
    cr_assert(nd_mqtt_filter_reserved(">", 1));
    cr_assert(nd_mqtt_filter_reserved("*", 1));
    cr_assert(nd_mqtt_filter_reserved("*.foo", 5));
    cr_assert_not(nd_mqtt_filter_reserved("foo.>", 5));
    cr_assert_not(nd_mqtt_filter_reserved("*foo", 4));
}

Test(mqtt_codec, remaining_length)
{
    const uint32_t vals[] = {0, 1, 127, 128, 16383, 16384, 2097151, 2097152, ND_MQTT_MAX_REMAINING};
    const size_t sizes[] = {1, 1, 1, 2, 2, 3, 3, 4, 4};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[8] = {0x30};
        size_t k = nd_mqtt_put_remaining(buf + 1, vals[i]);
        cr_assert_eq(k, sizes[i]);
        uint8_t tf;
        uint32_t rem;
        size_t hl;
        cr_assert_eq(nd_mqtt_read_header(buf, 1 + k, &tf, &rem, &hl), ND_MQTT_HDR_OK);
        cr_assert_eq(rem, vals[i]);
        cr_assert_eq(hl, 1 + k);
        cr_assert_eq(tf, 0x30);
        /* One byte short of the header is "more". */
        cr_assert_eq(nd_mqtt_read_header(buf, k, &tf, &rem, &hl), ND_MQTT_HDR_MORE);
    }
    const uint8_t five[] = {0x30, 0xff, 0xff, 0xff, 0xff, 0x01};
    uint8_t tf;
    uint32_t rem;
    size_t hl;
    cr_assert_eq(nd_mqtt_read_header(five, sizeof five, &tf, &rem, &hl), ND_MQTT_HDR_MALFORMED);
    cr_assert_eq(nd_mqtt_read_header(five, 5, &tf, &rem, &hl), ND_MQTT_HDR_MALFORMED);
    cr_assert_eq(nd_mqtt_read_header(five, 4, &tf, &rem, &hl), ND_MQTT_HDR_MORE);
}

Test(mqtt_codec, reader)
{
    const uint8_t p[] = {0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x00};
    nd_mqtt_reader_t r = {.p = p, .len = sizeof p, .off = 0};
    const uint8_t *s;
    size_t n;
    uint8_t b;
    uint16_t w;
    cr_assert(nd_mqtt_read_bytes(&r, &s, &n));
    cr_assert_eq(n, 4);
    cr_assert(memcmp(s, "MQTT", 4) == 0);
    cr_assert(nd_mqtt_read_u8(&r, &b));
    cr_assert_eq(b, 4);
    cr_assert_not(nd_mqtt_read_u16(&r, &w)); /* one byte left */
    const uint8_t bad[] = {0x00, 0x09, 'a'};
    nd_mqtt_reader_t r2 = {.p = bad, .len = sizeof bad, .off = 0};
    cr_assert_not(nd_mqtt_read_bytes(&r2, &s, &n));
}

Test(mqtt_codec, utf8)
{
    cr_assert(nd_mqtt_valid_string((const uint8_t *)"abc", 3));
    cr_assert(nd_mqtt_valid_string((const uint8_t *)"\xc3\xa9t\xc3\xa9", 5));
    cr_assert(nd_mqtt_valid_string((const uint8_t *)"\xf0\x9f\x98\x80", 4));
    cr_assert_not(nd_mqtt_valid_string((const uint8_t *)"a\0b", 3));
    cr_assert_not(nd_mqtt_valid_string((const uint8_t *)"\xc3", 1));
    cr_assert_not(nd_mqtt_valid_string((const uint8_t *)"\xc0\x80", 2));     /* overlong NUL */
    cr_assert_not(nd_mqtt_valid_string((const uint8_t *)"\xed\xa0\x80", 3)); /* surrogate */
    cr_assert_not(nd_mqtt_valid_string((const uint8_t *)"\xff", 1));
}

/* nats-server 2.9.10 (what the sessions use): a '.' in a topic is refused, and a subject's "//"
 * stays "//" on its way to MQTT. */
Test(mqtt_codec, v2910_dots)
{
    char out[64];
    size_t n;
    cr_assert_eq(nd_mqtt_topic_to_subject((const uint8_t *)"a.b", 3, false, false, out, &n),
                 ND_MQTT_TOPIC_DOT);
    cr_assert_eq(nd_mqtt_topic_to_subject((const uint8_t *)"a/b", 3, false, false, out, &n),
                 ND_MQTT_TOPIC_OK);
    cr_assert_str_eq(out, "a.b");
    static const struct {
        const char *subject, *topic;
    } cases[] = {{"x.b//c", "x/b//c"}, {"x./.d", "x//d"}, {"a./", "a/"},
                 {"/.a", "/a"},        {"/./", "/"},      {"/././", "//"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t t[64];
        size_t k = nd_mqtt_subject_to_topic(cases[i].subject, strlen(cases[i].subject), false, t);
        cr_assert(k == strlen(cases[i].topic) && memcmp(t, cases[i].topic, k) == 0, "%s -> %.*s",
                  cases[i].subject, (int)k, t);
    }
}

Test(mqtt_codec, fixed_flags)
{
    cr_assert_eq(nd_mqtt_fixed_flags(ND_MQTT_SUBSCRIBE), 2);
    cr_assert_eq(nd_mqtt_fixed_flags(ND_MQTT_UNSUBSCRIBE), 2);
    cr_assert_eq(nd_mqtt_fixed_flags(ND_MQTT_PUBREL), 2);
    cr_assert_eq(nd_mqtt_fixed_flags(ND_MQTT_CONNECT), 0);
    cr_assert_eq(nd_mqtt_fixed_flags(ND_MQTT_PINGREQ), 0);
}
