#!/usr/bin/env bash
# robotgate inside nginx (issue #41) against nginx alone, side by side on
# loopback, each nginx in one process serving a 1 KiB static page itself:
#
#   nginx                 no module: the browser baseline
#   module-browser        the module on, a browser's requests (decided, let through)
#   nginx-jit-block       no module, the usual User-Agent block (`if
#                         ($http_user_agent ~* "(GPTBot|ClaudeBot|...)") { return 403; }`,
#                         every ai-crawler token of conf/bots.yaml) with `pcre_jit on`: GPTBot refused
#   module-gptbot         the module on, GPTBot (verified by a loopback feed of its own)
#                         refused because robots.txt disallows it: 403 with a violation record
#
# Alternates the cases for several rounds (wrk, one thread) and prints per
# case requests/s, p50/p99 and CPU time per request of the nginx process,
# then the ratios (each pair measured back to back in every round, in turn
# first; the median of the rounds' ratios); then user-space instructions per request of each (callgrind,
# nginx in one process).
#
#   bash benches/nginx_module.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 3, 5, 64)
#
# KEEP_CALLGRIND=DIR keeps each case's callgrind output as DIR/CASE.out;
# CALLGRIND_ARGS adds options (e.g. --cache-sim=yes for cache misses).
# Builds the module (nginx/build.sh); installs wrk and valgrind if missing.
# Loopback only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-64}

. benches/common.sh
install_missing wrk:wrk valgrind:valgrind curl:curl
MODULE=$(bash nginx/build.sh 2>/dev/null | tail -n 1)

start_work
chmod 755 "$WORK"
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
PLAIN=18530 MOD=18531 JIT=18532
# robots.txt and robotgate.yaml as the proxy's benchmarks use them (GPTBot
# barred), with GPTBot's feed on loopback: a verified GPTBot, refused by robots.txt.
robotgate_conf "$WORK" 1 1 1
robotgate_verified_conf "$WORK"

# In the foreground, without a master: the process measured is the worker.
conf() { # file port [http lines] [server lines] [main lines]
  nginx_page_conf "$1" "$2" "${3:-}" "${4:-}" "${5:-}
daemon off;
master_process off;"
}
regex=$(ai_crawler_regex)
conf "$WORK/plain.conf" "$PLAIN"
conf "$WORK/module.conf" "$MOD" "robotgate_config $WORK/robotgate-verified.yaml;" "robotgate on;" "load_module $MODULE;"
conf "$WORK/jit.conf" "$JIT" "" "if (\$http_user_agent ~* \"($regex)\") { return 403; }" "pcre_jit on;"

declare -A PID_OF
# Each nginx on the second core, wrk on the first (with two cores or more):
# the two never take each other's turn, which made rounds differ by a fifth.
PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN=(taskset -c 1)
  export WRK_PIN="taskset -c 0"
