/* Unit tests of Go-compatible decoding of client JSON (src/net/gojson.c). The expected
 * decodings are Go 1.19's encoding/json (the one nats-server 2.9.10 is built with); the
 * protocol-level behaviour is checked against that binary in tests/integ/test_proto.c. */
#include <criterion/criterion.h>

#include <string.h>

#include "util/gojson.h"

/* Decodes text and returns the string value of key "s" (the object is leaked into *keep). */
static const char *
str_of(const char *text, json_t **keep)
{
    *keep = nd_gojson_load_object(text, strlen(text));
    cr_assert_not_null(*keep, "%s refused", text);
    json_t *v = json_object_get(*keep, "s");
    cr_assert(json_is_string(v), "%s: no string s", text);
    return json_string_value(v);
}

Test(gojson, invalid_utf8_becomes_replacement_per_byte)
{
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"{\"s\":\"a\xff"
         "b\"}",
         "a\xEF\xBF\xBD"
         "b"},
        {"{\"s\":\"\xc0\xaf\"}", "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* overlong */
        {"{\"s\":\"\xed\xa0\x80\"}", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate */
        {"{\"s\":\"\xf4\x90\x80\x80\"}",
         "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* above U+10FFFF */
        {"{\"s\":\"\xc3(\"}", "\xEF\xBF\xBD("},               /* truncated */
        {"{\"s\":\"\xe2\x82\"}", "\xEF\xBF\xBD\xEF\xBF\xBD"}, /* truncated at the quote */
        {"{\"s\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
         "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *o;
        cr_assert_str_eq(str_of(rows[i].in, &o), rows[i].want, "row %zu", i);
        json_decref(o);
    }
}

Test(gojson, surrogates_and_nul_escapes)
{
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"{\"s\":\"\\ud800\"}", "\xEF\xBF\xBD"},
        {"{\"s\":\"\\udc00x\"}", "\xEF\xBF\xBDx"},
        {"{\"s\":\"\\ud800\\u0041\"}", "\xEF\xBF\xBD"
                                       "A"},
        {"{\"s\":\"\\ud800\\ud800\\udc00\"}", "\xEF\xBF\xBD\xF0\x90\x80\x80"},
        {"{\"s\":\"\\uD83D\\uDE00\"}", "\xF0\x9F\x98\x80"},
        {"{\"s\":\"a\\u0000b\"}", "a\xEF\xBF\xBD"
                                  "b"},
        {"{\"s\":\"\\\\ud800\"}", "\\ud800"}, /* an escaped backslash, not an escape */
        {"{\"s\":\"\\\"\\u00e9\"}", "\"\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *o;
        cr_assert_str_eq(str_of(rows[i].in, &o), rows[i].want, "row %zu", i);
        json_decref(o);
    }
    /* Keys are strings too. */
    const char *keys = "{\"\\u0000\":1,\"k\xff\":2}";
    json_t *o = nd_gojson_load_object(keys, strlen(keys));
    cr_assert_not_null(o);
    cr_assert_not_null(json_object_get(o, "\xEF\xBF\xBD"));
    cr_assert_not_null(json_object_get(o, "k\xEF\xBF\xBD"));
    json_decref(o);
}

Test(gojson, what_go_refuses_or_leaves)
{
    static const char *const refused[] = {
        "",
        "{",
        "[1]",
        "true",
        "1",
        "\"x\"",
        "{}x",
        "{\"s\":\"\\ud80\"}",
        "{\"s\":\"\\x\"}",
        "{\"s\":\"a\x01\"}",
        "{\xff:1}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        cr_assert_null(nd_gojson_load_object(refused[i], strlen(refused[i])), "%s", refused[i]);
    /* null leaves the struct alone: an empty object. */
    json_t *o = nd_gojson_load_object(" null ", 6);
    cr_assert(json_is_object(o) && json_object_size(o) == 0);
    json_decref(o);
}

Test(gojson, key_matching_folds_as_go)
{
    cr_assert(nd_gojson_key_is("pass", "pass"));
    cr_assert(nd_gojson_key_is("PASS", "pass"));
    cr_assert(nd_gojson_key_is("Auth_Token", "auth_token"));
    cr_assert(nd_gojson_key_is("pa\xc5\xbf\xc5\xbf", "pass")); /* U+017F long s */
    cr_assert(nd_gojson_key_is("n\xe2\x84\xaa"
                               "ey",
                               "nkey"));                      /* U+212A Kelvin sign */
    cr_assert(!nd_gojson_key_is("auth-token", "auth_token")); /* non-letters exact */
    cr_assert(!nd_gojson_key_is("auth\x7ftoken", "auth_token"));
    cr_assert(!nd_gojson_key_is("pas", "pass"));
    cr_assert(!nd_gojson_key_is("passw", "pass"));
    cr_assert(!nd_gojson_key_is("p\xc3\xa1ss", "pass"));
    cr_assert(!nd_gojson_key_is("\xc5\xbfig", "jwt")); /* long s is only 's' */
    cr_assert(!nd_gojson_key_is("e\xe2\x84\xaa"
                                "ho",
                                "echo"));
    cr_assert(!nd_gojson_key_is("", "pass"));
}

Test(gojson, last_non_null_key_wins)
{
    const char *t = "{\"pass\":\"a\",\"PASS\":\"b\",\"Pass\":null,\"other\":\"c\"}";
    json_t *o = nd_gojson_load_object(t, strlen(t));
    cr_assert_str_eq(json_string_value(nd_gojson_field(o, "pass")), "b");
    cr_assert_null(nd_gojson_field(o, "user"));
    json_decref(o);
    t = "{\"user\":null}";
    o = nd_gojson_load_object(t, strlen(t));
    cr_assert_null(nd_gojson_field(o, "user"));
    json_decref(o);
}

Test(gojson, redaction)
{
    const char *t = "{\"name\":\"n\",\"PASS\":\"1\",\"my_password\":2,\"Auth_Token\":\"3\","
                    "\"SIG\":[4],\"x\":{\"Jwt\":\"5\",\"l\":[{\"tokens\":{\"y\":6}}]},"
                    "\"pa\xc5\xbf\xc5\xbf\":\"7\",\"user_jwt\":null,\"design\":\"8\"}";
    json_t *o = nd_gojson_load_object(t, strlen(t));
    cr_assert_not_null(o);
    nd_gojson_redact(o);
    char *js = json_dumps(o, JSON_COMPACT);
    cr_assert_str_eq(js,
                     "{\"name\":\"n\",\"PASS\":\"[REDACTED]\",\"my_password\":\"[REDACTED]\","
                     "\"Auth_Token\":\"[REDACTED]\",\"SIG\":\"[REDACTED]\",\"x\":{\"Jwt\":"
                     "\"[REDACTED]\",\"l\":[{\"tokens\":\"[REDACTED]\"}]},\"pa\xc5\xbf\xc5\xbf\":"
                     "\"[REDACTED]\",\"user_jwt\":\"[REDACTED]\",\"design\":\"[REDACTED]\"}");
    free(js);
    json_decref(o);
}
