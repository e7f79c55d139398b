from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.api import duration, quantity

GPU = "nvidia.com/gpu"
RESOURCES = ["cpu", "memory", GPU, "pods", "ephemeral-storage", "hugepages-2Mi", "example.com/x"]
MAX_UNITS = 2**63 - 1
K8S_QUANTITY = re.compile(quantity.PATTERN)


@pytest.mark.parametrize(
    ("resource", "value", "want"),
    [
        pytest.param("cpu", "500m", 500, id="cpu millis stay millis"),
        pytest.param("cpu", "1.5", 1500, id="fractional cpu becomes millis"),
        pytest.param("cpu", 2, 2000, id="an integer cpu from YAML"),
        pytest.param("cpu", 0.25, 250, id="a float cpu from YAML"),
        pytest.param("cpu", ".5", 500, id="a leading dot"),
        pytest.param("cpu", "+4", 4000, id="an explicit plus sign"),
        pytest.param("cpu", "1n", 1, id="a nano-cpu rounds up to one milli"),
        pytest.param("cpu", "1e-3", 1, id="a negative exponent"),
        pytest.param("cpu", "1k", 1_000_000, id="a thousand cpus"),
        pytest.param("memory", "16Gi", 17179869184, id="binary suffix"),
        pytest.param("memory", "1.5Gi", 1610612736, id="fractional binary suffix"),
        pytest.param("memory", "1Ki", 1024, id="kibibyte"),
        pytest.param("memory", "1M", 1_000_000, id="decimal megabyte"),
        pytest.param("memory", "1.5", 2, id="fractional bytes round up"),
        pytest.param("ephemeral-storage", "10G", 10**10, id="storage in bytes"),
        pytest.param("hugepages-2Mi", "1Gi", 2**30, id="hugepages in bytes"),
        pytest.param("pods", "1e3", 1000, id="exponent notation"),
        pytest.param("pods", "1E3", 1000, id="capital exponent"),
        pytest.param(GPU, "0.5", 1, id="half a gpu rounds up"),
        pytest.param(GPU, "1.1", 2, id="a little over one gpu rounds up"),
        pytest.param(GPU, "100m", 1, id="a milli-gpu rounds up"),
        pytest.param(GPU, "8", 8, id="gpus are counts"),
        pytest.param(GPU, 0, 0, id="zero"),
        pytest.param(GPU, "-0", 0, id="negative zero is zero"),
        pytest.param("pods", "1.0000000000000000000000000000000001", 2, id="no early rounding"),
        pytest.param("memory", "7Ei", 7 * 2**60, id="the largest binary suffix that fits"),
    ],
)
def test_parse(resource: str, value: object, want: int) -> None:
    assert quantity.parse(resource, value) == want


@pytest.mark.parametrize(
    ("resource", "value", "want_error"),
    [
        pytest.param("memory", "1Gb", "unknown suffix 'Gb'", id="a suffix Kubernetes lacks"),
        pytest.param("cpu", "1e", "unknown suffix 'e'", id="an exponent without digits"),
        pytest.param("cpu", "1eX", "unknown suffix 'eX'", id="an exponent of letters"),
        pytest.param("cpu", "abc", "is not a quantity", id="letters only"),
        pytest.param("cpu", "", "is not a quantity", id="empty"),
        pytest.param("cpu", "1.2.3", "is not a quantity", id="two dots"),
        pytest.param("cpu", "1 Gi", "is not a quantity", id="a space before the suffix"),
        pytest.param(GPU, "-1", "is negative", id="negative"),
        pytest.param(GPU, True, "is not a quantity", id="a boolean"),
        pytest.param(GPU, None, "is not a quantity", id="null"),
        pytest.param(GPU, [1], "is not a quantity", id="a list"),
        pytest.param(GPU, float("inf"), "not a finite quantity", id="infinity"),
        pytest.param(GPU, float("nan"), "not a finite quantity", id="not a number"),
        pytest.param("cpu", "1e31", "exponent outside", id="a huge exponent"),
        pytest.param("cpu", "1e99999999999", "exponent outside", id="an absurd exponent"),
        pytest.param("memory", "8Ei", "too large", id="beyond int64 bytes"),
        pytest.param("cpu", 2**63, "too large", id="beyond int64 millis"),
    ],
)
def test_parse_rejects(resource: str, value: object, want_error: str) -> None:
    with pytest.raises(quantity.QuantityError, match=re.escape(want_error)):
        quantity.parse(resource, value)


@pytest.mark.parametrize(
    ("resource", "amount", "want"),
    [
        pytest.param("cpu", 500, "500m", id="millis"),
        pytest.param("cpu", 1500, "1500m", id="fractional cpus print as millis"),
        pytest.param("cpu", 2000, "2", id="whole cpus"),
        pytest.param("cpu", 1_000_000, "1k", id="a thousand cpus"),
        pytest.param("cpu", 0, "0", id="zero cpu"),
        pytest.param("memory", 17179869184, "16Gi", id="binary bytes"),
        pytest.param("memory", 1000, "1k", id="decimal bytes"),
        pytest.param("memory", 1024000, "1000Ki", id="binary before decimal"),
        pytest.param("memory", 1536, "1536", id="bytes with no whole suffix"),
        pytest.param("pods", 1000, "1k", id="counts use decimal suffixes"),
        pytest.param("pods", 1024, "1024", id="counts never use binary suffixes"),
        pytest.param(GPU, 8, "8", id="gpus"),
        pytest.param(GPU, -3, "-3", id="a negative difference"),
    ],
)
def test_format(resource: str, amount: int, want: str) -> None:
    assert quantity.format(resource, amount) == want


