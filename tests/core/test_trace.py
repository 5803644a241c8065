"""W3C trace context: which header values pass from an input to its outputs."""

from __future__ import annotations

import pytest

from streams.core.trace import (
    MAX_TRACE_HEADER_BYTES,
    trace_from_list,
    trace_of,
    trace_to_list,
    valid_traceparent,
    valid_tracestate,
)

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "value",
    [TP, "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later-fields", TP[:-2] + "00"],
)
def test_a_w3c_traceparent_is_valid(value: str) -> None:
    assert valid_traceparent(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        TP.upper(),  # lowercase hex only
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",  # all-zero parent id
        "ff" + TP[2:],  # version ff is forbidden
        TP + "-extra",  # version 00 has exactly four fields
        TP[:-1],
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # 31 hex digits
        " " + TP,
    ],
)
def test_a_broken_traceparent_is_invalid(value: str) -> None:
    assert not valid_traceparent(value)


def test_tracestate_members_follow_the_w3c_list_rules() -> None:
    assert valid_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    assert valid_tracestate("tenant@vendor=x, , other=y")  # empty members and spaces allowed
    assert not valid_tracestate("Rojo=1")  # keys are lowercase
    assert not valid_tracestate("rojo")  # no value
    assert not valid_tracestate("a=b=c")  # '=' is not allowed in a value
    assert not valid_tracestate(",".join(f"k{i}=v" for i in range(33)))  # 32 members at most


def test_only_a_valid_traceparent_and_its_tracestate_pass() -> None:
    headers = [("traceparent", TP.encode()), ("tracestate", b"a=1"), ("x-user", b"secret")]
    assert trace_of(headers) == (("traceparent", TP.encode()), ("tracestate", b"a=1"))
    assert trace_of({"TraceParent": TP.encode()}) == (("traceparent", TP.encode()),)


def test_an_invalid_value_is_dropped_never_an_error() -> None:
    assert trace_of([("traceparent", b"nonsense"), ("tracestate", b"a=1")]) == ()
    assert trace_of([("tracestate", b"a=1")]) == ()  # no tracestate without a traceparent
    assert trace_of([("traceparent", TP.encode()), ("tracestate", b"BAD")]) == (
        ("traceparent", TP.encode()),
    )
    assert trace_of([("traceparent", b"\xff\xfe")]) == ()
    assert trace_of([("traceparent", None)]) == ()
    assert trace_of(None) == ()
    # a header given twice is ambiguous
    assert trace_of([("traceparent", TP.encode()), ("traceparent", TP.encode())]) == ()


def test_a_header_over_512_bytes_is_dropped() -> None:
    long_state = ",".join(f"k{i}=" + "v" * 30 for i in range(17))
    assert len(long_state) > MAX_TRACE_HEADER_BYTES and valid_tracestate(long_state[:500])
    trace = trace_of([("traceparent", TP.encode()), ("tracestate", long_state.encode())])
    assert trace == (("traceparent", TP.encode()),)


def test_a_trace_reads_back_from_stored_state() -> None:
    trace = trace_of([("traceparent", TP.encode()), ("tracestate", b"a=1")])
    assert trace_from_list(trace_to_list(trace)) == trace
    assert trace_from_list("junk") == () and trace_from_list([["traceparent", "bad"]]) == ()
