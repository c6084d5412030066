#!/usr/bin/env bash
# Sets up, builds and runs natsd's tests.
#   scripts/test.sh                       every test in the normal build (the README command)
#   scripts/test.sh --sanitize address    ASan+UBSan build; unit and integration tests
#   scripts/test.sh --sanitize thread     TSan build; stress programs
#   scripts/test.sh --fuzz [SECONDS]      clang libFuzzer build; each fuzz driver for SECONDS (60)
# Extra arguments after -- go to ctest (e.g. -- -R mbox).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
labels=""
fuzz=""
while [ $# -gt 0 ]; do
    case "$1" in
        --sanitize) sanitize="$2"; shift 2 ;;
        --fuzz) fuzz="${2:-60}"; shift; [ $# -gt 0 ] && shift ;;
        --) shift; break ;;
        *) echo "usage: $0 [--sanitize address|thread] [-- ctest args]" >&2; exit 2 ;;
    esac
done

scripts/setup.sh --tests ${fuzz:+--fuzz}

if [ -n "$fuzz" ]; then
    # ASan+UBSan inside the fuzzer; the corpus it grows stays in the build tree.
    CC=clang cmake -S . -B build-fuzz -DND_WERROR=ON -DND_FUZZ=ON -DND_TESTS=OFF >/dev/null
    drivers=$(cd tests/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
    for drv in $drivers; do
        cmake --build build-fuzz -j"$(nproc)" --target "fuzz_$drv"
    done
    for drv in $drivers; do
        echo "fuzz_$drv: $fuzz s"
        work="build-fuzz/tests/fuzz/corpus_$drv"
        mkdir -p "$work"
        "build-fuzz/tests/fuzz/fuzz_$drv" -max_total_time="$fuzz" -max_len=4096 \
            -dict="tests/fuzz/$drv.dict" "$work" "tests/fuzz/corpus/$drv" 2>&1 | tail -n 3
    done
    exit 0
fi

case "$sanitize" in
    "")      dir=build;       labels="" ;;
    address) dir=build-asan;  labels="unit|integ" ;;
    thread)  dir=build-tsan;  labels="stress" ;;
    *) echo "unknown sanitizer $sanitize" >&2; exit 2 ;;
esac

cmake -S . -B "$dir" -DND_WERROR=ON -DND_TESTS=ON -DND_SANITIZE="$sanitize" >/dev/null
cmake --build "$dir" -j"$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
args=(--test-dir "$dir" --output-on-failure -j"$(nproc)")
if [ -n "$labels" ]; then
    args+=(-L "$labels")
fi
if [ -z "$sanitize" ]; then
    ctest "${args[@]}" "$@"
    exit 0
fi
# Sanitizer runs: a report must fail the run even where the test harness does not notice it
# (Criterion ignores what LeakSanitizer prints when a test's process exits; a server child's
# report may come after its test passed). So every test's output is kept and searched.
log="$dir/sanitizer-run.log"
rc=0
ctest "${args[@]}" -V "$@" >"$log" 2>&1 || rc=$?
grep -E '^[0-9]+/[0-9]+ Test|tests passed|Total Test time' "$log" || true
if grep -nE 'ERROR: (Leak|Address)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$log" \
        | head -n 20; then
    echo "sanitizer reports found; full log: $log" >&2
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    grep -nE 'FAIL|Assertion|error' "$log" | head -n 40
    echo "tests failed; full log: $log" >&2
fi
exit "$rc"
