"""The OpenAI-compatible backend against a real local HTTP server speaking scripted SSE."""
import anyio
import pytest

from llm import LLMError, ProfileConfig
from llm.openai_backend import OpenAIBackend
from protocol import ChatMessage
from tests.scripted_openai_server import Reply, ScriptedOpenAIServer, chunk_event

QUESTION = [ChatMessage(role="system", content="You are Porfiry."), ChatMessage(role="user", content="Hi")]


def backend_for(server: ScriptedOpenAIServer, **overrides) -> OpenAIBackend:
    settings = dict(kind="openai", model="scripted-model", base_url=server.base_url, retries=3,
                    backoff_initial_s=0.01, backoff_max_s=0.02, connect_timeout_s=2.0, read_timeout_s=5.0)
    settings.update(overrides)
    return OpenAIBackend(ProfileConfig(**settings), name="qwen")


async def collect_pieces(backend: OpenAIBackend, messages=QUESTION, max_tokens=32) -> list[str]:
    pieces = []
    async with backend.stream(messages, tools=[], max_tokens=max_tokens) as generation:
        async for piece in generation:
            pieces.append(piece)
    return pieces


async def test_streams_pieces_in_order_and_sends_the_expected_request():
    replies = [Reply(chunks=["Hel", "lo", " there"], usage={"prompt_tokens": 12, "completion_tokens": 3})]
    async with ScriptedOpenAIServer(replies) as server:
        backend = backend_for(server, api_key="sekret", enable_thinking=False)
        generation = backend.stream(QUESTION, tools=["read_skill"], max_tokens=20)
        assert await generation.collect() == "Hello there"
        assert (generation.finish_reason, generation.prompt_tokens, generation.completion_tokens) == ("stop", 12, 3)
        await backend.aclose()
    body = server.requests[0]
    assert body["stream"] is True and body["max_tokens"] == 20 and body["model"] == "scripted-model"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"] == [{"role": "system", "content": "You are Porfiry."}, {"role": "user", "content": "Hi"}]
    assert server.headers[0]["authorization"] == "Bearer sekret"


async def test_prompt_tokens_the_server_took_from_its_prefix_cache_are_reported():
    usage = {"prompt_tokens": 300, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 256}}
    async with ScriptedOpenAIServer([Reply(chunks=["ok"], usage=usage), Reply(chunks=["ok"])]) as server:
        backend = backend_for(server)
        cached = backend.stream(QUESTION, tools=[], max_tokens=8)
        await cached.collect()
        unknown = backend.stream(QUESTION, tools=[], max_tokens=8)
        await unknown.collect()
        await backend.aclose()
    assert (cached.prompt_tokens, cached.reused_tokens) == (300, 256)
    assert unknown.reused_tokens == -1  # a server that does not say: unknown, not zero


async def test_no_authorization_header_and_no_template_kwargs_unless_configured():
    async with ScriptedOpenAIServer() as server:
        backend = backend_for(server)
        await backend.stream(QUESTION, tools=[], max_tokens=8).collect()
    assert "authorization" not in server.headers[0]
    assert "chat_template_kwargs" not in server.requests[0]


async def test_tool_results_reach_the_server_as_labelled_user_turns():
    history = QUESTION + [
        ChatMessage(role="assistant", content="TOOL_CALL: read_skill|media"),
        ChatMessage(role="tool", name="read_skill", content="Media skill body"),
        ChatMessage(role="user", content="and hurry"),
    ]
    async with ScriptedOpenAIServer() as server:
        await backend_for(server).stream(history, tools=[], max_tokens=8).collect()
    sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[3]["content"] == "[Tool result from read_skill]\nMedia skill body\n\nand hurry"


async def test_thinking_is_stripped_even_when_tags_are_split_across_chunks():
    async with ScriptedOpenAIServer([Reply(chunks=["<thi", "nk>let me", " think</th", "ink>\n\nAns", "wer"])]) as server:
        text = await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect()
    assert text == "Answer"


