#!/usr/bin/env bash
# scripts/census --compare blames what appeared after the first census (a warren cgroup, a mount
# under /tmp, a warren process) and nothing that was there before. Other tests run beside this one,
# so it asserts on its own entries only; what another checkout's tests provably own is not
# blamed either. Needs root; exit 77 = skipped.
#   census_test.sh CENSUS_SCRIPT
set -euo pipefail
census=$1
if [ "$(id -u)" != 0 ]; then
  echo "census_test: needs root; skipped"
  exit 77
fi
tag="censustest-$$"
# A v1 hierarchy on a hybrid host, the unified one on a v2-only host.
cg=/sys/fs/cgroup/pids
[ -d "$cg" ] || cg=/sys/fs/cgroup
hierarchy=${cg##*/}
work=$(mktemp -d "/tmp/warren-$tag-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  umount "$work/mnt" 2>/dev/null || true
  rmdir "$cg/warren-$tag-old" "$cg/warren-$tag-new" 2>/dev/null || true
  [ -n "${foreign:-}" ] && rmdir "$cg/warren-foreigntest-$foreign-0" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "census_test: $*" >&2; exit 1; }

# There before the first census: never blamed.
mkdir "$cg/warren-$tag-old"
(exec -a "warren-$tag-old" sleep 300) &
pids+=($!)
"$census" >"$work/before"
grep -q "$hierarchy:warren-$tag-old" "$work/before" || fail "the census misses a warren cgroup"
grep -q "warren-$tag-old" <(grep '^process' "$work/before") || fail "the census misses a warren process"

# Made after it by another checkout's test (a warren binary outside this tree, and a cgroup
# named after its pid): not blamed.
mkdir "$work/elsewhere"
cp "$(command -v sleep)" "$work/elsewhere/warren-foreign"
"$work/elsewhere/warren-foreign" 300 &
foreign=$!
pids+=($foreign)
mkdir "$cg/warren-foreigntest-$foreign-0"

# Made after it: each one blamed.
mkdir "$cg/warren-$tag-new"
mkdir "$work/mnt"
mount -t tmpfs "warren-$tag" "$work/mnt"
(exec -a "warren-$tag-new" sleep 300) &
new=$!
pids+=($new)
status=0
"$census" --compare "$work/before" --settle 0 >/dev/null 2>"$work/report" || status=$?
[ "$status" = 1 ] || fail "--compare exited $status with leaks, not 1"
for want in "cgroup	$hierarchy:warren-$tag-new" "mount	$work/mnt tmpfs" "warren-$tag-new 300"; do
  grep -qF "$want" "$work/report" || fail "not reported: $want; report: $(cat "$work/report")"
done
if grep -q "warren-$tag-old" "$work/report"; then
  fail "blamed what was there before: $(grep "warren-$tag-old" "$work/report")"
fi
if grep -q "foreign" "$work/report"; then
  fail "blamed another checkout's test: $(grep "foreign" "$work/report")"
fi
rmdir "$cg/warren-foreigntest-$foreign-0"

# Gone again: none of it reported (anything else another test has under way may be).
kill "$new"
wait "$new" 2>/dev/null || true
umount "$work/mnt"
rmdir "$cg/warren-$tag-new"
"$census" --compare "$work/before" --settle 0 >/dev/null 2>"$work/report" || true
if grep -q "$tag" "$work/report"; then
  fail "still reported after removal: $(grep "$tag" "$work/report")"
fi
echo "census_test: leaks named, earlier entries not blamed"
