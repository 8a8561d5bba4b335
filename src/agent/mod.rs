//! Bot database and User-Agent classifier.
