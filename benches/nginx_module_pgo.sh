#!/usr/bin/env bash
# What the module's profile (nginx/pgo/module.profdata) is worth: the module
# built with it (nginx/build.sh) against the module built without it
# (ROBOTGATE_PGO=off, in target/nopgo), each in its own nginx serving a
# 1 KiB page itself, the two at once on one core (as nginx_module.sh's "at
# once" rounds), for three kinds of traffic: a browser, GPTBot refused by
# robots.txt, and a new User-Agent on every request (new_user_agents.lua:
# a memo miss and a classification each). Prints per kind the rounds'
# ratios (with / without) and their median.
#
#   bash benches/nginx_module_pgo.sh [ROUNDS] [SECONDS]   (defaults: 5, 5)
#
# Loopback only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
CONNS=64

. benches/common.sh
install_missing wrk:wrk curl:curl
WITH=$(bash nginx/build.sh 2>/dev/null | tail -n 1)
WITHOUT=$(CARGO_TARGET_DIR=target/nopgo ROBOTGATE_PGO=off bash nginx/build.sh 2>/dev/null | tail -n 1)

start_work
chmod 755 "$WORK"
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
robotgate_conf "$WORK" 1 1 1
robotgate_verified_conf "$WORK"
A=18543 B=18544
conf() { # file port module
  nginx_page_conf "$1" "$2" "robotgate_config $WORK/robotgate-verified.yaml;" "robotgate on;" "load_module $3;
daemon off;
master_process off;"
}
conf "$WORK/with.conf" $A "$WITH"
conf "$WORK/without.conf" $B "$WITHOUT"
PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN=(taskset -c 1)
  export WRK_PIN="taskset -c 0"
fi
declare -A PID_OF
for c in with:$A without:$B; do
  "${PIN[@]}" nginx -c "$WORK/${c%%:*}.conf" >/dev/null 2>&1 &
  PIDS+=($!) PID_OF[${c#*:}]=$!
done
for port in $A $B; do
  for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/page.html" && break; sleep 0.25; done
done
run() { # port wrk-args...
  wrk_measure "${PID_OF[$1]}" "http://127.0.0.1:$1/page.html" "$CONNS" "$SECS" "${@:2}"
}
echo "the module with its profile / without, at once on one core ($ROUNDS rounds of $SECS s, $CONNS connections each):"
for kind in browser gptbot new-user-agents; do
  case $kind in
    browser) args=(-H "User-Agent: $CHROME") ;;
    gptbot) args=(-H "User-Agent: $GPTBOT") ;;
    new-user-agents) args=(-s benches/new_user_agents.lua) ;;
  esac
  ratios=""
  for _ in $(seq 1 "$ROUNDS"); do
    a=$(mktemp -p "$WORK") b=$(mktemp -p "$WORK")
    run $A "${args[@]}" >"$a" &
    pa=$!
    run $B "${args[@]}" >"$b" &
    pb=$!
    wait "$pa" "$pb"
    read -r ra _ _ _ <"$a"
    read -r rb _ _ _ <"$b"
    ratios+=" $(awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.3f", a/b}')"
  done
  printf '  %-16s %.3f   (median; rounds:%s)\n' "$kind" "$(median <<<"$ratios")" "$ratios"
done
