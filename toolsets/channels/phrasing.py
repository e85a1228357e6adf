"""How the channels toolset's plain requests are said (issue 50): a watch for a message to wait for
("скажи, когда Аня напишет в телеграм", "let me know if the deploy webhook says it failed") and
the end of one ("stop watching for Dave", "не надо за ним следить"). core.reflex.recognise tries
them before the runtime's own recognisers (`PHRASING`, declared by the toolset's record); the
steps are in toolsets/channels/local.py.
"""
from __future__ import annotations

import re
from pathlib import Path

import msgspec

from core.channels import interest_words
from core.fastpath import Intent, Phrasing
from core.intent import remark
from core.lexicon import alternation, topic, words
from core.reflex import CHANNELS, LEAD, POLITE_TAIL, TIMER_WORD, as_said, norm_words, tells_of_words, words_told_in

WORDS = Path(__file__).with_name("words")  # this toolset's own word lists (core.lexicon, root=)
_PRONOUNS = frozenset(words("watching", "pronoun_words", WORDS))

# "скажи, когда напишет Анна", "let me know if the deploy webhook says it failed": a message to
# wait for (a watch); a time or an event that is no message ("когда будет 5") is not one
_WATCH = re.compile(LEAD + r"(?:" + alternation("watching", "tell_patterns", WORDS) + r")[\s,]+(?P<when>"
                    + alternation("watching", "watch_condition_patterns", WORDS) + r")\s+(?P<rest>.+)$")


_MESSAGE_VERB = re.compile(r"(?:^|\s)(?:" + alternation("watching", "message_verb_patterns", WORDS) + r")(?=[\s,.!?]|$)")


_WEBHOOK = re.compile(r"(?:the\s+)?(?P<name>[\w-]+)\s+(?:" + alternation("watching", "webhook_after_name_patterns", WORDS)
                      + r")|(?:" + alternation("watching", "webhook_before_name_patterns", WORDS) + r")\s+(?P<name_ru>[\w-]+)")


_WEBHOOK_SAYS = re.compile(r"\s(?:" + alternation("watching", "webhook_says_patterns", WORDS) + r")\s+(?:(?:"
                           + alternation("watching", "that_words", WORDS) + r")\s+)?(?P<what>.+)$")


# why a watch is asked, after a dash or a comma: "…, I'm waiting for his address", "…, а то усну"
_REASON = re.compile(r"\s*[,—-]\s*(?=(?:" + alternation("watching", "reason_opener_patterns", WORDS) + r")\b)")


# "если мама напишет в вотсапе, сразу скажи мне", "if Anna texts, let me know": the condition first
_WATCH_AFTER = re.compile(LEAD + r"(?P<when>" + alternation("watching", "watch_condition_patterns", WORDS)
                          + r")\s+(?P<rest>[^,—–]+?)[\s,—–-]+(?:(?:" + alternation("watching", "tell_lead_patterns", WORDS)
                          + r")\s+)*(?:" + alternation("watching", "notify_patterns", WORDS) + r")(?:\s+(?:"
                          + alternation("watching", "tell_tail_patterns", WORDS) + r"))*$")  # the calls to tell: the toolset's words


def _watch_intent(raw: str, said: str, russian: bool, *, arrivals: bool = False) -> Intent | None:
    """A watch asked in one clause; `arrivals`: the words name an app, so a thing that arrives
    ("как придёт посадочный талон") is a message too."""
    asked = POLITE_TAIL.sub("", raw.rstrip(" .!?"))
    match = _WATCH.match(asked) or _WATCH_AFTER.match(asked)
    if match is None or TIMER_WORD.search(match["rest"]) or not (
            _MESSAGE_VERB.search(" " + match["rest"]) or arrivals and _ARRIVES.search(" " + match["rest"])):
        return None
    rest = match["rest"]
    reason = _REASON.search(rest)
    rest = rest[:reason.start()] if reason else rest  # "…, I'm waiting for his address": why, not what
    webhook = _WEBHOOK.search(rest)
    channel = next((name for name, pattern in CHANNELS if pattern.search(" " + rest)), "any")
    if channel != "any":  # "в телеграме" says where, not what
        rest = " ".join(dict(CHANNELS)[channel].sub(" ", " " + rest).split())
    if webhook is not None:
        channel = webhook["name"] or webhook["name_ru"]
        says = _WEBHOOK_SAYS.search(rest[webhook.end():])
        rest = says["what"] if says else rest
    return Intent(kind="watch", russian=russian, channel=channel, subject=as_said(rest, said),
                  text=as_said(f"{match['when']} {match['rest'][:reason.start()] if reason else match['rest']}", said))


