/* The server: options, the client listener, the INFO template, the global account and the
 * counters shared by every connection. Immutable after start except the atomics.
 * (Becomes an actor with reload and lame duck in the config issue.) */
#ifndef ND_SERVER_H
#define ND_SERVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "natsd/actor.h"
#include "natsd/alloc.h"
#include "natsd/opts.h"
#include "natsd/pool.h"
#include "poller.h"

/* A worker's I/O scratch buffer (see conn.c): only the connection running on that worker uses
 * it, during its turn. */
typedef struct nd_iobuf {
    char *p;
    size_t cap;
} ND_CACHE_ALIGNED nd_iobuf_t;

typedef struct nd_server {
    /* immutable after start */
    nd_opts_t opts;
    nd_pool_t *pool;
    nd_poller_t *poller;
    struct nd_acct *gacct; /* the global account ($G) */
    char server_id[57];
    char *info;        /* INFO JSON without the closing brace: per-client fields follow */
    size_t info_len;
    int port;          /* the bound client port */
    int listen_fd;
    nd_io_t listen_io;
    nd_iobuf_t *rscratch, *wscratch; /* one each per worker, indexed by ctx->worker */
    /* any thread, atomic */
    _Atomic uint64_t next_cid;
    _Atomic int32_t nconns;
} nd_server_t;

/* Binds the listener and starts accepting; installs the poller as the pool's idle hook, so call
 * it before nd_pool_start. Returns: NULL after logging why. Ctx: main thread. */
nd_server_t *nd_server_start(const nd_opts_t *opts, nd_pool_t *pool);
/* Stops accepting; connections are closed by the pool's shutdown. */
void nd_server_stop_accepting(nd_server_t *s);
/* Frees the server after the pool has shut down. */
void nd_server_free(nd_server_t *s);

#endif
