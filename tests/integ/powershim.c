/* powershim: an LD_PRELOAD library that simulates a power loss (and a full disk) for the files
 * under one directory, for the JetStream durability tests (tests/integ/test_jspower.c).
 *
 * Environment:
 *   ND_POWERSHIM_DIR  the directory whose files are watched (absolute path, a prefix of every
 *                     path the process uses for them); without it the library does nothing.
 *   ND_POWERSHIM_CTL  a control file the library reads every millisecond (from its own thread).
 *                     Its first word selects the mode: "ok" (normal), "enospc" (a full disk:
 *                     writes and file creations under the directory fail with ENOSPC; the
 *                     first write of each episode is cut short, as a disk filling up mid-write
 *                     does) or "cut" (the power goes). Each change is logged to stderr
 *                     ("powershim: ...").
 *
 * The model of a page cache that is lost with the power:
 *   - Data. Per file (by inode) the library remembers the size the file had when it was last
 *     made durable (fsync/fdatasync on any descriptor of it, syncfs, sync, or a write on an
 *     O_SYNC/O_DSYNC descriptor; a file it meets for the first time counts as durable as found)
 *     and, in an undo log, the old bytes of every durable range a later write or truncate
 *     replaced. At the cut the undo log is applied newest first and the file is cut back to its
 *     durable size: exactly the contents of its last sync. sync_file_range promises nothing
 *     about durability (no metadata, no disk cache flush) and does not count.
 *   - Names. A file created under the directory survives only if its parent directory was
 *     fsynced after the creation; at the cut the others are removed. Renames, unlinks and
 *     mkdir are taken as durable at once (optimistic: the tests check the data path).
 *   - The cut itself: the library's thread takes the lock every watched write and fsync runs
 *     under, rolls the files back, logs what it dropped and _exit(0)s, so no later write
 *     reaches a watched file and nothing the process does after the cut is durable. Writes to
 *     sockets are not held: acknowledgements already sent stay sent, as with real power loss.
 *
 * Built without sanitizers (tests/CMakeLists.txt); under an ASan natsd the test adds
 * verify_asan_link_order=0 to ASAN_OPTIONS, since this library comes before the ASan runtime.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 65536

typedef struct undo {
    off_t off;
    size_t len;
    unsigned char *bytes;
} undo_t;

typedef struct rec {
    dev_t dev;
    ino_t ino;
    char *path;   /* where it was last seen (for removing an undurable creation) */
    int fd;       /* our own O_RDWR descriptor, for reading old bytes and restoring */
    off_t synced; /* the size at the last sync */
    undo_t *undo;
    size_t nundo, capundo;
    bool created; /* created here and its directory not fsynced since */
    dev_t pdev;   /* its parent directory */
    ino_t pino;
    struct rec *next;
} rec_t;

typedef struct fdent {
    bool dir;  /* a directory under the prefix (an fsync of it makes creations durable) */
    bool sync; /* O_SYNC / O_DSYNC */
    bool append;
    dev_t dev;
    ino_t ino;
    rec_t *rec;            /* regular files */
    struct fdent *retired; /* closed entries stay listed (a lock-free reader may hold one) */
} fdent_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *prefix;
static size_t prefix_len;
static const char *ctl;
static fdent_t *fds[MAX_FDS];
static rec_t *recs;
static fdent_t *retired;
static _Atomic int mode; /* 0 ok, 1 enospc */
static bool partial_left;

/* ---- the real functions ---- */

static int (*r_open)(const char *, int, ...);
static int (*r_openat)(int, const char *, int, ...);
static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_writev)(int, const struct iovec *, int);
static ssize_t (*r_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*r_pwritev2)(int, const struct iovec *, int, off_t, int);
static int (*r_ftruncate)(int, off_t);
static int (*r_truncate)(const char *, off_t);
static int (*r_fsync)(int);
static int (*r_fdatasync)(int);
static int (*r_syncfs)(int);
static void (*r_sync)(void);
static int (*r_close)(int);
static int (*r_rename)(const char *, const char *);
static int (*r_renameat)(int, const char *, int, const char *);
static int (*r_renameat2)(int, const char *, int, const char *, unsigned);
static int (*r_unlink)(const char *);
static int (*r_unlinkat)(int, const char *, int);

#define SYM(var, name) (*(void **)&(var) = dlsym(RTLD_NEXT, name))

