"""Errors as the CLI reports them: an internal error exits 3 (never 1, a policy verdict), user text is literal."""

from __future__ import annotations

import pytest
from cli_run import run_main

from gpufleet.plan import planner


def broken_plan(*args: object, **kwargs: object) -> None:
    raise RuntimeError("engine fell over")


def test_internal_error_exits_3_with_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(planner, "plan_stack", broken_plan)
    assert run_main(monkeypatch, "plan", "--stack", "aws-train-p5") == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: engine fell over; run the same command with --debug")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_debug_anywhere_prints_the_traceback_and_still_exits_3(monkeypatch, capsys) -> None:
    monkeypatch.setattr(planner, "plan_stack", broken_plan)
    assert run_main(monkeypatch, "plan", "--stack", "aws-train-p5", "--debug") == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "RuntimeError: engine fell over" in err


def test_a_clean_plan_still_exits_0_through_main(monkeypatch, capsys) -> None:
    assert run_main(monkeypatch, "plan", "--stack", "aws-infer-g6e", "--format", "json") == 0
    assert '"stack": "aws-infer-g6e"' in capsys.readouterr().out


@pytest.mark.parametrize("name", ["[/x]", "[bold]train", "aws:x:"])
def test_user_text_in_an_error_prints_literally(monkeypatch, capsys, name: str) -> None:
    assert run_main(monkeypatch, "plan", "--stack", name) == 2
    assert f"error: no stack '{name}'" in capsys.readouterr().err
