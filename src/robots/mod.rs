//! robots.txt parsing, matching and linting.
