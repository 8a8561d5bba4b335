#!/usr/bin/env bash
# HTTP/2 against HTTP/1.1 through robotgate's HTTPS listener (issue #20), on
# loopback with h2load (Debian's nghttp2-client): a browser's requests for a
# 1 KiB page, proxied to an nginx origin over HTTP/1.1.
#
#   h2    1 connection x 64 concurrent streams, then 4 x 16;
#   h1    64 connections (h2load --h1), TLS each.
#
# Alternates the cases for several rounds and prints the median requests/s,
# then robotgate's idle RSS with the HTTPS listener.
#
#   bash benches/h2.sh [ROUNDS] [REQUESTS]   (defaults: 3, 200000)
#
# One robotgate thread. Installs nghttp2-client, nginx, curl and openssl from
# Debian if missing. Loopback only; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
N=${2:-200000}

. benches/common.sh
install_missing h2load:nghttp2-client nginx:nginx-light curl:curl openssl:openssl
cargo build --release --bin robotgate >/dev/null 2>&1

start_work

ORIGIN=18140 PLAIN=18141 TLS=18142
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
robotgate_conf "$WORK" "$PLAIN" "$ORIGIN" 1
python3 - "$WORK/robotgate.yaml" "$TLS" "$WORK" <<'PY'
import sys
path, port, work = sys.argv[1:]
text = open(path).read()
text = text.replace('listen: ["127.0.0.1:%s"]' % text.split('listen: ["127.0.0.1:')[1].split('"')[0],
    'listen:\n  - "127.0.0.1:%s"\n  - address: "127.0.0.1:%s"\n    tls: { cert: %s/cert.pem, key: %s/key.pem }'
    % (text.split('listen: ["127.0.0.1:')[1].split('"')[0], port, work, work))
open(path, "w").write(text)
PY
target/release/robotgate serve --config "$WORK/robotgate.yaml" --pid-file "$WORK/rg.pid" \
  --upgrade-sock "$WORK/rg.sock" >/dev/null 2>"$WORK/rg.log" &
PIDS+=($!)
GATE_PID=$!
for _ in $(seq 1 40); do curl -sk -o /dev/null "https://localhost:$TLS/page.html" && break; sleep 0.25; done
v=$(curl -sk --http2 -o /dev/null -w '%{http_version} %{http_code}' -A "$CHROME" "https://localhost:$TLS/page.html")
[ "$v" = "2 200" ] || { echo "HTTP/2 through robotgate answered '$v'" >&2; cat "$WORK/rg.log" >&2; exit 1; }
sleep 1
idle_rss=$(awk '/VmRSS/ {print $2}' "/proc/$GATE_PID/status")

run() { # args... -> req/s
  h2load -n "$N" -H "user-agent: $CHROME" "$@" "https://localhost:$TLS/page.html" 2>&1 \
    | awk '/^finished in/ {gsub(",", "", $4); print $4} /requests:/ && /failed/ {for (i=1;i<=NF;i++) if ($(i+1) ~ /^failed/) f=$i} END {if (f+0 > 0) print "FAILED " f > "/dev/stderr"}'
}
CASES=("h2-1conn-64streams|-c 1 -m 64" "h2-4conn-16streams|-c 4 -m 16" "h1-64conn|--h1 -c 64 -m 1")
declare -A RPS
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name args <<<"$c"
    # shellcheck disable=SC2086
    rps=$(run $args)
    RPS[$name]="${RPS[$name]:-} $rps"
    printf 'round %d %-20s %9.0f req/s\n' "$round" "$name" "$rps"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "medians over $ROUNDS rounds ($N requests each, 1 robotgate thread, TLS 1.3, 1 KiB page):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  printf '  %-20s %9.0f req/s\n' "$name" "$(median <<<"${RPS[$name]}")"
done
echo "  robotgate idle RSS with an HTTPS listener: $((idle_rss / 1024)) MB"
