/* The server's internal publisher (inventory §5.5): a message published into an account by the
 * server itself — system account advisories and replies to `$SYS.REQ.` requests — from any
 * thread with a ctx, without a client connection.
 *
 * Model: the subject is matched in the account's sublist inside an epoch section; every plain
 * subscription and one member of each queue group gets an ND_CONN_MSG_DELIVER message holding
 * its MSG/HMSG line and a reference on one shared payload buffer, exactly what a client
 * publisher sends for a large payload (deliver.c). Nothing is sent inside the section (STYLE.md
 * rule 8): the messages are gathered with a reference on each recipient and sent after it. The
 * recipient's `pending` is charged as a publisher charges it; a recipient already marked slow is
 * skipped.
 * Differences from a client publish: no mappings, imports or no-responders status, no
 * recipient permission checks (the server's own messages go to whoever subscribed in the
 * account), and no echo rule (the server has no subscriptions of its own here).
 */
#ifndef ND_SYSCLIENT_H
#define ND_SYSCLIENT_H

#include <stddef.h>

#include "subj/account.h"
#include "actors/ctx.h"

/* Publishes into acct: subject, reply (NULL/0 = none), headers (NULL/0 = none; the full
 * "NATS/1.0\r\n...\r\n\r\n" block) and payload. Ctx: any thread with a ctx, outside an epoch
 * section; the caller holds a reference on acct. Returns: the number of recipients. */
size_t nd_sys_publish(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t subj_len,
                      const char *reply, size_t reply_len, const char *hdr, size_t hdr_len,
                      const char *payload, size_t payload_len);

#endif
