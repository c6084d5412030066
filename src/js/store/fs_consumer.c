/* File store consumer states: obs/<name>.cs = magic[8] version u32 length u32, the
 * nd_cstate_encode bytes, XXH64 of everything before. A state is replaced atomically (temp file,
 * rename); with sync_always the temp file and the directory are fsynced before the call
 * returns, otherwise at the next periodic sync. Handles live until the store closes, as in the
 * memstore: consumer_close only makes the state durable. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/cstate.h"
#include "js/store/filestore.h"

#define CON_HDR 16u

/* A consumer name becomes a file name: refuse anything that could leave obs/. */
static bool
name_ok(const char *name)
{
    if (!name || !*name)
        return false;
    size_t n = strlen(name);
    if (n > 200 || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (name[i] == '/' || name[i] == '\\' || (unsigned char)name[i] < 0x20)
            return false;
    return true;
}

static void
file_name(const char *name, char out[256])
{
    snprintf(out, 256, "%s%s", name, ND_FS_OBS_SUFFIX);
}

static nd_cstore_t *
find(nd_filestore_t *fs, const char *name)
{
    for (nd_cstore_t *c = fs->consumers; c; c = c->next)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

static nd_cstore_t *
add(nd_filestore_t *fs, const char *name)
{
    nd_cstore_t *c = nd_new(nd_cstore_t);
    c->name = nd_xstrdup(name);
    c->fs = fs;
    c->next = fs->consumers;
    fs->consumers = c;
    fs->nconsumers++;
    return c;
}

/* Reads obs/<name>.cs into c->enc. Returns: OK, NOT_FOUND, CORRUPT, VERSION or IO. */
static nd_err_t
read_state(nd_filestore_t *fs, nd_cstore_t *c)
{
    char fn[256];
    file_name(c->name, fn);
    uint8_t *p;
    size_t n;
    if (nd_fs_read_file(fs->obsfd, fn, &p, &n) < 0)
        return errno == ENOENT ? ND_ERR_STORE_NOT_FOUND : nd_store_io_error(&fs->base, errno);
    nd_err_t e = ND_ERR_STORE_CORRUPT;
    uint32_t ver, len;
    uint64_t sum;
    if (n >= CON_HDR + 8 && !memcmp(p, ND_FS_CON_MAGIC, 8)) {
        memcpy(&ver, p + 8, 4);
        memcpy(&len, p + 12, 4);
        memcpy(&sum, p + n - 8, 8);
        if (sum == XXH64(p, n - 8, 0) && (size_t)len + CON_HDR + 8 == n) {
            if (ver > ND_FS_VERSION) {
                e = ND_ERR_STORE_VERSION;
            } else {
                free(c->enc);
                c->enc = nd_xmalloc(len);
                memcpy(c->enc, p + CON_HDR, len);
                c->enc_len = len;
                e = ND_OK;
            }
        }
    }
    free(p);
    return e;
}

nd_err_t
nd_fs_consumers_load(nd_filestore_t *fs)
{
    int fd = dup(fs->obsfd);
    if (fd < 0)
        return nd_store_io_error(&fs->base, errno);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return nd_store_io_error(&fs->base, errno);
    }
    /* The dup shares the directory offset with obsfd: start from the beginning. */
    rewinddir(d);
    size_t sl = strlen(ND_FS_OBS_SUFFIX);
    struct dirent *de;
    nd_err_t e = ND_OK;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= sl || strcmp(de->d_name + n - sl, ND_FS_OBS_SUFFIX) != 0)
            continue;
        char name[256];
        memcpy(name, de->d_name, n - sl);
        name[n - sl] = 0;
        if (!name_ok(name) || find(fs, name))
            continue;
        nd_cstore_t *c = add(fs, name);
        nd_err_t re = read_state(fs, c);
        if (re == ND_ERR_STORE_VERSION) {
            e = re;
            break;
        }
        /* A damaged consumer file leaves the consumer with no state (it starts over, as a
         * new consumer would); the stream's messages are unaffected. */
    }
    closedir(d);
    return e;
}

nd_err_t
nd_fs_consumer_open(nd_store_t *st, const char *name, nd_cstore_t **out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    *out = NULL;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (!name_ok(name))
        return ND_ERR_STORE_BAD_ARG;
    nd_cstore_t *c = find(fs, name);
    if (!c)
        c = add(fs, name);
    *out = c;
    return ND_OK;
}

