/* Cross-account routing: building and installing the per-account routes; see acct_route.h. */
#include "auth/acct_route.h"

#include <stdio.h>
#include <string.h>

#include "subj/acct_resp.h"
#include "auth/auth.h"
#include "util/log.h"
#include "actors/alloc.h"
#include "subj/subject.h"

static const nd_account_opts_t *
opts_of(const nd_opts_t *o, const char *name)
{
    for (size_t i = 0; i < o->naccounts; i++)
        if (strcmp(o->accounts[i].name, name) == 0)
            return &o->accounts[i];
    return NULL;
}

static nd_auth_acct_t *
entry_of(struct nd_auth *a, const char *name)
{
    for (size_t i = 0; i < a->naccts; i++)
        if (strcmp(a->accts[i].name, name) == 0)
            return &a->accts[i];
    return NULL;
}

static nd_acct_route_t *
route_of(nd_auth_acct_t *e)
{
    if (e->route == NULL)
        e->route = nd_new(nd_acct_route_t);
    return e->route;
}

/* checkStreamImportAuthorized: some stream export of the exporter contains the imported subject
 * and is public or lists the importer. */
static bool
stream_authorized(const nd_account_opts_t *exp, const char *importer, const char *subj)
{
    for (size_t i = 0; exp != NULL && i < exp->nexports; i++) {
        const nd_export_t *x = &exp->exports[i];
        if (x->service || x->subject == NULL ||
            !nd_subj_subset(subj, strlen(subj), x->subject, strlen(x->subject)))
            continue;
        if (x->accounts.n == 0)
            return true;
        for (size_t k = 0; k < x->accounts.n; k++)
            if (strcmp(x->accounts.v[k], importer) == 0)
                return true;
    }
    return false;
}

/* transformTokenize: the destination's `*` tokens become $1, $2, ... in order. */
static char *
tokenize_dest(const char *to)
{
    size_t n = strlen(to);
    char *out = nd_xmalloc(n * 4 + 16);
    size_t o = 0;
    int wc = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t j = i;
        while (j < n && to[j] != '.')
            j++;
        if (i > 0)
            out[o++] = '.';
        if (j - i == 1 && to[i] == '*')
            o += (size_t)sprintf(out + o, "$%d", ++wc);
        else {
            memcpy(out + o, to + i, j - i);
            o += j - i;
        }
        i = j;
    }
    out[o] = '\0';
    return out;
}

/* The importer's side of a stream import from ex (acct_route.h, nd_acct_stream_src_t). */
static void
add_stream_src(nd_auth_acct_t *importer, nd_auth_acct_t *ex, const nd_import_t *im,
               const char *from)
{
    nd_acct_stream_src_t s = {.acct = ex->acct, .from = nd_xstrdup(from)};
    s.from_len = strlen(from);
    if (im->prefix != NULL && im->prefix[0] != '\0') {
        size_t pl = strlen(im->prefix);
        bool dot = im->prefix[pl - 1] == '.';
        s.to = nd_xmalloc(pl + 1 + s.from_len + 1);
        sprintf(s.to, "%s%s%s", im->prefix, dot ? "" : ".", from);
        s.strip = pl + (dot ? 0 : 1);
    } else if (im->to != NULL && im->to[0] != '\0' && strcmp(im->to, from) != 0) {
        /* A remapping's references to the source's wildcards ($1, {{wildcard(1)}}) stand for
         * any token. */
        size_t n = strlen(im->to);
        s.to = nd_xmalloc(n + 2);
        size_t o = 0;
        for (const char *p = im->to; *p != '\0';) {
            const char *e = strchr(p, '.');
            size_t tl = e != NULL ? (size_t)(e - p) : strlen(p);
            if ((tl > 0 && p[0] == '$') || (tl > 1 && p[0] == '{' && p[1] == '{'))
                s.to[o++] = '*';
            else {
                memcpy(s.to + o, p, tl);
                o += tl;
            }
            p += tl;
            if (*p == '.')
                s.to[o++] = *p++;
        }
        s.to[o] = '\0';
    } else {
        s.to = nd_xstrdup(from);
        s.same = true;
    }
    s.to_len = strlen(s.to);
    nd_acct_route_t *r = route_of(importer);
    r->srcs = nd_xrealloc(r->srcs, (r->nsrcs + 1) * sizeof(*r->srcs));
    r->srcs[r->nsrcs++] = s;
}

