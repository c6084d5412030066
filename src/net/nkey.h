/* NKey public-key text encoding (base32 of prefix byte + key + CRC-16/XMODEM), as nats-server's
 * server_id uses. Reference: github.com/nats-io/nkeys (strkey.go). */
#ifndef ND_NKEY_H
#define ND_NKEY_H

#include <stddef.h>
#include <stdint.h>

#define ND_NKEY_PREFIX_SERVER (13u << 3) /* 'N' */
#define ND_NKEY_PUBLIC_LEN    56

/* Encodes a 32-byte public key with the given prefix byte into out (57 bytes with the NUL). */
void nd_nkey_encode_public(uint8_t prefix, const uint8_t key[32], char out[ND_NKEY_PUBLIC_LEN + 1]);
uint16_t nd_crc16_xmodem(const uint8_t *p, size_t n);

#endif