/* Idempotent: the constructor runs it, and any call that comes before the constructor. */
static void
resolve(void)
{
    if (r_close != NULL)
        return;
    SYM(r_open, "open");
    SYM(r_openat, "openat");
    SYM(r_write, "write");
    SYM(r_pwrite, "pwrite");
    SYM(r_writev, "writev");
    SYM(r_pwritev, "pwritev");
    SYM(r_pwritev2, "pwritev2");
    SYM(r_ftruncate, "ftruncate");
    SYM(r_truncate, "truncate");
    SYM(r_fsync, "fsync");
    SYM(r_fdatasync, "fdatasync");
    SYM(r_syncfs, "syncfs");
    SYM(r_sync, "sync");
    SYM(r_rename, "rename");
    SYM(r_renameat, "renameat");
    SYM(r_renameat2, "renameat2");
    SYM(r_unlink, "unlink");
    SYM(r_unlinkat, "unlinkat");
    SYM(r_close, "close");
    const char *d = getenv("ND_POWERSHIM_DIR");
    if (d != NULL && d[0] == '/') {
        size_t n = strlen(d);
        while (n > 1 && d[n - 1] == '/')
            n--;
        prefix = strndup(d, n);
        prefix_len = n;
    }
    const char *c = getenv("ND_POWERSHIM_CTL");
    if (c != NULL && c[0] != '\0')
        ctl = strdup(c);
}

__attribute__((constructor)) static void
powershim_init(void)
{
    resolve();
}

static void
say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!r_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ---- paths and records ---- */

static bool
abs_path(int dirfd, const char *path, char *out, size_t cap)
{
    if (path == NULL)
        return false;
    if (path[0] == '/')
        return (size_t)snprintf(out, cap, "%s", path) < cap;
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (getcwd(base, sizeof base) == NULL)
            return false;
    } else {
        char l[64];
        snprintf(l, sizeof l, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(l, base, sizeof base - 1);
        if (n < 0)
            return false;
        base[n] = '\0';
    }
    return (size_t)snprintf(out, cap, "%s/%s", base, path) < cap;
}

static bool
watched(const char *abs)
{
    return prefix != NULL && strncmp(abs, prefix, prefix_len) == 0 &&
           (abs[prefix_len] == '/' || abs[prefix_len] == '\0');
}

/* Quick test before any work: an absolute path outside the prefix is not ours. */
static bool
maybe_watched(int dirfd, const char *path, char *abs, size_t cap)
{
    if (prefix == NULL || path == NULL)
        return false;
    if (path[0] == '/' && strncmp(path, prefix, prefix_len) != 0)
        return false;
    (void)dirfd;
    return abs_path(dirfd, path, abs, cap) && watched(abs);
}

static rec_t *
rec_find(dev_t dev, ino_t ino)
{
    for (rec_t *r = recs; r != NULL; r = r->next)
        if (r->fd >= 0 && r->dev == dev && r->ino == ino)
            return r;
    return NULL;
}

/* The file is gone (unlinked, renamed over): forget its history. */
static void
rec_detach(rec_t *r)
{
    if (r == NULL || r->fd < 0)
        return;
    r_close(r->fd);
    r->fd = -1;
    for (size_t i = 0; i < r->nundo; i++)
        free(r->undo[i].bytes);
    r->nundo = 0;
    r->created = false;
}

/* The record of the file at abs (dev/ino); a new one counts as durable as found, or as empty
 * and undurably named when created. */
static rec_t *
rec_get(dev_t dev, ino_t ino, const char *abs, bool created)
{
    rec_t *r = rec_find(dev, ino);
    if (r != NULL && created)
        rec_detach(r); /* an inode number used again */
    else if (r != NULL) {
        free(r->path);
        r->path = strdup(abs);
        return r;
    }
    int fd = r_open(abs, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        r_close(fd);
        return NULL;
    }
    r = calloc(1, sizeof *r);
    r->dev = dev;
    r->ino = ino;
    r->path = strdup(abs);
    r->fd = fd;
    r->synced = created ? 0 : sb.st_size;
    if (created) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", abs);
        char *slash = strrchr(dir, '/');
        struct stat ps;
        if (slash != NULL) {
            *slash = '\0';
            if (stat(dir[0] ? dir : "/", &ps) == 0) {
                r->created = true;
                r->pdev = ps.st_dev;
                r->pino = ps.st_ino;
            }
        }
    }
    r->next = recs;
    recs = r;
    return r;
}

