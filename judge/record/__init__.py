"""Record judge traces where the agent runs (formats §1): pure Python, no network.

`Recorder` wraps tools and writes the trace; `drive` runs an agent step function under limits
and marks a run it had to stop `metadata.termination: forced`. Adapters for agent frameworks
(imported only when used, each needing its framework installed):
`judge.record.openai_agents.JudgeTracingProcessor` (OpenAI Agents SDK) and
`judge.record.langchain.JudgeCallbackHandler` (LangChain and LangGraph).
"""

from judge.record.driver import Call as Call
from judge.record.driver import DriveResult as DriveResult
from judge.record.driver import Limits as Limits
from judge.record.driver import Run as Run
from judge.record.driver import Step as Step
from judge.record.driver import drive as drive
from judge.record.driver import drive_async as drive_async
from judge.record.recorder import Recorder as Recorder
from judge.record.recorder import ToolSpec as ToolSpec

__all__ = ["Call", "DriveResult", "Limits", "Recorder", "Run", "Step", "ToolSpec", "drive",
           "drive_async"]
