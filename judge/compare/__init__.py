"""Two agent versions on the same tasks: `judge compare` (task by task: fixed, broken, flaky,
new failure signatures, trajectory drift, the pass-rate change with a paired test) and
`judge canary` (one promote / hold / roll back decision per rollout stage, with sequential
looks accounted for).

- `scenarios`: the scenarios the traces are checked against (`--scenario` / `--suite`);
- `sides`: one version's trials — trace files checked here, or a stored `judge run`;
- `judging`: `--model`, each side's judge items graded as a stored run;
- `pairing`: the comparison itself (a JSON-ready dict); `render`: as text and Markdown
  (the HTML page is judge.reports.compare);
- `canary`: the stage metrics, the decision and the rollout's stored history.
"""
