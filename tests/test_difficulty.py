"""The task-difficulty fit (``relsim.evalstats.fit_difficulty``), pass^k beyond the trials run
(``relsim analyze --extrapolate``) and ``relsim fit``.

Oracles from outside the code under test: the zero-one-inflated beta-binomial's likelihood
written here from its formula and maximised by brute force over a grid and by scipy's
Nelder-Mead from many starts; the Beta's moments from ``scipy.special.betaln``; the exact
engine on the written scenario; and, for the intervals, harnesses simulated from a known
truth (their coverage, measured, is in docs/commands/fit.md).
"""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import betaln, expit, gammaln, softmax

import relsim
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.evalstats import TrialDataError, _zoib, difficulty
from relsim.evalstats.difficulty import fit_difficulty, verifier_from_audit


def trials_of(counts):
    """A trials frame from ``[(n, c), ...]`` per task."""
    rows = [(f"t{i:02d}", j + 1, int(j < c)) for i, (n, c) in enumerate(counts) for j in range(n)]
    return pd.DataFrame(rows, columns=["task", "trial", "success"])


def csv_of(counts, path):
    trials_of(counts).to_csv(path, index=False)
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def loglik(n, c, always, never, alpha, beta):
    """The model's log-likelihood from its formula (broadcasting the parameters over
    leading axes, the tasks on the last)."""
    weight = 1.0 - always - never
    log_choose = gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1)
    spread = np.exp(log_choose + betaln(alpha + c, beta + n - c) - betaln(alpha, beta))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(always * (c == n) + never * (c == 0) + weight * spread).sum(axis=-1)


def moment(alpha, beta, k):
    return math.exp(betaln(alpha + k, beta) - betaln(alpha, beta))


# five trials a task, every kind of task: the full model (4 parameters) is identified
FIVE = [(5, c) for c in (0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 5, 1, 3, 4)]
# three to five trials a task (the weights by Newton's method)
MIXED = [(3, 0), (3, 1), (4, 2), (5, 5), (5, 3), (4, 4), (3, 2), (5, 0), (4, 1), (5, 4),
         (3, 3), (5, 2)]


# ------------------------------------------------------------------ maximum likelihood
def brute_force(counts):
    """The grid maximum of the likelihood over (w1, w0, logit mean, log precision): a coarse
    grid, then a finer one around its best point."""
    n = np.array([t[0] for t in counts], float)
    c = np.array([t[1] for t in counts], float)
    best = (-np.inf, None)
    centre, spans, steps = (0.3, 0.25, 0.0, 2.5), (0.3, 0.25, 4.0, 6.0), (0.025, 0.025, 0.25, 0.25)
    for _ in range(3):
        axes = [np.arange(max(m - s, 0.0) if i < 2 else m - s, m + s + 1e-9, h)
                for i, (m, s, h) in enumerate(zip(centre, spans, steps))]
        w1, w0, u, v = np.meshgrid(*axes, indexing="ij", sparse=True)
        ok = (w1 + w0 <= 1.0)
        mean, size = expit(u), np.exp(v)
        values = loglik(n, c, w1[..., None], w0[..., None], (mean * size)[..., None],
                        ((1 - mean) * size)[..., None])
        values = np.where(ok & np.isfinite(values), values, -np.inf)
        index = np.unravel_index(np.argmax(values), values.shape)
        point = tuple(float(axis.ravel()[i]) for axis, i in zip((w1, w0, u, v), index))
        if values[index] > best[0]:
            best = (float(values[index]), point)
        centre = best[1]
        spans = tuple(2 * h for h in steps)
        steps = tuple(h / 5 for h in steps)
    w1, w0, u, v = best[1]
    return best[0], (w1, w0, expit(u) * math.exp(v), (1 - expit(u)) * math.exp(v))


