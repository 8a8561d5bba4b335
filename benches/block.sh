#!/usr/bin/env bash
# What blocking costs (issue #19), side by side on loopback: nginx with the
# usual User-Agent block in front of the proxying (`if ($http_user_agent ~*
# "(GPTBot|ClaudeBot|...)") { return 403; }`, the tokens of every ai-crawler
# in robotgate's own bot database, conf/bots.yaml) with PCRE's JIT off and
# on, and robotgate refusing the same requests because its robots.txt
# disallows them (GPTBot verified by a loopback feed of its own, so this is
# the robots.txt refusal, 403, not the spoofed-identity one). Also the floor
# of any Pingora refusal: the bare Pingora passthrough (examples/passthrough.rs)
# answering 403 from `request_filter` when the User-Agent contains `GPTBot`,
# with nothing else done. Each contender also proxies browser traffic to the
# same origin. Alternates the cases for
# several rounds and prints, per case, requests/s, p50/p99 latency and CPU
# time per request of the contender's process (utime + stime from
# /proc/PID/stat over the run, all threads), then the ratios.
#
#   bash benches/block.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 3, 10, 64)
#
# One worker each (nginx in one process, robotgate with one thread). Installs
# wrk and nginx from Debian if missing. Loopback only; stops everything it
# started; bounded by ROUNDS x 7 x SECONDS plus a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-10}
CONNS=${3:-64}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light curl:curl
cargo build --release --bin robotgate --example passthrough >/dev/null 2>&1

start_work

ORIGIN=18120 NOJIT=18121 JIT=18122 GATE=18123 FLOOR=18124
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"

# The contenders run in the foreground of one process each, so that $! is
# the process that does the work.
declare -A PID_OF
nginx_block_conf "$WORK/nojit.conf" "$NOJIT" "$ORIGIN" 1 off 'daemon off;' 'master_process off;'
nginx -c "$WORK/nojit.conf" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$NOJIT]=$!
nginx_block_conf "$WORK/jit.conf" "$JIT" "$ORIGIN" 1 on 'daemon off;' 'master_process off;'
nginx -c "$WORK/jit.conf" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$JIT]=$!
robotgate_conf "$WORK" "$GATE" "$ORIGIN" 1
robotgate_verified_conf "$WORK"
target/release/robotgate serve --config "$WORK/robotgate-verified.yaml" --pid-file "$WORK/rg.pid" \
  --upgrade-sock "$WORK/rg.sock" >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$GATE]=$!
target/release/examples/passthrough "127.0.0.1:$FLOOR" "127.0.0.1:$ORIGIN" 1 refuse >/dev/null 2>&1 &
PIDS+=($!) PID_OF[$FLOOR]=$!

for port in $NOJIT $JIT $GATE $FLOOR; do
  for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/page.html" && break; sleep 0.25; done
  code=$(curl -s -o /dev/null -w '%{http_code}' -A "$GPTBOT" "http://127.0.0.1:$port/page.html")
  [ "$code" = 403 ] || { echo "port $port answers GPTBot with $code, not 403" >&2; exit 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' -A "$CHROME" "http://127.0.0.1:$port/page.html")
  [ "$code" = 200 ] || { echo "port $port answers a browser with $code, not 200" >&2; exit 1; }
done
grep -i jit "$WORK"/*-error.log >&2 || true

# name|port|user-agent
CASES=(
  "nginx-block-nojit-bot|$NOJIT|$GPTBOT"
  "nginx-block-jit-bot|$JIT|$GPTBOT"
  "robotgate-bot-blocked|$GATE|$GPTBOT"
  "pingora-floor-bot|$FLOOR|$GPTBOT"
  "nginx-block-nojit-browser|$NOJIT|$CHROME"
  "nginx-block-jit-browser|$JIT|$CHROME"
  "robotgate-browser|$GATE|$CHROME"
)

run() { # port ua -> "rps p50_us p99_us cpu_us_per_request"
  wrk_measure "${PID_OF[$1]}" "http://127.0.0.1:$1/page.html" "$CONNS" "$SECS" -H "User-Agent: $2"
}

declare -A RPS P50 P99 CPU
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name port ua <<<"$c"
    read -r rps p50 p99 cpu < <(run "$port" "$ua")
    RPS[$name]="${RPS[$name]:-} $rps"; P50[$name]="${P50[$name]:-} $p50"
    P99[$name]="${P99[$name]:-} $p99"; CPU[$name]="${CPU[$name]:-} $cpu"
    printf 'round %d %-26s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request\n' \
      "$round" "$name" "$rps" "$p50" "$p99" "$cpu"
  done
done

echo
echo "medians over $ROUNDS rounds ($SECS s each, $CONNS connections, 1 worker each, 1 KiB page):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ _ <<<"$c"
  printf '  %-26s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request\n' "$name" \
    "$(median <<<"${RPS[$name]}")" "$(median <<<"${P50[$name]}")" "$(median <<<"${P99[$name]}")" \
    "$(median <<<"${CPU[$name]}")"
done
m() { median <<<"${1}"; }
awk -v rg="$(m "${RPS[robotgate-bot-blocked]}")" -v nj="$(m "${RPS[nginx-block-nojit-bot]}")" \
  -v j="$(m "${RPS[nginx-block-jit-bot]}")" -v cb="$(m "${CPU[robotgate-bot-blocked]}")" \
  -v cr="$(m "${CPU[robotgate-browser]}")" -v cnj="$(m "${CPU[nginx-block-nojit-bot]}")" \
  -v cj="$(m "${CPU[nginx-block-jit-bot]}")" -v fl="$(m "${RPS[pingora-floor-bot]}")" \
  -v cf="$(m "${CPU[pingora-floor-bot]}")" 'BEGIN {
    printf "  blocked req/s  robotgate/nginx-nojit %.2f   robotgate/nginx-jit %.2f   (target >= 1.0 vs nojit)\n", rg/nj, rg/j
    printf "  Pingora floor  floor/nginx-jit %.2f req/s, %.2f CPU   robotgate/floor %.2f req/s, %.2f CPU\n", fl/j, cf/cj, rg/fl, cb/cf
    printf "  blocked CPU    robotgate/nginx-nojit %.2f   robotgate/nginx-jit %.2f\n", cb/cnj, cb/cj
    printf "  robotgate CPU  blocked bot / proxied browser %.2f   (target <= 0.5)\n", cb/cr
  }'
