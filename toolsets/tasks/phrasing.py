"""How the tasks toolset's plain requests are said (issue 50): "what's running in the
background?", "which messages are you watching for?". core.reflex.recognise tries them before the
runtime's own recognisers (`PHRASING`, declared by the toolset's record); the step is in
toolsets/tasks/local.py.
"""
from __future__ import annotations

import re

from core.fastpath import Intent, Phrasing

_TASKS = re.compile(r"(?:что\s+(?:(?:сейчас|у\s+меня|там|ещ[её])\s+)*(?:выполняется|работает|запущено|крутится)\s+в\s+фоне|"
                    r"что\s+(?:(?:сейчас|у\s+меня|там|ещ[её])\s+)*в\s+фоне(?:\s+(?:сейчас\s+)?(?:выполняется|работает|запущено|крутится))?[\s?]*$|"
                    r"what(?:'s|\s+is)\s+(?:still\s+)?(?:going\s+on|happening)\s+in\s+the\s+background|"
                    r"как\w*\s+(?:фонов\w+\s+)?задач\w*\s+"
                    r"(?:сейчас\s+)?(?:выполня|работа|запущен)|фонов\w+\s+задач|what(?:'s|\s+is)\s+running\s+in\s+the\s+background|"
                    r"(?:any|which|what)\s+background\s+tasks|list\s+(?:the\s+|my\s+)?background\s+tasks)")


def _tasks_intent(raw: str, said: str, russian: bool) -> Intent | None:
    if _WATCHES_ASKED.search(raw):  # "which messages are you watching for?": the watches, a list
        return Intent(kind="tasks", russian=russian, action="watches")
    return Intent(kind="tasks", russian=russian) if _TASKS.search(raw) else None


_WATCHES_ASKED = re.compile(r"(?:which|what)\s+(?:messages|chats|channels|watches)\s+(?:are\s+you|you'?re|do\s+you)\s+"
                            r"(?:watching|monitoring|waiting|keeping)|what\s+are\s+you\s+(?:watching|waiting)\s+for|"
                            r"(?:за\s+ч[её]м|за\s+какими\s+\w+)\s+(?:ты\s+)?(?:сейчас\s+)?(?:следишь|наблюдаешь)|"
                            r"(?:какие|чьи)\s+сообщения\s+(?:ты\s+)?(?:сейчас\s+)?(?:ждешь|ждёшь|отслеживаешь|караулишь)|"
                            # "а что у тебя вообще сейчас на слежке стоит?", "what watches have you got"
                            r"что\s+(?:у\s+тебя\s+)?(?:вообще\s+|сейчас\s+|там\s+)*на\s+слежке|какие\s+(?:у\s+тебя\s+)?слежки|"
                            r"what\s+watches\s+(?:do\s+you\s+have|have\s+you\s+got|are\s+(?:on|set|running))")


PHRASING = Phrasing(first=(_tasks_intent,))