def test_parse_list_keeps_each_resource_in_its_own_unit() -> None:
    got = quantity.parse_list({"cpu": "1.5", "memory": "1Gi", GPU: 2})
    assert got == {"cpu": 1500, "memory": 2**30, GPU: 2}
    assert quantity.format_list(got) == {"cpu": "1500m", "memory": "1Gi", GPU: "2"}


def test_parse_list_names_the_bad_resource() -> None:
    with pytest.raises(quantity.QuantityError, match=r"^nvidia\.com/gpu: 'two' is not"):
        quantity.parse_list({"cpu": 1, GPU: "two"})


resources = st.sampled_from(RESOURCES)
amounts = st.integers(min_value=0, max_value=MAX_UNITS)
suffixes = st.sampled_from(["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "e2", "E-2"])


@st.composite
def quantity_texts(draw: st.DrawFn) -> str:
    """Strings in Kubernetes' quantity notation, small enough to fit every resource's range."""
    whole = draw(st.integers(min_value=0, max_value=1000))
    fraction = draw(st.one_of(st.just(""), st.integers(min_value=0, max_value=999).map(str)))
    number = f"{whole}.{fraction}" if fraction else str(whole)
    return number + draw(suffixes)


@given(resources, amounts)
def test_format_then_parse_gives_back_the_amount(resource: str, amount: int) -> None:
    assert quantity.parse(resource, quantity.format(resource, amount)) == amount


@given(resources, amounts)
def test_format_prints_kubernetes_notation(resource: str, amount: int) -> None:
    assert K8S_QUANTITY.match(quantity.format(resource, amount))


@given(resources, quantity_texts())
def test_format_is_canonical(resource: str, text: str) -> None:
    canonical = quantity.format(resource, quantity.parse(resource, text))
    assert quantity.format(resource, quantity.parse(resource, canonical)) == canonical


@given(resources, quantity_texts())
def test_parse_rounds_up_to_the_next_unit(resource: str, text: str) -> None:
    exact = quantity.parse_decimal(text) * (1000 if resource == "cpu" else 1)
    got = quantity.parse(resource, text)
    assert got - 1 < exact <= got


@given(resources, st.integers(min_value=0, max_value=10**9))
def test_integers_and_their_strings_parse_alike(resource: str, count: int) -> None:
    assert quantity.parse(resource, count) == quantity.parse(resource, str(count))


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("90s", 90.0, id="seconds"),
        pytest.param("5m", 300.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="hours and minutes"),
        pytest.param("250ms", 0.25, id="milliseconds"),
        pytest.param("1.5h", 5400.0, id="fractional hours"),
        pytest.param("2us", 2e-6, id="microseconds"),
        pytest.param(5, 5.0, id="a plain number of seconds"),
        pytest.param("7", 7.0, id="a number as a string"),
    ],
)
def test_duration_parse(value: object, want: float) -> None:
    assert duration.parse(value) == pytest.approx(want)


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        pytest.param(0, "0s", id="zero"),
        pytest.param(0.25, "250ms", id="under a second in milliseconds, like Go"),
        pytest.param(90, "1m30s", id="minutes and seconds"),
        pytest.param(5400, "1h30m", id="zero parts are left out"),
        pytest.param(1.5, "1.5s", id="fractional seconds"),
    ],
)
def test_duration_format(seconds: float, want: str) -> None:
    assert duration.format(seconds) == want


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("soon", id="a word"),
        pytest.param("5d", id="days are not a Go unit"),
        pytest.param("-5m", id="negative"),
        pytest.param(-1, id="a negative number"),
        pytest.param("nan", id="not a number"),
        pytest.param(True, id="a boolean"),
        pytest.param("", id="empty"),
        pytest.param("9" * 400 + "h", id="digits past a float, with a unit"),
        pytest.param("2562048h", id="past Go's longest duration (about 292 years)"),
        pytest.param(1e10, id="a number of seconds past Go's longest duration"),
    ],
)
def test_duration_rejects(value: Any) -> None:
    with pytest.raises(duration.DurationError):
        duration.parse(value)


def test_the_longest_duration_is_gos() -> None:
    """Go's ``time.Duration`` holds at most 2^63 - 1 ns; Kubernetes and Kueue accept no more."""
    assert duration.parse("2562047h47m16s") == 9_223_372_036
    with pytest.raises(duration.DurationError, match="longer than Go's longest duration"):
        duration.parse("2562047h47m17s")


@given(st.integers(min_value=0, max_value=10**12))
def test_durations_round_trip_to_the_millisecond(millis: int) -> None:
    text = duration.format(millis / 1000)
    assert round(duration.parse(text) * 1000) == millis
    assert duration.format(duration.parse(text)) == text


def test_the_crd_pattern_is_kubernetes_quantity_notation() -> None:
    for good in ["4", "500m", "16Gi", "1e3", "+1.5", ".5", "1E-2"]:
        assert K8S_QUANTITY.match(good), good
    for bad in ["1Gb", "1e", "abc", "1 Gi", ""]:
        assert not K8S_QUANTITY.match(bad), bad
