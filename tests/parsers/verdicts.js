#!/usr/bin/env node
// Verdicts of the npm package robots-parser on one robots.txt, for tests/parsers.rs.
//
// Usage: node verdicts.js ROBOTS_FILE QUERIES_JSON
// QUERIES_JSON is a list of [user_agent, path]. Prints {"robots-parser": [bool, ...]}.
// The body is read as UTF-8 text, as a Node crawler fetching it would.
'use strict';
const fs = require('fs');
const path = require('path');
const robotsParser = require(path.join(__dirname, 'node_modules', 'robots-parser'));

const base = 'http://example.com';
const body = fs.readFileSync(process.argv[2], 'utf8');
const queries = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const robots = robotsParser(base + '/robots.txt', body);
const verdicts = queries.map(([ua, p]) => robots.isAllowed(base + p, ua) === true);
process.stdout.write(JSON.stringify({ 'robots-parser': verdicts }));
