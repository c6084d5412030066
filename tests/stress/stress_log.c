/* Stress program for the server log (src/util/log.c), meant for TSan: several threads log into a
 * file with a small size limit (so it rotates often) while another thread reopens the file,
 * toggles the levels and reconfigures the sink. At the end every line written must be found
 * exactly once across the live file and its backups, and no line may be torn.
 * Exit status: 0 on success, 1 on a lost, duplicated or torn line.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg/opts.h"
#include "util/log.h"

#define THREADS 4
#define LINES   3000

static char dir[64], path[128];
static atomic_bool done;

static void *
writer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < LINES; i++)
        nd_log_info("stress t%d n%05d end", id, i);
    return NULL;
}

static void *
meddler(void *arg)
{
    (void)arg;
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.log_size_limit = 4096;
    unsigned n = 0;
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        switch (n++ % 3) {
        case 0:
            nd_log_reopen();
            break;
        case 1:
            nd_log_set_levels(n & 4, n & 8);
            break;
        default: {
            char err[256];
            if (nd_opts_configure_log(&o, err, sizeof err) != 0) {
                fprintf(stderr, "configure: %s\n", err);
                exit(1);
            }
        }
        }
        usleep(200);
    }
    nd_opts_free(&o);
    return NULL;
}

int
main(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_stress_log_XXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(path, sizeof path, "%s/s.log", dir);
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.log_size_limit = 4096;
    char err[256];
    if (nd_opts_configure_log(&o, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pthread_t t[THREADS], m;
    pthread_create(&m, NULL, meddler, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store_explicit(&done, true, memory_order_relaxed);
    pthread_join(m, NULL);
    nd_log_close();
    nd_opts_free(&o);

    static unsigned char seen[THREADS][LINES];
    int bad = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[512], line[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        FILE *f = fopen(p, "r");
        while (f && fgets(line, sizeof line, f)) {
            const char *s = strstr(line, "stress t");
            int id, n;
            if (s == NULL)
                continue;
            if (sscanf(s, "stress t%d n%d", &id, &n) != 2 || id < 0 || id >= THREADS || n < 0 ||
                n >= LINES || strcmp(s + strlen(s) - 5, " end\n") != 0) {
                fprintf(stderr, "torn line: %s", line);
                bad = 1;
                continue;
            }
            if (seen[id][n]++)
                fprintf(stderr, "duplicate line: %s", line), bad = 1;
        }
        if (f)
            fclose(f);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
    for (int i = 0; i < THREADS; i++)
        for (int n = 0; n < LINES; n++)
            if (!seen[i][n]) {
                fprintf(stderr, "lost line t%d n%d\n", i, n);
                bad = 1;
            }
    printf("stress_log: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