@pytest.mark.parametrize("counts", [FIVE, MIXED], ids=["five trials", "3 to 5 trials"])
def test_the_fit_is_the_maximum_of_a_brute_force_grid(counts):
    fit = fit_difficulty(trials_of(counts))
    n = np.array([t[0] for t in counts], float)
    c = np.array([t[1] for t in counts], float)
    grid_best, (w1, w0, alpha, beta) = brute_force(counts)
    ours = loglik(n, c, fit.always, fit.never, fit.alpha, fit.beta)

    assert ours == pytest.approx(fit.loglik, abs=1e-9)  # the reported value is the formula's
    assert fit.loglik >= grid_best - 1e-9  # no grid point beats the fit
    assert fit.loglik - grid_best < 2e-3  # and the grid's finest point comes close
    # what the data identify agrees with the grid's best point: pass^k for the k run
    for k in range(1, int(n.max()) + 1):
        grid_hat = w1 + (1 - w1 - w0) * moment(alpha, beta, k)
        assert fit.pass_hat_k(k) == pytest.approx(grid_hat, abs=0.02)
    # negative control: a parameter moved off the maximum lowers the likelihood
    assert loglik(n, c, fit.always, fit.never, 1.3 * fit.alpha, fit.beta) < fit.loglik - 1e-4


def nelder_mead(counts, rng, starts=6):
    """The best of scipy's Nelder-Mead from random starts over every model the data identify
    (the full likelihood in softmax weights, logit mean and log precision)."""
    n = np.array([t[0] for t in counts], float)
    c = np.array([t[1] for t in counts], float)
    cells = _zoib.Cells.of(n.astype(int), c.astype(int))
    permitted = _zoib.allowed(cells, cells.counts())[0]
    best = -np.inf
    for model, ok in zip(_zoib.MODELS, permitted):
        always, never, spread = model
        if not ok:
            continue
        if not spread:
            best = max(best, float(loglik(n, c, np.mean(c == n), np.mean(c == 0), 1.0, 1.0)))
            continue

        def negative(x, always=always, never=never):
            logits = [0.0] + [x[2 + i] for i in range(always + never)]
            weights = softmax(logits)
            w1 = weights[1] if always else 0.0
            w0 = weights[-1] if never else 0.0
            size = math.exp(min(max(x[1], _zoib.V_RANGE[0]), _zoib.V_RANGE[1]))
            value = loglik(n, c, w1, w0, expit(x[0]) * size, (1 - expit(x[0])) * size)
            return -value if np.isfinite(value) else 1e300

        for _ in range(starts):
            x0 = np.concatenate([[rng.uniform(-3, 3), rng.uniform(-2, 7)],
                                 rng.uniform(-3, 1, size=always + never)])
            result = minimize(negative, x0, method="Nelder-Mead",
                              options={"xatol": 1e-8, "fatol": 1e-11, "maxfev": 20000})
            best = max(best, -result.fun)
    return best


@pytest.mark.slow
def test_the_fit_matches_nelder_mead_from_many_starts_on_random_harnesses():
    rng = np.random.default_rng(11)
    checked = 0
    while checked < 6:
        tasks = int(rng.integers(6, 25))
        most = int(rng.integers(2, 7))
        n = rng.integers(1, most + 1, size=tasks) if checked % 2 else np.full(tasks, most)
        kind = rng.choice(3, size=tasks, p=rng.dirichlet([1, 1, 2]))
        p = np.where(kind == 0, 1.0, np.where(kind == 1, 0.0, rng.beta(0.8, 1.5, size=tasks)))
        c = rng.binomial(n, p)
        if n.max() < 2 or c.sum() in (0, n.sum()):
            continue
        counts = list(zip(n.tolist(), c.tolist()))
        fit = fit_difficulty(trials_of(counts + [(1, 0)] * max(0, 5 - tasks)))
        oracle = nelder_mead(counts + [(1, 0)] * max(0, 5 - tasks), rng)
        assert fit.loglik >= oracle - 1e-6
        checked += 1


