#!/usr/bin/env bash
# Sets up and starts Warren on a fresh Debian 12 machine: installs what is missing, builds,
# prepares the base image and runs `warren server` with the embedded store. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"

scripts/install-deps
scripts/setup-test-env
scripts/build release
exec build/release/apps/warren/warren server "$@"
