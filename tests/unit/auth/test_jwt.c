/* Unit tests of NKeys (src/util/nkey.c), base64 (src/util/base64.c) and NATS JWTs
 * (src/auth/jwt.c).
 *
 * Fixtures made by the official tools, copied as strings (no code):
 *  - nats.c test/test.c test_natsKeys: the seed SUAMK2FG... signs "nonce" into known bytes.
 *  - nats.go test/nats_test.go and test/reconnect_test.go: a v1 user JWT and a v1 account JWT
 *    (header {"typ":"jwt","alg":"ed25519"}) with the operator, account and user seeds.
 *  - nats.docs (nsc walkthrough, "nsc describe" / MyUser.creds): a v2 creds file made by nsc, with
 *    the operator, account and user seeds from `nsc list keys --show-seeds`.
 * Everything else is made with our own encoder, and each error path is checked for its code.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "util/base64.h"
#include "auth/jwt.h"
#include "util/nkey.h"

/* ---- fixtures ------------------------------------------------------------------------------- */

/* nats.c: the user seed and its ed25519 signature of "nonce". */
static const char *const NATSC_SEED = "SUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4GY";
static const uint8_t NATSC_SIG[64] = {
    155, 157, 8,   183, 93,  154, 78,  7,   219, 39,  11,  16,  134, 231, 46,  142,
    168, 87,  110, 202, 187, 180, 179, 62,  49,  255, 225, 74,  48,  80,  176, 111,
    248, 162, 121, 188, 203, 101, 100, 195, 162, 70,  213, 182, 220, 14,  71,  113,
    93,  239, 141, 131, 66,  190, 237, 127, 104, 191, 138, 217, 227, 1,   92,  14,
};

/* nats.go: v1 tokens. The user JWT's subject is the public key of NATSC_SEED. */
static const char *const GO_OSEED = "SOAL7GTNI66CTVVNXBNQMG6V2HTDRWC3HGEP7D2OUTWNWSNYZDXWFOX4SU";
static const char *const GO_ASEED = "SAAASUPRY3ONU4GJR7J5RUVYRUFZXG56F4WEXELLLORQ65AEPSMIFTOJGE";
static const char *const GO_UJWT =
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiJBSFQzRzNXRElDS1FWQ1FUWFJUTldPRlVVUFRWNE00RF"
    "ZQV0JGSFpJQUROWEZIWEpQR0FBIiwiaWF0IjoxNTQ0MDcxODg5LCJpc3MiOiJBQVBRSlFVUEtWWEdXNUNaSDVHMkhGSlVM"
    "WVNLREVMQVpSVldKQTI2VkRaTzdXU0JVTklZUkZOUSIsInN1YiI6IlVBVDZCV0NTQ1dMVUtKVDZLNk1CSkpPRU9UWFo1QU"
    "pET1lLTkVWUkZDN1ZOTzZPQTQzTjRUUk5PIiwidHlwZSI6InVzZXIiLCJuYXRzIjp7InB1YiI6e30sInN1YiI6e319fQ._"
    "8A1XM88Q2kp7XVJZ42bQuO9E3QPsNAGKtVjAkDycj8A5PtRPby9UpqBUZzBwiJQQO3TUcD5GGqSvsMm6X8hCQ";
static const char *const GO_AJWT =
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiJLWjZIUVRXRlY3WkRZSFo3NklRNUhPM0pINDVRNUdJS0"
    "JNMzJTSENQVUJNNk5PNkU3TUhRIiwiaWF0IjoxNTQ0MDcxODg5LCJpc3MiOiJPRDJXMkk0TVZSQTVUR1pMWjJBRzZaSEdW"
    "TDNPVEtGV1FKRklYNFROQkVSMjNFNlA0NlMzNDVZWSIsInN1YiI6IkFBUFFKUVVQS1ZYR1c1Q1pINUcySEZKVUxZU0tERU"
    "xBWlJWV0pBMjZWRFpPN1dTQlVOSVlSRk5RIiwidHlwZSI6ImFjY291bnQiLCJuYXRzIjp7ImxpbWl0cyI6eyJzdWJzIjot"
    "MSwiY29ubiI6LTEsImltcG9ydHMiOi0xLCJleHBvcnRzIjotMSwiZGF0YSI6LTEsInBheWxvYWQiOi0xLCJ3aWxkY2FyZH"
    "MiOnRydWV9fX0.8o35JPQgvhgFT84Bi2Z-zAeSiLrzzEZn34sgr1DIBEDTwa-EEiMhvTeos9cvXxoZVCCadqZxAWVwS6pa"
    "AMj8Bg";

/* nsc (nats.docs): a v2 user JWT in a creds file, and the keys of its chain. */
static const char *const NSC_OSEED = "SOAJ3JDZBE6JKJO277CQP5RIAA7I7HBI44RDCMTIV3TQRYQX35OTXSMHAE";
static const char *const NSC_OPUB = "ODSWWTKZLRDFBPXNMNAY7XB2BIJ45SV756BHUT7GX6JQH6W7AHVAFX6C";
static const char *const NSC_ASEED = "SAAACXWSQIKJ4L2SEAUZJR3BCNSRCN32V5UJSABCSEP35Q7LQRPV6F4JPI";
static const char *const NSC_APUB = "AD2M34WBNGQFYK37IDX53DPRG74RLLT7FFWBOBMBUXMAVBCVAU5VKWIY";
static const char *const NSC_USEED = "SUAP2AY6UAWHOXJBWDNRNKJ2DHNC5VA2DFJZTF6C6PMLKUCOS2H2E2BA2E";
static const char *const NSC_UPUB = "UAWBXLSZVZHNDIURY52F6WETFCFZLXYUEFJAHRXDW7D2K4445IY4BVXP";
#define NSC_UJWT                                                                                   \
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ."                                              \
    "eyJqdGkiOiI0NUc3MkhIQUVCRFBQV05ZWktMTUhQNUFYWFR"                                              \
    "SSUVDQlNVQUI2VDZRUjdVM1JZUFZaM05BIiwiaWF0IjoxNjM1Mzc1NTYxLCJpc3MiOiJBRDJNMzRXQk5HUUZZSzM3SUR" \
    "YN"                                                                                           \
    "TNEUFJHNzRSTExUN0ZGV0JPQk1CVVhNQVZCQ1ZBVTVWS1dJWSIsIm5hbWUiOiJNeVVzZXIiLCJzdWIiOiJVQVdCWExTW" \
    "lZ"                                                                                           \
    "aSE5ESVVSWTUyRjZXRVRGQ0ZaTFhZVUVGSkFIUlhEVzdEMks0NDQ1SVk0QlZYUCIsIm5hdHMiOnsicHViIjp7fSwic3V" \
    "iI"                                                                                           \
    "jp7fSwic3VicyI6LTEsImRhdGEiOi0xLCJwYXlsb2FkIjotMSwidHlwZSI6InVzZXIiLCJ2ZXJzaW9uIjoyfX0."      \
    "CGymhGY"                                                                                      \
    "HfdZyhUeucxNs9TthSjy_27LVZikqxvm-pPLili8KNe1xyOVnk_w-xPWdrCx_t3Se2lgXmoy3wBcVCw"
static const char *const NSC_CREDS =
    "-----BEGIN NATS USER JWT-----\n" NSC_UJWT "\n"
    "------END NATS USER JWT------\n"
    "\n"
    "************************* IMPORTANT *************************\n"
    "NKEY Seed printed below can be used to sign and prove identity.\n"
    "NKEYs are sensitive and should be treated as secrets.\n"
    "\n"
    "-----BEGIN USER NKEY SEED-----\n"
    "SUAP2AY6UAWHOXJBWDNRNKJ2DHNC5VA2DFJZTF6C6PMLKUCOS2H2E2BA2E\n"
    "------END USER NKEY SEED------\n"
    "\n"
    "*************************************************************\n";

/* ---- helpers -------------------------------------------------------------------------------- */

