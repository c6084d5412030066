/* The account actor: the only writer of its sublist. See src/subj/account.h.
 *
 * Reference discipline for subscriptions: a sub inside the sublist holds one reference for it,
 * taken by nd_acct_send_sub before the message leaves the sender (so a sub never vanishes while
 * its SUB message is queued). Removing a sub from the sublist (UNSUB, UNSUB_ALL, final) drops that
 * reference after the generation bump; UNSUB/UNSUB_ALL also drop the sender's. The last reference
 * retires the sub through the epoch, so publishers still holding it inside a section are safe.
 * Messages that arrive after close are discarded by the runtime, which calls discard(): the
 * references they carry are dropped there (final() already emptied the sublist, so a discarded
 * UNSUB never touches the sublist).
 */
#include "subj/account.h"

#include <string.h>

#include "actors/alloc.h"
#include "subj/interest.h"

static void
notify_send(nd_ctx_t *ctx, nd_actor_t *notify, uint32_t id)
{
    if (notify == NULL)
        return;
    nd_actor_send(ctx, notify, nd_msg_new(ctx, sizeof(nd_msg_t), id));
    nd_actor_unref(ctx, notify);
}

static void
on_sub(nd_ctx_t *ctx, nd_acct_t *a, nd_acct_msg_sub_t *m)
{
    if (!nd_sl_insert(ctx, &a->sl, m->sub))
        nd_sub_unref(ctx, m->sub); /* not inserted: the sublist's reference goes back */
    else
        nd_interest_count(ctx, a, m->sub, 1); /* routes hear of it before the notify goes */
    /* The insert above is published (release) before this send, and the receiver's mailbox pop
     * acquires it: the subscriber sees its sub in place when the notify arrives. */
    notify_send(ctx, m->notify, m->notify_id);
}

static void
on_unsub(nd_ctx_t *ctx, nd_acct_t *a, nd_acct_msg_unsub_t *m)
{
    if (nd_sl_remove(ctx, &a->sl, m->sub)) {
        nd_interest_count(ctx, a, m->sub, -1);
        nd_sub_unref(ctx, m->sub); /* the sublist's */
    }
    nd_sub_unref(ctx, m->sub);     /* the sender's */
}

static void
on_unsub_all(nd_ctx_t *ctx, nd_acct_t *a, nd_acct_msg_unsub_all_t *m)
{
    bool small[64];
    bool *removed = m->n <= 64 ? small : nd_xmalloc(m->n * sizeof(bool));
    nd_sl_remove_batch(ctx, &a->sl, m->subs, m->n, removed);
    for (size_t i = 0; i < m->n; i++) {
        if (m->subs[i] == NULL)
            continue;
        if (removed[i]) {
            nd_interest_count(ctx, a, m->subs[i], -1);
            nd_sub_unref(ctx, m->subs[i]);
        }
        nd_sub_unref(ctx, m->subs[i]);
    }
    if (removed != small)
        nd_free(removed);
    nd_free(m->subs);
}

static void
dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    nd_acct_t *a = (nd_acct_t *)self;
    switch (msg->id) {
    case ND_ACCT_MSG_SUB:
        on_sub(ctx, a, (nd_acct_msg_sub_t *)msg);
        break;
    case ND_ACCT_MSG_UNSUB:
        on_unsub(ctx, a, (nd_acct_msg_unsub_t *)msg);
        break;
    case ND_ACCT_MSG_UNSUB_ALL:
        on_unsub_all(ctx, a, (nd_acct_msg_unsub_all_t *)msg);
        break;
    case ND_ACCT_MSG_INTEREST_DUMP:
        nd_interest_on_dump(ctx, a, msg);
        break;
    case ND_ACCT_MSG_INTEREST_WATCH:
    case ND_ACCT_MSG_INTEREST_UNWATCH:
        nd_interest_on_watch(ctx, a, msg);
        break;
    case ND_ACCT_MSG_INTEREST_SHADOW:
        nd_interest_on_shadow(ctx, a, msg);
        break;
    default:
        nd_fatal("account %s: unknown message id %u", a->name, msg->id);
    }
}

