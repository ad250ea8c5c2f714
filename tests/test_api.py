"""The public API: __all__, the API page of the docs and the lazy import stay together."""

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import relsim

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the docs page that lists the public API (its table holds every name of __all__)
API_PAGE = ROOT / "docs" / "api" / "index.md"


def _api_table() -> str:
    """The table of the API page: the lines that start with ``|``."""
    lines = API_PAGE.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if line.startswith("|"))


def _api_page_names() -> set[str]:
    return set(re.findall(r"`relsim\.(\w+)", _api_table()))


def test_all_matches_the_api_page():
    public = set(relsim.__all__) - {"__version__"}
    assert _api_page_names() == public


def _parameters(signature: str) -> list[tuple[str, str, object]]:
    """(name, kind, default) of each parameter of a signature written ``name(a, *, b=1)``."""
    args = ast.parse(f"def {signature}: pass").body[0].args
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    out = [(a.arg, "POSITIONAL_OR_KEYWORD", d) for a, d in zip(args.args, defaults)]
    out += [(a.arg, "KEYWORD_ONLY", d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return [(name, kind, None if d is None else ast.literal_eval(d)) for name, kind, d in out]


@pytest.mark.parametrize("name", ["evaluate", "simulate", "simulate_timeline", "sweep"])
def test_the_api_page_shows_the_engines_signatures(name):
    shown = re.search(rf"`({name}\([^`]*\)) ->", _api_table()).group(1)
    actual = [
        (p.name, p.kind.name, None if p.default is p.empty else p.default)
        for p in inspect.signature(getattr(relsim, name)).parameters.values()
    ]
    assert _parameters(shown) == actual


@pytest.mark.slow
def test_the_engines_take_only_the_scenario_and_the_trials_by_position():
    with pytest.raises(TypeError):
        relsim.simulate({"steps": 1, "p": 0.5}, 10, 1)  # the seed, by name only
    with pytest.raises(TypeError):
        relsim.simulate_timeline({"steps": 1, "p": 0.5}, 10, 1)
    assert relsim.simulate({"steps": 1, "p": 0.5}, 10, seed=1).trials == 10  # control


def test_every_public_name_resolves():
    for name in relsim.__all__:
        assert getattr(relsim, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    try:
        relsim.no_such_thing  # noqa: B018
    except AttributeError as error:
        assert "no_such_thing" in str(error)
    else:  # pragma: no cover
        raise AssertionError("relsim.no_such_thing resolved")


def test_import_relsim_is_light():
    code = (
        "import sys, relsim; "
        "heavy = {'numpy', 'numba', 'pandas', 'scipy', 'matplotlib', 'simpy'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_relsim_runs():
    out = subprocess.run(
        [sys.executable, "-m", "relsim", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.strip() == f"relsim {relsim.__version__}"


MODEL_DOC = ROOT / "docs" / "model.md"
SECTIONS = ["Words", "Closed forms", "One trial", "Scenario files", "Reference values",
            "Command line", "Time", "Designs beyond one agent"]


def test_model_doc_has_its_numbered_sections():
    headings = re.findall(r"^## (\d+)\. (.+)$", MODEL_DOC.read_text(encoding="utf-8"), re.M)
    assert headings == [(str(i), title) for i, title in enumerate(SECTIONS, start=1)]


def test_citations_of_the_model_doc_name_sections_that_exist():
    files = [README, *ROOT.glob("docs/**/*.md"), *ROOT.glob("relsim/**/*.py"),
             *ROOT.glob("tests/*.py")]
    cited = set()
    for path in files:
        cited |= set(re.findall(r"docs/model\.md section (\d+)", path.read_text(encoding="utf-8")))
    assert cited and cited <= {str(i) for i in range(1, len(SECTIONS) + 1)}


def test_every_formula_is_in_the_model_doc():
    from relsim import formulas

    text = MODEL_DOC.read_text(encoding="utf-8").split("\n## 2.", 1)[1].split("\n## ", 1)[0]
    functions = {name for name in formulas.__all__ if name[0].islower()}
    assert functions == set(re.findall(r"^\| `(\w+)\(", text, re.M))
