# Shared by the load scripts (load.sh, instructions.sh, soak.sh); sourced,
# not run. Every server it configures listens on loopback only.

# The User-Agents of the three traffic kinds: a browser, a bot that the
# benchmark robots.txt allows, and one it blocks.
CHROME='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36'
# What Chrome 124 sends besides its User-Agent on a navigation to a secure
# context (http://127.0.0.1 is one): a browser's request is more than its
# User-Agent (issue #67), so browser traffic sends these (`wrk "${BROWSER_H[@]}"`).
BROWSER_H=(
  -H 'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8'
  -H 'Accept-Language: en-US,en;q=0.9'
  -H 'Accept-Encoding: gzip, deflate, br, zstd'
  -H 'Sec-CH-UA: "Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"'
  -H 'Sec-CH-UA-Mobile: ?0'
  -H 'Sec-CH-UA-Platform: "Windows"'
  -H 'Sec-Fetch-Site: none'
  -H 'Sec-Fetch-Mode: navigate'
  -H 'Sec-Fetch-User: ?1'
  -H 'Sec-Fetch-Dest: document'
  -H 'Upgrade-Insecure-Requests: 1'
)
GOOGLEBOT='Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
GPTBOT='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)'

# start_work [SIGNAL]: WORK, a new temporary directory, and PIDS, an empty
# list of processes to stop. On exit, every process in PIDS gets SIGNAL
# (default TERM), every daemon that wrote a WORK/*.pid file (nginx) gets
# TERM, and WORK is removed.
start_work() {
  WORK=$(mktemp -d)
  PIDS=()
  STOP_SIGNAL=${1:-TERM}
  trap stop_work EXIT
}

stop_work() {
  local p f
  for p in "${PIDS[@]}"; do kill -s "$STOP_SIGNAL" "$p" 2>/dev/null || true; done
  for f in "$WORK"/*.pid; do
    [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}

# install_missing COMMAND:PACKAGE...: installs from Debian the packages whose
# command is not on PATH.
install_missing() {
  local need=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
  done
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

# start_origin WORK PORT: nginx serving WORK/www on PORT with one worker,
# keeping client connections open (pid in WORK/origin.pid). Fails unless the
# origin answers WORK/www/page.html with 200. A third argument adds lines to
# its `http` block.
start_origin() {
  # mktemp -d makes WORK 0700; nginx's workers run as nobody and would answer
  # 403 (writing the origin's error log on every request).
  chmod 755 "$1"
  cat > "$1/origin.conf" <<NGX
worker_processes 1;
pid $1/origin.pid;
error_log $1/origin-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  ${3:-}
  server { listen 127.0.0.1:$2; root $1/www; }
}
NGX
  nginx -c "$1/origin.conf"
  local _
  for _ in $(seq 1 20); do
    curl -sf -o /dev/null "http://127.0.0.1:$2/page.html" && return 0
    sleep 0.25
  done
  echo "start_origin: the origin does not serve $1/www/page.html" >&2
  return 1
}

# nginx_proxy_conf FILE LISTEN ORIGIN WORKERS [HEAD...]: nginx as reverse proxy
# set up as robotgate forwards: keep-alive to the origin, X-Forwarded-For and
# -Proto. HEAD lines (e.g. `daemon off;`) go first.
nginx_proxy_conf() {
  local file=$1 listen=$2 origin=$3 workers=$4
  shift 4
  {
    printf '%s\n' "$@"
    cat <<NGX
worker_processes $workers;
pid $file.pid;
error_log $file-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  upstream origin { server 127.0.0.1:$origin; keepalive 128; }
  server {
    listen 127.0.0.1:$listen;
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
  } > "$file"
}

# robotgate_conf WORK LISTEN ORIGIN THREADS: WORK/robots.txt (GPTBot barred,
# /private/ barred for everyone) and WORK/robotgate.yaml for one site.
robotgate_conf() {
  printf 'User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n' > "$1/robots.txt"
  cat > "$1/robotgate.yaml" <<YML
listen: ["127.0.0.1:$2"]
threads: $4
grace_period: 0
sites:
  - hosts: ["127.0.0.1"]
    default: true
    upstream: "127.0.0.1:$3"
    robots: $1/robots.txt
log:
  violations: $1/violations.jsonl
  level: error
YML
}

# robotgate_verified_conf WORK: WORK/robotgate-verified.yaml, WORK/robotgate.yaml
# (run robotgate_conf first) with a feed of its own placing GPTBot on
# 127.0.0.0/8, as tests/common/mod.rs does. GPTBot from loopback is then a
# verified GPTBot and a disallowed path is the robots.txt refusal (403 block);
# without it, GPTBot from loopback is a spoofed identity (also 403).
robotgate_verified_conf() {
  mkdir -p "$1/feeds"
  printf '{"creationTime": "2026-11-23T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}\n' \
    > "$1/feeds/openai-gptbot.json"
  { cat "$1/robotgate.yaml"; printf 'verify:\n  feeds: %s/feeds\n' "$1"; } > "$1/robotgate-verified.yaml"
}

# ai_crawler_regex: the robots.txt tokens of every `category: ai-crawler`
# entry of robotgate's own bot database (conf/bots.yaml, which the binary
# embeds), as one alternation `Tok1|Tok2|...`, regex metacharacters escaped.
ai_crawler_regex() {
  grep -E 'category: ai-crawler[,}]' conf/bots.yaml \
    | sed -n 's/.*robots_tokens: \[\([^]]*\)\].*/\1/p' \
    | tr ',' '\n' | sed 's/^ *//; s/ *$//; s/^"//; s/"$//' | grep -v '^$' | sort -u \
    | sed 's/[.[\\*^$()+?{|]/\\&/g' | paste -sd '|'
}