def _by_pronoun(intent: Intent) -> bool:
    """Whether the watch waits for someone said by a pronoun only ("когда она напишет", "если от него
    что-то про отчёт придёт")."""
    said = interest_words(intent.subject)
    return bool(said) and all(word in _PRONOUNS for word in said) or _SENDER_PRONOUN.search(intent.subject.casefold()) is not None


_SENDER_PRONOUN = re.compile(r"(?<!\w)(?:" + alternation("watching", "sender_pronoun_patterns", WORDS) + r")(?!\w)")


def _watch_named(raw: str, said: str, russian: bool) -> Intent | None:
    """A watch, unless it waits for "she" alone: then the model, which reads who from the conversation."""
    intent = _watch_intent(raw, said, russian)
    return None if intent is None or _by_pronoun(intent) else intent


def _watch_after_remarks(raw: str, said: str, russian: bool) -> Intent | None:
    """A watch said after remarks that name who and where: "хозяйка квартиры обещала скинуть
    реквизиты в телеграме, а я весь вечер на тренировке, дай знать, когда она напишет" waits on
    telegram for the words of the remark that names it; None when a remark asks for something,
    tells someone's words, or names no channel or more than one."""
    clauses = [part.strip() for part in re.split(r"(?<=[.!?])\s+|[,:]\s*", raw.strip()) if part.strip(" .!?")]
    for at in range(1, len(clauses)):
        intent = _watch_intent(", ".join(clauses[at:]), said, russian)
        if intent is None:
            continue
        before = clauses[:at]
        if not all(remark(clause) and not tells_of_words(clause) and not _WATCH_APP.match(clause) for clause in before):
            return None  # (a clause that asks to watch an app for someone is no remark: _watch_app_for)
        named = [(clause, name) for clause in before for name, pattern in CHANNELS if pattern.search(" " + clause)]
        if not _by_pronoun(intent):
            return intent if intent.channel != "any" or not named else None
        if len(named) != 1 or intent.channel not in ("any", named[0][1]):
            return None
        clause, channel = named[0]
        where = dict(CHANNELS)[channel]
        who = " ".join(where.sub(" ", " " + clause).split())
        told = f"{intent.text} {where.search(' ' + clause).group(0).strip()}"  # "когда она напишет в телеграме"
        return msgspec.structs.replace(intent, channel=channel, subject=as_said(who, said), text=as_said(told, said))
    return None


def _any(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + alternation("watching", name, WORDS) + r")(?!\w)")


_NOTIFY, _EXTRA, _ARRIVES = _any("notify_patterns"), _any("watch_extra_patterns"), _any("arrival_verb_patterns")
_CONDITION = re.compile(r"(?<!\w)(?P<when>" + alternation("watching", "condition_opener_patterns", WORDS) + r")\s+(?P<rest>.+)$")


# where a clause ends: a sentence's end, a comma, a dash, or a joint before a condition ("следи за
# телегой и если от начальника что-нибудь прилетит, дай знать": speech written with no comma)
_CLAUSE_END = re.compile(r"(?<=[.!?])\s+|[,;:]\s*|\s+[—–-]+\s*|\s+(?:" + alternation("requests", "clause_joint_words")
                         + r")\s+(?=(?:" + alternation("watching", "condition_opener_patterns", WORDS) + r")\s)")


