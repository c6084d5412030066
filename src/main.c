/* natsd: argv -> natsd_start, then wait for a stop signal. Nothing else lives here. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "natsd/natsd.h"

static void
usage(FILE *out)
{
    fprintf(out, "Usage: natsd [options]\n\n"
                 "  -w, --worker_threads <n>  Worker threads (default: online CPUs)\n"
                 "  -v, --version             Show version\n"
                 "  -h, --help                Show this message\n");
}

int
main(int argc, char **argv)
{
    natsd_opts_t opts = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-w") || !strcmp(a, "--worker_threads")) && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end != '\0' || n < 0 || n > 1024) {
                fprintf(stderr, "natsd: invalid worker count %s\n", argv[i]);
                return 1;
            }
            opts.workers = (unsigned)n;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
            printf("natsd: v%s\n", natsd_version());
            return 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "natsd: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
    }

    /* Block the stop signals before any thread starts so that only sigwait() sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    natsd_t *s = natsd_start(&opts);
    if (s == NULL)
        return 1;
    fprintf(stderr, "natsd v%s started with %u workers\n", natsd_version(), natsd_workers(s));
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "natsd: %s, stopping\n", strsignal(sig));
    natsd_stop(s);
    return 0;
}
