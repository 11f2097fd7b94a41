"""Run the import-linter contracts of ``pyproject.toml`` on the package as it is installed.

ppl's folders ``backends/``, ``distributions/`` and ``inference/`` are mapped into the ``ppl``
package by ``[tool.setuptools.package-dir]``; an editable install resolves them through an
import hook that import-linter (which walks the package's directory) cannot see. This script lays
the package out as a wheel install would (a copy under a temporary directory) and runs
``lint-imports`` there, so every module of ``ppl`` is checked.

Usage: ``python tools/lint_imports.py`` (exit status that of ``lint-imports``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def materialize(dest: Path) -> Path:
    """Copy the package's sources to ``dest`` in their installed layout; return ``dest``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = config["tool"]["setuptools"]["package-dir"]
    # parents before children, so a mapped sub-package lands inside its parent's copy
    for package, folder in sorted(package_dir.items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*package.split("."))
        shutil.copytree(ROOT / folder, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ppl-layers-") as tmp:
        src = materialize(Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(src))
        cmd = [sys.executable, "-c",
               "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
               "--config", str(ROOT / "pyproject.toml"), "--no-cache"]
        return subprocess.call(cmd, env=env, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main())
