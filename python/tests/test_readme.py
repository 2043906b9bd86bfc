"""The Python examples of the repository's README and the package's README run as
written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", ROOT / "python" / "README.md"]


def examples(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("path", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_examples_run(path):
    blocks = examples(path)
    assert blocks, f"{path} has no Python example"
    for block in blocks:
        exec(compile(block, str(path), "exec"), {})
