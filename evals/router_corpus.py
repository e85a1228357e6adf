"""The router's training corpus: templates x phrasings, Russian and English, generated.

Nothing here is copied from `router_set.toml`'s `test` split: the parts below are written as
families (a stop word, a filler, a reason; an interrupt opener and a request; a clarification; a
light question) and combined. `corpus()` is deterministic for a seed.
"""
from __future__ import annotations

import random

# ---- cancel ---------------------------------------------------------------------------------
STOPS_RU = [
    "стоп", "стой", "хватит", "отмена", "отмени", "отменяй", "отменить", "отбой", "прекрати", "прекращай",
    "перестань", "остановись", "останови", "остановить", "замолчи", "молчи", "замолкни", "забудь", "забей",
    "проехали", "достаточно", "отставить", "брось", "бросай", "хорош", "харэ", "не надо", "не нужно",
    "не стоит", "я передумал", "я передумала", "передумал", "ну его", "оставь", "оставь это", "все, довольно",
    "уже не надо", "не продолжай", "стоп машина", "отменить все", "отмени все", "прекрати это",
    "забудь об этом", "забудь что я сказал", "останови музыку", "останови видео", "отмени задачу", "отмени поиск", "останови поиск", "отмени всю операцию", "прекрати поиск", "останавливайся", "заканчивай", "закругляйся", "прекрати немедленно", "тихо", "замолчи уже", "ничего не нужно", "ничего не надо",
]
STOPS_EN = [
    "stop", "cancel", "abort", "enough", "halt", "never mind", "nevermind", "forget it", "forget about it",
    "forget that", "scrap that", "scrap it", "drop it", "don't bother", "quit it", "cut it out", "shut up",
    "be quiet", "stop it", "stop that", "i changed my mind", "call it off", "kill it", "skip it", "no don't",
    "don't", "nope", "that's enough", "enough already", "cancel that", "cancel it", "abort that", "stop now",
    "leave it", "forget what i asked", "quit talking", "stop searching", "don't do that", "don't do it",
    "please stop", "hush", "quiet", "stop the music", "stop the video", "stop the playback", "cancel the search", "cancel the task", "cancel the lookup", "cancel the whole thing", "cancel this operation", "stop the search", "abort the task", "wrap it up", "stop right now", "stop immediately", "terminate", "nah forget it", "no need", "not needed anymore",
]
STOP_LEADS_RU = ["", "", "", "ой, ", "ну ", "так, ", "ладно, ", "нет, ", "нет-нет, ", "эй, ", "Порфирий, ", "все, ",
                 "слушай, ", "подожди, ", "да ", "блин, "]
STOP_LEADS_EN = ["", "", "", "oh, ", "okay, ", "no, ", "no no, ", "hey, ", "Porfiry, ", "ugh, ", "wait, ",
                 "actually, ", "sorry, ", "um, ", "right, "]
STOP_TAILS_RU = ["", "", "", "!", "...", ", я передумал", ", я ошибся с адресом", ", не то", ", это не то", ", неправильно",
                 ", не в ту сторону", ", давай заново", ", давай другое", ", я оговорился", ", уже не нужно", " уже",
                 ", спасибо", ", не надо", ", не ищи", ", я сам", ", я сама сделаю", ", это ошибка"]
STOP_TAILS_EN = ["", "", "", "!", "...", ", I changed my mind", ", wrong one", ", that was wrong", ", my mistake",
                 ", not that", ", start over", ", I'll handle it", ", thanks", ", not needed", ", I misspoke", ", that's not what I meant", ", wrong name"]
# a stop followed by the new request: still a cancel (the rest is the new request)
STOP_NEW_RU = ["стоп, лучше включи музыку", "хватит, давай про погоду", "отмена, найди другой фильм",
               "стоп, я имел в виду завтра", "стой, не Ане, а Маше", "отбой, позвони лучше папе",
               "нет, отмена, лучше напомни вечером", "стоп, неправильно, другой адрес"]
STOP_NEW_EN = ["stop, play some music instead", "cancel, find another film", "scrap that, call dad instead",
               "stop, I meant tomorrow", "no, stop, not Anna, Maria", "abort, wrong address",
               "never mind that, tell me a joke instead", "forget it, let's talk about the weather"]