def test_log_probabilities_by_sums_of_logs_are_betalns(monkeypatch):
    # more than _MOST_SUMMED trials take scipy's betaln: the two ways agree (to the
    # cancellation in betaln's difference of two large numbers at a precision of thousands)
    cells = _zoib.Cells.of(np.array([5, 5, 5, 7]), np.array([0, 2, 5, 3]))
    u, v = np.array([[-1.0, 0.3, 4.0]]), np.array([[-2.0, 1.0, 8.0]])
    summed = _zoib.log_beta_binomial(cells, u, v)
    monkeypatch.setattr(_zoib, "_MOST_SUMMED", 0)
    for ours, scipys in zip(summed, _zoib.log_beta_binomial(cells, u, v)):
        np.testing.assert_allclose(ours, scipys, rtol=1e-9, atol=1e-12)


def test_the_closed_form_weights_agree_with_newtons_method():
    # equal trial counts take the closed form; the Newton path is the reference
    rng = np.random.default_rng(3)
    cells = _zoib.Cells.of(np.full(5, 4), np.arange(5))
    counts = rng.multinomial(30, [0.15, 0.2, 0.2, 0.15, 0.3], size=40).astype(float)
    closed = _zoib.fit(cells, counts)
    newton = _zoib.fit(cells, counts, newton=True)
    np.testing.assert_allclose(closed.loglik, newton.loglik, atol=1e-8)
    np.testing.assert_array_equal(closed.model, newton.model)
    np.testing.assert_allclose(closed.always, newton.always, atol=1e-4)
    np.testing.assert_allclose(closed.never, newton.never, atol=1e-4)


# ------------------------------------------------------------------ what the data identify
def test_no_task_failing_every_trial_leaves_never_out():
    fit = fit_difficulty(trials_of([(4, c) for c in (1, 2, 3, 4, 4, 2, 3, 1)]))
    assert fit.never == 0.0 and "never" not in fit.identified
    assert fit.left_out["never"] == "no task failed every trial"


def test_all_or_nothing_tasks_leave_the_beta_out():
    fit = fit_difficulty(trials_of([(3, 3)] * 4 + [(3, 0)] * 2))
    assert fit.identified == ("always", "never")
    assert (fit.always, fit.never, fit.beta_weight) == pytest.approx((4 / 6, 2 / 6, 0.0))
    assert fit.alpha is None and fit.to_dict()["beta"] is None
    assert fit.pass_hat_k(50) == pytest.approx(4 / 6)  # flat: nothing varies within a task


def test_three_trials_identify_three_parameters_and_two_identify_two():
    three = fit_difficulty(trials_of([(3, c) for c in (0, 0, 1, 2, 3, 3, 3, 1, 2, 2)]))
    assert not {"always", "never"} <= set(three.identified)
    assert len(three.identified) - ("beta_weight" in three.identified) <= 3
    two = fit_difficulty(trials_of([(2, c) for c in (0, 0, 1, 2, 2, 2, 1, 1)]))
    assert two.identified == ("alpha", "beta")
    assert "2 trials a task identify at most 2 parameters" in two.left_out["always"]


