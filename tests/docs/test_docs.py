"""The documentation against the code: the generated configuration reference, the alert reference, the README's
size, links and command-line flags. No Spark, no processes: text and the code's own tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.detection.config import DEFAULT_THRESHOLDS
from pipelines.detection.registry import DETECTORS
from planewatch import docs_config
from planewatch.cli import build_parser
from schemas.alerts import AlertType

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
# The README is the front door: what it is, how to start, where to go next; everything else lives in docs/.
README_MAX_BYTES = 10 * 1024
# Flags the pages show that planewatch's sources do not spell out: argparse's own, and spark-submit's.
# spark-submit's, and kafka-leader-election.sh's --election-type
OTHER_TOOLS_FLAGS = frozenset({"--help", "--master", "--jars", "--py-files", "--conf", "--election-type"})
# Where planewatch's own flags are declared.
FLAG_SOURCES = ("planewatch", "jobs", "lake", "benchmarks", "api", "broker", "scripts", "pipelines", "schemas")
_FLAG_USE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_FLAG_DECLARED = re.compile(r"""["'](--[a-z][a-z0-9-]*)["'=]""")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def alert_sections() -> dict[str, str]:
    """docs/alerts.md's `## TYPE` sections: type -> the section's text."""
    text = (DOCS / "alerts.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ([A-Z_]+)\s*$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_configuration_reference_is_what_the_code_generates() -> None:
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert committed == docs_config.render(), "docs/configuration.md is stale: run python -m planewatch.docs_config"


def test_every_pipeline_key_the_code_accepts_is_listed() -> None:
    yaml_text = (REPO / "conf" / "pipeline.yaml").read_text(encoding="utf-8")
    names = {k.name for k in docs_config.pipeline_keys(yaml_text)}
    assert {"lake", "trigger.interval", "sink.mode", "sources.files.tail_quiet_s", "sources.kafka.reader",
            "sources.prometheus.timeout_s", "quality.ge_interval_s"} <= names
    assert not any(n.startswith("detection") for n in names)


def test_a_key_the_file_does_not_show_stops_the_generator() -> None:
    yaml_text = (REPO / "conf" / "pipeline.yaml").read_text(encoding="utf-8")
    without = re.sub(r"^\s+tail_quiet_s:.*$", "", yaml_text, count=1, flags=re.MULTILINE)
    with pytest.raises(ValueError, match=r"sources\.files\.tail_quiet_s"):
        docs_config.pipeline_keys(without)


def test_defaults_come_from_the_code_not_the_file() -> None:
    yaml_text = (REPO / "conf" / "pipeline.yaml").read_text(encoding="utf-8")
    yaml_text = re.sub(r"^lake:.*$", "lake: /data/lake   # where the tables go", yaml_text, count=1, flags=re.MULTILINE)
    yaml_text = re.sub(r"^  mode: delta-rs.*$", "  mode: delta-spark", yaml_text, count=1, flags=re.MULTILINE)
    keys = {k.name: k for k in docs_config.pipeline_keys(yaml_text)}
    assert (keys["lake"].default, keys["lake"].value, keys["lake"].comment) == ("var/lake", "/data/lake",
                                                                               "where the tables go")
    assert (keys["sink.mode"].default, keys["sink.mode"].value) == ("delta-rs", "delta-spark")


def test_yaml_comments_above_inline_and_continued() -> None:
    text = ("# header\n\n# above a\na: 1   # inline a\n       # continued a\n# above b\nb:\n  c: x  # inline c\n"
            "  d: 'x # not a comment'\n")
    assert docs_config.yaml_comments(text) == {
        ("a",): "above a inline a continued a", ("b",): "above b", ("b", "c"): "inline c", ("b", "d"): ""}


def test_every_alert_type_has_a_section_in_the_alert_reference() -> None:
    missing = sorted(set(AlertType) - set(alert_sections()))
    assert not missing, f"docs/alerts.md has no `## TYPE` section for {missing}"


def test_the_alert_reference_names_no_type_the_code_lacks() -> None:
    unknown = sorted(set(alert_sections()) - {t.value for t in AlertType})
    assert not unknown, f"docs/alerts.md describes alert types the code does not define: {unknown}"


@pytest.mark.parametrize("alert_type", list(AlertType))
def test_alert_section_states_the_code_defaults_and_detectors(alert_type: AlertType) -> None:
    section = alert_sections().get(alert_type.value, "")
    th = DEFAULT_THRESHOLDS[alert_type]
    assert f"detection.thresholds.{alert_type.value}" in section
    assert re.search(rf"warning {re.escape(f'{th.warning:g}')}\b", section), f"{alert_type}: warning {th.warning:g}"
    assert re.search(rf"critical {re.escape(f'{th.critical:g}')}\b", section), f"{alert_type}: critical {th.critical:g}"
    for detect in DETECTORS[alert_type].functions:
        name = f"{detect.__module__.rsplit('.', 1)[1]}.{detect.__name__}"
        assert name in section, f"{alert_type}: its detector {name} is not named"


def test_readme_is_the_front_door_only() -> None:
    size = len(README.read_bytes())
    assert size < README_MAX_BYTES, f"README.md is {size} bytes: move detail into docs/"


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_links_resolve_inside_the_repository(page: Path) -> None:
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve()
        assert REPO in path.parents or path == REPO, f"{page.name} links outside the repository: {target}"
        assert path.exists(), f"{page.name} links to a missing file: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{page.name} links to a missing heading: {target}"


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a Markdown page: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+?)\s*$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def _declared_flags() -> set[str]:
    declared: set[str] = set()
    for top in FLAG_SOURCES:
        for path in (REPO / top).rglob("*.py"):
            declared.update(_FLAG_DECLARED.findall(path.read_text(encoding="utf-8")))
    for path in (REPO / "Makefile", *(REPO / "scripts").glob("*.sh")):
        declared.update(_FLAG_USE.findall(path.read_text(encoding="utf-8")))
    for sub in build_parser()._subparsers._group_actions[0].choices.values():  # type: ignore[union-attr]
        declared.update(o for a in sub._actions for o in a.option_strings)  # flags a command builds from data
    return declared


def test_every_flag_the_pages_show_exists() -> None:
    declared = _declared_flags() | OTHER_TOOLS_FLAGS
    for page in pages():
        shown = set(_FLAG_USE.findall(page.read_text(encoding="utf-8")))
        assert not shown - declared, f"{page.name} shows flags no planewatch command declares: {shown - declared}"
