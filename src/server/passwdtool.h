/* `natsd --passwd` (also `natsd passwd`): reads a password and prints its bcrypt hash, as
 * `nats server passwd` does: cost 11, the "$2a$" prefix nats-server's own tools write (libxcrypt
 * also makes "$2b$"; nats-server accepts both). The hash goes into a config file:
 * authorization { user: app, password: "<hash>" }.
 *
 * From a terminal the password is asked for twice with echo off (the prompts go to stderr);
 * otherwise it is the first line of standard input (without its line end), so scripts can pipe
 * it in. `--cost N` (4..31) changes the cost. The password is wiped from memory after use.
 * Ctx: the main thread, before anything else runs.
 */
#ifndef ND_PASSWDTOOL_H
#define ND_PASSWDTOOL_H

#include <stdbool.h>

/* Returns: true when argv asks for the tool (argv[1] is "--passwd", "-passwd" or "passwd"). */
bool nd_passwdtool_wanted(int argc, char **argv);

/* Runs the tool. Returns: the exit status (0: the hash is on stdout; 1: with a message on
 * stderr). */
int nd_passwdtool_run(int argc, char **argv);

#endif