/* Keeps the durable bytes of [off, off+len) that a write or truncate is about to replace. */
static void
save_range(rec_t *r, off_t off, size_t len)
{
    if (r == NULL || r->fd < 0 || off < 0 || off >= r->synced || len == 0)
        return;
    size_t n = (size_t)(r->synced - off) < len ? (size_t)(r->synced - off) : len;
    unsigned char *b = malloc(n);
    ssize_t got = pread(r->fd, b, n, off);
    if (got <= 0) {
        free(b);
        return;
    }
    if (r->nundo == r->capundo) {
        r->capundo = r->capundo ? r->capundo * 2 : 8;
        r->undo = realloc(r->undo, r->capundo * sizeof *r->undo);
    }
    r->undo[r->nundo++] = (undo_t){off, (size_t)got, b};
}

static void
mark_synced(rec_t *r)
{
    struct stat sb;
    if (r == NULL || r->fd < 0 || fstat(r->fd, &sb) < 0)
        return;
    r->synced = sb.st_size;
    for (size_t i = 0; i < r->nundo; i++)
        free(r->undo[i].bytes);
    r->nundo = 0;
}

static fdent_t *
fd_get(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return NULL;
    return __atomic_load_n(&fds[fd], __ATOMIC_ACQUIRE);
}

/* ---- the power cut and the control file ---- */

static void
power_cut(void)
{
    pthread_mutex_lock(&mu); /* never released: no watched write or sync completes after this */
    size_t files = 0, removed = 0;
    unsigned long long dropped = 0;
    for (rec_t *r = recs; r != NULL; r = r->next) {
        if (r->fd < 0)
            continue;
        if (r->created) {
            struct stat sb;
            if (stat(r->path, &sb) == 0 && sb.st_dev == r->dev && sb.st_ino == r->ino) {
                struct stat fs;
                if (fstat(r->fd, &fs) == 0)
                    dropped += (unsigned long long)fs.st_size;
                r_unlink(r->path);
                removed++;
            }
            continue;
        }
        struct stat sb;
        if (fstat(r->fd, &sb) < 0)
            continue;
        if (r->nundo == 0 && sb.st_size == r->synced)
            continue;
        for (size_t i = r->nundo; i-- > 0;) {
            (void)!r_pwrite(r->fd, r->undo[i].bytes, r->undo[i].len, r->undo[i].off);
            dropped += r->undo[i].len;
        }
        if (sb.st_size > r->synced)
            dropped += (unsigned long long)(sb.st_size - r->synced);
        (void)!r_ftruncate(r->fd, r->synced);
        files++;
    }
    say("powershim: power cut: %zu files rolled back, %zu new files removed, %llu bytes of "
        "unsynced data dropped\n",
        files, removed, dropped);
    _exit(0);
}

static unsigned long long refused;

static void *
poll_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        char buf[32] = {0};
        int fd = r_open(ctl, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf - 1);
            r_close(fd);
            if (n < 0)
                buf[0] = '\0';
        }
        if (strncmp(buf, "cut", 3) == 0) {
            power_cut();
        } else if (strncmp(buf, "enospc", 6) == 0) {
            if (atomic_load_explicit(&mode, memory_order_relaxed) != 1) {
                pthread_mutex_lock(&mu);
                partial_left = true;
                refused = 0;
                atomic_store_explicit(&mode, 1, memory_order_relaxed);
                pthread_mutex_unlock(&mu);
                say("powershim: enospc on\n");
            }
        } else if (strncmp(buf, "ok", 2) == 0) {
            if (atomic_load_explicit(&mode, memory_order_relaxed) != 0) {
                pthread_mutex_lock(&mu);
                atomic_store_explicit(&mode, 0, memory_order_relaxed);
                unsigned long long n = refused;
                pthread_mutex_unlock(&mu);
                say("powershim: enospc off (%llu writes refused)\n", n);
            }
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static pthread_once_t thread_once = PTHREAD_ONCE_INIT;

static void
start_thread(void)
{
    if (ctl == NULL)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, poll_main, NULL) == 0)
        pthread_detach(t);
}

/* ---- opening ---- */

