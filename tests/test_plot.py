"""relsim.plot: what each figure draws, checked against numbers from outside the plot code.

Reference values come from docs/model.md section 2 (the lesson's worked values) and section
5 (the reference table); the rest is the closed forms written out here in plain arithmetic.
"""

import math
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import relsim  # noqa: E402
from relsim import plot  # noqa: E402
from relsim.errors import RelsimError  # noqa: E402
from relsim.plan import levers as levers_table  # noqa: E402

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def ax():
    return Figure().add_subplot()


def _hline_height(line):
    ys = np.asarray(line.get_ydata(), dtype=float)
    assert np.all(ys == ys[0]), "not a horizontal line"
    return float(ys[0])


# ----------------------------------------------------------------------------- compounding
def test_compounding_lines_are_p_to_the_n(ax):
    steps = np.arange(1, 51)
    out = plot.compounding(p=(0.9, 0.95, 0.99), steps=steps, target=0.95, ax=ax)
    assert out is ax
    curves = ax.lines[:3]
    for line, p in zip(curves, (0.9, 0.95, 0.99)):
        np.testing.assert_array_equal(line.get_xdata(), steps)
        np.testing.assert_allclose(line.get_ydata(), [p**n for n in steps], rtol=1e-12)
        assert line.get_label() == f"p = {p:g}"
    # The lesson's table (docs/model.md section 2), read off the curves.
    lesson = {0.9: (0.590, 0.349, 0.122, 0.005), 0.95: (0.774, 0.599, 0.358, 0.077),
              0.99: (0.951, 0.904, 0.818, 0.605)}
    for line, p in zip(curves, (0.9, 0.95, 0.99)):
        ys = dict(zip(line.get_xdata(), line.get_ydata()))
        assert [round(ys[n], 3) for n in (5, 10, 20, 50)] == list(lesson[p])
    assert _hline_height(ax.lines[3]) == 0.95
    assert "steps" in ax.get_xlabel() and "(count)" in ax.get_xlabel()
    assert "success" in ax.get_ylabel() and "(probability)" in ax.get_ylabel()


def test_compounding_one_p_and_a_bad_target(ax):
    plot.compounding(p=0.8, steps=range(1, 4), ax=ax)
    assert len(ax.lines) == 1
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.8, 0.64, 0.512])
    with pytest.raises(RelsimError, match=r"^target: must be a number in \(0, 1\], got 1.5$"):
        plot.compounding(target=1.5, ax=Figure().add_subplot())
    with pytest.raises(RelsimError, match="^steps: must be integers >= 1"):
        plot.compounding(steps=[0, 1], ax=Figure().add_subplot())


# --------------------------------------------------------------------------------- retries
def _chain_success(p, steps, retries, miss, false_reject):
    """(a S_r)^n written out: a = p(1-f), q = pf + (1-p)(1-m), S_r = sum_{j<=r} q^j."""
    a = p * (1 - false_reject)
    q = p * false_reject + (1 - p) * (1 - miss)
    return (a * sum(q**j for j in range(retries + 1))) ** steps


def test_retries_curve_and_the_ceiling(ax):
    plot.retries(0.9, 25, miss=0.1, max_retries=8, target=0.95, ax=ax)
    curve, ceiling, target = ax.lines
    np.testing.assert_array_equal(curve.get_xdata(), np.arange(9))
    expected = [_chain_success(0.9, 25, r, 0.1, 0.0) for r in range(9)]
    np.testing.assert_allclose(curve.get_ydata(), expected, rtol=1e-12)
    # docs/model.md section 2: with miss = 0.1 the task ceiling is 0.758626.
    assert round(_hline_height(ceiling), 6) == 0.758626
    assert ceiling.get_linestyle() == "--"
    assert np.all(curve.get_ydata() <= _hline_height(ceiling) + 1e-15)
    assert _hline_height(target) == 0.95
    assert "retries per step" in ax.get_xlabel() and "(count)" in ax.get_xlabel()
    assert "(probability)" in ax.get_ylabel()


def test_retries_perfect_verifier_reaches_one_and_the_lesson_value(ax):
    plot.retries(0.9, 25, max_retries=4, ax=ax)
    curve, ceiling = ax.lines
    assert _hline_height(ceiling) == 1.0
    # docs/model.md section 2: two retries per step give 0.999**25 = 0.975298.
    assert round(curve.get_ydata()[2], 6) == 0.975298
    assert round(curve.get_ydata()[0], 6) == round(0.9**25, 6)


def test_retries_with_false_rejects(ax):
    plot.retries(0.85, 10, miss=0.2, false_reject=0.05, max_retries=3, ax=ax)
    expected = [_chain_success(0.85, 10, r, 0.2, 0.05) for r in range(4)]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected, rtol=1e-12)
    a, w = 0.85 * 0.95, 0.15 * 0.2
    assert _hline_height(ax.lines[1]) == pytest.approx((a / (a + w)) ** 10, rel=1e-12)
    with pytest.raises(RelsimError, match=r"^max_retries: must be an integer in 0\.\.100000"):
        plot.retries(0.9, 10, max_retries=-1, ax=Figure().add_subplot())


