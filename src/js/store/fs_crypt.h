/* Per-record encryption at rest and compression for the file store.
 *
 * Sealing (AEAD). A store with a cipher seals every record body with AES-256-GCM or
 * ChaCha20-Poly1305 under the stream's 32-byte key. Each sealing context is made from the key
 * and a random salt (ND_FS_SALT_LEN bytes) that the file store keeps next to the records it
 * protects; the context derives its own record key from both (HKDF-SHA256), so two salts give
 * unrelated keys. Inside one context the 12-byte nonce is the record's sequence number, so:
 *
 *   INVARIANT: one (key, salt) pair never seals two different records under the same sequence.
 *   A store that can reuse a sequence (truncate, then store again) must start a new context
 *   with a fresh salt for the records written after the truncation (the file store starts a new
 *   block with its own salt). Re-sealing the same bytes with the same seq and AAD is harmless:
 *   it yields the same ciphertext.
 *
 * The sequence and the caller's AAD (the record header) are authenticated, so a record moved to
 * another sequence, or given another header, fails to open, exactly like a flipped bit.
 *
 * Compression. LZ4 block format with the original length in front (4 bytes, little endian).
 * Decompression is bounded by the caller's limit, checked against that prefix before any
 * allocation or copy, so a "bomb" cannot make the store allocate more than it allows.
 *
 * Order on write: compress, then seal (sealed data does not compress). On read: open, then
 * decompress.
 *
 * Ctx: a context belongs to one store (one actor); nothing here is thread-safe per context.
 */
#ifndef NATSD_FS_CRYPT_H
#define NATSD_FS_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "js/store/store.h"

#define ND_FS_KEY_LEN   32
#define ND_FS_SALT_LEN  16
#define ND_FS_NONCE_LEN 12
#define ND_FS_TAG_LEN   16
/* Bytes in front of LZ4 data: the uncompressed length. */
#define ND_FS_COMPRESS_HDR 4
/* The largest input nd_fs_compress accepts (LZ4's own limit). */
#define ND_FS_COMPRESS_MAX 0x7E000000u

typedef struct nd_fs_crypt nd_fs_crypt_t;

/* Fills salt with random bytes (OpenSSL's CSPRNG). Returns: false if the CSPRNG failed. */
bool nd_fs_salt_random(uint8_t salt[ND_FS_SALT_LEN]) __attribute__((warn_unused_result));

/* Makes a sealing context for cipher (AES_GCM or CHACHA) from the 32-byte key and a salt.
 * Borrows: key and salt (copied into derived material). Returns: NULL for ND_CIPHER_NONE, an
 * unknown cipher or a failure inside OpenSSL. */
nd_fs_crypt_t *nd_fs_crypt_new(nd_store_cipher_t cipher, const uint8_t key[ND_FS_KEY_LEN],
                               const uint8_t salt[ND_FS_SALT_LEN]);
/* Frees the context and wipes its key material. NULL is fine. */
void nd_fs_crypt_free(nd_fs_crypt_t *c);

/* The size of a sealed body of n plaintext bytes. */
static inline size_t
nd_fs_sealed_len(size_t n)
{
    return n + ND_FS_TAG_LEN;
}

/* Seals n bytes of in for sequence seq, authenticating aad (may be NULL when aad_len is 0) too.
 * out receives nd_fs_sealed_len(n) bytes (ciphertext then tag); out may equal in.
 * Returns: false on failure inside OpenSSL (nothing usable in out). */
bool nd_fs_seal(nd_fs_crypt_t *c, uint64_t seq, const void *aad, size_t aad_len, const void *in,
                size_t n, uint8_t *out, size_t *outn) __attribute__((warn_unused_result));

/* Opens a body made by nd_fs_seal. out receives n - ND_FS_TAG_LEN bytes; out may equal in.
 * Returns: false when the body is shorter than a tag or does not authenticate (wrong key, salt,
 * seq or aad, or any changed byte); out's contents are then undefined and must not be used. */
bool nd_fs_open_sealed(nd_fs_crypt_t *c, uint64_t seq, const void *aad, size_t aad_len,
                       const void *in, size_t n, uint8_t *out, size_t *outn)
    __attribute__((warn_unused_result));

/* Capacity that nd_fs_compress always fits in for n input bytes (n <= ND_FS_COMPRESS_MAX). */
size_t nd_fs_compress_bound(size_t n);

/* Compresses n bytes of in into out (cap bytes): ND_FS_COMPRESS_HDR length bytes, then LZ4.
 * Returns: false when n is over ND_FS_COMPRESS_MAX or out is too small. The result may be
 * larger than the input for incompressible data: the caller compares and may store it raw. */
bool nd_fs_compress(const void *in, size_t n, uint8_t *out, size_t cap, size_t *outn)
    __attribute__((warn_unused_result));

/* The uncompressed length that a compressed body declares, without decompressing.
 * Returns: false when n is too short to hold the length. */
bool nd_fs_decompressed_len(const void *in, size_t n, size_t *len)
    __attribute__((warn_unused_result));

/* Decompresses into out (cap bytes). Returns: false when the body is malformed, declares more
 * than cap bytes, or does not decode to exactly the declared length. */
bool nd_fs_decompress(const void *in, size_t n, uint8_t *out, size_t cap, size_t *outn)
    __attribute__((warn_unused_result));

/* Decompresses into a new malloc'd buffer (*out, caller frees), refusing before allocating when
 * the declared length is over max. Returns: false as nd_fs_decompress (then *out is NULL). */
bool nd_fs_decompress_alloc(const void *in, size_t n, size_t max, uint8_t **out, size_t *outn)
    __attribute__((warn_unused_result));

#endif
