#!/usr/bin/env bash
# How long requests to nginx with the module wait while robots.txt is
# edited in place (issue 52: the target is no request over 50 ms).
#
#   bash benches/nginx_edit_stall.sh [SECONDS_OF_EDIT]
#
# nginx with one worker and the module serves a 1 KiB page from its own
# root, half the requests in a `robotgate off` location. A client sends a
# request every 5 ms (a new connection each, as most crawlers and many
# browsers' first requests do) for 2 s before, SECONDS_OF_EDIT (default 4)
# during, and 5 s after an editor rewrites robots.txt in place (truncated,
# then one byte every 50 ms), and prints the slowest request and the count
# over 50 ms in each phase, and when the new robots.txt took effect.
#
# Builds the module (nginx/build.sh); loopback only; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
EDIT=${1:-4}
MODULE=$(bash nginx/build.sh 2>/dev/null | tail -n 1)
start_work
chmod 755 "$WORK"; mkdir -p "$WORK/www/off"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
cp "$WORK/www/page.html" "$WORK/www/off/page.html"
robotgate_conf "$WORK" 1 1 1
PORT=18561
nginx_page_conf "$WORK/module.conf" $PORT "robotgate_config $WORK/robotgate.yaml;" \
  "robotgate on; location /off/ { robotgate off; }" "load_module $MODULE;"
nginx -c "$WORK/module.conf"
sleep 1
python3 - "$PORT" "$WORK/robots.txt" "$EDIT" <<'PY'
import socket, sys, threading, time
port, robots, edit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
ua = "FooCrawler/1.0 (+https://crawler.example/bot)"

def get(path):
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n".encode())
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return time.monotonic() - t, int(out.split(b" ", 2)[1])

new = b"User-agent: *\nDisallow: /private/\nDisallow: /page.html\n"
per_byte = edit / len(new)
phase = ["before"]

def editor():
    time.sleep(2)
    phase[0] = "during"
    with open(robots, "r+b") as f:
        f.truncate(0)
        for b in new:
            f.write(bytes([b])); f.flush()
            time.sleep(per_byte)
    phase[0] = "after"
    done[0] = time.monotonic()

done = [None]
threading.Thread(target=editor, daemon=True).start()
times = {"before": [], "during": [], "after": []}
took = None
end = time.monotonic() + 2 + edit + 5
i = 0
while time.monotonic() < end:
    path = "/off/page.html" if i % 2 else "/page.html"
    i += 1
    p = phase[0]
    dt, status = get(path)
    times[p].append(dt)
    if p == "after" and path == "/page.html" and status == 403 and took is None:
        took = time.monotonic() - done[0]
    time.sleep(0.005)
for p, ts in times.items():
    ts.sort()
    if not ts:
        continue
    p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))]
    print(f"{p:6}: {len(ts)} requests, slowest {max(ts)*1000:.1f} ms, p99 {p99*1000:.2f} ms, "
          f"over 50 ms: {sum(t > 0.05 for t in ts)}")
print("new robots.txt in force", f"{took*1000:.0f} ms after the last byte" if took is not None else "NOT within 5 s")
PY
stop_work