# ----------------------------------------------------------------------- required accuracy
def test_required_accuracy(ax):
    steps = np.arange(1, 51)
    plot.required_accuracy((0.9, 0.95), steps=steps, ax=ax)
    for line, target in zip(ax.lines, (0.9, 0.95)):
        np.testing.assert_allclose(line.get_ydata(), target ** (1 / steps), rtol=1e-12)
    # docs/model.md section 2: 25 steps at target 0.95 need 0.997950 per step.
    assert round(dict(zip(ax.lines[1].get_xdata(), ax.lines[1].get_ydata()))[25], 6) == 0.99795
    assert "(count)" in ax.get_xlabel() and "per-step success (probability)" in ax.get_ylabel()


# --------------------------------------------------------------------------- outcome split
R2 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}}
R8 = {"steps": 20, "p": 0.95}


def test_outcome_split_bars_are_the_results(ax):
    results = {"R2": relsim.evaluate(R2), "R8": relsim.evaluate(R8).to_dict()}
    plot.outcome_split(results, ax=ax)
    bars = ax.patches
    assert len(bars) == 6  # 3 outcomes x 2 designs, stacked outcome by outcome
    # docs/model.md section 5: R2 0.757383 / 0.240978 / 0.001639, R8 0.358486 / 0.641514 / 0.
    reference = {"R2": (0.757383, 0.240978, 0.001639), "R8": (0.358486, 0.641514, 0.0)}
    for outcome_index in range(3):
        for design_index, name in enumerate(("R2", "R8")):
            bar = bars[2 * outcome_index + design_index]
            assert round(bar.get_height(), 6) == reference[name][outcome_index]
            assert bar.get_y() == pytest.approx(sum(reference[name][:outcome_index]), abs=2e-6)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["R2", "R8"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "success", "silent failure", "detected failure"]
    assert "(probability)" in ax.get_ylabel()


def test_outcome_split_shows_timeout_and_infra_when_present(ax):
    timeline = {"success": 0.6, "silent_failure": 0.1, "detected_failure": 0.1,
                "timeout": 0.15, "infra_failure": 0.05}
    plot.outcome_split({"fleet": timeline}, ax=ax)
    assert [round(b.get_height(), 12) for b in ax.patches] == [0.6, 0.1, 0.1, 0.15, 0.05]
    top = ax.patches[-1]
    assert top.get_y() + top.get_height() == pytest.approx(1.0)


def test_outcome_split_refuses_bad_input():
    with pytest.raises(RelsimError, match="^results: must be a non-empty mapping"):
        plot.outcome_split({}, ax=Figure().add_subplot())
    with pytest.raises(RelsimError, match=r"^results\['x'\]: must be an Outcome"):
        plot.outcome_split({"x": {"silent_failure": 0.5}}, ax=Figure().add_subplot())


# ---------------------------------------------------------------------------------- levers
def test_curve_draws_the_design_over_a_lever_as_given(ax):
    from relsim.plan import curve

    design = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}}
    c = curve(design, "retries.per_step", also=[5])
    plot.curve(c, target=0.75, marks={"planner": 5}, ax=ax)
    line, dot, diamond, ceiling, target = ax.lines
    np.testing.assert_array_equal(line.get_xdata(), c.values)
    np.testing.assert_array_equal(line.get_ydata(), c.success)
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (3, c.design.success)
    assert round(float(dot.get_ydata()[0]), 6) == 0.757383  # docs/model.md section 5, R2
    assert (diamond.get_xdata()[0], diamond.get_ydata()[0]) == (5, c.at(5).success)
    assert _hline_height(ceiling) == c.ceiling and round(c.ceiling, 6) == 0.758626
    assert _hline_height(target) == 0.75
    assert ceiling.get_label().startswith("ceiling 0.7586") and "(count)" in ax.get_xlabel()
    # the same picture from the result's to_dict(): nothing is recomputed
    other = plot.curve(c.to_dict(), target=0.75, marks={"planner": 5}, ax=Figure().add_subplot())
    for mine, theirs in zip(ax.lines, other.lines):
        np.testing.assert_array_equal(mine.get_ydata(), theirs.get_ydata())


def test_curve_of_a_design_off_the_curve_and_of_cost(ax):
    from relsim.plan import curve

    design = {"steps": 3, "p": [0.9, 0.8, 0.95], "cost": {"attempt": 2.0, "unit": "USD"}}
    c = curve(design, "p", [0.8, 0.9, 1.0])
    plot.curve(c, ax=ax)
    line, mine = ax.lines
    assert _hline_height(mine) == c.design.success  # off the curve: a line at its own value
    assert "off this curve" in mine.get_label()
    cost = plot.curve(c, y="cost_per_success", unit="USD", ax=Figure().add_subplot())
    np.testing.assert_array_equal(cost.lines[0].get_ydata(), c.cost_per_success)
    assert cost.get_ylabel() == "cost per success (USD)"
    with pytest.raises(RelsimError, match="^y: must be one of success"):
        plot.curve(c, y="silent", ax=Figure().add_subplot())
    with pytest.raises(RelsimError, match="^result: must be a relsim.plan.curve result"):
        plot.curve({"key": "p"}, ax=Figure().add_subplot())
    with pytest.raises(RelsimError, match=r"^marks\['x'\]: must be one of the curve's values"):
        plot.curve(c, marks={"x": 0.85}, ax=Figure().add_subplot())