static char *
public_of(const char *seed)
{
    uint8_t sk[32], pk[32], role;
    cr_assert(nd_nkey_decode_seed(seed, strlen(seed), &role, sk), "seed %s", seed);
    cr_assert(nd_nkey_seed_public(sk, pk));
    char *out = nd_xmalloc(ND_NKEY_PUBLIC_LEN + 1);
    nd_nkey_encode_public(role, pk, out);
    return out;
}

/* A fresh random seed of a role (59 bytes with NUL). */
static void
new_seed(uint8_t role, char out[ND_NKEY_SEED_LEN + 1])
{
    uint8_t sk[32];
    cr_assert(nd_nkey_random(sk, sizeof sk));
    nd_nkey_encode_seed(role, sk, out);
}

static nd_err_t
decode(const char *tok, nd_jwt_t **out)
{
    char detail[256];
    nd_err_t e = nd_jwt_decode(tok, strlen(tok), out, detail, sizeof detail);
    if (e == ND_OK)
        cr_assert_not_null(*out);
    else
        cr_assert_null(*out);
    return e;
}

static nd_err_t
decode_err(const char *tok)
{
    nd_jwt_t *j = NULL;
    nd_err_t e = decode(tok, &j);
    nd_jwt_free(j);
    return e;
}

static char *
encode(const char *claims_json, const char *seed, unsigned flags)
{
    json_error_t je;
    json_t *c = json_loads(claims_json, JSON_PRESERVE_ORDER, &je);
    cr_assert_not_null(c, "bad test JSON: %s: %s", je.text, claims_json);
    char *tok = NULL;
    nd_err_t e = nd_jwt_encode(c, seed, strlen(seed), flags, &tok);
    json_decref(c);
    cr_assert_eq(e, ND_OK, "encode: %s", nd_strerror(e));
    return tok;
}

/* Builds a token from raw header and claims JSON texts, signed (v2) by seed. */
static char *
forge(const char *header, const char *claims, const char *seed)
{
    size_t hl = strlen(header), cl = strlen(claims);
    char *h = nd_xmalloc(nd_b64_encoded_len(ND_B64_RAWURL, hl) + 1);
    char *c = nd_xmalloc(nd_b64_encoded_len(ND_B64_RAWURL, cl) + 1);
    nd_b64_encode(ND_B64_RAWURL, header, hl, h);
    nd_b64_encode(ND_B64_RAWURL, claims, cl, c);
    size_t n = strlen(h) + strlen(c) + 1;
    char *tok = nd_xmalloc(n + 100);
    snprintf(tok, n + 100, "%s.%s", h, c);
    uint8_t sk[32], sig[64];
    cr_assert(nd_nkey_decode_seed(seed, strlen(seed), NULL, sk));
    cr_assert(nd_nkey_sign(sk, tok, n, sig));
    tok[n] = '.';
    nd_b64_encode(ND_B64_RAWURL, sig, 64, tok + n + 1);
    nd_free(h);
    nd_free(c);
    return tok;
}

static const char *const HDR = "{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}";

/* ---- nkeys ---------------------------------------------------------------------------------- */

Test(nkey, official_fixtures)
{
    /* nats.c: signature of "nonce" by its seed. */
    uint8_t sk[32], sig[64], pk[32], role;
    cr_assert(nd_nkey_decode_seed(NATSC_SEED, strlen(NATSC_SEED), &role, sk));
    cr_expect_eq(role, ND_NKEY_PREFIX_USER);
    cr_assert(nd_nkey_sign(sk, "nonce", 5, sig));
    cr_expect_arr_eq(sig, NATSC_SIG, 64);
    cr_assert(nd_nkey_seed_public(sk, pk));
    cr_expect(nd_nkey_verify(pk, "nonce", 5, NATSC_SIG, 64));
    cr_expect(!nd_nkey_verify(pk, "nonce!", 6, NATSC_SIG, 64));
    cr_expect(!nd_nkey_verify(pk, "nonce", 5, NATSC_SIG, 63));

    /* Seeds to public keys, as nsc printed them. */
    char *p = public_of(NSC_OSEED);
    cr_expect_str_eq(p, NSC_OPUB);
    nd_free(p);
    p = public_of(NSC_ASEED);
    cr_expect_str_eq(p, NSC_APUB);
    nd_free(p);
    p = public_of(NSC_USEED);
    cr_expect_str_eq(p, NSC_UPUB);
    nd_free(p);
    /* nats.go: the chain of its v1 tokens. */
    p = public_of(GO_OSEED);
    cr_expect_str_eq(p, "OD2W2I4MVRA5TGZLZ2AG6ZHGVL3OTKFWQJFIX4TNBER23E6P46S345YY");
    nd_free(p);
    p = public_of(GO_ASEED);
    cr_expect_str_eq(p, "AAPQJQUPKVXGW5CZH5G2HFJULYSKDELAZRVWJA26VDZO7WSBUNIYRFNQ");
    nd_free(p);
    p = public_of(NATSC_SEED);
    cr_expect_str_eq(p, "UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO");
    nd_free(p);
}

Test(nkey, seed_and_public_round_trip)
{
    static const uint8_t roles[] = {ND_NKEY_PREFIX_OPERATOR, ND_NKEY_PREFIX_ACCOUNT,
                                    ND_NKEY_PREFIX_USER,     ND_NKEY_PREFIX_SERVER,
                                    ND_NKEY_PREFIX_CLUSTER,  ND_NKEY_PREFIX_CURVE};
    static const char letters[] = "OAUNCX";
    for (size_t i = 0; i < sizeof roles; i++) {
        char seed[ND_NKEY_SEED_LEN + 1];
        new_seed(roles[i], seed);
        cr_expect_eq(strlen(seed), ND_NKEY_SEED_LEN);
        cr_expect_eq(seed[0], 'S');
        cr_expect_eq(seed[1], letters[i], "%s", seed);
        uint8_t sk[32], sk2[32], role;
        cr_assert(nd_nkey_decode_seed(seed, strlen(seed), &role, sk));
        cr_expect_eq(role, roles[i]);
        char again[ND_NKEY_SEED_LEN + 1];
        nd_nkey_encode_seed(role, sk, again);
        cr_expect_str_eq(again, seed);
        char *pub = public_of(seed);
        cr_expect_eq(pub[0], letters[i]);
        uint8_t pk[32], r2;
        cr_expect(nd_nkey_decode_public(pub, strlen(pub), roles[i], &r2, pk));
        cr_expect(nd_nkey_decode_public(pub, strlen(pub), ND_NKEY_PREFIX_ANY, NULL, NULL));
        cr_expect(!nd_nkey_decode_public(pub, strlen(pub),
                                         roles[i] == ND_NKEY_PREFIX_USER ? ND_NKEY_PREFIX_ACCOUNT
                                                                         : ND_NKEY_PREFIX_USER,
                                         NULL, NULL),
                  "wrong role accepted: %s", pub);
        /* A seed is not a public key and the other way round. */
        cr_expect(!nd_nkey_decode_public(seed, strlen(seed), ND_NKEY_PREFIX_ANY, NULL, NULL));
        cr_expect(!nd_nkey_decode_seed(pub, strlen(pub), NULL, sk2));
        nd_free(pub);
    }
}

