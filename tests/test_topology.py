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
    assert process_groups(config) == [("skills",), ("toolsets",), ("media",), ("llm",), ("session", "glasses")]


@pytest.mark.parametrize("groups, problem", [
    ([["session", "phone"]], "unknown actor 'phone'"),
    ([["session"], ["session", "llm"]], "'session' is in more than one group"),
])
def test_a_wrong_group_is_refused_with_what_is_wrong(groups, problem):
    with pytest.raises(ValueError, match=problem):
        Topology(TopologyConfig(mode="ipc", groups=groups))


def test_tcp_ports_are_given_per_actor_not_by_position():
    topology = Topology(TopologyConfig(mode="tcp", tcp_host="127.0.0.1", tcp_base_port=7700))
    assert topology.address("supervisor") == "tcp://127.0.0.1:7700"
    assert [topology.address(name) for name in ACTORS] == [
        "tcp://127.0.0.1:7701", "tcp://127.0.0.1:7702", "tcp://127.0.0.1:7704", "tcp://127.0.0.1:7703",
        "tcp://127.0.0.1:7705",
        "tcp://127.0.0.1:7706"]
