"""The README's validation table lists exactly the records in validation/."""

from __future__ import annotations

import re
from pathlib import Path

from flashsim.validation import load_records


def test_readme_table_lists_every_record(root: Path) -> None:
    text = (root / "README.md").read_text()
    head = "\n".join(text.splitlines()[:40])
    assert "make validate" in head and "make test" in head
    block = text.split("<!-- validation-table:start -->")[1].split("<!-- validation-table:end -->")[
        0
    ]
    listed = re.findall(r"^\| (\S+) \|", block, re.M)
    listed = [row for row in listed if row not in {"id", "---"}]
    expected = [record.id for _path, record in load_records(root / "validation")]
    assert listed == expected, "run `make readme` to refresh the README's validation table"