WATCH_CLAUSES_MAX = 8  # clauses a watch among remarks may be said in ("ох, внуки обещали …, ты уж, дай мне знать, как …")


def _watch_in_clauses(raw: str, said: str, russian: bool) -> Intent | None:
    """A watch said in clauses among remarks, the call to tell before or after the condition:
    "I'm under a car right now, so give me a shout when my landlord messages me on WhatsApp,
    okay?", "я в бассейн на час. если в телеге Олег Петрович напишет — сразу дёрни меня, а всё
    остальное пусть ждёт". One clause holds the condition (an opener, then a message verb), one
    the call to tell (it may be the same); every other clause is a remark that tells nobody's
    words, or what goes with a watch ("ignore everything else", "даже если я сплю"). Who said
    by a pronoun is read from the one remark that names the app, as `_watch_after_remarks` does."""
    whole = _watch_in_clauses_of(raw, said, russian)
    if whole is not None:
        return whole
    # "мама сказала, если я не отвечу, она комп заберёт. короче следи за телегой, если мама напишет — дёргай
    # меня": the sentences before the watch's, remarks that may tell someone's words, left out
    sentences = re.split(r"(?<=[.!?])\s+", raw.strip())
    for start in range(1, len(sentences)):
        if not remark(sentences[start - 1]):
            return None
        after = _watch_in_clauses_of(" ".join(sentences[start:]), said, russian)
        if after is not None:  # never one that points back at the sentences left out ("when that message comes in")
            return None if _POINTING & set(norm_words(after.subject).split()) else after
    return None


_POINTING = frozenset(words("requests", "pointing_words"))
_JOINTS = frozenset(words("requests", "consequence_joint_words"))  # "так что", "so"


def _watch_in_clauses_of(raw: str, said: str, russian: bool) -> Intent | None:
    clauses = _what_is_written_joined([c.strip(" .!?") for c in _CLAUSE_END.split(raw.strip()) if c and c.strip(" .!?—–-")])
    app_named = any(pattern.search(" " + raw) for _name, pattern in CHANNELS)
    found = [(at, condition) for at, clause in enumerate(clauses) for condition in [_CONDITION.search(clause)]
             if condition is not None and (_MESSAGE_VERB.search(" " + condition["rest"])
                                           or app_named and _ARRIVES.search(" " + condition["rest"]))]
    if not 2 <= len(clauses) <= WATCH_CLAUSES_MAX or len(found) != 1:
        return None
    at, condition = found[0]
    told = [index for index, clause in enumerate(clauses) if _NOTIFY.search(clause)]
    lead = clauses[at][: condition.start()]
    if not told or lead.strip(" ,") and not _NOTIFY.search(lead) and not remark(lead) and lead.strip(" ,") not in _JOINTS:
        return None  # ("я это прощёлкаю, так что если от тренера что придёт …": a consequence's joint opens it)
    if not all(_beside_a_watch(clause, whole_told=True) or _CONDITION.match(clause) and index and _beside_a_watch(clauses[index - 1])
               for index, clause in enumerate(clauses) if index != at and index not in told):
        return None  # (a condition with no message in it belongs to the remark before: "…, как поезд прибудет")
    if any(tells_of_words(clause) and not _told_whole(clause) for index, clause in enumerate(clauses) if index != at) \
            or tells_of_words(lead):
        return None  # "она мне говорит: дай знать, если Петя напишет": her words, no request (what the
        # message says, in the condition, is the watch's: "if the github webhook says a build failed")
    when = condition["when"] if _WATCH.match(f"tell me {condition['when']} x") else "когда" if russian else "when"
    rest = condition["rest"]
    if (tell := _NOTIFY.search(rest)) is not None:  # "если она напишет в телеграм сразу дай знать": no comma before it
        rest = " ".join(word for word in rest[: tell.start()].split() if not _EXTRA.fullmatch(word))
    intent = _watch_intent(f"tell me {when} {rest}", said, russian, arrivals=app_named)  # "как Катя напишет"
    if intent is None or not interest_words(intent.subject) and any(_WATCH_APP.match(clause) for clause in clauses):
        return None  # "следи в телеге за сообщениями от Х, если напишет — дёрни меня": who is the app clause's (_watch_app_for)
    remarks = [clause for index, clause in enumerate(clauses) if index != at]
    nobody_named = _by_pronoun(intent) or not interest_words(intent.subject)  # "как напишет — дёрни меня": who is the remark's
    if nobody_named and any(_WATCH_APP.match(clause) for clause in clauses):
        return None  # "watch telegram for messages from Oleg, if he writes ping me": who is the app clause's (_watch_app_for)
    if nobody_named:  # who, from a remark; never from a call to tell ("последи за телегой и дёрни меня, … от него")
        calls = {index for index in told if _NOTIFY.match(re.sub(LEAD, "", clauses[index]))}
        return _who_from_remarks(intent, [clause for index, clause in enumerate(clauses) if index != at and index not in calls], said)
    return _where_from_remarks(intent, remarks)


