"""What an action of iris-agent touches, checked before it is filed as an approval for
the person (irisd/agent/actions.py files and serves it): the team must be one of this
config, the tell or the question must be there (an IrisError says what is missing)."""

from __future__ import annotations

from irisd.agent.actions import Action
from irisd.config_holder import ConfigHolder
from irisd.questions.answering import Answering
from irisd.tell.service import TellService
from protocol.messages import AnswerQuestion, CancelTell, Sleep, Tell, Wake


class ProposalTargets:
    def __init__(self, *, current: ConfigHolder, tells: TellService, answering: Answering) -> None:
        self.current = current
        self.tells = tells
        self.answering = answering

    async def target(self, action: Action) -> str:
        """The team ``action`` touches, once it is known it can be done."""
        match action:
            case Tell(to_team=to_team) | Wake(to_team=to_team) | Sleep(to_team=to_team):
                self.current.check_team(to_team)
                if not isinstance(action, Tell):
                    self.current.check_from(action.from_team)
                return to_team
            case CancelTell(tell_id=tell_id) | AnswerQuestion(question_id="", tell_id=tell_id):
                return (await self.tells.find(tell_id)).to_team
            case AnswerQuestion(question_id=question_id):
                return (await self.answering.pending(question_id)).to_team