Test(nkey, bad_encodings)
{
    const char *pub = NSC_UPUB;
    size_t n = strlen(pub);
    char buf[128];
    /* Every single-character change is caught (CRC-16 catches all single errors). */
    for (size_t i = 0; i < n; i++) {
        for (const char *c = "A7Z2"; *c; c++) {
            if (pub[i] == *c)
                continue;
            memcpy(buf, pub, n + 1);
            buf[i] = *c;
            cr_expect(!nd_nkey_decode_public(buf, n, ND_NKEY_PREFIX_ANY, NULL, NULL), "%s", buf);
        }
    }
    /* Truncated, extended, lower case, padding, characters outside the alphabet. */
    for (size_t l = 0; l < n; l++)
        cr_expect(!nd_nkey_decode_public(pub, l, ND_NKEY_PREFIX_ANY, NULL, NULL), "len %zu", l);
    snprintf(buf, sizeof buf, "%sA", pub);
    cr_expect(!nd_nkey_decode_public(buf, n + 1, ND_NKEY_PREFIX_ANY, NULL, NULL));
    memcpy(buf, pub, n + 1);
    buf[5] = (char)(buf[5] | 0x20);
    cr_expect(!nd_nkey_decode_public(buf, n, ND_NKEY_PREFIX_ANY, NULL, NULL));
    memcpy(buf, pub, n + 1);
    buf[n - 1] = '=';
    cr_expect(!nd_nkey_decode_public(buf, n, ND_NKEY_PREFIX_ANY, NULL, NULL));
    memcpy(buf, pub, n + 1);
    buf[10] = '1';
    cr_expect(!nd_nkey_decode_public(buf, n, ND_NKEY_PREFIX_ANY, NULL, NULL));
    memcpy(buf, pub, n + 1);
    buf[10] = '\0';
    cr_expect(!nd_nkey_decode_public(buf, n, ND_NKEY_PREFIX_ANY, NULL, NULL));
    cr_expect(!nd_nkey_decode_public(NULL, 0, ND_NKEY_PREFIX_ANY, NULL, NULL));
    /* nats.c's cases: a bad checksum, an invalid prefix, garbage. */
    const char *badcrc = "SUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4AA";
    cr_expect(!nd_nkey_decode_seed(badcrc, strlen(badcrc), NULL, NULL));
    cr_expect(!nd_nkey_decode_seed("ABC", 3, NULL, NULL));
    const char *notseed = "LBMVISCJKNEVGTSPKRAVMQKMJFCFGRKFIQ52C";
    cr_expect(!nd_nkey_decode_seed(notseed, strlen(notseed), NULL, NULL));
    /* A seed whose role byte is not a public role ("SP..." private). */
    uint8_t sk[32] = {1};
    char s[ND_NKEY_SEED_LEN + 1];
    nd_nkey_encode_seed(ND_NKEY_PREFIX_PRIVATE, sk, s);
    cr_expect(!nd_nkey_decode_seed(s, strlen(s), NULL, NULL), "%s", s);
    /* A public key with a non-public prefix byte but a good CRC. */
    char p[ND_NKEY_PUBLIC_LEN + 1];
    nd_nkey_encode_public(ND_NKEY_PREFIX_PRIVATE, sk, p);
    cr_expect(!nd_nkey_decode_public(p, strlen(p), ND_NKEY_PREFIX_ANY, NULL, NULL), "%s", p);
}

/* ---- base64 --------------------------------------------------------------------------------- */

Test(b64, round_trips_and_errors)
{
    uint8_t in[64], out[80];
    char enc[100];
    for (size_t n = 0; n < sizeof in; n++) {
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)(i * 37 + n);
        for (int k = 0; k < 2; k++) {
            nd_b64_kind_t kind = k ? ND_B64_STD : ND_B64_RAWURL;
            size_t el = nd_b64_encode(kind, in, n, enc);
            cr_expect_eq(el, nd_b64_encoded_len(kind, n));
            cr_expect_eq(strlen(enc), el);
            size_t ol = 0;
            cr_assert(nd_b64_decode(kind, enc, el, out, sizeof out, &ol), "%s", enc);
            cr_expect_eq(ol, n);
            cr_expect_arr_eq(out, in, n);
        }
    }
    size_t ol;
    cr_expect(!nd_b64_decode(ND_B64_RAWURL, "ab=c", 4, out, sizeof out, &ol));
    cr_expect(!nd_b64_decode(ND_B64_RAWURL, "a", 1, out, sizeof out, &ol));
    cr_expect(!nd_b64_decode(ND_B64_RAWURL, "ab+/", 4, out, sizeof out, &ol));
    cr_expect(!nd_b64_decode(ND_B64_RAWURL, "ab\ncd", 5, out, sizeof out, &ol));
    cr_expect(!nd_b64_decode(ND_B64_STD, "abc", 3, out, sizeof out, &ol), "missing padding");
    cr_expect(!nd_b64_decode(ND_B64_STD, "a===", 4, out, sizeof out, &ol));
    cr_expect(!nd_b64_decode(ND_B64_STD, "ab-_", 4, out, sizeof out, &ol));
    cr_expect(nd_b64_decode(ND_B64_STD, "ab==", 4, out, sizeof out, &ol) && ol == 1);
    cr_expect(!nd_b64_decode(ND_B64_RAWURL, "AAAAAAAA", 8, out, 5, &ol), "does not fit");
    cr_expect(nd_b64_decode(ND_B64_RAWURL, "", 0, out, 0, &ol) && ol == 0);
}

/* ---- JWT: official tokens ------------------------------------------------------------------- */

Test(jwt, nsc_v2_user_and_creds)
{
    char *j = NULL, *s = NULL;
    cr_assert_eq(nd_jwt_creds_parse(NSC_CREDS, strlen(NSC_CREDS), &j, &s), ND_OK);
    cr_expect_str_eq(j, NSC_UJWT);
    cr_expect_str_eq(s, NSC_USEED);
    nd_jwt_t *u;
    cr_assert_eq(decode(j, &u), ND_OK);
    cr_expect_eq(u->type, ND_JWT_USER);
    cr_expect_eq(u->version, 2);
    cr_expect_str_eq(u->iss, NSC_APUB);
    cr_expect_str_eq(u->sub, NSC_UPUB);
    cr_expect_str_eq(u->name, "MyUser");
    cr_expect_str_eq(u->jti, "45G72HHAEBDPPWNYZKLMHP5AXXTRIECBSUAB6T6QR7U3RYPVZ3NA");
    cr_expect_eq(u->iat, 1635375561);
    cr_expect_eq(u->exp, 0);
    cr_expect_eq(u->u.user.lim.subs, -1);
    cr_expect_eq(u->u.user.lim.data, -1);
    cr_expect_eq(u->u.user.lim.payload, -1);
    cr_expect_eq(u->u.user.lim.perms.pub.allow.n, 0);
    cr_expect(!u->u.user.lim.perms.has_resp);
    cr_expect_null(u->u.user.issuer_account);
    cr_expect_eq(nd_jwt_check_times(u, 1635375561), ND_OK);
    /* The user key of the creds signs nonces that verify with the JWT's subject. */
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(s, strlen(s), "abcdefgh", 8, &sig));
    cr_expect(nd_jwt_verify_nonce(u->sub, strlen(u->sub), ND_NKEY_PREFIX_USER, "abcdefgh", 8, sig,
                                  strlen(sig)));
    nd_free(sig);
    nd_jwt_free(u);
    nd_free(j);
    nd_nkey_wipe(s, strlen(s));
    nd_free(s);
}

Test(jwt, reencoding_the_nsc_claims_gives_the_same_token)
{
    /* Same claims (iat and order kept), signed again with the account seed: ed25519 is
     * deterministic and our jti is Go's content hash, so the token must come out byte-identical. */
    const char *claims =
        "{\"jti\":\"\",\"iat\":1635375561,\"iss\":\"\",\"name\":\"MyUser\","
        "\"sub\":\"UAWBXLSZVZHNDIURY52F6WETFCFZLXYUEFJAHRXDW7D2K4445IY4BVXP\","
        "\"nats\":{\"pub\":{},\"sub\":{},\"subs\":-1,\"data\":-1,\"payload\":-1,\"type\":\"user\","
        "\"version\":2}}";
    char *tok = encode(claims, NSC_ASEED, 0);
    cr_expect_str_eq(tok, NSC_UJWT);
    nd_free(tok);
}

