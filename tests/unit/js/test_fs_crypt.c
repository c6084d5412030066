/* File store record sealing (AES-256-GCM, ChaCha20-Poly1305) and bounded LZ4 compression:
 * round trips, and every kind of tampering or mix-up refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "js/store/fs_crypt.h"

static const nd_store_cipher_t ciphers[] = {ND_CIPHER_AES_GCM, ND_CIPHER_CHACHA};
#define NCIPHERS (sizeof(ciphers) / sizeof(ciphers[0]))

static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static const uint8_t key1[ND_FS_KEY_LEN] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                            12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                            23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t key2[ND_FS_KEY_LEN] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                            12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                            23, 24, 25, 26, 27, 28, 29, 30, 31, 33};
static const uint8_t salt1[ND_FS_SALT_LEN] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                                              0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf};
static const uint8_t salt2[ND_FS_SALT_LEN] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                                              0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0x00};

static const uint8_t hdr[] = "\x01\x00\x00\x00hdr:foo.bar";

Test(fs_crypt, new_refuses_none_and_unknown)
{
    cr_assert_null(nd_fs_crypt_new(ND_CIPHER_NONE, key1, salt1));
    cr_assert_null(nd_fs_crypt_new((nd_store_cipher_t)7, key1, salt1));
    nd_fs_crypt_free(NULL);
}

Test(fs_crypt, round_trip_sizes)
{
    static const size_t sizes[] = {0, 1, 15, 16, 17, 63, 64, 1000, 65536, 1 << 20};
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        cr_assert_not_null(x);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            size_t n = sizes[i];
            uint8_t *in = malloc(n + 1), *sealed = malloc(nd_fs_sealed_len(n)),
                    *out = malloc(n + 1);
            fill(in, n, (uint32_t)(i + 1));
            size_t sn = 0, on = 12345;
            cr_assert(nd_fs_seal(x, 1000 + i, hdr, sizeof(hdr), in, n, sealed, &sn));
            cr_assert_eq(sn, n + ND_FS_TAG_LEN);
            if (n >= 16)
                cr_assert_neq(memcmp(in, sealed, n), 0, "ciphertext equals plaintext");
            cr_assert(nd_fs_open_sealed(x, 1000 + i, hdr, sizeof(hdr), sealed, sn, out, &on));
            cr_assert_eq(on, n);
            cr_assert_eq(memcmp(in, out, n), 0);
            free(in);
            free(sealed);
            free(out);
        }
        nd_fs_crypt_free(x);
    }
}

Test(fs_crypt, in_place_and_no_aad)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        uint8_t buf[300 + ND_FS_TAG_LEN], ref[300];
        fill(ref, sizeof(ref), 99);
        memcpy(buf, ref, sizeof(ref));
        size_t n;
        cr_assert(nd_fs_seal(x, 5, NULL, 0, buf, sizeof(ref), buf, &n));
        cr_assert(nd_fs_open_sealed(x, 5, NULL, 0, buf, n, buf, &n));
        cr_assert_eq(n, sizeof(ref));
        cr_assert_eq(memcmp(buf, ref, n), 0);
        nd_fs_crypt_free(x);
    }
}

/* The same (key, salt, seq, aad, plaintext) always gives the same bytes: re-sealing a record
 * (block rewrite) is safe. A new salt gives different bytes for the same record. */
Test(fs_crypt, deterministic_per_salt)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *a = nd_fs_crypt_new(ciphers[c], key1, salt1);
        nd_fs_crypt_t *b = nd_fs_crypt_new(ciphers[c], key1, salt1);
        nd_fs_crypt_t *d = nd_fs_crypt_new(ciphers[c], key1, salt2);
        uint8_t in[64], s1[64 + ND_FS_TAG_LEN], s2[64 + ND_FS_TAG_LEN], s3[64 + ND_FS_TAG_LEN];
        fill(in, sizeof(in), 3);
        size_t n;
        cr_assert(nd_fs_seal(a, 9, hdr, sizeof(hdr), in, sizeof(in), s1, &n));
        cr_assert(nd_fs_seal(b, 9, hdr, sizeof(hdr), in, sizeof(in), s2, &n));
        cr_assert(nd_fs_seal(d, 9, hdr, sizeof(hdr), in, sizeof(in), s3, &n));
        cr_assert_eq(memcmp(s1, s2, n), 0);
        cr_assert_neq(memcmp(s1, s3, n), 0);
        /* Different sequences under one context never share a keystream. */
        cr_assert(nd_fs_seal(a, 10, hdr, sizeof(hdr), in, sizeof(in), s2, &n));
        cr_assert_neq(memcmp(s1, s2, sizeof(in)), 0);
        nd_fs_crypt_free(a);
        nd_fs_crypt_free(b);
        nd_fs_crypt_free(d);
    }
}

