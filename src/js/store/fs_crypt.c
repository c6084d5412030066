/* Per-record AEAD sealing and bounded LZ4 compression for the file store (see fs_crypt.h).
 *
 * Key schedule: record_key = HKDF-SHA256(ikm = stream key, salt = context salt,
 * info = "natsd filestore record v1" || cipher id). Binding the cipher id means the same key used
 * with both ciphers never shares a derived key. The nonce is 4 zero bytes followed by the
 * sequence in big endian: unique within a context because a context never seals two records
 * under one sequence (the invariant in fs_crypt.h), and contexts differ in key, not in nonce
 * space, so there is no birthday bound across salts beyond the 128-bit salt itself.
 *
 * AAD: the sequence (8 bytes, big endian) and then the caller's AAD. The sequence is in the
 * nonce already; repeating it in the AAD costs nothing and keeps the binding explicit even if
 * the nonce layout changes.
 *
 * References: NIST SP 800-38D (GCM), RFC 8439 (ChaCha20-Poly1305), RFC 5869 (HKDF); nats-server
 * filestore.go seals per message block with a per-block key and a random nonce per record; we
 * use the sequence instead, which needs no stored nonce but needs the invariant above.
 */
#include "js/store/fs_crypt.h"

#include <lz4.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"

struct nd_fs_crypt {
    nd_store_cipher_t cipher;
    const EVP_CIPHER *evp; /* static OpenSSL object, not owned */
    EVP_CIPHER_CTX *enc;   /* keyed once; each record sets only its nonce */
    EVP_CIPHER_CTX *dec;
};

static const char kdf_info[] = "natsd filestore record v1";

bool
nd_fs_salt_random(uint8_t salt[ND_FS_SALT_LEN])
{
    return RAND_bytes(salt, ND_FS_SALT_LEN) == 1;
}

/* Derives the record key with HKDF-SHA256. Returns: false on an OpenSSL failure. */
static bool
derive_key(nd_store_cipher_t cipher, const uint8_t key[ND_FS_KEY_LEN],
           const uint8_t salt[ND_FS_SALT_LEN], uint8_t out[ND_FS_KEY_LEN])
{
    uint8_t info[sizeof(kdf_info)];
    memcpy(info, kdf_info, sizeof(kdf_info) - 1);
    info[sizeof(kdf_info) - 1] = (uint8_t)cipher;

    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (kdf == NULL)
        return false;
    EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (kctx == NULL)
        return false;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
        OSSL_PARAM_construct_octet_string("key", (void *)key, ND_FS_KEY_LEN),
        OSSL_PARAM_construct_octet_string("salt", (void *)salt, ND_FS_SALT_LEN),
        OSSL_PARAM_construct_octet_string("info", info, sizeof(info)),
        OSSL_PARAM_construct_end(),
    };
    bool ok = EVP_KDF_derive(kctx, out, ND_FS_KEY_LEN, params) == 1;
    EVP_KDF_CTX_free(kctx);
    return ok;
}

nd_fs_crypt_t *
nd_fs_crypt_new(nd_store_cipher_t cipher, const uint8_t key[ND_FS_KEY_LEN],
                const uint8_t salt[ND_FS_SALT_LEN])
{
    const EVP_CIPHER *evp;
    switch (cipher) {
    case ND_CIPHER_AES_GCM:
        evp = EVP_aes_256_gcm();
        break;
    case ND_CIPHER_CHACHA:
        evp = EVP_chacha20_poly1305();
        break;
    default:
        return NULL;
    }
    if (evp == NULL || key == NULL || salt == NULL)
        return NULL;

    uint8_t rk[ND_FS_KEY_LEN];
    if (!derive_key(cipher, key, salt, rk))
        return NULL;

    nd_fs_crypt_t *c = nd_new(nd_fs_crypt_t);
    c->cipher = cipher;
    c->evp = evp;
    c->enc = EVP_CIPHER_CTX_new();
    c->dec = EVP_CIPHER_CTX_new();
    /* Both ciphers default to a 12-byte nonce, so no EVP_CTRL_AEAD_SET_IVLEN is needed; the key
     * goes in once here and each record supplies only its nonce. */
    bool ok = c->enc != NULL && c->dec != NULL &&
              EVP_EncryptInit_ex(c->enc, evp, NULL, rk, NULL) == 1 &&
              EVP_DecryptInit_ex(c->dec, evp, NULL, rk, NULL) == 1 &&
              EVP_CIPHER_CTX_get_iv_length(c->enc) == ND_FS_NONCE_LEN;
    OPENSSL_cleanse(rk, sizeof(rk));
    if (!ok) {
        nd_fs_crypt_free(c);
        return NULL;
    }
    return c;
}