def test_levers_bars_are_the_frame(ax):
    frame = levers_table(relsim.Scenario.from_toml(str(SCENARIO_DIR / "production_agent.toml")))
    plot.levers(frame, ax=ax)
    bars = ax.patches
    assert len(bars) == len(frame)
    # Tornado: the largest gain on top (the highest y), bars in percentage points.
    order = frame.sort_values("delta_success")
    np.testing.assert_allclose([b.get_width() for b in bars], 100 * order["delta_success"], rtol=1e-12)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(order["lever"])
    top = max(bars, key=lambda b: b.get_y())
    assert top.get_width() == pytest.approx(100 * frame["delta_success"].max())
    for bar, delta in zip(bars, order["delta_success"]):
        green = matplotlib.colors.to_rgba("tab:green")
        assert (bar.get_facecolor() == green) == (delta > 0)
    # one unit, one parenthesis: "from 84.76% (percentage points)", never
    # "(percentage points) (from 0.8476)"
    baseline = 100 * frame.attrs["baseline"]["success"]
    assert ax.get_xlabel() == f"change in end-to-end success from {baseline:.2f}% (percentage points)"


def test_levers_refuses_a_frame_without_the_columns():
    with pytest.raises(RelsimError, match="^frame: must be the levers table"):
        plot.levers(pd.DataFrame({"x": [1]}), ax=Figure().add_subplot())


# ----------------------------------------------------------------------------- convergence
R1 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}


@pytest.mark.slow
def test_convergence_band_exact_line_and_estimate(ax):
    trials, seed = 20_000, 11
    run = relsim.simulate(R1, trials=trials, seed=seed, record=trials)
    plot.convergence(run, relsim.evaluate(R1), ax=ax)
    estimate_line = next(line for line in ax.lines if line.get_label().startswith("Monte Carlo"))
    exact_line = next(line for line in ax.lines if line.get_label().startswith("exact"))
    exact = _hline_height(exact_line)
    assert round(exact, 6) == 0.975298  # docs/model.md section 5, R1
    assert estimate_line.get_label() == f"Monte Carlo (seed {seed})"
    k = np.asarray(estimate_line.get_xdata())
    assert k[0] == 1 and k[-1] == trials and ax.get_xscale() == "log"
    # The running share of successes of the recorded trials, counted here by brute force; the
    # last point is the whole run's estimate.
    successes = np.cumsum(run.trajectories["outcome"].to_numpy() == "success")
    np.testing.assert_array_equal(estimate_line.get_ydata(), successes[k - 1] / k)
    assert estimate_line.get_ydata()[-1] == pytest.approx(run.success, abs=1e-15)
    # The band: exact +- 5 sqrt(s(1-s)/k).
    band = ax.collections[0].get_paths()[0].vertices
    half = 5 * np.sqrt(exact * (1 - exact) / trials)
    at_end = band[np.isclose(band[:, 0], trials)][:, 1]
    np.testing.assert_allclose(sorted(at_end)[0], exact - half, rtol=1e-9)
    np.testing.assert_allclose(sorted(at_end)[-1], exact + half, rtol=1e-9)
    assert band[:, 1].min() >= 0.0 and band[:, 1].max() == 1.0  # clipped: at k = 1 it is wide
    low, high = ax.get_ylim()  # framed on the band from 100 trials on, not on [0, 1]
    band_at_100 = exact - 5 * np.sqrt(exact * (1 - exact) / 100)
    assert band_at_100 - 0.02 < low < band_at_100 and high == 1.0
    # Statistical check, 5 standard errors from the run, with a negative control: the same
    # run against a design with p = 0.88 (exact success from the closed form) must fail it.
    se = run.standard_errors["success"]
    assert abs(run.success - exact) < 5 * se
    wrong = (1 - 0.12**3) ** 25
    assert abs(run.success - wrong) > 5 * se
    assert "trials" in ax.get_xlabel() and "(count" in ax.get_xlabel()
    assert "(probability)" in ax.get_ylabel()


def test_convergence_draws_what_it_is_given_and_runs_no_engine(ax, monkeypatch):
    import relsim.exact
    import relsim.montecarlo

    def refuse(*args, **kwargs):
        raise AssertionError("a figure ran an engine")

    monkeypatch.setattr(relsim.montecarlo, "simulate", refuse)
    monkeypatch.setattr(relsim.exact, "evaluate", refuse)
    outcomes = ["success", "silent_failure", "success", "success", "detected_failure"] * 40
    plot.convergence(outcomes, 0.6, ax=ax)
    estimate = next(line for line in ax.lines if line.get_label() == "Monte Carlo")
    k = np.asarray(estimate.get_xdata())
    assert k[0] == 1 and k[-1] == 200
    wins = np.cumsum([o == "success" for o in outcomes])
    np.testing.assert_array_equal(estimate.get_ydata(), wins[k - 1] / k)
    assert _hline_height(next(line for line in ax.lines if line.get_label() == "exact 0.600000")) == 0.6
    # booleans are outcomes too, and the exact value may be a result (its success is drawn)
    exact = SimpleNamespace(success=0.6)
    other = plot.convergence([o == "success" for o in outcomes], exact, ax=Figure().add_subplot())
    np.testing.assert_array_equal(other.lines[-1].get_ydata(), estimate.get_ydata())


