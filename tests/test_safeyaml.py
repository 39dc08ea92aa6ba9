"""The one YAML reader's limits: honest input passes untouched, each limit refuses with one line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pyvolcano import safeyaml
from pyvolcano.safeyaml import YAMLInputError


def test_honest_aliases_and_nesting_pass() -> None:
    text = "base: &b {cpu: 1, memory: 1Gi}\na: *b\nb: *b\nlist: [*b, *b]\n"
    assert safeyaml.load(text, "t")["list"][1] == {"cpu": 1, "memory": "1Gi"}
    deep = "[" * safeyaml.MAX_DEPTH + "]" * safeyaml.MAX_DEPTH
    assert safeyaml.load(deep, "t") is not None


@pytest.mark.parametrize(("text", "words"), [
    ("[" * (safeyaml.MAX_DEPTH + 1) + "]" * (safeyaml.MAX_DEPTH + 1), "nested more than"),
    ("a:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(70)), "nested more than"),
    ("a: &a [1,2,3,4,5,6,7,8,9,10]\n" + "".join(
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 10) + "]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True)),
     "alias bomb"),
    ("when: 2020-13-45\n", "cannot be read"),
    ("x: !!bool maybe\n", "cannot be read"),
    ("x: " + "1" * 5000 + "\n", "cannot be read"),
    ("x: [1\n", "YAML error at line"),
])
def test_limits_and_bad_scalars(text: str, words: str) -> None:
    with pytest.raises(YAMLInputError, match=words) as err:
        safeyaml.load_all(text, "f.yaml")
    assert str(err.value).startswith("f.yaml")


def test_read_text_refuses_non_utf8_and_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(YAMLInputError, match="not a text file"):
        safeyaml.read_text(str(f))
    f.write_text("a: 1\n" * 100)
    monkeypatch.setattr(safeyaml, "MAX_BYTES", 100)
    with pytest.raises(YAMLInputError, match="larger than"):
        safeyaml.read_text(str(f))


def test_libyaml_own_nesting_limit_reads_as_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml builds from 0.2.6 on stop at 1,000 levels inside their scanner, before the first event reaches
    the depth check (CI's PyYAML wheel is such a build); the message is the same either way."""
    def refusing_parse(text: str, Loader: object) -> object:
        mark = yaml.Mark("f.yaml", 1016, 4, 1015, None, 0)
        raise yaml.scanner.ScannerError(None, None, "exceeded maximum nesting depth", mark)
        yield  # pragma: no cover

    monkeypatch.setattr(safeyaml.yaml, "parse", refusing_parse)
    deep = "a: {a: " + "[" * 1000 + "]" * 1000 + "}\n"
    with pytest.raises(YAMLInputError, match=r"^f.yaml: line 5: nested more than 64 levels"):
        safeyaml.load_all(deep, "f.yaml")
