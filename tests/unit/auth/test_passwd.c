/* Unit tests of password and token checks (src/auth/passwd.c): nats-server's bcrypt prefix rule,
 * bcrypt hashes made by `nats server passwd` (fixtures from nats-server's test/auth_test.go and
 * test/configs/authorization.conf), hashes made here with libxcrypt, and constant-time plain
 * compares. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "auth/passwd.h"

static bool
check(const char *stored, const char *given)
{
    return nd_passwd_check(stored, strlen(stored), given, strlen(given));
}

Test(passwd, bcrypt_prefix_rule)
{
    static const struct {
        const char *s;
        bool bcrypt;
    } rows[] = {
        {"$2a$11$abc", true},  {"$2b$04$x", true},   {"$2x$10$", true},     {"$2y$31$...", true},
        {"$2c$11$abc", false}, {"$2a$1$abc", false}, {"$2a$1a$abc", false}, {"$2a$11", false},
        {"$2$11$abc", false},  {"2a$11$abc", false}, {"", false},           {"$2a$11abc", false},
        {"$3a$11$abc", false}, {"plain", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_expect_eq(nd_passwd_is_bcrypt(rows[i].s, strlen(rows[i].s)), rows[i].bcrypt, "%s",
                     rows[i].s);
    cr_expect(!nd_passwd_is_bcrypt(NULL, 0));
}

Test(passwd, nats_server_fixtures)
{
    /* nats-server test/auth_test.go BCRYPT_AUTH_HASH / BCRYPT_AUTH_PASS. */
    const char *hash = "$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxq";
    cr_expect(check(hash, "IW@$6v(y1(t@fhPDvf!5^%"));
    cr_expect(!check(hash, "IW@$6v(y1(t@fhPDvf!5^"));
    cr_expect(!check(hash, ""));
    cr_expect(!check(hash, hash), "the hash itself is not the password");
    /* BCRYPT_AUTH_TOKEN_HASH / BCRYPT_AUTH_TOKEN. */
    const char *th = "$2a$04$u5ZClXpcjHgpfc61Ee0VKuwI1K3vTC4zq7SjphjnlHMeb1Llkb5Y6";
    cr_expect(check(th, "0uhJOSr3GW7xvHvtd^K6pa"));
    cr_expect(!check(th, "0uhJOSr3GW7xvHvtd^K6pA"));
    /* test/configs/authorization.conf: PASS is bcrypt("foo"). */
    cr_expect(check("$2a$04$P/.bd.7unw9Ew7yWJqXsl.f4oNRLQGvadEL2YnqQXbbb.IVQajRdK", "foo"));
    cr_expect(!check("$2a$04$P/.bd.7unw9Ew7yWJqXsl.f4oNRLQGvadEL2YnqQXbbb.IVQajRdK", "bar"));
    /* The same hash under the $2x$ and $2b$ prefixes: identical for ASCII passwords. */
    cr_expect(check("$2x$04$P/.bd.7unw9Ew7yWJqXsl.f4oNRLQGvadEL2YnqQXbbb.IVQajRdK", "foo"));
    cr_expect(check("$2b$04$P/.bd.7unw9Ew7yWJqXsl.f4oNRLQGvadEL2YnqQXbbb.IVQajRdK", "foo"));
}

Test(passwd, generated_hashes_round_trip)
{
    static const char *const prefixes[] = {"$2a$", "$2b$", "$2y$"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char *h = nd_passwd_bcrypt_hash("s3cr3t!", prefixes[i], 4);
        cr_assert_not_null(h, "libxcrypt refused %s", prefixes[i]);
        cr_expect(nd_passwd_is_bcrypt(h, strlen(h)), "%s", h);
        cr_expect_eq(strncmp(h, prefixes[i], 4), 0, "%s", h);
        cr_expect(check(h, "s3cr3t!"));
        cr_expect(!check(h, "s3cr3t"));
        cr_expect(!check(h, "s3cr3t!!"));
        nd_free(h);
    }
    cr_expect_null(nd_passwd_bcrypt_hash("x", "$2b$", 99), "cost out of range");
}

Test(passwd, bcrypt_edge_inputs)
{
    char *h = nd_passwd_bcrypt_hash("abc", "$2b$", 4);
    cr_assert_not_null(h);
    /* A NUL inside the client's value never matches, even when the prefix would. */
    cr_expect(!nd_passwd_check(h, strlen(h), "abc\0def", 7));
    cr_expect(nd_passwd_check(h, strlen(h), "abc", 3));
    /* A stored hash that looks like bcrypt but is corrupt fails closed. */
    cr_expect(!check("$2b$04$tooshort", "abc"));
    cr_expect(!check("$2b$04$!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", "abc"));
    /* A truncated copy of a valid hash fails. */
    char t[80];
    snprintf(t, sizeof t, "%.*s", (int)strlen(h) - 1, h);
    cr_expect(!check(t, "abc"));
    /* A very long client value is simply a mismatch. */
    static char big[100000];
    memset(big, 'a', sizeof big - 1);
    cr_expect(!check(h, big));
    nd_free(h);
}

Test(passwd, plain_compare)
{
    cr_expect(check("pass", "pass"));
    cr_expect(!check("pass", "pas"));
    cr_expect(!check("pass", "passs"));
    cr_expect(!check("pass", "Pass"));
    cr_expect(check("", ""));
    cr_expect(!check("", "x"));
    /* A '$' value that is not a bcrypt hash is compared as plain text. */
    cr_expect(check("$2c$11$abc", "$2c$11$abc"));
    cr_expect(check("$token", "$token"));
    /* Binary-safe: bytes after a NUL count. */
    cr_expect(!nd_passwd_check("a\0b", 3, "a\0c", 3));
    cr_expect(nd_passwd_check("a\0b", 3, "a\0b", 3));
    cr_expect(!nd_passwd_check(NULL, 0, "", 0));
    cr_expect(!nd_passwd_check("", 0, NULL, 0));
    cr_expect(nd_passwd_equal_ct("abc", 3, "abc", 3));
    cr_expect(!nd_passwd_equal_ct("abc", 3, "abd", 3));
    cr_expect(!nd_passwd_equal_ct("abc", 3, "ab", 2));
}

Test(passwd, bcrypt_valid_shape)
{
    const char *good = "$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxq";
    cr_expect(nd_passwd_bcrypt_valid(good, strlen(good)));
    char *h = nd_passwd_bcrypt_hash("pw", "$2a$", 4);
    cr_assert_not_null(h);
    cr_expect(nd_passwd_bcrypt_valid(h, strlen(h)), "%s", h);
    nd_free(h);
    static const char *const bad[] = {
        "$2a$11$...",                                                  /* the README placeholder */
        "$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qx", /* cut short */
        "$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxqq",
        "$2a$03$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxq", /* cost below 4 */
        "$2a$32$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxq", /* cost above 31 */
        "$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qx!", /* not bcrypt's base64 */
        "plain-password-of-sixty-characters-is-not-a-hash-at-all-000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect(!nd_passwd_bcrypt_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
}