void
nd_fs_crypt_free(nd_fs_crypt_t *c)
{
    if (c == NULL)
        return;
    /* EVP_CIPHER_CTX_free cleanses the expanded key schedule. */
    EVP_CIPHER_CTX_free(c->enc);
    EVP_CIPHER_CTX_free(c->dec);
    nd_free(c);
}

static void
put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void
make_nonce(uint64_t seq, uint8_t nonce[ND_FS_NONCE_LEN])
{
    memset(nonce, 0, 4);
    put_be64(nonce + 4, seq);
}

/* OpenSSL takes int lengths; records are far below INT_MAX, but a caller's size is checked. */
static bool
fits_int(size_t n)
{
    return n <= (size_t)0x7fffffff - 64;
}

/* Feeds the sequence and the caller's AAD to an AEAD context (enc selects the direction). */
static bool
feed_aad(EVP_CIPHER_CTX *x, bool enc, uint64_t seq, const void *aad, size_t aad_len)
{
    uint8_t s[8];
    int len;
    put_be64(s, seq);
    if ((enc ? EVP_EncryptUpdate(x, NULL, &len, s, 8) : EVP_DecryptUpdate(x, NULL, &len, s, 8)) !=
        1)
        return false;
    if (aad_len == 0)
        return true;
    if (aad == NULL || !fits_int(aad_len))
        return false;
    return (enc ? EVP_EncryptUpdate(x, NULL, &len, aad, (int)aad_len)
                : EVP_DecryptUpdate(x, NULL, &len, aad, (int)aad_len)) == 1;
}

bool
nd_fs_seal(nd_fs_crypt_t *c, uint64_t seq, const void *aad, size_t aad_len, const void *in,
           size_t n, uint8_t *out, size_t *outn)
{
    if (c == NULL || out == NULL || !fits_int(n) || (n > 0 && in == NULL))
        return false;
    uint8_t nonce[ND_FS_NONCE_LEN];
    make_nonce(seq, nonce);
    int len = 0, fin = 0;
    if (EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, nonce) != 1)
        return false;
    if (!feed_aad(c->enc, true, seq, aad, aad_len))
        return false;
    if (n > 0 && EVP_EncryptUpdate(c->enc, out, &len, in, (int)n) != 1)
        return false;
    if (EVP_EncryptFinal_ex(c->enc, out + len, &fin) != 1)
        return false;
    if ((size_t)len + (size_t)fin != n)
        return false;
    if (EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_AEAD_GET_TAG, ND_FS_TAG_LEN, out + n) != 1)
        return false;
    *outn = n + ND_FS_TAG_LEN;
    return true;
}