NEG_ACTION_RU = ["не отсылай", "не ищи", "не звони", "не пиши", "не заказывай", "не покупай", "не удаляй",
                 "не включай", "не бронируй", "ничего не отправляй", "ничего пока не трогай", "не надо отправлять",
                 "не надо звонить", "не нужно искать", "не продолжай"]
NEG_ACTION_EN = ["don't send that", "don't call", "don't search", "don't buy it", "don't book it", "don't delete it",
                 "don't order", "do nothing", "don't send anything", "no need to call", "don't continue",
                 "don't go on"]

# ---- interrupt ------------------------------------------------------------------------------
REQUESTS_RU = [
    "посмотри погоду на завтра", "позвони маме", "включи свет", "выключи музыку", "найди ближайший банкомат",
    "напиши Ивану, что задерживаюсь", "заведи будильник на шесть", "прочитай последнее сообщение",
    "закажи такси домой", "открой календарь", "проверь почту", "напомни про таблетки", "переведи последнее письмо",
    "покажи пробки", "ответь Лене", "запиши номер телефона", "выключи плиту", "убавь громкость",
    "отправь жене мою геолокацию", "глянь, свободен ли я в два", "включи навигацию на работу",
    "добавь молоко в список покупок", "перезвони начальнику", "найди зарядку для телефона", "открой ворота",
    "посмотри расписание электричек", "набери ресторан", "покажи черновик", "прочитай мне текст",
    "вызови лифт", "скажи, что у меня в календаре", "кто мне звонил", "что у меня на сегодня",
]
REQUESTS_EN = [
    "check tomorrow's weather", "call my mom", "switch on the hallway light", "turn off the music", "find an ATM nearby",
    "tell Ivan I'm running behind", "wake me up at six", "read me the last message", "order a cab home",
    "open my calendar", "check my email", "remind me about my pills", "translate the last email", "show me the traffic",
    "reply to Lena", "write down a phone number", "switch off the oven", "turn the volume down",
    "send my location to my wife", "check if I have a meeting at two", "start navigation to work",
    "add milk to the shopping list", "call my boss back", "find my phone charger", "open the garage door",
    "look up the train schedule", "ring the restaurant", "show me the outline", "read the text to me",
    "book a table for two", "what's on my calendar", "who called me", "what do I have today",
]
INT_FORMS_RU = [
    "подожди, сначала {r}", "погоди, сначала {r}", "секунду, сначала {r}", "секундочку, {r}",
    "секундочку, сначала {r}", "минутку, сперва {r}", "одну секунду, {r} сначала", "до этого {r}",
    "перед этим {r}", "сначала {r}", "сперва {r}", "первым делом {r}", "прежде всего {r}",
    "прежде чем продолжить, {r}", "прежде чем звонить, {r}", "срочно {r}", "срочно, {r}",
    "это потом, сначала {r}", "отложи это, {r}", "погоди с этим делом, {r}", "пауза, {r}",
    "стой, сначала {r}, потом продолжишь", "{r}, потом вернешься к этому", "сначала {r}, потом вернемся к этому",
    "подожди-ка, {r} сначала", "стоп, сначала {r}", "кстати, срочно: {r}", "быстро {r}, это срочно",
    "а до этого {r}", "подожди, {r}", "погоди, {r}", "до того как продолжишь, {r}", "до того как отправишь, {r}", "погоди, есть дело: {r}", "минуточку, срочно {r}", "погоди, пока ты этим занят, {r}", "подожди, {r} сперва",
    "прервись, {r}", "давай сначала {r}", "нет, подожди, сначала {r}",
]
INT_FORMS_EN = [
    "wait, first {r}", "hang on, {r} first", "hold on, {r} first", "hold on, first {r}", "one sec, {r}",
    "one second, {r} please", "just a minute, {r}", "before you do that, {r}", "before that, {r}",
    "before you continue, {r}", "before you send it, {r}", "first {r}", "first of all, {r}",
    "urgent: {r}", "urgently {r}", "quick, {r} first", "real quick, {r}", "leave that for later, {r} now",
    "put it aside and {r}", "pause for a moment and {r}", "hold it there, {r}", "{r} first, then continue",
    "give me a sec, {r} first", "stop for a second and {r}", "above all, {r}", "first and foremost, {r}",
    "sorry to interrupt, {r}", "hang on a moment, {r}", "actually, first {r}", "wait, {r} before that", "hold on, {r}", "wait, {r}", "wait, something urgent: {r}", "before you go on, {r}", "wait, do this first: {r}",
    "hold on, before you do that, {r}", "no wait, first {r}", "it's urgent, {r}",
]