# what the message says, in the clause after the condition: "если Света напишет, что ключи у консьержа оставила"
_WHAT_IS_WRITTEN = re.compile(r"^(?:что|про|о\s+том|that|about)\s")


def _what_is_written_joined(clauses: list[str]) -> list[str]:
    joined: list[str] = []
    for clause in clauses:
        if joined and _WHAT_IS_WRITTEN.match(clause.casefold()) and _MESSAGE_VERB.search(" " + joined[-1]):
            joined[-1] = f"{joined[-1]} {clause}"
        else:
            joined.append(clause)
    return joined


# "watch telegram for messages from Oleg about the car", "also keep an eye on whatsapp for anything
# from my landlord", "последи в телеге за сообщениями от Олега": the app, then what to wait for
_WATCH_APP = re.compile(LEAD + r"(?:also\s+|и\s+ещ[её]\s+|ещ[её]\s+|и\s+)?(?:" + alternation("watching", "watch_app_patterns", WORDS)
                        + r")\s+(?:(?:" + alternation("watching", "app_possessive_words", WORDS) + r")\s+)?(?P<app>[\w-]+)\s+(?:"
                        + alternation("watching", "watch_for_patterns", WORDS) + r")\s+(?P<what>.+)$")


# the app alone, then what is awaited in the clause after it: "следи за почтой, жду договор от пары из Казани"
_WATCH_APP_ALONE = re.compile(_WATCH_APP.pattern.split(r"(?P<app>[\w-]+)")[0] + r"(?P<app>[\w-]+)(?:\s+(?:"
                              + alternation("watching", "app_alone_tell_patterns", WORDS) + r"))?$")
_AWAITED = re.compile(r"^(?:" + alternation("watching", "awaited_patterns", WORDS) + r")\s+(?P<what>.+)$")


def _awaited_joined(clauses: list[str], russian: bool) -> list[str]:
    """The clauses with an app said alone joined to the awaited thing after it, as "<app> за <what>"."""
    for at in range(len(clauses) - 1):
        awaited, alone = _AWAITED.match(clauses[at + 1].casefold()), _WATCH_APP_ALONE.match(clauses[at])
        if alone is not None and awaited is not None:  # (the call to tell after the app is the watch's own)
            what = clauses[at + 1][awaited.start("what"):]
            joint = str(topic("ru" if russian else "en", "watching", WORDS)["awaited_joint"])
            return [*clauses[:at], f"{clauses[at][:alone.end('app')]} {joint} {what}", *clauses[at + 2:]]
    return clauses


