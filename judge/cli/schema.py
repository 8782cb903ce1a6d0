"""`judge schema NAME`: print the JSON Schema of a format."""

from __future__ import annotations

import json
from enum import StrEnum

import typer
from pydantic import BaseModel

from judge.formats import HumanLabel, Verdict
from judge.ledger.scenario import Scenario
from judge.trace.model import KIND_ALIASES, Trace


class SchemaName(StrEnum):
    trace = "trace"
    scenario = "scenario"
    verdict = "verdict"
    label = "label"


MODELS: dict[SchemaName, type[BaseModel]] = {
    SchemaName.trace: Trace,
    SchemaName.scenario: Scenario,
    SchemaName.verdict: Verdict,
    SchemaName.label: HumanLabel,
}


def schema(
    name: SchemaName = typer.Argument(..., help="trace, scenario, verdict or label"),
) -> None:
    """Print the JSON Schema of a format."""
    doc = MODELS[name].model_json_schema(by_alias=True)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    if name is SchemaName.trace:  # the loader accepts the hyphenated kind spellings too
        kinds = doc["$defs"]["EventKind"]["enum"]
        kinds.extend(a for a in KIND_ALIASES if a not in kinds)
    typer.echo(json.dumps(doc, indent=2))