/* AddMappedStreamImport: adds importer's import im to the exporter's route. */
static void
add_stream_import(struct nd_auth *a, const nd_opts_t *o, nd_auth_acct_t *importer,
                  const nd_import_t *im)
{
    const char *from = im->subject;
    if (im->account == NULL || from == NULL || !nd_subj_valid_sub(from, strlen(from))) {
        nd_log_warn("Account %s: stream import of an invalid subject: ignored", importer->name);
        return;
    }
    nd_auth_acct_t *ex = entry_of(a, im->account);
    if (ex == NULL || ex == importer) {
        nd_log_warn("Account %s: stream import from unknown account %s: ignored", importer->name,
                    im->account);
        return;
    }
    if (!stream_authorized(opts_of(o, ex->name), importer->name, from)) {
        nd_log_warn("Account %s: stream import %s from account %s not authorized: ignored",
                    importer->name, from, ex->name);
        return;
    }
    char *to = NULL;
    if (im->prefix != NULL && im->prefix[0] != '\0') {
        size_t pl = strlen(im->prefix);
        bool dot = im->prefix[pl - 1] == '.';
        to = nd_xmalloc(pl + 1 + strlen(from) + 1);
        sprintf(to, "%s%s%s", im->prefix, dot ? "" : ".", from);
    } else if (im->to != NULL && im->to[0] != '\0' && strcmp(im->to, from) != 0) {
        to = nd_xstrdup(im->to);
    }
    nd_acct_stream_imp_t e = {.acct = importer->acct, .from = nd_xstrdup(from)};
    e.from_len = strlen(from);
    if (to != NULL && !nd_subj_is_literal(from, e.from_len)) {
        char *dest = tokenize_dest(to);
        char err[256];
        nd_xf_err_t rc = nd_xf_new(from, dest, ND_XF_MODE_STRICT, &e.xf, err, sizeof err);
        nd_free(dest);
        nd_free(to);
        to = NULL;
        if (rc != ND_XF_OK || e.xf == NULL) {
            nd_log_warn("Account %s: stream import %s: %s: ignored", importer->name, from,
                        rc != ND_XF_OK ? err : "no transform");
            nd_free(e.from);
            return;
        }
    } else if (to != NULL && !nd_subj_valid_pub(to, strlen(to))) {
        nd_log_warn("Account %s: stream import %s: invalid subject %s: ignored", importer->name,
                    from, to);
        nd_free(to);
        nd_free(e.from);
        return;
    }
    e.to = to;
    e.to_len = to != NULL ? strlen(to) : 0;
    nd_acct_route_t *r = route_of(ex);
    r->streams = nd_xrealloc(r->streams, (r->nstreams + 1) * sizeof(*r->streams));
    r->streams[r->nstreams++] = e;
    add_stream_src(importer, ex, im, from);
}

/* checkServiceImportAuthorized: the service export that contains the imported subject and is
 * public or lists the importer, or NULL. */
static const nd_export_t *
service_export(const nd_account_opts_t *exp, const char *importer, const char *subj)
{
    for (size_t i = 0; exp != NULL && i < exp->nexports; i++) {
        const nd_export_t *x = &exp->exports[i];
        if (!x->service || x->subject == NULL ||
            !nd_subj_subset(subj, strlen(subj), x->subject, strlen(x->subject)))
            continue;
        if (x->accounts.n == 0)
            return x;
        for (size_t k = 0; k < x->accounts.n; k++)
            if (strcmp(x->accounts.v[k], importer) == 0)
                return x;
    }
    return NULL;
}

/* AddServiceImportWithClaim: adds im to the importer's route. */
/* The response type of the server's own exports (system_imports below): CONNZ and STATZ
 * answers may come from many servers (streamed), USER.INFO has one answer. */
static const nd_export_t sys_streamed = {.service = true, .resp_type = ND_RESP_STREAM};
static const nd_export_t sys_singleton = {.service = true, .resp_type = ND_RESP_SINGLETON};