fi
for c in plain:$PLAIN module:$MOD jit:$JIT; do
  "${PIN[@]}" nginx -c "$WORK/${c%%:*}.conf" >/dev/null 2>&1 &
  PIDS+=($!) PID_OF[${c#*:}]=$!
done
for port in $PLAIN $MOD $JIT; do
  for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/page.html" && break; sleep 0.25; done
done
check() { # port ua want
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -A "$2" "http://127.0.0.1:$1/page.html")
  [ "$code" = "$3" ] || { echo "port $1 answers ${2:0:40} with $code, not $3" >&2; exit 1; }
}
check $PLAIN "$CHROME" 200; check $MOD "$CHROME" 200; check $MOD "$GPTBOT" 403; check $JIT "$GPTBOT" 403

# name|port|user-agent
CASES=(
  "nginx|$PLAIN|$CHROME"
  "module-browser|$MOD|$CHROME"
  "nginx-jit-block|$JIT|$GPTBOT"
  "module-gptbot|$MOD|$GPTBOT"
)
run() { # port ua -> "rps p50_us p99_us cpu_us_per_request"
  wrk_measure "${PID_OF[$1]}" "http://127.0.0.1:$1/page.html" "$CONNS" "$SECS" -H "User-Agent: $2"
}
# Each round measures each pair back to back, in turn first and second
# (ABBA), so a drift of the machine's speed during a run falls on both;
# the ratios are taken per round, then their median.
declare -A RPS CPU THIS
BROWSERS="" REFUSALS=""
for round in $(seq 1 "$ROUNDS"); do
  order=(0 1 2 3)
  [ $((round % 2)) -eq 0 ] && order=(1 0 3 2)
  for i in "${order[@]}"; do
    IFS='|' read -r name port ua <<<"${CASES[$i]}"
    read -r rps p50 p99 cpu < <(run "$port" "$ua")
    RPS[$name]="${RPS[$name]:-} $rps"; CPU[$name]="${CPU[$name]:-} $cpu"; THIS[$name]=$rps
    printf 'round %d %-16s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request\n' \
      "$round" "$name" "$rps" "$p50" "$p99" "$cpu"
  done
  BROWSERS+=" $(awk -v a="${THIS[module-browser]}" -v b="${THIS[nginx]}" 'BEGIN {printf "%.4f", a/b}')"
  REFUSALS+=" $(awk -v a="${THIS[module-gptbot]}" -v b="${THIS[nginx-jit-block]}" 'BEGIN {printf "%.4f", a/b}')"
done
echo
echo "medians over $ROUNDS rounds ($SECS s each, $CONNS connections, 1 worker each, 1 KiB page):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ _ <<<"$c"
  printf '  %-16s %9.0f req/s  %5.1f us CPU/request\n' "$name" "$(median <<<"${RPS[$name]}")" "$(median <<<"${CPU[$name]}")"
done
range() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {printf "%.3f..%.3f", v[1], v[NR]}'; }
printf '  browsers  module/nginx %.3f   (target >= 0.95; median of the rounds'"'"' ratios, %s)\n' \
  "$(median <<<"$BROWSERS")" "$(range <<<"$BROWSERS")"
printf '  refusals  module/nginx-jit-block %.3f   (target >= 1.0; median of the rounds'"'"' ratios, %s)\n' \
  "$(median <<<"$REFUSALS")" "$(range <<<"$REFUSALS")"

# At once: both of a pair loaded together, each nginx on the same core, so
# the scheduler gives each half of it; requests/s then compare what a
# request costs each, and a change of the machine's speed (a neighbour, a
# clock) falls on both at the same moment. The rounds above, one case at a
# time, differ from each other by more than the 5% asked.
echo
echo "at once, each pair sharing one core ($ROUNDS rounds of $SECS s, $CONNS connections each):"
at_once() { # name-a port-a ua-a name-b port-b ua-b -> ratio b/a
  local a b
  a=$(mktemp -p "$WORK") b=$(mktemp -p "$WORK")
  run "$2" "$3" >"$a" &
  local pa=$!
  run "$5" "$6" >"$b" &
  local pb=$!
  wait "$pa" "$pb"
  read -r ra _ _ ca <"$a"
  read -r rb _ _ cb <"$b"
  printf '  %-16s %9.0f req/s %5.1f us CPU/request   %-16s %9.0f req/s %5.1f us CPU/request\n' \
    "$1" "$ra" "$ca" "$4" "$rb" "$cb" >&2
  awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.4f", b/a}'
}
BROWSERS="" REFUSALS=""
for round in $(seq 1 "$ROUNDS"); do
  BROWSERS+=" $(at_once nginx $PLAIN "$CHROME" module-browser $MOD "$CHROME")"
  REFUSALS+=" $(at_once nginx-jit-block $JIT "$GPTBOT" module-gptbot $MOD "$GPTBOT")"
done
printf '  browsers  module/nginx %.3f   (target >= 0.95; median of %d rounds, %s)\n' \
  "$(median <<<"$BROWSERS")" "$ROUNDS" "$(range <<<"$BROWSERS")"
printf '  refusals  module/nginx-jit-block %.3f   (target >= 1.0; median of %d rounds, %s)\n' \
  "$(median <<<"$REFUSALS")" "$ROUNDS" "$(range <<<"$REFUSALS")"

# Instructions per request: each nginx alone under callgrind.
echo
echo "user-space instructions per request (callgrind, 5 s at 8 connections):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name port ua <<<"$c"
  file=plain; [ "$port" = $MOD ] && file=module; [ "$port" = $JIT ] && file=jit
  kill "${PID_OF[$port]}" 2>/dev/null || true; sleep 0.5
  # shellcheck disable=SC2086
  valgrind --tool=callgrind ${CALLGRIND_ARGS:-} --callgrind-out-file="$WORK/cg.$name.%p" nginx -c "$WORK/$file.conf" >/dev/null 2>&1 &
  vpid=$!
  PIDS+=($vpid)
  for _ in $(seq 1 360); do curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/page.html" && break; sleep 0.5; done
  wrk -t1 -c8 -d2s -H "User-Agent: $ua" "http://127.0.0.1:$port/page.html" >/dev/null
  callgrind_control -z "$vpid" >/dev/null 2>&1
  out=$(wrk -t1 -c8 -d5s -H "User-Agent: $ua" "http://127.0.0.1:$port/page.html")
  callgrind_control -d "$vpid" >/dev/null 2>&1
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  sleep 0.5
  ir=$(awk '/^summary:/ {print $2}' "$WORK/cg.$name.$vpid.1")
  [ -n "${KEEP_CALLGRIND:-}" ] && mkdir -p "$KEEP_CALLGRIND" && cp "$WORK/cg.$name.$vpid.1" "$KEEP_CALLGRIND/$name.out"
  printf '  %-16s %8d requests  %8.0f instructions/request\n' "$name" "$n" "$(awk -v i="$ir" -v n="$n" 'BEGIN {print i/n}')"
  kill "$vpid" 2>/dev/null || true; wait "$vpid" 2>/dev/null || true
  "${PIN[@]}" nginx -c "$WORK/$file.conf" >/dev/null 2>&1 &
  PIDS+=($!) PID_OF[$port]=$!
  sleep 0.3
done
