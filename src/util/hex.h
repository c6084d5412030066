/* Hexadecimal digits: the one decoder of a hex digit, for the config reader's \x escapes, DN
 * escapes and URL percent-decoding. Ctx: any thread. */
#ifndef ND_UTIL_HEX_H
#define ND_UTIL_HEX_H

/* Returns: the value 0-15 of the hex digit c (either case), or -1. */
static inline int
nd_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