static nd_err_t
write_state(nd_cstore_t *c)
{
    nd_filestore_t *fs = c->fs;
    if (fs->failed)
        return nd_store_io_error(&fs->base, fs->failed_errno);
    size_t n = CON_HDR + c->enc_len + 8;
    uint8_t *p = nd_xmalloc(n);
    memcpy(p, ND_FS_CON_MAGIC, 8);
    uint32_t ver = ND_FS_VERSION, len = (uint32_t)c->enc_len;
    memcpy(p + 8, &ver, 4);
    memcpy(p + 12, &len, 4);
    if (c->enc_len)
        memcpy(p + CON_HDR, c->enc, c->enc_len);
    uint64_t sum = XXH64(p, n - 8, 0);
    memcpy(p + n - 8, &sum, 8);
    char fn[256];
    file_name(c->name, fn);
    bool sync = fs->cfg.sync_always || fs->cfg.sync_consumers;
    int rc = nd_fs_write_file_atomic(fs->obsfd, fn, p, n, sync);
    int err = errno;
    free(p);
    if (rc < 0) {
        /* A failed fsync is final for the whole store, as for the blocks. */
        if (sync && err != ENOSPC) {
            fs->failed = true;
            fs->failed_errno = err;
        }
        return nd_store_io_error(&fs->base, err);
    }
    c->unsynced = !sync;
    return ND_OK;
}

nd_err_t
nd_fs_consumer_update(nd_cstore_t *c, const nd_consumer_state_t *state)
{
    if (c->fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (c->fs->failed)
        return nd_store_io_error(&c->fs->base, c->fs->failed_errno);
    uint8_t *enc;
    size_t len;
    nd_cstate_encode(state, &enc, &len);
    uint8_t *old = c->enc;
    size_t old_len = c->enc_len;
    c->enc = enc;
    c->enc_len = len;
    nd_err_t e = write_state(c);
    if (e != ND_OK) {
        c->enc = old;
        c->enc_len = old_len;
        free(enc);
        return e;
    }
    free(old);
    if (c->unsynced && !c->fs->next_sync)
        c->fs->next_sync = nd_fs_now(c->fs) + c->fs->sync_ns;
    return ND_OK;
}

nd_err_t
nd_fs_consumer_state(nd_cstore_t *c, nd_consumer_state_t *out)
{
    if (!c->enc) {
        memset(out, 0, sizeof(*out));
        return ND_OK;
    }
    return nd_cstate_decode(c->enc, c->enc_len, out);
}

static int
sync_one(nd_cstore_t *c)
{
    char fn[256];
    file_name(c->name, fn);
    int fd = openat(c->fs->obsfd, fn, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = nd_fs_datasync(fd);
    int e = errno;
    close(fd);
    errno = e;
    if (rc == 0)
        c->unsynced = false;
    return rc;
}

int
nd_fs_consumers_sync(nd_filestore_t *fs)
{
    bool any = false;
    for (nd_cstore_t *c = fs->consumers; c; c = c->next) {
        if (!c->unsynced)
            continue;
        if (sync_one(c) < 0)
            return -1;
        any = true;
    }
    /* The renames are durable once obs/ is. */
    if (any && nd_fs_datasync(fs->obsfd) < 0)
        return -1;
    return 0;
}

void
nd_fs_consumer_close(nd_cstore_t *c)
{
    if (c && c->unsynced && !c->fs->failed && sync_one(c) == 0)
        (void)nd_fs_datasync(c->fs->obsfd);
}

nd_err_t
nd_fs_consumer_delete(nd_cstore_t *c)
{
    nd_filestore_t *fs = c->fs;
    char fn[256];
    file_name(c->name, fn);
    if (unlinkat(fs->obsfd, fn, 0) < 0 && errno != ENOENT)
        return nd_store_io_error(&fs->base, errno);
    if (fs->cfg.sync_always && nd_fs_datasync(fs->obsfd) < 0)
        return nd_store_io_error(&fs->base, errno);
    for (nd_cstore_t **pp = &fs->consumers; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    fs->nconsumers--;
    free(c->name);
    free(c->enc);
    free(c);
    return ND_OK;
}

nd_err_t
nd_fs_consumer_list(nd_store_t *st, char ***names, size_t *n)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    *names = NULL;
    *n = 0;
    if (!fs->nconsumers)
        return ND_OK;
    char **v = nd_xcalloc(fs->nconsumers, sizeof(*v));
    size_t k = 0;
    for (nd_cstore_t *c = fs->consumers; c; c = c->next)
        v[k++] = nd_xstrdup(c->name);
    *names = v;
    *n = k;
    return ND_OK;
}