bool
nd_fs_open_sealed(nd_fs_crypt_t *c, uint64_t seq, const void *aad, size_t aad_len, const void *in,
                  size_t n, uint8_t *out, size_t *outn)
{
    if (c == NULL || in == NULL || out == NULL || n < ND_FS_TAG_LEN || !fits_int(n))
        return false;
    size_t body = n - ND_FS_TAG_LEN;
    uint8_t tag[ND_FS_TAG_LEN];
    /* The tag is copied first: with out == in, decrypting overwrites only the body, but the copy
     * keeps that reasoning local. */
    memcpy(tag, (const uint8_t *)in + body, ND_FS_TAG_LEN);
    uint8_t nonce[ND_FS_NONCE_LEN];
    make_nonce(seq, nonce);
    int len = 0, fin = 0;
    if (EVP_DecryptInit_ex(c->dec, NULL, NULL, NULL, nonce) != 1)
        return false;
    if (!feed_aad(c->dec, false, seq, aad, aad_len))
        return false;
    if (body > 0 && EVP_DecryptUpdate(c->dec, out, &len, in, (int)body) != 1)
        return false;
    if (EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_AEAD_SET_TAG, ND_FS_TAG_LEN, tag) != 1)
        return false;
    /* Final is where the tag is checked: anything but 1 means the record is not authentic. */
    if (EVP_DecryptFinal_ex(c->dec, out + len, &fin) != 1)
        return false;
    if ((size_t)len + (size_t)fin != body)
        return false;
    *outn = body;
    return true;
}

/* ---- compression ---------------------------------------------------------------------------- */

static void
put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t
nd_fs_compress_bound(size_t n)
{
    if (n > ND_FS_COMPRESS_MAX)
        return 0;
    return ND_FS_COMPRESS_HDR + (size_t)LZ4_compressBound((int)n);
}

bool
nd_fs_compress(const void *in, size_t n, uint8_t *out, size_t cap, size_t *outn)
{
    if (n > ND_FS_COMPRESS_MAX || out == NULL || cap < ND_FS_COMPRESS_HDR || (n > 0 && in == NULL))
        return false;
    put_le32(out, (uint32_t)n);
    if (n == 0) {
        *outn = ND_FS_COMPRESS_HDR;
        return true;
    }
    size_t room = cap - ND_FS_COMPRESS_HDR;
    if (room > 0x7fffffff)
        room = 0x7fffffff;
    int w = LZ4_compress_default(in, (char *)out + ND_FS_COMPRESS_HDR, (int)n, (int)room);
    if (w <= 0)
        return false;
    *outn = ND_FS_COMPRESS_HDR + (size_t)w;
    return true;
}

bool
nd_fs_decompressed_len(const void *in, size_t n, size_t *len)
{
    if (in == NULL || n < ND_FS_COMPRESS_HDR)
        return false;
    *len = get_le32(in);
    return true;
}

bool
nd_fs_decompress(const void *in, size_t n, uint8_t *out, size_t cap, size_t *outn)
{
    size_t want;
    if (!nd_fs_decompressed_len(in, n, &want) || want > cap || want > ND_FS_COMPRESS_MAX)
        return false;
    size_t src = n - ND_FS_COMPRESS_HDR;
    if (want == 0) {
        /* An empty input compresses to the length alone; anything after it is not ours. */
        if (src != 0)
            return false;
        *outn = 0;
        return true;
    }
    if (out == NULL || src == 0 || src > 0x7fffffff)
        return false;
    /* LZ4_decompress_safe never writes past the capacity given, which is the declared length:
     * a stream that would decode to more is an error, not a larger buffer. */
    int r = LZ4_decompress_safe((const char *)in + ND_FS_COMPRESS_HDR, (char *)out, (int)src,
                                (int)want);
    if (r < 0 || (size_t)r != want)
        return false;
    *outn = want;
    return true;
}

bool
nd_fs_decompress_alloc(const void *in, size_t n, size_t max, uint8_t **out, size_t *outn)
{
    *out = NULL;
    size_t want;
    if (!nd_fs_decompressed_len(in, n, &want) || want > max || want > ND_FS_COMPRESS_MAX)
        return false;
    /* LZ4's best ratio is about 255:1, so a body declaring far more than that is malformed and is
     * refused before the allocation it asks for. */
    size_t src = n - ND_FS_COMPRESS_HDR;
    if (want / 255 > src + 16)
        return false;
    uint8_t *buf = nd_xmalloc(want > 0 ? want : 1);
    if (!nd_fs_decompress(in, n, buf, want, outn)) {
        nd_free(buf);
        return false;
    }
    *out = buf;
    return true;
}