# ---- queue ----------------------------------------------------------------------------------
CLARIFY_RU = [
    "только за прошедший {p}", "только за {p2}", "только {kind}", "и положи туда еще {x}", "добавь туда {x}",
    "сделай {adj}", "можно {adj}", "на {lang}", "на {lang}, пожалуйста", "нет, не {x}, а {y}", "не {x}, а {y}",
    "я про {p2} говорил", "в виде {fmt}", "лучше в виде {fmt}", "без {x}", "с {x}", "для {who}",
    "и подпиши {x}", "поставь в копию {name}", "отправь {name}", "через мой рабочий ящик", "и запиши это в заметки",
    "не забудь про {x}", "кстати, учти {x}", "желательно до {time}", "где-то до {time}", "подешевле",
    "глянь также в {place}", "подробнее про {x}", "хватит {num} вариантов", "хватит и {num}",
    "не нужно так {adj2}", "чуть менее {adj3}", "нет, не в {wdv}, а в {wdv}", "не {wdn}, а {wdn}", "не прекращай", "не отменяй", "не бросай", "не надо останавливаться", "продолжай дальше", "продолжай, {okru}, {okru}", "все верно, продолжай", "да, продолжай", "нет, не {y}", "нет, не этот, а {y}", "не тот, {y}", "нет, не тот, нужен {y}", "продолжай", "продолжай, {okru}", "не останавливайся, {okru}", "не прекращай, {okru}", "хватит на {who}", "этого хватит на {who}?", "в тексте напиши, что {fact}", "отмени {book} {laterru}", "{laterru} отмени {book}", "в сообщении укажи {x}", "не надо {x}, только {y}", "пусть будет {adj}",
]
FILL_RU = {
    "p": ["месяц", "год", "неделю", "квартал"], "p2": ["прошлую неделю", "вчера", "прошлый четверг", "этот год", "март"],
    "kind": ["мелодрамы", "новые", "бесплатные", "на русском", "с хорошим рейтингом", "рядом с домом"],
    "x": ["масло", "фотографии", "Петра", "смайлики", "спойлеров", "сыр", "вложения", "итог", "подпись",
          "цены", "ссылку", "детали"],
    "y": ["Петрова", "вторую", "другой", "Маша", "завтрашний", "новый"],
    "adj": ["покороче", "подробнее", "поярче", "попроще", "повежливее", "таблицей", "списком", "короче"],
    "adj2": ["длинно", "сложно", "подробно", "громко"], "adj3": ["длинно", "сухо", "строго"],
    "lang": ["английском", "китайском", "русском", "немецком", "японском"],
    "fmt": ["таблицы", "списка", "pdf", "письма", "презентации"],
    "who": ["двоих", "ребенка пяти лет", "мамы", "всей семьи", "новичка"],
    "name": ["Олега", "Лену", "Ане", "Ивану", "начальнику"], "time": ["девяти вечера", "пятницы", "обеда", "утра"],
    "place": ["архиве", "почте", "документах", "заметках"], "num": ["двух", "трех", "пяти", "одного"],
    "wdv": ["понедельник", "среду", "пятницу", "субботу", "воскресенье"], "wdn": ["понедельник", "среда", "пятница", "суббота"],
    "okru": ["все правильно", "мне нравится", "хорошо идет", "так и надо"],
    "book": ["бронь в отеле", "запись к парикмахеру", "подписку на журнал", "заказ пиццы", "встречу с Олегом"],
    "laterru": ["потом", "после этого", "когда закончишь", "вечером", "завтра"],
    "fact": ["я приду позже", "встреча переносится", "оплата прошла", "мы согласны"],
}
LATER_RU = ["потом {r}", "после этого {r}", "когда закончишь, {r}", "а потом {r}", "{r} потом", "и затем {r}",
            "кстати, потом {r}", "как закончишь, {r}", "{r}, но это не срочно", "а еще {r}", "и {r}",
            "после {r}", "{r} когда освободишься", "{r}"]