/* The two ciphers with the same key and salt derive different record keys. */
Test(fs_crypt, ciphers_do_not_share_keys)
{
    nd_fs_crypt_t *g = nd_fs_crypt_new(ND_CIPHER_AES_GCM, key1, salt1);
    nd_fs_crypt_t *h = nd_fs_crypt_new(ND_CIPHER_CHACHA, key1, salt1);
    uint8_t in[32] = {0}, s[32 + ND_FS_TAG_LEN], o[32];
    size_t n, on;
    cr_assert(nd_fs_seal(g, 1, NULL, 0, in, sizeof(in), s, &n));
    cr_assert_not(nd_fs_open_sealed(h, 1, NULL, 0, s, n, o, &on));
    nd_fs_crypt_free(g);
    nd_fs_crypt_free(h);
}

Test(fs_crypt, every_bit_flip_refused)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        uint8_t in[40], s[40 + ND_FS_TAG_LEN], o[40 + ND_FS_TAG_LEN];
        fill(in, sizeof(in), 7);
        size_t n, on;
        cr_assert(nd_fs_seal(x, 77, hdr, sizeof(hdr), in, sizeof(in), s, &n));
        for (size_t bit = 0; bit < n * 8; bit++) {
            s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            cr_assert_not(nd_fs_open_sealed(x, 77, hdr, sizeof(hdr), s, n, o, &on),
                          "cipher %zu: flip of bit %zu accepted", c, bit);
            s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        /* And the AAD: every bit of the header is covered as well. */
        uint8_t h2[sizeof(hdr)];
        memcpy(h2, hdr, sizeof(hdr));
        for (size_t bit = 0; bit < sizeof(h2) * 8; bit++) {
            h2[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            cr_assert_not(nd_fs_open_sealed(x, 77, h2, sizeof(h2), s, n, o, &on));
            h2[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        cr_assert(nd_fs_open_sealed(x, 77, hdr, sizeof(hdr), s, n, o, &on));
        cr_assert_eq(memcmp(o, in, sizeof(in)), 0);
        nd_fs_crypt_free(x);
    }
}

Test(fs_crypt, wrong_key_salt_seq_aad_refused)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        nd_fs_crypt_t *wk = nd_fs_crypt_new(ciphers[c], key2, salt1);
        nd_fs_crypt_t *ws = nd_fs_crypt_new(ciphers[c], key1, salt2);
        uint8_t in[100], s[100 + ND_FS_TAG_LEN], o[100];
        fill(in, sizeof(in), 11);
        size_t n, on;
        cr_assert(nd_fs_seal(x, 42, hdr, sizeof(hdr), in, sizeof(in), s, &n));
        cr_assert_not(nd_fs_open_sealed(wk, 42, hdr, sizeof(hdr), s, n, o, &on), "wrong key");
        cr_assert_not(nd_fs_open_sealed(ws, 42, hdr, sizeof(hdr), s, n, o, &on), "wrong salt");
        cr_assert_not(nd_fs_open_sealed(x, 41, hdr, sizeof(hdr), s, n, o, &on), "seq - 1");
        cr_assert_not(nd_fs_open_sealed(x, 43, hdr, sizeof(hdr), s, n, o, &on), "seq + 1");
        cr_assert_not(nd_fs_open_sealed(x, 42 | (1ull << 63), hdr, sizeof(hdr), s, n, o, &on),
                      "high bit of seq");
        cr_assert_not(nd_fs_open_sealed(x, 42, hdr, sizeof(hdr) - 1, s, n, o, &on), "short aad");
        cr_assert_not(nd_fs_open_sealed(x, 42, NULL, 0, s, n, o, &on), "no aad");
        /* A failed open leaves the context usable. */
        cr_assert(nd_fs_open_sealed(x, 42, hdr, sizeof(hdr), s, n, o, &on));
        cr_assert_eq(memcmp(o, in, sizeof(in)), 0);
        nd_fs_crypt_free(x);
        nd_fs_crypt_free(wk);
        nd_fs_crypt_free(ws);
    }
}

