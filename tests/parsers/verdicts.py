#!/usr/bin/env python3
"""Verdicts of Python's robots.txt parsers on one robots.txt, for tests/parsers.rs.

Usage: verdicts.py ROBOTS_FILE QUERIES_JSON
QUERIES_JSON is a list of [user_agent, path]. Prints one JSON object:
{"urllib.robotparser": [bool, ...], "protego": [...], "robotexclusionrulesparser": [...]}.

Each parser gets the body as the crawlers that use it decode it: UTF-8
text (Scrapy decodes with errors ignored), split as that parser splits it.
"""
import json
import sys
import urllib.robotparser

import protego
import robotexclusionrulesparser

BASE = "http://example.com"


def main():
    raw = open(sys.argv[1], "rb").read()
    queries = json.load(open(sys.argv[2]))
    text = raw.decode("utf-8", errors="ignore")

    # urllib.robotparser, as RobotFileParser.read() and Scrapy's PythonRobotParser feed it.
    rp = urllib.robotparser.RobotFileParser()
    rp.parse(text.splitlines())
    # Protego, as Scrapy's default ProtegoRobotParser feeds it.
    pg = protego.Protego.parse(text)
    # robotexclusionrulesparser, given the text.
    rerp = robotexclusionrulesparser.RobotExclusionRulesParser()
    rerp.parse(text)

    out = {"urllib.robotparser": [], "protego": [], "robotexclusionrulesparser": []}
    for ua, path in queries:
        url = BASE + path
        out["urllib.robotparser"].append(bool(rp.can_fetch(ua, url)))
        out["protego"].append(bool(pg.can_fetch(url, ua)))
        out["robotexclusionrulesparser"].append(bool(rerp.is_allowed(ua, url)))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
