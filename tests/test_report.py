"""``relsim report``: the page's content, that it is self-contained, and a real browser's view.

The browser test renders the page in headless Chromium from the operating system
(``chromium-headless-shell`` or ``chromium``; ``.ci/run`` installs it when missing) and fails,
never skips, when none is found. It checks the screenshot is not blank, every figure is laid
out with a real size, and the console stays silent; each check has a negative control (a
blank page, a page that logs an error) that must trip it.
"""

import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import relsim
from relsim.cli import main
from relsim.report import render

if TYPE_CHECKING:  # pragma: no cover
    import pandas

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
PRODUCTION = str(SCENARIO_DIR / "production_agent.toml")
CEILING = str(SCENARIO_DIR / "verifier_ceiling.toml")
LESSON = str(SCENARIO_DIR / "lesson_25_steps.toml")
TRIALS = 20_000


@pytest.fixture(scope="module")
def production():
    scenario = relsim.Scenario.from_toml(PRODUCTION)
    return scenario, render(scenario, source=PRODUCTION, trials=TRIALS, seed=5)


# ------------------------------------------------------------------------------ content
@pytest.mark.slow
def test_sections_and_figures_in_reading_order(production):
    _, report = production
    assert [s.id for s in report.sections] == [
        "design", "outcome", "target", "levers", "ranges", "compounding", "explorer", "montecarlo"]
    assert report.figures == ("outcome", "levers", "retries", "verifier", "agent", "checkpoints",
                              "compounding", "convergence")
    html = report.html
    assert html.count("<svg") == len(report.figures)
    for name in report.figures:
        assert f'<figure id="figure-{name}" data-figure="{name}">' in html
    positions = [html.index(f'<section id="{s.id}">') for s in report.sections]
    assert positions == sorted(positions)
    assert report.to_dict()["figures"] == list(report.figures)
    frame = report.to_frame()
    assert list(frame["id"]) == [s.id for s in report.sections]
    assert sum(len(f) for f in frame["figures"]) == len(report.figures)


@pytest.mark.slow
def test_page_is_self_contained(production):
    html = production[1].html
    lowered = html.lower()
    for forbidden in ("<link", "<img", "<iframe", "<object", "@import", " src="):
        assert forbidden not in lowered, forbidden
    # one script, the explorer's, inline, and it asks nothing of the network
    assert lowered.count("<script") == 1 and "<script>" in lowered
    script = lowered.split("<script>", 1)[1].split("</script>", 1)[0]
    for forbidden in ("http", "fetch", "xmlhttprequest", "import", "websocket", "src"):
        assert forbidden not in script, forbidden
    assert all(ref.startswith("#") for ref in re.findall(r'href="([^"]*)"', html))
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", html))
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "figures share element ids"
    assert "@media print" in html


@pytest.mark.slow
def test_numbers_on_the_page_come_from_the_engines(production):
    scenario, report = production
    html = report.html
    exact = relsim.evaluate(scenario)
    assert f"{exact.success:.6g}" in html and f"{exact.silent_failure:.6g}" in html
    assert "Target 0.9 NOT met" in html and report.meets_target is False
    # The planner's answers, in the target table.
    plan = relsim.plan.retries(scenario, target=0.9)
    assert f'<td class="wrap">least retries per step</td><td class="num">{plan.value}</td>' in html
    # The Monte Carlo check: the same seed reproduces the run; z is (estimate - exact) / se.
    run = relsim.simulate(scenario, trials=TRIALS, seed=5)
    z = (run.success - exact.success) / run.standard_errors["success"]
    assert f"{z:.6g}" in html
    assert abs(z) < 5 and "agree: |z| &lt; 5" in html
    # Every lever is named in the tornado chart (its text is text inside the SVG).
    levers_svg = html.split('data-figure="levers"', 1)[1].split("</svg>", 1)[0]
    texts = {html_module.unescape(t) for t in re.findall(r">([^<]*)</text>", levers_svg)}
    assert set(relsim.plan.levers(scenario)["lever"]) <= texts


@pytest.mark.slow
def test_target_met_and_no_target():
    lesson = render(relsim.Scenario.from_toml(LESSON), source=LESSON, trials=0)
    assert lesson.meets_target is True and "Target 0.95 met" in lesson.html
    assert "montecarlo" not in [s.id for s in lesson.sections]  # trials = 0 leaves it out
    untargeted = render({"steps": 5, "p": 0.9}, trials=0)
    assert untargeted.meets_target is None
    assert "No target is set" in untargeted.html
    # no verifier: no retries or verifier figure, the agent's range only
    assert untargeted.figures == ("outcome", "levers", "agent", "compounding")


