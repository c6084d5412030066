/* Base64 (RFC 4648) in the two variants NATS uses: URL-safe without padding ("RawURL", JWT
 * segments and CONNECT nonce signatures) and standard with padding (accepted as a fallback for
 * nonce signatures, as nats-server's auth.go does).
 *
 * Decoding is strict: only the variant's alphabet, no whitespace, and for RawURL no '=' and no
 * length of 1 mod 4. Unused low bits of the last character are ignored, as Go's decoder does.
 * Ctx: any thread; pure functions.
 */
#ifndef ND_BASE64_H
#define ND_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { ND_B64_RAWURL, ND_B64_STD } nd_b64_kind_t;

/* Returns: the number of characters encoding n bytes (without a NUL). */
size_t nd_b64_encoded_len(nd_b64_kind_t kind, size_t n);
/* Returns: an upper bound of the bytes that len characters decode to. */
static inline size_t
nd_b64_decoded_max(size_t len)
{
    return len / 4 * 3 + 3;
}

/* Encodes p[0..n) into out, which holds nd_b64_encoded_len() + 1 bytes; adds a NUL.
 * Returns: the length written (without the NUL). */
size_t nd_b64_encode(nd_b64_kind_t kind, const void *p, size_t n, char *out);

/* Decodes s[0..len) into out (room for cap bytes). Returns: false on a character outside the
 * alphabet, bad padding or length, or when the result would not fit; *outlen is set on success. */
__attribute__((warn_unused_result)) bool nd_b64_decode(nd_b64_kind_t kind, const char *s,
                                                       size_t len, uint8_t *out, size_t cap,
                                                       size_t *outlen);

#endif
