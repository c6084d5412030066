/* Password and token checks for static authentication (authorization {} user/password, token,
 * users lists).
 *
 * A configured value is a bcrypt hash when it matches nats-server's validBcryptPrefix,
 * `^\$2[abxy]\$\d{2}\$` (auth.go isBcrypt); it is then checked with bcrypt (libxcrypt's
 * crypt_r), otherwise compared in constant time with the value the client sent (auth.go
 * comparePasswords uses subtle.ConstantTimeCompare, which returns early only on a length
 * mismatch; so do we). Reference: nats-server server/auth.go; `nats server passwd` makes the
 * hashes ($2a$, cost 11 by default). One known difference: for "$2x$" hashes libxcrypt reproduces
 * the old crypt_blowfish sign-extension bug on non-ASCII bytes, where Go treats "$2x$" like
 * "$2a$"; ASCII passwords hash the same either way.
 *
 * Secrets never reach a log line or an error text from here; callers must not log them either
 * (nats-server logs only "Plaintext passwords detected, use nkeys or bcrypt" at startup).
 * A bcrypt check costs milliseconds to hundreds of milliseconds (cost 4..12), all CPU: callers on
 * a worker should expect that (nats-server does it inline on the connection's goroutine).
 * Ctx: any thread (crypt_r keeps its state in a buffer it is given).
 */
#ifndef ND_PASSWD_H
#define ND_PASSWD_H

#include <stdbool.h>
#include <stddef.h>

/* Returns: true when s[0..len) is treated as a bcrypt hash ("$2a$", "$2b$", "$2x$" or "$2y$",
 * two decimal digits of cost, then "$"). */
bool nd_passwd_is_bcrypt(const char *s, size_t len);

/* Returns: true when s[0..len) is a well-formed bcrypt hash: a prefix nd_passwd_is_bcrypt accepts
 * with a cost of 04..31, then 53 characters of bcrypt's base64 (22 of salt, 31 of hash), 60 in
 * all. A value that passes nd_passwd_is_bcrypt but not this (a "$2a$11$..." placeholder, a hash
 * cut short) is checked as bcrypt and so never matches any password: worth a warning. */
bool nd_passwd_bcrypt_valid(const char *s, size_t len);

/* Returns: true when the value the client sent (given) matches the configured one (stored):
 * bcrypt when stored is a bcrypt hash, else a constant-time byte compare. A NUL inside either
 * value never matches a bcrypt hash (crypt_r would stop at it, Go's bcrypt would not). */
bool nd_passwd_check(const char *stored, size_t slen, const char *given, size_t glen);

/* Returns: true when a[0..alen) and b[0..blen) are equal; the time depends only on the lengths. */
bool nd_passwd_equal_ct(const void *a, size_t alen, const void *b, size_t blen);

/* Makes a bcrypt hash of pw with the given cost (4..31) and prefix ("$2a$" or "$2b$"), for tests
 * and for a `--passwd`-like helper. Returns: an nd_xmalloc'ed string, or NULL when libxcrypt
 * refuses (bad cost or prefix). */
char *nd_passwd_bcrypt_hash(const char *pw, const char *prefix, unsigned cost);

#endif
