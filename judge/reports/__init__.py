"""Agreement reports in Markdown, JSON, CSV and self-contained HTML."""

from judge.reports.agreement import assemble_report as assemble_report
from judge.reports.agreement import report_from_files as report_from_files
from judge.reports.agreement import report_from_store as report_from_store
from judge.reports.agreement import review_stats as review_stats
from judge.reports.html import to_html as to_html
from judge.reports.model import AgreementReport as AgreementReport
from judge.reports.model import build_report as build_report
from judge.reports.text import to_csv as to_csv
from judge.reports.text import to_json as to_json
from judge.reports.text import to_markdown as to_markdown

RENDERERS = {"md": to_markdown, "json": to_json, "csv": to_csv, "html": to_html}

__all__ = [
    "RENDERERS", "AgreementReport", "assemble_report", "build_report", "report_from_files",
    "report_from_store", "review_stats", "to_csv", "to_html", "to_json", "to_markdown",
]
