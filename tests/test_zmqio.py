"""The ZeroMQ adapter under trio: no message lost to cancellation, no hang under load."""
import anyio
import pytest
import zmq

from harness import until
from transport.zmqio import AsyncSocket


@pytest.fixture
def ctx(zmq_ctx):
    return zmq_ctx


def _pair(ctx, name):
    router = ctx.socket(zmq.ROUTER)
    router.bind(f"inproc://{name}")
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.IDENTITY, b"dealer-1")
    dealer.connect(f"inproc://{name}")
    return router, dealer


async def test_cancelled_receive_loses_no_message(ctx):
    router, dealer = _pair(ctx, "cancel")
    async with AsyncSocket(router) as r, AsyncSocket(dealer) as d:
        for round_ in range(50):
            # A receive that is cancelled while waiting...
            with anyio.move_on_after(0.001):
                await r.recv()
            # ...must not swallow the next message.
            d.send_nowait([f"m{round_}".encode()])
            with anyio.fail_after(5):
                identity, payload = await r.recv()
            assert (identity, payload) == (b"dealer-1", f"m{round_}".encode())


async def test_cancelled_receive_racing_arrival_keeps_order(ctx):
    router, dealer = _pair(ctx, "race")
    async with AsyncSocket(router) as r, AsyncSocket(dealer) as d:
        got: list[bytes] = []
        for i in range(2000):
            d.send_nowait([str(i).encode()])
        while len(got) < 2000:
            # Cancel receives at arbitrary points while messages stream in.
            with anyio.move_on_after(0):
                got.append((await r.recv())[1])
            with anyio.fail_after(5):
                got.append((await r.recv())[1])
        assert got == [str(i).encode() for i in range(2000)]


async def test_100k_interleaved_both_directions_arrive_complete_in_order(ctx):
    n = 100_000
    router, dealer = _pair(ctx, "stress")
    async with AsyncSocket(router, recv_buffer=256) as r, AsyncSocket(dealer, recv_buffer=256) as d:
        from_dealer: list[int] = []
        from_router: list[int] = []

        async def dealer_sends():
            for i in range(n):
                await d.send([i.to_bytes(4, "big")])

        async def router_sends():
            for i in range(n):
                await r.send([b"dealer-1", i.to_bytes(4, "big")])

        async def router_receives():
            while len(from_dealer) < n:
                _, payload = await r.recv()
                from_dealer.append(int.from_bytes(payload, "big"))

        async def dealer_receives():
            while len(from_router) < n:
                (payload,) = await d.recv()
                from_router.append(int.from_bytes(payload, "big"))

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(router_receives)
                tg.start_soon(dealer_receives)
                tg.start_soon(dealer_sends)
                # The router's sends only route once the dealer has said hello.
                await until(lambda: from_dealer)
                tg.start_soon(router_sends)
        assert from_dealer == list(range(n))
        assert from_router == list(range(n))


async def test_send_to_departed_router_peer_is_dropped_not_fatal(ctx):
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.bind("inproc://mandatory")
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.IDENTITY, b"d")
    dealer.connect("inproc://mandatory")
    async with AsyncSocket(router) as r, AsyncSocket(dealer) as d:
        r.send_nowait([b"nobody", b"x"])
        d.send_nowait([b"ping"])
        with anyio.fail_after(5):
            assert await r.recv() == [b"d", b"ping"]
        r.send_nowait([b"d", b"pong"])
        with anyio.fail_after(5):
            assert await d.recv() == [b"pong"]
        assert r.dropped == 1
