/* NKeys: ed25519 identities in NATS's text form, as used for server_id, nkey users, JWT issuers
 * and subjects, and creds-file seeds.
 *
 * A public key is base32 (RFC 4648 alphabet, no padding) of [prefix byte][32-byte key][CRC-16/
 * XMODEM of the previous bytes, little endian]: 35 bytes, exactly 56 characters. The prefix byte
 * names the role and gives the first letter (O operator, A account, U user, N server, C cluster,
 * X curve). A seed is base32 of [ND_NKEY_PREFIX_SEED | role >> 5][(role & 31) << 3][32-byte
 * ed25519 seed][CRC-16]: 36 bytes, 58 characters, starting "S" + the role letter ("SU..." for a
 * user). Signatures are plain ed25519 (RFC 8032) over the message bytes, made and checked with
 * OpenSSL's EVP interface. Reference: github.com/nats-io/nkeys (strkey.go, keypair.go,
 * public.go); nats.c src/nkeys.c.
 *
 * Decoding is strict where nkeys is lax: exact lengths, upper-case alphabet only, a role prefix
 * the caller names, and a CRC check, so truncated, padded or re-typed keys are refused before any
 * cryptography runs (CVE-2020-26892 was a wrong-length key reaching the verifier).
 *
 * Ctx: any thread; every function is pure except for OpenSSL's internal allocations.
 */
#ifndef ND_NKEY_H
#define ND_NKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ND_NKEY_PREFIX_SEED     (18u << 3) /* 'S' */
#define ND_NKEY_PREFIX_PRIVATE  (15u << 3) /* 'P' */
#define ND_NKEY_PREFIX_SERVER   (13u << 3) /* 'N' */
#define ND_NKEY_PREFIX_CLUSTER  (2u << 3)  /* 'C' */
#define ND_NKEY_PREFIX_OPERATOR (14u << 3) /* 'O' */
#define ND_NKEY_PREFIX_ACCOUNT  0u         /* 'A' */
#define ND_NKEY_PREFIX_USER     (20u << 3) /* 'U' */
#define ND_NKEY_PREFIX_CURVE    (23u << 3) /* 'X' */
#define ND_NKEY_PREFIX_ANY      0xffu      /* decode: accept any public role */

#define ND_NKEY_PUBLIC_LEN 56
#define ND_NKEY_SEED_LEN   58
#define ND_NKEY_SIG_LEN    64

/* Encodes a 32-byte public key with the given prefix byte into out (57 bytes with the NUL). */
void nd_nkey_encode_public(uint8_t prefix, const uint8_t key[32], char out[ND_NKEY_PUBLIC_LEN + 1]);
uint16_t nd_crc16_xmodem(const uint8_t *p, size_t n);

/* Returns: true when s[0..len) is a public nkey of role `expect` (or of any public role with
 * ND_NKEY_PREFIX_ANY): exactly 56 valid base32 characters, good CRC. Stores the 32-byte key in
 * key and the role in *role when they are not NULL. */
bool nd_nkey_decode_public(const char *s, size_t len, uint8_t expect, uint8_t *role,
                           uint8_t key[32]);

/* Returns: true when s[0..len) is a seed (58 characters, good CRC, seed prefix, valid public
 * role). Stores the role in *role and the 32-byte ed25519 seed in seed (either may be NULL).
 * The caller wipes seed after use (nd_nkey_wipe). */
bool nd_nkey_decode_seed(const char *s, size_t len, uint8_t *role, uint8_t seed[32]);

/* Encodes a seed of the given public role (59 bytes with the NUL). */
void nd_nkey_encode_seed(uint8_t role, const uint8_t seed[32], char out[ND_NKEY_SEED_LEN + 1]);

/* Derives the ed25519 public key of a seed. Returns: false only when OpenSSL fails. */
__attribute__((warn_unused_result)) bool nd_nkey_seed_public(const uint8_t seed[32],
                                                             uint8_t pub[32]);

/* Signs msg with the ed25519 key of seed. Returns: false only when OpenSSL fails. */
__attribute__((warn_unused_result)) bool nd_nkey_sign(const uint8_t seed[32], const void *msg,
                                                      size_t len, uint8_t sig[ND_NKEY_SIG_LEN]);

/* Returns: true when sig (siglen bytes; anything but 64 is refused) is a valid ed25519 signature
 * of msg by pub. */
bool nd_nkey_verify(const uint8_t pub[32], const void *msg, size_t len, const uint8_t *sig,
                    size_t siglen);

/* Fills out with n random bytes from OpenSSL's CSPRNG (new seeds, nonces). Returns: false on
 * failure of the generator. */
__attribute__((warn_unused_result)) bool nd_nkey_random(void *out, size_t n);

/* Base32 (RFC 4648 alphabet, no padding) of p[0..n) into out, which holds (n * 8 + 4) / 5 + 1
 * bytes; adds a NUL. Also used for JWT ids. */
void nd_nkey_base32(const uint8_t *p, size_t n, char *out);

/* Overwrites secret material in a way the compiler cannot drop. */
void nd_nkey_wipe(void *p, size_t n);

#endif
