#!/usr/bin/env bash
# Slow clients on loopback: an honest client's latency through robotgate
# with none, then with CONNS connections trickling request heads one byte a
# second (slowloris), and robotgate's memory with them open. robotgate runs
# with its defaults (limits.request_head_timeout 20 s), so each trickling
# connection is cut at its head deadline and the trickler opens a new one at
# once: CONNS stay open all along, as an attacker would keep them.
#
#   bash benches/trickle.sh [ROUNDS] [SECONDS] [CONNS] [THREADS]
#   ROBOTGATE_BIN=path/to/release/robotgate bash benches/trickle.sh ...
#
# Prints, per round and as medians: requests/s, p50 and p99 of wrk (one
# thread, 16 connections, a 1 KiB page) without and with the trickling;
# robotgate's RSS before, with the connections open, and its peak; how many
# trickling connections were open and how many robotgate cut.
#
# Installs wrk, nginx and python3 from Debian if missing. Loopback only;
# stops everything it started; bounded by ROUNDS x (2 x SECONDS + 30) s.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-10}
CONNS=${3:-1000}
THREADS=${4:-1}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light curl:curl python3:python3
# ROBOTGATE_BIN: a release binary built already (the build is then skipped).
if [ -z "${ROBOTGATE_BIN:-}" ]; then
  cargo build --release --bin robotgate >/dev/null 2>&1
fi
BIN=${ROBOTGATE_BIN:-${CARGO_TARGET_DIR:-target}/release/robotgate}

# Every trickling connection is a descriptor in robotgate and one in the trickler.
ulimit -n $((CONNS * 2 + 4096))

start_work
ORIGIN=18110 GATE=18111
mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"
robotgate_conf "$WORK" "$GATE" "$ORIGIN" "$THREADS"
"$BIN" serve --config "$WORK/robotgate.yaml" --pid-file "$WORK/rg.pid" --upgrade-sock "$WORK/rg.sock" \
  >/dev/null 2>"$WORK/robotgate.err" &
RG=$!
PIDS+=("$RG")
for _ in $(seq 1 40); do
  curl -sf -o /dev/null "http://127.0.0.1:$GATE/page.html" && break
  sleep 0.25
done

# The trickler: CONNS connections, one byte a second each, a new one for
# each that robotgate closes. Writes "open cut" to its status file each second.
cat > "$WORK/trickle.py" <<'PY'
import selectors, socket, sys, time
port, n, secs, status = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slowloris\r\nX-Slow: "
sel = selectors.DefaultSelector()
conns = {}
cut = 0
def open_one():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setblocking(False)
    conns[s] = 0
    sel.register(s, selectors.EVENT_READ)
def close(s):
    global cut
    sel.unregister(s)
    s.close()
    del conns[s]
    cut += 1
for _ in range(n):
    open_one()
end = time.monotonic() + secs
next_tick = time.monotonic()
while time.monotonic() < end:
    for key, _ in sel.select(timeout=max(0.0, next_tick - time.monotonic())):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            close(key.fileobj)
    if time.monotonic() >= next_tick:
        for s in list(conns):
            i = conns[s]
            byte = head[i:i + 1] or b"a"
            try:
                s.send(byte)
                conns[s] = i + 1
            except OSError:
                close(s)
        while len(conns) < n:
            open_one()
        with open(status, "w") as f:
            f.write(f"{len(conns)} {cut}\n")
        next_tick += 1.0
PY

run_wrk() { # -> "rps p50_us p99_us"
  local out
  out=$(wrk -t1 -c16 -d"${SECS}s" --latency -H "User-Agent: $CHROME" "http://127.0.0.1:$GATE/page.html" 2>&1)
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out") $(to_us "$(awk '$1=="50%" {print $2}' <<<"$out")") $(to_us "$(awk '$1=="99%" {print $2}' <<<"$out")")"
}
to_us() { # wrk prints 1.23ms / 456.78us / 1.2s
  awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1000000; else print n }'
}
kib() { awk -v k="$1" '/^'"$1"':/ {print $2}' "/proc/$RG/status"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A M
add() { M[$1]="${M[$1]:-} $2"; }
for round in $(seq 1 "$ROUNDS"); do
  rss_idle=$(kib VmRSS)
  read -r rps p50 p99 < <(run_wrk)
  add base_rps "$rps"; add base_p50 "$p50"; add base_p99 "$p99"
  printf 'round %d  no trickling          %8.0f req/s  p50 %6.0f us  p99 %6.0f us  RSS %6.1f MiB\n' \
    "$round" "$rps" "$p50" "$p99" "$(awk -v k="$rss_idle" 'BEGIN {print k/1024}')"

  rm -f "$WORK/trickle.status"
  python3 "$WORK/trickle.py" "$GATE" "$CONNS" $((SECS + 25)) "$WORK/trickle.status" &
  TR=$!
  PIDS+=("$TR")
  # Past the first head deadline (20 s), so that cutting and reopening is under way.
  sleep 22
  read -r open_before cut_before < "$WORK/trickle.status"
  rss_open=$(kib VmRSS)
  read -r rps p50 p99 < <(run_wrk)
  read -r open_after cut_after < "$WORK/trickle.status"
  rss_after=$(kib VmRSS)
  wait "$TR" || true
  add tr_rps "$rps"; add tr_p50 "$p50"; add tr_p99 "$p99"
  add rss_open "$(( (rss_open > rss_after ? rss_open : rss_after) ))"
  add open "$open_before"
  printf 'round %d  %d trickling (open %d..%d, %d cut so far)  %8.0f req/s  p50 %6.0f us  p99 %6.0f us  RSS %6.1f MiB\n' \
    "$round" "$CONNS" "$open_before" "$open_after" "$cut_after" "$rps" "$p50" "$p99" \
    "$(awk -v k="$rss_open" 'BEGIN {print k/1024}')"
  sleep 2
done

echo
echo "medians over $ROUNDS rounds ($SECS s of wrk -t1 -c16 each, $THREADS worker thread(s), 1 KiB page):"
printf '  no trickling            %8.0f req/s  p50 %6.0f us  p99 %6.0f us\n' \
  "$(median <<<"${M[base_rps]}")" "$(median <<<"${M[base_p50]}")" "$(median <<<"${M[base_p99]}")"
printf '  %5d trickling         %8.0f req/s  p50 %6.0f us  p99 %6.0f us\n' "$CONNS" \
  "$(median <<<"${M[tr_rps]}")" "$(median <<<"${M[tr_p50]}")" "$(median <<<"${M[tr_p99]}")"
printf '  robotgate RSS with them open: %.1f MiB (median); peak over the run: %.1f MiB\n' \
  "$(awk -v k="$(median <<<"${M[rss_open]}")" 'BEGIN {print k/1024}')" "$(awk -v k="$(kib VmHWM)" 'BEGIN {print k/1024}')"
printf '  head-deadline cuts counted by robotgate: %s\n' \
  "$(grep -c 'request head not complete' "$WORK/robotgate.err" || true)"
