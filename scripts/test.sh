#!/usr/bin/env bash
# Sets up, builds and runs natsd's tests.
#   scripts/test.sh                       every test in the normal build (the README command)
#   scripts/test.sh --sanitize address    ASan+UBSan build; unit and integration tests
#   scripts/test.sh --sanitize thread     TSan build; stress programs
# Extra arguments after -- go to ctest (e.g. -- -R mbox).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
labels=""
while [ $# -gt 0 ]; do
    case "$1" in
        --sanitize) sanitize="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "usage: $0 [--sanitize address|thread] [-- ctest args]" >&2; exit 2 ;;
    esac
done

scripts/setup.sh --tests

case "$sanitize" in
    "")      dir=build;       labels="" ;;
    address) dir=build-asan;  labels="unit|integ" ;;
    thread)  dir=build-tsan;  labels="stress" ;;
    *) echo "unknown sanitizer $sanitize" >&2; exit 2 ;;
esac

cmake -S . -B "$dir" -DND_WERROR=ON -DND_SANITIZE="$sanitize" >/dev/null
cmake --build "$dir" -j"$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
args=(--test-dir "$dir" --output-on-failure -j"$(nproc)")
if [ -n "$labels" ]; then
    args+=(-L "$labels")
fi
ctest "${args[@]}" "$@"
