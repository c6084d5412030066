#!/usr/bin/env bash
# Runs natsd's JavaScript integration tests (node's built-in test runner and
# the official NATS client) against the server named by NATSD_TEST_SERVER, or
# by the first argument. ctest calls it as the test integ.nodejs (test/*.test.js,
# the core server) and integ.nodejs.jetstream[.reference] (test/jetstream).
#   tests/integ/nodejs/run.sh [path/to/natsd [test directory]]
# The dependencies are installed from the committed lockfile with `npm ci`
# whenever node_modules is missing or older than package-lock.json.
set -euo pipefail

server="${1:-${NATSD_TEST_SERVER:-}}"
if [ -z "$server" ]; then
    echo "usage: $0 path/to/natsd (or set NATSD_TEST_SERVER)" >&2
    exit 2
fi
if [ ! -x "$server" ]; then
    echo "$0: server binary $server is not executable" >&2
    exit 2
fi
# Made absolute before changing directory so a relative path still works.
NATSD_TEST_SERVER="$(realpath "$server")"
export NATSD_TEST_SERVER

cd "$(dirname "$0")"

# npm writes node_modules/.package-lock.json on every install, so its age is
# the age of the installed tree. The lock keeps two build directories that run
# this test at the same time from installing over each other.
exec 9<package-lock.json
flock 9
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
fi
flock -u 9
exec 9<&-

testdir="${2:-test}"
exec node --test "$testdir"/*.test.js