@pytest.mark.parametrize(
    "run, exact, message",
    [
        ([], 0.5, "run: must be a run that recorded its trials"),
        ([0, 2, 1], 0.5, "run: must be a run that recorded its trials"),
        (["success"], 1.5, r"exact: must be an Outcome or a success in \[0, 1\]"),
        (["success"], "0.5", r"exact: must be an Outcome or a success in \[0, 1\]"),
    ],
)
def test_convergence_refuses_bad_input(run, exact, message):
    with pytest.raises(RelsimError, match=f"^{message}"):
        plot.convergence(run, exact, ax=Figure().add_subplot())


def test_convergence_of_a_run_that_recorded_some_or_none_of_its_trials(ax):
    run = relsim.simulate(R1, trials=2_000, seed=3, record=500)
    plot.convergence(run, 0.975298, ax=ax)
    assert ax.lines[-1].get_label() == "Monte Carlo, first 500 of 2000 trials (seed 3)"
    assert ax.lines[-1].get_xdata()[-1] == 500
    with pytest.raises(RelsimError, match="^run: must be a run that recorded its trials"):
        plot.convergence(relsim.simulate(R1, trials=100, seed=3), 0.975298,
                         ax=Figure().add_subplot())


# ----------------------------------------------------------------------------------- pass k
def test_pass_k_lines_and_intervals_against_the_estimators(ax):
    # Five tasks of five trials with 0..4 successes, plus one of 5: per-task pass@k is
    # 1 - C(n-c, k)/C(n, k) and pass^k is C(c, k)/C(n, k) (docs/model.md section 2).
    counts = [0, 1, 2, 3, 4, 5]
    rows = [{"task": t, "trial": j, "success": int(j < c)} for t, c in enumerate(counts) for j in range(5)]
    analysis = relsim.evalstats.analyze(pd.DataFrame(rows), k=[1, 2, 3], replicates=200, seed=3)
    plot.pass_k(analysis, ax=ax)
    at_line, hat_line = (container.lines[0] for container in ax.containers)
    for line, per_task in (
        (at_line, lambda c, k: 1 - math.comb(5 - c, k) / math.comb(5, k)),
        (hat_line, lambda c, k: math.comb(c, k) / math.comb(5, k)),
    ):
        np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3])
        expected = [np.mean([per_task(c, k) for c in counts]) for k in (1, 2, 3)]
        np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-12)
    # The error bars span the frame's intervals.
    table = analysis.pass_k
    for container, metric in zip(ax.containers, ("pass_at_k", "pass_hat_k")):
        segments = container.lines[2][0].get_segments()
        for segment, k in zip(segments, (1, 2, 3)):
            low, high = sorted(segment[:, 1])
            assert low == pytest.approx(table.loc[(metric, k), "ci_low"])
            assert high == pytest.approx(table.loc[(metric, k), "ci_high"])
    assert "k" in ax.get_xlabel() and "(probability)" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "pass@k (any of k succeeds)", "pass^k (all k succeed)"]


def test_pass_k_takes_the_table_and_refuses_other_things(ax):
    table = pd.DataFrame(
        {"estimate": [0.5, 0.75], "ci_low": [0.4, float("nan")], "ci_high": [0.6, float("nan")]},
        index=pd.MultiIndex.from_tuples([("pass_at_k", 1), ("pass_at_k", 2)], names=["metric", "k"]),
    )
    plot.pass_k(table, ax=ax)
    (container,) = ax.containers
    np.testing.assert_allclose(container.lines[0].get_ydata(), [0.5, 0.75])
    with pytest.raises(RelsimError, match="^analysis: must be a TrialAnalysis"):
        plot.pass_k(pd.DataFrame({"estimate": [1.0]}), ax=Figure().add_subplot())


