#!/usr/bin/env bash
# The deploy/ha example on one machine, for trying it and for the chaos tier
# (npm run test:chaos -- --scenario patroni): one etcd member, HA_NODES Patroni nodes
# (synchronous_mode) and haproxy routing HA_PORT to the current primary. Every process is
# started here, in DIR, on its own ports; nothing is installed as a service and the machine's
# own PostgreSQL is never touched. Run as root (processes run as the postgres user) or as postgres.
#
#   deploy/ha/run-local.sh up DIR        start etcd, the nodes and haproxy; wait for a primary
#                                        with a synchronous standby behind haproxy (refuses ports
#                                        in use; a failed start stops what it started)
#   deploy/ha/run-local.sh list DIR      patronictl list
#   deploy/ha/run-local.sh leader DIR    the leader node's name
#   deploy/ha/run-local.sh crash DIR     kill -9 the leader node: its Patroni and every process of
#                                        its PostgreSQL (a machine lost; the standby takes over
#                                        once the leader key expires, ttl seconds)
#   deploy/ha/run-local.sh switchover DIR   switch over to the synchronous standby (Patroni's REST API,
#                                        as `patronictl switchover --force` does)
#   deploy/ha/run-local.sh daemon DIR    `baton migrate`, then Baton's daemon in the foreground (needs
#                                        `npm run build`), DATABASE_URL on haproxy
#   deploy/ha/run-local.sh down DIR      stop everything started in DIR (by its recorded ids); fails,
#                                        naming them, if a process started from DIR is left
#
# Ports (environment): HA_PORT (haproxy, 5000), HA_PG_PORT (first node's PostgreSQL, 5441; the
# next nodes count up), HA_REST_PORT (first node's REST API, 8018), HA_ETCD_PORT (2391; peer
# port +1). Timing: HA_TTL (10), HA_LOOP_WAIT (1), HA_RETRY_TIMEOUT (4), HA_CHECK_INTER (500ms),
# HA_CHECK_FALL (2). HA_NODES (2). HA_SYNCHRONOUS_MODE (true). HA_CRASH_LAG_MS (0: crash stops the
# primary's WAL senders that long first).
# PG_BIN (pg_config --bindir, else /usr/lib/postgresql/15/bin).
set -euo pipefail

cmd="${1:?usage: run-local.sh up|list|leader|crash|switchover|daemon|down DIR}"
DIR="$(realpath -m "${2:?DIR}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HA_PORT="${HA_PORT:-5000}"
HA_PG_PORT="${HA_PG_PORT:-5441}"
HA_REST_PORT="${HA_REST_PORT:-8018}"
HA_ETCD_PORT="${HA_ETCD_PORT:-2391}"
HA_NODES="${HA_NODES:-2}"
HA_TTL="${HA_TTL:-10}"
HA_LOOP_WAIT="${HA_LOOP_WAIT:-1}"
HA_RETRY_TIMEOUT="${HA_RETRY_TIMEOUT:-4}"
HA_CHECK_INTER="${HA_CHECK_INTER:-500ms}"
HA_CHECK_FALL="${HA_CHECK_FALL:-2}"
# false only to show what it protects (chaos --mutate async must then lose acknowledged writes).
HA_SYNCHRONOUS_MODE="${HA_SYNCHRONOUS_MODE:-true}"
if [[ -z "${PG_BIN:-}" ]]; then
  PG_BIN="$(pg_config --bindir 2>/dev/null || true)"
  [[ -x "$PG_BIN/pg_ctl" ]] || PG_BIN=/usr/lib/postgresql/15/bin
fi

