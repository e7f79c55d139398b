"""``adapters.kube.client.decode``: the API server's JSON without field ownership, anywhere."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from berth.adapters.kube import client

_OWNERS = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


def _obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "managedFields": _OWNERS}, "spec": {"x": 1}}


def _metas(value: dict[str, Any]) -> list[dict[str, Any]]:
    if "items" in value:
        return [item["metadata"] for item in value["items"]]
    if "object" in value:
        return [value["object"]["metadata"]]
    return [value["metadata"]]


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(_obj("a"), id="an object"),
        pytest.param(
            {"kind": "List", "metadata": {}, "items": [_obj("a"), _obj("b")]}, id="a list"
        ),
        pytest.param({"type": "MODIFIED", "object": _obj("a")}, id="a watch event"),
    ],
)
def test_decode_drops_field_owners_and_keeps_the_rest(sent: dict[str, Any]) -> None:
    want = copy.deepcopy(sent)
    for meta in _metas(want):
        del meta["managedFields"]
    assert client.decode(orjson.dumps(sent)) == want


@pytest.mark.parametrize(
    "raw",
    [b"[1, 2]", b'"text"', b'{"metadata": "not an object"}', b'{"items": [1, {"metadata": 2}]}'],
)
def test_decode_leaves_json_without_objects_as_it_is(raw: bytes) -> None:
    assert client.decode(raw) == orjson.loads(raw)


def test_decode_raises_value_error_on_text_that_is_not_json() -> None:
    with pytest.raises(ValueError, match="line 1"):
        client.decode(b"404 page not found")  # a text error page
