-- The training traffic of nginx/pgo/train.sh: each request a random pick
-- of a User-Agent and a path, as a site fronted by the module sees them
-- (browsers most, then search engines, AI crawlers, tools).
local agents = {
  -- browsers (about half the picks)
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80",
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
  -- robots
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
  "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
  "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
  "curl/8.5.0",
  "python-requests/2.31.0",
  "Mozilla/5.0 (compatible; SomeNewCrawler/0.1; +https://crawler.example/bot)",
}
local paths = {
  "/page.html", "/page.html", "/page.html", "/page.html", "/page.html?utm_source=feed",
  "/private/page.html", "/private/a/b.html", "/robots.txt", "/humans.txt", "/caf%C3%A9/menu",
  "/blog/../page.html", "/missing.html", "/drafts/x.html", "/doc.pdf",
  "/.well-known/robotgate/trap/a",
}
-- One request in eight from a User-Agent seldom seen (a browser or robot of
-- another version): the classification of a new User-Agent, as a site sees
-- them, not only the memo's hits.
local seldom = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.%d Safari/537.36",
  "Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.%d",
  "Mozilla/5.0 (Linux; Android %d; SM-S9%d8B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (compatible; ExampleCrawler/%d.%d; +https://crawler%d.example/bot)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/%d.%d; +https://openai.com/gptbot) %d",
  "Scrapy/%d.%d.%d (+https://scrapy.org)",
}
math.randomseed(7)
request = function()
  local ua = agents[math.random(#agents)]
  if math.random(8) == 1 then
    ua = string.format(seldom[math.random(#seldom)], math.random(140), math.random(9999), math.random(999))
  end
  local path = paths[math.random(#paths)]
  return wrk.format("GET", path, { ["User-Agent"] = ua })
end
