/* The JetStream API error table (js/jserr.h): exact rows checked against nats-server's
 * errors.json, the table's invariants, placeholder substitution, bounded descriptions and the
 * JSON nats-server sends ({"code","err_code","description"} in that order).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "js/jserr.h"

static void
expect_row(nd_jse_t e, int code, int err_code, const char *desc)
{
    const nd_jse_info_t *i = nd_jse_info(e);
    cr_assert_not_null(i);
    cr_expect_eq(i->code, code);
    cr_expect_eq(i->err_code, err_code);
    cr_expect_str_eq(i->desc, desc);
}

Test(jserr, exact_rows)
{
    expect_row(ND_JSE_STREAM_NOT_FOUND, 404, 10059, "stream not found");
    expect_row(ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, 400, 10071, "wrong last sequence: {seq}");
    expect_row(ND_JSE_STREAM_INVALID_CONFIG_F, 500, 10052, "{err}");
    expect_row(ND_JSE_NOT_ENABLED_FOR_ACCOUNT, 503, 10039, "JetStream not enabled for account");
    expect_row(ND_JSE_STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, 400, 10022,
               "stream external delivery prefix {prefix} overlaps with stream subject {subject}");
    expect_row(ND_JSE_CONSUMER_MAX_REQUEST_BATCH_EXCEEDED_F, 400, 10125,
               "consumer max request batch exceeds server limit of {limit}");
    expect_row(ND_JSE_CONSUMER_BAD_DURABLE_NAME, 400, 10103,
               "durable name can not contain '.', '*', '>'");
    expect_row(ND_JSE_STREAM_DUPLICATE_MESSAGE_CONFLICT, 409, 10158,
               "duplicate message id is in process");
}

Test(jserr, info_out_of_range)
{
    cr_expect_null(nd_jse_info(ND_JSE_NONE));
    cr_expect_null(nd_jse_info(ND_JSE_COUNT));
    cr_expect_null(nd_jse_info((nd_jse_t)-1));
}

Test(jserr, err_codes_unique_nonzero)
{
    cr_assert_geq(ND_JSE_COUNT - 1, 220, "the whole errors.json table is there");
    for (int a = ND_JSE_NONE + 1; a < ND_JSE_COUNT; a++) {
        const nd_jse_info_t *ia = nd_jse_info((nd_jse_t)a);
        cr_assert_not_null(ia);
        cr_expect_gt(ia->err_code, 0, "entry %d", a);
        cr_expect_geq(ia->code, 400, "entry %d", a);
        cr_expect_lt(ia->code, 600, "entry %d", a);
        cr_expect_not_null(ia->desc);
        cr_expect_gt(strlen(ia->desc), 0);
        for (int b = a + 1; b < ND_JSE_COUNT; b++)
            cr_expect_neq(ia->err_code, nd_jse_info((nd_jse_t)b)->err_code, "entries %d, %d", a, b);
    }
}

Test(jserr, set_one_placeholder)
{
    nd_jserr_t err;
    cr_expect_not(nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", "42", NULL));
    cr_expect_eq(err.e, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F);
    cr_expect_eq(err.code, 400);
    cr_expect_eq(err.err_code, 10071);
    cr_expect_str_eq(err.desc, "wrong last sequence: 42");
}

Test(jserr, set_no_placeholders)
{
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_STREAM_NOT_FOUND, NULL);
    cr_expect_str_eq(err.desc, "stream not found");
    cr_expect_eq(err.code, 404);
}

Test(jserr, set_several_placeholders_any_order)
{
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, "subject", "foo.>", "prefix",
                 "dlv", NULL);
    cr_expect_str_eq(err.desc,
                     "stream external delivery prefix dlv overlaps with stream subject foo.>");

    nd_jserr_set(&err, ND_JSE_RESTORE_SUBSCRIBE_FAILED_F, "err", "boom", "subject", "$JS.x", NULL);
    cr_expect_str_eq(err.desc, "JetStream unable to subscribe to restore snapshot $JS.x: boom");
}

Test(jserr, missing_placeholder_left_as_written)
{
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, "prefix", "dlv", NULL);
    cr_expect_str_eq(err.desc,
                     "stream external delivery prefix dlv overlaps with stream subject {subject}");
    /* A value that itself looks like a placeholder is not substituted again. */
    nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", "{seq}", NULL);
    cr_expect_str_eq(err.desc, "wrong last sequence: {seq}");
}