/* Two records swapped between sequences (and their headers) fail to open. */
Test(fs_crypt, swapped_records_refused)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        uint8_t a[20], b[20], sa[20 + ND_FS_TAG_LEN], sb[20 + ND_FS_TAG_LEN], o[20];
        fill(a, sizeof(a), 1);
        fill(b, sizeof(b), 2);
        size_t n, on;
        cr_assert(nd_fs_seal(x, 1, "h1", 2, a, sizeof(a), sa, &n));
        cr_assert(nd_fs_seal(x, 2, "h2", 2, b, sizeof(b), sb, &n));
        cr_assert_not(nd_fs_open_sealed(x, 1, "h1", 2, sb, n, o, &on));
        cr_assert_not(nd_fs_open_sealed(x, 2, "h2", 2, sa, n, o, &on));
        /* Swapping the headers along with the body still fails: the sequence is bound. */
        cr_assert_not(nd_fs_open_sealed(x, 1, "h2", 2, sb, n, o, &on));
        nd_fs_crypt_free(x);
    }
}

Test(fs_crypt, truncated_refused)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        uint8_t in[50], s[50 + ND_FS_TAG_LEN], o[50 + ND_FS_TAG_LEN];
        fill(in, sizeof(in), 5);
        size_t n, on;
        cr_assert(nd_fs_seal(x, 3, hdr, sizeof(hdr), in, sizeof(in), s, &n));
        for (size_t cut = 0; cut < n; cut++)
            cr_assert_not(nd_fs_open_sealed(x, 3, hdr, sizeof(hdr), s, cut, o, &on),
                          "cut at %zu accepted", cut);
        /* Appended bytes are refused too (the tag is then read from the wrong place). */
        uint8_t longer[50 + ND_FS_TAG_LEN + 1];
        memcpy(longer, s, n);
        longer[n] = 0;
        cr_assert_not(nd_fs_open_sealed(x, 3, hdr, sizeof(hdr), longer, n + 1, o, &on));
        nd_fs_crypt_free(x);
    }
}

Test(fs_crypt, empty_payload_is_authenticated)
{
    for (size_t c = 0; c < NCIPHERS; c++) {
        nd_fs_crypt_t *x = nd_fs_crypt_new(ciphers[c], key1, salt1);
        uint8_t s[ND_FS_TAG_LEN], o[1];
        size_t n, on = 99;
        cr_assert(nd_fs_seal(x, 8, hdr, sizeof(hdr), NULL, 0, s, &n));
        cr_assert_eq(n, ND_FS_TAG_LEN);
        cr_assert(nd_fs_open_sealed(x, 8, hdr, sizeof(hdr), s, n, o, &on));
        cr_assert_eq(on, 0);
        cr_assert_not(nd_fs_open_sealed(x, 9, hdr, sizeof(hdr), s, n, o, &on));
        s[0] ^= 1;
        cr_assert_not(nd_fs_open_sealed(x, 8, hdr, sizeof(hdr), s, n, o, &on));
        nd_fs_crypt_free(x);
    }
}

Test(fs_crypt, salt_random_differs)
{
    uint8_t a[ND_FS_SALT_LEN], b[ND_FS_SALT_LEN];
    cr_assert(nd_fs_salt_random(a));
    cr_assert(nd_fs_salt_random(b));
    cr_assert_neq(memcmp(a, b, sizeof(a)), 0);
}

/* ---- compression ---- */

static void
roundtrip(const uint8_t *in, size_t n)
{
    size_t cap = nd_fs_compress_bound(n);
    cr_assert_geq(cap, ND_FS_COMPRESS_HDR);
    uint8_t *c = malloc(cap), *o = malloc(n + 1);
    size_t cn = 0, on = 0, dl = 0;
    cr_assert(nd_fs_compress(in, n, c, cap, &cn));
    cr_assert_leq(cn, cap);
    cr_assert(nd_fs_decompressed_len(c, cn, &dl));
    cr_assert_eq(dl, n);
    cr_assert(nd_fs_decompress(c, cn, o, n, &on));
    cr_assert_eq(on, n);
    cr_assert_eq(memcmp(in, o, n), 0);
    uint8_t *a = NULL;
    cr_assert(nd_fs_decompress_alloc(c, cn, n, &a, &on));
    cr_assert_eq(on, n);
    cr_assert_eq(memcmp(in, a, n), 0);
    free(a);
    /* One byte of room too little is refused, not truncated. */
    if (n > 0) {
        cr_assert_not(nd_fs_decompress(c, cn, o, n - 1, &on));
        cr_assert_not(nd_fs_decompress_alloc(c, cn, n - 1, &a, &on));
        cr_assert_null(a);
    }
    free(c);
    free(o);
}

Test(fs_compress, round_trips)
{
    static const size_t sizes[] = {0, 1, 2, 12, 13, 100, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        uint8_t *r = malloc(n + 1), *z = calloc(1, n + 1), *t = malloc(n + 1);
        fill(r, n, (uint32_t)i);
        for (size_t j = 0; j < n; j++)
            t[j] = "hello.world "[j % 12];
        roundtrip(r, n);
        roundtrip(z, n);
        roundtrip(t, n);
        free(r);
        free(z);
        free(t);
    }
}

