/* Distinguished names (src/auth/dn.c): parsing with escapes (`\,` `\+` `\"` `\\`, hex `\2C`),
 * quoted values, multi-valued RDNs, spaces around separators; structural equality in the same
 * and the reverse order, attribute sets in any order, types case-insensitively; and what is no
 * DN at all (so that a plain user name or e-mail never matches as one). ASan checks the frees.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "auth/dn.h"

Test(dn, parse_escapes)
{
    nd_dn_t d;
    cr_assert(nd_dn_parse("CN=a\\, b,O=x\\+y,OU=say \\\"hi\\\",L=c\\2Cd,ST=back\\\\slash", &d));
    cr_assert_eq(d.n, 5);
    cr_assert_str_eq(d.rdns[0].attrs[0].type, "CN");
    cr_assert_str_eq(d.rdns[0].attrs[0].value, "a, b");
    cr_assert_str_eq(d.rdns[1].attrs[0].value, "x+y");
    cr_assert_str_eq(d.rdns[2].attrs[0].value, "say \"hi\"");
    cr_assert_str_eq(d.rdns[3].attrs[0].value, "c,d");
    cr_assert_str_eq(d.rdns[4].attrs[0].value, "back\\slash");
    nd_dn_free(&d);
}

Test(dn, parse_spaces_quotes_multi)
{
    nd_dn_t d;
    cr_assert(nd_dn_parse("  CN = a b ,  O=\"q, r\" ; OU=x\\ +UID=7", &d));
    cr_assert_eq(d.n, 3);
    cr_assert_str_eq(d.rdns[0].attrs[0].value, "a b");
    cr_assert_str_eq(d.rdns[1].attrs[0].value, "q, r");
    cr_assert_eq(d.rdns[2].n, 2);
    cr_assert_str_eq(d.rdns[2].attrs[0].value, "x "); /* an escaped trailing space stays */
    cr_assert_str_eq(d.rdns[2].attrs[1].type, "UID");
    cr_assert_str_eq(d.rdns[2].attrs[1].value, "7");
    nd_dn_free(&d);
}

Test(dn, not_a_dn)
{
    const char *bad[] = {"",   "   ",       "alice",  "alice@example.com", "CN=a,", "CN=a,,O=b",
                         "=a", "CN=\"open", "CN=a\\", "spiffe://x/y?a=b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nd_dn_t d;
        cr_assert_not(nd_dn_parse(bad[i], &d), "%s", bad[i]);
        cr_assert_eq(d.n, 0);
        nd_dn_free(&d);
    }
}

Test(dn, match)
{
    const char *subj = "CN=example.com,OU=NATS.io,O=Synadia,L=Los Angeles,ST=CA,C=US";
    cr_assert(nd_dn_match(subj, subj));
    cr_assert(
        nd_dn_match("CN=example.com, OU=NATS.io, O=Synadia, L=Los Angeles, ST=CA, C=US", subj));
    cr_assert(nd_dn_match("C=US,ST=CA,L=Los Angeles,O=Synadia,OU=NATS.io,CN=example.com", subj));
    cr_assert(nd_dn_match("cn=example.com,ou=NATS.io,o=Synadia,l=Los Angeles,st=CA,c=US", subj));
    cr_assert_not(
        nd_dn_match("CN=Example.com,OU=NATS.io,O=Synadia,L=Los Angeles,ST=CA,C=US", subj));
    cr_assert_not(nd_dn_match("CN=example.com,OU=NATS.io,O=Synadia", subj));
    /* Neither the same nor the reverse order. */
    cr_assert_not(
        nd_dn_match("OU=NATS.io,CN=example.com,O=Synadia,L=Los Angeles,ST=CA,C=US", subj));

    /* Multi-valued RDNs: the attribute set in any order, but not split into RDNs. */
    cr_assert(nd_dn_match("CN=a+O=b,C=US", "O=b+CN=a,C=US"));
    cr_assert(nd_dn_match("C=US,O=b+CN=a", "CN=a+O=b,C=US"));
    cr_assert_not(nd_dn_match("CN=a,O=b,C=US", "CN=a+O=b,C=US"));
    cr_assert_not(nd_dn_match("CN=a+O=b,C=US", "CN=a+O=c,C=US"));

    /* Escaped commas, in either spelling, and quotes. */
    cr_assert(nd_dn_match("CN=Doe\\, John,O=x", "CN=Doe\\2C John,O=x"));
    cr_assert(nd_dn_match("CN=\"Doe, John\",O=x", "O=x,CN=Doe\\, John"));
    cr_assert_not(nd_dn_match("CN=Doe\\, John,O=x", "CN=Doe,CN=John,O=x"));

    /* Plain names never match as DNs. */
    cr_assert_not(nd_dn_match("alice", "alice"));
}