Test(jserr, setf_formats_err)
{
    nd_jserr_t err;
    cr_expect_not(nd_jserr_setf(&err, ND_JSE_STREAM_RESTORE_F, "%s at %d", "bad block", 7));
    cr_expect_eq(err.code, 500);
    cr_expect_eq(err.err_code, 10062);
    cr_expect_str_eq(err.desc, "restore failed: bad block at 7");

    nd_jserr_setf(&err, ND_JSE_STREAM_INVALID_CONFIG_F, "max_age %s", "must be positive");
    cr_expect_str_eq(err.desc, "max_age must be positive");
}

Test(jserr, truncation_is_bounded)
{
    char big[4096];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';

    nd_jserr_t err;
    memset(&err, 0x55, sizeof(err));
    nd_jserr_set(&err, ND_JSE_STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, "prefix", big, "subject", big,
                 NULL);
    cr_expect_eq(strlen(err.desc), sizeof(err.desc) - 1);
    cr_expect_eq(strncmp(err.desc, "stream external delivery prefix xxx", 35), 0);
    cr_expect_eq(err.err_code, 10022, "fields after desc untouched by the fill");

    nd_jserr_setf(&err, ND_JSE_STREAM_RESTORE_F, "%s", big);
    cr_expect_eq(strlen(err.desc), sizeof(err.desc) - 1);
    cr_expect_eq(strncmp(err.desc, "restore failed: xxx", 19), 0);

    json_t *j = nd_jserr_json(&err);
    cr_assert_not_null(json_object_get(j, "description"));
    json_decref(j);
}

Test(jserr, truncation_keeps_utf8_whole)
{
    /* 2-byte characters placed so the cut falls in the middle of one. */
    char big[2048];
    size_t n = 0;
    big[n++] = 'a';
    while (n + 2 < sizeof(big)) {
        big[n++] = (char)0xC3;
        big[n++] = (char)0xA9; /* é */
    }
    big[n] = '\0';
    nd_jserr_t err;
    for (int shift = 0; shift < 2; shift++) {
        nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", big + shift, NULL);
        cr_expect_lt(strlen(err.desc), sizeof(err.desc));
        json_t *j = nd_jserr_json(&err);
        const char *d = json_string_value(json_object_get(j, "description"));
        cr_assert_not_null(d);
        cr_expect_str_eq(d, err.desc, "cut on a character boundary, so valid UTF-8 as is");
        json_decref(j);

        nd_jserr_setf(&err, ND_JSE_STREAM_INVALID_CONFIG_F, "%s", big + shift);
        j = nd_jserr_json(&err);
        d = json_string_value(json_object_get(j, "description"));
        cr_assert_not_null(d);
        cr_expect_str_eq(d, err.desc);
        json_decref(j);
    }
}

Test(jserr, json_replaces_invalid_utf8)
{
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq",
                 "a\xff"
                 "b",
                 NULL);
    json_t *j = nd_jserr_json(&err);
    cr_expect_str_eq(json_string_value(json_object_get(j, "description")),
                     "wrong last sequence: a\xEF\xBF\xBD"
                     "b");
    json_decref(j);
}

Test(jserr, json_key_order)
{
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", "3", NULL);
    json_t *j = nd_jserr_json(&err);
    char *s = json_dumps(j, JSON_COMPACT);
    cr_expect_str_eq(
        s, "{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: 3\"}");
    free(s);
    json_decref(j);
}
