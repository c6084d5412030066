#!/usr/bin/env bash
# Sets up, builds (release) and runs natsd in the foreground; arguments go to natsd.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DND_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target natsd
exec build-release/natsd "$@"
