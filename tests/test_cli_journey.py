"""What a new user meets in the first hour: outputs that read as the scenario file writes, carry
their units, and agree with one another across commands (the journey audit)."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from relsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = str(ROOT / "scenarios" / "support_reviewers.toml")


def test_time_levers_show_values_as_the_file_writes_them_and_changes_with_units(capsys):
    # The faster review is a table in the file (review = { median = 120, p95 = 600 }): a
    # reader copies the lever's value back into the file, so it must not be Python's dict.
    assert main(["levers", SUPPORT, "--replications", "2"]) == 0
    out = capsys.readouterr().out
    assert "resources.review = { median = 90, p95 = 450 }" in out
    assert "{'median'" not in out
    # the change of a duration is in seconds, as the duration beside it is
    changes = re.findall(r"change (\S+ s) \(95% interval \S+ to \S+ s\)", out)
    assert len(changes) == 2, out
    assert not any(line != line.rstrip() for line in out.splitlines())


GATED_WORKLOAD = """name = "tiny gated workload"
steps = 1
p = 0.9
[checkpoints]
final = true
human = true
[fleet]
arrivals = "poisson"
rate_per_hour = 30
tasks = 150
[resources]
reviewers = 3
review = { mean = 60 }
[targets]
duration_p90 = 600
duration_mean = 20
"""


@pytest.mark.slow
def test_report_says_a_target_in_time_is_missed_as_timeline_does(tmp_path, capsys):
    # A mean of 20 s cannot be met: a review alone takes 60 s on average (docs/model.md
    # section 7), so `relsim timeline` reports duration_mean MISSED and its gate exits 3.
    path = tmp_path / "gated.toml"
    path.write_text(GATED_WORKLOAD, encoding="utf-8")
    assert main(["timeline", str(path), "--seed", "2", "--require-target"]) == 3
    timeline_out = capsys.readouterr().out
    assert "mean duration <= 20 s: MISSED" in timeline_out
    page = tmp_path / "r.html"
    code = main(["report", str(path), "-o", str(page), "--trials", "1000", "--seed", "2"])
    line = capsys.readouterr().out
    assert "in time: duration_mean MISSED, duration_p90 met" in line, line
    assert code == 3
    html = page.read_text(encoding="utf-8")
    # the target section points to the targets the file does set, instead of "none is set"
    assert "No success target is set" in html and 'href="#time"' in html
    # and the page's lead, its first sentence, gives the verdicts in time as well
    assert "; in time: duration_mean missed, duration_p90 met.</p>" in html


def test_report_without_time_targets_keeps_its_line_and_exit_status(tmp_path, capsys):
    page = tmp_path / "r.html"
    lesson = str(ROOT / "scenarios" / "lesson_25_steps.toml")
    assert main(["report", lesson, "-o", str(page), "--trials", "0"]) == 0
    assert capsys.readouterr().out.strip().endswith("sections; target met)")


def test_simulate_shows_plain_numbers_and_errors_to_three_figures(capsys):
    # The lesson's design never fails silently: the share's 95% Wilson interval at 0 of N is
    # [0, z^2 / (N + z^2)] = [0, 3.84146 / 100003.84] = [0, 0.0000384131], which %g printed
    # as 3.84131e-05 beside 0.0236188.
    lesson = str(ROOT / "scenarios" / "lesson_25_steps.toml")
    assert main(["simulate", lesson, "--trials", "100000", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\de[-+]\d", out), out
    assert "[0, 0.0000384131]" in out
    # success: p = 0.97544 of 100,000 trials, se sqrt(p (1 - p) / N) = 0.000489457 -> 0.000489
    assert re.search(r"^success +0\.97544 +0\.000489 +\[", out, re.M), out


def test_plain_number_and_error_number():
    from relsim.cli._args import error_number, plain_number

    assert plain_number(3.84131e-05) == "0.0000384131"
    assert plain_number(1090730.4) == "1090730"
    assert plain_number(0.0236188) == "0.0236188" and plain_number(28.114) == "28.114"
    assert plain_number(0.0) == "0" and plain_number(float("inf")) == "inf"
    assert plain_number(1e-300) == "1e-300"  # a row of 300 zeros reads worse than this
    assert error_number(0.000489457) == "0.000489" and error_number(67.0134) == "67.0"
    assert error_number(576.581) == "577" and error_number(9.42978e-05) == "0.0000943"
    assert error_number(0.0) == "0"


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_report_shows_its_progress_on_a_terminal_only(monkeypatch, tmp_path, capsys):
    lesson = str(ROOT / "scenarios" / "lesson_25_steps.toml")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["report", lesson, "-o", str(tmp_path / "r.html"), "--trials", "1000"]) == 0
    assert "section" in terminal.getvalue()  # tqdm's bar, with its unit
    monkeypatch.undo()
    assert main(["report", lesson, "-o", str(tmp_path / "r.html"), "--trials", "1000"]) == 0
    assert capsys.readouterr().err == ""


def test_levers_print_the_exact_table_before_the_runs_in_time(monkeypatch, capsys):
    import relsim.plan

    real = relsim.plan.time_levers
    seen = {}

    def watched(*args, **kwargs):
        seen["out"] = capsys.readouterr().out  # what the user has read while the runs go on
        seen["err"] = terminal.getvalue()
        return real(*args, **kwargs)

    terminal = FakeTerminal()
    monkeypatch.setattr(relsim.plan, "time_levers", watched)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["levers", SUPPORT, "--replications", "2"]) == 0
    assert "one more retry per step" in seen["out"]
    assert "running the time levers" in seen["err"]
    assert terminal.getvalue().endswith("\r\x1b[K")  # the status line is cleared after
    assert "time levers (timeline, 2 replications" in capsys.readouterr().out


EXERCISE3 = str(ROOT / "examples" / "harness" / "exercise3_v1.csv")


def test_analyze_aligns_a_rate_under_the_metrics_and_shows_cost_per_success_as_compare_does(capsys):
    assert main(["analyze", EXERCISE3, "--k", "3", "--rate", "tool_errors/steps"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("metric "))
    rate = next(line for line in out.splitlines() if line.startswith("rate tool_errors/steps"))
    # the rate's value ends where the "per trial" heading ends, as every metric's does
    assert header.index("per trial") + len("per trial") == rate.index("0.09027") + len("0.09027")
    # 4 significant figures, as the interval beside it and `relsim compare`'s table show it
    assert "cost per success  0.1363  95% CI [0.09276, 0.2103]" in out
    assert "1 retry per step (perfect verifier) reaches 0.985240" in out
    assert main(["compare", EXERCISE3, EXERCISE3.replace("v1", "v2"), "--k", "3"]) == 0
    assert re.search(r"^cost_per_success +0\.1363 ", capsys.readouterr().out, re.M)


def test_power_gives_the_rate_reached_to_the_gains_precision(capsys):
    assert main(["power", "--tasks", "50", "--baseline", "0.6", "--trials-per-task", "3"]) == 0
    out = capsys.readouterr().out
    gain = re.search(r"tasks: (\S+) \(0\.6 -> (\S+)\)", out)
    assert gain is not None, out
    assert float(gain.group(2)) == pytest.approx(0.6 + float(gain.group(1)), abs=1e-12)


def test_levers_cost_columns_line_up_on_the_decimal_point(capsys):
    production = str(ROOT / "scenarios" / "production_agent.toml")
    assert main(["levers", production]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if re.search(r"pp +\S+ +\S+ +(yes|no)$", line)]
    assert len(rows) == 14
    for column in (-3, -2):  # cost/success and its change (then: meets the target)
        cells = [row.split()[column] for row in rows]
        points = {row.rindex(cell) + cell.index(".") for row, cell in zip(rows, cells)}
        assert len(points) == 1, cells
        assert not any("e-" in cell for cell in cells)
    # the baseline's cost per success 1.92421 and "one more rollback"'s 1.92330: the change
    # (-0.000917185, as relsim.plan.levers gives it) shown to the table's 5 decimals
    assert any(row.startswith("one more rollback") and "1.92330    -0.00092  " in row for row in rows)


def test_fit_says_what_a_beta_at_its_precision_bound_means(capsys):
    # docs/commands/fit.md: exercise 3's 10 middling tasks passed as often as trials of one
    # p = 0.4 would; the Beta's precision alpha + beta sits at the search's bound (5000).
    assert main(["fit", EXERCISE3]) == 0
    beta = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("p ~ Beta"))
    assert "alpha 2000, beta 3000 (mean p 0.4001; its precision alpha + beta at the fit's bound 5000" in beta
    assert "share one p, 0.4001" in beta
    exercise1 = str(ROOT / "examples" / "harness" / "exercise1.csv")
    assert main(["fit", exercise1]) == 0  # a spread the data identify: no note
    assert "(mean p 0.6194)" in capsys.readouterr().out


MINE = """name = "my research agent"
steps = 12
p = [0.95, 0.95, 0.9, 0.95, 0.95, 0.85, 0.95, 0.95, 0.95, 0.9, 0.95, 0.97]
target = 0.95
[verifier]
miss = 0.08
false_reject = 0.04
[retries]
per_step = 2
"""


def test_verifier_plan_says_its_false_reject_line_keeps_the_designs_miss(tmp_path, capsys):
    # "largest miss 0.0403 ... success 0.95" then "largest false_reject: none reaches the
    # target" read as a contradiction: the second holds miss at the design's 0.08.
    path = tmp_path / "mine.toml"
    path.write_text(MINE, encoding="utf-8")
    assert main(["solve", str(path), "--for", "verifier"]) == 0
    out = capsys.readouterr().out
    assert "none reaches the target at the design's miss" in out


@pytest.fixture(scope="module")
def production_page():
    """The production agent's report without its Monte Carlo and time runs."""
    import relsim
    from relsim.report import render

    design = relsim.Scenario.from_toml(str(ROOT / "scenarios" / "production_agent.toml"))
    return design, render(design, trials=0).html


