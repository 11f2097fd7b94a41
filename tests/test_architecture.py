"""The shape of the code: layers import one way (the import-linter contracts of pyproject.toml,
checked on the installed layout), and no library file grows past 400 lines."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("ppl", "backends", "distributions", "inference")
MAX_LINES = 400


def test_import_contracts_hold():
    """``tools/lint_imports.py`` checks the contracts on the installed layout, where
    backends/, distributions/ and inference/ sit inside the ppl package (an editable install
    would hide them from import-linter): every library module must be analysed."""
    pytest.importorskip("importlinter")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "lint_imports.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in proc.stdout
    expected = sum(1 for folder in LIBRARY for _ in (ROOT / folder).rglob("*.py"))
    assert f"Analyzed {expected} files" in proc.stdout, proc.stdout[:2000]


@pytest.mark.parametrize("folder", LIBRARY)
def test_no_library_file_over_400_lines(folder):
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / folder).rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"files over {MAX_LINES} lines (split them by what they hold): {long}"


def test_import_ppl_leaves_heavy_dependencies_for_first_use():
    """``import ppl`` pulls in no framework, plotting or statistics package (scipy.stats alone
    took ~0.5 s of a 0.9 s import): each is imported where it is first used."""
    heavy = ("scipy", "jax", "torch", "tensorflow", "autograd", "matplotlib", "arviz",
             "xarray", "pandas")
    code = ("import sys, ppl; print(sorted({m.split('.')[0] for m in sys.modules} & set("
            f"{heavy!r})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


def test_the_runs_convergence_checks_import_no_scipy():
    """Every MCMC run ends with rank-normalised R-hat and bulk ESS
    (:func:`ppl.diagnostics.rank_rhat_and_bulk_ess`): NumPy only, since importing
    ``scipy.stats`` for them cost a process's first run ~0.55 s."""
    code = ("import sys, numpy as np; from ppl.diagnostics import rank_rhat_and_bulk_ess; "
            "x = np.random.default_rng(0).normal(size=(4, 100, 3)); x[..., 2] = x[..., 2].round(); "
            "rank_rhat_and_bulk_ess(x); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
