"""The Monte Carlo kernels' sampling paths (relsim/montecarlo/_draws.py), each held to a
distribution computed from outside the code under test.

- The fast kernel's per-execution inversion table against exact enumeration of a step
  execution's attempt sequences, and the kernel's draws through it against the same
  enumeration by a chi-square test (with a negative control: a slightly different step).
- The general kernel's vectorized ``expit`` (a polynomial ``exp`` of its own) against
  ``math.exp`` and the scenario's ``expit``, to within a few units in the last place.
- The ziggurat's normals against ``scipy.stats.norm`` by a Kolmogorov-Smirnov test and a
  chi-square test whose outer bins lie in the ziggurat's tail (beyond its base edge ``r``),
  with negative controls (normals 1% too wide; normals from a table of 4096 quantiles).

Fixed seeds; the thresholds are p = 1e-6 (a test of a correct sampler fails one seed in a
million), the negative controls must fail them.
"""

from __future__ import annotations

import itertools
import math

import numba
import numpy as np
import pytest
from scipy import stats

import relsim
from relsim.montecarlo import _draws, _driver, _inputs
from relsim.montecarlo._layout import FULL32, Record
from relsim._running import InterruptFlag
from relsim.scenario import trial_model

SIGNIFICANCE = 1e-6


# ------------------------------------------------------------ the per-execution inversion table
def enumerated(p: float, miss: float, false_reject: float, retries: int) -> dict:
    """The outcome distribution of one step execution with ``retries`` retries, by summing
    over every sequence of attempt outcomes: {(attempts, how): probability}, ``how`` one of
    "correct", "wrong", "out" (out of retries)."""
    kinds = {
        "correct": p * (1 - false_reject),  # accepted and correct
        "wrong": (1 - p) * miss,  # accepted and wrong
        "rejected": p * false_reject + (1 - p) * (1 - miss),
    }
    out: dict = {}
    for sequence in itertools.product(kinds, repeat=retries + 1):
        chance = math.prod(kinds[kind] for kind in sequence)
        for attempt, kind in enumerate(sequence, start=1):
            if kind != "rejected":  # the first acceptance ends the execution
                key = (attempt, kind)
                break
        else:
            key = (retries + 1, "out")
        out[key] = out.get(key, 0.0) + chance
    return out


def from_table(accept_correct, accept_any, width, retries: int) -> dict:
    """The same distribution as the table gives it to a 32-bit uniform (one chunk)."""
    out: dict = {}
    below = 0
    for k in range(min(width, retries + 1)):
        out[(k + 1, "correct")] = (int(accept_correct[k]) - below) / 2**32
        out[(k + 1, "wrong")] = (int(accept_any[k]) - int(accept_correct[k])) / 2**32
        below = int(accept_any[k])
    out[(min(width, retries + 1), "out")] = (2**32 - below) / 2**32  # not accepted in the chunk
    return out


STEPS = [
    # p, miss, false_reject, per_step
    (0.9, 0.0, 0.0, 2),  # R1's step: a perfect verifier
    (0.85, 0.2, 0.05, 4),  # R3's step
    (0.3, 0.5, 0.4, 6),
    (0.6, 1.0, 0.0, 3),  # no verifier: never rejected
    (0.0, 0.3, 0.2, 3),  # never correct
    (1.0, 0.0, 0.25, 3),  # always correct, rejected a quarter of the time
    (0.0, 0.0, 0.0, 2),  # never accepted
    (0.5, 0.5, 0.0, 0),  # no retries
]


@pytest.mark.parametrize("p, miss, false_reject, per_step", STEPS)
def test_execution_table_is_the_enumerated_distribution(p, miss, false_reject, per_step):
    accept_correct, accept_any, width = _draws.execution_table(
        np.array([p]), np.array([miss]), np.array([false_reject]),
        np.array([per_step], dtype=np.int64), 1 << 62,
    )
    assert accept_correct.dtype == accept_any.dtype == np.int64
    row_correct, row_any, row_width = accept_correct[0], accept_any[0], int(width[0])
    assert np.all(np.diff(row_any) >= 0) and np.all(row_correct <= row_any)
    assert np.all(row_any[row_width:] == FULL32)  # past the row: no uniform reaches it
    # every budget the task-wide cap may leave reads the same row, cut short
    for retries in range(per_step + 1):
        exact = enumerated(p, miss, false_reject, retries)
        table = from_table(row_correct, row_any, row_width, retries)
        for key in set(exact) | set(table):
            want, got = exact.get(key, 0.0), table.get(key, 0.0)
            # each cumulative threshold is rounded to 2**-32: an outcome is within 2**-32
            assert abs(got - want) <= 2**-32 + 1e-15, (retries, key, got, want)
            if want == 0.0:
                assert got == 0.0, (retries, key)  # structural zeros stay exact
            if want == 1.0:
                assert got == 1.0, (retries, key)


