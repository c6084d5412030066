/* The error table (src/util/err.h): every code has a name and a text of its own, nothing outside
 * the list crashes, and the texts clients and logs see are the ones they always were. */
#include <criterion/criterion.h>
#include <string.h>

#include "util/err.h"

Test(err, every_code_has_a_unique_name_and_text)
{
    for (int i = 0; i < ND_ERR__COUNT; i++) {
        const char *name = nd_err_name((nd_err_t)i), *text = nd_strerror((nd_err_t)i);
        cr_assert_not_null(name);
        cr_assert_not_null(text);
        cr_assert_gt(strlen(name), 0, "code %d has no name", i);
        cr_assert_gt(strlen(text), 0, "%s has no text", name);
        for (int j = 0; j < i; j++) {
            cr_assert_str_neq(name, nd_err_name((nd_err_t)j), "codes %d and %d share a name", i, j);
            cr_assert_str_neq(text, nd_strerror((nd_err_t)j), "%s and %s share a text", name,
                              nd_err_name((nd_err_t)j));
        }
    }
}

Test(err, names_are_the_identifiers)
{
    cr_assert_eq(ND_OK, 0);
    cr_assert_str_eq(nd_err_name(ND_OK), "ND_OK");
    cr_assert_str_eq(nd_err_name(ND_ERR_STORE_EOF), "ND_ERR_STORE_EOF");
    cr_assert_str_eq(nd_err_name(ND_ERR_JWT_CHUNKS), "ND_ERR_JWT_CHUNKS");
}

Test(err, unknown_codes_are_safe)
{
    nd_err_t bad[] = {ND_ERR__COUNT, (nd_err_t)999, (nd_err_t)-1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_str_eq(nd_strerror(bad[i]), "unknown error");
        cr_assert_str_eq(nd_err_name(bad[i]), "ND_ERR_UNKNOWN");
        cr_assert_null(nd_err_proto_text(bad[i]));
        cr_assert(nd_err_closes(bad[i]), "an unknown protocol error closes, to be safe");
    }
}

Test(err, protocol_texts_are_nats_servers)
{
    cr_assert_null(nd_err_proto_text(ND_OK));
    cr_assert_str_eq(nd_err_proto_text(ND_ERR_AUTH_VIOLATION), "Authorization Violation");
    cr_assert_str_eq(nd_err_proto_text(ND_ERR_MAX_PAYLOAD), "Maximum Payload Violation");
    cr_assert(nd_err_closes(ND_ERR_AUTH_VIOLATION));
    cr_assert_not(nd_err_closes(ND_ERR_INVALID_SUBJECT));
    /* Only client-protocol errors become -ERR lines. */
    cr_assert_null(nd_err_proto_text(ND_ERR_STORE_IO));
    cr_assert_null(nd_err_proto_text(ND_ERR_JWT_EXPIRED));
}

Test(err, folded_texts_are_unchanged)
{
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_NOT_FOUND), "no message found");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_MAX_PER_SUBJECT),
                     "maximum messages per subject exceeded");
    cr_assert_str_eq(nd_strerror(ND_ERR_JWT_SIGNATURE), "claim failed signature verification");
    cr_assert_str_eq(nd_strerror(ND_ERR_JWT_CREDS), "no JWT or seed in creds");
}