# nginx_block_conf FILE LISTEN ORIGIN WORKERS JIT [HEAD...]: nginx_proxy_conf
# plus the usual User-Agent block in front of the proxying: `if
# ($http_user_agent ~* "(...)") { return 403; }` with ai_crawler_regex, and
# `pcre_jit JIT` (on/off).
nginx_block_conf() {
  local file=$1 listen=$2 origin=$3 workers=$4 jit=$5 regex
  shift 5
  regex=$(ai_crawler_regex)
  nginx_proxy_conf "$file" "$listen" "$origin" "$workers" "pcre_jit $jit;" "$@"
  # The `if` goes first in the server block, before `location`.
  awk -v rx="$regex" '{ print } /^    listen 127\.0\.0\.1:/ {
    printf "    if ($http_user_agent ~* \"(%s)\") { return 403; }\n", rx }' "$file" > "$file.tmp"
  mv "$file.tmp" "$file"
}

# to_us WRK_TIME: a latency as wrk prints it (1.23ms, 456.78us, 1.2s) in microseconds.
to_us() {
  awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1000000; else print n }'
}

# cpu_ticks PID...: utime + stime of the processes (all threads), in clock ticks.
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }

# wrk_measure "PIDS" URL CONNECTIONS SECONDS [WRK ARGS...]: one wrk run (one
# thread) against URL, printed as "rps p50_us p99_us cpu_us_per_request",
# the CPU being that of the processes PIDS over the run.
# With WRK_PIN set (e.g. "taskset -c 0"), wrk runs under it.
wrk_measure() {
  local pids=$1 url=$2 conns=$3 secs=$4 before after out n
  shift 4
  # shellcheck disable=SC2086
  before=$(cpu_ticks $pids)
  out=$(${WRK_PIN:-} wrk -t1 -c"$conns" -d"${secs}s" --latency "$@" "$url" 2>&1)
  # shellcheck disable=SC2086
  after=$(cpu_ticks $pids)
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
    "$(to_us "$(awk '$1=="50%" {print $2}' <<<"$out")")" \
    "$(to_us "$(awk '$1=="99%" {print $2}' <<<"$out")")" \
    "$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { print t / hz * 1e6 / n }')"
}

# nginx_page_conf FILE PORT [HTTP] [SERVER] [MAIN]: an nginx with one worker
# serving WORK/www itself on 127.0.0.1:PORT (pid FILE.pid, error log
# FILE.err), with lines added to its main context, http block and server.
nginx_page_conf() {
  cat > "$1" <<NGX
${5:-}
worker_processes 1;
pid $1.pid;
error_log $1.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  ${3:-}
  server {
    listen 127.0.0.1:$2;
    root $WORK/www;
    ${4:-}
  }
}
NGX
}

