#!/usr/bin/env bash
# What keeping nginx in front costs (issue #30), side by side on loopback,
# browser traffic only (the page is let through every time):
#   nginx-alone        nginx proxying to the origin, no check;
#   nginx-auth         the shipped examples/edge/nginx.conf: nginx asks
#                      robotgate's auth listener (auth_request, keep-alive),
#                      then proxies to the origin;
#   robotgate-proxy    robotgate as the reverse proxy itself;
#   nginx-auth-static  nginx asks robotgate, then serves the page from disk:
#                      the decision endpoint's own throughput behind nginx's
#                      keep-alive connections, without the origin's hop;
#   auth-direct        wrk straight at the auth listener (X-Original-URI).
# One worker each (nginx in one process, robotgate with one thread per
# service). Prints per case requests/s, p50/p99 latency and CPU time per
# request of the processes doing the work (utime + stime from /proc/PID/stat,
# nginx plus robotgate where both work), medians over the rounds, and ratios.
#
#   bash benches/edge.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 3, 10, 64)
#
# Installs wrk and nginx from Debian if missing. Loopback only; stops
# everything it started; bounded by ROUNDS x 5 x SECONDS plus a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-10}
CONNS=${3:-64}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light curl:curl
cargo build --release --bin robotgate >/dev/null 2>&1

start_work

ORIGIN=18130 ALONE=18131 AUTHED=18132 GATE=18133 AUTH=18134 STATIC=18135
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"

declare -A PID_OF
nginx_proxy_conf "$WORK/alone.conf" "$ALONE" "$ORIGIN" 1 'daemon off;' 'master_process off;'
nginx -c "$WORK/alone.conf" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$ALONE]=$!

# robotgate: the proxy listener and the auth listener, one thread each.
robotgate_conf "$WORK" "$GATE" "$ORIGIN" 1
{ cat "$WORK/robotgate.yaml"
  printf 'auth: { listen: ["127.0.0.1:%s"] }\ntrusted_proxies: ["127.0.0.1/32"]\n' "$AUTH"; } > "$WORK/rg.yaml"
target/release/robotgate serve --config "$WORK/rg.yaml" --pid-file "$WORK/rg.pid" \
  --upgrade-sock "$WORK/rg.sock" >/dev/null 2>&1 &
RG=$!
PIDS+=($RG) PID_OF[$GATE]=$RG PID_OF[$AUTH]=$RG

# The shipped snippet, with the benchmark's ports, in a main file of its own.
edge_conf() { # FILE LISTEN [static]
  sed -e "s/listen 80;/listen 127.0.0.1:$2;/" -e "s/127.0.0.1:9090/127.0.0.1:$AUTH/" \
    -e "s/127.0.0.1:8080/127.0.0.1:$GATE/" -e "s/127.0.0.1:8000/127.0.0.1:$ORIGIN/" \
    examples/edge/nginx.conf > "$1.site"
  if [ "${3:-}" = static ]; then # the page from disk instead of the origin
    sed -i "s|^        proxy_pass http://origin;\$|        root $WORK/www;|" "$1.site"
    grep -q "root $WORK/www;" "$1.site" || { echo "edge_conf: the snippet's location / changed" >&2; exit 1; }
  fi
  cat > "$1" <<NGX
daemon off;
master_process off;
worker_processes 1;
pid $1.pid;
error_log $1-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  include $1.site;
}
NGX
}
edge_conf "$WORK/authed.conf" "$AUTHED"
nginx -c "$WORK/authed.conf" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$AUTHED]=$!
edge_conf "$WORK/static.conf" "$STATIC" static
nginx -c "$WORK/static.conf" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$STATIC]=$!

for port in $ALONE $AUTHED $GATE $STATIC; do
  for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/page.html" && break; sleep 0.25; done
  code=$(curl -s -o /dev/null -w '%{http_code}' -A "$CHROME" "http://127.0.0.1:$port/page.html")
  [ "$code" = 200 ] || { echo "port $port answers a browser with $code, not 200" >&2; exit 1; }