def _watch_app_for(raw: str, said: str, russian: bool) -> Intent | None:
    """A watch said as "watch <app> for <what>" (or "watch <app>, I'm expecting <what>"), after
    remarks at most, what goes with a watch after."""
    split = [c.strip(" .!?") for c in re.split(r"(?<=[.!?])\s+|[,:]\s*", raw.strip()) if c.strip(" .!?")]
    clauses = _awaited_joined(split, russian)
    said_as = "awaited_said" if len(clauses) < len(split) else "watch_app_said"
    for at, clause in enumerate(clauses):
        asked = _WATCH_APP.match(clause)
        if asked is None:
            continue
        channel = next((name for name, pattern in CHANNELS if pattern.search(" " + asked["app"])), "")
        rest = [c for index, c in enumerate(clauses) if index != at]
        if not channel or not all(_beside_a_watch(c) or _tell_on_it(c) for c in rest) or any(tells_of_words(c) for c in clauses):
            return None
        what = asked["what"]
        if _by_pronoun(Intent(kind="watch", russian=russian, subject=what)) or TIMER_WORD.search(what):
            return None  # "watch whatsapp for anything from her": who she is, the model reads
        told = str(topic("ru" if russian else "en", "watching", WORDS)[said_as])
        return Intent(kind="watch", russian=russian, channel=channel, subject=as_said(what, said),
                      text=told.format(what=as_said(what, said), app=as_said(asked["app"], said)))
    return None


def _tell_on_it(clause: str) -> bool:
    """"если напишет — дёрни меня", "if he writes, ping me": a call to tell on a condition that
    names no one (who is the watch's own clause)."""
    told = _NOTIFY.search(clause)
    condition = _CONDITION.search(clause[:told.start()]) if told is not None else None
    return told is not None and (condition is None or not interest_words(condition["rest"]))


def _beside_a_watch(clause: str, *, whole_told: bool = False) -> bool:
    """A clause that may stand beside a watch: what goes with one, or a remark that tells nobody's
    words; with `whole_told`, or tells them whole in itself, asking for nothing (`_told_whole`)."""
    return bool(_EXTRA.fullmatch(clause.strip().casefold())) or remark(clause) and (
        not tells_of_words(clause) or whole_told and _told_whole(clause))


def _told_whole(clause: str) -> bool:
    """"the clinic said my blood test results would come by email": someone's words told in the
    clause itself, with no call to tell nor condition in them; not "my wife said" (hers follow)."""
    told = words_told_in(clause)
    return len(told.split()) >= 2 and not _NOTIFY.search(told) and not _CONDITION.search(told)


def channel_said(channel: str, russian: bool) -> str:
    """Where a watch waits, as the user hears it ("в телеграме", "on Telegram"); "" for an app the words file lacks."""
    return str(topic("ru" if russian else "en", "watching", WORDS).get("channel_said", {}).get(channel, ""))


def _where_from_remarks(intent: Intent, remarks: list[str]) -> Intent | None:
    """The app a remark names when the condition names none ("жду от Серёги в вотсапе адрес");
    None when remarks name more than one."""
    named = {name for clause in remarks for name, pattern in CHANNELS if pattern.search(" " + clause)}
    if intent.channel != "any" or not named:
        return intent
    if len(named) != 1:
        return None
    channel = named.pop()
    where = channel_said(channel, intent.russian)
    return msgspec.structs.replace(intent, channel=channel, text=f"{intent.text} {where}".strip())  # the user hears where


def _who_from_remarks(intent: Intent, remarks: list[str], said: str) -> Intent | None:
    """"she" of a watch, read from the one remark that names the app: its words are who."""
    named = [(clause, name) for clause in remarks for name, pattern in CHANNELS if pattern.search(" " + clause)]
    if len(named) != 1 or intent.channel not in ("any", named[0][1]):
        return None
    clause, channel = named[0]
    where = dict(CHANNELS)[channel]
    who = " ".join(where.sub(" ", " " + clause).split())
    text = intent.text if intent.channel != "any" else f"{intent.text} {where.search(' ' + clause).group(0).strip()}"
    return msgspec.structs.replace(intent, channel=channel, subject=as_said(who, said), text=as_said(text, said))