CLARIFY_EN = [
    "just the past {p}", "only {kind}", "and add {x} too", "also add {x}", "make it {adj}", "{adj} please",
    "in {lang}", "in {lang} please", "not {x}, {y}", "no, not {x}, {y}", "I meant {p2}", "as a {fmt}",
    "could you make it a {fmt}", "without {x}", "with {x}", "for {who}", "put {x} at the bottom", "cc {name} on it",
    "send it to {name}", "use my office address", "and keep a copy in my notes", "don't forget {x}",
    "by the way, include {x}", "preferably before {time}", "cheaper ones", "look in {place} as well",
    "more details on {x}", "{num} options are enough", "don't make it so {adj2}", "keep it {adj}", "no, not {wdn}, {wdn}", "not on {wdn}, on {wdn}", "don't cancel it", "don't quit now", "no need to stop", "go on", "yes, continue", "right, go on", "no, {y}", "no, not this one, {y}", "not that one, {y}", "keep going", "go on, {oken}", "don't stop, {oken}", "enough for {who}", "is that enough for {who}?", "in the text say that {fact}", "cancel {book} {lateren}", "{lateren}, cancel {book}", "mention {x} in the message",
]
FILL_EN = {
    "p": ["month", "year", "week", "quarter"], "p2": ["last week", "yesterday", "last Thursday", "this year", "March"],
    "kind": ["comedies", "the new ones", "free ones", "in English", "highly rated ones", "near home"],
    "x": ["butter", "the photos", "Peter", "spoilers", "cheese", "the attachments", "the total", "my name",
          "prices", "the link", "the details"],
    "y": ["Peter Smith", "the second one", "the other one", "Maria", "tomorrow's", "the new one"],
    "adj": ["a bit shorter", "more detailed", "simpler", "more polite", "casual", "brief", "a table"],
    "adj2": ["formal", "long", "complicated", "detailed", "loud"],
    "lang": ["French", "Chinese", "Russian", "German", "Japanese"],
    "fmt": ["table", "list", "PDF", "email", "slide deck"],
    "who": ["two", "a five year old", "my mom", "the whole family", "a beginner"],
    "name": ["Olga", "Lena", "Anna", "Ivan", "my boss"], "time": ["nine pm", "Friday", "lunch", "the morning"],
    "place": ["the old folder", "my email", "the documents", "my notes"], "num": ["two", "three", "five", "one"],
    "wdn": ["Monday", "Wednesday", "Friday", "Saturday", "Sunday"], "oken": ["that's right", "I like it", "good so far"],
    "book": ["the hotel room", "my haircut appointment", "the magazine subscription", "the pizza order", "the call with Oleg"],
    "lateren": ["later", "after this", "once you're done", "tonight", "tomorrow"],
    "fact": ["I'll come later", "the meeting moved", "payment went through", "we agree"],
}
LATER_EN = ["then {r}", "after that, {r}", "once that's finished, {r}", "and then {r}", "{r} later", "and {r}",
            "oh and later {r}", "once you finish, {r}", "{r}, no rush", "also {r}", "{r} afterwards",
            "{r} when you're free", "{r}"]
# words that look like a stop or a wait inside an ordinary request
LOOKALIKE_RU = [
    "добавь в маршрут остановку у магазина", "стоп-кадр тоже найди", "только не бросай на середине",
    "не останавливайся, стоп это песня", "отмени потом запись к врачу", "отмени встречу в пятницу",
    "напомни отменить подписку", "хватит трех пунктов", "стоп-слово в игре банан",
    "поставь таймер, когда закончишь", "подожди ответа Ани и перешли его мне", "добавь в план: прекратить курить",
    "найди песню stop", "запусти секундомер после этого", "останови музыку после этого", "забудь про скидку в тексте, а цену оставь",
    "а что такое стоп-лосс", "включи фильм «Стой, или моя мама будет стрелять»", "не надо спешить, сделай хорошо",
    "сначала пусть будет введение, потом выводы", "сначала дорогие, потом дешевые", "перед этим абзацем добавь заголовок",
]
LOOKALIKE_EN = [
    "add a stop at the gas station to the route", "keep going, I like it", "cancel the gym booking later",
    "remind me to cancel the subscription", "three bullet points will be enough", "stopwatch for 5 minutes",
    "cancellation policy?", "start a stopwatch after this", "wait until Kate answers and then forward it",
    "play the song Stop by the Spice Girls", "stop the music after that", "explain stop-loss orders",
    "what time is it in Tokyo and book a flight", "put the introduction first, then the summary",
    "first the expensive ones, then the cheap ones", "before this paragraph add a heading", "no rush, do it properly",
    "don't forget the attachments", "never mind the typos, just send it later", "add 'quit smoking' to my goals",
]