# median: the median of the numbers on stdin, separated by spaces or lines.
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# haproxy_lua_conf FILE PORT ORIGIN YAML MODULE: the shipped
# examples/edge/haproxy-lua.cfg on PORT in front of ORIGIN, with robotgate.yaml
# YAML, the Lua module MODULE (haproxy/build.sh's robotgate.so) and the
# shipped robotgate.lua, `nbthread 1`; fails if the example no longer names
# what is replaced.
haproxy_lua_conf() {
  local t
  for t in 'bind 127.0.0.1:80' 127.0.0.1:8000 'setenv ROBOTGATE_CONFIG /etc/robotgate/robotgate.yaml' \
    'lua-prepend-path /usr/lib/robotgate/haproxy/?.so cpath' 'lua-load-per-thread /etc/haproxy/robotgate.lua'; do
    grep -qF -- "$t" examples/edge/haproxy-lua.cfg || { echo "haproxy-lua.cfg no longer names $t" >&2; return 1; }
  done
  sed -e "s/^    bind 127\.0\.0\.1:80\$/    bind 127.0.0.1:$2/" -e "s/127\.0\.0\.1:8000/127.0.0.1:$3/" \
    -e "s|/etc/robotgate/robotgate.yaml|$4|" -e "s|/usr/lib/robotgate/haproxy/|${5%/*}/|" \
    -e "s|/etc/haproxy/robotgate.lua|$PWD/examples/edge/robotgate.lua|" -e 's/^global$/global\n    nbthread 1/' \
    examples/edge/haproxy-lua.cfg > "$1"
}

# envoy_without IN OUT FILTER [regex]: Envoy's configuration IN without its
# HTTP filter named FILTER (up to the router), as OUT; with `regex`, a route
# before the site's own answering 403 to a User-Agent with the robots.txt
# token of any AI crawler of robotgate's database (RE2, case-insensitive):
# the usual block an operator writes (edge_cost.sh's envoy-regex).
envoy_without() {
  local filter
  filter=$(printf '%s' "$3" | sed 's/\./\\./g')
  awk -v rx="${4:-}" -v tokens="$(ai_crawler_regex)" -v filter="- name: $filter\$" '
    $0 ~ filter { skip = 1 }
    /- name: envoy\.filters\.http\.router$/ { skip = 0 }
    rx != "" && /- match: \{ prefix: "\/" \}/ {
      pad = $0; sub(/-.*/, "", pad)
      print pad "- match:"
      print pad "    prefix: \"/\""
      print pad "    headers:"
      print pad "      - name: user-agent"
      print pad "        string_match: { safe_regex: { regex: '"'"'(?i).*(" tokens ").*'"'"' } }"
      print pad "  direct_response: { status: 403, body: { inline_string: \"Forbidden\\n\" } }"
    }
    # The alternation compiles to an RE2 program past Envoy default limit
    # (100): raised, as an operator writing this route has to, in the
    # file own runtime layers if it has them.
    rx != "" && /^  layers:$/ { print; print "    - name: regex"; print "      static_layer: { re2.max_program_size.error_level: 4096 }"; layered = 1; next }
    !skip { print }
    END {
      if (rx != "" && !layered) {
        print ""; print "layered_runtime:"; print "  layers:"; print "    - name: regex"
        print "      static_layer: { re2.max_program_size.error_level: 4096 }"
      }
    }' "$1" > "$2"
}

# envoy_module_conf FILE PORT ADMIN ORIGIN YAML: the shipped
# examples/edge/envoy-module.yaml listening on PORT (its admin on ADMIN) in
# front of ORIGIN, the module reading YAML (its metrics listener on a port
# the system picks: not asked).
envoy_module_conf() {
  local t
  for t in 'socket_address: { address: 0.0.0.0, port_value: 80 }' 'port_value: 8000 }' 'port_value: 9901 }' \
    'value: /etc/robotgate/robotgate.yaml'; do
    grep -qF -- "$t" examples/edge/envoy-module.yaml || { echo "envoy-module.yaml no longer names $t" >&2; return 1; }
  done
  sed -e "s/socket_address: { address: 0\.0\.0\.0, port_value: 80 }/socket_address: { address: 127.0.0.1, port_value: $2 }/" \
    -e "s/port_value: 8000 }/port_value: $4 }/" -e "s/port_value: 9901 }/port_value: $3 }/" \
    -e "s|value: /etc/robotgate/robotgate.yaml|value: $5|" -e "s|config: /etc/robotgate/robotgate.yaml|config: \"$5\"|" \
    -e "s/port_value: 9103 }/port_value: 0 }/" examples/edge/envoy-module.yaml > "$1"
}
