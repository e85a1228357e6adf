"""The reflex probe (tools/reflex_probe.py over evals/reflex_probe.toml): the file loads, and the
tool sorts what recognise returns into right, wrong actions and misses. Its figures are measured,
not asserted."""
from tools.reflex_probe import load, main


def test_the_probe_loads_and_sorts_a_wrong_action_apart_from_a_miss(tmp_path, capsys):
    cases = load()
    assert len(cases) >= 300 and sum(case.expect == "none" for case in cases) >= 100
    assert main(["--show", "all"]) == 0 and "WRONG ACTIONS" in capsys.readouterr().out

    probe = tmp_path / "probe.toml"
    probe.write_text('made_up = [\n'
                     '  {say = "включи Сталкер", expect = "none"},\n'  # a play nobody should get
                     '  {say = "спасибо", expect = "timer_set", seconds = 60},\n'  # a request no reflex sees
                     '  {say = "засеки полчаса", expect = "timer_set", seconds = 1800, text = ""},\n'
                     ']\n', encoding="utf-8")
    assert main(["--file", str(probe), "--show", "all"]) == 0
    out = capsys.readouterr().out
    assert "right 1, wrong actions 1, wrong lookups 0, misses 1" in out
    assert "«включи Сталкер» → play(subject='сталкер')  expected none" in out