def test_pass_k_extrapolated_draws_the_fit_its_bands_and_the_observed_pass_k(ax):
    # Tasks with 0..5 successes of 5: the fit's curves and bands are the analysis' extrapolated
    # table, its points the observed pass^k, C(c, k)/C(5, k) averaged over tasks.
    counts = [0, 1, 2, 3, 4, 5, 5, 3, 2, 4]
    rows = [{"task": t, "trial": j, "success": int(j < c)} for t, c in enumerate(counts) for j in range(5)]
    analysis = relsim.evalstats.analyze(pd.DataFrame(rows), k=[1], seed=3, extrapolate=9)
    plot.pass_k_extrapolated(analysis, ax=ax)
    table = analysis.extrapolated
    at_line, hat_line, observed = ax.lines[:3]
    for line, metric in ((at_line, "pass_at_k"), (hat_line, "pass_hat_k")):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, 10))
        np.testing.assert_allclose(line.get_ydata(), [table[metric][str(k)]["estimate"] for k in range(1, 10)])
    bands = [c for c in ax.collections if "interval" in c.get_label()]
    for band, metric in zip(bands, ("pass_at_k", "pass_hat_k")):
        vertices = band.get_paths()[0].vertices
        for k in (1, 5, 9):
            at_k = sorted(vertices[np.isclose(vertices[:, 0], k), 1])
            assert at_k[0] == pytest.approx(table[metric][str(k)]["ci"][0])
            assert at_k[-1] == pytest.approx(table[metric][str(k)]["ci"][1])
    expected = [np.mean([math.comb(c, k) / math.comb(5, k) for c in counts]) for k in range(1, 6)]
    np.testing.assert_allclose(observed.get_ydata(), expected, rtol=1e-12)
    # the divide between the trials run (5) and the extrapolated k
    assert [line.get_xdata()[0] for line in ax.lines[3:]] == [5.5]
    with pytest.raises(RelsimError, match="^analysis: must be a TrialAnalysis made with extrapolate"):
        plot.pass_k_extrapolated(relsim.evalstats.analyze(pd.DataFrame(rows), k=[1]),
                                 ax=Figure().add_subplot())