/* x: the export authorizing the import, or NULL to look it up in the exporter's options. */
static void
add_service_import_as(struct nd_auth *a, const nd_opts_t *o, nd_auth_acct_t *importer,
                      const nd_import_t *im, const nd_export_t *x)
{
    const char *subj = im->subject;
    const char *from = im->to != NULL && im->to[0] != '\0' ? im->to : subj;
    if (im->account == NULL || subj == NULL || !nd_subj_valid_sub(subj, strlen(subj)) ||
        !nd_subj_valid_sub(from, strlen(from))) {
        nd_log_warn("Account %s: service import of an invalid subject: ignored", importer->name);
        return;
    }
    /* The exporter may be the importer itself: a request then reaches the account's own
     * subscribers twice, directly and through the import (as with nats-server). */
    nd_auth_acct_t *ex = entry_of(a, im->account);
    if (ex == NULL) {
        nd_log_warn("Account %s: service import from unknown account %s: ignored", importer->name,
                    im->account);
        return;
    }
    if (x == NULL)
        x = service_export(opts_of(o, ex->name), importer->name, subj);
    if (x == NULL) {
        nd_log_warn("Account %s: service import %s from account %s not authorized: ignored",
                    importer->name, subj, ex->name);
        return;
    }
    nd_acct_svc_imp_t e = {.acct = ex->acct, .from = nd_xstrdup(from)};
    e.from_len = strlen(from);
    if (strcmp(from, subj) != 0) {
        if (nd_subj_is_literal(from, e.from_len)) {
            e.to = nd_xstrdup(subj);
            e.to_len = strlen(subj);
        } else {
            char *dest = tokenize_dest(subj);
            char err[256];
            nd_xf_err_t rc = nd_xf_new(from, dest, ND_XF_MODE_STRICT, &e.xf, err, sizeof err);
            nd_free(dest);
            if (rc != ND_XF_OK || e.xf == NULL) {
                nd_log_warn("Account %s: service import %s: %s: ignored", importer->name, subj,
                            rc != ND_XF_OK ? err : "no transform");
                nd_free(e.from);
                return;
            }
        }
    }
    nd_acct_route_t *er = route_of(ex);
    if (er->resp == NULL)
        er->resp = nd_acct_resp_new(ex->name);
    e.resp = er->resp;
    e.singleton = x->resp_type == ND_RESP_SINGLETON;
    e.share = im->share;
    const char *sys = nd_opts_system_account(o);
    e.sys = sys != NULL && strcmp(sys, ex->name) == 0;
    e.ttl_ns =
        x->resp_threshold_ms > 0 ? x->resp_threshold_ms * 1000000LL : ND_ACCT_RESP_DEFAULT_NS;
    nd_acct_route_t *r = route_of(importer);
    r->svcs = nd_xrealloc(r->svcs, (r->nsvcs + 1) * sizeof(*r->svcs));
    r->svcs[r->nsvcs++] = e;
    unsigned char c0 = (unsigned char)from[0];
    if ((c0 == '*' || c0 == '>') && (from[1] == '\0' || from[1] == '.'))
        memset(r->svc_first, 0xff, sizeof r->svc_first);
    else
        r->svc_first[c0 >> 6] |= 1ull << (c0 & 63);
}

static void
add_service_import(struct nd_auth *a, const nd_opts_t *o, nd_auth_acct_t *importer,
                   const nd_import_t *im)
{
    add_service_import_as(a, o, importer, im, NULL);
}

/* Returns: whether the importer already imports the local subject from (a configured import
 * takes precedence over the server's own, as nats-server's serviceImportExists). */
static bool
imports_subject(nd_auth_acct_t *importer, const char *from)
{
    const nd_acct_route_t *r = importer->route;
    for (size_t i = 0; r != NULL && i < r->nsvcs; i++)
        if (strcmp(r->svcs[i].from, from) == 0)
            return true;
    return false;
}

/* nats-server's registerSystemImports (and the system account's own USER.INFO import): with a
 * system account, every other account imports the server's account-scoped services, the
 * importer's name put into the subject, so a client of any account can ask for its own
 * connections, statistics and user info:
 *   $SYS.REQ.SERVER.PING.CONNZ, $SYS.REQ.ACCOUNT.PING.CONNZ -> $SYS.REQ.ACCOUNT.<acc>.CONNZ
 *   $SYS.REQ.ACCOUNT.PING.STATZ                             -> $SYS.REQ.ACCOUNT.<acc>.STATZ
 *   $SYS.REQ.USER.INFO (sharing the requester's details)    -> $SYS.REQ.USER.<acc>.INFO
 * The services themselves are internal clients of the system account (mon/sysevents.c). */
