"""The Python examples of the README and of docs/python.md run as written (as the crate's
doctests hold its Rust examples)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "docs" / "python.md"]


def python_blocks(path: pathlib.Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_the_readme_has_a_python_example() -> None:
    assert python_blocks(ROOT / "README.md"), "README.md lost its Python example"


@pytest.mark.parametrize(
    "document,index,block",
    [
        (path.name, index, block)
        for path in DOCUMENTS
        for index, block in enumerate(python_blocks(path))
    ],
)
def test_each_python_example_runs(document: str, index: int, block: str) -> None:
    exec(compile(block, f"{document} (python block {index})", "exec"), {})
