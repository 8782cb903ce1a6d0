"""Suites: the manifest (`manifest`), the plan checked before any call (`plan`), the run over
the grading pipeline (`run`), its summary, failure clusters and release gate (`summary`,
`cluster`, `gate`) and the rendered report (`report`)."""
