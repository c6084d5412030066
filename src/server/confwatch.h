/* Follows a Kubernetes ConfigMap volume: when the config file lives in a directory the kubelet
 * manages (the key a symlink through `..data`, itself a symlink to a timestamped directory),
 * every update swaps `..data` with one rename; natsd then reloads as if it got SIGHUP. Outside
 * such a directory nothing is watched (an editor's save never reloads natsd, as with
 * nats-server), and the chart's reloader sending SIGHUP keeps working alongside (a second
 * reload of the same file changes nothing).
 *
 * One thread blocked on an inotify descriptor of the directory; on IN_MOVED_TO/IN_CREATE of
 * `..data` it sends SIGHUP to this process, whose signal loop (main.c) does the reload.
 * Ctx: main thread (start and stop).
 */
#ifndef ND_CONFWATCH_H
#define ND_CONFWATCH_H

typedef struct nd_confwatch nd_confwatch_t;

/* Starts watching the directory of config_path when it holds a `..data` symlink.
 * Returns: the watcher (owned by the caller, ended by nd_confwatch_stop), or NULL: nothing to
 * watch (no config file, no `..data`, or inotify unavailable: logged). */
nd_confwatch_t *nd_confwatch_start(const char *config_path);

/* Stops the thread and frees w (NULL is fine). */
void nd_confwatch_stop(nd_confwatch_t *w);

#endif