Test(fs_compress, compresses_repetitive_data)
{
    uint8_t in[10000];
    memset(in, 'x', sizeof(in));
    uint8_t out[nd_fs_compress_bound(sizeof(in))];
    size_t n;
    cr_assert(nd_fs_compress(in, sizeof(in), out, sizeof(out), &n));
    cr_assert_lt(n, 200);
}

Test(fs_compress, small_output_refused)
{
    uint8_t in[1000], out[2000];
    fill(in, sizeof(in), 4);
    size_t n;
    cr_assert_not(nd_fs_compress(in, sizeof(in), out, 3, &n));
    cr_assert_not(nd_fs_compress(in, sizeof(in), out, 100, &n)); /* random data needs > 1000 */
}

/* A body declaring a huge length is refused before anything is allocated, and a bomb that would
 * decode to more than its declared length is refused too. */
Test(fs_compress, bombs_refused)
{
    uint8_t big[ND_FS_COMPRESS_HDR + 16] = {0xff, 0xff, 0xff, 0x7f};
    uint8_t *a = (uint8_t *)1;
    size_t on;
    cr_assert_not(nd_fs_decompress_alloc(big, sizeof(big), (size_t)1 << 40, &a, &on));
    cr_assert_null(a);
    uint8_t small[8];
    cr_assert_not(nd_fs_decompress(big, sizeof(big), small, sizeof(small), &on));

    /* 1 MiB of zeros, then the declared length lowered: the decoder must stop at the cap. */
    size_t n = 1 << 20;
    uint8_t *z = calloc(1, n);
    size_t cap = nd_fs_compress_bound(n), cn;
    uint8_t *c = malloc(cap);
    cr_assert(nd_fs_compress(z, n, c, cap, &cn));
    c[0] = 0x00;
    c[1] = 0x10; /* 4096 */
    c[2] = 0x00;
    c[3] = 0x00;
    uint8_t *o = malloc(n);
    cr_assert_not(nd_fs_decompress(c, cn, o, n, &on));
    cr_assert_not(nd_fs_decompress_alloc(c, cn, n, &a, &on));
    cr_assert_null(a);
    free(z);
    free(c);
    free(o);
}

Test(fs_compress, malformed_refused)
{
    size_t on;
    uint8_t o[256];
    uint8_t *a;
    cr_assert_not(nd_fs_decompress((const uint8_t *)"\x01\x00", 2, o, sizeof(o), &on));
    cr_assert_not(nd_fs_decompressed_len((const uint8_t *)"\x01\x00", 2, &on));
    /* Declares 10 bytes but has no data. */
    cr_assert_not(nd_fs_decompress((const uint8_t *)"\x0a\x00\x00\x00", 4, o, sizeof(o), &on));
    /* Declares 0 bytes but carries data. */
    cr_assert_not(nd_fs_decompress((const uint8_t *)"\x00\x00\x00\x00\x10", 5, o, sizeof(o), &on));
    /* A truncated valid body never decodes successfully. */
    uint8_t in[200], c[nd_fs_compress_bound(200)];
    fill(in, sizeof(in), 8);
    size_t cn;
    cr_assert(nd_fs_compress(in, sizeof(in), c, sizeof(c), &cn));
    for (size_t cut = 0; cut < cn; cut++) {
        cr_assert_not(nd_fs_decompress(c, cut, o, sizeof(o), &on), "cut at %zu accepted", cut);
        cr_assert_not(nd_fs_decompress_alloc(c, cut, sizeof(o), &a, &on));
    }
    /* Random garbage never crashes and never claims more than the cap. */
    uint32_t seed = 1;
    for (int i = 0; i < 2000; i++) {
        uint8_t g[64];
        fill(g, sizeof(g), seed++);
        g[2] = 0;
        g[3] = 0;
        if (nd_fs_decompress(g, 1 + (size_t)i % sizeof(g), o, sizeof(o), &on))
            cr_assert_leq(on, sizeof(o));
    }
}

/* LZ4's best case is about 255:1; nd_fs_decompress_alloc's plausibility bound must accept it. */
Test(fs_compress, best_ratio_accepted)
{
    size_t n = 8 << 20;
    uint8_t *z = calloc(1, n);
    size_t cap = nd_fs_compress_bound(n), cn, on;
    uint8_t *c = malloc(cap), *a = NULL;
    cr_assert(nd_fs_compress(z, n, c, cap, &cn));
    cr_assert(nd_fs_decompress_alloc(c, cn, n, &a, &on), "ratio %zu accepted", n / cn);
    cr_assert_eq(on, n);
    free(a);
    free(z);
    free(c);
}