# as_pg CMD...: CMD as the postgres user (PostgreSQL refuses to run as root).
as_pg() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# spawn NAME CMD...: CMD as the postgres user in its own session (so `down` can stop its
# whole process group), output in DIR/NAME.log, its id in DIR/NAME.pid. setpriv and env exec
# (runuser would stay as the parent and SIGKILL the command 2 s after a SIGTERM, cutting
# Patroni's shutdown of its PostgreSQL short).
spawn() {
  local name="$1"; shift
  local run=()
  if [[ "$(id -u)" == 0 ]]; then
    run=(setpriv --reuid=postgres --regid=postgres --init-groups env HOME="$(getent passwd postgres | cut -d: -f6)" USER=postgres LOGNAME=postgres)
  fi
  setsid "${run[@]}" "$@" >"$DIR/$name.log" 2>&1 < /dev/null &
  echo $! >"$DIR/$name.pid"
}
node_name() { echo "node$1"; }
pg_port() { echo $((HA_PG_PORT + $1 - 1)); }
rest_port() { echo $((HA_REST_PORT + $1 - 1)); }
patronictl_() { as_pg patronictl -c "$DIR/$(node_name 1).yml" "$@"; }
psql_ha() { psql -X -q -At -h 127.0.0.1 -p "$HA_PORT" -U postgres -d postgres "$@"; }

