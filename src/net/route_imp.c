/* Account imports across routes: the interest a server must announce in an exporting account
 * for the imports its other accounts take, so the cluster's servers send it the exporter's
 * messages (nats-server's shadow subscriptions and service-reply wildcard).
 *
 * Stream imports: account B imports `feed.>` from A. A subscription in B on this server that may
 * receive imported messages stands for a subscription in A (its "shadow"): the route hook's
 * `imports` callback (subj/interest.h) runs on B's turn for every local subscription counted in
 * or out, finds the shadow subject of each of B's stream imports the subscription overlaps, and
 * counts it in A's interest (nd_interest_send_shadow), which the routes hear as A's RS+/RS-. A
 * server with a publisher in A then forwards the message once, as RMSG in A, and this server
 * delivers it in B (deliver.c: nd_deliver_route_publish goes through A's stream importers, and
 * an imported delivery never goes to a route itself: the exporter's message went instead).
 * The shadow subject, as nats-server's addShadowSubscriptions: the subscription's own subject
 * when it lies within an unmapped import, with a prefix import's prefix taken off when it lies
 * within it, else the import's subject in A.
 *
 * Service imports: B imports `svc.>` from A. A request from B goes to A's responders, on this
 * server or over a route in A, with an `_R_.<prefix>.<random>` reply (subj/acct_resp.h). Every
 * server announces `_R_.<prefix>.>` in each exporting account that has importers, in the dump a
 * new route gets (route.c), so a response published on another server comes back here in A and
 * is delivered in B (deliver.c). The prefix is fixed per account and process, so a reload does
 * not change it.
 */
#include "net/route_int.h"

#include <stdatomic.h>
#include <string.h>

#include "actors/alloc.h"
#include "actors/epoch.h"
#include "auth/acct_route.h"
#include "subj/acct_resp.h"
#include "subj/subject.h"

/* Whether some subject matches both a and b (subscription subjects, wildcards allowed). */
static bool
subj_overlap(const char *a, size_t alen, const char *b, size_t blen)
{
    const char *ae = a + alen, *be = b + blen;
    for (;;) {
        const char *ad = memchr(a, '.', (size_t)(ae - a));
        const char *bd = memchr(b, '.', (size_t)(be - b));
        size_t at = ad != NULL ? (size_t)(ad - a) : (size_t)(ae - a);
        size_t bt = bd != NULL ? (size_t)(bd - b) : (size_t)(be - b);
        if ((at == 1 && a[0] == '>') || (bt == 1 && b[0] == '>'))
            return true;
        bool aw = at == 1 && a[0] == '*', bw = bt == 1 && b[0] == '*';
        if (!aw && !bw && (at != bt || memcmp(a, b, at) != 0))
            return false;
        if (ad == NULL || bd == NULL)
            return ad == NULL && bd == NULL;
        a = ad + 1;
        b = bd + 1;
    }
}

/* A shadow to count once the epoch section is left. */
typedef struct shadow {
    nd_acct_t *acct; /* a reference */
    char *subj;
    size_t len;
} shadow_t;

#define SHADOW_INLINE 4

void
nd_route_imp_on_sub(nd_ctx_t *ctx, nd_acct_t *acct, const nd_sub_t *sub, int delta, void *arg)
{
    (void)arg;
    /* A relaxed peek first: accounts without a route (most) stop here. */
    if (atomic_load_explicit(&acct->route, memory_order_relaxed) == NULL)
        return;
    shadow_t in[SHADOW_INLINE], *sh = in;
    size_t n = 0, cap = SHADOW_INLINE;
    const char *s = sub->subject;
    size_t sl = sub->subject_len;
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release store of nd_acct_route_install. */
    const nd_acct_route_t *rt = atomic_load_explicit(&acct->route, memory_order_acquire);
    for (size_t i = 0; rt != NULL && i < rt->nsrcs; i++) {
        const nd_acct_stream_src_t *im = &rt->srcs[i];
        if (!subj_overlap(s, sl, im->to, im->to_len))
            continue;
        const char *ss = im->from;
        size_t sn = im->from_len;
        if (nd_subj_subset(s, sl, im->to, im->to_len)) {
            if (im->same) {
                ss = s;
                sn = sl;
            } else if (im->strip > 0 && sl > im->strip) {
                ss = s + im->strip;
                sn = sl - im->strip;
            }
        }
        if (n == cap) {
            shadow_t *v = nd_xmalloc(cap * 2 * sizeof(*v));
            memcpy(v, sh, n * sizeof(*v));
            if (sh != in)
                nd_free(sh);
            sh = v;
            cap *= 2;
        }
        nd_actor_ref(&im->acct->actor);
        sh[n].acct = im->acct;
        sh[n].subj = nd_xmalloc(sn);
        memcpy(sh[n].subj, ss, sn);
        sh[n].len = sn;
        n++;
    }
    nd_epoch_exit(ctx);
    for (size_t i = 0; i < n; i++) {
        nd_interest_send_shadow(ctx, sh[i].acct, sh[i].subj, sh[i].len, sub->queue,
                                sub->queue != NULL ? sub->queue_len : 0, delta);
        nd_free(sh[i].subj);
        nd_actor_unref(ctx, &sh[i].acct->actor);
    }
    if (sh != in)
        nd_free(sh);
}

size_t
nd_route_imp_resp_wildcard(nd_ctx_t *ctx, const nd_acct_t *acct, char *out)
{
    size_t n = 0;
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release store of nd_acct_route_install. */
    const nd_acct_route_t *rt = atomic_load_explicit(&acct->route, memory_order_acquire);
    if (rt != NULL && rt->resp != NULL)
        n = nd_acct_resp_wildcard(rt->resp, out);
    nd_epoch_exit(ctx);
    return n;
}
