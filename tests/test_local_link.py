"""Actors of one OS process reach each other without ZeroMQ (actors/local.py), and nothing a
sender or receiver relies on changes: replies, order, a full mailbox, bad bytes, a restart."""
import anyio
import pytest
import zmq

import protocol as p
from actors.base import Actor, AskTimeout, Endpoint, Inbound
from actors.local import LocalLink
from actors.topology import Topology
from core.config import TopologyConfig
from harness import override, until

ADDRESSES = {"echo": "inproc://test-echo", "probe": "inproc://test-probe"}


class Echo(Actor):
    name = "echo"

    def __init__(self, *args, gate: anyio.Event | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = gate
        self.seen: list[str] = []

    async def handle(self, msg: Inbound) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if isinstance(msg.body, p.Ok):
            self.seen.append(msg.body.detail)
        msg.reply(self, p.Ok(detail=f"echo {getattr(msg.body, 'detail', '')}"))


class Probe(Actor):
    """Keeps what reaches its mailbox uncorrelated (an error answer to what it sent)."""

    name = "probe"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.received: list[p.Msg] = []

    async def handle(self, msg: Inbound) -> None:
        self.received.append(msg.body)


@pytest.fixture
def config(inproc_config):
    return override(inproc_config, topology={"mode": "inproc", "addresses": ADDRESSES},
                    supervisor={"ask_timeout_s": 0.5})


async def test_an_actor_of_the_same_process_is_answered_without_zeromq_and_still_from_outside(config, zmq_ctx):
    echo = Echo(config, zmq_context=zmq_ctx)
    async with anyio.create_task_group() as tg:
        await tg.start(echo.run)
        client = Endpoint(config, zmq_context=zmq_ctx, name="test")
        async with client.running():
            reply = await client.ask("echo", p.Ok(detail="hi"))
            assert reply == p.Ok(detail="echo hi")
            assert isinstance(client._links["echo"], LocalLink)
        # what is not an actor of this process (a CLI, a tool) still reaches the inbox over ZeroMQ
        dealer = zmq_ctx.socket(zmq.DEALER)
        dealer.connect("inproc://test-echo")
        codec = p.Codec()
        dealer.send(codec.encode(p.Envelope(body=p.Ok(detail="raw"), sender="raw")))
        await until(lambda: dealer.poll(0))
        assert codec.decode(dealer.recv()).body == p.Ok(detail="echo raw")
        dealer.close(linger=0)
        tg.cancel_scope.cancel()


async def test_a_full_mailbox_makes_messages_wait_in_order_and_none_is_lost(config, zmq_ctx):
    gate = anyio.Event()
    echo = Echo(config, zmq_context=zmq_ctx, gate=gate)
    echo._mail._max = 8  # a mailbox that fills at once
    async with anyio.create_task_group() as tg:
        await tg.start(echo.run)
        client = Endpoint(config, zmq_context=zmq_ctx, name="test")
        async with client.running():
            for index in range(500):
                client.tell("echo", p.Ok(detail=str(index)))
            link = client._links["echo"]
            assert len(link._backlog) > 400  # waiting in the link, not dropped
            gate.set()
            await until(lambda: len(echo.seen) >= 500)
            assert echo.seen == [str(index) for index in range(500)]
            assert link.dropped == 0
        tg.cancel_scope.cancel()


async def test_bytes_that_do_not_decode_are_answered_with_an_error_like_off_the_wire(config, zmq_ctx):
    echo, probe = Echo(config, zmq_context=zmq_ctx), Probe(config, zmq_context=zmq_ctx)
    async with anyio.create_task_group() as tg:
        await tg.start(echo.run)
        await tg.start(probe.run)
        probe._link("echo").send_nowait([b"\xc1 not msgpack"])
        await until(lambda: probe.received)
        [error] = probe.received
        assert isinstance(error, p.ErrorReply) and error.code == "decode:malformed"
        tg.cancel_scope.cancel()


async def test_a_stopped_actor_loses_what_is_sent_to_it_and_its_successor_is_found_again(config, zmq_ctx):
    client = Endpoint(config, zmq_context=zmq_ctx, name="test")
    async with client.running():
        async with anyio.create_task_group() as tg:
            await tg.start(Echo(config, zmq_context=zmq_ctx).run)
            assert await client.ask("echo", p.Ok(detail="1")) == p.Ok(detail="echo 1")
            tg.cancel_scope.cancel()
        link = client._links["echo"]
        client.tell("echo", p.Ok(detail="into the void"))  # no error for the sender: a crash loses mail
        assert link.dropped == 1
        with pytest.raises(AskTimeout):
            await client.ask("echo", p.Ok(detail="2"), timeout=0.2)
        async with anyio.create_task_group() as tg:
            await tg.start(Echo(config, zmq_context=zmq_ctx).run)  # restarted
            assert await client.ask("echo", p.Ok(detail="3")) == p.Ok(detail="echo 3")
            assert client._links["echo"] is link
            tg.cancel_scope.cancel()


def test_only_actors_that_share_a_process_have_a_local_address():
    grouped = Topology(TopologyConfig(mode="ipc", ipc_dir="/tmp/x", groups=[["session", "glasses"]]))
    assert grouped.local_address("session") == "inproc://porfiry-session"
    assert grouped.local_address("llm") is None  # alone in its process: reached over ipc only
    assert Topology(TopologyConfig(mode="inproc")).local_address("llm") == "inproc://porfiry-llm"
    assert Topology(TopologyConfig(mode="tcp", addresses={"llm": "tcp://10.0.0.2:7000"})).local_address("llm") is None