# ------------------------------------------------------------------ refusals
def test_one_trial_per_task_is_refused_with_one_line(tmp_path, capsys):
    path = csv_of([(1, c) for c in (0, 1, 1, 0, 1, 1)], tmp_path / "once.csv")
    with pytest.raises(TrialDataError, match="trials per task: must be at least 2"):
        fit_difficulty(path)
    for argv in (("fit", path), ("analyze", path, "--extrapolate", "10")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "got 1 for every task" in err


@pytest.mark.parametrize("counts, message", [
    ([(3, 1), (3, 2), (3, 0), (3, 3)], "tasks: must be at least 5"),
    ([(3, 3)] * 6, "got every trial passed"),
    ([(4, 0)] * 6, "got every trial failed"),
])
def test_data_that_cannot_say_how_tasks_differ_are_refused(counts, message):
    with pytest.raises(TrialDataError, match=message):
        fit_difficulty(trials_of(counts))


def test_arguments_out_of_range_are_refused(tmp_path, capsys):
    with pytest.raises(RelsimError, match="draws: must be an integer in"):
        fit_difficulty(trials_of(FIVE), draws=100)
    fit = fit_difficulty(trials_of(FIVE))
    with pytest.raises(RelsimError, match=r"k: must be an integer in \[1, 100\]"):
        fit.extrapolate(101)
    with pytest.raises(RelsimError, match=r"extrapolate: must be an integer in \[1, 100\]"):
        relsim.evalstats.analyze(trials_of(FIVE), extrapolate=0)
    path = csv_of(FIVE, tmp_path / "five.csv")
    with pytest.raises(SystemExit) as stop:
        main(["analyze", path, "--extrapolate", "101"])
    assert stop.value.code == 2
    assert "--extrapolate: must be an integer in 1..100" in capsys.readouterr().err


def test_the_command_lines_limits_are_the_librarys():
    from relsim.cli import fit as fit_command
    from relsim.cli import trials

    assert (fit_command.MIN_DRAWS, fit_command.MAX_DRAWS) == (difficulty.MIN_DRAWS,
                                                              difficulty.MAX_DRAWS)
    assert trials.MAX_EXTRAPOLATE == difficulty.MAX_K


# ------------------------------------------------------------------ pass@k and pass^k
def test_pass_k_from_the_fit_is_the_formula_of_its_parameters():
    fit = fit_difficulty(trials_of(FIVE))
    for k in (1, 2, 7, 40):
        assert fit.pass_hat_k(k) == pytest.approx(
            fit.always + fit.beta_weight * moment(fit.alpha, fit.beta, k), rel=1e-12)
        assert fit.pass_at_k(k) == pytest.approx(
            1 - fit.never - fit.beta_weight * moment(fit.beta, fit.alpha, k), rel=1e-12)
    assert fit.pass_at_k(1) == pytest.approx(fit.pass_hat_k(1), rel=1e-12)
    # the check: observed pass^k is the mean of the unbiased per-task estimates
    for entry in fit.check:
        k = entry["k"]
        observed = np.mean([math.comb(c, k) / math.comb(n, k) for n, c in FIVE])
        assert entry["observed"] == pytest.approx(observed, rel=1e-12)
        assert entry["fitted"] == pytest.approx(fit.pass_hat_k(k), rel=1e-12)


def test_the_bootstrap_is_seeded_and_its_intervals_hold_the_estimate():
    first = fit_difficulty(trials_of(FIVE), seed=5)
    again = fit_difficulty(trials_of(FIVE), seed=5)
    other = fit_difficulty(trials_of(FIVE), seed=6)
    assert first.to_dict() == again.to_dict()
    assert first.to_dict()["draws"] != other.to_dict()["draws"]
    assert len(first.to_dict()["draws"]) == 200
    table = first.extrapolate(30)
    for metric in ("pass_at_k", "pass_hat_k"):
        for k, entry in table[metric].items():
            low, high = entry["ci"]
            assert 0.0 <= low <= entry["estimate"] <= high <= 1.0
            assert entry["extrapolated"] == (int(k) > 5)


def test_fit_json_has_the_briefs_keys(tmp_path, capsys):
    path = csv_of(FIVE, tmp_path / "five.csv")
    code, out, err = run(capsys, "fit", path, "--json")
    assert code == 0 and err == ""
    record = json.loads(out)
    assert set(record) == {"tasks", "trials_per_task", "always", "never", "beta", "identified",
                           "loglik", "check", "seed", "draws"}
    assert record["trials_per_task"] == {"min": 5, "max": 5}
    assert set(record["beta"]) == {"weight", "alpha", "beta"}
    assert set(record["draws"][0]) == set(difficulty.DRAW_KEYS)
    assert [entry["k"] for entry in record["check"]] == [1, 2, 3, 4, 5]
    assert record["seed"] == 0


def test_analyze_extrapolate_adds_fitted_pass_k_beside_the_observed(tmp_path, capsys):
    path = csv_of(FIVE, tmp_path / "five.csv")
    code, out, _ = run(capsys, "analyze", path, "--extrapolate", "8", "--json")
    assert code == 0
    record = json.loads(out)
    extrapolated = record["extrapolated"]
    assert list(extrapolated["pass_hat_k"]) == [str(k) for k in range(1, 9)]
    assert [e["extrapolated"] for e in extrapolated["pass_hat_k"].values()] == [False] * 5 + [True] * 3
    fit = fit_difficulty(trials_of(FIVE), seed=np.random.SeedSequence(0, spawn_key=(21,)))
    assert extrapolated["pass_hat_k"]["8"]["estimate"] == pytest.approx(fit.pass_hat_k(8))
    assert extrapolated["check"] == [dict(e) for e in fit.check]
    assert record["pass_hat_k"]["3"]["estimate"] == pytest.approx(0.5 * 0 + np.mean(
        [math.comb(c, 3) / math.comb(5, 3) for _, c in FIVE]))
    code, text, _ = run(capsys, "analyze", path, "--extrapolate", "8")
    lines = [line for line in text.splitlines() if line.startswith("k=")]
    assert len(lines) == 8 and all(line.endswith("extrapolated") == (i >= 5)
                                   for i, line in enumerate(lines))
    assert "check        pass^k fitted vs observed: k=1" in text
    assert "extrapolated" not in run(capsys, "analyze", path)[1]


# ------------------------------------------------------------------ the written scenario
def test_the_written_scenario_reproduces_the_fit():
    fit = fit_difficulty(trials_of(FIVE))
    scenario = fit.to_scenario()
    assert scenario.steps == 1 and scenario.verifier == relsim.Verifier(0.0, 0.0)
    # 0 retries, a perfect verifier: success is pass@1; r retries rerun the task: pass@(r+1)
    assert relsim.evaluate(scenario).success == pytest.approx(fit.pass_at_k(1), abs=1e-9)
    for retries in (1, 4, 20):
        design = scenario.__class__.from_dict({**scenario.to_dict(),
                                               "retries": {"per_step": retries}})
        assert relsim.evaluate(design).success == pytest.approx(
            fit.pass_at_k(retries + 1), abs=1e-9)
    # k steps of one task's class are k trials of that task: success is pass^k, exact for
    # k <= 2 * 16 - 1 (Gauss-Jacobi), and within 1e-5 out to k = 100
    for k, tolerance in ((2, 1e-9), (10, 1e-9), (31, 1e-9), (60, 1e-5), (100, 1e-5)):
        chain = scenario.__class__.from_dict({**scenario.to_dict(), "steps": k})
        assert relsim.evaluate(chain).success == pytest.approx(fit.pass_hat_k(k), abs=tolerance)
    # negative control: 2 nodes are exact to k = 3 only
    fewer = fit.to_scenario(nodes=2)
    for k, exact in ((3, True), (10, False)):
        chain = fewer.__class__.from_dict({**fewer.to_dict(), "steps": k})
        assert (abs(relsim.evaluate(chain).success - fit.pass_hat_k(k)) < 1e-12) == exact


@pytest.mark.parametrize("alpha, beta", [(0.05, 0.05), (0.4, 3.0), (2000.0, 3000.0),
                                         (4000.0, 0.05)])
def test_the_beta_quadrature_holds_its_moments(alpha, beta):
    nodes, weights = difficulty.beta_nodes(alpha, beta, difficulty.QUADRATURE_NODES)
    assert np.all((nodes >= 0) & (nodes <= 1)) and weights.sum() == pytest.approx(1.0)
    for k in range(32):
        assert (weights * nodes**k).sum() == pytest.approx(moment(alpha, beta, k), rel=1e-9)


def test_relsim_fit_writes_a_scenario_that_solve_plans(tmp_path, capsys):
    path = csv_of(FIVE, tmp_path / "five.csv")
    out = tmp_path / "fit.toml"
    code, text, err = run(capsys, "fit", path, "-o", str(out))
    assert code == 0 and err == ""
    assert f"scenario written: {out}" in text
    written = relsim.Scenario.from_toml(out)
    fit = fit_difficulty(trials_of(FIVE))
    assert written == fit.to_scenario(name=written.name)
    assert tomllib.loads(out.read_text())["verifier"] == {"miss": 0.0, "false_reject": 0.0}
    # the tasks that never pass cap success at 1 - never < 0.95: no budget reaches it
    code, text, _ = run(capsys, "solve", str(out), "--for", "retries", "--json")
    assert code == 3 and json.loads(text)["ceiling"] == pytest.approx(1 - fit.never, abs=1e-9)
    code, text, _ = run(capsys, "fit", path, "-o", str(out), "--target", "0.9")
    code, text, _ = run(capsys, "solve", str(out), "--for", "retries", "--json")
    least = next(r for r in range(100) if fit.pass_at_k(r + 1) >= 0.9)
    assert code == 0 and json.loads(text)["value"] == least


def test_a_verifier_from_an_audit(tmp_path, capsys):
    audit = {"labels": 100, "miss": {"estimate": 0.1, "ci": [0.05, 0.18], "effective": 40},
             "false_reject": {"estimate": 0.02, "ci": [0.0, 0.07], "effective": 60}}
    assert verifier_from_audit(audit) == relsim.Verifier(miss=0.18, false_reject=0.07)
    assert verifier_from_audit(audit, at="estimate") == relsim.Verifier(0.1, 0.02)
    assert verifier_from_audit(audit, at="lower") == relsim.Verifier(0.05, 0.0)
    with pytest.raises(RelsimError, match=r"miss\.ci: must be a list \[low, high\] of numbers in \[0, 1\]"):
        verifier_from_audit({**audit, "miss": {"estimate": 0.1, "ci": [0.05, 1.5], "effective": 40}})
    # the one reader of audits: a file, as the planners' --verifier-from reads it
    (tmp_path / "a.json").write_text(json.dumps(audit))
    assert verifier_from_audit(tmp_path / "a.json", at="lower") == relsim.Verifier(0.05, 0.0)
    fit = fit_difficulty(trials_of(FIVE))
    scenario = fit.to_scenario(verifier=audit)
    # zero retries: a correct attempt is accepted with 1 - false_reject
    expected = sum(w * p * (1 - 0.07) for w, p in fit.classes())
    assert relsim.evaluate(scenario).success == pytest.approx(expected, abs=1e-12)

    source = csv_of(FIVE, tmp_path / "five.csv")
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    out = tmp_path / "fit.toml"
    code, text, err = run(capsys, "fit", source, "-o", str(out), "--verifier-from",
                          str(tmp_path / "audit.json"), "--at", "estimate")
    assert code == 0 and "verifier miss 0.1, false_reject 0.02" in text
    assert relsim.Scenario.from_toml(out).verifier == relsim.Verifier(0.1, 0.02)
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = run(capsys, "fit", source, "-o", str(out), "--verifier-from",
                          str(tmp_path / "bad.json"))
    assert code == 2 and "bad.json: not JSON" in err


def test_the_docs_example_scenario_is_what_relsim_fit_writes(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    out = tmp_path / "fit.toml"
    code, _, _ = run(capsys, "fit", "examples/harness/exercise1.csv", "-o", str(out),
                     "--verifier-from", "docs/examples/grader_audit.json")
    assert code == 0
    assert out.read_text() == (root / "docs" / "examples" / "exercise1_fit.toml").read_text(), (
        "docs/examples/exercise1_fit.toml is stale: rewrite it with the command in its first line"
    )


def test_toml_text_round_trips_every_ready_scenario():
    from pathlib import Path

    from relsim.scenario.files import toml_text

    folder = Path(__file__).resolve().parents[1] / "scenarios"
    files = sorted(folder.glob("*.toml"))
    assert files
    for path in files:
        scenario = relsim.Scenario.from_toml(path)
        assert relsim.Scenario.from_dict(tomllib.loads(toml_text(scenario.to_dict()))) == scenario


# ------------------------------------------------------------------ coverage by simulation
#: Worlds with a known truth (always, never, alpha, beta), as in docs/commands/fit.md.
TRUTHS = {
    "both masses, Beta(2, 2)": (0.2, 0.1, 2.0, 2.0),
    "no mass, Beta(0.8, 0.5)": (0.0, 0.0, 0.8, 0.5),
    "always 0.3, Beta(5, 2)": (0.3, 0.0, 5.0, 2.0),
    "both masses, uniform": (0.1, 0.2, 1.0, 1.0),
}


def truth_pass_k(truth, k):
    """The truth's pass@k and pass^k."""
    always, never, alpha, beta = truth
    spread = 1 - always - never
    return 1 - never - spread * moment(beta, alpha, k), always + spread * moment(alpha, beta, k)


def coverage(truth, tasks, trials, harnesses, ks, seed, confidence=0.95):
    """The shares of simulated harnesses whose pass@k and pass^k intervals hold the truth,
    ``(2, len(ks))`` (pass@k, pass^k), exactly and to within :data:`PASS_AT_SLACK`.

    Each harness draws ``tasks`` tasks from the truth and ``trials`` trials of each; its
    bootstrap resamples the tasks (a multinomial draw of the histogram of per-task successes,
    as resampling the tasks is) and refits each resample, all harnesses in one batch, as
    :func:`fit_difficulty` does for one.
    """
    rng = np.random.default_rng(seed)
    always, never, alpha, beta = truth
    kind = rng.choice(3, size=(harnesses, tasks), p=[always, never, 1 - always - never])
    p = np.where(kind == 0, 1.0, np.where(kind == 1, 0.0,
                                          rng.beta(alpha, beta, size=(harnesses, tasks))))
    successes = rng.binomial(trials, p)
    histograms = np.stack([np.bincount(row, minlength=trials + 1) for row in successes])
    draws = difficulty.MIN_DRAWS
    resampled = np.concatenate([rng.multinomial(tasks, h / tasks, size=draws)
                                for h in histograms]).astype(float)
    cells = _zoib.Cells.of(np.full(trials + 1, trials), np.arange(trials + 1))
    fitted = _zoib.fit(cells, resampled)
    ks = np.array(ks)
    values = (difficulty._pass_at(fitted.never, fitted.beta_weight, fitted.alpha, fitted.beta, ks),
              difficulty._pass_hat(fitted.always, fitted.beta_weight, fitted.alpha, fitted.beta,
                                   ks))
    held, near = np.zeros((2, len(ks))), np.zeros((2, len(ks)))
    for metric in range(2):
        table = values[metric].reshape(harnesses, draws, len(ks))
        for column, k in enumerate(ks):
            true = truth_pass_k(truth, int(k))[metric]
            for harness in range(harnesses):
                low, high = difficulty._interval(table[harness, :, column], tasks, confidence)
                held[metric, column] += low - 1e-12 <= true <= high + 1e-12
                near[metric, column] += low - PASS_AT_SLACK <= true <= high + PASS_AT_SLACK
    return held / harnesses, near / harnesses


#: pass@k beyond the trials run, when the truth is within a hair of 1, misses its interval by
#: at most this much (the fitted Beta's tail near p = 0 is thinner than the truth's): the
#: coverage of pass@k is measured to within it (docs/commands/fit.md)
PASS_AT_SLACK = 1e-3

#: (truth, tasks, trials a task): cheap cells of the table in docs/commands/fit.md (with 3 or
#: 4 trials resamples repeat, and each distinct one is fitted once)
CELLS = [("both masses, Beta(2, 2)", 20, 3), ("both masses, uniform", 50, 3),
         ("always 0.3, Beta(5, 2)", 20, 4)]


@pytest.mark.slow
def test_extrapolated_intervals_cover_the_truth_in_at_least_90_percent_of_harnesses():
    harnesses, ks = 200, (1, 10, 20)
    runs = [coverage(TRUTHS[name], tasks, trials, harnesses, ks, seed=index)
            for index, (name, tasks, trials) in enumerate(CELLS)]
    exact = np.array([held for held, _ in runs])
    near = np.array([close for _, close in runs])
    # the floor, less 2.5 standard errors of a coverage of 90% over these harnesses
    floor = 0.90 - 2.5 * math.sqrt(0.9 * 0.1 / harnesses)
    pass_hat = exact[:, 1, :]
    assert pass_hat.min() >= floor, pass_hat
    assert pass_hat.mean() >= 0.92, pass_hat
    # pass@k near 1 is held to within PASS_AT_SLACK (docs/commands/fit.md)
    assert near[:, 0, :].min() >= floor, near[:, 0, :]
    # negative control: 60% intervals from the same machinery fall well short of the floor
    name, tasks, trials = CELLS[0]
    narrow, _ = coverage(TRUTHS[name], tasks, trials, harnesses, ks, seed=0, confidence=0.6)
    assert narrow[1].max() < floor, narrow


def coverage_table(harnesses=300):  # pragma: no cover - python3 tests/test_difficulty.py
    """The coverage table of docs/commands/fit.md: pass^k at k = 1, n, 10, 20 and pass@10
    (exactly, and to within PASS_AT_SLACK)."""
    sizes = [(tasks, trials) for tasks in (20, 50) for trials in (3, 4, 5)]
    print("| world | quantity | " + " | ".join(f"{t}x{n}" for t, n in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for index, (name, truth) in enumerate(TRUTHS.items()):
        rows: dict[str, list[str]] = {}
        for column, (tasks, trials) in enumerate(sizes):
            ks = (1, trials, 10, 20)
            seed = 100 * index + column
            (at, hat), (near, _) = coverage(truth, tasks, trials, harnesses, ks, seed=seed)
            for label, value in (("pass^1", hat[0]), ("pass^n", hat[1]), ("pass^10", hat[2]),
                                 ("pass^20", hat[3]), ("pass@10", at[2]),
                                 ("pass@10 to 0.001", near[2])):
                rows.setdefault(label, []).append(f"{100 * value:.1f}")
        for label, values in rows.items():
            print(f"| {name} | {label} | " + " | ".join(values) + " |", flush=True)


if __name__ == "__main__":  # pragma: no cover
    coverage_table()


@pytest.mark.parametrize("argv", [["--retries", "3"], ["--target", "0.9"], ["--verifier-from", "{audit}"],
                                  ["--target", "0.9", "--json"]])
def test_fit_refuses_the_scenario_flags_without_o(tmp_path, capsys, argv):
    # they set the scenario -o writes; without -o they were silently ignored
    source = csv_of(FIVE, tmp_path / "five.csv")
    audit = tmp_path / "audit.json"
    audit.write_text("{}")
    argv = [arg.format(audit=audit) for arg in argv]
    code, text, err = run(capsys, "fit", source, *argv)
    assert code == 2 and text == ""
    assert err == f"relsim: error: {argv[0]}: sets the scenario that -o FILE writes: give -o too\n"
    out = tmp_path / "fit.toml"
    code, text, err = run(capsys, "fit", source, "-o", str(out), "--retries", "3", "--target", "0.9")
    assert code == 0 and "3 retries; target 0.9" in text
    scenario = relsim.Scenario.from_toml(out)
    assert scenario.retries.per_step == 3 and scenario.target == 0.9
