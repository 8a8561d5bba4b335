-- robotgate inside HAProxy: the native Lua module (haproxy/, built by
-- `bash haproxy/build.sh`) decides each request in HAProxy's own threads,
-- with no agent and no exchange. haproxy-lua.cfg beside this file loads it:
--
--   global
--       setenv ROBOTGATE_CONFIG /etc/robotgate/robotgate.yaml
--       lua-prepend-path /usr/lib/robotgate/haproxy/?.so cpath
--       lua-load-per-thread /etc/haproxy/robotgate.lua
--
-- robotgate.yaml is loaded once for the process, however many threads load
-- this file, and kept current by a thread of the module's. One that does
-- not load is an error here, and HAProxy does not start.
-- Manual: docs/edge.md ("HAProxy (Lua module)").

local robotgate = require("robotgate")
local loaded, gate = pcall(robotgate.load, os.getenv("ROBOTGATE_CONFIG") or "/etc/robotgate/robotgate.yaml")
if not loaded then
  -- As text: HAProxy prints a Lua error only when it is a string.
  error(tostring(gate), 0)
end

-- How long a parked request sleeps between looks at its lookup (ms):
-- core.msleep yields to HAProxy's scheduler meanwhile.
local PARKED_LOOK_MS = 1

-- http-request lua.robotgate: every fact is HAProxy's own. The client is
-- `src`, the connection's peer, never a header; behind another proxy, set
-- it first (`http-request set-src` from that proxy's header, for its
-- address only).
local function decide(txn)
  local f = txn.f
  local src, method, pathq, headers, ssl = f:src(), f:method(), f:pathq(), f:req_hdrs_bin(), f:ssl_fc()
  local a, b, c = gate:decide(src, method, pathq, headers, ssl)
  while a == "wait" do
    -- Reverse DNS on a helper thread of the module's.
    repeat core.msleep(PARKED_LOOK_MS) until b:ready()
    a, b, c = gate:decide(src, method, pathq, headers, ssl, b)
  end
  if a == nil then
    return
  end
  if a == "pass" then
    -- What the origin's answer gets (lua.robotgate-response).
    txn:set_priv({ tags = b, usage = c })
    return
  end
  -- robotgate's own answer: its status, headers and body.
  local reply = txn:reply()
  reply:set_status(a)
  for i = 1, #b, 2 do
    reply:add_header(b[i], b[i + 1])
  end
  reply:set_body(c)
  txn:done(reply)
end

-- http-response lua.robotgate-response: a pass's X-Robots-Tag values
-- beside the origin's own, and its Content-Usage unless the origin set one.
local function respond(txn)
  local pass = txn:get_priv()
  if type(pass) ~= "table" then
    return
  end
  if pass.tags then
    for _, tag in ipairs(pass.tags) do
      txn.http:res_add_header("X-Robots-Tag", tag)
    end
  end
  if pass.usage and txn.http:res_get_headers()["content-usage"] == nil then
    txn.http:res_add_header("Content-Usage", pass.usage)
  end
end

-- http-request use-service lua.robotgate-metrics (haproxy-lua.cfg's
-- robotgate-metrics frontend, on loopback): the proxy's metrics, counted by
-- every thread, as Prometheus text.
local function metrics(applet)
  local text = gate:metrics()
  applet:set_status(200)
  applet:add_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
  applet:add_header("content-length", tostring(#text))
  applet:start_response()
  applet:send(text)
end

core.register_action("robotgate", { "http-req" }, decide, 0)
core.register_action("robotgate-response", { "http-res" }, respond, 0)
core.register_service("robotgate-metrics", "http", metrics)
