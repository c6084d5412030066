/* Kubernetes ConfigMap updates: see confwatch.h. */
#include "server/confwatch.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "util/log.h"

#define DATA_LINK "..data" /* the kubelet's atomic writer swaps this link on every update */

struct nd_confwatch {
    /* immutable after start */
    pthread_t thread;
    int ifd;     /* inotify */
    int stop[2]; /* a pipe: closing the write end ends the thread */
};

/* Returns: true when buf holds an event that swapped DATA_LINK in. */
static bool
data_swapped(const char *buf, ssize_t n)
{
    bool hit = false;
    for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
        const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
        if (ev->len > 0 && strcmp(ev->name, DATA_LINK) == 0)
            hit = true;
        off += (ssize_t)sizeof(struct inotify_event) + ev->len;
    }
    return hit;
}

static void *
watch_main(void *arg)
{
    nd_confwatch_t *w = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd p[2] = {{.fd = w->ifd, .events = POLLIN},
                              {.fd = w->stop[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents != 0)
            break;
        ssize_t n = read(w->ifd, buf, sizeof buf);
        if (n <= 0)
            continue;
        if (data_swapped(buf, n)) {
            nd_log_info("Config volume updated (%s swapped): reloading", DATA_LINK);
            kill(getpid(), SIGHUP); /* main's signal loop reloads, as for the reloader's HUP */
        }
    }
    return NULL;
}

nd_confwatch_t *
nd_confwatch_start(const char *config_path)
{
    if (config_path == NULL || config_path[0] == '\0')
        return NULL;
    char dir[PATH_MAX];
    const char *slash = strrchr(config_path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - config_path + (slash == config_path)),
                 config_path);
    char link[PATH_MAX + sizeof DATA_LINK + 1];
    snprintf(link, sizeof link, "%s/%s", dir, DATA_LINK);
    struct stat st;
    if (lstat(link, &st) != 0 || !S_ISLNK(st.st_mode))
        return NULL; /* not a ConfigMap volume */
    nd_confwatch_t *w = nd_new(nd_confwatch_t);
    w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (w->ifd < 0 || inotify_add_watch(w->ifd, dir, IN_MOVED_TO | IN_CREATE) < 0) {
        nd_log_warn("Cannot watch %s for ConfigMap updates (%s): reload with SIGHUP", dir,
                    strerror(errno));
        if (w->ifd >= 0)
            close(w->ifd);
        nd_free(w);
        return NULL;
    }
    bool piped = pipe(w->stop) == 0;
    if (!piped || pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        nd_log_warn("Cannot watch %s for ConfigMap updates: reload with SIGHUP", dir);
        if (piped) {
            close(w->stop[0]);
            close(w->stop[1]);
        }
        close(w->ifd);
        nd_free(w);
        return NULL;
    }
    nd_log_info("Watching %s for ConfigMap updates (%s)", dir, DATA_LINK);
    return w;
}

void
nd_confwatch_stop(nd_confwatch_t *w)
{
    if (w == NULL)
        return;
    close(w->stop[1]);
    pthread_join(w->thread, NULL);
    close(w->stop[0]);
    close(w->ifd);
    nd_free(w);
}
