"""Versioned prompt files, their identity, and model-blind, injection-safe rendering."""

from judge.prompts.files import Prompt as Prompt
from judge.prompts.files import list_prompts as list_prompts
from judge.prompts.files import load_prompt as load_prompt
from judge.prompts.files import prompts_root as prompts_root
from judge.prompts.identity import prompt_hash as prompt_hash
from judge.prompts.redact import Redaction as Redaction
from judge.prompts.render import reask as reask
from judge.prompts.render import render as render

__all__ = ["Prompt", "Redaction", "list_prompts", "load_prompt", "prompt_hash",
           "prompts_root", "reask", "render"]