def test_paired_differences_points_and_bars_are_the_comparison(ax):
    # Four tasks, two trials each; the candidate fixes task d: success differences by task
    # are 0, 0, 0, 1 (mean 0.25), pass@2 differences 0, 0, 0, 1 too.
    base = pd.DataFrame({"task": list("aabbccdd"), "trial": [1, 2] * 4,
                         "success": [1, 1, 0, 1, 0, 0, 0, 0]})
    cand = base.assign(success=[1, 1, 0, 1, 0, 0, 1, 1])
    comparison = relsim.evalstats.compare(base, cand, k=[2])
    plot.paired_differences(comparison, ax=ax)
    (container,) = ax.containers
    np.testing.assert_allclose(container.lines[0].get_xdata(), [0.25, 0.25, 0.25])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["success", "pass@2", "pass^2"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the first quantity on top
    for segment, name in zip(container.lines[2][0].get_segments(), ["success", "pass@2", "pass^2"]):
        assert sorted(segment[:, 0]) == pytest.approx(comparison.quantities[name]["ci"])
    zero = next(line for line in ax.lines if list(line.get_xdata()) == [0.0, 0.0])
    assert zero is not None
    # its to_dict() draws the same; a quantity without a difference is left out, one without
    # an interval has a bar of no length
    out = comparison.to_dict()
    out["quantities"]["pass^2"]["difference"] = None
    out["quantities"]["pass@2"]["ci"] = [None, None]
    other = plot.paired_differences(out, ax=Figure().add_subplot())
    assert [t.get_text() for t in other.get_yticklabels()] == ["success", "pass@2"]
    segment = other.containers[0].lines[2][0].get_segments()[1]
    assert segment[0, 0] == segment[1, 0] == 0.25
    with pytest.raises(RelsimError, match="^comparison: must be a Comparison or its to_dict()"):
        plot.paired_differences({"success": 0.1}, ax=Figure().add_subplot())


# ------------------------------------------------------------------------- the shared rules
def test_without_ax_a_new_figure_and_never_show(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("plt.show() called")

    monkeypatch.setattr(plt, "show", refuse)
    first = plot.compounding()
    second = plot.required_accuracy(0.95)
    assert first.figure is not second.figure
    assert plt.get_fignums() == [first.figure.number, second.figure.number]


def test_import_relsim_plot_does_not_import_matplotlib():
    import subprocess
    import sys

    code = "import sys, relsim.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------------ time
# Two recorded trials in the event-log format of docs/model.md section 7 (trial, time, kind,
# step, attempt, resource, outcome), written by hand so every interval is known.
EVENTS = pd.DataFrame(
    [
        (0, 0.0, "arrive", None, None, None, None),
        (0, 0.0, "request", None, None, "agents", None),
        (0, 5.0, "acquire", None, None, "agents", None),
        (0, 5.0, "attempt", 1, 1, "llm", "wrong"),
        (0, 13.0, "verify", 1, 1, None, "reject"),
        (0, 15.0, "backoff", 1, 2, None, None),
        (0, 17.0, "attempt", 1, 2, "llm", "correct"),
        (0, 25.0, "verify", 1, 2, None, "accept"),
        (0, 27.0, "release", None, None, "agents", None),
        (0, 27.0, "end", None, None, None, "success"),
        (1, 0.0, "arrive", None, None, None, None),
        (1, 0.0, "request", None, None, "agents", None),
        (1, 27.0, "acquire", None, None, "agents", None),
        (1, 27.0, "request", 1, 1, "rate_limit", None),
        (1, 30.0, "acquire", 1, 1, "rate_limit", None),
        (1, 30.0, "attempt", 1, 1, "llm", "correct"),
        (1, 38.0, "release", None, None, "agents", None),
        (1, 38.0, "end", None, None, None, "timeout"),
    ],
    columns=["trial", "time", "kind", "step", "attempt", "resource", "outcome"],
)


def _bars(ax):
    """{label or colour: sorted [(row, start, width)]} of every broken_barh drawn."""
    out = {}
    for collection in ax.collections:
        color = matplotlib.colors.to_hex(collection.get_facecolor()[0])
        for path in collection.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            row = round(float(ys.min() + 0.4))
            out.setdefault(color, []).append((row, float(xs.min()), float(xs.max() - xs.min())))
    return {color: sorted(spans) for color, spans in out.items()}


def test_timeline_gantt_work_and_waits(ax):
    plot.timeline(EVENTS, ax=ax)
    hexes = {name: matplotlib.colors.to_hex(name) for name in
             ("tab:blue", "tab:orange", "tab:gray", "tab:red")}
    bars = _bars(ax)
    assert bars[hexes["tab:blue"]] == [(0, 5.0, 8.0), (0, 13.0, 2.0), (0, 17.0, 8.0),
                                       (0, 25.0, 2.0), (1, 30.0, 8.0)]
    assert bars[hexes["tab:orange"]] == [(0, 0.0, 5.0), (1, 0.0, 27.0)]  # waiting for agents
    assert bars[hexes["tab:gray"]] == [(0, 15.0, 2.0)]  # backoff
    assert bars[hexes["tab:red"]] == [(1, 27.0, 3.0)]  # rate limit
    assert set(bars) == set(hexes.values())
    ends = [(line.get_xdata()[0], line.get_ydata()[0], line.get_color()) for line in ax.lines]
    assert ends == [(27.0, 0, "tab:green"), (38.0, 1, "tab:purple")]  # success, timeout
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1"]
    assert "(seconds)" in ax.get_xlabel() and "trial" in ax.get_ylabel()
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert legend == {"agent work", "waiting: agents", "waiting: backoff", "waiting: rate_limit",
                      "end: success", "end: timeout"}


def test_timeline_takes_json_lines_and_limits_the_trials(ax):
    records = EVENTS.to_dict("records")
    plot.timeline(records, trials=1, ax=ax)
    assert {row for spans in _bars(ax).values() for row, _, _ in spans} == {0}
    with pytest.raises(RelsimError, match="^events: must be an event log"):
        plot.timeline([{"trial": 0}], ax=Figure().add_subplot())


def test_durations_distribution_quantiles_and_deadline(ax):
    from types import SimpleNamespace

    summary = {"mean": 32.5, "p50": 27.0, "p90": 36.9, "p99": 37.89}
    result = SimpleNamespace(duration=summary, events=EVENTS)
    plot.durations(result, deadline=38, ax=ax)
    ecdf, points, mean, deadline = ax.lines
    np.testing.assert_array_equal(ecdf.get_xdata(), [27.0, 38.0])  # end - arrive per trial
    np.testing.assert_array_equal(ecdf.get_ydata(), [0.5, 1.0])
    np.testing.assert_array_equal(points.get_xdata(), [27.0, 36.9, 37.89])
    np.testing.assert_array_equal(points.get_ydata(), [0.5, 0.9, 0.99])
    assert mean.get_xdata()[0] == 32.5 and deadline.get_xdata()[0] == 38.0
    assert ecdf.get_label() == "recorded trials (2)"
    first_of_many = plot.durations(SimpleNamespace(duration=summary, events=EVENTS, trials=500),
                                   ax=Figure().add_subplot())
    # a sample of the first trials says so plainly: legend, title and y axis
    assert first_of_many.lines[0].get_label() == "only the first 2 of 500 trials: not a random sample"
    assert first_of_many.get_title() == "How long trials take (the curve: the first 2 of 500 only)"
    assert first_of_many.get_ylabel() == "share of the first 2 trials ended (probability)"
    assert first_of_many.lines[1].get_label() == "p50, p90, p99 (all 500 trials)"
    assert "(seconds)" in ax.get_xlabel() and "(probability)" in ax.get_ylabel()
    # A to_dict() result has no events: the quantiles only.
    only = plot.durations({"duration": summary}, ax=Figure().add_subplot())
    assert len(only.lines) == 2
    with pytest.raises(RelsimError, match="^result: must be a timeline result"):
        plot.durations({"success": 1.0}, ax=Figure().add_subplot())
    with pytest.raises(RelsimError, match="^deadline: must be a number of seconds > 0"):
        plot.durations({"duration": summary}, deadline=0, ax=Figure().add_subplot())


# ------------------------------------------------------- time figures from a real timeline run
# The figures above were checked on a hand-written log; these draw what the timeline engine
# really records (simulate_timeline(..., record=K)) and compare the picture with the event log
# read here by plain pandas and with the engine's own summary (its tally of durations and
# waits, which does not go through the event log).

#: Every kind of wait and event at once: Poisson arrivals into 3 agent slots, 2 LLM slots, an
#: rpm limit that binds, jittered backoff, one reviewer for a final human gate with a rollback,
#: a deadline and a crash clock.
BUSY = {
    "name": "busy fleet",
    "steps": 4,
    "p": 0.8,
    "verifier": {"miss": 0.2},
    "retries": {"per_step": 2},
    "checkpoints": {"final": True, "human": True, "detect": 0.9, "rollbacks": 1},
    "timing": {"attempt": {"median": 6, "p95": 20}, "verify": 1,
               "backoff": {"base": 1, "factor": 2, "jitter": True}, "deadline": 400},
    "fleet": {"arrivals": "poisson", "rate_per_hour": 80, "agents": 3, "tasks": 120, "warmup": 0},
    "resources": {"llm_concurrency": 2, "rpm": 5, "reviewers": 1, "review": {"mean": 40}},
    "infra": {"crash_per_hour": 3},
}
BUSY_TRIALS = 120


@pytest.fixture(scope="module")
def busy_run():
    return relsim.simulate_timeline(BUSY, replications=2, seed=3, record=BUSY_TRIALS)


def _spans_by_hand(events):
    """Per trial: (arrive time, end time, outcome), read straight off the log."""
    arrive = events[events["kind"] == "arrive"].set_index("trial")["time"]
    end = events[events["kind"] == "end"].set_index("trial")
    return pd.DataFrame({"arrive": arrive, "end": end["time"], "outcome": end["outcome"]})


def _bars_by_row(ax):
    """{row: sorted [(start, width, colour hex)]} of every broken_barh drawn."""
    rows = {}
    for collection in ax.collections:
        color = matplotlib.colors.to_hex(collection.get_facecolor()[0])
        for path in collection.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            row = round(float(ys.min() + 0.4))
            rows.setdefault(row, []).append((float(xs.min()), float(xs.max() - xs.min()), color))
    return {row: sorted(spans) for row, spans in rows.items()}


@pytest.mark.slow
def test_timeline_gantt_of_a_real_run_tiles_each_trial(busy_run, ax):
    events = busy_run.events
    # The run has what the chart must classify: every wait, backoff, a rollback, timeouts
    # and crashes (otherwise this test would not test them).
    waits = set(events.loc[events["kind"] == "request", "resource"])
    assert waits == {"agents", "rate_limit", "llm", "reviewers"}
    assert {"backoff", "rollback", "checkpoint"} <= set(events["kind"])
    assert busy_run.timeout > 0 and busy_run.infra_failure > 0
    plot.timeline(events, trials=BUSY_TRIALS, ax=ax)
    spans = _spans_by_hand(events)
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(k) for k in range(BUSY_TRIALS)]
    rows = _bars_by_row(ax)
    for k in range(BUSY_TRIALS):
        arrive, end = spans.loc[k, "arrive"], spans.loc[k, "end"]
        bars = rows[k]
        # The bars of a trial cover exactly its arrival-to-end span, without gap or overlap.
        assert bars[0][0] == pytest.approx(arrive, abs=1e-9)
        for (start, width, _), (following, _, _) in zip(bars, bars[1:]):
            assert start + width == pytest.approx(following, abs=1e-9)
        assert bars[-1][0] + bars[-1][1] == pytest.approx(end, abs=1e-9)
    # Its end marker: at the end time, in the outcome's colour.
    markers = {round(float(line.get_ydata()[0])): line for line in ax.lines}
    assert sorted(markers) == list(range(BUSY_TRIALS))
    for k, line in markers.items():
        assert line.get_xdata()[0] == spans.loc[k, "end"]
        assert line.get_color() == plot.OUTCOME_COLORS[spans.loc[k, "outcome"]]
    # Every trial of the recorded (first) replication is drawn, so the markers' colours count
    # that replication's outcome shares.
    for outcome, color in plot.OUTCOME_COLORS.items():
        drawn = sum(line.get_color() == color for line in ax.lines)
        assert drawn == round(busy_run.replication_values[outcome][0] * BUSY_TRIALS), outcome


@pytest.mark.slow
def test_timeline_gantt_waits_add_up_to_the_engines_waits(busy_run, ax):
    plot.timeline(busy_run.events, trials=BUSY_TRIALS, ax=ax)
    seconds = {name: 0.0 for name in plot.WAIT_COLORS}
    colour_of = {matplotlib.colors.to_hex(c): name for name, c in plot.WAIT_COLORS.items()}
    for bars in _bars_by_row(ax).values():
        for _, width, color in bars:
            if color in colour_of:
                seconds[colour_of[color]] += width
    # The engine tallies each trial's waits as it runs, not from the log (the recorded
    # replication's are the first of its per-replication values).
    for resource in ("agents", "rate_limit", "llm", "reviewers"):
        first = busy_run.replication_values[f"wait_{resource}"][0]
        assert seconds[resource] / BUSY_TRIALS == pytest.approx(first, rel=1e-9)
        assert seconds[resource] > 0
    assert seconds["backoff"] > 0


@pytest.mark.slow
def test_timeline_gantt_draws_human_review_as_review_not_work(busy_run, ax):
    # A human gate's checkpoint holds a reviewer from the "checkpoint" event to the release:
    # people's time, drawn in its own colour and legend entry, never as the agent's work.
    events = busy_run.events
    plot.timeline(events, trials=BUSY_TRIALS, ax=ax)
    review = matplotlib.colors.to_hex(plot.REVIEW_COLOR)
    work = matplotlib.colors.to_hex(plot.WORK_COLOR)
    drawn = {color: [] for color in (review, work)}
    for row, bars in _bars_by_row(ax).items():
        for start, width, color in bars:
            if color in drawn:
                drawn[color].append((row, start, width))
    expected = []
    for trial, log in events.groupby("trial"):
        log = log.sort_values("time", kind="stable")
        times, kinds, resources = log["time"].to_numpy(), log["kind"].to_numpy(), log["resource"].to_numpy()
        for i in range(len(log) - 1):
            if kinds[i] == "checkpoint" and resources[i] == "reviewers" and times[i + 1] > times[i]:
                expected.append((trial, times[i], times[i + 1] - times[i]))
    assert expected, "the run has no human review to draw"
    assert sorted(drawn[review]) == pytest.approx(sorted(expected))
    review_starts = {(row, start) for row, start, _ in expected}
    assert not review_starts & {(row, start) for row, start, _ in drawn[work]}
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"human review", "agent work"} <= legend and "work" not in legend


