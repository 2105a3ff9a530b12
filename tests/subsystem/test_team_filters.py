"""A team named to filter a listing must be a team: a typo is an error naming the known
teams, never an empty listing that reads as "nothing there"."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.core import running_core, teams_config
from protocol.errors import UnknownTeamError
from protocol.messages import Costs, ListQuestions


async def test_a_misspelt_team_in_questions_and_costs_is_refused_with_the_known_teams(tmp_path: Path) -> None:
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        with pytest.raises(UnknownTeamError, match="team 'alhpa' is not configured; did you mean 'alpha'"):
            await core.list_questions(ListQuestions(team="alhpa"))
        with pytest.raises(UnknownTeamError, match="team 'alhpa' is not configured"):
            await core.costs(Costs(team="alhpa"))
        assert (await core.list_questions(ListQuestions(team="alpha"))).questions == []
        assert (await core.list_questions(ListQuestions(team="a2a:crm-bot"))).questions == []  # a sender
        assert (await core.costs(Costs(team="alpha"))).rows == []  # a team with nothing spent yet
