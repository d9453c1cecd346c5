"""The MemFS study's layout: system kinds of the networks, the parameter space."""

from studies.memfs import layout as P


def test_system_kind_labels_stand_ins():
    assert P.system_kind({"name": "1GbE", "emulate": True, "rate_mbit": 1000}).startswith("stand-in:1GbE")
    assert P.system_kind({"name": "IPoIB", "emulate": False}) == "real"
