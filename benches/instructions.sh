#!/usr/bin/env bash
# User-space instructions per request, counted by valgrind's callgrind, for
# nginx as reverse proxy, the bare Pingora passthrough, the passthrough doing
# robotgate's forwarding work (`forward`: its timeouts and X-Forwarded-*
# headers), and robotgate (browser traffic; bot allowed; bot blocked, by
# robots.txt, GPTBot verified by a loopback feed; bot spoofed: GPTBot from an
# address outside its feeds, refused as a spoofed identity). Instruction
# counts do not depend on what else the machine is doing, so this tells apart differences of a few percent
# that requests/s on a shared 2-core machine cannot (see benches/load.sh).
#
#   bash benches/instructions.sh [SECONDS] [CONNECTIONS]   (defaults: 10, 8)
#
# With KEEP=DIR, each case's callgrind output is kept as DIR/NAME.callgrind,
# for `callgrind_annotate DIR/robotgate-browser.callgrind`. With ONLY=REGEX,
# only the cases whose name matches (e.g. ONLY=robotgate).
#
# Each proxy runs alone under callgrind in front of one nginx origin; wrk
# warms it up for 3 s, the counters are zeroed, wrk loads it for SECONDS
# (default 10), the counters are dumped and divided by the requests wrk
# made. With HAPROXY=1, also HAProxy (Debian's 2.6, `nbthread 1`) alone,
# with its `hdr_reg` User-Agent block, and with the Lua module (issue #69:
# a browser, GPTBot refused), beside nginx's figures. With ENVOY=1, also
# Envoy (1.40 from tests/parsers/.venv, `--concurrency 1`, every thread of
# its counted) with the shipped envoy-module.yaml without the module, with
# an RE2 route refusing GPTBot, and with the module (a browser, GPTBot
# refused). Kernel work is not counted: strace shows nginx and Pingora making the
# same system calls per proxied request (two reads, two writes, one socket
# check). Installs wrk, nginx and valgrind from Debian if missing. Loopback
# only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CONNS=${2:-8}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light valgrind:valgrind curl:curl
# NO_BUILD=1: measure the binaries in target/release as they are (the ones
# the tests built, or another checkout's through a target symlink).
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin robotgate --example passthrough >/dev/null 2>&1
if [ -n "${HAPROXY:-}" ]; then
  install_missing haproxy:haproxy
  LUA_MODULE=$(bash haproxy/build.sh 2>/dev/null | tail -n 1)
fi
if [ -n "${ENVOY:-}" ]; then
  ENVOY_BIN=$(find tests/parsers/.venv/lib -path '*/site-packages/envoy/_bin/envoy' -type f 2>/dev/null | head -n 1)
  [ -n "$ENVOY_BIN" ] || { echo "no Envoy in tests/parsers/.venv (benches/edge_cost.sh installs it)" >&2; exit 1; }
  ENVOY_MODULE=$(bash envoy/build.sh 2>/dev/null | tail -n 1)
  export ENVOY_DYNAMIC_MODULES_SEARCH_PATH="${ENVOY_MODULE%/*}"
fi

start_work KILL

ORIGIN=18300 PROXY=18301
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
# The page as HTML, so that `indexing.observe` reads it.
start_origin "$WORK" "$ORIGIN" 'types { text/html html; }' 
# nginx in one process (no master) so that callgrind sees its worker.
nginx_proxy_conf "$WORK/proxy.conf" "$PROXY" "$ORIGIN" 1 'daemon off;' 'master_process off;'
nginx_block_conf "$WORK/block-jit.conf" "$PROXY" "$ORIGIN" 1 on 'daemon off;' 'master_process off;'
robotgate_conf "$WORK" "$PROXY" "$ORIGIN" 1
robotgate_verified_conf "$WORK"
# Indexing rules (issue #42): 100 rules, one of which covers the page
# (`/*.html$` for Googlebot); and `observe: true` alone.
{
  echo "    indexing:"
  echo "      rules:"
  for i in $(seq 1 98); do echo "        - {path: \"/section$i/\", set: \"noindex\"}"; done
  echo "        - {path: \"/*.pdf\$\", set: \"noarchive\"}"
  echo "        - {path: \"/*.html\$\", bots: [Googlebot], set: \"max-snippet:50\"}"
} > "$WORK/indexing-rules.yaml"
awk -v rules="$WORK/indexing-rules.yaml" '{ print } /^    robots:/ { while ((getline l < rules) > 0) print l }' \
  "$WORK/robotgate.yaml" > "$WORK/robotgate-rules100.yaml"
awk '{ print } /^    robots:/ { print "    indexing:"; print "      observe: true" }' \
  "$WORK/robotgate.yaml" > "$WORK/robotgate-observe.yaml"