Test(jwt, nats_go_v1_tokens)
{
    nd_jwt_t *a, *u;
    cr_assert_eq(decode(GO_AJWT, &a), ND_OK);
    cr_expect_eq(a->type, ND_JWT_ACCOUNT);
    cr_expect_eq(a->version, 1);
    cr_expect_str_eq(a->sub, "AAPQJQUPKVXGW5CZH5G2HFJULYSKDELAZRVWJA26VDZO7WSBUNIYRFNQ");
    cr_expect_eq(a->u.acc.conn, -1);
    cr_expect_eq(a->u.acc.subs, -1);
    cr_expect_eq(a->u.acc.payload, -1);
    cr_expect(a->u.acc.wildcards);
    cr_assert_eq(decode(GO_UJWT, &u), ND_OK);
    cr_expect_eq(u->type, ND_JWT_USER);
    cr_expect_eq(u->version, 1);
    cr_expect_str_eq(u->iss, a->sub);
    cr_expect(nd_jwt_account_has_signer(a, u->iss, NULL));
    cr_expect(!nd_jwt_user_revoked(a, u));
    nd_jwt_free(a);
    nd_jwt_free(u);

    /* Our encoder's v1 mode makes tokens the decoder takes as v1 (signature over the claims). */
    char *tok = encode("{\"sub\":\"UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO\","
                       "\"type\":\"user\",\"nats\":{\"pub\":{\"allow\":[\"a.>\"]}}}",
                       GO_ASEED, ND_JWT_ENC_V1);
    cr_assert_eq(decode(tok, &u), ND_OK);
    cr_expect_eq(u->version, 1);
    cr_expect_eq(u->u.user.lim.perms.pub.allow.n, 1);
    nd_jwt_free(u);
    nd_free(tok);
}

Test(jwt, creds_variants)
{
    char *j, *s;
    /* nats.c's variant: four-dash header lines, five-dash footers. */
    const char *c1 =
        "-----BEGIN NATS USER JWT----\nsome.user.jwt\n-----END NATS USER JWT-----\n\n"
        "-----BEGIN USER NKEY SEED-----\nSUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMR"
        "LFM2XLAXK4GY\n-----END USER NKEY SEED-----\n";
    cr_assert_eq(nd_jwt_creds_parse(c1, strlen(c1), &j, &s), ND_OK);
    cr_expect_str_eq(j, "some.user.jwt");
    cr_expect_str_eq(s, NATSC_SEED);
    nd_free(j);
    nd_free(s);
    /* CRLF line ends. */
    const char *c2 =
        "-----BEGIN NATS USER JWT-----\r\nabc.def.ghi\r\n------END NATS USER JWT------\r\n"
        "\r\n-----BEGIN USER NKEY SEED-----\r\nSUXYZ\r\n------END USER NKEY SEED------";
    cr_assert_eq(nd_jwt_creds_parse(c2, strlen(c2), &j, &s), ND_OK);
    cr_expect_str_eq(j, "abc.def.ghi");
    cr_expect_str_eq(s, "SUXYZ");
    nd_free(j);
    nd_free(s);
    /* No blocks: the whole text is the JWT; the seed is found by its prefix after blanks. */
    const char *c3 =
        "This file does not have the proper header\nand also has spaces before the seed:\n"
        "  \tSUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4GY\nthis should work\n";
    cr_assert_eq(nd_jwt_creds_parse(c3, strlen(c3), NULL, &s), ND_OK);
    cr_expect_str_eq(s, NATSC_SEED);
    nd_free(s);
    /* A bare JWT. */
    cr_assert_eq(nd_jwt_creds_parse("  a.b.c\n", 8, &j, NULL), ND_OK);
    cr_expect_str_eq(j, "a.b.c");
    nd_free(j);
    /* A JWT block without a seed: asking for the seed fails, the JWT alone works. */
    const char *c4 = "-----BEGIN NATS USER JWT-----\na.b.c\n------END NATS USER JWT------\n";
    cr_expect_eq(nd_jwt_creds_parse(c4, strlen(c4), &j, &s), ND_ERR_JWT_CREDS);
    cr_expect_null(j);
    cr_expect_null(s);
    cr_assert_eq(nd_jwt_creds_parse(c4, strlen(c4), &j, NULL), ND_OK);
    cr_expect_str_eq(j, "a.b.c");
    nd_free(j);
    /* Characters outside [\w-.=] in the token line: not a block. */
    const char *c5 = "-----BEGIN X-----\na b\n------END X------\n";
    cr_assert_eq(nd_jwt_creds_parse(c5, strlen(c5), &j, NULL), ND_OK);
    cr_expect_str_eq(j, "-----BEGIN X-----\na b\n------END X------");
    nd_free(j);
    cr_expect_eq(nd_jwt_creds_parse("", 0, &j, NULL), ND_ERR_JWT_CREDS);
    cr_expect_eq(nd_jwt_creds_parse(NULL, 0, &j, NULL), ND_ERR_JWT_CREDS);
}

/* ---- JWT: our own tokens -------------------------------------------------------------------- */

typedef struct chain {
    char oseed[ND_NKEY_SEED_LEN + 1], aseed[ND_NKEY_SEED_LEN + 1], useed[ND_NKEY_SEED_LEN + 1];
    char *opub, *apub, *upub;
} chain_t;

static void
chain_new(chain_t *c)
{
    new_seed(ND_NKEY_PREFIX_OPERATOR, c->oseed);
    new_seed(ND_NKEY_PREFIX_ACCOUNT, c->aseed);
    new_seed(ND_NKEY_PREFIX_USER, c->useed);
    c->opub = public_of(c->oseed);
    c->apub = public_of(c->aseed);
    c->upub = public_of(c->useed);
}

static void
chain_free(chain_t *c)
{
    nd_free(c->opub);
    nd_free(c->apub);
    nd_free(c->upub);
}

