/* natsd: argv -> natsd_start, then wait for a stop signal. Nothing else lives here. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "natsd/natsd.h"
#include "net/log.h"

int
main(int argc, char **argv)
{
    nd_opts_t opts;
    nd_opts_defaults(&opts);
    int rc = nd_opts_parse_args(&opts, argc, argv);
    if (rc != 0) {
        nd_opts_free(&opts);
        return rc == 2 ? 0 : 1;
    }
    nd_log_setup(opts.debug, opts.trace, opts.logtime, opts.log_file);
    nd_opts_log_config_warnings(&opts);

    /* One descriptor per client: raise the soft limit to the hard one, as Go (and so
     * nats-server) does at start-up. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    /* Block the stop signals before any thread starts so that only sigwait() sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    natsd_t *s = natsd_start(&opts);
    nd_opts_free(&opts);
    if (s == NULL)
        return 1;
    int sig = 0;
    sigwait(&stop, &sig);
    nd_log_info("Trapped \"%s\" signal", sig == SIGINT ? "interrupt" : "terminated");
    nd_log_info("Initiating Shutdown...");
    natsd_stop(s);
    nd_log_info("Server Exiting..");
    return 0;
}