# "stop watching for Dave", "перестань следить за почтой", "cancel the telegram watch": a watch ended
_UNWATCH = re.compile(LEAD + r"(?:forget\s+(?:it|that|about\s+it)[\s,.!]+)?(?:"
                      r"(?:stop|quit|no\s+need\s+to\s+keep)\s+(?:watching|monitoring|tracking|checking|waiting)(?:\s+(?:out\s+)?for)?(?P<en>.*)|"
                      r"(?:you\s+can\s+)?(?:cancel|remove|delete|drop|turn\s+off|scrap|kill)\s+(?:the\s+|that\s+|my\s+)?"
                      r"(?:(?P<en2>.*?)\s*(?:watch|alert)(?:es)?|(?P<en3>[^,]+?)\s+(?:one|thing))|"  # "you can drop the email one"
                      r"(?:перестань|хватит|прекрати|больше\s+не\s+надо|не\s+надо\s+больше|(?:можешь\s+)?(?:больше\s+)?не)\s+(?:следить|ждать)"
                      r"(?:\s+больше)?(?:\s+за)?(?P<ru>.*)|"
                      r"не\s+(?:надо\s+)?следи\w*\s+(?:больше\s+)?(?:за\s+)?(?P<ru2>.*)|"
                      r"не\s+надо\s+(?:больше\s+)?за\s+(?P<ru5>\S+)\s+следить(?:\s+больше)?(?:\s*,.*)?|"
                      r"(?:больше\s+)?за\s+(?P<ru4>[^,]+?)\s+(?:больше\s+)?(?:можешь\s+)?(?:больше\s+)?не\s+(?:надо\s+)?следи\w*(?:\s+больше)?(?:\s*,.*)?|"
                      r"(?:отмени|убери|удали|сними|выключи)\s+(?:эту\s+|ту\s+)?(?:слежку|наблюдение|отслеживание)(?:\s+за)?(?P<ru3>.*)|"
                      # "эту слежку можно убирать": what is watched named first
                      r"(?:эту\s+|ту\s+)?(?:слежку|наблюдение)(?P<ru6>\s+за\s+\S+)?\s+(?:можно\s+)?(?:убирать|убрать|отменить|отменять|снять|снимать|"
                      r"сними|убери|отмени|удали))[\s.!]*$")


def _unwatch_intent(raw: str, said: str, russian: bool) -> Intent | None:
    match = _UNWATCH.match(raw.rstrip(" .!?"))
    if match is None or TIMER_WORD.search(raw):
        return None
    named = next((group for group in match.groups() if group is not None), "").split(",")[0].strip()  # not its reason
    waited_for = re.search(r"(?:watching|monitoring|waiting|checking)\s+(?:out\s+)?for|следить\s+за|ждать", raw)
    if re.search(r"(?:^|\s)(?:movie|film|show|series|фильм\w*|кино|сериал\w*|мультфильм\w*)(?:\s|$)", norm_words(named)) or (
            not waited_for and re.search(r"(?:^|\s)(?:it|this|that)(?:\s|$)", norm_words(named))):
        return None  # "stop watching the movie", "stop watching it": what plays, not a watch
    return Intent(kind="unwatch", russian=russian, subject=" ".join(named.strip(" ,").split()))


def _commanded(intent: Intent) -> str | None:
    """A watch or its end as a command of the frame's list (intents.yaml: frame), for the frame bank."""
    if intent.kind == "watch":
        who = re.sub(r"\s*\b(?:writes|напишет)\b.*", "", intent.subject).strip()
        return f"tell me when {who} writes in {intent.channel}" if who and intent.channel != "any" else None
    if intent.kind == "unwatch":
        return f"stop watching for {intent.subject}" if intent.subject else None
    return None


PHRASING = Phrasing(first=(_unwatch_intent, _watch_named, _watch_after_remarks, _watch_in_clauses, _watch_app_for), negated=(_unwatch_intent,),
                    opens=lambda clause: _UNWATCH.match(clause.rstrip(" .!?")) is not None, commanded=_commanded)
