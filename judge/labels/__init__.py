"""Human labels and verdicts (as files or from the database), reference labels, the
agreement report over them, and `judge labels import` (checked, all or nothing, idempotent)."""

from judge.labels.files import iter_labels as iter_labels
from judge.labels.files import iter_verdicts as iter_verdicts
from judge.labels.files import read_labels as read_labels
from judge.labels.files import read_verdicts as read_verdicts
from judge.labels.files import write_labels as write_labels
from judge.labels.files import write_verdicts as write_verdicts
from judge.labels.importing import BadLabelFile as BadLabelFile
from judge.labels.importing import import_labels as import_labels
from judge.labels.importing import read_label_file as read_label_file
from judge.labels.importing import store_labels as store_labels
from judge.labels.reference import ReferenceLabel as ReferenceLabel
from judge.labels.reference import ReferenceSet as ReferenceSet
from judge.labels.reference import newest_labels as newest_labels
from judge.labels.reference import reference_labels as reference_labels
from judge.labels.report import agreement_report as agreement_report
from judge.labels.report import human_human_agreement as human_human_agreement
from judge.labels.sources import LabelledVerdicts as LabelledVerdicts

__all__ = [
    "BadLabelFile", "LabelledVerdicts", "ReferenceLabel", "ReferenceSet", "agreement_report",
    "human_human_agreement", "import_labels", "iter_labels", "iter_verdicts", "newest_labels",
    "read_label_file", "read_labels", "read_verdicts", "reference_labels", "store_labels",
    "write_labels", "write_verdicts",
]
