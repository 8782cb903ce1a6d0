"""Records the store is handed to write, light enough to import without a database driver."""

from __future__ import annotations

from dataclasses import dataclass

#: seconds an annotator's claim on a review item lasts unless renewed
REVIEW_LEASE_S = 900.0
#: seconds a worker's lease on grading work lasts; a killed worker's items go to others after it
WORK_LEASE_S = 300.0


@dataclass(frozen=True)
class ReviewRequest:
    """One item to put in front of people (an entry of the review queue): why, how urgent,
    how many distinct annotators must label it. Decided by the router, stored as given."""

    item_id: str
    reason: str
    rubric: str | None = None
    safety_critical: bool = False
    confidence: float | None = None  # calibrated where it exists, else raw; None if unscored
    required: int = 1
