/* Subject rules of the NATS protocol: validation, token counting, matching and subset tests.
 *
 * A subject is a non-empty list of tokens separated by '.'. A token is non-empty and contains no
 * space, tab, CR, LF or FF. In a subscription (or a permission pattern) the token `*` matches
 * exactly one token and `>`, which must be the last token, matches one or more tokens. Wildcards
 * are whole tokens only: `foo*` and `>bar` are literal tokens. A publish subject is literal: no
 * `*` or `>` token. Reference: nats-server server/sublist.go (IsValidSubject, subjectIsLiteral,
 * isSubsetMatch) and the NATS protocol documentation.
 *
 * Every function here is pure: it reads only its arguments, allocates nothing and never fails in
 * any other way than by its return value. Strings are (pointer, length) pairs and need no NUL.
 * Ctx: any thread.
 */
#ifndef NATSD_SUBJECT_H
#define NATSD_SUBJECT_H

#include <stdbool.h>
#include <stddef.h>

#define ND_SUBJ_SEP '.'
#define ND_SUBJ_PWC '*' /* partial wildcard: one token */
#define ND_SUBJ_FWC '>' /* full wildcard: one or more tokens, last only */

/* Returns: true when s is a valid literal (publish) subject: valid tokens, none of them `*`/`>`. */
bool nd_subj_valid_pub(const char *s, size_t len);

/* Returns: true when s is a valid subscribe subject: valid tokens, `*` anywhere, `>` only last. */
bool nd_subj_valid_sub(const char *s, size_t len);

/* Returns: true when q is a valid queue group name: non-empty, no space, tab, CR, LF or FF.
 * (The reserved name `_sys_` is a connection-level rule and is not checked here.) */
bool nd_subj_valid_queue(const char *q, size_t len);

/* Returns: true when no token of s is exactly `*` or `>`. Does not validate s otherwise. */
bool nd_subj_is_literal(const char *s, size_t len);

/* Returns: the number of tokens of s (separators + 1), or 0 for the empty string. */
size_t nd_subj_tokens(const char *s, size_t len);

/* Returns: true when the literal subject `subj` is matched by `pattern` (which may hold
 * wildcards). Tokens of subj are compared literally, even `*` or `>`. As in the sublist, a
 * subject with an empty token (``, `.a`, `a.`, `a..b`) matches nothing. */
bool nd_subj_match(const char *pattern, size_t plen, const char *subj, size_t slen);

/* Returns: true when every subject matched by `sub` is also matched by `super` (both may hold
 * wildcards): `foo.*` is a subset of `foo.>`, `*.*` and `>`, but not of `foo.bar` or `*`.
 * Both are assumed valid subscribe subjects. */
bool nd_subj_subset(const char *sub, size_t sublen, const char *super, size_t superlen);

#endif