@pytest.mark.slow
def test_durations_of_a_real_run_against_its_summary_and_deadline(ax):
    harness = relsim.Scenario.from_toml(str(SCENARIO_DIR / "flaky_eval_harness.toml"))
    trials = 400
    run = relsim.simulate_timeline(harness, trials, seed=5, record=trials)
    deadline = harness.timing.deadline
    plot.durations(run, deadline=deadline, ax=ax)
    ecdf, points, mean, deadline_line = ax.lines
    spans = _spans_by_hand(run.events)
    seconds = np.sort((spans["end"] - spans["arrive"]).to_numpy())
    np.testing.assert_array_equal(ecdf.get_xdata(), seconds)
    np.testing.assert_allclose(ecdf.get_ydata(), np.arange(1, trials + 1) / trials)
    assert ecdf.get_label() == f"all {trials} trials"
    # The quantile points are the result's p50 / p90 / p99, and each sits on the drawn
    # distribution as its quantile: the smallest duration with F(t) >= q.
    summary = run.duration
    np.testing.assert_array_equal(points.get_xdata(), [summary["p50"], summary["p90"], summary["p99"]])
    np.testing.assert_array_equal(points.get_ydata(), [0.5, 0.9, 0.99])
    for q, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
        assert seconds[math.ceil(q * trials) - 1] == summary[key]
    assert mean.get_xdata()[0] == summary["mean"]
    assert seconds.mean() == pytest.approx(summary["mean"], rel=1e-12)
    # The deadline line is the scenario's deadline, and the trials at it are the timeouts
    # (batch arrivals at 0: a timeout ends exactly at the deadline).
    assert deadline == 1200 and deadline_line.get_xdata()[0] == deadline
    assert np.mean(np.isclose(seconds, deadline)) == run.timeout > 0
    assert seconds.max() == pytest.approx(deadline)