def test_a_long_execution_takes_a_fresh_uniform_per_chunk():
    # 100 retries at p = 0.02: the row covers a chunk of 32 attempts, and the chance that a
    # chunk is all rejected is q**32 (the next chunk has the same table: attempts are
    # independent)
    accept_correct, accept_any, width = _draws.execution_table(
        np.array([0.02]), np.array([0.0]), np.array([0.0]), np.array([100]), 1 << 62
    )
    assert int(width[0]) == _draws.EXECUTION_CHUNK == 32
    assert (2**32 - int(accept_any[0, 31])) / 2**32 == pytest.approx(0.98**32, abs=2**-32)
    # a task-wide budget caps the row
    _, _, capped = _draws.execution_table(
        np.array([0.02]), np.array([0.0]), np.array([0.0]), np.array([100]), 5
    )
    assert int(capped[0]) == 6


def kernel_counts(data: dict, trials: int, seed: int) -> np.ndarray:
    """The fast kernel's joint histogram of (outcome, attempts) over ``trials`` trials."""
    prepared = _inputs.kernel_input(trial_model(relsim.Scenario.from_dict(data)))
    assert prepared.exact
    kernel = _driver._Kernel(prepared)
    blocks = range(-(-trials // _driver.BLOCK_TRIALS))
    return kernel.run(np.random.SeedSequence(seed), blocks, trials, Record.empty(0),
                      InterruptFlag())


def chi_square_p_value(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """Pearson's test of counts against probabilities (cells expected under 5 pooled)."""
    n = counts.sum()
    expected = probabilities * n
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    statistic = float(((observed - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(statistic, len(expected) - 1))


# one step, so the kernel's histogram of (outcome, attempts) is one execution's distribution
ONE_STEP = [
    ({"p": 0.6, "miss": 0.3, "false_reject": 0.2}, 4),
    ({"p": 0.1, "miss": 0.0, "false_reject": 0.0}, 60),  # two chunks, and replays
]


@pytest.mark.parametrize("step, retries", ONE_STEP)
def test_the_fast_kernel_draws_an_execution_by_its_enumerated_distribution(step, retries):
    data = {"steps": 1, "p": step["p"],
            "verifier": {"miss": step["miss"], "false_reject": step["false_reject"]},
            "retries": {"per_step": retries}}
    counts = kernel_counts(data, 400_000, seed=7)
    exact = enumerated_closed(step["p"], step["miss"], step["false_reject"], retries)
    # outcome codes: success (accepted correct), silent failure (wrong), detected (out)
    cells = np.concatenate([counts[0, 1:], counts[1, 1:], counts[2, 1:]])
    probabilities = np.concatenate([exact["correct"], exact["wrong"], exact["out"]])
    assert chi_square_p_value(cells, probabilities) > SIGNIFICANCE
    # negative control: a step whose p is 0.01 higher is rejected by the same test
    other = enumerated_closed(step["p"] + 0.01, step["miss"], step["false_reject"], retries)
    control = np.concatenate([other["correct"], other["wrong"], other["out"]])
    assert chi_square_p_value(cells, control) < SIGNIFICANCE


def enumerated_closed(p: float, miss: float, false_reject: float, retries: int) -> dict:
    """``enumerated`` by its closed form (2**60 sequences are too many to list), checked
    against the enumeration where that is small."""
    correct, wrong = p * (1 - false_reject), (1 - p) * miss
    rejected = 1 - correct - wrong
    before = rejected ** np.arange(retries + 1)  # all earlier attempts rejected
    out = {"correct": before * correct, "wrong": before * wrong,
           "out": np.zeros(retries + 1)}
    out["out"][-1] = rejected ** (retries + 1)
    if retries <= 6:
        listed = enumerated(p, miss, false_reject, retries)
        for how, values in out.items():
            for attempt, value in enumerate(values, start=1):
                assert value == pytest.approx(listed.get((attempt, how), 0.0), abs=1e-15)
    return out


# ------------------------------------------------------------ the general kernel's expit
@numba.njit
def exp_nonpositive_array(y):
    out = np.empty(y.shape[0])
    for k in range(y.shape[0]):
        out[k] = _draws._exp_nonpositive(y[k])
    return out


def relative_errors(values: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """|values - truth| / truth where truth is a normal float (the ulp is 2**-52 of it)."""
    normal = truth > 1e-300
    return np.abs(values[normal] - truth[normal]) / truth[normal]


def test_the_polynomial_exp_is_within_two_ulp_of_libms():
    rng = np.random.default_rng(11)
    y = np.concatenate([-np.linspace(0, 708, 200_001), -rng.exponential(3.0, 200_000),
                        -rng.uniform(0, 1e-6, 1000), [0.0, -0.0]])
    values = exp_nonpositive_array(y)
    truth = np.array([math.exp(v) for v in y])
    assert relative_errors(values, truth).max() <= 2 * 2.0**-52
    assert exp_nonpositive_array(np.array([0.0, -0.0]))[0] == 1.0
    # below -708 libm's value is subnormal or 0: this one is 0, which no threshold tells apart
    assert (exp_nonpositive_array(np.array([-708.5, -745.2, -1e300, -np.inf])) == 0.0).all()
    # negative control: the same check catches an error of 4e-16 (a Taylor term short)
    assert relative_errors(values * (1 + 4e-16), truth).max() > 2 * 2.0**-52


def test_the_vectorized_expit_is_the_scenarios_to_a_few_ulp():
    from relsim.scenario.compiled import expit

    rng = np.random.default_rng(12)
    x = np.concatenate([np.linspace(-800, 800, 160_001), rng.normal(0, 3, 200_000),
                        [0.0, -0.0, 1e300, -1e300]])
    values = _draws.expit_select_array(x)
    truth = np.array([expit(float(v)) for v in x])
    assert relative_errors(values, truth).max() <= 2.0**-51
    assert values[-4] == values[-3] == 0.5 and values[-2] == 1.0 and values[-1] == 0.0
    # its thresholds are those of the scenario's expit to within one unit of 2**-32
    t_values = np.floor(values * 2.0**32 + 0.5)
    t_truth = np.floor(truth * 2.0**32 + 0.5)
    assert np.abs(t_values - t_truth).max() <= 1
    assert relative_errors(values * (1 + 1e-15), truth).max() > 2.0**-51  # negative control


# ------------------------------------------------------------------------------ the ziggurat
def test_ziggurat_layers_have_equal_areas():
    inner, width, height = _draws._ziggurat_tables()
    scale = 2.0**52
    edges = width * scale  # x_i (layer 0: the base seen as a rectangle)
    r, area = _draws._ZIG_R, _draws._ZIG_AREA
    # the base: r f(r) plus the tail beyond r (scipy's normal survival function)
    tail = math.sqrt(2 * math.pi) * stats.norm.sf(r)
    assert r * math.exp(-r * r / 2) + tail == pytest.approx(area, rel=1e-14)
    assert edges[0] * height[255] == pytest.approx(area, rel=1e-14)
    # every other layer, the top one included: x_i (f(x_{i-1}) - f(x_i))
    layers = edges[1:] * (height[:-1] - height[1:])
    np.testing.assert_allclose(layers, area, rtol=1e-12)
    # the part surely under the curve is x_{i-1} / x_i of a layer
    np.testing.assert_allclose(inner[2:] / scale, edges[1:-1] / edges[2:], rtol=1e-15)
    assert inner[1] == 0 and inner[0] / scale == pytest.approx(r / edges[0], rel=1e-15)


NORMALS = 4_000_000


@numba.njit
def ziggurat_normals(state, count):
    """``count`` normals of the kernels' ``_normal`` from a xoshiro256++ ``state``."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    out = np.empty(count)
    for k in range(count):
        out[k], s0, s1, s2, s3 = _draws._normal(s0, s1, s2, s3)
    return out


@pytest.fixture(scope="module")
def normals() -> np.ndarray:
    state = np.random.SeedSequence(2024).generate_state(4, np.uint64)
    return ziggurat_normals(state, NORMALS)


def tail_chi_square(sample: np.ndarray) -> float:
    """Chi-square p-value over 100 equiprobable bins, the outer two split at the ziggurat's
    base edge ``r`` (its tail algorithm's region)."""
    r = _draws._ZIG_R
    inner_edges = stats.norm.ppf(np.linspace(0, 1, 101)[1:-1])
    edges = np.concatenate([[-np.inf, -r], inner_edges, [r, np.inf]])
    counts = np.histogram(sample, bins=edges)[0]
    probabilities = np.diff(stats.norm.cdf(edges))
    return chi_square_p_value(counts, probabilities)


@pytest.mark.slow
def test_ziggurat_normals_are_standard_normal(normals):
    assert stats.kstest(normals, stats.norm.cdf).pvalue > SIGNIFICANCE
    assert tail_chi_square(normals) > SIGNIFICANCE
    # the tail beyond r is reached (about 1,000 of 4 million) and the sign is fair
    beyond = np.abs(normals) > _draws._ZIG_R
    assert 700 < beyond.sum() < 1400
    assert abs((normals > 0).mean() - 0.5) < 5 * 0.5 / math.sqrt(NORMALS)


@pytest.mark.slow
def test_negative_controls_of_the_normal_tests(normals):
    # normals 1% too wide fail the KS test
    assert stats.kstest(normals * 1.01, stats.norm.cdf).pvalue < SIGNIFICANCE
    # a coarse table (4096 quantiles, looked up by a uniform) fails the tail bins
    table = stats.norm.ppf((np.arange(4096) + 0.5) / 4096)
    coarse = table[np.random.default_rng(5).integers(0, 4096, NORMALS)]
    assert tail_chi_square(coarse) < SIGNIFICANCE
