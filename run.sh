#!/usr/bin/env bash
# Sets up and starts Warren on a fresh Debian 12 machine: installs what is missing, builds,
# prepares the base image and runs `warren server` with the embedded store. Idempotent.
# The first run also creates the admin API key of the E2B-compatible API and prints it once,
# with the exports the E2B SDK needs (the key is kept in ~/.warren/config and
# <data dir>/admin-key, mode 0600).
set -euo pipefail
cd "$(dirname "$0")"

scripts/install-deps
scripts/setup-test-env
scripts/build release
warren=build/release/apps/warren/warren

# What the server will use, so the printed exports match (arguments to run.sh go to the server).
data_dir=/var/lib/warren address=127.0.0.1 port=7780 domain=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  next=${args[i + 1]:-}
  case "${args[i]}" in
    --data-dir) data_dir=$next ;;
    --data-dir=*) data_dir=${args[i]#*=} ;;
    --address) address=$next ;;
    --address=*) address=${args[i]#*=} ;;
    --port) port=$next ;;
    --port=*) port=${args[i]#*=} ;;
    --domain) domain=$next ;;
    --domain=*) domain=${args[i]#*=} ;;
  esac
done

# The gateway listens on the server's port + 1 (an ephemeral one, in <data dir>/gateway.port,
# when the server's is ephemeral).
"$warren" apikey bootstrap --data-dir "$data_dir" --api-url "http://$address:$port" \
  --sandbox-url "http://$address:$((port == 0 ? 0 : port + 1))" --domain "$domain"
exec "$warren" server "$@"
