//! robots.txt linter (next).
