#!/usr/bin/env bash
# User-space instructions per request, counted by valgrind's callgrind, for
# nginx as reverse proxy, the bare Pingora passthrough, the passthrough doing
# robotgate's forwarding work (`forward`: its timeouts and X-Forwarded-*
# headers), and robotgate (browser traffic; bot allowed; bot blocked). Instruction counts do not depend on what
# else the machine is doing, so this tells apart differences of a few percent
# that requests/s on a shared 2-core machine cannot (see benches/load.sh).
#
#   bash benches/instructions.sh [SECONDS] [CONNECTIONS]   (defaults: 10, 8)
#
# Each proxy runs alone under callgrind in front of one nginx origin; wrk
# warms it up for 3 s, the counters are zeroed, wrk loads it for SECONDS
# (default 10), the counters are dumped and divided by the requests wrk
# made. Kernel work is not counted: strace shows nginx and Pingora making the
# same system calls per proxied request (two reads, two writes, one socket
# check). Installs wrk, nginx and valgrind from Debian if missing. Loopback
# only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CONNS=${2:-8}

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
command -v valgrind >/dev/null || need+=(valgrind)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release --bin robotgate --example passthrough >/dev/null 2>&1

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -f "$WORK/origin.pid" ] && kill "$(cat "$WORK/origin.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ORIGIN=18300 PROXY=18301
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
cat > "$WORK/origin.conf" <<NGX
worker_processes 1;
pid $WORK/origin.pid;
error_log $WORK/origin-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$ORIGIN; root $WORK/www; }
}
NGX
nginx -c "$WORK/origin.conf"

# nginx in one process (no master) so that callgrind sees its worker, set up
# as robotgate forwards: keep-alive to the origin, X-Forwarded-For/-Proto.
cat > "$WORK/proxy.conf" <<NGX
daemon off;
master_process off;
worker_processes 1;
pid $WORK/proxy.pid;
error_log $WORK/proxy-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  upstream origin { server 127.0.0.1:$ORIGIN; keepalive 128; }
  server {
    listen 127.0.0.1:$PROXY;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
    }
  }
}
NGX
printf 'User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n' > "$WORK/robots.txt"
cat > "$WORK/robotgate.yaml" <<YML
listen: ["127.0.0.1:$PROXY"]
threads: 1
grace_period: 0
sites:
  - hosts: ["127.0.0.1"]
    default: true
    upstream: "127.0.0.1:$ORIGIN"
    robots: $WORK/robots.txt
log:
  violations: $WORK/violations.jsonl
  level: error
YML

CHROME='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36'
GOOGLEBOT='Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
GPTBOT='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)'

measure() { # name user-agent command...
  local name=$1 ua=$2 pid out n ir
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$name.%p" "$@" >"$WORK/$name.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 240); do
    curl -s -o /dev/null -m 2 "http://127.0.0.1:$PROXY/page.html" && break
    sleep 0.5
  done
  wrk -t1 -c"$CONNS" -d3s -H "User-Agent: $ua" "http://127.0.0.1:$PROXY/page.html" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -H "User-Agent: $ua" "http://127.0.0.1:$PROXY/page.html")
  callgrind_control -d "$pid" >/dev/null 2>&1
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  # The dump made just now (file ".1"): everything since the counters were zeroed.
  for _ in $(seq 1 20); do [ -s "$WORK/cg.$name.$pid.1" ] && break; sleep 0.5; done
  ir=$(awk '/^summary:/ {print $2}' "$WORK/cg.$name.$pid.1")
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  printf '  %-24s %8d requests  %8d instructions/request\n' "$name" "$n" "$((ir / n))"
  echo "$((ir / n))" >"$WORK/result.$name"
}

echo "user-space instructions per request (callgrind, ${SECS} s at $CONNS connections, 1 thread, 1 KiB page):"
measure nginx "$CHROME" nginx -c "$WORK/proxy.conf"
measure passthrough "$CHROME" target/release/examples/passthrough "127.0.0.1:$PROXY" "127.0.0.1:$ORIGIN" 1
measure passthrough-forward "$CHROME" target/release/examples/passthrough "127.0.0.1:$PROXY" "127.0.0.1:$ORIGIN" 1 forward
measure robotgate-browser "$CHROME" target/release/robotgate serve --config "$WORK/robotgate.yaml"
measure robotgate-bot-allowed "$GOOGLEBOT" target/release/robotgate serve --config "$WORK/robotgate.yaml"
measure robotgate-bot-blocked "$GPTBOT" target/release/robotgate serve --config "$WORK/robotgate.yaml"
awk -v a="$(cat "$WORK/result.robotgate-browser")" -v b="$(cat "$WORK/result.passthrough")" \
  -v c="$(cat "$WORK/result.nginx")" -v d="$(cat "$WORK/result.passthrough-forward")" \
  'BEGIN { printf "  robotgate/passthrough %.3f   robotgate/passthrough-forward %.3f   passthrough/nginx %.3f\n  (ratios of instructions per request: lower is cheaper)\n", a/b, a/d, b/c }'
