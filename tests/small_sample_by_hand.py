"""A slow, obvious reference for relsim.evalstats.smallsample: the documented formulas written
out one task at a time in plain Python with scipy.stats (no relsim), so the vectorised
functions (and what analyze and compare report from them) are checked against the text of
their docstrings, not against themselves."""

from __future__ import annotations

import math

from scipy import stats


def quantiles(confidence: float, tasks: int) -> tuple[float, float]:
    tail = 0.5 + confidence / 2
    return stats.norm.ppf(tail), stats.t.ppf(tail, tasks - 1)


def jeffreys(x: float, n: float, confidence: float) -> tuple[float, float]:
    """Jeffreys interval of x successes in n (real), holding x / n."""
    tail = 0.5 + confidence / 2
    theta = x / n
    low = stats.beta.ppf(1 - tail, x + 0.5, n - x + 0.5) if x > 0 else 0.0
    high = stats.beta.ppf(tail, x + 0.5, n - x + 0.5) if x < n else 1.0
    return min(low, theta), max(high, theta)


def effective(theta: float, variance: float, max_count: float, clusters: int, confidence: float):
    """effective_count_interval: Jeffreys on theta(1-theta)/max(V, floor) trials, (z/t)^2."""
    spread = theta * (1 - theta)
    total = max(variance, spread / max_count)
    count = spread / total if total > 0 else max_count
    z, t = quantiles(confidence, clusters)
    count *= (z / t) ** 2
    return jeffreys(count * theta, count, confidence)


def mover(base, base_low, base_high, cand, cand_low, cand_high, r):
    """cand - base from the two intervals (Zou and Donner 2008)."""
    def half(first, second):
        if math.isinf(first) or math.isinf(second):
            return math.inf
        return math.sqrt(max(first**2 + second**2 - 2 * r * first * second, 0.0))

    return (cand - base - half(cand - cand_low, base_high - base),
            cand - base + half(cand_high - cand, base - base_low))


def paired_proportion(a, b, n_a, n_b, k=1, confidence=0.95):
    """(difference, se, low, high) of paired per-task values, as documented."""
    tasks = len(a)
    d = [y - x for x, y in zip(a, b)]
    mean = sum(d) / tasks
    up = sum(y * (1 - x) for x, y in zip(a, b)) / tasks
    down = sum(x * (1 - y) for x, y in zip(a, b)) / tasks
    spread = sum((v - mean) ** 2 for v in d) / (tasks - 1) / tasks
    spread = 0.0 if spread <= 1e-24 * max(1.0, mean * mean) else spread
    within = sum(k * x * (1 - x) / m + k * y * (1 - y) / o
                 for x, y, m, o in zip(a, b, n_a, n_b)) / tasks**2
    variance = max(spread, within)
    max_count = tasks / (k * sum(1 / min(m, o) for m, o in zip(n_a, n_b)) / tasks)
    draw = max(up + down - mean**2, 0.0)
    count = draw / variance if variance > 0 and draw > 0 else max_count
    count = min(count, max_count)
    z, t = quantiles(confidence, tasks)
    count *= (z / t) ** 2
    up_low, up_high = jeffreys(count * up, count, confidence)
    down_low, down_high = jeffreys(count * down, count, confidence)
    r = -math.sqrt(up * down / ((1 - up) * (1 - down))) if 0 < up < 1 and 0 < down < 1 else 0.0
    low, high = mover(down, down_low, down_high, up, up_low, up_high, r)
    if variance > 0:
        se = math.sqrt(variance)
    else:
        su = (up * max_count + 0.5) / (max_count + 1)
        sd = (down * max_count + 0.5) / (max_count + 1)
        se = math.sqrt((su + sd - (su - sd) ** 2) / (max_count + 1))
    return mean, se, max(-1.0, low), min(1.0, high)


