"""Package discovery, the one part of the build pyproject.toml cannot say.

The built-in prompts live in the repository's top-level `prompts/` (where a reviewer edits a
judge prompt); the wheel ships them inside the package, as `judge/data/prompts/`, so an
installed judge finds them from any directory (judge/data/builtin.py). Mapping a folder
outside the package into it takes `package_dir`, which pyproject's `packages.find` cannot
be combined with; everything else about the build is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

PROMPTS = "judge.data.prompts"

setup(
    # every judge package, as pyproject's `packages.find` (namespaces on) found them, and
    # the prompts folder with one package per rubric directory
    packages=[*find_namespace_packages(include=["judge*"]), PROMPTS,
              *(f"{PROMPTS}.{p}" for p in find_namespace_packages("prompts"))],
    package_dir={PROMPTS: "prompts"},
)
