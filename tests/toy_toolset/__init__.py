"""A toy executor toolset: everything a toolset author writes (one folder; one config line,
`toolsets.extra = ["toy_toolset:TOOLSET"]`, or one line in toolsets.REGISTRY), settings included
(`[toolsets.toy]`)."""
import anyio
import msgspec

from core.toolsets import ExecutorToolset, ToolResult
from protocol import ArgSpec, ToolSpec, ToolsetSpec

SPEC = ToolsetSpec(name="toy", summary="a toy: echo, wait, fail, long texts", tools=[
    ToolSpec(name="toy_echo", summary="say a text back", args=[ArgSpec(name="text")], read_only=True),
    ToolSpec(name="toy_wait", summary="wait some seconds, then say so", args=[ArgSpec(name="seconds")]),
    ToolSpec(name="toy_nap", summary="the same, idempotent", args=[ArgSpec(name="seconds")], idempotent=True),
    ToolSpec(name="toy_fail", summary="always fails"),
    ToolSpec(name="toy_long", summary="a long numbered text", args=[ArgSpec(name="lines")], read_only=True),
    ToolSpec(name="toy_later", summary="a long job", args=[ArgSpec(name="seconds")], long_running=True),
])


class ToySettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    greeting: str = "echo"  # what toy_echo says before the text


class Toy:
    def __init__(self, host, settings: ToySettings):
        self.host = host
        self.settings = settings
        self.calls: list[tuple[str, str, dict]] = []
        self.cancelled: list[str] = []

    async def start(self) -> None:
        pass

    async def call(self, tool, args, session):
        self.calls.append((session, tool, dict(args)))
        if tool == "toy_echo":
            return ToolResult(True, f"{self.settings.greeting}: {args['text']}")
        if tool in ("toy_wait", "toy_nap", "toy_later"):
            try:
                await anyio.sleep(float(args["seconds"]))
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(session)
                raise
            return ToolResult(True, f"waited {args['seconds']} s")
        if tool == "toy_fail":
            raise RuntimeError("the toy broke")
        return ToolResult(True, "\n".join(f"line {n:04d}" for n in range(1, int(args["lines"]) + 1)))


INSTANCES: list[Toy] = []


def _executor(host, settings: ToySettings = ToySettings()):
    INSTANCES.append(Toy(host, settings))
    return INSTANCES[-1]


TOOLSET = ExecutorToolset(spec=SPEC, factory=_executor, settings=ToySettings)