def ratio(y, x, confidence=0.95):
    """(R, se, low, high) of sum y / sum x: hull of Hall's skewness-corrected t and the
    modified Cox log-scale interval, cut at 0, rule of three for a column of zeros."""
    used = [(a, b) for a, b in zip(y, x) if b > 0 or a != 0]
    tasks = len(used)
    total_y, total_x = sum(a for a, _ in used), sum(b for _, b in used)
    estimate = total_y / total_x
    mean_x = total_x / tasks
    u = [(a - estimate * b) / mean_x for a, b in used]
    se = math.sqrt(sum(v * v for v in u) / (tasks * (tasks - 1)))
    second = sum(v * v for v in u) / tasks
    skew = sum(v**3 for v in u) / tasks / second**1.5 if second > 0 else 0.0
    z, t = quantiles(confidence, tasks)
    nonnegative = all(a >= 0 for a in y) and all(b >= 0 for b in x)
    if nonnegative and total_y == 0:
        return 0.0, math.sqrt(0.5) / total_x, 0.0, -math.log((1 - confidence) / 2) / (
            total_x * (z / t) ** 2)
    a = skew / (3 * math.sqrt(tasks))

    def inverse(q):
        if abs(a) < 1e-12:
            return q
        return (math.copysign(abs(1 + 3 * a * (q - a / 2)) ** (1 / 3), 1 + 3 * a * (q - a / 2))
                - 1) / a

    low, high = estimate - se * inverse(t), estimate - se * inverse(-t)
    positive = [(a_, b) for a_, b in used if b > 0]
    if (nonnegative and len(positive) >= 2 and len(positive) == tasks
            and all(a_ > 0 for a_, _ in positive)):
        weights = [b for _, b in positive]
        logs = [math.log(a_ / b) for a_, b in positive]
        wsum = sum(weights)
        center = sum(w * v for w, v in zip(weights, logs)) / wsum
        effective_count = wsum**2 / sum(w * w for w in weights)
        second_log = sum(w * (v - center) ** 2 for w, v in zip(weights, logs)) / wsum
        spread = second_log * effective_count / (effective_count - 1)
        third = sum(w * (v - center) ** 3 for w, v in zip(weights, logs)) / wsum
        log_skew = third / second_log**1.5 if second_log > 0 else 0.0
        if log_skew >= -2 * math.sqrt(6 / len(positive)):
            t_log = stats.t.ppf(0.5 + confidence / 2, len(positive) - 1)
            half = t_log * math.sqrt(spread / effective_count
                                     + spread**2 / (2 * (len(positive) - 1)))
            low = min(low, math.exp(center + spread / 2 - half))
            high = max(high, math.exp(center + spread / 2 + half))
    if nonnegative:
        low = max(low, 0.0)
    return estimate, se, low, high


def linearised(y, x):
    """The contributions u_i = (y_i - R x_i) / mean x over the tasks holding data (0 for the
    others), in task order."""
    used = [b > 0 or a != 0 for a, b in zip(y, x)]
    tasks = sum(used)
    estimate = sum(y) / sum(x)
    mean_x = sum(x) / tasks
    return [(a - estimate * b) / mean_x if keep else 0.0 for a, b, keep in zip(y, x, used)]


def correlation(u, v):
    top = sum(a * b for a, b in zip(u, v))
    bottom = math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))
    return top / bottom if bottom > 0 else 0.0


def cost_per_success(cost, successes, trials, confidence=0.95):
    """(R, low, high): cost per trial over the pooled success, MOVER on the logs."""
    estimate = sum(cost) / sum(successes)
    per_trial, _, cost_low, cost_high = ratio(cost, trials, confidence)
    pooled, pooled_se, _, _ = ratio(successes, trials, confidence)
    p_low, p_high = effective(pooled, pooled_se**2, sum(trials), len(trials), confidence)
    r = correlation(linearised(cost, trials), linearised(successes, trials))
    log_low, log_high = mover(
        math.log(pooled), math.log(p_low), math.log(p_high),
        math.log(per_trial), math.log(cost_low) if cost_low > 0 else -math.inf,
        math.log(cost_high), r,
    )
    return estimate, math.exp(log_low), math.exp(log_high)