static int
do_open(int dirfd, const char *path, int flags, mode_t md, bool at)
{
    resolve();
    char abs[PATH_MAX];
    if (!maybe_watched(dirfd, path, abs, sizeof abs))
        return at ? r_openat(dirfd, path, flags, md) : r_open(path, flags, md);
    pthread_once(&thread_once, start_thread);
    pthread_mutex_lock(&mu);
    struct stat before;
    bool existed = stat(abs, &before) == 0;
    bool writing = (flags & O_ACCMODE) != O_RDONLY;
    if ((flags & O_CREAT) && !existed && atomic_load_explicit(&mode, memory_order_relaxed) == 1) {
        refused++;
        pthread_mutex_unlock(&mu);
        errno = ENOSPC;
        return -1;
    }
    if (existed && S_ISREG(before.st_mode) && writing && (flags & O_TRUNC)) {
        rec_t *r = rec_get(before.st_dev, before.st_ino, abs, false);
        save_range(r, 0, (size_t)before.st_size);
    }
    int fd = at ? r_openat(dirfd, path, flags, md) : r_open(path, flags, md);
    int saved = errno;
    struct stat sb;
    if (fd >= 0 && fd < MAX_FDS && fstat(fd, &sb) == 0 &&
        (S_ISDIR(sb.st_mode) || (S_ISREG(sb.st_mode) && writing))) {
        fdent_t *e = calloc(1, sizeof *e); /* never freed: a lock-free reader may hold it */
        e->dev = sb.st_dev;
        e->ino = sb.st_ino;
        e->dir = S_ISDIR(sb.st_mode);
        if (!e->dir) {
            e->rec = rec_get(sb.st_dev, sb.st_ino, abs, !existed);
            e->sync = (flags & (O_SYNC | O_DSYNC)) != 0;
            e->append = (flags & O_APPEND) != 0;
        }
        fdent_t *old = __atomic_exchange_n(&fds[fd], e, __ATOMIC_ACQ_REL);
        if (old != NULL) { /* closed behind our back (fclose): keep it listed */
            old->retired = retired;
            retired = old;
        }
    }
    pthread_mutex_unlock(&mu);
    errno = saved;
    return fd;
}

static mode_t
mode_arg(int flags, va_list ap)
{
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
        return (mode_t)va_arg(ap, int);
    return 0;
}

int open64(const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int creat64(const char *path, mode_t md);

#define OPEN_BODY(dirfd, at)                                                                       \
    va_list ap;                                                                                    \
    va_start(ap, flags);                                                                           \
    mode_t md = mode_arg(flags, ap);                                                               \
    va_end(ap);                                                                                    \
    return do_open((dirfd), path, flags, md, (at))

int
open(const char *path, int flags, ...)
{
    OPEN_BODY(AT_FDCWD, false);
}

int
open64(const char *path, int flags, ...)
{
    OPEN_BODY(AT_FDCWD, false);
}

int
openat(int dirfd, const char *path, int flags, ...)
{
    OPEN_BODY(dirfd, true);
}

int
openat64(int dirfd, const char *path, int flags, ...)
{
    OPEN_BODY(dirfd, true);
}

int
__open_2(const char *path, int flags)
{
    return do_open(AT_FDCWD, path, flags, 0, false);
}

int
__open64_2(const char *path, int flags)
{
    return do_open(AT_FDCWD, path, flags, 0, false);
}

int
__openat_2(int dirfd, const char *path, int flags)
{
    return do_open(dirfd, path, flags, 0, true);
}

int
__openat64_2(int dirfd, const char *path, int flags)
{
    return do_open(dirfd, path, flags, 0, true);
}

int
creat(const char *path, mode_t md)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, md, false);
}

int
creat64(const char *path, mode_t md)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, md, false);
}

int
close(int fd)
{
    resolve();
    if (fd >= 0 && fd < MAX_FDS && __atomic_load_n(&fds[fd], __ATOMIC_ACQUIRE) != NULL) {
        pthread_mutex_lock(&mu);
        fdent_t *e = __atomic_exchange_n(&fds[fd], NULL, __ATOMIC_ACQ_REL);
        if (e != NULL) {
            e->retired = retired;
            retired = e;
        }
        pthread_mutex_unlock(&mu);
    }
    return r_close(fd);
}

/* ---- writing ---- */

/* Starts a watched write of len bytes at off (-1: the descriptor's offset): keeps the durable
 * bytes it replaces, or refuses it (ENOSPC mode: returns false with errno set; *len may shrink
 * to make the episode's first write a short one). Ctx: under mu. */
static bool
pre_write(int fd, fdent_t *e, off_t *off, size_t *len, bool may_shorten)
{
    if (atomic_load_explicit(&mode, memory_order_relaxed) == 1) {
        if (partial_left && may_shorten && *len > 1) {
            partial_left = false;
            *len /= 2;
        } else {
            refused++;
            errno = ENOSPC;
            return false;
        }
    }
    if (*off < 0) {
        if (e->append) {
            struct stat sb;
            *off = fstat(fd, &sb) == 0 ? sb.st_size : 0;
        } else {
            *off = lseek(fd, 0, SEEK_CUR);
        }
    }
    save_range(e->rec, *off, *len);
    return true;
}

