/* Process files nats-server writes for service managers and test harnesses: the pid file
 * (-P/--pid, pid_file) and the ports file (--ports_file_dir, ports_file_dir).
 * Ctx: main thread (start-up and exit).
 */
#ifndef ND_PIDFILE_H
#define ND_PIDFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Writes this process's pid (decimal, no newline, mode 0660 before umask) to path, as
 * nats-server's logPid. Returns: 0, or -1 with err = "Could not write pidfile: <why>". */
int nd_pidfile_write(const char *path, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Removes the pid file if it still holds our pid (natsd's addition: nats-server leaves it). */
void nd_pidfile_remove(const char *path);

/* One listener for the ports file: proto "nats", "tls", "http", "https", "ws", "wss"; host as
 * bound (0.0.0.0 or :: expands to every interface address, as nats-server does); port <= 0 means
 * no such listener. */
typedef struct nd_ports_url {
    const char *proto;
    const char *host;
    int port;
} nd_ports_url_t;

typedef struct nd_ports {
    nd_ports_url_t nats, monitoring, cluster, profile, websocket;
} nd_ports_t;

/* The ports file's path, "<dir>/<basename(exe)>_<pid>.ports", into out. */
void nd_portsfile_path(const char *dir, const char *exe, char *out, size_t cap);
/* Writes the ports file: JSON {"nats":["nats://h:p",...],"monitoring":[...],"cluster":[...],
 * "profile":[...],"websocket":[...]} without empty members, as nats-server's Ports.
 * Returns: 0, or -1 with err = "Error writing ports file (<path>): <why>". */
int nd_portsfile_write(const char *dir, const char *exe, const nd_ports_t *ports, char *err,
                       size_t errlen) __attribute__((warn_unused_result));
/* Removes the ports file written by nd_portsfile_write. Returns: 0, or -1 with err =
 * "Error cleaning up ports file <path>: <why>". */
int nd_portsfile_remove(const char *dir, const char *exe, char *err, size_t errlen);

/* Appends the URLs of one listener to a jansson array (json_t *); exposed for tests. */
void nd_ports_urls(const nd_ports_url_t *u, void *json_array);

#endif