measure() { # name user-agent command...
  local name=$1 ua=$2 pid out n ir
  shift 2
  if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then return 0; fi
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$name.%p" "$@" >"$WORK/$name.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  # Up to 5 minutes: robotgate's start (the classifier's automata, a
  # second natively) takes about two under callgrind.
  for _ in $(seq 1 600); do
    curl -s -o /dev/null -m 2 "http://127.0.0.1:$PROXY/page.html" && break
    sleep 0.5
  done
  local extra=()
  if [ "$ua" = "$CHROME" ]; then extra=("${BROWSER_H[@]}"); fi
  wrk -t1 -c"$CONNS" -d3s -H "User-Agent: $ua" "${extra[@]}" "http://127.0.0.1:$PROXY/page.html" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -H "User-Agent: $ua" "${extra[@]}" "http://127.0.0.1:$PROXY/page.html")
  callgrind_control -d "$pid" >/dev/null 2>&1
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  if [[ $name != *blocked && $name != *spoofed ]] && grep -q 'Non-2xx' <<<"$out"; then echo "$name: some answers were not 2xx/3xx" >&2; fi
  # The dump made just now (file ".1"): everything since the counters were zeroed.
  for _ in $(seq 1 20); do [ -s "$WORK/cg.$name.$pid.1" ] && break; sleep 0.5; done
  ir=$(awk '/^summary:/ {print $2}' "$WORK/cg.$name.$pid.1")
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK/cg.$name.$pid.1" "$KEEP/$name.callgrind"; fi
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
measure robotgate-browser-rules100 "$CHROME" target/release/robotgate serve --config "$WORK/robotgate-rules100.yaml"
measure robotgate-browser-observe "$CHROME" target/release/robotgate serve --config "$WORK/robotgate-observe.yaml"
measure robotgate-bot-allowed "$GOOGLEBOT" target/release/robotgate serve --config "$WORK/robotgate.yaml"
measure robotgate-bot-blocked "$GPTBOT" target/release/robotgate serve --config "$WORK/robotgate-verified.yaml"
measure robotgate-bot-spoofed "$GPTBOT" target/release/robotgate serve --config "$WORK/robotgate.yaml"
# The refusals' floor: nginx's User-Agent block (PCRE JIT on) and the bare
# Pingora passthrough refusing GPTBot from `request_filter` (see block.sh).
measure nginx-jit-blocked "$GPTBOT" nginx -c "$WORK/block-jit.conf"
measure passthrough-refuse-blocked "$GPTBOT" target/release/examples/passthrough "127.0.0.1:$PROXY" "127.0.0.1:$ORIGIN" 1 refuse
if [ -n "${HAPROXY:-}" ]; then
  # Alone and with the block: the module's file without its Lua lines, so
  # that all three log each request alike (the shipped file's httplog).
  haproxy_lua_conf "$WORK/haproxy-lua.cfg" "$PROXY" "$ORIGIN" "$WORK/robotgate-verified.yaml" "$LUA_MODULE"
  grep -v -E 'lua|ROBOTGATE_CONFIG' "$WORK/haproxy-lua.cfg" > "$WORK/haproxy.cfg"
  awk -v rx="$(ai_crawler_regex)" '{ print } /^    bind 127/ { print "    http-request deny deny_status 403 if { hdr_reg(User-Agent) -i \047(" rx ")\047 }" }' \
    "$WORK/haproxy.cfg" > "$WORK/haproxy-regex.cfg"
  haproxy -c -q -f "$WORK/haproxy-regex.cfg"
  measure haproxy "$CHROME" haproxy -db -f "$WORK/haproxy.cfg"
  measure haproxy-regex-blocked "$GPTBOT" haproxy -db -f "$WORK/haproxy-regex.cfg"
  measure haproxy-lua-browser "$CHROME" haproxy -db -f "$WORK/haproxy-lua.cfg"
  measure haproxy-lua-blocked "$GPTBOT" haproxy -db -f "$WORK/haproxy-lua.cfg"
fi
if [ -n "${ENVOY:-}" ]; then
  envoy_module_conf "$WORK/envoy-module.yaml" "$PROXY" 18302 "$ORIGIN" "$WORK/robotgate-verified.yaml"
  envoy_without "$WORK/envoy-module.yaml" "$WORK/envoy.yaml" robotgate
  envoy_without "$WORK/envoy-module.yaml" "$WORK/envoy-regex.yaml" robotgate regex
  envoy_run=("$ENVOY_BIN" --concurrency 1 --disable-hot-restart -l error -c)
  measure envoy "$CHROME" "${envoy_run[@]}" "$WORK/envoy.yaml"
  measure envoy-regex-blocked "$GPTBOT" "${envoy_run[@]}" "$WORK/envoy-regex.yaml"
  measure envoy-module-browser "$CHROME" "${envoy_run[@]}" "$WORK/envoy-module.yaml"
  measure envoy-module-blocked "$GPTBOT" "${envoy_run[@]}" "$WORK/envoy-module.yaml"
fi
[ -f "$WORK/result.nginx" ] && [ -f "$WORK/result.passthrough" ] && [ -f "$WORK/result.robotgate-browser" ] &&
  [ -f "$WORK/result.passthrough-forward" ] &&
awk -v a="$(cat "$WORK/result.robotgate-browser")" -v b="$(cat "$WORK/result.passthrough")" \
  -v c="$(cat "$WORK/result.nginx")" -v d="$(cat "$WORK/result.passthrough-forward")" \
  'BEGIN { printf "  robotgate/passthrough %.3f   robotgate/passthrough-forward %.3f   passthrough/nginx %.3f\n  (ratios of instructions per request: lower is cheaper)\n", a/b, a/d, b/c }'  || true
