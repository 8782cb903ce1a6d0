"""A pydantic-ai VCR cassette's JSON bodies as `[{"request", "response"}]` records.

    python cassette_to_json.py CASSETTE.yaml OUT.json [CASSETTE.yaml OUT.json ...]
"""

import json
import sys
from typing import Any

import yaml


def body(side: dict[str, Any]) -> Any:
    """A request's or response's JSON body: pydantic-ai stores it parsed, VCR as text."""
    if "parsed_body" in side:
        return side["parsed_body"]
    raw = side.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return None


def main(args: list[str]) -> None:
    for src, dst in zip(args[0::2], args[1::2], strict=True):
        with open(src, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        records = []
        for interaction in doc["interactions"]:
            req, resp = body(interaction["request"]), body(interaction["response"])
            if isinstance(req, dict) and isinstance(resp, dict) and (
                    "messages" in req or "input" in req):
                records.append({"request": req, "response": resp})
        with open(dst, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1, ensure_ascii=False)
        print(dst, len(records))


if __name__ == "__main__":
    main(sys.argv[1:])
