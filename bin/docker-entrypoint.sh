#!/bin/sh
# Container entrypoint: sizes the V8 heap from the container's memory limit
# (cgroup v2 memory.max, else cgroup v1), HEAP_PERCENT of it (default 75, the
# rest is for stacks, buffers and native memory), then execs the CLI so node
# receives SIGTERM directly and drains (see src/daemon/shutdown.ts).
set -eu

cg="${CGROUP_ROOT:-/sys/fs/cgroup}"
limit=""
if [ -r "$cg/memory.max" ]; then
  limit="$(cat "$cg/memory.max")"
elif [ -r "$cg/memory/memory.limit_in_bytes" ]; then
  limit="$(cat "$cg/memory/memory.limit_in_bytes")"
fi

case "$limit" in
  "" | max) echo "baton: no container memory limit; V8 picks its default heap" >&2 ;;
  *[!0-9]*) echo "baton: unreadable memory limit '$limit'; V8 picks its default heap" >&2 ;;
  *)
    # cgroup v1 reports "unlimited" as a huge number (about 2^63): treat >= 1 TiB as none.
    if [ "$limit" -lt 1099511627776 ]; then
      heap_mb=$(( limit / 1048576 * ${HEAP_PERCENT:-75} / 100 ))
      [ "$heap_mb" -lt 64 ] && heap_mb=64
      NODE_OPTIONS="--max-old-space-size=${heap_mb}${NODE_OPTIONS:+ $NODE_OPTIONS}"
      export NODE_OPTIONS
      echo "baton: container memory $(( limit / 1048576 )) MiB -> --max-old-space-size=${heap_mb}" >&2
    fi
    ;;
esac

exec node "$(dirname "$0")/baton.js" "$@"