async def test_retries_429_and_5xx_then_succeeds():
    sleeps = []

    async def record_sleep(seconds):
        sleeps.append(seconds)

    async with ScriptedOpenAIServer([Reply(status=429), Reply(status=500), Reply(status=503), Reply(chunks=["fine"])]) as server:
        backend = OpenAIBackend(ProfileConfig(kind="openai", base_url=server.base_url, retries=3,
                                              backoff_initial_s=1.0, backoff_max_s=3.0, backoff_jitter=0.5),
                                sleep=record_sleep, uniform=lambda: 1.0)
        assert await backend.stream(QUESTION, tools=[], max_tokens=8).collect() == "fine"
    assert len(server.requests) == 4
    assert sleeps == [1.5, 3.0, 4.5]  # exponential, capped at 3 s, plus 50 % jitter


async def test_gives_up_after_the_configured_retries_with_the_last_status():
    async with ScriptedOpenAIServer([Reply(status=503)]) as server:
        with pytest.raises(LLMError, match=r"HTTP 503.*gave up after 3 attempts"):
            await backend_for(server, retries=2).stream(QUESTION, tools=[], max_tokens=8).collect()
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried():
    async with ScriptedOpenAIServer([Reply(status=400), Reply(chunks=["never"])]) as server:
        with pytest.raises(LLMError, match="HTTP 400"):
            await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect()
    assert len(server.requests) == 1


async def test_connect_failure_is_a_clear_error_after_retries():
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # nothing listens on this port now
    backend = OpenAIBackend(ProfileConfig(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", retries=2,
                                          backoff_initial_s=0.001))
    with pytest.raises(LLMError, match=rf"cannot reach http://127.0.0.1:{port}/v1/chat/completions: ConnectError.*3 attempts"):
        await backend.stream(QUESTION, tools=[], max_tokens=8).collect()
    ok, detail = await backend.health()
    assert not ok and "cannot reach" in detail


async def test_slow_stream_delivers_each_piece_as_it_arrives():
    async with ScriptedOpenAIServer([Reply(chunks=["a", "b", "c"], first_chunk_delay_s=0.2, chunk_delay_s=0.1)]) as server:
        arrivals = []
        async with backend_for(server).stream(QUESTION, tools=[], max_tokens=8) as generation:
            async for piece in generation:
                arrivals.append((piece, anyio.current_time()))
    assert [piece for piece, _ in arrivals] == ["a", "b", "c"]
    assert arrivals[2][1] - arrivals[0][1] >= 0.15  # streamed, not buffered until the end


async def test_read_timeout_while_waiting_for_the_first_token_is_retried_then_reported():
    async with ScriptedOpenAIServer([Reply(chunks=["late"], first_chunk_delay_s=5)]) as server:
        with pytest.raises(LLMError, match="ReadTimeout.*2 attempts"):
            await backend_for(server, retries=1, read_timeout_s=0.1).stream(QUESTION, tools=[], max_tokens=8).collect()
    assert len(server.requests) == 2


async def test_cancelling_the_consumer_closes_the_http_stream():
    async with ScriptedOpenAIServer([Reply(chunks=["first"], hang_after_chunks=True)]) as server:
        backend = backend_for(server)
        received = []
        with anyio.move_on_after(3):
            async with anyio.create_task_group() as group:

                async def consume():
                    async with backend.stream(QUESTION, tools=[], max_tokens=8) as generation:
                        async for piece in generation:
                            received.append(piece)
                            group.cancel_scope.cancel()

                group.start_soon(consume)
            await server.client_gone.wait()
        assert received == ["first"]
        assert server.disconnects == 1
        assert backend.in_flight == 0  # the concurrency slot came back


async def test_breaking_out_early_closes_the_http_stream():
    async with ScriptedOpenAIServer([Reply(chunks=["one", "two", "three"], chunk_delay_s=0.3)]) as server:
        async with backend_for(server).stream(QUESTION, tools=[], max_tokens=8) as generation:
            async for _ in generation:
                break
        with anyio.fail_after(3):
            await server.client_gone.wait()
    assert server.completed_streams == 0


