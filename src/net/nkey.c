/* NKey public-key text encoding; see nkey.h. */
#include "nkey.h"

#include <string.h>

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

void
nd_nkey_encode_public(uint8_t prefix, const uint8_t key[32], char out[ND_NKEY_PUBLIC_LEN + 1])
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    uint8_t raw[35];
    raw[0] = prefix;
    memcpy(raw + 1, key, 32);
    uint16_t crc = nd_crc16_xmodem(raw, 33);
    raw[33] = (uint8_t)(crc & 0xff);
    raw[34] = (uint8_t)(crc >> 8);
    /* 35 bytes = 280 bits = exactly 56 base32 characters, no padding. */
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < sizeof raw; i++) {
        acc = (acc << 8) | raw[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = alphabet[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    out[o] = '\0';
}
