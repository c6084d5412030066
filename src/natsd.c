/* natsd embedding API; see include/natsd/natsd.h. */
#include "natsd/natsd.h"

#include "natsd/alloc.h"
#include "natsd/pool.h"

struct natsd {
    nd_pool_t *pool;
};

natsd_t *
natsd_start(const natsd_opts_t *opts)
{
    natsd_t *s = nd_new(natsd_t);
    s->pool = nd_pool_new(opts ? opts->workers : 0);
    nd_pool_start(s->pool);
    return s;
}

void
natsd_stop(natsd_t *s)
{
    if (s == NULL)
        return;
    nd_pool_free(s->pool);
    nd_free(s);
}

unsigned
natsd_workers(const natsd_t *s)
{
    return nd_pool_workers(s->pool);
}

const char *
natsd_version(void)
{
    return NATSD_VERSION;
}