async def test_malformed_sse_line_is_a_clear_error():
    lines = [chunk_event("fine so far"), "data: {not json"]
    async with ScriptedOpenAIServer([Reply(raw_lines=lines)]) as server:
        generation = backend_for(server).stream(QUESTION, tools=[], max_tokens=8)
        with pytest.raises(LLMError, match=r"malformed SSE data .*not JSON.*\{not json"):
            await generation.collect()
        assert generation.text == "fine so far"
        # the backend is still usable
        server.script(Reply(chunks=["recovered"]))
        assert await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect() == "recovered"


async def test_a_line_that_is_not_sse_is_a_clear_error():
    async with ScriptedOpenAIServer([Reply(raw_lines=["<html>proxy error</html>"])]) as server:
        with pytest.raises(LLMError, match="malformed SSE line.*proxy error"):
            await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect()


async def test_stream_that_ends_without_done_is_reported():
    async with ScriptedOpenAIServer([Reply(chunks=["cut"], send_done=False)]) as server:
        with pytest.raises(LLMError, match=r"ended without \[DONE\]"):
            await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect()


async def test_no_retry_once_text_was_streamed():
    lines = [chunk_event("half an answer"), "data: {broken"]
    async with ScriptedOpenAIServer([Reply(raw_lines=lines), Reply(chunks=["a second answer"])]) as server:
        generation = backend_for(server).stream(QUESTION, tools=[], max_tokens=8)
        with pytest.raises(LLMError):
            await generation.collect()
    assert generation.text == "half an answer"
    assert len(server.requests) == 1


async def test_server_error_event_mid_stream_is_reported_not_retried():
    lines = [chunk_event("partial"), 'data: {"error": {"message": "engine died"}}']
    async with ScriptedOpenAIServer([Reply(raw_lines=lines)]) as server:
        with pytest.raises(LLMError, match="engine died"):
            await backend_for(server).stream(QUESTION, tools=[], max_tokens=8).collect()
    assert len(server.requests) == 1


async def test_concurrent_requests_are_bounded():
    async with ScriptedOpenAIServer([Reply(chunks=["x", "y"], chunk_delay_s=0.05)]) as server:
        backend = backend_for(server, max_concurrency=2)
        results = []

        async def one():
            results.append(await backend.stream(QUESTION, tools=[], max_tokens=8).collect())

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(one)
    assert results == ["xy"] * 5
    assert server.peak_in_flight == 2


async def test_health_reports_the_served_model():
    async with ScriptedOpenAIServer(models=["scripted-model"]) as server:
        assert await backend_for(server).health() == (True, f"{server.base_url}/models serves scripted-model")
        ok, detail = await backend_for(server, model="other").health()
        assert not ok and "not other" in detail


@pytest.mark.parametrize("field", ["grammar", "guided_grammar", "structured_outputs"])
async def test_with_grammar_on_the_server_is_sent_the_same_constraint_as_the_embedded_backend(field):
    from llm.grammar import tool_call_grammar

    async with ScriptedOpenAIServer([Reply(chunks=["TOOL_CALL: get_current_time"])]) as server:
        backend = backend_for(server, grammar=True, grammar_field=field)
        choices = {"read_skill": ["media"], "get_current_time": [""]}
        generation = backend.stream(QUESTION, tools=["get_current_time", "read_skill"], max_tokens=20, arg_choices=choices)
        await generation.collect()
        await backend.aclose()
    expected = tool_call_grammar(["get_current_time", "read_skill"], choices)
    body = server.requests[0]
    sent = body["structured_outputs"]["grammar"] if field == "structured_outputs" else body[field]
    assert sent == expected and '"read_skill|" ("media")' in sent


async def test_without_grammar_no_constraint_is_sent():
    async with ScriptedOpenAIServer([Reply(chunks=["hi"])]) as server:
        backend = backend_for(server)
        await backend.stream(QUESTION, tools=["get_current_time"], max_tokens=20).collect()
        await backend.aclose()
    assert not {"grammar", "guided_grammar", "structured_outputs"} & set(server.requests[0])
