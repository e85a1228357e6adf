"""Issue 54: the LLM worker warms the active embedded (llamacpp) profile at start, so the first
user's first answer does not pay for loading the model and reading the prompt; the warm-up is the
very prefix a fresh session's first request starts with. A stand-in backend records the requests
(the real model is minutes of CPU on the reference machine; tests/test_llm_llamacpp.py covers it)."""
import anyio

import protocol as p
from harness import inproc_system, make_config, override, until
from llm.profiles import ProfileConfig
from llm.scripted import ScriptedBackend


class Recording(ScriptedBackend):
    """Answers like the scripted model and keeps every request's messages and token bound."""

    def __init__(self):
        super().__init__()
        self.asked: list[tuple[list[p.ChatMessage], int]] = []

    def stream(self, messages, *, tools, max_tokens, arg_choices=None):
        self.asked.append((list(messages), max_tokens))
        return super().stream(messages, tools=tools, max_tokens=max_tokens, arg_choices=arg_choices)


def _config(tmp_path, kind: str, warmup: bool = True):
    config = make_config(tmp_path)
    extra = {"base_url": "http://127.0.0.1:9/v1"} if kind == "openai" else {"model_path": str(tmp_path / "none.gguf")}
    profiles = dict(config.llm.profiles, test=ProfileConfig(kind=kind, **extra))
    return override(config, llm={"profiles": profiles, "warmup": warmup})


async def _status(system) -> p.LLMStatus:
    return await system.client.ask("llm", p.LLMStatusRequest(), timeout=10)


async def test_an_embedded_model_is_warmed_with_the_prefix_of_a_sessions_first_request(tmp_path):
    backend = Recording()
    async with inproc_system(tmp_path, backend=backend, config=_config(tmp_path, "llamacpp")) as system:
        async def warm():
            status = await _status(system)
            return status if status.warm == "warm" else None

        status = await until(warm, timeout=20)
        assert status.warm_s >= 0 and not status.warm_detail
        warmed = list(backend.asked)
        assert warmed and all(max_tokens == 1 for _, max_tokens in warmed)
        await system.turn("fresh", "what is a haiku")
        first, _ = backend.asked[len(warmed)]
        prefix, _ = warmed[0]
        # the static part and the state part: everything before the user's words
        assert [m.content for m in first[:2]] == [m.content for m in prefix[:2]]
        assert prefix[0].role == "system" and prefix[-1].role == "user"


async def test_with_warmup_off_nothing_is_asked_before_a_user_speaks(tmp_path):
    backend = Recording()
    async with inproc_system(tmp_path, backend=backend, config=_config(tmp_path, "llamacpp", warmup=False)) as system:
        assert (await _status(system)).warm == "none"
        await anyio.sleep(0)
        assert backend.asked == []


async def test_a_model_behind_http_is_not_warmed(tmp_path):
    backend = Recording()
    async with inproc_system(tmp_path, backend=backend, config=_config(tmp_path, "openai")) as system:
        assert (await _status(system)).warm == "none"
        assert backend.asked == []


async def test_a_model_that_cannot_load_says_why(tmp_path):
    # no stand-in: the real llamacpp backend, asked to load a file that does not exist
    config = override(_config(tmp_path, "llamacpp"), llm={"profile": "test"})
    async with inproc_system(tmp_path, config=config, actors=("llm",)) as system:
        async def settled():
            status = await _status(system)
            return status if status.warm != "warming" else None

        status = await until(settled, timeout=20)
        assert status.warm == "failed" and "none.gguf" in status.warm_detail
