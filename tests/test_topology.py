"""Where inboxes live: one config gives every process the same map, process groups included."""
import pytest

from actors.topology import ACTORS, Topology, process_groups
from core.config import TopologyConfig


def test_without_groups_every_actor_is_its_own_process_over_ipc():
    topology = Topology(TopologyConfig(mode="ipc", ipc_dir="/tmp/x"), owner="session")
    assert process_groups(topology.config) == [(name,) for name in ACTORS]
    assert topology.address("glasses") == "ipc:///tmp/x/glasses.sock"
    assert topology.bind_addresses("session") == ["ipc:///tmp/x/session.sock"]


def test_a_group_talks_inproc_inside_and_stays_reachable_from_outside():
    config = TopologyConfig(mode="ipc", ipc_dir="/tmp/x", groups=[["session", "glasses"]])
    inside, outside = Topology(config, owner="glasses"), Topology(config, owner="supervisor")
    assert inside.address("session") == "inproc://porfiry-session"
    assert inside.address("llm") == "ipc:///tmp/x/llm.sock"
    assert outside.address("session") == "ipc:///tmp/x/session.sock"
    assert inside.bind_addresses("session") == ["ipc:///tmp/x/session.sock", "inproc://porfiry-session"]
    # start order: leaves first, a group where its earliest member would start
    assert process_groups(config) == [("skills",), ("toolsets",), ("llm",), ("session", "glasses")]


@pytest.mark.parametrize("groups, problem", [
    ([["session", "phone"]], "unknown actor 'phone'"),
    ([["session"], ["session", "llm"]], "'session' is in more than one group"),
])
def test_a_wrong_group_is_refused_with_what_is_wrong(groups, problem):
    with pytest.raises(ValueError, match=problem):
        Topology(TopologyConfig(mode="ipc", groups=groups))
