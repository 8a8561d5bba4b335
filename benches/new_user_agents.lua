-- wrk script: every request from a User-Agent not seen before (three forms
-- with random versions), so each is a memo miss and a classification.
local forms = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.%d Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_%d_%d) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/%d.4 Safari/605.1.15",
  "Mozilla/5.0 (compatible; SomeBot/%d.%d; +https://bot%d.example/)",
}
local n = 0
request = function()
  n = n + 1
  local ua = string.format(forms[n % #forms + 1], math.random(200), math.random(9999), math.random(999))
  return wrk.format("GET", "/page.html", { ["User-Agent"] = ua })
end
