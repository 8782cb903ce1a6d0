"""Human review: what a label may say about a stored item (`labeling`). The queue itself is
database code: judge.store.review_queue (`Store.queue`)."""
