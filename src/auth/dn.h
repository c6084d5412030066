/* Distinguished names (RFC 4514) for verify_and_map: a configured user name that is a DN matches
 * a client certificate's subject DN when both parse and are structurally equal, as nats-server's
 * internal/ldap DN.Equal/RDNsMatch checks (auth.go checkClientTLSCertSubject), not byte-equal.
 */
#ifndef ND_DN_H
#define ND_DN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct nd_dn_attr {
    char *type;  /* the attribute type as written (compared case-insensitively) */
    char *value; /* unescaped */
} nd_dn_attr_t;

typedef struct nd_dn_rdn {
    nd_dn_attr_t *attrs; /* a multi-valued RDN (`CN=a+O=b`) has several */
    size_t n;
} nd_dn_rdn_t;

typedef struct nd_dn {
    nd_dn_rdn_t *rdns; /* in written order */
    size_t n;
} nd_dn_t;

/* Parses s into *out. Returns: false (and *out empty) when s is no DN: empty, an RDN without
 * `type=`, a bad escape or an unterminated quote. Free *out with nd_dn_free either way. */
bool nd_dn_parse(const char *s, nd_dn_t *out);

void nd_dn_free(nd_dn_t *dn);

/* Returns: whether a and b have the same RDNs in the same order (reverse: b's read backwards),
 * the attributes of each RDN compared as a set. */
bool nd_dn_equal(const nd_dn_t *a, const nd_dn_t *b, bool reverse);

/* Returns: whether the strings a and b both parse as DNs that are equal, in the same order or
 * one the reverse of the other. */
bool nd_dn_match(const char *a, const char *b);

#endif
