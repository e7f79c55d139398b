"""An in-memory Kubernetes API server behind ``Kube``'s two methods, for the operator's tasks.

``FakeKube`` answers ``request(method, path, ...)`` and ``list_items(path)`` as
``berth.adapters.kube.client.Kube`` does, from a dict of objects keyed by REST path, and raises
the same ``berth.adapters.kube.errors`` classes with kube-apiserver's messages. It serves the kinds
the operator reads and writes: Pods, Events and Namespaces (core ``v1``), ``batch/v1`` Jobs,
``coordination.k8s.io/v1`` Leases, ``scheduling.k8s.io/v1`` PriorityClasses and every Berth CRD
(plural, scope and status subresource taken from ``berth.api.crd`` and ``berth.api.kinds``).

What it reproduces of kube-apiserver (generic registry ``Store`` and the kinds' strategies):

- POST creates (409 AlreadyExists; ``metadata.generateName``; 500 if ``resourceVersion`` is set),
  with server-set ``uid`` (from a counter), ``creationTimestamp`` (the injected clock, RFC 3339
  whole seconds with ``Z``), ``resourceVersion`` and ``generation``; a create drops ``status``
  for kinds with a status subresource (Pods start ``Pending``, Namespaces ``Active``, Jobs ``{}``).
- GET of one object, or of a collection (one namespace or all) with ``items`` and the list's
  ``metadata.resourceVersion``, filtered by an equality-based ``labelSelector`` (``k=v,k2=v2``,
  what the job controller sends). Items of built-in kinds carry no apiVersion/kind, as in
  kube-apiserver's typed lists.
- PUT and merge PATCH (RFC 7386, ``application/merge-patch+json``) under optimistic concurrency:
  a ``metadata.resourceVersion`` in the body that is not the stored one is 409 Conflict; none at
  all takes the stored one, except for CRDs, whose strategy forbids unconditional updates (422).
- ``/status`` writes change only ``status``; main-resource writes never change ``status`` of kinds
  with a status subresource, nor the server-owned metadata. ``generation`` is bumped when anything
  but metadata (and status, where it is a subresource) changes, and when a deletion is marked.
- One global ``resourceVersion`` counter, bumped on every change and never on a no-op write.
- DELETE with ``preconditions`` (uid, resourceVersion: 409). An object with finalizers is only
  marked (``deletionTimestamp``, ``deletionGracePeriodSeconds: 0``); no finalizer can be added to
  it any more (422); the update that empties its finalizers deletes it, and the response and the
  DELETED event carry its last stored body at the deletion's resourceVersion.
- A watch feed: each change appends ``WatchEvent(type, kind, body)`` to ``feed`` and is handed to
  every listener, each with its own copy. Request bodies go through JSON as over the wire, and
  nothing returned or delivered shares the store's dicts.
- Every request first yields to the event loop once, as a real round trip suspends its caller.

What it does not: admission (no webhooks, no NamespaceLifecycle: objects may be created in a
namespace that does not exist), defaulting, schema validation, managedFields, JSON patch,
strategic merge patch (but a Pod's, as far as ``strategic_merge_patch`` goes) and apply (415),
watch requests and bookmarks (use ``feed``), pagination (a list returns every item at once, no
``continue``), other label selectors and any field selector (400), graceful deletion of Pods
(deleted at once), the Namespace lifecycle (a deleted Namespace's contents stay),
the garbage collector (``propagationPolicy`` Background is accepted and nothing else is cascaded;
Foreground and Orphan raise ``NotImplementedError``).

``fail`` makes the next requests matching a method and a path prefix raise a chosen error, before
or after the change lands. ``put`` seeds an object as if created (keeping its status), ``objects``
reads them back.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime as dt
import json
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from berth.adapters.kube import errors
from berth.api import base, crd, kinds
from berth.jobs import kubeflow, ray, trainjob
from berth.jobs.framework import merge

Body = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters kube-apiserver draws a ``generateName`` suffix from (five of them)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    """How the fake serves one kind (what its REST storage strategy decides)."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    status: bool
    """The kind has a status subresource."""
    generation: bool = False
    """The server sets ``metadata.generation``."""
    unconditional_update: bool = True
    """An update without ``resourceVersion`` is allowed (not for CRDs)."""
    initial_status: Body | None = None
    """``status`` after a create, where the kind has a status subresource (None: no status)."""

    @property
    def api_version(self) -> str:
        """``group/version``, or the version alone for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``plural.group``, as kube-apiserver names the resource in its messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def custom(self) -> bool:
        """Served from a CustomResourceDefinition."""
        return self.group == base.GROUP


RESOURCES: tuple[Resource, ...] = (
    Resource("Pod", "", "v1", "pods", True, True, initial_status={"phase": "Pending"}),
    Resource("Event", "", "v1", "events", True, False),
    Resource("Node", "", "v1", "nodes", False, True),
    Resource("Namespace", "", "v1", "namespaces", False, True, initial_status={"phase": "Active"}),
    Resource("Job", "batch", "v1", "jobs", True, True, generation=True, initial_status={}),
    Resource(
        "JobSet",
        "jobset.x-k8s.io",
        "v1alpha2",
        "jobsets",
        True,
        True,
        generation=True,
        initial_status={},
    ),
    *(
        Resource(
            k.kind, "kubeflow.org", "v1", k.plural, True, True, generation=True, initial_status={}
        )
        for k in kubeflow.KINDS
    ),
    *(
        Resource(k.kind, ray.GROUP, "v1", k.plural, True, True, generation=True, initial_status={})
        for k in (ray.RAYJOB, ray.RAYCLUSTER)
    ),
    Resource(
        trainjob.KIND,
        trainjob.GROUP,
        "v1alpha1",
        trainjob.PLURAL,
        True,
        True,
        generation=True,
        initial_status={},
    ),
    *(
        Resource(
            kind, trainjob.GROUP, "v1alpha1", plural, kind == trainjob.NAMESPACED_RUNTIME, False
        )
        for kind, plural in trainjob.RUNTIME_PLURALS.items()
    ),
    Resource("Lease", "coordination.k8s.io", "v1", "leases", True, False),
    Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False, False),
    *(
        Resource(
            kind,
            base.GROUP,
            base.VERSION,
            crd.KIND_INFO[kind].plural,
            kinds.BERTH_KINDS[kind].NAMESPACED,
            "status" in kinds.BERTH_KINDS[kind].model_fields,
            generation=True,
            unconditional_update=False,
        )
        for kind in kinds.CRD_KINDS
    ),
)
_BY_KIND = {r.kind: r for r in RESOURCES}
_BY_PLURAL = {(r.api_version, r.plural): r for r in RESOURCES}
_SERVER_OWNED = frozenset(
    [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
        "namespace",
        "name",
    ]
)
"""Metadata a main-resource update cannot change (the body's values are replaced by the stored)."""
Key = tuple[str, str, str]
"""(kind, namespace, name); the namespace is empty for cluster-scoped kinds."""


class WatchEvent(NamedTuple):
    """One change, as a watch would deliver it."""

    type: str
    """ADDED, MODIFIED or DELETED."""
    kind: str
    body: Body


@dataclasses.dataclass(slots=True)
class _Fault:
    method: str
    prefix: str
    error: type[errors.KubeError]
    remaining: int
    landed: bool


@dataclasses.dataclass(frozen=True, slots=True)
class _Target:
    resource: Resource
    namespace: str
    name: str
    subresource: str


def timestamp(now: float) -> str:
    """RFC 3339 in whole seconds (truncated) with ``Z``, as ``metav1.Time`` is written."""
    return dt.datetime.fromtimestamp(int(now), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


merge_patch = merge.merge_patch
"""RFC 7386, as the API server applies a merge patch (the operator's own reading of it)."""

STRATEGIC_PATCH = "application/strategic-merge-patch+json"
_MERGE_KEYS = {"schedulingGates": "name"}
"""The Pod lists a strategic merge patch merges by key, of those the operator patches."""


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A Pod strategic merge patch, as far as the operator sends one (a pod group's member)."""
    return merge.strategic_merge_patch(target, patch, _MERGE_KEYS, drop_empty_lists=True)


class FakeKube:
    """The API server's objects in memory, reached through ``request`` and ``list_items``."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.store: dict[Key, Body] = {}
        self.resource_version = 0
        """The last resourceVersion handed out (etcd's revision)."""
        self.feed: list[WatchEvent] = []
        self.calls: list[tuple[str, str]] = []
        """Every request, as (method, path), faulty ones included."""
        self._listeners: list[Callable[[WatchEvent], None]] = []
        self._faults: list[_Fault] = []
        self._uids = 0
        self._names = 0

    # Test hooks ----------------------------------------------------------------------------------

    def listen(self, listener: Callable[[WatchEvent], None]) -> None:
        """Hand every later change to ``listener``, in order, as it happens."""
        self._listeners.append(listener)

    def fail(
        self,
        method: str,
        prefix: str,
        error: type[errors.KubeError] = errors.TransientError,
        *,
        times: int = 1,
        landed: bool = False,
    ) -> None:
        """Make the next ``times`` requests of ``method`` (``*``: any) under ``prefix`` fail.

        They raise ``error``. With ``landed`` the change is made first and only the answer is
        lost (a timeout after the server wrote it).
        """
        self._faults.append(_Fault(method.upper(), prefix, error, times, landed))

    def put(self, body: Body) -> Body:
        """Store ``body`` as if created, status included; fill what the server sets; return it."""
        resource = self._kind(body)
        obj = _json(body)
        meta = obj.setdefault("metadata", {})
        namespace = meta["namespace"] if resource.namespaced else ""
        key = (resource.kind, namespace, meta["name"])
        old = self.store.get(key)
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        meta.setdefault("uid", self._uid())
        meta.setdefault("creationTimestamp", timestamp(self.clock()))
        if resource.generation:
            meta.setdefault("generation", 1)
        return self._write(key, obj, "ADDED" if old is None else "MODIFIED")

    def objects(self, kind: str) -> list[Body]:
        """Copies of the stored objects of ``kind``, by namespace and name."""
        return [copy.deepcopy(b) for k, b in sorted(self.store.items()) if k[0] == kind]

    # The port ------------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Body:
        """Serve one request as kube-apiserver would; raise what ``Kube.request`` raises."""
        await asyncio.sleep(0)
        method = method.upper()
        self.calls.append((method, path))
        fault = next(
            (
                f
                for f in self._faults
                if f.remaining > 0 and f.method in {"*", method} and path.startswith(f.prefix)
            ),
            None,
        )
        if fault is not None:
            fault.remaining -= 1
            self._faults = [f for f in self._faults if f.remaining > 0]
            if fault.landed:
                self._serve(method, path, _json(body), content_type, query or {})
            status = _FAULT_STATUS.get(fault.error, 0)
            raise fault.error(f"{status} injected fault: {method} {path}", status or None)
        return self._serve(method, path, _json(body), content_type, query or {})

    async def list_items(self, path: str) -> tuple[list[Body], str]:
        """List every object under ``path``; return the items and the list's resourceVersion."""
        page = await self.request("GET", path, query={"limit": "500"})
        return page["items"], page["metadata"]["resourceVersion"]

    # The server ----------------------------------------------------------------------------------

    def _serve(
        self, method: str, path: str, body: Any, content_type: str, query: dict[str, str]
    ) -> Body:
        target = _parse(path)
        if not target.name:
            if method == "GET":
                return self._list(target, query)
            if method == "POST" and (target.namespace or not target.resource.namespaced):
                return self._create(target, body)
            raise _error(405, f"the server does not allow this method on the resource: {method}")
        if method == "GET":
            return copy.deepcopy(self._get(target))
        if method == "PUT":
            return self._update(target, body, patch=False)
        if method == "PATCH":
            kind_of = content_type.split(";", maxsplit=1)[0].strip()
            strategic = kind_of == STRATEGIC_PATCH and target.resource.kind == "Pod"
            if kind_of != MERGE_PATCH and not strategic:
                raise _error(415, f"the fake serves merge patches only, not {content_type}")
            if not isinstance(body, dict):
                raise _error(400, "a merge patch must be a JSON object")
            return self._update(target, body, patch=True, strategic=strategic)
        if method == "DELETE" and not target.subresource:
            return self._delete(target, body or {})
        raise _error(405, f"the server does not allow this method on the resource: {method}")

    def _list(self, target: _Target, query: dict[str, str]) -> Body:
        if query.get("fieldSelector"):
            raise _error(400, "the fake serves no field selectors")
        wanted = _label_selector(query.get("labelSelector", ""))
        items = []
        for (kind, namespace, _name), obj in sorted(self.store.items()):
            labels = obj["metadata"].get("labels") or {}
            if kind != target.resource.kind or target.namespace not in {"", namespace}:
                continue
            if any(labels.get(k) != v for k, v in wanted.items()):
                continue
            item = copy.deepcopy(obj)
            if not target.resource.custom:
                # Typed lists of built-in kinds carry the kind once, not on each item.
                item.pop("apiVersion", None)
                item.pop("kind", None)
            items.append(item)
        return {
            "apiVersion": target.resource.api_version,
            "kind": f"{target.resource.kind}List",
            "metadata": {"resourceVersion": str(self.resource_version)},
            "items": items,
        }

    def _get(self, target: _Target) -> Body:
        obj = self.store.get(_key(target))
        if obj is None:
            raise _error(404, f'{target.resource.qualified} "{target.name}" not found')
        return obj

    def _create(self, target: _Target, body: Any) -> Body:
        resource = target.resource
        if not isinstance(body, dict):
            raise _error(400, "the body of a create must be a JSON object")
        meta = body.setdefault("metadata", {})
        if meta.get("resourceVersion"):
            raise _error(500, "resourceVersion should not be set on objects to be created")
        key = _key(dataclasses.replace(target, name=self._name(target, meta)))
        if key in self.store:
            raise _error(409, f'{resource.qualified} "{key[2]}" already exists')
        body["apiVersion"], body["kind"] = resource.api_version, resource.kind
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        meta["uid"] = self._uid()
        meta["creationTimestamp"] = timestamp(self.clock())
        if resource.generation:
            meta["generation"] = 1
        if resource.status:
            body.pop("status", None)
            if resource.initial_status is not None:
                body["status"] = copy.deepcopy(resource.initial_status)
        return self._write(key, body, "ADDED")

    def _name(self, target: _Target, meta: Body) -> str:
        """Check the namespace of a new object and name it (from ``generateName`` if need be)."""
        if target.resource.namespaced and (
            meta.setdefault("namespace", target.namespace) != target.namespace
        ):
            raise _error(
                400,
                "the namespace of the provided object does not match the namespace sent on the "
                "request",
            )
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + self._suffix()
        if not meta.get("name"):
            raise _error(422, f"{target.resource.kind} is invalid: metadata.name: Required value")
        return str(meta["name"])

    def _update(self, target: _Target, body: Any, *, patch: bool, strategic: bool = False) -> Body:
        resource = target.resource
        current = self._get(target)
        if strategic:
            body = strategic_merge_patch(current, body)
        elif patch:
            body = merge_patch(current, body)
        if not isinstance(body, dict):
            raise _error(400, "the body of an update must be a JSON object")
        _check_update(target, current["metadata"], body.get("metadata") or {}, patch=patch)
        if target.subresource == "status":
            # The status strategy: everything but status is the stored object's.
            new = copy.deepcopy(current)
            new.pop("status", None)
            if "status" in body:
                new["status"] = body["status"]
        else:
            new = self._main_write(resource, current, body)
        if new == current:
            return copy.deepcopy(current)  # a no-op: etcd is not written, nothing is bumped
        if current["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._remove(_key(target))
        return self._write(_key(target), new, "MODIFIED")

    def _main_write(self, resource: Resource, current: Body, body: Body) -> Body:
        """What a write of the main resource stores: never its status, nor server-owned metadata."""
        old_meta = current["metadata"]
        new = {k: v for k, v in body.items() if k not in {"metadata", "status"}}
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        new["metadata"] = self._update_meta(resource, old_meta, body.get("metadata") or {})
        source = current if resource.status else body
        if "status" in source:
            new["status"] = copy.deepcopy(source["status"])
        if resource.generation and _spec_of(resource, new) != _spec_of(resource, current):
            new["metadata"]["generation"] = old_meta.get("generation", 0) + 1
        return new

    def _update_meta(self, resource: Resource, old: Body, given: Body) -> Body:
        """The metadata an update stores: the client's, with the server-owned fields kept."""
        out = dict(given)
        for field in _SERVER_OWNED:
            out.pop(field, None)
            if field in old:
                out[field] = old[field]
        if old.get("deletionTimestamp"):
            added = set(out.get("finalizers") or []) - set(old.get("finalizers") or [])
            if added:
                raise _error(
                    422,
                    f'{resource.kind} "{old["name"]}" is invalid: metadata.finalizers: Forbidden: '
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {sorted(added)}",
                )
        return out

    def _delete(self, target: _Target, options: Body) -> Body:
        current = self._get(target)
        meta = current["metadata"]
        policy = options.get("propagationPolicy") or "Background"
        if policy != "Background":
            raise NotImplementedError(f"propagationPolicy {policy}: the fake has no collector")
        pre = options.get("preconditions") or {}
        for field, ours in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            if pre.get(field) and pre[field] != meta[field]:
                raise _error(409, _precondition(ours, pre[field], meta[field]))
        if not meta.get("finalizers"):
            return self._remove(_key(target))
        if meta.get("deletionTimestamp"):
            return copy.deepcopy(current)  # already being deleted: nothing changes
        marked = copy.deepcopy(current)
        if target.resource.generation:
            marked["metadata"]["generation"] = meta.get("generation", 0) + 1
        marked["metadata"]["deletionTimestamp"] = timestamp(self.clock())
        marked["metadata"]["deletionGracePeriodSeconds"] = 0
        return self._write(_key(target), marked, "MODIFIED")

    # Storage -------------------------------------------------------------------------------------

    def _write(self, key: Key, obj: Body, event: str) -> Body:
        self.resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        self.store[key] = obj
        self._emit(event, key[0], obj)
        return copy.deepcopy(obj)

    def _remove(self, key: Key) -> Body:
        """Delete an object; the answer and the event carry its last body at a new version."""
        obj = self.store.pop(key)
        self.resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        self._emit("DELETED", key[0], obj)
        return copy.deepcopy(obj)

    def _emit(self, event: str, kind: str, obj: Body) -> None:
        self.feed.append(WatchEvent(event, kind, copy.deepcopy(obj)))
        for listener in list(self._listeners):
            listener(WatchEvent(event, kind, copy.deepcopy(obj)))

    def _uid(self) -> str:
        self._uids += 1
        return str(uuid.UUID(int=self._uids))

    def _suffix(self) -> str:
        self._names += 1
        n, out = self._names, ""
        for _ in range(5):
            n, digit = divmod(n, len(_NAME_ALPHABET))
            out += _NAME_ALPHABET[digit]
        return out

    def _kind(self, body: Body) -> Resource:
        resource = _BY_KIND.get(str(body.get("kind")))
        if resource is None or resource.api_version != body.get("apiVersion"):
            raise ValueError(f"the fake does not serve {body.get('apiVersion')} {body.get('kind')}")
        return resource


_FAULT_STATUS: dict[type[errors.KubeError], int] = {
    errors.NotFoundError: 404,
    errors.ConflictError: 409,
    errors.TransientError: 503,
    errors.PermanentError: 400,
}


def _error(status: int, message: str) -> errors.KubeError:
    """The error ``Kube.request`` raises for a refusal (its message starts with the status)."""
    return errors.from_status(status, f"{status} {message}")


def _check_update(target: _Target, old: Body, given: Body, *, patch: bool) -> None:
    """Refuse an update to another object or from a stale read, as the generic registry does."""
    resource = target.resource
    for field in ("name", "namespace"):
        if given.get(field, old.get(field)) != old.get(field):
            raise _error(400, f"the {field} of the object does not match the URL")
    if given.get("uid") and given["uid"] != old["uid"]:
        if patch:
            raise _error(422, f"{resource.kind} is invalid: metadata.uid: field is immutable")
        raise _error(409, _precondition("UID", given["uid"], old["uid"]))
    rv = str(given.get("resourceVersion") or "")
    if not rv and not resource.unconditional_update:
        raise _error(
            422,
            f'{resource.kind}.{resource.group} "{target.name}" is invalid: '
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
        )
    if rv and rv != old["resourceVersion"]:
        raise _error(409, _conflict(resource, target.name))


def _conflict(resource: Resource, name: str) -> str:
    return (
        f'Operation cannot be fulfilled on {resource.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )


def _precondition(field: str, wanted: str, actual: str) -> str:
    return (
        f"Precondition failed: {field} in precondition: {wanted}, {field} in object meta: {actual}"
    )


def _json(body: Any) -> Any:
    """The body as the server receives it: through JSON, so nothing is shared with the caller."""
    return None if body is None else json.loads(json.dumps(body))


def _key(target: _Target) -> Key:
    return (target.resource.kind, target.namespace, target.name)


def _spec_of(resource: Resource, obj: Body) -> Body:
    """What a change of bumps ``generation``: all but metadata, and status if a subresource."""
    skip = {"metadata", "status"} if resource.status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip}


def _parse(path: str) -> _Target:
    """Split a REST path into its resource, namespace, name and subresource."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        api_version, rest = "v1", parts[2:]
    else:
        api_version, rest = "/".join(parts[1:3]), parts[3:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and (api_version, rest[2]) in _BY_PLURAL:
        namespace, rest = rest[1], rest[2:]
    resource = _BY_PLURAL.get((api_version, rest[0])) if rest else None
    name, subresource = [*rest, "", ""][1:3] if rest else ("", "")
    if (
        resource is None
        or parts[0] not in {"api", "apis"}
        or len(rest) > 3
        or subresource not in {"", "status"}
        or (subresource and not resource.status)
        or bool(namespace) != (resource.namespaced and bool(namespace or name))
    ):
        raise _error(404, f"the server could not find the requested resource: {path}")
    return _Target(resource, namespace, name, subresource)


def _label_selector(text: str) -> dict[str, str]:
    """Parse an equality-based selector ``k=v,k2==v2``; anything else is refused (400)."""
    out = {}
    for raw in filter(None, (t.strip() for t in text.split(","))):
        key, sep, value = raw.replace("==", "=").partition("=")
        if not sep or key.endswith("!") or " " in key.strip():
            raise _error(400, f"the fake serves label selectors k=v only, not {raw!r}")
        out[key.strip()] = value.strip()
    return out


def path(kind: str, namespace: str = "", name: str = "", subresource: str = "") -> str:
    """The REST path of a kind's collection, or of one object (and its subresource)."""
    r = _BY_KIND[kind]
    prefix = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
    out = f"{prefix}/namespaces/{namespace}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
    if name:
        out += f"/{name}"
    if subresource:
        out += f"/{subresource}"
    return out
