#!/usr/bin/env bash
# cold_create stopped by Ctrl-C while user-namespaced sandboxes run leaves nothing behind: no
# idmapped view of its temporary layer, no cgroup (so no sandbox process either), no temporary
# directory (issue 19). Only what this run made is looked at, so tests running beside it are not
# blamed. Needs root; exit 77 = skipped.
#   interrupt_test.sh COLD_CREATE_BINARY
set -euo pipefail
bin=$1
if [ "$(id -u)" != 0 ]; then
  echo "interrupt_test: needs root; skipped"
  exit 77
fi
log=$(mktemp)
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -f "$log"' EXIT
# Long enough that the signal always lands in the middle of plain and user-namespaced cycles.
# With job control on, the background bench does not start with SIGINT ignored (as a shell's
# background jobs otherwise do), so SIGINT reaches it as Ctrl-C would.
set -m
"$bin" --n 100000 --userns-n 100000 --runc-n 0 --idle 0 --warmup 1 >/dev/null 2>"$log" &
pid=$!
set +m
for _ in $(seq 600); do
  grep -q 'sandbox created id=uns-3 ' "$log" && break
  sleep 0.05
done
if ! grep -q 'sandbox created id=uns-3 ' "$log"; then
  kill -KILL "$pid" 2>/dev/null || true
  echo "interrupt_test: cold_create never got going:" >&2
  tail -20 "$log" >&2
  exit 1
fi
work=$(sed -n 's/^cold_create: work dir \([^,]*\),.*/\1/p' "$log")
[ -n "$work" ] || { echo "interrupt_test: cold_create did not name its work dir" >&2; exit 1; }
kill -INT "$pid"
status=0
for _ in $(seq 300); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  echo "interrupt_test: cold_create still runs 30 s after SIGINT; killing it" >&2
  kill -KILL "$pid"
fi
wait "$pid" || status=$?
bench_pid=$pid
pid=  # reaped: nothing for the exit trap to kill
left=$(
  awk -v w="$work/" 'index($5, w) == 1 {print "mount " $5}' /proc/self/mountinfo
  find /sys/fs/cgroup -noleaf -mindepth 2 -maxdepth 2 -type d -name "warren-bench-$bench_pid" -printf 'cgroup %p\n'
  [ -e "$work" ] && echo "directory $work"
) || true
if [ "$status" != 130 ] || [ -n "$left" ]; then
  echo "interrupt_test: cold_create exited $status after SIGINT (want 130) and left:" >&2
  echo "${left:-nothing}" >&2
  tail -5 "$log" >&2
  exit 1
fi
echo "interrupt_test: stopped cleanly, nothing left of $work or cgroup warren-bench-$bench_pid"
