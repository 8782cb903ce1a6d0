"""The review queue: people's time goes where the judge is least sure."""

from judge.review.queue import QueueEntry as QueueEntry
from judge.review.queue import ReviewQueue as ReviewQueue

__all__ = ["QueueEntry", "ReviewQueue"]
