/* natsd's one error enum, generated with nd_strerror() and the exact nats-server -ERR texts from
 * one X-macro list. Outcomes that are not errors ("no subscribers") are return values instead.
 * X(name, description, -ERR text sent to clients or NULL, closes the connection) */
#ifndef NATSD_ERR_H
#define NATSD_ERR_H

#include <stdbool.h>
#include <stddef.h>

#define ND_ERR_LIST(X)                                                                            \
    X(ND_OK, "success", NULL, false)                                                              \
    X(ND_ERR_UNKNOWN_OP, "unknown protocol operation", "Unknown Protocol Operation", true)        \
    X(ND_ERR_MAX_CONTROL_LINE, "control line too long", "maximum control line exceeded", true)    \
    X(ND_ERR_MAX_PAYLOAD, "payload too large", "Maximum Payload Violation", true)                 \
    X(ND_ERR_PROTO_ARGS, "bad protocol arguments", NULL, true)                                    \
    X(ND_ERR_BAD_CONNECT, "malformed CONNECT", NULL, true)                                        \
    X(ND_ERR_INVALID_SUBJECT, "invalid subject", "Invalid Subject", false)                        \
    X(ND_ERR_INVALID_PUB_SUBJECT, "invalid publish subject", "Invalid Publish Subject", false)    \
    X(ND_ERR_MAX_CONNECTIONS, "too many connections", "maximum connections exceeded", true)       \
    X(ND_ERR_MAX_SUBSCRIPTIONS, "too many subscriptions", "maximum subscriptions exceeded", false) \
    X(ND_ERR_STALE, "stale connection", "Stale Connection", true)                                 \
    X(ND_ERR_BAD_CLIENT_PROTOCOL, "bad client protocol", "invalid client protocol", true)         \
    X(ND_ERR_NO_RESPONDERS_HEADERS, "no_responders needs headers",                                \
      "no responders requires headers support", true)                                            \
    X(ND_ERR_AUTH_VIOLATION, "authorization violation", "Authorization Violation", true)          \
    X(ND_ERR_AUTH_TIMEOUT, "authentication timeout", "Authentication Timeout", true)            \
    X(ND_ERR_AUTH_EXPIRED, "user JWT expired", "User Authentication Expired", true)              \
    X(ND_ERR_AUTH_REVOKED, "user JWT revoked", "User Authentication Revoked", true)              \
    X(ND_ERR_ACCT_EXPIRED, "account JWT expired", "Account Authentication Expired", true)        \
    X(ND_ERR_MAX_ACCOUNT_CONNECTIONS, "too many account connections",                            \
      "maximum account active connections exceeded", true)

typedef enum {
#define ND_ERR_ENUM(name, desc, text, closes) name,
    ND_ERR_LIST(ND_ERR_ENUM)
#undef ND_ERR_ENUM
        ND_ERR__COUNT
} nd_err_t;

const char *nd_strerror(nd_err_t err);
/* Returns: the text of the -ERR line for err, or NULL when nats-server sends none. */
const char *nd_err_proto_text(nd_err_t err);
bool nd_err_closes(nd_err_t err);

#endif
