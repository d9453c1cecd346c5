"""tools/mcbench/parser.py on mcbench's JSON lines (the binary's own test runs it for real:
systems/memfs/tests/test_memfs_basic.py::test_mcbench_prints_json)."""

import pytest

from tools.common import ParseError
from tools.mcbench.parser import parse_mcbench


def test_mcbench_json_lines():
    mc = parse_mcbench('{"op":"set","value_size":524288,"threads":2,"servers":1,"distribution":"modula",'
                         '"ops":10,"errors":0,"bytes":5242880,"seconds":1.0,"bytes_per_s":5242880.0,"ops_per_s":10}\n'
                         '{"op":"get","value_size":524288,"threads":2,"servers":1,"distribution":"modula",'
                         '"ops":12,"errors":0,"bytes":6291456,"seconds":1.0,"bytes_per_s":6291456.0,"ops_per_s":12}\n')
    assert mc["set"]["bytes_per_s"] == 5242880.0 and mc["get"]["ops"] == 12
    with pytest.raises(ParseError):
        parse_mcbench("mcbench: cannot connect\n")
