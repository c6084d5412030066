/* natsd: argv -> natsd_start, then handle signals until one stops the server. Nothing else
 * lives here. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "mqtt/mqtt.h"
#include "natsd/natsd.h"
#include "net/gateway.h"
#include "util/log.h"
#include "server/confwatch.h"
#include "server/passwdtool.h"
#include "server/pidfile.h"
#include "server/sigctl.h"

/* Go's names for the signals, which nats-server logs ("Trapped \"hangup\" signal"). */
static const char *
sig_name(int sig)
{
    switch (sig) {
    case SIGINT:
        return "interrupt";
    case SIGTERM:
        return "terminated";
    case SIGHUP:
        return "hangup";
    case SIGQUIT:
        return "quit";
    case SIGUSR1:
        return "user defined signal 1";
    case SIGUSR2:
        return "user defined signal 2";
    default:
        return "unknown";
    }
}

/* Handles the signals of nats-server's signal.go until one stops the server: SIGUSR1 reopens
 * the log, SIGHUP reloads the config, SIGUSR2 enters lame duck mode (which ends the loop once
 * every client is closed), SIGINT and SIGTERM stop gracefully (SIGTERM is ignored in lame duck
 * mode, as nats-server does), SIGQUIT stops at once. Returns: the exit status nats-server gives
 * (0 after SIGINT or the end of lame duck mode, 1 after SIGTERM), or -1 for SIGQUIT. */
static int
serve(natsd_t *s, const sigset_t *set)
{
    bool ldm = false;
    for (;;) {
        int sig = 0;
        if (ldm) {
            /* Lame duck mode ends by itself: look for signals between short waits on it. */
            if (natsd_lame_duck_wait(s, 100))
                return 0;
            struct timespec none = {0, 0};
            sig = sigtimedwait(set, NULL, &none);
            if (sig < 0)
                continue;
        } else if (sigwait(set, &sig) != 0) {
            continue;
        }
        nd_log_debug("Trapped \"%s\" signal", sig_name(sig));
        switch (sig) {
        case SIGUSR1:
            nd_log_reopen();
            break;
        case SIGHUP:
            (void)natsd_reload(s, NULL); /* logs its outcome */
            break;
        case SIGUSR2:
            ldm |= natsd_lame_duck(s);
            break;
        case SIGTERM:
            if (!ldm)
                return 1;
            break;
        case SIGQUIT:
            return -1;
        default:
            return 0;
        }
    }
}

int
main(int argc, char **argv)
{
    if (nd_passwdtool_wanted(argc, argv))
        return nd_passwdtool_run(argc, argv); /* natsd --passwd: a bcrypt hash, nothing else */
    nd_opts_t opts;
    nd_opts_defaults(&opts);
    int rc = nd_opts_parse_args(&opts, argc, argv);
    if (rc == ND_OPTS_SIGNAL)
        rc = nd_sigctl_cli(opts.signal);
    if (rc != 0) {
        nd_opts_free(&opts);
        return rc == 2 ? 0 : 1;
    }
    if (opts.ws != NULL && opts.ws->port != 0 && opts.ws->tls == NULL && !opts.ws->no_tls) {
        /* nats-server's validateOptions, before anything is logged. */
        fprintf(stderr, "nats-server: websocket requires TLS configuration\n");
        nd_opts_free(&opts);
        return 1;
    }
    char err[1024];
    if (nd_mqtt_check(&opts, err, sizeof err) != 0 ||
        nd_gateways_check(&opts, err, sizeof err) != 0) {
        fprintf(stderr, "nats-server: %s\n", err); /* validateOptions, as above */
        nd_opts_free(&opts);
        return 1;
    }
    if (nd_opts_configure_log(&opts, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        nd_opts_free(&opts);
        return 1;
    }
    nd_opts_log_config_warnings(&opts);

    /* One descriptor per client: raise the soft limit to the hard one, as Go (and so
     * nats-server) does at start-up. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    /* Block the signals we handle before any thread starts so that only sigwait() sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGUSR1);
    sigaddset(&stop, SIGUSR2);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Process files (src/server/pidfile.h): the pid file before the listener opens, the ports file
     * once it is bound, as nats-server's Start does. */
    char *pid_file = opts.pid_file && *opts.pid_file ? nd_xstrdup(opts.pid_file) : NULL;
    if (pid_file != NULL && nd_pidfile_write(pid_file, err, sizeof err) != 0) {
        nd_log(ND_LOG_FATAL, "%s", err);
        free(pid_file);
        nd_opts_free(&opts);
        return 1;
    }
    natsd_t *s = natsd_start(&opts);
    char *ports_dir =
        s && opts.ports_file_dir && *opts.ports_file_dir ? nd_xstrdup(opts.ports_file_dir) : NULL;
    if (ports_dir != NULL) {
        const char *mon_host = opts.http_host && *opts.http_host ? opts.http_host : opts.host;
        nd_ports_t ports = {.nats = {"nats", opts.host, natsd_port(s)},
                            .monitoring = {"http", mon_host, natsd_http_port(s)}};
        if (nd_portsfile_write(ports_dir, argv[0], &ports, err, sizeof err) != 0)
            nd_log_error("%s", err);
    }
    /* A Kubernetes ConfigMap volume: its updates reload natsd (server/confwatch.h). */
    nd_confwatch_t *cw = s != NULL ? nd_confwatch_start(opts.config_file) : NULL;
    nd_opts_free(&opts);
    if (s == NULL) {
        if (pid_file != NULL)
            nd_pidfile_remove(pid_file);
        free(pid_file);
        return 1;
    }
    natsd_set_args(s, argc, argv); /* a reload re-applies the flags over the file */
    int status = serve(s, &stop);
    if (status < 0) {
        /* SIGQUIT: no graceful close. The exit status is the one Go's runtime gives nats-server. */
        nd_log_info("Server Exiting..");
        _exit(2);
    }
    nd_log_info("Initiating Shutdown...");
    nd_confwatch_stop(cw);
    natsd_stop(s);
    if (ports_dir != NULL && nd_portsfile_remove(ports_dir, argv[0], err, sizeof err) != 0)
        nd_log_error("%s", err);
    if (pid_file != NULL)
        nd_pidfile_remove(pid_file);
    free(pid_file);
    free(ports_dir);
    nd_log_info("Server Exiting..");
    nd_log_close();
    return status;
}