done
for port in $AUTHED $GATE $STATIC; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -A "$GPTBOT" "http://127.0.0.1:$port/page.html")
  [ "$code" = 403 ] || { echo "port $port answers GPTBot with $code, not 403" >&2; exit 1; }
done
code=$(curl -s -o /dev/null -w '%{http_code}' -A "$CHROME" -H 'X-Original-URI: /page.html' "http://127.0.0.1:$AUTH/")
[ "$code" = 200 ] || { echo "the auth listener answers a browser with $code, not 200" >&2; exit 1; }

# name|port|pids whose CPU counts|extra header
CASES=(
  "nginx-alone|$ALONE|${PID_OF[$ALONE]}|"
  "nginx-auth|$AUTHED|${PID_OF[$AUTHED]} $RG|"
  "robotgate-proxy|$GATE|$RG|"
  "nginx-auth-static|$STATIC|${PID_OF[$STATIC]} $RG|"
  "auth-direct|$AUTH|$RG|X-Original-URI: /page.html"
)

TICK=$(getconf CLK_TCK)
run() { # port "pids" header -> "rps p50_us p99_us cpu_us_per_request"
  local before after out n extra=()
  [ -n "$3" ] && extra=(-H "$3")
  # shellcheck disable=SC2086
  before=$(cpu_ticks $2)
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "User-Agent: $CHROME" "${extra[@]}" "http://127.0.0.1:$1/page.html" 2>&1)
  # shellcheck disable=SC2086
  after=$(cpu_ticks $2)
  grep -q 'Non-2xx' <<<"$out" && { echo "port $1: refusals in browser traffic: $out" >&2; exit 1; }
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
    "$(to_us "$(awk '$1=="50%" {print $2}' <<<"$out")")" \
    "$(to_us "$(awk '$1=="99%" {print $2}' <<<"$out")")" \
    "$(awk -v t=$((after - before)) -v hz="$TICK" -v n="$n" 'BEGIN { print t / hz * 1e6 / n }')"
}

declare -A RPS P50 P99 CPU
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name port pids header <<<"$c"
    read -r rps p50 p99 cpu < <(run "$port" "$pids" "$header")
    RPS[$name]="${RPS[$name]:-} $rps"; P50[$name]="${P50[$name]:-} $p50"
    P99[$name]="${P99[$name]:-} $p99"; CPU[$name]="${CPU[$name]:-} $cpu"
    printf 'round %d %-18s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request\n' \
      "$round" "$name" "$rps" "$p50" "$p99" "$cpu"
  done
done

echo
echo "medians over $ROUNDS rounds ($SECS s each, $CONNS connections, 1 worker each, 1 KiB page, browser traffic):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ _ _ <<<"$c"
  printf '  %-18s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request\n' "$name" \
    "$(median <<<"${RPS[$name]}")" "$(median <<<"${P50[$name]}")" "$(median <<<"${P99[$name]}")" \
    "$(median <<<"${CPU[$name]}")"
done
m() { median <<<"${1}"; }
awk -v alone="$(m "${RPS[nginx-alone]}")" -v authed="$(m "${RPS[nginx-auth]}")" -v rg="$(m "${RPS[robotgate-proxy]}")" \
  -v ca="$(m "${CPU[nginx-alone]}")" -v cau="$(m "${CPU[nginx-auth]}")" -v crg="$(m "${CPU[robotgate-proxy]}")" 'BEGIN {
    printf "  req/s  nginx-auth / nginx-alone %.2f   robotgate-proxy / nginx-alone %.2f   nginx-auth / robotgate-proxy %.2f\n", authed/alone, rg/alone, authed/rg
    printf "  CPU    nginx-auth / nginx-alone %.2f   robotgate-proxy / nginx-alone %.2f\n", cau/ca, crg/ca
  }'