@pytest.mark.slow
def test_durations_of_the_first_recorded_trials_of_a_fleet(ax):
    support = relsim.Scenario.from_toml(str(SCENARIO_DIR / "support_reviewers.toml"))
    support = relsim.Scenario.from_dict({**support.to_dict(), "fleet": {
        **support.to_dict()["fleet"], "tasks": 300}})
    run = relsim.simulate_timeline(support, replications=2, seed=2, record=50)
    plot.durations(run, ax=ax)
    ecdf, points, mean = ax.lines  # no deadline in this scenario: no deadline line
    spans = _spans_by_hand(run.events)
    assert len(spans) == 50
    np.testing.assert_array_equal(ecdf.get_xdata(), np.sort((spans["end"] - spans["arrive"]).to_numpy()))
    assert ecdf.get_label() == "the first 50 of 300 tasks of the first replication (recorded)"
    assert points.get_label() == "p50, p90, p99 (mean of 2 replications)"
    # The summary is the whole run's, not the recorded trials'.
    np.testing.assert_array_equal(points.get_xdata(), [run.duration[k] for k in ("p50", "p90", "p99")])
    assert mean.get_xdata()[0] == run.duration["mean"]


# ---------------------------------------------------------------- hostile input: one error type
@pytest.mark.parametrize("call", [
    lambda: plot.compounding([0.9], [5], ax="not an axes"),
    lambda: plot.required_accuracy("text"),
    lambda: plot.required_accuracy({}),
    lambda: plot.retries(0.9, 25, max_retries=10**9),
    lambda: plot.convergence(None, 0.5),
    lambda: plot.convergence(5, 0.5),
    lambda: plot.timeline(None),
    lambda: plot.timeline(5),
])
def test_bad_input_is_a_relsim_error(call):
    with pytest.raises(RelsimError):
        call()


def test_user_text_with_dollars_is_drawn_literally():
    # a metric named like mathtext must be a label, not a parse error when the figure is drawn
    import matplotlib.pyplot as plt

    comparison = {"quantities": {r"$\foo$": {"difference": 0.1, "ci": [0.0, 0.2]}}}
    ax = plot.paired_differences(comparison)
    ax.figure.canvas.draw()
    assert [t.get_text() for t in ax.get_yticklabels()] == [r"\$\foo\$"]
    plt.close(ax.figure)