@pytest.mark.slow
def test_infeasible_target_says_why():
    report = render(relsim.Scenario.from_toml(CEILING), source=CEILING, trials=0)
    plan = relsim.plan.retries(relsim.Scenario.from_toml(CEILING), target=0.95)
    assert not plan.feasible
    assert html_module.escape(plan.reason) in report.html


@pytest.mark.slow
def test_user_text_is_escaped():
    report = render({"name": "<script>alert(1)</script>", "steps": 3, "p": 0.9}, trials=0)
    assert "alert(1)</script>" not in report.html
    assert report.html.count("<script") == 1  # the explorer's own, and no other
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report.html


@pytest.mark.slow
def test_one_section_is_one_function():
    from relsim.report import SECTIONS, Section

    def extra(ctx):
        return Section("extra", "An extra section", f"<p>{ctx.scenario.steps} steps</p>")

    report = render({"steps": 4, "p": 0.9}, trials=0, sections=(*SECTIONS, extra))
    assert report.sections[-1].id == "extra" and "<p>4 steps</p>" in report.html
    assert '<a href="#extra">An extra section</a>' in report.html


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"trials": -1}, "trials: must be an integer >= 0, got -1"),
        ({"seed": 1.5}, "seed: must be an integer >= 0, got 1.5"),
        ({"target": 0}, r"target: must be a number in (0, 1], got 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(relsim.errors.RelsimError) as caught:
        render({"steps": 2, "p": 0.9}, **kwargs)
    assert str(caught.value) == message


# ---------------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_writes_the_page_and_exits_with_the_verdict(tmp_path, capsys):
    out = tmp_path / "lesson.html"
    assert main(["report", LESSON, "-o", str(out), "--trials", "2000", "--seed", "3"]) == 0
    assert "target met" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "--seed 3" in page
    # Not met: the page is still written, exit 3.
    out2 = tmp_path / "ceiling.html"
    assert main(["report", CEILING, "-o", str(out2), "--trials", "0"]) == 3
    assert out2.exists()
    # --target overrides the file's.
    assert main(["report", CEILING, "-o", str(out2), "--trials", "0", "--target", "0.7"]) == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, message",
    [
        (["report", "no/such.toml", "-o", "x.html"], "no/such.toml: cannot read"),
        (["report", LESSON], "the following arguments are required: -o/--output"),
        (["report", LESSON, "-o", "x.html", "--trials", "-3"], "--trials: must be an integer >= 0"),
        (["report", LESSON, "-o", "/no/such/dir/x.html", "--trials", "0"], "-o: must be a file that can be written, got '/no/such/dir/x.html' (the folder '/no/such/dir' does not exist)"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


# --------------------------------------------------------------- the harness report (evals)
NASTY = "<script>alert(1)</script> [x](http://e.x) *y* a|b"


def _trials(nasty: str = "plain") -> "pandas.DataFrame":
    """Six tasks x 4 trials (1..4 successes), a cost column and failure categories."""
    import pandas as pd

    rows = []
    for task in range(6):
        for trial in range(4):
            success = int(trial < 1 + task % 4)
            rows.append({"task": f"t{task}" if task else nasty, "trial": trial, "success": success,
                         "cost": 1.0 + trial, "category": "" if success else (nasty if trial % 2 else "infra")})
    return pd.DataFrame(rows)


def _analysis(**kwargs):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", relsim.evalstats.TrialDataWarning)
        return relsim.evalstats.analyze(_trials(**kwargs.pop("names", {})), **kwargs)


def test_eval_report_is_a_page_of_the_one_stack():
    from relsim.report import eval as eval_report
    from relsim.report._html import STYLE

    result = _analysis(k=[1, 2, 4])
    report = eval_report.render(result, command="relsim analyze t.csv --report t.html")
    html = report.html
    assert report.figures == ("pass-k",) and report.meets_target is None
    assert [s.id for s in report.sections] == ["figure", "headline", "per-task", "metrics", "categories"]
    # the design review's page: its stylesheet, its way of writing SVG (text stays text, ids
    # prefixed with the figure's name), its footer with the command
    design = render({"steps": 3, "p": 0.9}, trials=0).html
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    assert style == re.search(r"<style>(.*?)</style>", design, re.S).group(1) and style.strip() == STYLE.strip()
    figure = html.split('data-figure="pass-k"', 1)[1].split("</svg>", 1)[0]
    assert "<text" in figure and 'role="img"' in figure
    assert all(i.startswith("pass-k-") for i in re.findall(r'\sid="([^"]+)"', figure))
    assert "<code>relsim analyze t.csv --report t.html</code>" in html
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", " src="):
        assert forbidden not in html.lower(), forbidden
    # the same result gives the same page, byte for byte
    assert eval_report.render(result, command="relsim analyze t.csv --report t.html").html == html


def test_eval_report_figure_is_plot_pass_k_of_the_whole_curve_with_the_analysis_seed():
    # A bootstrap interval with seed=None: the analysis records the entropy it drew, and the
    # figure's curve, over every k, passes through the table's k with the same intervals.
    import pandas as pd

    from relsim.report import eval as eval_report

    counts = np.random.default_rng(4).integers(0, 5, 40)
    trials = pd.DataFrame([{"task": task, "trial": trial, "success": int(trial < count)}
                           for task, count in enumerate(counts) for trial in range(4)])
    settings = dict(k=[2], interval="bca", replicates=300)
    result = relsim.evalstats.analyze(trials, **settings)
    axes = eval_report.figure(result).axes[0]
    for metric, label in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k")):
        drawn = next(c for c in axes.containers if c.get_label().startswith(label))
        assert list(drawn.lines[0].get_xdata()) == [1, 2, 3, 4]
        table = result.pass_k.loc[(metric, 2)]
        assert drawn.lines[0].get_ydata()[1] == pytest.approx(table["estimate"])
        bar = drawn.lines[2][0].get_segments()[1]
        assert sorted(bar[:, 1]) == pytest.approx([table["ci_low"], table["ci_high"]])
    # negative control: another analysis draws fresh entropy, and other intervals
    other = relsim.evalstats.analyze(trials, **settings)
    assert other.seed != result.seed
    assert not np.allclose(other.pass_k[["ci_low", "ci_high"]], result.pass_k[["ci_low", "ci_high"]])


def test_eval_report_shows_pass_k_beyond_the_trials_run(tmp_path):
    # analyze(extrapolate=K): a section after the headline with the fitted curve (its own
    # figure) and a table whose numbers are the analysis' own, the check in its note.
    from relsim.report import eval as eval_report

    result = _analysis(k=[2], extrapolate=6)
    report = eval_report.render(result)
    assert report.figures == ("pass-k", "extrapolated")
    assert [s.id for s in report.sections][:3] == ["figure", "headline", "extrapolated"]
    section = report.sections[2]
    assert section.figures == ("extrapolated",) and 'data-figure="extrapolated"' in section.body
    hat = result.extrapolated["pass_hat_k"]["6"]
    row = section.body.split("<td class=\"num\">6</td>", 1)[1].split("</tr>", 1)[0]
    assert f'{hat["estimate"]:.4g}' in row and "extrapolated" in row
    assert f'{result.extrapolated["check"][-1]["observed"]:.4g} observed' in section.body
    written = eval_report.write_report(result, tmp_path / "r.md")
    assert [p.name for p in written] == ["r.md", "r.svg", "r-extrapolated.svg"]
    text = written[0].read_text(encoding="utf-8")
    assert "![pass@k and pass^k beyond the trials run, with their 95% bands](r-extrapolated.svg)" in text
    assert written[2].read_text(encoding="utf-8").startswith("<svg")
    # negative control: without extrapolate, no such section, figure or file
    plain = _analysis(k=[2])
    assert eval_report.render(plain).figures == ("pass-k",)
    assert len(eval_report.write_report(plain, tmp_path / "p.md")) == 2


def test_eval_report_escapes_user_text_in_html_and_markdown(tmp_path):
    from relsim.report import eval as eval_report

    result = _analysis(k=[2], names={"nasty": NASTY})
    html = eval_report.render(result).html
    assert "<script" not in html and html_module.escape(NASTY) in html
    written = eval_report.write_report(result, tmp_path / "r.md")
    text = written[0].read_text(encoding="utf-8")
    escaped = r"&lt;script&gt;alert(1)&lt;/script&gt; \[x\](http://e.x) \*y\* a\|b"
    assert "<script" not in text and escaped in text
    # a table row keeps its columns: no | of the user's splits a cell (the task's row: task,
    # trials, successes, p, pass@2, pass^2, 7 bars; the category's: category, count, share,
    # CI, tasks, 6 bars)
    rows = [line for line in text.splitlines() if line.startswith("| " + escaped)]
    assert sorted(row.replace("\\|", "").count("|") for row in rows) == [6, 7]
    assert written[1].read_text(encoding="utf-8").startswith("<svg")
    svg_file = written[1].read_text(encoding="utf-8")
    assert 'xmlns="http://www.w3.org/2000/svg"' in svg_file  # a file an image viewer opens


def test_eval_report_of_a_comparison():
    import warnings

    from relsim.report import eval as eval_report

    base = _trials()
    cand = base.assign(success=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", relsim.evalstats.TrialDataWarning)
        comparison = relsim.evalstats.compare(base, cand, k=[2])
    report = eval_report.render(comparison)
    assert report.figures == ("differences",)
    assert [s.id for s in report.sections] == ["figure", "differences", "per-task"]
    success = comparison.quantities["success"]
    assert '<td class="wrap">success</td><td class="num">6</td>' in report.html
    assert f'<td class="num">{success["difference"]:.4g}</td>' in report.html
    with pytest.raises(relsim.errors.RelsimError, match="^result: must be a TrialAnalysis or a Comparison"):
        eval_report.render({"tasks": 3})


# ------------------------------------------------------------------------ a real browser
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0",
)
# A probe appended to a *copy* of the page (the report itself has no script): it writes the
# laid-out size of every figure into the DOM, which --dump-dom then prints.
PROBE = """<script>
var sizes = {};
document.querySelectorAll("figure[data-figure]").forEach(function (f) {
  var box = f.querySelector("svg").getBoundingClientRect();
  sizes[f.dataset.figure] = [box.width, box.height];
});
var pre = document.createElement("pre"); pre.id = "relsim-probe";
pre.textContent = JSON.stringify(sizes); document.body.appendChild(pre);
</script>"""


def _browser() -> str:
    given = os.environ.get("RELSIM_BROWSER")
    candidates = [given] if given else [shutil.which(name) for name in BROWSERS]
    candidates += [f"/usr/bin/{name}" for name in BROWSERS]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    pytest.fail(
        "no headless Chromium found: install one (apt-get install -y chromium-headless-shell, "
        "or chromium; .ci/run does this) or set RELSIM_BROWSER to its path"
    )


def _chromium(page: Path, tmp_path: Path, *action: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    command = [_browser(), *FLAGS, f"--user-data-dir={profile}", "--window-size=1100,1400",
               *action, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def _screenshot(page: Path, tmp_path: Path) -> tuple[np.ndarray, str]:
    import matplotlib.image

    shot = tmp_path / f"{page.stem}.png"
    done = _chromium(page, tmp_path, f"--screenshot={shot}")
    assert shot.exists(), f"no screenshot: {done.stderr[-2000:]}"
    return matplotlib.image.imread(shot), done.stderr


def _console(stderr: str) -> list[str]:
    """Console messages and uncaught errors Chromium logged (the report should log none)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@pytest.mark.slow
def test_report_in_a_real_browser(tmp_path):
    report = render(relsim.Scenario.from_toml(PRODUCTION), source=PRODUCTION, trials=TRIALS, seed=5)
    page = tmp_path / "report.html"
    page.write_text(report.html, encoding="utf-8")

    pixels, stderr = _screenshot(page, tmp_path)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"
    assert _console(stderr) == []

    probed = tmp_path / "probed.html"
    probed.write_text(report.html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(probed, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    sizes = json.loads(re.search(r'<pre id="relsim-probe">(.*?)</pre>', dom.stdout).group(1))
    assert list(sizes) == list(report.figures)
    for name, (width, height) in sizes.items():
        assert width > 300 and height > 150, f"figure {name} is not shown ({width} x {height})"

    # Printable: Chromium prints it to a PDF of several pages.
    pdf = tmp_path / "report.pdf"
    printed = _chromium(page, tmp_path, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    assert pdf.exists(), printed.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 3


@pytest.mark.slow
def test_eval_report_in_a_real_browser(tmp_path):
    from relsim.report import eval as eval_report

    result = _analysis(k=[1, 2, 4], names={"nasty": NASTY})
    page = tmp_path / "harness.html"
    assert eval_report.write_report(result, page) == [page]
    html = page.read_text(encoding="utf-8")
    pixels, stderr = _screenshot(page, tmp_path)
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"
    assert _console(stderr) == []  # the task named <script> ran nothing
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(probed, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    sizes = json.loads(re.search(r'<pre id="relsim-probe">(.*?)</pre>', dom.stdout).group(1))
    assert list(sizes) == ["pass-k"]
    width, height = sizes["pass-k"]
    assert width > 300 and height > 150, f"the figure is not shown ({width} x {height})"
    assert NASTY in html_module.unescape(dom.stdout)  # shown as text


@pytest.mark.slow
def test_browser_checks_catch_a_blank_page_and_a_console_error(tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    pixels, stderr = _screenshot(blank, tmp_path)
    assert pixels[..., :3].std() <= 0.05
    noisy = tmp_path / "noisy.html"
    noisy.write_text(
        '<!DOCTYPE html><html><body><p>x</p><script>console.error("relsim-boom")</script></body></html>',
        encoding="utf-8",
    )
    _, stderr = _screenshot(noisy, tmp_path)
    assert any("relsim-boom" in line for line in _console(stderr))


def test_the_parser_stays_light():
    # Every command builds the whole parser; `relsim solve` must not pay for the report.
    code = (
        "import sys, relsim.cli; relsim.cli.build_parser(); "
        "print(sorted({'relsim.report', 'relsim.plan.sensitivity', 'matplotlib', 'pandas'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_no_time_section_without_time_tables(production):
    assert "time" not in [s.id for s in production[1].sections]


@pytest.mark.slow
def test_time_section_from_the_timeline_engine():
    import relsim.timeline as timeline
    design = {"steps": 5, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
              "timing": {"attempt": 8, "verify": 2, "deadline": 60}}
    report = render(design, trials=3_000, seed=4)
    assert report.sections[-1].id == "time"
    assert report.figures[-3:] == ("time-split", "durations", "gantt")
    run = timeline.simulate_timeline(design, trials=2_000, seed=4)  # the section's run
    html = report.html
    assert "plays 2000 independent trials (seed 4)" in html and "a batch has no throughput" in html
    for value in (run.success, run.timeout, run.duration["p90"]):
        assert f'<td class="num">{value:.6g}</td>' in html
    # Constant durations (docs/model.md section 7): a trial lasts 10 s per attempt, so those
    # that need more than 6 attempts time out at the 60 s deadline.
    assert 0 < run.timeout < 1 and run.duration["p99"] <= 60
    durations_svg = html.split('data-figure="durations"', 1)[1].split("</svg>", 1)[0]
    assert ">deadline 60 s<" in durations_svg and ">all 2000 trials<" in durations_svg
    # the one time lever that applies: a longer deadline, with its change in success
    assert "deadline 50% longer" in html and "timing.deadline = 90</td>" in html  # as the file writes it


@pytest.mark.slow
def test_time_section_of_a_workload_answers_its_targets():
    import relsim.timeline as timeline
    design = {"steps": 1, "p": 0.9, "checkpoints": {"final": True, "human": True},
              "fleet": {"arrivals": "poisson", "rate_per_hour": 30, "tasks": 150},
              "resources": {"reviewers": 3, "review": {"mean": 60}},
              "targets": {"duration_p90": 600, "duration_mean": 20}}
    report = render(design, trials=1_000, seed=2)
    section = report.sections[-1]
    assert section.id == "time"
    run = timeline.simulate_timeline(design, seed=2)  # the section's run: the default rule
    html = report.html
    assert (f"runs the workload (150 tasks, the first 15 left out as warm-up) {run.replications} "
            "times on seeds spawned from 2") in html
    assert f"standard error is {run.precision:.1%} of it" in html
    assert run.targets["duration_p90"]["status"] == "met" and run.targets["duration_mean"]["status"] == "missed"
    assert "<td class=\"wrap\">duration_p90</td>" in html and "<td class=\"wrap\">missed</td>" in html
    assert "In time, not every target is met" in html
    assert "Bottleneck: <strong>reviewers</strong>" in html
    assert "one more reviewer" in html and "review 25% faster" in html
    assert "resources.reviewers = 4" in html and f"({run.replications} replications each)" in html
    assert html.count("95% interval") >= 3


@pytest.mark.slow
def test_an_overloaded_workloads_warnings_are_in_the_report():
    design = {"steps": 1, "p": 1.0, "checkpoints": {"final": True, "human": True},
              "fleet": {"arrivals": "poisson", "rate_per_hour": 60, "tasks": 120},
              "resources": {"reviewers": 1, "review": {"mean": 90}}}
    html = render(design, trials=500, seed=1).html
    assert html.count('<p class="verdict bad">Warning: ') == 2
    assert "Warning: reviewers: offered load 1.5" in html


def test_cli_refuses_a_seed_that_trials_0_leaves_unused(tmp_path, capsys):
    # --trials 0 leaves out every draw: the seed was silently ignored
    out = tmp_path / "r.html"
    assert main(["report", LESSON, "-o", str(out), "--trials", "0", "--seed", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err == ("relsim: error: --seed: seeds the Monte Carlo check and the timeline's "
                            "runs, which --trials 0 leaves out: leave it out too\n")
    assert main(["report", LESSON, "-o", str(out), "--trials", "0"]) == 0
    assert "--trials 0 --seed 0" in out.read_text(encoding="utf-8")  # the command shown
