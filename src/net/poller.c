/* The poller; see poller.h for the contract and for which thread polls.
 *
 * Event delivery: for each epoll event the poller ORs the readiness bits into io->events; if the
 * previous value was 0 the embedded io->msg is not queued (the owner took the bits after popping
 * it), so the poller sends it. The owner clears the bits in its handler with an exchange, after
 * which the message may be sent again: an embedded message is never in a mailbox twice.
 * Removal: requests queue under `lock` and are applied between epoll_wait batches, on this thread.
 */
#include "net/poller.h"

#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "actors/alloc.h"
#include "actors/pool.h"

#define MAX_EVENTS 256

struct nd_poller {
    nd_pool_t *pool;
    int epfd;
    int wakefd;
    pthread_t thread;
    pthread_mutex_t lock;
    nd_io_t *removals; /* under lock */
    bool stop;         /* under lock */
    bool own_thread;   /* immutable */
};

static void
post(nd_ctx_t *ctx, nd_io_t *io, uint32_t events)
{
    /* acq_rel: release publishes the bits with the message; acquire orders after the owner's take. */
    uint32_t prev = atomic_fetch_or_explicit(&io->events, events, memory_order_acq_rel);
    if (prev == 0)
        nd_actor_send(ctx, io->owner, &io->msg);
}

void
nd_io_again(nd_ctx_t *ctx, nd_io_t *io, uint32_t events)
{
    post(ctx, io, events);
}

static void
apply_removals(nd_poller_t *p, nd_ctx_t *ctx)
{
    pthread_mutex_lock(&p->lock);
    nd_io_t *list = p->removals;
    p->removals = NULL;
    pthread_mutex_unlock(&p->lock);
    while (list != NULL) {
        nd_io_t *io = list;
        list = io->next_removal;
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, io->fd, NULL);
        close(io->fd);
        io->fd = -1;
        nd_actor_t *owner = io->owner;
        /* release: pairs with the acquire in whoever waits for the removal (net/listener.c).
         * The io lives until the unref below, or longer if the waiter holds a reference. */
        atomic_store_explicit(&io->removed, true, memory_order_release);
        if (owner != NULL)
            nd_actor_unref(ctx, owner);
    }
}

void
nd_poller_poll(nd_ctx_t *ctx, nd_poller_t *p, int timeout_ms)
{
    struct epoll_event evs[MAX_EVENTS];
    int n = epoll_wait(p->epfd, evs, MAX_EVENTS, timeout_ms);
    for (int i = 0; i < n; i++) {
        nd_io_t *io = evs[i].data.ptr;
        if (io == NULL) {
            uint64_t v;
            ssize_t r = read(p->wakefd, &v, sizeof v);
            (void)r;
            continue;
        }
        uint32_t bits = 0;
        if (evs[i].events & (EPOLLIN | EPOLLPRI))
            bits |= ND_IO_READ;
        if (evs[i].events & EPOLLOUT)
            bits |= ND_IO_WRITE;
        if (evs[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
            bits |= ND_IO_HUP | ND_IO_READ;
        post(ctx, io, bits);
    }
    apply_removals(p, ctx);
}

static void *
poller_main(void *arg)
{
    nd_poller_t *p = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(p->pool);
    for (;;) {
        nd_poller_poll(ctx, p, -1);
        pthread_mutex_lock(&p->lock);
        bool stop = p->stop && p->removals == NULL;
        pthread_mutex_unlock(&p->lock);
        if (stop)
            break;
    }
    nd_ctx_external_free(ctx);
    return NULL;
}

static void
idle_poll(nd_ctx_t *ctx, void *arg, int timeout_ms)
{
    nd_poller_poll(ctx, arg, timeout_ms);
}

static void
idle_wake(void *arg)
{
    nd_poller_wake(arg);
}

void
nd_poller_idle(nd_pool_idle_t *out, nd_poller_t *p)
{
    out->poll = idle_poll;
    out->wake = idle_wake;
    out->arg = p;
}

nd_poller_t *
nd_poller_new(nd_pool_t *pool, bool own_thread)
{
    nd_poller_t *p = nd_new(nd_poller_t);
    p->pool = pool;
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->epfd < 0 || p->wakefd < 0)
        nd_fatal("cannot create epoll/eventfd: %s", strerror(errno));
    pthread_mutex_init(&p->lock, NULL);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakefd, &ev);
    p->own_thread = own_thread;
    if (own_thread && pthread_create(&p->thread, NULL, poller_main, p) != 0)
        nd_fatal("cannot start the poller thread");
    return p;
}

void
nd_poller_wake(nd_poller_t *p)
{
    uint64_t one = 1;
    ssize_t r = write(p->wakefd, &one, sizeof one);
    (void)r;
}

void
nd_poller_free(nd_poller_t *p)
{
    if (p->own_thread) {
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_mutex_unlock(&p->lock);
        nd_poller_wake(p);
        pthread_join(p->thread, NULL);
    } else {
        /* The workers have stopped: apply what is left from this thread. */
        nd_ctx_t *ctx = nd_ctx_external_new(p->pool);
        apply_removals(p, ctx);
        nd_ctx_external_free(ctx);
    }
    close(p->epfd);
    close(p->wakefd);
    pthread_mutex_destroy(&p->lock);
    nd_free(p);
}

int
nd_poller_add(nd_poller_t *p, nd_io_t *io, int fd, nd_actor_t *owner, uint32_t msg_id)
{
    io->fd = fd;
    io->owner = owner;
    atomic_init(&io->events, 0);
    io->msg.id = msg_id;
    io->msg.flags = ND_MSG_F_EMBEDDED;
    io->next_removal = NULL;
    atomic_init(&io->removed, false);
    nd_actor_ref(owner);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = io};
    if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int err = errno;
        atomic_fetch_sub(&owner->refs, 1); /* cannot be the last: the caller holds one */
        return err;
    }
    return 0;
}

void
nd_poller_remove(nd_poller_t *p, nd_io_t *io)
{
    pthread_mutex_lock(&p->lock);
    io->next_removal = p->removals;
    p->removals = io;
    pthread_mutex_unlock(&p->lock);
    nd_poller_wake(p);
}
