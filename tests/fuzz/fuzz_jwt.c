/* libFuzzer driver for NATS JWTs, creds files, nonce signatures (src/auth/jwt.c, nkey.c,
 * base64.c) and permission entries (src/auth/perms.c): reliability.md §7 item 3 (truncated or
 * wrong-length keys, bad base32 or CRC, nil fields, malformed tokens: refused, never a crash).
 *
 * Input layout: byte 0 picks the mode, the rest is the text.
 *  0: the text is a token, decoded as is (header, base64, JSON, keys, signature checks).
 *  1: the text is a claims object; it is signed with a fixed account key (raw mode, so "iss" and
 *     everything else stay as given) and then decoded, so the fuzzer reaches the typed claim
 *     parsers behind the signature check. A decoded result is checked for time and revocation.
 *  2: the text is a creds file; whatever it yields is decoded and used as a seed.
 *  3: the text is "<public key> <signature>", verified against a fixed nonce.
 *  4: the text is newline-separated permission entries (kind from the first byte of each line),
 *     sealed, then matched against subjects taken from the same lines.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "auth/jwt.h"
#include "util/nkey.h"
#include "auth/perms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fixed account seed: the nats.go test suite's (public; it signs nothing real). */
static const char ASEED[] = "SAAASUPRY3ONU4GJR7J5RUVYRUFZXG56F4WEXELLLORQ65AEPSMIFTOJGE";

static void
decode_and_use(const char *tok, size_t len)
{
    nd_jwt_t *j = NULL;
    char detail[128];
    if (nd_jwt_decode(tok, len, &j, detail, sizeof detail) != ND_OK) {
        if (j != NULL)
            abort();
        return;
    }
    (void)nd_jwt_check_times(j, 1700000000);
    (void)nd_jwt_user_revoked(j, j);
    (void)nd_jwt_account_has_signer(j, j->iss, NULL);
    nd_jwt_free(j);
}

static void
perms_lines(const char *s, size_t n)
{
    nd_permset_t *p = nd_perms_new();
    const char *subjects[16];
    size_t slen[16], ns = 0;
    for (size_t i = 0; i < n;) {
        const char *e = memchr(s + i, '\n', n - i);
        size_t l = e ? (size_t)(e - (s + i)) : n - i;
        if (l > 0) {
            nd_perms_kind_t k = (nd_perms_kind_t)((unsigned char)s[i] % 4);
            (void)!nd_perms_add(p, k, s + i + 1, l - 1);
            if (ns < 16) {
                subjects[ns] = s + i + 1;
                slen[ns++] = l - 1;
            }
        }
        i += l + 1;
    }
    if (n > 0 && s[0] & 1)
        nd_perms_set_responses(p, s[0] & 2 ? 0 : 2, 0);
    nd_perms_seal(p);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    for (size_t i = 0; i < ns; i++) {
        for (size_t q = 0; q < ns; q++) {
            (void)nd_perms_conn_sub(&c, subjects[i], slen[i], subjects[q], q == i ? 0 : slen[q]);
            (void)nd_perms_conn_deliver_denied(&c, subjects[i], slen[i]);
        }
        (void)nd_perms_conn_pub(&c, subjects[i], slen[i], (int64_t)i);
        nd_perms_conn_track_reply(&c, subjects[i], slen[i], (int64_t)i);
        (void)nd_perms_conn_pub(&c, subjects[i], slen[i], (int64_t)i);
    }
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0: {
        /* An exactly sized heap copy, so ASan sees any read past the end. */
        char *t = nd_xmalloc(n ? n : 1);
        memcpy(t, s, n);
        decode_and_use(t, n);
        nd_free(t);
        break;
    }
    case 1: {
        json_t *c = json_loadb(s, n, 0, NULL);
        char *tok = NULL;
        if (c != NULL && nd_jwt_encode(c, ASEED, strlen(ASEED), ND_JWT_ENC_RAW, &tok) == ND_OK) {
            decode_and_use(tok, strlen(tok));
            nd_free(tok);
        }
        json_decref(c);
        break;
    }
    case 2: {
        char *jwt = NULL, *seed = NULL, *sig = NULL;
        if (nd_jwt_creds_parse(s, n, &jwt, &seed) == ND_OK) {
            decode_and_use(jwt, strlen(jwt));
            if (nd_jwt_sign_nonce(seed, strlen(seed), "nonce", 5, &sig))
                nd_free(sig);
            nd_free(jwt);
            nd_free(seed);
        }
        break;
    }
    case 3: {
        const char *sp = memchr(s, ' ', n);
        if (sp != NULL)
            (void)nd_jwt_verify_nonce(s, (size_t)(sp - s), ND_NKEY_PREFIX_ANY, "nonce", 5, sp + 1,
                                      n - (size_t)(sp - s) - 1);
        break;
    }
    default:
        perms_lines(s, n);
        break;
    }
    return 0;
}
