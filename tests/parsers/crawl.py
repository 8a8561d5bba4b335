#!/usr/bin/env python3
"""Crawl a site with Scrapy, obeying robots.txt, for tests/crawlers.rs.

Usage: crawl.py START_URL PARSER USER_AGENT
PARSER is a Scrapy ROBOTSTXT_PARSER (scrapy.robotstxt.ProtegoRobotParser, the
default, or scrapy.robotstxt.PythonRobotParser). Follows every link (the
hidden, rel="nofollow" trap link too: robots.txt is what must keep the
crawler out), bounded in pages and time. Prints the crawl's stats as JSON.
"""
import json
import sys

from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class Site(CrawlSpider):
    name = "site"
    rules = (Rule(LinkExtractor(), follow=True),)


def main():
    start, parser, user_agent = sys.argv[1:4]
    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": True,
            "ROBOTSTXT_PARSER": parser,
            "USER_AGENT": user_agent,
            "CONCURRENT_REQUESTS": 4,
            "DOWNLOAD_DELAY": 0,
            "DOWNLOAD_TIMEOUT": 10,
            "RETRY_ENABLED": False,
            "CLOSESPIDER_PAGECOUNT": 300,
            "CLOSESPIDER_TIMEOUT": 90,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "WARNING",
            "HTTPERROR_ALLOW_ALL": True,
        }
    )
    crawler = process.create_crawler(Site)
    process.crawl(crawler, start_urls=[start])
    process.start()
    stats = crawler.stats.get_stats()
    json.dump({k: v for k, v in stats.items() if isinstance(v, (int, float, str))}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