wait_until() { # wait_until SECONDS DESCRIPTION CMD...
  local deadline=$((SECONDS + $1)) what="$2"; shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then echo "run-local.sh: timed out waiting for $what (logs in $DIR)" >&2; return 1; fi
    sleep 0.2
  done
}
sync_primary_ready() {
  local want="sync"
  [[ "$HA_SYNCHRONOUS_MODE" == true ]] || want="async"
  [[ "$(psql_ha -c "SELECT pg_is_in_recovery()::text || ':' || (SELECT count(*) FROM pg_stat_replication WHERE sync_state = '$want' AND state = 'streaming')")" == "false:1" ]]
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The ports up() is about to bind: refused at once if taken (else a wait below would take the
# other process's port for ours and time out later with a puzzling log).
ports() {
  local i
  echo "$HA_PORT" "$HA_ETCD_PORT" "$((HA_ETCD_PORT + 1))"
  for i in $(seq 1 "$HA_NODES"); do echo "$(pg_port "$i")" "$(rest_port "$i")"; done
}

up() {
  local p
  for p in $(ports); do
    if port_in_use "$p"; then echo "run-local.sh: port $p is in use (set HA_PORT, HA_PG_PORT, HA_REST_PORT, HA_ETCD_PORT)" >&2; return 1; fi
  done
  # A failed start stops what it started (its logs stay in DIR).
  trap 'rc=$?; if ((rc != 0)); then echo "run-local.sh: up failed, stopping what it started (logs in $DIR)" >&2; down >&2 || true; fi' EXIT
  mkdir -p "$DIR"
  if [[ "$(id -u)" == 0 ]]; then chown postgres: "$DIR"; fi
  local servers=""
  for i in $(seq 1 "$HA_NODES"); do
    local n; n="$(node_name "$i")"
    as_pg mkdir -p "$DIR/$n"
    as_pg chmod 700 "$DIR/$n"
    sed -e "s|@NAME@|$n|g" -e "s|@REST_PORT@|$(rest_port "$i")|g" -e "s|@PG_PORT@|$(pg_port "$i")|g" \
      -e "s|@ETCD_HOSTS@|127.0.0.1:$HA_ETCD_PORT|g" -e "s|@DIR@|$DIR|g" -e "s|@PG_BIN@|$PG_BIN|g" \
      -e "s|@SYNC_MODE@|$HA_SYNCHRONOUS_MODE|g" -e "s|@TTL@|$HA_TTL|g" -e "s|@LOOP_WAIT@|$HA_LOOP_WAIT|g" -e "s|@RETRY_TIMEOUT@|$HA_RETRY_TIMEOUT|g" \
      "$HERE/patroni.yml.in" | as_pg tee "$DIR/$n.yml" >/dev/null
    servers+="    server $n 127.0.0.1:$(pg_port "$i") maxconn 180 check port $(rest_port "$i")"$'\n'
  done
  sed -e "s|@HAPROXY_PORT@|$HA_PORT|g" -e "s|@CHECK_INTER@|$HA_CHECK_INTER|g" -e "s|@CHECK_FALL@|$HA_CHECK_FALL|g" \
    -e "/@SERVERS@/{r /dev/stdin" -e "d}" "$HERE/haproxy.cfg.in" <<<"${servers%$'\n'}" | as_pg tee "$DIR/haproxy.cfg" >/dev/null
  as_pg haproxy -c -q -f "$DIR/haproxy.cfg"

  spawn etcd etcd --name etcd1 --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$HA_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((HA_ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((HA_ETCD_PORT + 1))" \
    --initial-cluster "etcd1=http://127.0.0.1:$((HA_ETCD_PORT + 1))" --initial-cluster-state new \
    --initial-cluster-token "baton-ha-$HA_ETCD_PORT"
  wait_until 30 "etcd on $HA_ETCD_PORT" bash -c "exec 3<>/dev/tcp/127.0.0.1/$HA_ETCD_PORT"
  # The first node bootstraps (initdb) and takes the leader key; the others clone it.
  spawn "$(node_name 1)" patroni "$DIR/$(node_name 1).yml"
  wait_until 90 "node1 primary" bash -c "exec 3<>/dev/tcp/127.0.0.1/$(pg_port 1)"
  for i in $(seq 2 "$HA_NODES"); do spawn "$(node_name "$i")" patroni "$DIR/$(node_name "$i").yml"; done
  spawn haproxy haproxy -db -f "$DIR/haproxy.cfg"
  wait_until 120 "a primary with a streaming standby behind haproxy on $HA_PORT" sync_primary_ready
  echo "up: postgres://postgres@127.0.0.1:$HA_PORT/postgres routes to $(leader)"
  trap - EXIT
}

# member ROLE: the name of the member in ROLE (leader, sync_standby), from a node's REST API
# (patronictl answers the same, slower: seconds on a loaded machine).
# Asks each node in turn, for up to about 10 s (a loaded machine's REST API can be slow to answer).
member() {
  local i round
  for round in $(seq 1 10); do
    for i in $(seq 1 "$HA_NODES"); do
      python3 - "$(rest_port "$i")" "$1" <<'PY' 2>/dev/null && return 0
import json, sys, urllib.request
cluster = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/cluster", timeout=2))
print(next(m["name"] for m in cluster["members"] if m["role"] == sys.argv[2]))
PY
    done
    sleep 0.5
  done
  echo "run-local.sh: no $1 in the cluster" >&2
  return 1
}
leader() { member leader; }

crash() {
  local n; n="$(leader)"
  local postmaster; postmaster="$(head -n 1 "$DIR/$n/data/postmaster.pid")"
  local senders=""
  if ((${HA_CRASH_LAG_MS:-0} > 0)); then
    # A lagging standby: the primary's WAL senders stopped for HA_CRASH_LAG_MS before the crash.
    # With synchronous_mode commits wait meanwhile; without it they are acknowledged and lost.
    senders="$(ps -o pid=,args= --ppid "$postmaster" | awk '/walsender/ {print $1}' | tr '\n' ' ')"
    # shellcheck disable=SC2086
    kill -STOP $senders
    sleep "$(awk -v ms="$HA_CRASH_LAG_MS" 'BEGIN { print ms / 1000 }')"
  fi
  local children; children="$(ps -o pid= --ppid "$postmaster" | tr '\n' ' ')"
  # Patroni first (or it would restart its postgres), then the postmaster and its children.
  kill -KILL -- "-$(cat "$DIR/$n.pid")" 2>/dev/null || true
  # shellcheck disable=SC2086
  kill -KILL "$postmaster" $children 2>/dev/null || true
  # Its process group is gone: `down` must not signal that id again (it may be reused by then).
  rm -f "$DIR/$n.pid"
  echo "crashed $n (patroni and postgres $postmaster)"
}

# The switchover as `patronictl switchover --force` asks for it (POST /switchover to the
# leader's REST API), answered once the candidate has taken over.
switchover() {
  local from to i
  from="$(member leader)"
  to="$(member sync_standby)"
  for i in $(seq 1 "$HA_NODES"); do [[ "$(node_name "$i")" == "$from" ]] && break; done
  python3 - "$(rest_port "$i")" "$from" "$to" <<'PY'
import json, sys, urllib.request
body = json.dumps({"leader": sys.argv[2], "candidate": sys.argv[3]}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/switchover", data=body, method="POST")
with urllib.request.urlopen(req, timeout=60) as r:
    print(r.status, r.read().decode().strip())
PY
}

# postmaster_alive DATA: the postmaster of DATA is running (its pid file names a live process
# working in DATA; a crash leaves the file behind and the id may since belong to another process).
postmaster_alive() {
  local pid
  pid="$(head -n 1 "$1/postmaster.pid" 2>/dev/null)" || return 1
  [[ -n "$pid" && "$(readlink "/proc/$pid/cwd" 2>/dev/null)" == "$(realpath -m "$1")" ]]
}
# leftovers: processes still running from DIR: its path in their command line, or working under it.
leftovers() {
  python3 - "$DIR" <<'PY'
import os, sys
d, me = sys.argv[1], os.getpid()
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        if int(p) == me:
            continue
        cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        try:
            cwd = os.readlink(f"/proc/{p}/cwd")
        except OSError:
            cwd = ""
        if d + "/" in cmd or cwd.startswith(d + "/"):
            print(p)
    except OSError:
        pass
PY
}

# group_alive NAME: a process of NAME's process group (recorded by spawn) still runs.
group_alive() { [[ -f "$DIR/$1.pid" ]] && kill -0 -- "-$(cat "$DIR/$1.pid")" 2>/dev/null; }
stop_group() { if group_alive "$1"; then kill "-$2" -- "-$(cat "$DIR/$1.pid")" 2>/dev/null || true; fi; }

down() {
  local f i nodes=()
  for i in $(seq 1 "$HA_NODES"); do nodes+=("$(node_name "$i")"); done
  stop_group haproxy TERM
  for f in "${nodes[@]}"; do stop_group "$f" TERM; done
  # A Patroni node stops its PostgreSQL on SIGTERM, then releases its leader key in etcd and
  # exits: etcd is stopped only after the nodes (up to 15 s; then immediate stop and KILL).
  nodes_alive() {
    for f in "${nodes[@]}"; do group_alive "$f" && return 0; postmaster_alive "$DIR/$f/data" && return 0; done
    return 1
  }
  for _ in $(seq 1 75); do nodes_alive || break; sleep 0.2; done
  for f in "${nodes[@]}"; do
    if postmaster_alive "$DIR/$f/data"; then as_pg "$PG_BIN/pg_ctl" -D "$DIR/$f/data" -m immediate stop >/dev/null 2>&1 || true; fi
    stop_group "$f" KILL
  done
  stop_group etcd TERM
  for _ in $(seq 1 25); do [[ -z "$(leftovers)" ]] && break; sleep 0.2; done
  for f in haproxy "${nodes[@]}" etcd; do stop_group "$f" KILL; done
  local left
  for _ in $(seq 1 10); do left="$(leftovers | paste -sd,)"; [[ -z "$left" ]] && break; sleep 0.2; done
  if [[ -n "$left" ]]; then
    echo "run-local.sh: processes still running from $DIR:" >&2
    ps -o pid=,args= -p "$left" >&2 || true
    return 1
  fi
  echo "down: $DIR"
}

case "$cmd" in
  up) up ;;
  list) patronictl_ list ;;
  leader) leader ;;
  crash) crash ;;
  switchover) switchover ;;
  daemon)
    cd "$HERE/../.."
    export DATABASE_URL="postgres://postgres@127.0.0.1:$HA_PORT/postgres"
    node bin/baton.js migrate
    exec node bin/baton.js serve ;;
  down) down ;;
  *) echo "unknown command: $cmd" >&2; exit 2 ;;
esac