# ---- parallel -------------------------------------------------------------------------------
NUM_RU = ["два", "три", "пять", "семь", "восемь", "двенадцать", "пятнадцать", "двадцать", "сорок", "сто",
          "двести", "триста", "17", "25", "48", "120", "250", "1000"]
NUM_EN = ["two", "three", "five", "seven", "eight", "twelve", "fifteen", "twenty", "forty", "a hundred", "17",
          "25", "48", "120", "250", "1000"]
OPS_RU = ["плюс", "минус", "умножить на", "на", "поделить на", "разделить на", "делить на"]
OPS_EN = ["plus", "minus", "times", "divided by", "multiplied by"]
LIGHT_RU = [
    "который час", "который сейчас час", "сколько времени", "сколько сейчас времени", "какое сегодня число",
    "какое число сегодня", "какая сегодня дата", "какой сегодня день недели", "какой сегодня день",
    "какой завтра день", "какое завтра число", "сегодня {wd}", "сегодня {wd} или {wd2}", "завтра {wd}",
    "какая сегодня погода", "какая погода завтра", "что с погодой сейчас", "сколько градусов сейчас",
    "будет ли дождь сегодня", "дождь завтра будет", "холодно на улице", "когда сегодня закат",
    "сколько будет {a} {op} {b}", "{a} {op} {b} сколько будет", "{a} {op} {b}", "сколько это {a} {op} {b}",
    "посчитай {a} {op} {b}", "сколько будет {a} процентов от {b}", "корень из {b}", "{a} в квадрате сколько",
    "сколько {u1} в {u2}", "сколько дней до {d}", "сколько дней в {m}", "какой день недели будет {dd}",
    "какого числа будет {wd4}", "как пишется слово {word}", "как правильно пишется {word}",
    "когда родился {who}", "сколько лет {who}", "когда следующее полнолуние",
    "сколько сейчас в Токио", "который час в Нью-Йорке",
]
LIGHT_EN = [
    "what time is it", "what's the time", "what time is it now", "what's the date", "what's today's date",
    "what day is it", "what day is it today", "what's the date tomorrow", "is it {wd} today", "is today {wd}",
    "is tomorrow {wd}", "what's the weather like", "what's the weather tomorrow", "any rain today",
    "will it rain today", "is it warm outside", "what's the temperature", "when is sunset today",
    "what's {a} {op} {b}", "how much is {a} {op} {b}", "{a} {op} {b}", "calculate {a} {op} {b}",
    "what's {a} percent of {b}", "square root of {b}", "what's {a} squared", "how many {u1} in a {u2}",
    "how long until {d}", "how many days in {m}", "what day of the week is {dd}", "what date is {wd} ",
    "how do you spell {word}", "how is {word} spelled", "when was {who} born", "how old is {who}",
    "when is the next full moon", "what time is it in Tokyo",
]
FILL_LIGHT_RU = {
    "wd": ["понедельник", "вторник", "среда", "четверг", "пятница", "суббота"], "wd2": ["пятница", "вторник"],
    "wd4": ["пятницу", "среду", "субботу", "понедельник"],
    "u1": ["метров", "граммов", "минут", "секунд", "сантиметров", "литров"],
    "u2": ["километре", "килограмме", "часе", "сутках", "метре", "галлоне"],
    "d": ["отпуска", "лета", "моего дня рождения", "пятницы"], "m": ["феврале", "году", "марте", "високосном году"],
    "dd": ["пятнадцатое", "первое мая", "восьмое марта", "тридцать первое"],
    "word": ["«вообще»", "«привет»", "«интеллигент»", "«рассчитать»"],
    "who": ["Эйнштейн", "Гагарин"],
}
FILL_LIGHT_EN = {
    "wd": ["Monday", "Tuesday", "Sunday", "Thursday", "Friday", "Saturday"],
    "u1": ["meters", "grams", "minutes", "seconds", "inches", "ounces", "feet"],
    "u2": ["kilometer", "kilogram", "hour", "day", "foot", "pound", "mile"],
    "d": ["New Year", "summer", "my birthday", "Friday"], "m": ["February", "a year", "March", "a leap year"],
    "dd": ["the 15th", "May first", "the 31st", "next Tuesday"],
    "word": ["necessary", "receive", "accommodate", "'separate'", "bureaucracy"],
    "who": ["Einstein", "Gagarin"],
}
LIGHT_LEADS_RU = ["", "", "", "а ", "скажи, ", "подскажи, ", "кстати, ", "быстрый вопрос: ", "слушай, ", "Порфирий, "]
LIGHT_LEADS_EN = ["", "", "", "hey, ", "one quick thing, ", "tell me, ", "by the way, ", "so ", "real quick, "]