static void
drop_sublist_ref(nd_ctx_t *ctx, nd_sub_t *sub, void *arg)
{
    (void)arg;
    nd_sub_unref(ctx, sub);
}

static void
final(nd_ctx_t *ctx, nd_actor_t *self)
{
    nd_acct_t *a = (nd_acct_t *)self;
    /* The sublist stays a valid, empty sublist: publishers holding a reference on the account
     * may still match against it until they let go. */
    nd_sl_fini(ctx, &a->sl, drop_sublist_ref, NULL);
    nd_interest_free(a);
}

static void
discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    switch (msg->id) {
    case ND_ACCT_MSG_SUB: {
        nd_acct_msg_sub_t *m = (nd_acct_msg_sub_t *)msg;
        nd_sub_unref(ctx, m->sub);
        /* Still notify: a connection waiting to answer a PING must not wait forever. */
        notify_send(ctx, m->notify, m->notify_id);
        break;
    }
    case ND_ACCT_MSG_UNSUB:
        nd_sub_unref(ctx, ((nd_acct_msg_unsub_t *)msg)->sub);
        break;
    case ND_ACCT_MSG_UNSUB_ALL: {
        nd_acct_msg_unsub_all_t *m = (nd_acct_msg_unsub_all_t *)msg;
        for (size_t i = 0; i < m->n; i++)
            if (m->subs[i] != NULL)
                nd_sub_unref(ctx, m->subs[i]);
        nd_free(m->subs);
        break;
    }
    case ND_ACCT_MSG_INTEREST_DUMP:
        nd_interest_on_dump(ctx, NULL, msg); /* closed: only the end mark */
        break;
    case ND_ACCT_MSG_INTEREST_WATCH:
    case ND_ACCT_MSG_INTEREST_UNWATCH:
        nd_interest_on_watch(ctx, NULL, msg); /* closed: an unwatch still releases */
        break;
    default:
        break;
    }
}

static const nd_actor_type_t acct_type = {
    .name = "account",
    .size = sizeof(nd_acct_t),
    .dispatch = dispatch,
    .final = final,
    .discard = discard,
};

nd_acct_t *
nd_acct_new(nd_ctx_t *ctx, const char *name, size_t len)
{
    if (len == 0 || len > ND_ACCT_NAME_MAX)
        return NULL;
    nd_acct_t *a = (nd_acct_t *)nd_actor_spawn(ctx, &acct_type);
    /* The actor is not shared yet (only the pool registry knows it), so plain stores suffice:
     * the first message sent to it publishes them. */
    memcpy(a->name, name, len);
    a->name[len] = '\0';
    a->name_len = (uint32_t)len;
    nd_sl_init(&a->sl);
    return a;
}

void
nd_acct_send_sub(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t *sub, nd_actor_t *notify,
                 uint32_t notify_id)
{
    nd_acct_msg_sub_t *m = ND_MSG_NEW(ctx, nd_acct_msg_sub_t, ND_ACCT_MSG_SUB);
    nd_sub_ref(sub);
    if (notify != NULL)
        nd_actor_ref(notify);
    m->sub = sub;
    m->notify = notify;
    m->notify_id = notify_id;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

void
nd_acct_send_unsub(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t *sub)
{
    nd_acct_msg_unsub_t *m = ND_MSG_NEW(ctx, nd_acct_msg_unsub_t, ND_ACCT_MSG_UNSUB);
    m->sub = sub;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

void
nd_acct_send_unsub_all(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t **subs, size_t n)
{
    nd_acct_msg_unsub_all_t *m = ND_MSG_NEW(ctx, nd_acct_msg_unsub_all_t, ND_ACCT_MSG_UNSUB_ALL);
    m->subs = subs;
    m->n = n;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}
