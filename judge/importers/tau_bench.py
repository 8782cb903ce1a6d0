"""Import tau-bench historical trajectories (one trace per record, formats §1).

A trajectory file is a JSON list of records `{task_id, trial, reward, traj, info}`; `traj` is
an OpenAI chat message list whose first message is the domain policy (system). Each record
becomes the trace `tau-<domain>/<task_id>/<trial>` of scenario `tau-<domain>`:

- events: the conversation without the system policy (see `judge.importers.openai_chat`);
- metadata: `task_id` (the task's id, as a string) and `trial` (the run of it, an integer):
  the 200 airline runs are 50 tasks x 4 trials, and a suite counts them so (judge.suite.tasks);
  `reward`, `task` (info.task: instruction, user_id, gold actions, outputs),
  `reward_info` (the automatic grader's details), `policy_sha256` / `policy_chars`, and
  `expected_outcome` (docs/formats.md, "Expected outcome"): the gold actions that change the
  database as required writes (`args_equal`: the gold arguments), the task's `outputs` as
  facts some reply must state (`where: any`, as tau-bench's grader looks for them);
- candidate: `{"model": ..., "agent": "tau-bench tool-calling agent"}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers.openai_chat import _Where, build_trace, messages_to_events
from judge.trace.files import unusable_file
from judge.trace.loader import parse_json
from judge.trace.model import Trace

DEFAULT_AGENT = "tau-bench tool-calling agent"
_TASK_FIELDS = ("instruction", "user_id", "actions", "outputs")
#: tau-bench tools (airline and retail) that change nothing in the database: a gold action
#: of these is no required effect (tau-bench's reward compares the database and outputs)
READ_ONLY_TOOLS = frozenset({
    "calculate", "think", "transfer_to_human_agents", "list_all_airports",
    "search_direct_flight", "search_onestop_flight", "get_user_details",
    "get_reservation_details", "find_user_id_by_email", "find_user_id_by_name_zip",
    "get_order_details", "get_product_details", "list_all_product_types",
})


def expected_outcome(task: dict[str, Any], where: _Where) -> dict[str, Any]:
    """The reference of a task (`OutcomeRef` shape): its database-changing gold actions as
    required writes, its outputs as facts stated in some reply."""
    actions = task.get("actions", [])
    if not isinstance(actions, list):
        raise where.error("expected a list", ".info.task", "actions")
    writes: list[dict[str, Any]] = []
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not a["name"]:
            raise where.error("expected an action {name, kwargs}", f".info.task.actions[{i}]",
                              "name")
        kwargs = a.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise where.error("expected an object", f".info.task.actions[{i}]", "kwargs")
        if a["name"] not in READ_ONLY_TOOLS:
            writes.append({"tool": a["name"], "args_equal": kwargs})
    outputs = task.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) and o for o in outputs):
        raise where.error("expected a list of non-empty strings", ".info.task", "outputs")
    return {"writes": writes, "facts": [{"text": o, "where": "any"} for o in outputs]}


def _record_header(rec: dict[str, Any], where: _Where, domain: str,
                   candidate: dict[str, Any]) -> dict[str, Any]:
    for name in ("task_id", "trial"):
        if not isinstance(rec.get(name), int) or isinstance(rec.get(name), bool):
            raise where.error("expected an integer", fld=name)
    reward = rec.get("reward")
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        raise where.error("expected a number", fld="reward")
    info = rec.get("info", {})
    if not isinstance(info, dict):
        raise where.error("expected an object", fld="info")
    task = info.get("task", {})
    if not isinstance(task, dict):
        raise where.error("expected an object", ".info", "task")
    metadata: dict[str, Any] = {
        "source": "tau-bench",
        "domain": domain,
        "task_id": str(rec["task_id"]),  # a string (docs/formats.md, "Task ids and trials")
        "trial": rec["trial"],
        "reward": reward,
        "task": {k: task[k] for k in _TASK_FIELDS if k in task},
    }
    if "reward_info" in info:
        metadata["reward_info"] = info["reward_info"]
    if "actions" in task or "outputs" in task:
        metadata["expected_outcome"] = expected_outcome(task, where)
    return {
        "trace_id": f"tau-{domain}/{rec['task_id']}/{rec['trial']}",
        "scenario": f"tau-{domain}",
        "candidate": dict(candidate),
        "metadata": metadata,
    }


def record_to_trace(rec: Any, where: _Where, domain: str = "airline",
                    candidate: dict[str, Any] | None = None) -> Trace:
    """One tau-bench record as a trace; InputError names the record and field."""
    if not isinstance(rec, dict):
        raise where.error("expected a trajectory record object")
    cand = candidate if candidate is not None else {"model": "gpt-4o", "agent": DEFAULT_AGENT}
    header = _record_header(rec, where, domain, cand)
    if "traj" not in rec:
        raise where.error("missing the conversation", fld="traj")
    events, systems = messages_to_events(rec["traj"], where, ".traj")
    if systems:
        # The policy is the scenario's business (reviewed ledger), never conversation.
        header["metadata"]["policy_sha256"] = systems[0]["sha256"]
        header["metadata"]["policy_chars"] = systems[0]["chars"]
        if len(systems) > 1:
            header["metadata"]["system_prompts"] = systems
    return build_trace(header, events, where)


def iter_tau_bench(path: str | Path, *, domain: str = "airline",
                   candidate: dict[str, Any] | None = None) -> Iterator[Trace]:
    """Yield one trace per record of a tau-bench historical-trajectory file."""
    file = str(path)
    problem = unusable_file(path) if Path(path).exists() else None  # a FIFO: read forever
    if problem is not None:
        raise InputError(problem, file=file)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None
    doc = parse_json(text, file, None)
    if not isinstance(doc, list):
        raise InputError("expected a JSON list of trajectory records", file=file)
    for i, rec in enumerate(doc):
        yield record_to_trace(rec, _Where(file, None, f"[{i}]"), domain, candidate)