def _fill(template: str, table: dict[str, list[str]], rng: random.Random) -> str:
    out = template
    for key, values in table.items():
        while "{" + key + "}" in out:
            out = out.replace("{" + key + "}", rng.choice(values), 1)
    return out


def _cap(text: str, rng: random.Random) -> str:
    text = text.strip()
    if rng.random() < 0.4:
        text = text[:1].upper() + text[1:]
    return text


def _ends(rng: random.Random, question: bool = False) -> str:
    return rng.choice(["?", "?", ""] if question else ["", "", ".", "!"])


def corpus(seed: int = 7, per_label: int = 1500) -> list[tuple[str, str]]:
    """(text, label) pairs, about `per_label` per label, both languages."""
    rng = random.Random(seed)
    items: list[tuple[str, str]] = []
    for _ in range(per_label // 2):
        for lang in ("ru", "en"):
            items.append((_cancel(lang, rng), "cancel"))
            items.append((_interrupt(lang, rng), "interrupt"))
            items.append((_queue(lang, rng), "queue"))
            items.append((_parallel(lang, rng), "parallel"))
    return list(dict.fromkeys(items))


def _cancel(lang: str, rng: random.Random) -> str:
    ru = lang == "ru"
    stops, leads, tails = (STOPS_RU, STOP_LEADS_RU, STOP_TAILS_RU) if ru else (STOPS_EN, STOP_LEADS_EN, STOP_TAILS_EN)
    roll = rng.random()
    if roll < 0.12:
        return _cap(rng.choice(STOP_NEW_RU if ru else STOP_NEW_EN), rng)
    if roll < 0.25:
        neg = rng.choice(NEG_ACTION_RU if ru else NEG_ACTION_EN)
        return _cap(rng.choice(leads) + neg + rng.choice(["", "!", ", " + rng.choice(stops)]), rng)
    stop = rng.choice(stops)
    if rng.random() < 0.25:
        stop = rng.choice([f"{stop}-{stop}", f"{stop} {stop}", f"{stop}, {stop}", f"{stop} {stop} {stop}",
                           f"{stop}, {rng.choice(stops)}"])
    return _cap(rng.choice(leads) + stop + rng.choice(tails), rng)


def _interrupt(lang: str, rng: random.Random) -> str:
    forms, requests = (INT_FORMS_RU, REQUESTS_RU) if lang == "ru" else (INT_FORMS_EN, REQUESTS_EN)
    return _cap(rng.choice(forms).format(r=rng.choice(requests)) + _ends(rng), rng)


def _queue(lang: str, rng: random.Random) -> str:
    ru = lang == "ru"
    roll = rng.random()
    if roll < 0.2:
        return _cap(rng.choice(LOOKALIKE_RU if ru else LOOKALIKE_EN), rng)
    if roll < 0.55:
        later, requests = (LATER_RU, REQUESTS_RU) if ru else (LATER_EN, REQUESTS_EN)
        return _cap(rng.choice(later).format(r=rng.choice(requests)) + _ends(rng), rng)
    clarify, table = (CLARIFY_RU, FILL_RU) if ru else (CLARIFY_EN, FILL_EN)
    return _cap(_fill(rng.choice(clarify), table, rng) + _ends(rng), rng)


def _parallel(lang: str, rng: random.Random) -> str:
    ru = lang == "ru"
    light, table, leads = (LIGHT_RU, FILL_LIGHT_RU, LIGHT_LEADS_RU) if ru else (LIGHT_EN, FILL_LIGHT_EN, LIGHT_LEADS_EN)
    nums, ops = (NUM_RU, OPS_RU) if ru else (NUM_EN, OPS_EN)
    text = _fill(rng.choice(light), {**table, "a": nums, "b": nums, "op": ops}, rng)
    return _cap(rng.choice(leads) + text.strip() + _ends(rng, question=True), rng)