static void
post_write(fdent_t *e, ssize_t w)
{
    if (w > 0 && e->sync)
        mark_synced(e->rec);
}

static size_t
iov_len(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off);
ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags);
int ftruncate64(int fd, off_t len);
int truncate64(const char *path, off_t len);

ssize_t
write(int fd, const void *buf, size_t n)
{
    resolve();
    fdent_t *e = fd_get(fd);
    if (e == NULL || e->rec == NULL)
        return r_write(fd, buf, n);
    pthread_mutex_lock(&mu);
    off_t off = -1;
    ssize_t w = -1;
    if (pre_write(fd, e, &off, &n, true)) {
        w = r_write(fd, buf, n);
        post_write(e, w);
    }
    int saved = errno;
    pthread_mutex_unlock(&mu);
    errno = saved;
    return w;
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
    resolve();
    fdent_t *e = fd_get(fd);
    if (e == NULL || e->rec == NULL)
        return r_pwrite(fd, buf, n, off);
    pthread_mutex_lock(&mu);
    ssize_t w = -1;
    if (pre_write(fd, e, &off, &n, true)) {
        w = r_pwrite(fd, buf, n, off);
        post_write(e, w);
    }
    int saved = errno;
    pthread_mutex_unlock(&mu);
    errno = saved;
    return w;
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

static ssize_t
do_writev(int fd, const struct iovec *iov, int cnt, off_t off, int flags, int how)
{
    resolve();
    fdent_t *e = fd_get(fd);
    if (e == NULL || e->rec == NULL) {
        if (how == 0)
            return r_writev(fd, iov, cnt);
        if (how == 1)
            return r_pwritev(fd, iov, cnt, off);
        return r_pwritev2(fd, iov, cnt, off, flags);
    }
    pthread_mutex_lock(&mu);
    size_t n = iov_len(iov, cnt);
    off_t o = how == 0 ? -1 : off;
    ssize_t w = -1;
    if (pre_write(fd, e, &o, &n, false)) {
        if (how == 0)
            w = r_writev(fd, iov, cnt);
        else if (how == 1)
            w = r_pwritev(fd, iov, cnt, off);
        else
            w = r_pwritev2(fd, iov, cnt, off, flags);
        post_write(e, w);
    }
    int saved = errno;
    pthread_mutex_unlock(&mu);
    errno = saved;
    return w;
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
    return do_writev(fd, iov, cnt, -1, 0, 0);
}

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return do_writev(fd, iov, cnt, off, 0, 1);
}

ssize_t
pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return do_writev(fd, iov, cnt, off, 0, 1);
}

ssize_t
pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return do_writev(fd, iov, cnt, off, flags, 2);
}

ssize_t
pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return do_writev(fd, iov, cnt, off, flags, 2);
}

static void
pre_truncate(rec_t *r, off_t len)
{
    struct stat sb;
    if (r != NULL && r->fd >= 0 && fstat(r->fd, &sb) == 0 && len < sb.st_size)
        save_range(r, len, (size_t)(sb.st_size - len));
}

int
ftruncate(int fd, off_t len)
{
    resolve();
    fdent_t *e = fd_get(fd);
    if (e == NULL || e->rec == NULL)
        return r_ftruncate(fd, len);
    pthread_mutex_lock(&mu);
    pre_truncate(e->rec, len);
    int rc = r_ftruncate(fd, len);
    int saved = errno;
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}

int
ftruncate64(int fd, off_t len)
{
    return ftruncate(fd, len);
}

int
truncate(const char *path, off_t len)
{
    resolve();
    char abs[PATH_MAX];
    if (!maybe_watched(AT_FDCWD, path, abs, sizeof abs))
        return r_truncate(path, len);
    pthread_mutex_lock(&mu);
    struct stat sb;
    if (stat(abs, &sb) == 0 && S_ISREG(sb.st_mode))
        pre_truncate(rec_get(sb.st_dev, sb.st_ino, abs, false), len);
    int rc = r_truncate(path, len);
    int saved = errno;
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}

int
truncate64(const char *path, off_t len)
{
    return truncate(path, len);
}

/* ---- syncing ---- */

