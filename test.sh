#!/usr/bin/env bash
# Sets up everything a test needs on a fresh Debian 12 machine, builds, and runs every test:
# unit, integration, privileged (root), end-to-end with the real E2B SDK, one quick pass of each
# benchmark, a short fuzzing run, and the format check. Idempotent. Ends with the leak census
# (scripts/census): anything the tests left on the host that was not there before fails the run.
set -euo pipefail
cd "$(dirname "$0")"

scripts/install-deps
scripts/setup-test-env
scripts/build release
scripts/format-check

census=$(mktemp)
trap 'rm -f "$census"' EXIT
scripts/census >"$census"

jobs=$(nproc)
ctest --preset release -j "$jobs" --timeout 900

# libFuzzer targets need clang; a short run per target keeps them alive.
scripts/build fuzz --target fuzzers
ctest --preset fuzz -j "$jobs"

scripts/census --compare "$census"
echo "test.sh: all tests passed"