static void
add_system_imports(struct nd_auth *a, const nd_opts_t *o)
{
    const char *sys = nd_opts_system_account(o);
    if (sys == NULL || entry_of(a, sys) == NULL)
        return;
    for (size_t i = 0; i < a->naccts; i++) {
        nd_auth_acct_t *e = &a->accts[i];
        bool is_sys = strcmp(e->name, sys) == 0;
        struct {
            const char *from, *fmt;
            const nd_export_t *x;
            bool share;
        } rows[] = {
            {"$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.ACCOUNT.%s.CONNZ", &sys_streamed, false},
            {"$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.%s.CONNZ", &sys_streamed, false},
            {"$SYS.REQ.ACCOUNT.PING.STATZ", "$SYS.REQ.ACCOUNT.%s.STATZ", &sys_streamed, false},
            {"$SYS.REQ.USER.INFO", "$SYS.REQ.USER.%s.INFO", &sys_singleton, true},
        };
        for (size_t k = is_sys ? 3 : 0; k < sizeof rows / sizeof rows[0]; k++) {
            if (imports_subject(e, rows[k].from))
                continue;
            char to[ND_ACCT_NAME_MAX + 32];
            snprintf(to, sizeof to, rows[k].fmt, e->name);
            nd_import_t im = {.service = true,
                              .account = (char *)sys,
                              .subject = to,
                              .to = (char *)rows[k].from,
                              .share = rows[k].share};
            add_service_import_as(a, o, e, &im, rows[k].x);
        }
    }
}

void
nd_acct_route_build(struct nd_auth *a, const nd_opts_t *o)
{
    for (size_t i = 0; i < o->naccounts; i++) {
        const nd_account_opts_t *ao = &o->accounts[i];
        nd_auth_acct_t *e = entry_of(a, ao->name);
        if (e == NULL)
            continue;
        if (ao->nmappings > 0) {
            nd_xf_table_t *t = nd_xf_table_new();
            for (size_t k = 0; k < ao->nmappings; k++) {
                /* One at a time, so a refused mapping skips only itself. */
                char err[256];
                if (nd_xf_table_add_opts(t, &ao->mappings[k], 1, NULL, err, sizeof err) != ND_XF_OK)
                    nd_log_warn("Account %s: error adding mapping for %s: %s: ignored", ao->name,
                                ao->mappings[k].src, err);
            }
            if (nd_xf_table_count(t) > 0)
                route_of(e)->map = t;
            else
                nd_xf_table_free(t);
        }
        for (size_t k = 0; k < ao->nimports; k++) {
            const nd_import_t *im = &ao->imports[k];
            if (im->service)
                add_service_import(a, o, e, im);
            else
                add_stream_import(a, o, e, im);
        }
    }
    add_system_imports(a, o);
}

void
nd_acct_route_free(nd_acct_route_t *r)
{
    if (r == NULL)
        return;
    if (r->map != NULL)
        nd_xf_table_free(r->map);
    for (size_t i = 0; i < r->nstreams; i++) {
        nd_free(r->streams[i].from);
        nd_free(r->streams[i].to);
        if (r->streams[i].xf != NULL)
            nd_xf_free(r->streams[i].xf);
    }
    nd_free(r->streams);
    for (size_t i = 0; i < r->nsrcs; i++) {
        nd_free(r->srcs[i].from);
        nd_free(r->srcs[i].to);
    }
    nd_free(r->srcs);
    for (size_t i = 0; i < r->nsvcs; i++) {
        nd_free(r->svcs[i].from);
        nd_free(r->svcs[i].to);
        if (r->svcs[i].xf != NULL)
            nd_xf_free(r->svcs[i].xf);
    }
    nd_free(r->svcs);
    nd_acct_resp_free(r->resp);
    nd_free(r);
}

static bool
holds(const struct nd_auth *a, const nd_acct_t *acct)
{
    for (size_t i = 0; a != NULL && i < a->naccts; i++)
        if (a->accts[i].acct == acct)
            return true;
    return false;
}

void
nd_acct_route_install(const struct nd_auth *old, const struct nd_auth *cur)
{
    /* release: a publisher that loads a route (acquire) sees it fully built. Accounts kept by cur
     * are overwritten in one store, so their publishers never see a gap. */
    for (size_t i = 0; old != NULL && i < old->naccts; i++)
        if (!holds(cur, old->accts[i].acct))
            atomic_store_explicit(&old->accts[i].acct->route, NULL, memory_order_release);
    for (size_t i = 0; cur != NULL && i < cur->naccts; i++)
        atomic_store_explicit(&cur->accts[i].acct->route, cur->accts[i].route,
                              memory_order_release);
}
