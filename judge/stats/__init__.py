"""Agreement statistics over plain numpy arrays: no files, labels, judges or database here."""

from judge.stats.agreement import compute_agreement as compute_agreement
from judge.stats.agreement import grouped_agreement as grouped_agreement
from judge.stats.agreement import metrics_from_counts as metrics_from_counts
from judge.stats.bootstrap import percentile_interval as percentile_interval
from judge.stats.bootstrap import resample_counts as resample_counts
from judge.stats.corrected import corrected_pass_rate as corrected_pass_rate
from judge.stats.interrater import cohen_kappa as cohen_kappa
from judge.stats.interrater import krippendorff_alpha_nominal as krippendorff_alpha_nominal

__all__ = [
    "cohen_kappa", "compute_agreement", "corrected_pass_rate", "grouped_agreement",
    "krippendorff_alpha_nominal", "metrics_from_counts", "percentile_interval",
    "resample_counts",
]
