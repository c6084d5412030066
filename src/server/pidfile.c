/* Pid file and ports file; see pidfile.h.
 *
 * The ports file follows nats-server 2.10 (server/server.go portFile, logPorts, PortsInfo,
 * resolveHostPorts): its name is "<basename of argv[0]>_<pid>.ports"; each listener is listed as
 * "<proto>://<host>:<port>", and a listener bound to the unspecified address is listed once per
 * address of every interface, interface by interface (IPv4 before IPv6 within one), IPv6 hosts
 * in brackets, so a harness can connect to whichever address it likes.
 */
#include "server/pidfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/alloc.h"

/* Go's text for an errno (its syscall error strings are strerror's, lower-cased). */
static const char *
go_strerror(int e, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

int
nd_pidfile_write(const char *path, char *err, size_t errlen)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0660);
    if (fd < 0 || write(fd, buf, (size_t)n) != n) {
        char why[128];
        go_strerror(errno, why, sizeof why);
        snprintf(err, errlen, "Could not write pidfile: open %s: %s", path, why);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

void
nd_pidfile_remove(const char *path)
{
    /* Leave a file that another process has rewritten since (a newer server's). */
    char buf[24] = "", want[24];
    snprintf(want, sizeof want, "%d", (int)getpid());
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (strcmp(buf, want) == 0)
        unlink(path);
}

void
nd_portsfile_path(const char *dir, const char *exe, char *out, size_t cap)
{
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    snprintf(out, cap, "%.*s/%s_%d.ports", (int)dl, dir, base, (int)getpid());
}

typedef struct ifaddr_entry {
    unsigned ifindex;
    int family_rank; /* IPv4 before IPv6 within an interface */
    size_t seq;      /* getifaddrs order, to keep the sort stable */
    char host[INET6_ADDRSTRLEN + 2];
} ifaddr_entry_t;

static int
cmp_entry(const void *a, const void *b)
{
    const ifaddr_entry_t *x = a, *y = b;
    if (x->ifindex != y->ifindex)
        return x->ifindex < y->ifindex ? -1 : 1;
    if (x->family_rank != y->family_rank)
        return x->family_rank - y->family_rank;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void
add_url(json_t *arr, const char *proto, const char *host, int port, bool v6)
{
    char url[512];
    snprintf(url, sizeof url, v6 ? "%s://[%s]:%d" : "%s://%s:%d", proto, host, port);
    json_array_append_new(arr, json_string(url));
}

void
nd_ports_urls(const nd_ports_url_t *u, void *json_array)
{
    json_t *arr = json_array;
    if (u->port <= 0)
        return;
    const char *host = u->host && *u->host ? u->host : "0.0.0.0";
    bool any = strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || strcmp(host, "[::]") == 0;
    if (!any) {
        add_url(arr, u->proto, host, u->port, strchr(host, ':') != NULL && host[0] != '[');
        return;
    }
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0)
        return;
    size_t n = 0, cap = 0;
    ifaddr_entry_t *v = NULL;
    for (struct ifaddrs *p = ifa; p != NULL; p = p->ifa_next) {
        if (p->ifa_addr == NULL ||
            (p->ifa_addr->sa_family != AF_INET && p->ifa_addr->sa_family != AF_INET6))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            v = nd_xrealloc(v, cap * sizeof *v);
        }
        ifaddr_entry_t *e = &v[n];
        e->ifindex = if_nametoindex(p->ifa_name);
        e->seq = n;
        if (p->ifa_addr->sa_family == AF_INET) {
            e->family_rank = 0;
            inet_ntop(AF_INET, &((struct sockaddr_in *)p->ifa_addr)->sin_addr, e->host,
                      sizeof e->host);
        } else {
            e->family_rank = 1;
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)p->ifa_addr)->sin6_addr, e->host,
                      sizeof e->host);
        }
        n++;
    }
    freeifaddrs(ifa);
    qsort(v, n, sizeof *v, cmp_entry);
    for (size_t i = 0; i < n; i++)
        add_url(arr, u->proto, v[i].host, u->port, v[i].family_rank == 1);
    nd_free(v);
}

int
nd_portsfile_write(const char *dir, const char *exe, const nd_ports_t *ports, char *err,
                   size_t errlen)
{
    char path[4096];
    nd_portsfile_path(dir, exe, path, sizeof path);
    const struct {
        const char *key;
        const nd_ports_url_t *u;
    } members[] = {
        {"nats", &ports->nats},           {"monitoring", &ports->monitoring},
        {"cluster", &ports->cluster},     {"profile", &ports->profile},
        {"websocket", &ports->websocket},
    };
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        json_t *arr = json_array();
        nd_ports_urls(members[i].u, arr);
        if (json_array_size(arr) > 0)
            json_object_set_new(o, members[i].key, arr);
        else
            json_decref(arr);
    }
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    int rc = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    size_t len = strlen(js);
    if (fd < 0 || write(fd, js, len) != (ssize_t)len) {
        char why[128];
        go_strerror(errno, why, sizeof why);
        snprintf(err, errlen, "Error writing ports file (%s): open %s: %s", path, path, why);
        rc = -1;
    }
    if (fd >= 0)
        close(fd);
    free(js);
    return rc;
}

int
nd_portsfile_remove(const char *dir, const char *exe, char *err, size_t errlen)
{
    char path[4096];
    nd_portsfile_path(dir, exe, path, sizeof path);
    if (unlink(path) != 0) {
        char why[128];
        go_strerror(errno, why, sizeof why);
        snprintf(err, errlen, "Error cleaning up ports file %s: remove %s: %s", path, path, why);
        return -1;
    }
    return 0;
}
