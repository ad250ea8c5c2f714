"""The documentation: every shown command output, the site's strict build, the gallery, the README.

Every command output in README.md and docs/ is a ``console`` block (``docs/outputs.py`` says
the format); each is run here through ``relsim.cli.main`` and compared, exit status
included. ``python3 docs/outputs.py`` rewrites them after a change that alters an output.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import relsim

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


outputs = _load("outputs")
SHOWN = outputs.everything()
#: commands that take over about half a second (engines, imports of scipy and pandas)
SLOW = {"simulate", "timeline", "levers", "report", "sweep", "compare", "analyze", "power",
        "audit", "fit"}


def _param(item):
    slow = item.argv[0] in SLOW or "--for" in item.argv
    return pytest.param(item, id=item.name, marks=[pytest.mark.slow] if slow else [])


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory):
    return outputs.make_inspect_logs(tmp_path_factory.mktemp("inspect"))


@pytest.mark.parametrize("item", [_param(item) for item in SHOWN])
def test_shown_output_is_what_the_command_prints(item, tmp_path, request):
    logs = None
    if outputs.needs_inspect_logs([item]):
        logs = request.getfixturevalue("inspect_logs")
    status, printed = outputs.run(item.argv, outputs.sandbox(tmp_path / "run", logs))
    assert outputs.normalise(printed) == outputs.normalise(item.output), (
        f"{item.name}: `{item.command}` prints something else now; "
        "`python3 docs/outputs.py` rewrites the shown outputs"
    )
    assert status == item.status


def test_the_pages_show_outputs_of_every_kind_of_command():
    # a negative control for the parser: it finds the blocks, and the commands in them
    from relsim.cli import COMMANDS

    commands = {item.argv[0] for item in SHOWN}

    assert set(COMMANDS) <= commands
    assert any(item.status == 3 for item in SHOWN) and any(item.status == 2 for item in SHOWN)


def test_a_changed_output_is_caught(tmp_path):
    # negative control: one digit changed in a shown output fails the comparison
    item = next(i for i in SHOWN if i.argv == ("table",))
    _, printed = outputs.run(item.argv, outputs.sandbox(tmp_path / "run"))
    assert outputs.normalise(printed) == outputs.normalise(item.output)
    assert outputs.normalise(printed) != outputs.normalise(item.output.replace("0.590", "0.591"))
    # only the Inspect log's own timings are compared by their first word
    assert outputs.normalise("working_time  0.1\nsteps  19.02") == ["working_time", "steps  19.02"]


def test_every_output_shown_is_in_a_console_block():
    # outputs shown anywhere else would escape the check above
    for page in outputs.PAGES:
        text = page.read_text(encoding="utf-8")
        for line in outputs.FENCE.sub("", text).splitlines():
            assert not line.lstrip().startswith(("$ relsim", "relsim: ")), (
                f"{page.name}: {line!r} is a command or its output outside a console block"
            )


def test_the_parser_reads_commands_outputs_and_exit_status(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```console\n$ relsim table --p 0.5 --steps 2\nout\n"
        "$ relsim solve --steps 0 --target 0.9  # exit status 2\nerr\n```\n",
        encoding="utf-8",
    )
    first, second = outputs.shown(page)
    assert first.argv == ("table", "--p", "0.5", "--steps", "2") and first.status == 0
    assert first.output == "out\n" and second.output == "err\n"
    assert second.argv == ("solve", "--steps", "0", "--target", "0.9") and second.status == 2
    page.write_text("```console\n$ ls\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="relsim only"):
        outputs.shown(page)


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    # strict: a broken link or anchor, a page left out of the navigation, a public object
    # without a docstring (docs/griffe_relsim.py) or a docstring mkdocstrings cannot read
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    api = (tmp_path / "site" / "api" / "engines" / "index.html").read_text(encoding="utf-8")
    assert "relsim.exact.evaluate" in api and "tol" in api  # built from the docstrings


@pytest.mark.slow
def test_a_missing_docstring_is_a_warning():
    import griffe

    extension = _load("griffe_relsim")
    package = griffe.load("relsim", search_paths=[str(ROOT)], docstring_parser="numpy")
    assert extension.public(package) and not [
        obj.path for obj in extension.public(package)
        if obj.docstring is None and obj.kind in extension.NEEDS_DOCSTRING
    ]
    # negative control: a function without one is found
    module = griffe.visit("probe", filepath=Path("probe.py"), code='"""doc"""\ndef f(): pass\n')
    found = [obj.path for obj in extension.public(module)
             if obj.docstring is None and obj.kind in extension.NEEDS_DOCSTRING]
    assert found == ["probe.f"]


def test_docstrings_read_as_markdown():
    extension = _load("griffe_relsim")
    text = "See :func:`~relsim.plan.levers` and :class:`relsim.Scenario`.\n\nRun::\n\n    relsim a [--b B]\n\nEnd."
    assert extension.as_markdown(text) == (
        "See `levers` and `relsim.Scenario`.\n\nRun:\n\n```\nrelsim a [--b B]\n```\n\nEnd."
    )


def test_the_api_pages_document_every_public_name():
    blocks = set()
    for page in (DOCS / "api").glob("*.md"):
        blocks |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M))
    for name in set(relsim.__all__) - {"__version__"}:
        value = getattr(relsim, name)
        module = value.__name__ if inspect.ismodule(value) else value.__module__
        assert (f"relsim.{name}" in blocks or any(b.endswith(f".{name}") for b in blocks)
                or module in blocks), name


def test_the_pages_never_link_outside_the_repository():
    for page in DOCS.rglob("*.md"):
        assert not re.search(r"https?://", page.read_text(encoding="utf-8")), page


@pytest.mark.slow
def test_the_gallery_draws_every_figure_of_relsim_plot(tmp_path):
    import relsim.plot

    functions = {name for name, value in vars(relsim.plot).items()
                 if inspect.isfunction(value) and value.__module__ == "relsim.plot"
                 and not name.startswith("_")}
    written = _load("gallery").main(str(tmp_path))
    assert {path.stem for path in written} == functions
    assert all(path.stat().st_size > 10_000 for path in written)  # a drawn figure, not blank
    page = (DOCS / "gallery.md").read_text(encoding="utf-8")
    for name in functions:  # the page shows each, and the committed figure exists
        assert f"## {name}\n" in page and f"(gallery/{name}.png)" in page
        assert (DOCS / "gallery" / f"{name}.png").is_file()


def test_the_three_reviewers_example_differs_from_its_scenario_only_in_reviewers():
    def body(path):
        return [line for line in path.read_text(encoding="utf-8").splitlines()
                if not line.startswith("#")]

    original = body(ROOT / "scenarios" / "support_reviewers.toml")
    three = body(DOCS / "examples" / "support_3_reviewers.toml")
    assert [i for i, (a, b) in enumerate(zip(original, three)) if a != b] == [
        original.index("reviewers = 2")
    ]
    assert len(original) == len(three) and "reviewers = 3" in three


def test_the_readme_is_short_and_starts_with_what_ci_runs():
    text = README.read_text(encoding="utf-8")
    # short: the walk-through from eval runs to a plan (four commands, their real output)
    # is the longest section
    assert len(text.splitlines()) <= 400
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ran = [ci[i + 1] for i, line in enumerate(ci) if line.startswith("# README, line")]
    assert [line.strip() for line in text.splitlines()[2:4]] == ran
    # written for a newcomer: no talk of the project's own history ("the lesson" is introduced)
    assert "grew from a lesson on evaluating agents" in text
    for phrase in ("issue", "the old ", "withdrawn"):
        assert phrase not in text.lower(), phrase


def test_the_readme_links_to_pages_that_exist():
    for target in re.findall(r"\]\(([^)#]+)", README.read_text(encoding="utf-8")):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