Test(jwt, operator_round_trip)
{
    chain_t c;
    chain_new(&c);
    char claims[1024];
    snprintf(
        claims, sizeof claims,
        "{\"sub\":\"%s\",\"name\":\"O\",\"nats\":{\"type\":\"operator\",\"signing_keys\":[\"%s\"],"
        "\"system_account\":\"%s\",\"account_server_url\":\"http://x/jwt/v1\","
        "\"operator_service_urls\":[\"nats://a:4222\"],\"strict_signing_key_usage\":true,"
        "\"tags\":[\"t1\"]}}",
        c.opub, c.opub, c.apub);
    char *tok = encode(claims, c.oseed, 0);
    nd_jwt_t *j;
    cr_assert_eq(decode(tok, &j), ND_OK);
    cr_expect_eq(j->type, ND_JWT_OPERATOR);
    cr_expect_eq(j->version, 2);
    cr_expect_str_eq(j->iss, c.opub);
    cr_expect_eq(strlen(j->jti), 52);
    cr_expect(j->iat > 1700000000);
    cr_expect_eq(j->u.op.signing_keys.n, 1);
    cr_expect_str_eq(j->u.op.system_account, c.apub);
    cr_expect_str_eq(j->u.op.account_server_url, "http://x/jwt/v1");
    cr_expect_str_eq(j->u.op.operator_service_urls.v[0], "nats://a:4222");
    cr_expect(j->u.op.strict_signing_key_usage);
    cr_expect_str_eq(j->tags.v[0], "t1");
    nd_jwt_free(j);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, account_round_trip)
{
    chain_t c;
    chain_new(&c);
    char sk[ND_NKEY_SEED_LEN + 1];
    new_seed(ND_NKEY_PREFIX_ACCOUNT, sk);
    char *skpub = public_of(sk);
    char claims[4096];
    snprintf(
        claims, sizeof claims,
        "{\"sub\":\"%s\",\"name\":\"A\",\"exp\":2000000000,\"nbf\":1000,\"nats\":{"
        "\"type\":\"account\",\"limits\":{\"subs\":10,\"data\":-1,\"payload\":4096,"
        "\"imports\":3,\"exports\":4,\"wildcards\":true,\"disallow_bearer\":true,\"conn\":5,"
        "\"leaf\":6,\"mem_storage\":1024,\"disk_storage\":2048,\"streams\":7,\"consumer\":8,"
        "\"max_ack_pending\":9,\"max_bytes_required\":true,"
        "\"tiered_limits\":{\"R1\":{\"mem_storage\":11}}},"
        "\"imports\":[{\"name\":\"i\",\"subject\":\"svc.>\",\"account\":\"%s\",\"to\":\"loc.>\","
        "\"type\":\"service\",\"share\":true},null],"
        "\"exports\":[{\"name\":\"e\",\"subject\":\"feed.*\",\"type\":\"stream\","
        "\"token_req\":true,\"revocations\":{\"%s\":5}},"
        "{\"subject\":\"rpc\",\"type\":\"service\",\"response_type\":\"Chunked\","
        "\"response_threshold\":3000000000,\"service_latency\":{\"sampling\":\"headers\","
        "\"results\":\"lat\"},\"account_token_position\":2}],"
        "\"signing_keys\":[\"%s\",{\"kind\":\"user_scope\",\"key\":\"%s\",\"role\":\"r\","
        "\"template\":{\"pub\":{\"allow\":[\"x\"]},\"subs\":-1}}],"
        "\"revocations\":{\"%s\":100,\"*\":50},"
        "\"default_permissions\":{\"pub\":{\"deny\":[\"secret.>\"]},\"resp\":{\"max\":2,"
        "\"ttl\":1000}},"
        "\"mappings\":{\"a\":[{\"subject\":\"b\",\"weight\":60},{\"subject\":\"c\","
        "\"weight\":40,\"cluster\":\"east\"}]},"
        "\"authorization\":{\"auth_users\":[\"%s\"],\"allowed_accounts\":[\"*\"]},"
        "\"cluster_traffic\":\"owner\"}}",
        c.apub, c.apub, c.apub, skpub, c.opub, c.upub, c.upub);
    /* The second signing key is scoped but names a key of the wrong role: parsing still works
     * (that is a validation matter for the trust chain). */
    char *tok = encode(claims, c.oseed, 0);
    nd_jwt_t *j;
    cr_assert_eq(decode(tok, &j), ND_OK);
    nd_jwt_account_t *a = &j->u.acc;
    cr_expect_eq(j->type, ND_JWT_ACCOUNT);
    cr_expect_eq(a->subs, 10);
    cr_expect_eq(a->data, -1);
    cr_expect_eq(a->payload, 4096);
    cr_expect_eq(a->imports_max, 3);
    cr_expect_eq(a->exports_max, 4);
    cr_expect(a->wildcards && a->disallow_bearer);
    cr_expect_eq(a->conn, 5);
    cr_expect_eq(a->leaf, 6);
    cr_expect_eq(a->js.mem_storage, 1024);
    cr_expect_eq(a->js.disk_storage, 2048);
    cr_expect_eq(a->js.streams, 7);
    cr_expect_eq(a->js.consumer, 8);
    cr_expect_eq(a->js.max_ack_pending, 9);
    cr_expect(a->js.max_bytes_required);
    cr_assert_eq(a->ntiers, 1);
    cr_expect_str_eq(a->tiers[0].name, "R1");
    cr_expect_eq(a->tiers[0].lim.mem_storage, 11);
    cr_assert_eq(a->nimports, 1, "a null entry is skipped (Go would keep a nil pointer)");
    cr_expect_str_eq(a->imports[0].subject, "svc.>");
    cr_expect_str_eq(a->imports[0].to, "loc.>");
    cr_expect_eq(a->imports[0].type, ND_JWT_EXPORT_SERVICE);
    cr_expect(a->imports[0].share);
    cr_assert_eq(a->nexports, 2);
    cr_expect_eq(a->exports[0].type, ND_JWT_EXPORT_STREAM);
    cr_expect(a->exports[0].token_req);
    cr_assert_eq(a->exports[0].nrevocations, 1);
    cr_expect_eq(a->exports[0].revocations[0].at, 5);
    cr_expect_eq(a->exports[1].response_type, ND_JWT_RESP_CHUNKED);
    cr_expect_eq(a->exports[1].response_threshold_ns, 3000000000LL);
    cr_expect(a->exports[1].has_latency);
    cr_expect_eq(a->exports[1].latency_sampling, 0);
    cr_expect_str_eq(a->exports[1].latency_results, "lat");
    cr_expect_eq(a->exports[1].account_token_position, 2);
    cr_assert_eq(a->nsigning_keys, 2);
    cr_expect(!a->signing_keys[0].scoped);
    cr_expect(a->signing_keys[1].scoped);
    cr_expect_str_eq(a->signing_keys[1].role, "r");
    cr_expect_str_eq(a->signing_keys[1].template.perms.pub.allow.v[0], "x");
    cr_expect_eq(a->signing_keys[1].template.subs, -1);
    const nd_jwt_signing_key_t *scope;
    cr_expect(nd_jwt_account_has_signer(j, skpub, &scope) && scope == &a->signing_keys[0]);
    cr_expect(nd_jwt_account_has_signer(j, c.apub, &scope) && scope == NULL);
    cr_expect(!nd_jwt_account_has_signer(j, c.upub, &scope));
    cr_expect_eq(a->nrevocations, 2);
    cr_expect_str_eq(a->default_permissions.pub.deny.v[0], "secret.>");
    cr_expect(a->default_permissions.has_resp);
    cr_expect_eq(a->default_permissions.resp_max, 2);
    cr_expect_eq(a->default_permissions.resp_ttl_ns, 1000);
    cr_assert_eq(a->nmappings, 1);
    cr_expect_eq(a->mappings[0].ndests, 2);
    cr_expect_eq(a->mappings[0].dests[1].weight, 40);
    cr_expect_str_eq(a->mappings[0].dests[1].cluster, "east");
    cr_expect_str_eq(a->auth_users.v[0], c.upub);
    cr_expect_str_eq(a->cluster_traffic, "owner");
    /* Times: valid inside [nbf, exp]. */
    cr_expect_eq(nd_jwt_check_times(j, 1500000000), ND_OK);
    cr_expect_eq(nd_jwt_check_times(j, 2000000000), ND_OK);
    cr_expect_eq(nd_jwt_check_times(j, 2000000001), ND_ERR_JWT_EXPIRED);
    cr_expect_eq(nd_jwt_check_times(j, 999), ND_ERR_JWT_NOT_YET_VALID);
    cr_expect_eq(nd_jwt_check_times(j, 1000), ND_OK);
    nd_jwt_free(j);
    nd_free(tok);
    nd_free(skpub);
    chain_free(&c);
}