def test_report_target_table_gives_the_false_reject_answers_cost_per_success(production_page):
    # The row said success 0.86742 at false_reject = 0 with a cost per success of "-", while
    # the figure's numbers under it gave that point's cost; the two now agree.
    import relsim

    design, html = production_page
    row = html.split(">largest verifier false_reject</td>", 1)[1].split("</tr>", 1)[0]
    at_zero = relsim.evaluate(design.to_dict() | {"verifier": {"miss": 0.05, "false_reject": 0.0}})
    assert f'<td class="num">{at_zero.cost_per_success:.6g}</td>' in row, row


def test_report_levers_table_shows_the_changes_as_relsim_levers_does(production_page, capsys):
    _, html = production_page
    row = html.split(">one more retry per step</td>", 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert main(["levers", str(ROOT / "scenarios" / "production_agent.toml")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("one more retry"))
    words = line.split()[:-1]  # the last says whether the lever meets the file's target
    # success (6 figures, as on the rest of the page), its change in points, cost per success,
    # its change: the CLI's very digits
    assert float(cells[0]) == float(words[-4])
    assert cells[1:] == [words[-3].removesuffix("pp"), *words[-2:]]


def test_report_levers_set_reads_as_the_scenario_file_writes_it():
    # stroebl's "p +1 point" lever sets its [[classes]]: Python's dict repr showed
    # [{'weight': 0.58, 'p': 0.88}, ...] on the page
    import relsim
    from relsim.report import render

    html = render(relsim.Scenario.from_toml(str(ROOT / "scenarios" / "stroebl.toml")), trials=0).html
    assert "classes = [{ weight = 0.58, p = 0.88 }, { weight = 0.42, p = 0.14 }]" in html
    assert "&#x27;weight&#x27;" not in html


def test_allocation_says_what_its_gap_is_measured_in(capsys):
    # "a heuristic within 1.19464 of the optimum (lower bound 0.613716)" left the reader to
    # guess that both are costs per success, and that the gap runs from the bound up to the
    # answer's own cost per success
    production = str(ROOT / "scenarios" / "production_agent.toml")
    assert main(["solve", production, "--for", "allocation", "--target", "0.95"]) == 0
    out = capsys.readouterr().out
    answer = re.search(r"its cost per success is at most (\S+) above the optimum's, which is "
                       r"at least (\S+), by monotonicity alone", out)
    assert answer is not None, out
    cost = float(re.search(r"cost per success +(\S+)", out).group(1))
    assert float(answer.group(1)) + float(answer.group(2)) == pytest.approx(cost, abs=1e-5)  # 6 figures each


def test_resource_plan_says_each_count_ran_its_own_replications():
    # `relsim solve scenarios/support_reviewers.toml --for reviewers` said "17 replications a
    # count" while its "targets at 2" were the 50-replication run's (1973.25 s, 95% interval
    # 1785.64 to 2160.87, as `relsim timeline --seed 0` gives): without --replications the
    # default rule picks each count's number
    from types import SimpleNamespace

    from relsim.cli.plan_command import format_resources

    plan = SimpleNamespace(
        outcome=SimpleNamespace(replications=17, trials=15_300), replications=17, value=3,
        for_="reviewers", seed=0, feasible=True, summary=lambda: "3 reviewers", targets={},
        below=None, tried={2: "not met", 3: "met"}, reason=None,
    )
    head = format_resources(plan, "support", by_rule=True).splitlines()[0]
    assert "each count's replications by the default rule, 17 at 3" in head
    assert "17 replications a count" in format_resources(plan, "support").splitlines()[0]


@pytest.mark.parametrize("command, question", [
    ("power", "How many tasks a paired comparison of two versions needs"),
    ("audit", "How often a grader is wrong"),
])
def test_help_opens_with_the_question_the_command_answers(command, question, capsys):
    # power's help opened on "tasks = the least T >= 2 at which the two-sided paired t-test",
    # audit's on "miss = P(pass | wrong)": formulas before the question they answer
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    description = text.split(" options: ")[0].split(" positional arguments: ")[0]
    assert question in description
    assert text.index(question) < text.index("=")  # before any formula


def test_resource_planning_says_it_is_working_on_a_terminal(monkeypatch, tmp_path, capsys):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    path = tmp_path / "gated.toml"
    path.write_text(GATED_WORKLOAD.replace("duration_mean = 20\n", ""), encoding="utf-8")
    assert main(["solve", str(path), "--for", "reviewers", "--replications", "2"]) in (0, 3)
    assert "relsim solve: running the timeline at each count of reviewers" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r\x1b[K")
    monkeypatch.undo()
    assert main(["solve", str(path), "--for", "reviewers", "--replications", "2"]) in (0, 3)
    assert capsys.readouterr().err == ""


def test_evaluate_keeps_the_trailing_zeros_of_its_six_figures(capsys):
    # docs/model.md's lesson: 27.4195 attempts and a cost per success of 27.4195 / 0.975298
    # = 28.1140, shown as 28.114 one column to the left of the points above it
    lesson = str(ROOT / "scenarios" / "lesson_25_steps.toml")
    assert main(["evaluate", lesson]) == 0
    out = capsys.readouterr().out
    assert "attempts per trial      27.4195\n" in out
    assert "cost per success        28.1140\n" in out
    assert main(["levers", lesson]) == 0  # and levers' title says the same as evaluate
    assert "cost per success 28.1140\n" in capsys.readouterr().out


def test_levers_say_which_single_change_meets_the_files_target(tmp_path, capsys):
    # "what must I change to hit 95%?": with a target in the file, each row says whether that
    # change alone meets it. Halving miss 0.08 -> 0.04 is the one that does here, as
    # `relsim solve --for verifier` agrees (the largest miss that meets 0.95 is 0.0403).
    path = tmp_path / "mine.toml"
    path.write_text(MINE, encoding="utf-8")
    assert main(["levers", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].endswith("  meets 0.95")
    rows = {line.split("  ")[0]: line.split()[-1] for line in lines[3:] if line}
    assert rows["verifier miss halved"] == "yes"
    assert {answer for lever, answer in rows.items() if lever != "verifier miss halved"} == {"no"}
    assert main(["solve", str(path), "--for", "verifier"]) == 0
    largest = float(re.search(r"largest miss +(\S+)", capsys.readouterr().out).group(1))
    assert 0.04 <= largest < 0.08
