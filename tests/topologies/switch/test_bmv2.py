"""topologies.switch.bmv2's Bmv2Client against a stand-in for p4-utils'
SimpleSwitchThriftAPI (no switch needed): its errors raise, its prints stay
quiet, counter_read comes back as (packets, bytes), close() closes both
Thrift connections; simple_switch's command line and a free Thrift port."""

from __future__ import annotations

import functools
import socket
import sys
import types

import pytest

from topologies.switch.bmv2 import (
    Bmv2Client,
    Bmv2Error,
    CounterValue,
    describe,
    free_tcp_port,
    simple_switch_command,
    simple_switch_log_options,
)


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


class Transport:
    """Thrift's TBufferedTransport as far as closing goes."""

    def __init__(self):
        self.open = True

    def close(self):
        self.open = False


def thrift_client(transport: Transport):
    """A generated Thrift client: its protocol (_iprot) holds the transport."""
    return types.SimpleNamespace(_iprot=types.SimpleNamespace(trans=transport))


class FakeApi:
    def __init__(self):
        # as SimpleSwitchThriftAPI: the standard and multicast clients share
        # one connection, simple_switch's client has its own
        self.transports = [Transport(), Transport()]
        self.client = self.mc_client = thrift_client(self.transports[0])
        self.sswitch_client = thrift_client(self.transports[1])

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


def test_close_closes_both_thrift_connections_once_and_for_all():
    api = FakeApi()
    client = Bmv2Client(api, "s1")
    client.close()
    assert [t.open for t in api.transports] == [False, False]
    client.close()                                   # idempotent
    assert [t.open for t in api.transports] == [False, False]


def test_simple_switch_command_line():
    assert simple_switch_command(9091, {1: "sym1s1", 2: "sym1s2"}, "/b/symphony.json", "/run/x.ipc") == [
        "simple_switch", "--thrift-port", "9091", "--device-id", "0", "--notifications-addr", "ipc:///run/x.ipc",
        "--log-console", "--log-level", "warn",
        "-i", "1@sym1s1", "-i", "2@sym1s2", "/b/symphony.json", "--", "--priority-queues", "2"]


# what simple_switch would do per packet that the testbed never reads (docs/targets.md,
# "simple_switch's options"); --log-file is not here: it would be the same as the console
PER_PACKET = {"--nanolog", "--pcap", "--debugger", "--debugger-addr", "--dump-packet-data", "--packet-in",
              "--use-files", "--log-flush", "--log-file"}


@pytest.mark.parametrize("options", [None, simple_switch_log_options("warn"), simple_switch_log_options("error")])
def test_simple_switch_runs_with_a_log_level_and_nothing_per_packet(options):
    args = simple_switch_command(9091, {1: "a"}, "/b/s.json", "/run/x.ipc", options=options)
    flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    assert not flags & PER_PACKET
    level = args[args.index("--log-level") + 1]
    assert level in ("warn", "error")            # never simple_switch's default, trace
    assert args.count("--log-console") == 1


def test_free_tcp_port_takes_the_preferred_one_unless_taken():
    port = free_tcp_port()
    assert free_tcp_port(port) == port
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert free_tcp_port(port) not in (port, 0)
