"""Where the built-in prompts are, for the modules that read them (judge.prompts, and
judge.checks, which may not import judge.prompts).

In the repository the built-in prompts live in the top-level `prompts/` folder, where a
reviewer edits them. The wheel ships them as package data mapped from there into
`judge/data/prompts/` (setup.py), so an installed judge finds them inside the package from any
directory. Running from the source tree (an editable install, or the checkout on
PYTHONPATH) there is no such package folder, and the checkout's `prompts/` is the one.
"""

from __future__ import annotations

from pathlib import Path

#: the package folder the wheel maps `prompts/` into (see setup.py)
PACKAGED = Path(__file__).resolve().parent / "prompts"
#: the repository's top-level prompts folder, beside the package in a checkout
CHECKOUT = Path(__file__).resolve().parents[2] / "prompts"


def prompts_dir() -> Path:
    """The built-in prompts folder: the package's copy when it holds any prompt file
    (an installed wheel), else the checkout's top-level `prompts/`."""
    if next(PACKAGED.glob("*/*.md"), None) is not None:
        return PACKAGED
    return CHECKOUT
