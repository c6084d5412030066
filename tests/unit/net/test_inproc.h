/* In-process servers for the unit tests of src/net's actors (conn.c, client.c, deliver.c,
 * iclient.c). The actors only run inside a pool, so each test starts a whole server in its own
 * process (natsd_start on 127.0.0.1, a random port, options from a command line as main builds
 * them) and talks to it over raw sockets with the integration harness's connection helpers
 * (tests/integ/harness.h: ND_SEND, ND_EXPECT, hang guards, escaped diffs). Nothing here waits on
 * time: every check is a protocol round trip.
 *
 * Ctx: the test's main thread.
 */
#ifndef ND_TEST_INPROC_H
#define ND_TEST_INPROC_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/pool.h"
#include "cfg/opts.h"
#include "harness.h"
#include "natsd/natsd.h"
#include "net/server.h"

typedef struct inproc {
    natsd_t *natsd;
    nd_integ_conf_t cf; /* the config file, when the test gave one */
    int port;
} inproc_t;

/* Starts a server with conf (config file text, or NULL for the defaults). The flags come after
 * the file, as on natsd's command line, so they win over it. */
static inline inproc_t
inproc_start(const char *conf)
{
    inproc_t p = {0};
    const char *argv[8] = {"natsd", "-a", "127.0.0.1", "-p", "-1"};
    int argc = 5;
    if (conf != NULL) {
        nd_integ_conf_write(&p.cf, conf);
        argv[argc++] = "-c";
        argv[argc++] = p.cf.path;
    }
    nd_opts_t o;
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, argc, (char **)argv), 0, "bad options");
    p.natsd = natsd_start(&o);
    nd_opts_free(&o);
    cr_assert_not_null(p.natsd, "natsd_start failed");
    p.port = natsd_port(p.natsd);
    return p;
}

static inline void
inproc_stop(inproc_t *p)
{
    natsd_stop(p->natsd);
    nd_integ_conf_remove(&p->cf);
}

/* Opens a raw connection, sends CONNECT with the given JSON object, and waits for the PONG of a
 * PING sent after it. */
static inline nd_integ_conn_t *
inproc_client(const inproc_t *p, const char *connect_json)
{
    nd_integ_conn_t *c = nd_integ_conn_open_port(p->port);
    char buf[512];
    snprintf(buf, sizeof buf, "CONNECT %s\r\nPING\r\n", connect_json);
    ND_SENDS(c, buf);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Reads frames until the PONG of a PING it sends and returns how many were "MSG <subj> " frames
 * (anything else fails the test). */
static inline int
inproc_count_msgs(nd_integ_conn_t *c, const char *subj)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "MSG %s ", subj);
    ND_SEND(c, "PING\r\n");
    int n = 0;
    for (;;) {
        char *f = nd_integ_read_frame(c);
        cr_assert_not_null(f, "connection closed before the PONG");
        bool pong = strcmp(f, "PONG\r\n") == 0;
        bool msg = strncmp(f, prefix, strlen(prefix)) == 0;
        cr_assert(pong || msg, "unexpected frame: %.200s", f);
        free(f);
        if (pong)
            return n;
        n++;
    }
}

/* A bare server: the pool and the client listener only (no monitoring, no $SYS services), for
 * a test that needs nd_server_t itself (to start its own internal clients). */
typedef struct inproc_bare {
    nd_pool_t *pool;
    nd_server_t *srv;
} inproc_bare_t;

static inline inproc_bare_t
inproc_bare_start(unsigned workers)
{
    inproc_bare_t b;
    nd_opts_t o;
    nd_opts_defaults(&o);
    nd_free(o.host);
    o.host = nd_xstrdup("127.0.0.1");
    o.port = -1;
    if (workers > 0)
        o.workers = workers;
    b.pool = nd_pool_new(o.workers);
    b.srv = nd_server_start(&o, b.pool);
    nd_opts_free(&o);
    cr_assert_not_null(b.srv, "nd_server_start failed");
    nd_pool_start(b.pool);
    nd_server_accept(b.srv);
    return b;
}

static inline void
inproc_bare_stop(inproc_bare_t *b)
{
    nd_server_stop_accepting(b->srv);
    nd_pool_shutdown(b->pool);
    nd_server_free(b->srv);
    nd_pool_free(b->pool);
}

#endif
