#!/usr/bin/env bash
# HAProxy with robotgate's Lua module in front of many sites (issue #69):
# what the module's watch costs an idle HAProxy, and how soon one
# customer's robots.txt edit is in force.
#
#   bash benches/module_many_sites.sh [SITES] [EDITS] [IDLE_SECONDS]
#
# Generates SITES sites (default 10,000) with benches/sites.py (as
# nginx_many_sites.sh does: a robots.txt of 5 to 40 lines each, in a
# directory of its own), starts Debian's HAProxy with the shipped
# haproxy-lua.cfg and robotgate.lua (one thread) and the module that
# haproxy/build.sh builds (MODULE=path/robotgate.so for another), and
# prints:
#
# - start: seconds from exec to the last site's robots.txt answered;
# - idle: HAProxy's CPU (user + system, every thread) over IDLE_SECONDS
#   (default 20) with no traffic, in milliseconds a second;
# - edit: EDITS (default 10) edits, each a random site's robots.txt written
#   beside it and renamed over it with a new `Disallow: /edit-K/`; the time
#   from the rename until a crawler's request for /edit-K/ is refused
#   (polled every 5 ms): the median and the slowest.
#
# Loopback only; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
SITES=${1:-10000}
EDITS=${2:-10}
IDLE=${3:-20}
PORT=${PORT:-18581}
ORIGIN=${ORIGIN:-18582}
install_missing haproxy:haproxy
MODULE=${MODULE:-$(bash haproxy/build.sh 2>/dev/null | tail -n 1)}
start_work
mkdir -p "$WORK/www"
echo page > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"
python3 benches/sites.py "$WORK" "$SITES"
haproxy_lua_conf "$WORK/haproxy.cfg" "$PORT" "$ORIGIN" "$WORK/robotgate.yaml" "$MODULE"
begun=$(date +%s.%N)
haproxy -db -f "$WORK/haproxy.cfg" > "$WORK/haproxy.log" 2>&1 &
PID=$!
PIDS+=("$PID")
python3 - "$WORK" "$SITES" "$PORT" "$PID" "$EDITS" "$IDLE" "$begun" <<'PY'
import http.client, os, random, statistics, sys, time
work, n, port, pid, edits, idle, begun = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
CRAWLER = "FooCrawler/1.0 (+https://crawler.example/bot)"

def status(host, path):
    # A new loopback address each, so no rate limit answers in the rule's place.
    src = (f"127.{random.randrange(1, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}", 0)
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=src)
        c.request("GET", path, headers={"Host": host, "User-Agent": CRAWLER})
        s = c.getresponse().status
        c.close()
        return s
    except OSError:
        return None

last = f"s{n - 1}.example"
deadline = time.time() + 600
while status(last, "/robots.txt") != 200:
    if time.time() > deadline:
        sys.exit("HAProxy did not answer the last site's robots.txt within 600 s")
    time.sleep(0.05)
print(f"start: {time.time() - begun:.2f} s to the last of {n} sites' robots.txt")

def cpu_ms():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

time.sleep(2)
before = cpu_ms()
time.sleep(idle)
print(f"idle: {(cpu_ms() - before) / idle:.1f} ms of CPU a second ({idle:.0f} s, no traffic)")

rng = random.Random(7)
took = []
for k in range(edits):
    i = rng.randrange(n)
    host = f"s{i}.example"
    robots = os.path.join(work, "www-sites", host, "robots.txt")
    with open(robots) as f:
        text = f.read()
    new = robots + ".new"
    with open(new, "w") as f:
        f.write(f"User-agent: FooCrawler\nDisallow: /edit-{k}/\n\n" + text)
    t = time.time()
    os.rename(new, robots)
    while status(host, f"/edit-{k}/x") != 403:
        if time.time() - t > 30:
            sys.exit(f"edit {k} of {host} not in force within 30 s")
        time.sleep(0.005)
    took.append(time.time() - t)
    time.sleep(0.3)
print(f"edit: in force after {statistics.median(took) * 1000:.0f} ms (median of {edits}), slowest {max(took) * 1000:.0f} ms")
PY