Test(jwt, user_round_trip_and_revocation)
{
    chain_t c;
    chain_new(&c);
    char claims[2048];
    snprintf(
        claims, sizeof claims,
        "{\"sub\":\"%s\",\"iat\":1000,\"nats\":{\"type\":\"user\",\"pub\":{\"allow\":[\"a\",\"b.>"
        "\"],"
        "\"deny\":[\"b.c\"]},\"sub\":{\"allow\":[\"_INBOX.>\",\"q.* grp\"]},\"resp\":{\"max\":1,"
        "\"ttl\":120000000000},\"subs\":5,\"data\":-1,\"payload\":100,\"src\":[\"10.0.0.0/8\"],"
        "\"times\":[{\"start\":\"08:00:00\",\"end\":\"17:00:00\"}],\"times_location\":\"UTC\","
        "\"bearer_token\":true,\"allowed_connection_types\":[\"STANDARD\",\"WEBSOCKET\"],"
        "\"issuer_account\":\"%s\"}}",
        c.upub, c.apub);
    char *tok = encode(claims, c.aseed, 0);
    nd_jwt_t *u;
    cr_assert_eq(decode(tok, &u), ND_OK);
    nd_jwt_user_limits_t *l = &u->u.user.lim;
    cr_expect_eq(u->iat, 1000, "a given iat is kept");
    cr_expect_eq(l->perms.pub.allow.n, 2);
    cr_expect_str_eq(l->perms.pub.deny.v[0], "b.c");
    cr_expect_str_eq(l->perms.sub.allow.v[1], "q.* grp");
    cr_expect(l->perms.has_resp);
    cr_expect_eq(l->perms.resp_ttl_ns, 120000000000LL);
    cr_expect_eq(l->subs, 5);
    cr_expect_eq(l->payload, 100);
    cr_expect_str_eq(l->src.v[0], "10.0.0.0/8");
    cr_assert_eq(l->ntimes, 1);
    cr_expect_str_eq(l->times[0].end, "17:00:00");
    cr_expect_str_eq(l->locale, "UTC");
    cr_expect(l->bearer_token);
    cr_expect_eq(l->allowed_connection_types.n, 2);
    cr_expect_str_eq(u->u.user.issuer_account, c.apub);

    /* Revocations: the user's own entry or "*", at or after its iat. */
    nd_jwt_revocation_t r1[] = {{c.upub, 999}};
    cr_expect(!nd_jwt_revoked(r1, 1, u->sub, u->iat));
    nd_jwt_revocation_t r2[] = {{c.upub, 1000}};
    cr_expect(nd_jwt_revoked(r2, 1, u->sub, u->iat));
    nd_jwt_revocation_t r3[] = {{(char *)"*", 1001}};
    cr_expect(nd_jwt_revoked(r3, 1, u->sub, u->iat));
    nd_jwt_revocation_t r4[] = {{(char *)"*", 10}, {c.apub, 5000}};
    cr_expect(!nd_jwt_revoked(r4, 2, u->sub, u->iat));

    /* Through an account JWT. */
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"revocations\":{\"%s\":1000}}}",
             c.apub, c.upub);
    char *atok = encode(claims, c.oseed, 0);
    nd_jwt_t *a;
    cr_assert_eq(decode(atok, &a), ND_OK);
    cr_expect(nd_jwt_user_revoked(a, u));
    u->iat = 1001;
    cr_expect(!nd_jwt_user_revoked(a, u));
    u->iat = 0;
    cr_expect(nd_jwt_user_revoked(a, u), "no iat counts as revoked");
    nd_jwt_free(a);
    nd_jwt_free(u);
    nd_free(atok);

    /* v1-style comma-separated src. */
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"src\":\"1.2.3.4/32, 5.6.7.0/24,\"}}",
             c.upub);
    char *t2 = encode(claims, c.aseed, 0);
    cr_assert_eq(decode(t2, &u), ND_OK);
    cr_assert_eq(u->u.user.lim.src.n, 2);
    cr_expect_str_eq(u->u.user.lim.src.v[1], "5.6.7.0/24");
    nd_jwt_free(u);
    nd_free(t2);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, expiry_and_not_before)
{
    chain_t c;
    chain_new(&c);
    char claims[512];
    snprintf(claims, sizeof claims, "{\"sub\":\"%s\",\"exp\":100,\"nats\":{\"type\":\"user\"}}",
             c.upub);
    char *tok = encode(claims, c.aseed, 0);
    nd_jwt_t *u;
    cr_assert_eq(decode(tok, &u), ND_OK, "decoding does not check time");
    cr_expect_eq(nd_jwt_check_times(u, 101), ND_ERR_JWT_EXPIRED);
    cr_expect_eq(nd_jwt_check_times(u, 100), ND_OK);
    nd_jwt_free(u);
    nd_free(tok);
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"nbf\":4000000000,\"nats\":{\"type\":\"user\"}}", c.upub);
    tok = encode(claims, c.aseed, 0);
    cr_assert_eq(decode(tok, &u), ND_OK);
    cr_expect_eq(nd_jwt_check_times(u, 3999999999), ND_ERR_JWT_NOT_YET_VALID);
    cr_expect_eq(nd_jwt_check_times(u, 4000000000), ND_OK);
    nd_jwt_free(u);
    nd_free(tok);
    chain_free(&c);
}

/* ---- JWT: refusals -------------------------------------------------------------------------- */

