"""topologies.switch.bmv2's Bmv2Client against a stand-in for p4-utils'
SimpleSwitchThriftAPI (no switch needed): its errors raise, its prints stay
quiet, counter_read comes back as (packets, bytes)."""

from __future__ import annotations

import functools
import sys
import types

import pytest

from topologies.switch.bmv2 import Bmv2Client, Bmv2Error, CounterValue, describe


# shaped like bm_runtime.standard.ttypes: an exception with a code, and the code's enum
class TableOperationErrorCode:
    _VALUES_TO_NAMES = {1: "TABLE_FULL", 2: "INVALID_HANDLE"}


class InvalidTableOperation(Exception):
    def __init__(self, code):
        super().__init__()
        self.code = code


InvalidTableOperation.__module__ = "fake_ttypes"
ttypes = types.ModuleType("fake_ttypes")
ttypes.TableOperationErrorCode = TableOperationErrorCode
ttypes.InvalidTableOperation = InvalidTableOperation


def handle_bad_input(f):
    """p4-utils' decorator: print the error, return None."""
    @functools.wraps(f)
    def handle(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except Exception as e:
            print("Invalid table operation", e)
    return handle


class FakeApi:
    @handle_bad_input
    def table_add(self, table, action, keys, params=(), prio=0):
        print("Adding entry to exact match table", table)
        if table == "full":
            raise InvalidTableOperation(1)
        return 7

    @handle_bad_input
    def counter_read(self, name, index):
        print(f"{name}[{index}]= (1400 bytes, 1 packets)")
        return 1400, 1

    @handle_bad_input
    def register_read(self, name, index=None):
        raise KeyError(name)


@pytest.fixture(autouse=True)
def fake_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "fake_ttypes", ttypes)


def test_refused_calls_raise_with_the_error_code_and_prints_stay_quiet(capsys):
    client = Bmv2Client(FakeApi(), "s1")
    assert client.table_add("forward", "ipv4_forward", ["10.0.0.1/32"], ["00:00:00:00:00:01", "1"]) == 7
    with pytest.raises(Bmv2Error, match=r"s1: table_add\('full', 'a', \[\]\): InvalidTableOperation TABLE_FULL"):
        client.table_add("full", "a", [])
    with pytest.raises(Bmv2Error, match="register_read.*KeyError"):
        client.register_read("nope", 0)
    assert capsys.readouterr().out == ""


def test_counter_read_is_packets_then_bytes():
    assert Bmv2Client(FakeApi()).counter_read("pkts", 0) == CounterValue(packets=1, bytes=1400)


def test_describe_names_unknown_codes_and_plain_errors():
    assert describe(InvalidTableOperation(2)) == "InvalidTableOperation INVALID_HANDLE"
    assert describe(InvalidTableOperation(9)) == "InvalidTableOperation code 9"
    assert describe(ValueError("bad")) == "ValueError: bad"


def test_connect_gives_up_with_one_line_when_nothing_listens():
    pytest.importorskip("p4utils.utils.sswitch_thrift_API", reason="p4-utils not installed")
    with pytest.raises(Bmv2Error, match="no Thrift server on port 1 within 0 s"):
        Bmv2Client.connect(1, "s1", timeout=0.2)