static int
do_sync(int fd, bool data_only)
{
    resolve();
    fdent_t *e = fd_get(fd);
    if (e == NULL)
        return data_only ? r_fdatasync(fd) : r_fsync(fd);
    pthread_mutex_lock(&mu);
    int rc = data_only ? r_fdatasync(fd) : r_fsync(fd);
    int saved = errno;
    if (rc == 0) {
        if (e->rec != NULL)
            mark_synced(e->rec);
        if (e->dir)
            for (rec_t *r = recs; r != NULL; r = r->next)
                if (r->created && r->pdev == e->dev && r->pino == e->ino)
                    r->created = false;
    }
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}

int
fsync(int fd)
{
    return do_sync(fd, false);
}

int
fdatasync(int fd)
{
    return do_sync(fd, true);
}

static void
sync_everything(void)
{
    for (rec_t *r = recs; r != NULL; r = r->next) {
        mark_synced(r);
        r->created = false;
    }
}

int
syncfs(int fd)
{
    resolve();
    if (prefix == NULL)
        return r_syncfs(fd);
    pthread_mutex_lock(&mu);
    int rc = r_syncfs(fd);
    int saved = errno;
    if (rc == 0)
        sync_everything();
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}

void
sync(void)
{
    resolve();
    if (prefix == NULL) {
        r_sync();
        return;
    }
    pthread_mutex_lock(&mu);
    r_sync();
    sync_everything();
    pthread_mutex_unlock(&mu);
}

/* ---- names ---- */

static rec_t *
rec_at(const char *abs)
{
    struct stat sb;
    if (stat(abs, &sb) != 0)
        return NULL;
    return rec_find(sb.st_dev, sb.st_ino);
}

static int
do_rename(int ofd, const char *op, int nfd, const char *np, unsigned flags, int how)
{
    resolve();
    char oabs[PATH_MAX], nabs[PATH_MAX];
    bool w = maybe_watched(ofd, op, oabs, sizeof oabs) | maybe_watched(nfd, np, nabs, sizeof nabs);
    if (w)
        pthread_mutex_lock(&mu);
    rec_t *over = NULL;
    bool target_existed = false;
    if (w) {
        struct stat sb;
        target_existed = abs_path(nfd, np, nabs, sizeof nabs) && stat(nabs, &sb) == 0;
        over = target_existed ? rec_find(sb.st_dev, sb.st_ino) : NULL;
    }
    int rc = how == 0 ? r_rename(op, np)
             : how == 1
                 ? r_renameat(ofd, op, nfd, np)
                 : (r_renameat2 ? r_renameat2(ofd, op, nfd, np, flags) : (errno = ENOSYS, -1));
    int saved = errno;
    if (w) {
        if (rc == 0) {
            rec_t *moved = rec_at(nabs);
            if (over != NULL && over != moved)
                rec_detach(over);
            if (moved != NULL) {
                free(moved->path);
                moved->path = strdup(nabs);
                if (target_existed)
                    moved->created = false; /* optimistic: see the header */
            }
        }
        pthread_mutex_unlock(&mu);
    }
    errno = saved;
    return rc;
}

int
rename(const char *op, const char *np)
{
    return do_rename(AT_FDCWD, op, AT_FDCWD, np, 0, 0);
}

int
renameat(int ofd, const char *op, int nfd, const char *np)
{
    return do_rename(ofd, op, nfd, np, 0, 1);
}

int
renameat2(int ofd, const char *op, int nfd, const char *np, unsigned flags)
{
    return do_rename(ofd, op, nfd, np, flags, 2);
}

static int
do_unlink(int dirfd, const char *path, int flags, bool at)
{
    resolve();
    char abs[PATH_MAX];
    if ((flags & AT_REMOVEDIR) || !maybe_watched(dirfd, path, abs, sizeof abs))
        return at ? r_unlinkat(dirfd, path, flags) : r_unlink(path);
    pthread_mutex_lock(&mu);
    struct stat sb;
    rec_t *r = NULL;
    bool last = false;
    if (lstat(abs, &sb) == 0) {
        r = rec_find(sb.st_dev, sb.st_ino);
        last = sb.st_nlink <= 1;
    }
    int rc = at ? r_unlinkat(dirfd, path, flags) : r_unlink(path);
    int saved = errno;
    if (rc == 0 && r != NULL && last)
        rec_detach(r);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}

int
unlink(const char *path)
{
    return do_unlink(AT_FDCWD, path, 0, false);
}

int
unlinkat(int dirfd, const char *path, int flags)
{
    return do_unlink(dirfd, path, flags, true);
}