Test(jwt, tampering)
{
    chain_t c;
    chain_new(&c);
    char claims[512];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"pub\":{\"allow\":[\"a\"]}}}", c.upub);
    char *tok = encode(claims, c.aseed, 0);
    cr_assert_eq(decode_err(tok), ND_OK);
    char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');

    /* Claims changed and re-encoded, old signature kept. */
    char changed[512];
    snprintf(changed, sizeof changed,
             "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"pub\":{\"allow\":[\">\"]}}}", c.upub);
    char *t2 = encode(changed, c.aseed, 0);
    char *d2b = strchr(strchr(t2, '.') + 1, '.');
    char spliced[2048];
    snprintf(spliced, sizeof spliced, "%.*s%s", (int)(d2b - t2), t2, d2);
    cr_expect_eq(decode_err(spliced), ND_ERR_JWT_SIGNATURE);
    /* Signature flipped in the middle. */
    char *t3 = nd_xstrdup(tok);
    t3[(d2 - tok) + 20] = t3[(d2 - tok) + 20] == 'A' ? 'B' : 'A';
    cr_expect_eq(decode_err(t3), ND_ERR_JWT_SIGNATURE);
    nd_free(t3);
    /* Header swapped for the v1 alg: the signature no longer covers the same bytes. */
    char *t4 = forge("{\"typ\":\"JWT\",\"alg\":\"ed25519\"}", "{}", c.aseed);
    snprintf(spliced, sizeof spliced, "%.*s%s", (int)(strchr(t4, '.') - t4), t4, d1);
    cr_expect_eq(decode_err(spliced), ND_ERR_JWT_SIGNATURE);
    nd_free(t4);
    /* Signed by another account than "iss" says: raw mode keeps the forged iss. */
    char other[ND_NKEY_SEED_LEN + 1];
    new_seed(ND_NKEY_PREFIX_ACCOUNT, other);
    snprintf(changed, sizeof changed,
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\","
             "\"version\":2}}",
             c.apub, c.upub);
    char *t5 = encode(changed, other, ND_JWT_ENC_RAW);
    cr_expect_eq(decode_err(t5), ND_ERR_JWT_SIGNATURE);
    nd_free(t5);
    nd_free(t2);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, issuer_and_subject_roles)
{
    chain_t c;
    chain_new(&c);
    char claims[512];
    /* The encoder refuses to let the wrong role issue a claim... */
    snprintf(claims, sizeof claims, "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\"}}", c.upub);
    json_t *j = json_loads(claims, 0, NULL);
    char *tok = NULL;
    cr_expect_eq(nd_jwt_encode(j, c.oseed, strlen(c.oseed), 0, &tok), ND_ERR_JWT_SEED_ROLE);
    cr_expect_null(tok);
    cr_expect_eq(nd_jwt_encode(j, "SUBAD", 5, 0, &tok), ND_ERR_JWT_SEED);
    json_decref(j);
    /* ...and the decoder refuses such tokens made in raw mode. */
    char raw[1024];
    snprintf(raw, sizeof raw,
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2}}", c.opub,
             c.upub);
    tok = encode(raw, c.oseed, ND_JWT_ENC_RAW);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_ISSUER);
    nd_free(tok);
    snprintf(raw, sizeof raw,
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2}}",
             c.apub, c.apub);
    tok = encode(raw, c.aseed, ND_JWT_ENC_RAW);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_ISSUER, "a self-signed account");
    nd_free(tok);
    /* Subject of the wrong role, or not a key at all, or missing. */
    snprintf(claims, sizeof claims, "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\"}}", c.apub);
    tok = encode(claims, c.aseed, 0);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SUBJECT);
    nd_free(tok);
    tok = encode("{\"sub\":\"bob\",\"nats\":{\"type\":\"user\"}}", c.aseed, 0);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SUBJECT);
    nd_free(tok);
    tok = encode("{\"nats\":{\"type\":\"account\"}}", c.oseed, 0);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SUBJECT);
    nd_free(tok);
    /* An issuer that is not a valid key at all. */
    snprintf(raw, sizeof raw,
             "{\"iss\":\"%.55s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2}}",
             c.apub, c.upub);
    tok = encode(raw, c.aseed, ND_JWT_ENC_RAW);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SIGNATURE);
    nd_free(tok);
    snprintf(raw, sizeof raw,
             "{\"iss\":null,\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2}}", c.upub);
    tok = encode(raw, c.aseed, ND_JWT_ENC_RAW);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SIGNATURE);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, structure_errors)
{
    chain_t c;
    chain_new(&c);
    cr_expect_eq(decode_err(""), ND_ERR_JWT_CHUNKS);
    cr_expect_eq(decode_err("a.b"), ND_ERR_JWT_CHUNKS);
    cr_expect_eq(decode_err("a.b.c.d"), ND_ERR_JWT_CHUNKS);
    cr_expect_eq(decode_err(".."), ND_ERR_JWT_HEADER);
    cr_expect_eq(decode_err("!!.e30.AA"), ND_ERR_JWT_HEADER);
    nd_jwt_t *j = NULL;
    cr_expect_eq(nd_jwt_decode(NULL, 0, &j, NULL, 0), ND_ERR_JWT_TOO_LARGE);

    static const struct {
        const char *hdr;
        nd_err_t err;
    } hdrs[] = {
        {"{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}", ND_OK},
        {"{\"typ\":\"jwt\",\"alg\":\"ED25519-NKEY\"}", ND_OK},
        {"{\"typ\":\"JWT\",\"alg\":\"ed25519\"}", ND_OK},
        {"{\"typ\":\"JWS\",\"alg\":\"ed25519-nkey\"}", ND_ERR_JWT_HEADER_TYPE},
        {"{\"alg\":\"ed25519-nkey\"}", ND_ERR_JWT_HEADER_TYPE},
        {"{\"typ\":\"JWT\",\"alg\":\"HS256\"}", ND_ERR_JWT_HEADER_ALG},
        {"{\"typ\":\"JWT\",\"alg\":\"ed25519-nkeyx\"}", ND_ERR_JWT_HEADER_ALG},
        {"{\"typ\":\"JWT\"}", ND_ERR_JWT_HEADER_ALG},
        {"{\"typ\":\"JWT\",\"alg\":\"none\"}", ND_ERR_JWT_HEADER_ALG},
        {"{\"typ\":1,\"alg\":\"ed25519-nkey\"}", ND_ERR_JWT_HEADER},
        {"{\"typ\":\"JWT\",\"alg\":null}", ND_ERR_JWT_HEADER_ALG},
        {"[]", ND_ERR_JWT_HEADER},
        {"{", ND_ERR_JWT_HEADER},
        {"{\"typ\":\"JWT\",\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}", ND_ERR_JWT_HEADER},
    };
    char claims[512];
    snprintf(claims, sizeof claims,
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2}}", c.apub,
             c.upub);
    for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
        char *tok = forge(hdrs[i].hdr, claims, c.aseed);
        nd_err_t e = decode_err(tok);
        /* The v1 alg with v2 claims: header accepted, and the claim's version picks the
         * signature form, so it verifies. */
        cr_expect_eq(e, hdrs[i].err, "%s: got %s", hdrs[i].hdr, nd_strerror(e));
        nd_free(tok);
    }

    static const struct {
        const char *claims;
        nd_err_t err;
    } bad[] = {
        {"[]", ND_ERR_JWT_CLAIMS},
        {"\"x\"", ND_ERR_JWT_CLAIMS},
        {"{", ND_ERR_JWT_CLAIMS},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":3}}",
         ND_ERR_JWT_VERSION},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"cluster\",\"version\":2}}",
         ND_ERR_JWT_CLAIM_TYPE},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"type\":\"server\"}", ND_ERR_JWT_CLAIM_TYPE},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":\"2\"}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"exp\":\"soon\",\"nats\":{\"type\":\"user\",\"version\":"
         "2}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"iat\":1.5,\"nats\":{\"type\":\"user\",\"version\":2}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"name\":7,\"nats\":{\"type\":\"user\",\"version\":2}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":[]}", ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"pub\":[]}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"pub\":{"
         "\"allow\":\"a\"}}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"pub\":{"
         "\"allow\":[1]}}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"subs\":true}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"bearer_"
         "token\":1}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"resp\":{"
         "\"max\":\"1\"}}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"times\":[1]}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"src\":5}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"tags\":{}}}",
         ND_ERR_JWT_FIELD},
        {"{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"issuer_"
         "account\":[]}}",
         ND_ERR_JWT_FIELD},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char txt[1024];
        snprintf(txt, sizeof txt, bad[i].claims, c.apub, c.upub);
        char *tok = forge(HDR, txt, c.aseed);
        nd_err_t e = decode_err(tok);
        cr_expect_eq(e, bad[i].err, "%s: got %s", txt, nd_strerror(e));
        nd_free(tok);
    }

    /* Account claims of the wrong shapes (signed by the operator). */
    static const char *const badacc[] = {
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"limits\":{"
        "\"conn\":\"5\"}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"limits\":[]}"
        "}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"exports\":[{"
        "\"type\":\"bogus\"}]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"exports\":[{"
        "\"response_type\":\"Many\"}]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"exports\":["
        "5]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"imports\":{}"
        "}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,"
        "\"revocations\":{\"x\":\"y\"}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,"
        "\"revocations\":[]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"signing_"
        "keys\":[1]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"signing_"
        "keys\":[{\"kind\":\"x\",\"key\":\"k\"}]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"signing_"
        "keys\":[{\"kind\":\"user_scope\"}]}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"mappings\":{"
        "\"a\":{}}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"mappings\":{"
        "\"a\":[{\"weight\":300}]}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"limits\":{"
        "\"tiered_limits\":{\"R1\":1}}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,\"default_"
        "permissions\":{\"sub\":{\"deny\":{}}}}}",
        "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"account\",\"version\":2,"
        "\"authorization\":{\"auth_users\":\"u\"}}}",
    };
    for (size_t i = 0; i < sizeof badacc / sizeof badacc[0]; i++) {
        char txt[1024];
        snprintf(txt, sizeof txt, badacc[i], c.opub, c.apub);
        char *tok = forge(HDR, txt, c.oseed);
        nd_err_t e = decode_err(tok);
        cr_expect_eq(e, ND_ERR_JWT_FIELD, "%s: got %s", txt, nd_strerror(e));
        nd_free(tok);
    }
    chain_free(&c);
}

Test(jwt, nil_fields_are_absent)
{
    chain_t c;
    chain_new(&c);
    char txt[1024];
    snprintf(txt, sizeof txt,
             "{\"jti\":null,\"iat\":null,\"exp\":null,\"name\":null,\"iss\":\"%s\",\"sub\":\"%s\","
             "\"nats\":{\"type\":\"user\",\"version\":2,\"pub\":null,\"sub\":{\"allow\":null},"
             "\"resp\":null,\"src\":null,\"times\":null,\"tags\":null,\"issuer_account\":null}}",
             c.apub, c.upub);
    char *tok = forge(HDR, txt, c.aseed);
    nd_jwt_t *u;
    cr_assert_eq(decode(tok, &u), ND_OK);
    cr_expect_null(u->jti);
    cr_expect_eq(u->iat, 0);
    cr_expect(!u->u.user.lim.perms.has_resp);
    cr_expect_null(u->u.user.issuer_account);
    nd_jwt_free(u);
    nd_free(tok);
    /* No type at all: a generic claim (no roles checked). */
    snprintf(txt, sizeof txt, "{\"iss\":\"%s\",\"sub\":\"x\",\"nats\":{\"version\":2}}", c.apub);
    tok = forge(HDR, txt, c.aseed);
    cr_assert_eq(decode(tok, &u), ND_OK);
    cr_expect_eq(u->type, ND_JWT_GENERIC);
    nd_jwt_free(u);
    nd_free(tok);
    /* "nats": null leaves the version at 0, which Go's decoder treats as v1: the signature must
     * then cover the claims segment only, so this v2-signed token fails. */
    snprintf(txt, sizeof txt, "{\"iss\":\"%s\",\"sub\":\"x\",\"nats\":null}", c.apub);
    tok = forge(HDR, txt, c.aseed);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_SIGNATURE);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, truncations_and_mutations_never_crash)
{
    chain_t c;
    chain_new(&c);
    char claims[512];
    snprintf(
        claims, sizeof claims,
        "{\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"pub\":{\"allow\":[\"a\"]},\"subs\":-1}}",
        c.upub);
    char *tok = encode(claims, c.aseed, 0);
    size_t n = strlen(tok);
    nd_jwt_t *j;
    /* Every proper prefix fails; only the whole token decodes. */
    for (size_t l = 0; l < n; l++) {
        nd_err_t e = nd_jwt_decode(tok, l, &j, NULL, 0);
        cr_expect_neq(e, ND_OK, "prefix of %zu decoded", l);
        cr_expect_null(j);
    }
    cr_assert_eq(nd_jwt_decode(tok, n, &j, NULL, 0), ND_OK);
    nd_jwt_free(j);
    /* Random byte changes: no crash, no leak; whatever still decodes must carry the same claims
     * (a change in the unused low bits of a base64 character is invisible, as in Go). */
    char *m = nd_xmalloc(n + 1);
    unsigned seed = 12345;
    static const char alphabet[] = "AZaz09-_.=+/ \"{}";
    for (int it = 0; it < 3000; it++) {
        memcpy(m, tok, n + 1);
        int changes = 1 + (int)(rand_r(&seed) % 3);
        for (int k = 0; k < changes; k++)
            m[rand_r(&seed) % n] = alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
        char detail[128];
        nd_err_t e = nd_jwt_decode(m, n, &j, detail, sizeof detail);
        if (e == ND_OK) {
            cr_expect_str_eq(j->sub, c.upub);
            cr_expect_str_eq(j->iss, c.apub);
            nd_jwt_free(j);
        }
    }
    nd_free(m);
    nd_free(tok);
    chain_free(&c);
}

