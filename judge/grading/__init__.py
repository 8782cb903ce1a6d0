"""The grading engine: concurrency, call cache, re-ask, replay-only (see `engine`)."""
