/* NKeys: base32 text forms, CRC-16, seeds and ed25519 through OpenSSL; see nkey.h. */
#include "util/nkey.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

uint16_t
nd_crc16_xmodem(const uint8_t *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

static void
b32_encode(const uint8_t *raw, size_t n, char *out)
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | raw[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = alphabet[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0)
        out[o++] = alphabet[(acc << (5 - bits)) & 31];
    out[o] = '\0';
}

/* Decodes exactly `len` base32 characters into exactly `n` bytes (len * 5 / 8 == n). Leftover
 * bits are ignored, as Go's decoder does; the CRC that follows catches any corruption. */
static bool
b32_decode(const char *s, size_t len, uint8_t *out, size_t n)
{
    if (len * 5 / 8 != n)
        return false;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        uint32_t v;
        if (c >= 'A' && c <= 'Z')
            v = (uint32_t)(c - 'A');
        else if (c >= '2' && c <= '7')
            v = (uint32_t)(c - '2' + 26);
        else
            return false;
        acc = (acc << 5) | v;
        bits += 5;
        if (bits >= 8) {
            out[o++] = (uint8_t)(acc >> (bits - 8));
            bits -= 8;
        }
    }
    return o == n;
}

static bool
crc_ok(const uint8_t *raw, size_t n)
{
    uint16_t crc = nd_crc16_xmodem(raw, n - 2);
    return raw[n - 2] == (uint8_t)(crc & 0xff) && raw[n - 1] == (uint8_t)(crc >> 8);
}

static bool
public_role(uint8_t p)
{
    switch (p) {
    case ND_NKEY_PREFIX_OPERATOR:
    case ND_NKEY_PREFIX_SERVER:
    case ND_NKEY_PREFIX_CLUSTER:
    case ND_NKEY_PREFIX_ACCOUNT:
    case ND_NKEY_PREFIX_USER:
    case ND_NKEY_PREFIX_CURVE:
        return true;
    default:
        return false;
    }
}

void
nd_nkey_encode_public(uint8_t prefix, const uint8_t key[32], char out[ND_NKEY_PUBLIC_LEN + 1])
{
    uint8_t raw[35];
    raw[0] = prefix;
    memcpy(raw + 1, key, 32);
    uint16_t crc = nd_crc16_xmodem(raw, 33);
    raw[33] = (uint8_t)(crc & 0xff);
    raw[34] = (uint8_t)(crc >> 8);
    /* 35 bytes = 280 bits = exactly 56 base32 characters, no padding. */
    b32_encode(raw, sizeof raw, out);
}

bool
nd_nkey_decode_public(const char *s, size_t len, uint8_t expect, uint8_t *role, uint8_t key[32])
{
    uint8_t raw[35];
    if (s == NULL || len != ND_NKEY_PUBLIC_LEN || !b32_decode(s, len, raw, sizeof raw) ||
        !crc_ok(raw, sizeof raw) || !public_role(raw[0]))
        return false;
    if (expect != ND_NKEY_PREFIX_ANY && raw[0] != expect)
        return false;
    if (role != NULL)
        *role = raw[0];
    if (key != NULL)
        memcpy(key, raw + 1, 32);
    return true;
}

bool
nd_nkey_decode_seed(const char *s, size_t len, uint8_t *role, uint8_t seed[32])
{
    uint8_t raw[36];
    bool ok = false;
    if (s != NULL && len == ND_NKEY_SEED_LEN && b32_decode(s, len, raw, sizeof raw) &&
        crc_ok(raw, sizeof raw) && (raw[0] & 0xf8) == ND_NKEY_PREFIX_SEED) {
        uint8_t r = (uint8_t)(((raw[0] & 7) << 5) | ((raw[1] & 0xf8) >> 3));
        if (public_role(r)) {
            ok = true;
            if (role != NULL)
                *role = r;
            if (seed != NULL)
                memcpy(seed, raw + 2, 32);
        }
    }
    nd_nkey_wipe(raw, sizeof raw);
    return ok;
}

void
nd_nkey_encode_seed(uint8_t role, const uint8_t seed[32], char out[ND_NKEY_SEED_LEN + 1])
{
    uint8_t raw[36];
    raw[0] = (uint8_t)(ND_NKEY_PREFIX_SEED | (role >> 5));
    raw[1] = (uint8_t)((role & 31) << 3);
    memcpy(raw + 2, seed, 32);
    uint16_t crc = nd_crc16_xmodem(raw, 34);
    raw[34] = (uint8_t)(crc & 0xff);
    raw[35] = (uint8_t)(crc >> 8);
    b32_encode(raw, sizeof raw, out);
    nd_nkey_wipe(raw, sizeof raw);
}

bool
nd_nkey_seed_public(const uint8_t seed[32], uint8_t pub[32])
{
    EVP_PKEY *pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    if (pk == NULL)
        return false;
    size_t n = 32;
    bool ok = EVP_PKEY_get_raw_public_key(pk, pub, &n) == 1 && n == 32;
    EVP_PKEY_free(pk);
    return ok;
}

bool
nd_nkey_sign(const uint8_t seed[32], const void *msg, size_t len, uint8_t sig[ND_NKEY_SIG_LEN])
{
    EVP_PKEY *pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    if (pk == NULL)
        return false;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t n = ND_NKEY_SIG_LEN;
    /* Ed25519 is a one-shot algorithm: no digest, and DigestSign over the whole message. */
    bool ok = md != NULL && EVP_DigestSignInit(md, NULL, NULL, NULL, pk) == 1 &&
              EVP_DigestSign(md, sig, &n, msg, len) == 1 && n == ND_NKEY_SIG_LEN;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pk);
    return ok;
}

bool
nd_nkey_verify(const uint8_t pub[32], const void *msg, size_t len, const uint8_t *sig,
               size_t siglen)
{
    if (sig == NULL || siglen != ND_NKEY_SIG_LEN)
        return false;
    EVP_PKEY *pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
    if (pk == NULL)
        return false;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md != NULL && EVP_DigestVerifyInit(md, NULL, NULL, NULL, pk) == 1 &&
              EVP_DigestVerify(md, sig, siglen, msg, len) == 1;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pk);
    return ok;
}

void
nd_nkey_base32(const uint8_t *p, size_t n, char *out)
{
    b32_encode(p, n, out);
}

bool
nd_nkey_random(void *out, size_t n)
{
    return n <= (size_t)0x7fffffff && RAND_bytes(out, (int)n) == 1;
}

void
nd_nkey_wipe(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}