Test(jwt, huge_inputs)
{
    chain_t c;
    chain_new(&c);
    /* Just over the limit: refused before any decoding. */
    size_t big = ND_JWT_MAX_TOKEN + 1;
    char *b = nd_xmalloc(big + 1);
    memset(b, 'A', big);
    b[big] = '\0';
    b[10] = '.';
    b[20] = '.';
    nd_jwt_t *j;
    cr_expect_eq(nd_jwt_decode(b, big, &j, NULL, 0), ND_ERR_JWT_TOO_LARGE);
    nd_free(b);
    /* A large but legal token (a 600 KB allow list) round-trips. */
    size_t n = 20000;
    json_t *allow = json_array();
    for (size_t i = 0; i < n; i++) {
        char s[32];
        snprintf(s, sizeof s, "subj.%zu.>", i);
        json_array_append_new(allow, json_string(s));
    }
    json_t *cl = json_pack("{s:s, s:{s:s, s:{s:o}}}", "sub", c.upub, "nats", "type", "user", "pub",
                           "allow", allow);
    char *tok = NULL;
    cr_assert_eq(nd_jwt_encode(cl, c.aseed, strlen(c.aseed), 0, &tok), ND_OK);
    json_decref(cl);
    cr_expect(strlen(tok) < ND_JWT_MAX_TOKEN);
    cr_assert_eq(decode(tok, &j), ND_OK);
    cr_expect_eq(j->u.user.lim.perms.pub.allow.n, n);
    cr_expect_str_eq(j->u.user.lim.perms.pub.allow.v[n - 1], "subj.19999.>");
    nd_jwt_free(j);
    nd_free(tok);
    /* Deeply nested JSON in the claims fails cleanly (jansson bounds its depth). */
    size_t depth = 100000;
    char *deep = nd_xmalloc(depth * 2 + 64);
    size_t o = 0;
    o += (size_t)sprintf(deep, "{\"x\":");
    for (size_t i = 0; i < depth; i++)
        deep[o++] = '[';
    for (size_t i = 0; i < depth; i++)
        deep[o++] = ']';
    deep[o++] = '}';
    deep[o] = '\0';
    tok = forge(HDR, deep, c.aseed);
    cr_expect_eq(decode_err(tok), ND_ERR_JWT_CLAIMS);
    nd_free(tok);
    nd_free(deep);
    chain_free(&c);
}

/* ---- nonces --------------------------------------------------------------------------------- */

Test(jwt, nonce_signatures)
{
    const char *pub = "UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO";
    char url[100], std[100];
    nd_b64_encode(ND_B64_RAWURL, NATSC_SIG, 64, url);
    nd_b64_encode(ND_B64_STD, NATSC_SIG, 64, std);
    cr_expect(
        nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonce", 5, url, strlen(url)));
    cr_expect(
        nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonce", 5, std, strlen(std)),
        "standard base64 is accepted too");
    cr_expect(
        nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_ANY, "nonce", 5, url, strlen(url)));
    cr_expect(!nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_ACCOUNT, "nonce", 5, url,
                                   strlen(url)),
              "role mismatch");
    cr_expect(
        !nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonc3", 5, url, strlen(url)));
    cr_expect(!nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonce", 5, url, 80),
              "truncated signature");
    cr_expect(!nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonce", 5, "", 0));
    cr_expect(!nd_jwt_verify_nonce(pub, strlen(pub) - 1, ND_NKEY_PREFIX_USER, "nonce", 5, url,
                                   strlen(url)));
    char longsig[300];
    memset(longsig, 'A', sizeof longsig - 1);
    longsig[sizeof longsig - 1] = '\0';
    cr_expect(!nd_jwt_verify_nonce(pub, strlen(pub), ND_NKEY_PREFIX_USER, "nonce", 5, longsig,
                                   strlen(longsig)));
    cr_expect(!nd_jwt_verify_nonce(NULL, 0, ND_NKEY_PREFIX_USER, "nonce", 5, url, strlen(url)));
    /* Our signer produces what nats.c produces. */
    char *s = NULL;
    cr_assert(nd_jwt_sign_nonce(NATSC_SEED, strlen(NATSC_SEED), "nonce", 5, &s));
    cr_expect_str_eq(s, url);
    nd_free(s);
    cr_expect(!nd_jwt_sign_nonce("SUBAD", 5, "nonce", 5, &s));
    cr_expect_null(s);
}

Test(jwt, nonces)
{
    char a[ND_JWT_NONCE_LEN + 1], b[ND_JWT_NONCE_LEN + 1];
    cr_assert(nd_jwt_nonce(a));
    cr_assert(nd_jwt_nonce(b));
    cr_expect_eq(strlen(a), ND_JWT_NONCE_LEN);
    cr_expect_eq(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                 ND_JWT_NONCE_LEN);
    cr_expect_str_neq(a, b);
    /* A client signs it; we verify it. */
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(NSC_USEED, strlen(NSC_USEED), a, strlen(a), &sig));
    cr_expect(nd_jwt_verify_nonce(NSC_UPUB, strlen(NSC_UPUB), ND_NKEY_PREFIX_USER, a, strlen(a),
                                  sig, strlen(sig)));
    cr_expect(!nd_jwt_verify_nonce(NSC_UPUB, strlen(NSC_UPUB), ND_NKEY_PREFIX_USER, b, strlen(b),
                                   sig, strlen(sig)));
    nd_free(sig);
}

Test(jwt, error_texts)
{
    cr_expect_str_eq(nd_strerror(ND_ERR_JWT_CHUNKS), "expected 3 chunks");
    cr_expect_str_eq(nd_strerror(ND_ERR_JWT_EXPIRED), "claim is expired");
    cr_expect_str_eq(nd_strerror(ND_ERR_JWT_NOT_YET_VALID), "claim is not yet valid");
    cr_expect_str_eq(nd_strerror((nd_err_t)999), "unknown error");
    for (int e = ND_ERR_JWT_TOO_LARGE; e <= ND_ERR_JWT_CREDS; e++)
        cr_expect(strlen(nd_strerror((nd_err_t)e)) > 0);
    /* The detail names the field, and holds no secrets (only public keys and field names). */
    chain_t c;
    chain_new(&c);
    char txt[512];
    snprintf(txt, sizeof txt,
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"nats\":{\"type\":\"user\",\"version\":2,\"pub\":{"
             "\"deny\":[\"a\",2]}}}",
             c.apub, c.upub);
    char *tok = forge(HDR, txt, c.aseed);
    nd_jwt_t *j;
    char detail[128];
    cr_expect_eq(nd_jwt_decode(tok, strlen(tok), &j, detail, sizeof detail), ND_ERR_JWT_FIELD);
    cr_expect_str_eq(detail, "field nats.pub.deny[1]: expected a string");
    nd_free(tok);
    chain_free(&c);
}
