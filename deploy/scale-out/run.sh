#!/usr/bin/env bash
# The scale-out deployment on loopback: PostgreSQL (the shared task store), 3 serving hosts of the
# quick start's agent (serve-a2a with `shared`), and nginx in front of them. See README.md here.
#
#   deploy/scale-out/run.sh           start, print one JSON line (where everything is), run until
#                                     stdin ends or SIGINT/SIGTERM, then stop and remove everything
#   deploy/scale-out/run.sh --smoke   start, send one task through nginx, check it completed, stop
#
# Environment (all optional): SCALE_OUT_PG_URL (default postgres://subagents:subagents@127.0.0.1:5432/subagents_test),
# SCALE_OUT_PORT (nginx; default a free port), SCALE_OUT_HOSTS (default 3), SCALE_OUT_LEASE_MS
# (default 15000), SCALE_OUT_TOKEN (default random), SCALE_OUT_TRACES=1 (hosts write their spans to
# <state>/spans-<host>.jsonl), SCALE_OUT_MODEL_DELAY (ms per model call, default 20), SCALE_OUT_KEEP=1
# (keep the state directory). Idempotent: a rerun on the same port first stops what an earlier run
# on it left behind. Everything it starts is stopped on every exit path; the hosts also exit when
# this script dies (their stdin ends), and a watchdog stops nginx.
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$DIR/../.." && pwd)"
MODE="${1:-}"
PG_URL="${SCALE_OUT_PG_URL:-postgres://subagents:subagents@127.0.0.1:5432/subagents_test}"
HOSTS="${SCALE_OUT_HOSTS:-3}"
LEASE_MS="${SCALE_OUT_LEASE_MS:-15000}"
say() { printf 'scale-out: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
redacted() { sed -E 's#//([^:/@]+):[^@/]*@#//\1:***@#' <<<"$1"; }

# --- what is needed, with how to get it --------------------------------------------------------
command -v node >/dev/null || fail "node is not on PATH"
command -v psql >/dev/null || fail "psql is missing: apt-get install -y postgresql-client"
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing nginx (Debian)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
  else
    fail "nginx is missing: as root, apt-get install -y nginx"
  fi
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
psql "$PG_URL" -qtAc 'SELECT 1' >/dev/null 2>&1 \
  || fail "PostgreSQL is not reachable at $(redacted "$PG_URL"): set SCALE_OUT_PG_URL to a database you own (npm run test:deploy sets it to the test run's own server)"
[ -f "$ROOT/examples/quickstart/lib/a2a-server.js" ] && [ -f "$ROOT/packages/serve-a2a/lib/shared-state.js" ] \
  || fail "the packages are not built: run npm run build (tsc -b) first"

# --- state, ports, cleanup ----------------------------------------------------------------------
PORT="${SCALE_OUT_PORT:-$(free_port)}"
STATE="${TMPDIR:-/tmp}/cordis-scale-out-$PORT"
SCHEMA="scale_out_$PORT"
if [ -f "$STATE/pids" ]; then
  say "stopping what an earlier run on port $PORT left behind"
  while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$STATE/pids"
fi
rm -rf "$STATE"
mkdir -p "$STATE"
chmod 755 "$STATE"
: >"$STATE/pids"
TOKEN="${SCALE_OUT_TOKEN:-$(node -e 'console.log(require("crypto").randomBytes(24).toString("base64url"))')}"
(umask 077; printf '%s' "$TOKEN" >"$STATE/token")

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  exec 3>&- 2>/dev/null || true
  if [ -f "$STATE/pids" ]; then
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done <"$STATE/pids"
    for _ in $(seq 1 50); do
      alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$STATE/pids"
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$STATE/pids"
  fi
  psql "$PG_URL" -qtAc "DROP SCHEMA IF EXISTS \"$SCHEMA\" CASCADE" >/dev/null 2>&1 || true
  if [ "${SCALE_OUT_KEEP:-}" = 1 ]; then say "state kept in $STATE"; else rm -rf "$STATE"; fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

psql "$PG_URL" -qtAc "DROP SCHEMA IF EXISTS \"$SCHEMA\" CASCADE" >/dev/null 2>&1 || true

# The hosts read their stdin from this pipe and exit when it ends: this script holds its only writer
# (fd 3; every other child closes it), so it ends when this script exits or dies.
mkfifo "$STATE/lifeline"
exec 3<>"$STATE/lifeline"

# --- the hosts ----------------------------------------------------------------------------------
NAMES=()
PORTS=()
UPSTREAMS=""
for i in $(seq 1 "$HOSTS"); do
  NAMES+=("host-$(printf "\\x$(printf %x $((96 + i)))")")
done
sed "s#@SCALE_OUT_DIR@#$DIR#g" "$DIR/host.yml" >"$STATE/host.yml"
for i in "${!NAMES[@]}"; do
  name="${NAMES[$i]}"
  # Port 0: each host binds a free port itself (no race with other programs) and prints its URL.
  env SCALE_OUT_HOST_NAME="$name" SCALE_OUT_HOST_PORT=0 SCALE_OUT_PUBLIC_URL="http://127.0.0.1:$PORT" \
    SCALE_OUT_SCHEMA="$SCHEMA" SCALE_OUT_TOKEN="$TOKEN" A2A_DATABASE_URL="$PG_URL" SCALE_OUT_LEASE_MS="$LEASE_MS" \
    SCALE_OUT_CALL_LOG="$STATE/calls-$name.log" OTEL_SERVICE_NAME="scale-out-$name" \
    ${SCALE_OUT_TRACES:+QUICKSTART_TRACE_FILE="$STATE/spans-$name.jsonl"} \
    node "$ROOT/examples/quickstart/lib/a2a-server.js" --config "$STATE/host.yml" --root "$ROOT" --exit-with-stdin \
    <"$STATE/lifeline" >"$STATE/$name.out" 2>"$STATE/$name.log" 3>&- &
  echo $! >>"$STATE/pids"
  eval "PID_$i=$!"
done
for i in "${!NAMES[@]}"; do
  name="${NAMES[$i]}"
  for _ in $(seq 1 300); do
    grep -q '"url"' "$STATE/$name.out" 2>/dev/null && break
    pid_var="PID_$i"; kill -0 "${!pid_var}" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '"url"' "$STATE/$name.out" 2>/dev/null || { tail -n 20 "$STATE/$name.log" >&2; fail "$name did not start (its log is above)"; }
  # The card advertises nginx's URL (publicUrl); the log line says the bound address ("serving <public> from <bound>").
  hport="$(sed -nE 's#.*serving .* from http://127\.0\.0\.1:([0-9]+) .*#\1#p' "$STATE/$name.log" | head -n 1)"
  [ -n "$hport" ] || { tail -n 20 "$STATE/$name.log" >&2; fail "$name did not say which port it bound"; }
  PORTS+=("$hport")
  UPSTREAMS+="    server 127.0.0.1:$hport max_fails=1 fail_timeout=3s;"$'\n'
done

# --- nginx --------------------------------------------------------------------------------------
mkdir -p "$STATE/client_body" "$STATE/proxy" "$STATE/fastcgi" "$STATE/uwsgi" "$STATE/scgi"
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root;"
sed -e "s#@STATE@#$STATE#g" -e "s#@PORT@#$PORT#g" -e "s#@USER@#$user_line#" "$DIR/nginx.conf" \
  | awk -v ups="$UPSTREAMS" '{ if ($0 == "@UPSTREAMS@") printf "%s", ups; else print }' >"$STATE/nginx.conf"
"$NGINX" -t -q -p "$STATE" -c "$STATE/nginx.conf" 2>"$STATE/nginx-test.log" || { cat "$STATE/nginx-test.log" >&2; fail "nginx refused its config"; }
"$NGINX" -p "$STATE" -c "$STATE/nginx.conf" -g 'daemon off;' 2>>"$STATE/nginx-error.log" 3>&- &
NGINX_PID=$!
echo "$NGINX_PID" >>"$STATE/pids"
# If this script is killed (no trap runs), the watchdog stops nginx; the hosts see their stdin end.
( trap '' INT; while kill -0 $$ 2>/dev/null; do sleep 1; done; kill -TERM "$NGINX_PID" 2>/dev/null ) </dev/null >/dev/null 2>&1 3>&- &
echo $! >>"$STATE/pids"
for _ in $(seq 1 100); do
  (exec 9<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$NGINX_PID" 2>/dev/null || { cat "$STATE/nginx-error.log" >&2; fail "nginx exited"; }
  sleep 0.1
done

# --- ready --------------------------------------------------------------------------------------
hosts_json=""
for i in "${!NAMES[@]}"; do
  pid_var="PID_$i"
  hosts_json+="${hosts_json:+,}{\"name\":\"${NAMES[$i]}\",\"url\":\"http://127.0.0.1:${PORTS[$i]}\",\"pid\":${!pid_var}}"
done
printf '{"ready":true,"url":"http://127.0.0.1:%s","hosts":[%s],"nginxPid":%s,"state":"%s","tokenFile":"%s/token","schema":"%s","leaseMs":%s}\n' \
  "$PORT" "$hosts_json" "$NGINX_PID" "$STATE" "$STATE" "$SCHEMA" "$LEASE_MS"
say "nginx on http://127.0.0.1:$PORT in front of ${NAMES[*]}; PostgreSQL schema $SCHEMA"

if [ "$MODE" = --smoke ]; then
  body='{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"smoke-1","role":"ROLE_USER","parts":[{"text":"List the top-level entries of the workspace (list_files on \".\") and say which are directories. [job:smoke]"}]}}}'
  answer="$(curl -sS --max-time 30 -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -H "Authorization: Bearer $TOKEN" \
    --data "$body" "http://127.0.0.1:$PORT/a2a/jsonrpc")" || fail "the smoke task did not answer"
  grep -q 'TASK_STATE_COMPLETED' <<<"$answer" || fail "the smoke task did not complete: $answer"
  say "smoke: one task through nginx completed"
  exit 0
fi
# Run until stdin ends (the caller went away) or a signal.
while read -r _; do :; done
