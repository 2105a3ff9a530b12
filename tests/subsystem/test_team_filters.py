"""A team named to filter a listing must be a team: a typo is an error naming the known
teams, never an empty listing that reads as "nothing there"."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.core import running_core, teams_config
from irisd.store import tells
from protocol.errors import UnknownTeamError
from protocol.messages import Costs, ListQuestions, Report, TellInfo


async def test_a_misspelt_team_in_questions_and_costs_is_refused_with_the_known_teams(tmp_path: Path) -> None:
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        with pytest.raises(UnknownTeamError, match="team 'alhpa' is not configured; did you mean 'alpha'"):
            await core.records.questions(ListQuestions(team="alhpa"))
        with pytest.raises(UnknownTeamError, match="team 'alhpa' is not configured"):
            await core.records.costs(Costs(team="alhpa"))
        assert (await core.records.questions(ListQuestions(team="alpha"))).questions == []
        assert (await core.records.questions(ListQuestions(team="a2a:crm-bot"))).questions == []  # a sender
        assert (await core.records.costs(Costs(team="alpha"))).rows == []  # a team with nothing spent yet


async def test_a_removed_teams_report_keeps_its_history(tmp_path: Path) -> None:
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        told = TellInfo(id="t-docs", from_team="alpha", to_team="docs", message="hi", status="completed",
                        created_at=1.0)
        await core.store.call(tells.insert, told)  # as before a reload took 'docs' out of config.yaml
        report = core.records.report
        assert [t.id for t in (await report(Report(to_team="docs", from_team="alpha"))).tells] == ["t-docs"]
        assert [t.id for t in (await report(Report(to_team="docs", all_callers=True))).tells] == ["t-docs"]
        assert (await report(Report(to_team="docs"))).tells == []  # told by alpha, not from outside
        with pytest.raises(UnknownTeamError, match="team 'dosc' is not configured"):
            await report(Report(to_team="dosc"))
