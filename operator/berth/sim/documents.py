"""Scenario input: multi-document YAML files read into timed, validated documents.

Each document keeps where it came from (file and 0-based index) so that every error names the
document, the field path and the problem. ``sim.berth.dev/*`` annotations are parsed here:
``at`` (when the document is applied), ``delete-at``, ``duration``, ``ready-after`` and
``checkpoint-every``.
Kueue documents (``kueue.x-k8s.io``) are converted on load. Called by ``berth.sim.engine``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import IO, Any

import yaml

from berth.api import base, bodies, duration, errors, kinds, kueue_convert, names, validation
from berth.api import node as api_node
from berth.jobs import registry
from berth.jobs.framework import protocol

AT = "sim.berth.dev/at"
DELETE_AT = "sim.berth.dev/delete-at"
DURATION = "sim.berth.dev/duration"
READY_AFTER = "sim.berth.dev/ready-after"
CHECKPOINT_EVERY = "sim.berth.dev/checkpoint-every"

NAMESPACE = ("v1", "Namespace")
NODE = (api_node.API_VERSION, api_node.KIND)
"""A node of a topology-aware flavor: its labels place it in domains, its allocatable is room."""
JOB = ("batch/v1", "Job")
JOBS: dict[tuple[str, str], protocol.Integration] = {
    (i.api_version, i.kind): i for i in registry.EVERY_KIND
}
"""The job kinds a scenario may hold, each with the integration that checks it at load time."""
PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
WATCHED: dict[tuple[str, str], protocol.WatchingIntegration] = {
    (w.api_version, w.kind): integ
    for integ in registry.EVERY_KIND
    if isinstance(integ, protocol.WatchingIntegration)
    for w in integ.watched
}
"""Objects some jobs read (a TrainJob's runtimes), with the kind that reads them: kept as
written, read by the jobs that name them."""
COMPOSED: dict[tuple[str, str], protocol.ComposedIntegration] = {
    (i.api_version, i.member_kind): i
    for i in registry.EVERY_KIND
    if isinstance(i, protocol.ComposedIntegration)
}
"""A plain Pod: a member of a pod group (or a group of one); the engine assembles groups."""


@dataclasses.dataclass(frozen=True, slots=True)
class Location:
    """Where a document came from."""

    file: str
    index: int

    def __str__(self) -> str:
        return f"{self.file}: document {self.index}"


class ScenarioError(ValueError):
    """Invalid scenario input: every problem, each with its document and field path."""

    def __init__(self, problems: list[tuple[Location | None, errors.FieldError]]) -> None:
        self.problems = problems
        super().__init__("\n".join(_describe(loc, err) for loc, err in problems))


def _describe(loc: Location | None, err: errors.FieldError) -> str:
    where = "" if loc is None else f"{loc}: "
    return f"{where}{err}"


@dataclasses.dataclass(frozen=True, slots=True)
class Document:
    """One scenario document with its timing annotations parsed."""

    location: Location
    raw: dict[str, Any]
    obj: base.Object | None
    """The Berth model for Berth kinds (and PriorityClass); None for Namespaces and Jobs."""
    at: float
    delete_at: float | None
    duration: float | None
    ready_after: float | None
    """Seconds after admission when pods are ready; None means never."""
    checkpoint_every: float | None = None
    """How often it saves a checkpoint while it runs, in seconds; None: never."""

    @property
    def kind(self) -> tuple[str, str]:
        """(apiVersion, kind)."""
        return (str(self.raw.get("apiVersion")), str(self.raw.get("kind")))

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return bodies.name(self.raw)

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (``default`` when unset)."""
        return bodies.namespace(self.raw, "default")


def generated(
    raw: dict[str, Any],
    index: int,
    *,
    at: float = 0.0,
    run_for: float | None = None,
    checkpoint_every: float | None = None,
) -> Document:
    """A document a benchmark built in memory (a Berth kind, loaded here), read as if from a file.

    ``at``, ``run_for`` and ``checkpoint_every`` stand for the ``sim.berth.dev/at``,
    ``duration`` and ``checkpoint-every`` annotations.
    """
    kind = (str(raw.get("apiVersion")), str(raw.get("kind")))
    obj, problems = (
        _object(kind, raw) if kind == NODE or kind[0] == base.API_VERSION else (None, [])
    )
    if problems:
        raise errors.ApiError(problems)
    return Document(
        location=Location("<generated>", index),
        raw=raw,
        obj=obj,
        at=at,
        delete_at=None,
        duration=run_for,
        ready_after=0.0,
        checkpoint_every=checkpoint_every,
    )


def _annotation_time(
    annotations: dict[str, Any], key: str, *, allow_never: bool = False
) -> tuple[float | None, errors.FieldError | None]:
    value = annotations.get(key)
    if value is None:
        return None, None
    if allow_never and value == "never":
        return math.inf, None
    try:
        return duration.parse(value), None
    except duration.DurationError as err:
        hint = " or never" if allow_never else ""
        return None, errors.FieldError(f"metadata.annotations[{key}]", f"{err}{hint}")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, on libyaml where PyYAML was built with it: a trace replay reads tens of
thousands of documents, and the pure-Python parser took most of a replay's time."""


def read_streams(sources: list[tuple[str, IO[str]]]) -> list[Document]:
    """Read every document of every source, in order; raise ScenarioError listing all problems."""
    problems: list[tuple[Location | None, errors.FieldError]] = []
    docs: list[Document] = []
    configurations = 0
    for file, stream in sources:
        try:
            raw_docs = list(yaml.load_all(stream, Loader=_LOADER))
        except yaml.YAMLError as err:
            problems.append((Location(file, 0), errors.FieldError("", f"not valid YAML: {err}")))
            continue
        except UnicodeDecodeError as err:
            byte = err.object[err.start]
            message = f"not UTF-8 text (byte {err.start} is {byte:#04x}); save it as UTF-8"
            problems.append((Location(file, 0), errors.FieldError("", message)))
            continue
        for index, raw in enumerate(raw_docs):
            if raw is None:
                continue
            loc = Location(file, index)
            doc, doc_problems = _read_document(loc, raw)
            problems.extend((loc, p) for p in doc_problems)
            if doc is not None:
                if doc.kind == (base.API_VERSION, "Configuration"):
                    configurations += 1
                    if configurations > 1:
                        problems.append(
                            (loc, errors.FieldError("kind", "at most one Configuration is allowed"))
                        )
                docs.append(doc)
    problems += _check_watching(docs)
    problems += _check_pod_groups(docs)
    if problems:
        raise ScenarioError(problems)
    return docs


def _check_watching(docs: list[Document]) -> list[tuple[Location | None, errors.FieldError]]:
    """Each job that reads other objects built against the scenario's, before the run starts."""
    readers = {
        (i.api_version, i.kind): i
        for i in registry.every_kind(_watched_of(docs))
        if isinstance(i, protocol.Watching)
    }
    return [
        (doc.location, problem)
        for doc in docs
        if doc.kind in readers
        for problem in readers[doc.kind].to_workload(doc.raw, uid="load-check")[1]
    ]


def _check_pod_groups(docs: list[Document]) -> list[tuple[Location | None, errors.FieldError]]:
    """Each pod group's members agree on its queue and size, and make pod sets together.

    A problem is reported on the group's last document. A group with fewer pods than its size
    is no problem: its Workload is never made, as in Kueue.
    """
    groups: dict[names.JobKey, tuple[protocol.ComposedIntegration, list[Document]]] = {}
    for doc in docs:
        kind = COMPOSED.get(doc.kind)
        key = None if kind is None else kind.group_of_new(doc.raw)
        if kind is not None and key is not None:
            groups.setdefault(key, (kind, []))[1].append(doc)
    out: list[tuple[Location | None, errors.FieldError]] = []
    for key, (kind, members) in sorted(groups.items()):
        body = kind.assemble(key.namespace, key.name, [d.raw for d in members])
        if not kind.whole(body):
            out += [(members[-1].location, p) for p in kind.parts_problems(body)]
            continue
        obj, problems = kind.to_workload(body, uid="load-check")
        out += [(members[-1].location, p) for p in problems]
        del obj
    return out


def _watched_of(docs: list[Document]) -> dict[protocol.ObjectKey, dict[str, Any]]:
    """Every document of a scenario some jobs read, by key."""
    out = {}
    for doc in docs:
        key = WATCHED[doc.kind].key_of(doc.raw) if doc.kind in WATCHED else None
        if key is not None:
            out[key] = doc.raw
    return out


def read_files(paths: list[str], stdin: IO[str]) -> list[Document]:
    """Read scenario files (``-`` is standard input)."""
    sources: list[tuple[str, IO[str]]] = []
    opened = []
    try:
        for path in paths:
            if path == "-":
                sources.append(("<stdin>", stdin))
                continue
            try:
                handle = Path(path).open(encoding="utf-8")  # noqa: SIM115 - closed below
            except OSError as err:
                raise ScenarioError(
                    [(None, errors.FieldError("", f"cannot read {path}: {err.strerror}"))]
                ) from err
            opened.append(handle)
            sources.append((path, handle))
        return read_streams(sources)
    finally:
        for handle in opened:
            handle.close()


def _raw_problems(kind: tuple[str, str], raw: dict[str, Any]) -> list[errors.FieldError]:
    """What is wrong with a job or watched document, which is kept as written."""
    if kind in WATCHED:
        return WATCHED[kind].object_problems(raw)
    if kind not in JOBS:
        return []
    if not isinstance(raw.get("spec"), dict):
        return [errors.FieldError("spec", f"required; a {kind[1]} needs a spec")]
    if isinstance(JOBS[kind], protocol.Watching):
        return []  # checked once every object it may read is read (``_check_watching``)
    if kind in COMPOSED:
        # A member alone; each job is checked whole (``_check_pod_groups``).
        return COMPOSED[kind].new_member_problems(raw)
    # Build its Workload once now, so a bad job is reported with every other problem before
    # the run starts rather than when its time comes.
    obj, problems = JOBS[kind].to_workload(raw, uid="load-check")
    if obj is not None:
        problems += validation.validate_placement_annotations(obj)
    return problems


def _object(
    kind: tuple[str, str], raw: dict[str, Any]
) -> tuple[base.Object | None, list[errors.FieldError]]:
    """Load a document the simulator models: a Node (``api.node``), else a Berth kind."""
    if kind == NODE:
        return api_node.parse(raw)
    return kinds.try_load(raw)


def _read_document(loc: Location, raw: object) -> tuple[Document | None, list[errors.FieldError]]:
    if not isinstance(raw, dict):
        return None, [
            errors.FieldError("", "a document must be a mapping with apiVersion and kind")
        ]
    warnings: list[str] = []
    if kueue_convert.is_kueue(raw):
        raw, warnings = kueue_convert.convert(raw)
    del warnings  # conversion notes matter for `berth import`, not for a simulation
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return None, [errors.FieldError("metadata", "must be a mapping")]
    annotations = (metadata or {}).get("annotations") or {}
    problems: list[errors.FieldError] = []
    at, err = _annotation_time(annotations, AT)
    problems += [err] if err else []
    delete_at, err = _annotation_time(annotations, DELETE_AT)
    problems += [err] if err else []
    run_for, err = _annotation_time(annotations, DURATION)
    problems += [err] if err else []
    ready_after, err = _annotation_time(annotations, READY_AFTER, allow_never=True)
    problems += [err] if err else []
    checkpoint_every, err = _annotation_time(annotations, CHECKPOINT_EVERY)
    problems += [err] if err else []
    if checkpoint_every is not None and checkpoint_every <= 0:
        problems.append(
            errors.FieldError(
                f"metadata.annotations[{CHECKPOINT_EVERY}]", "must be longer than 0s; write e.g. 1h"
            )
        )
    kind = (str(raw.get("apiVersion")), str(raw.get("kind")))
    obj: base.Object | None = None
    if kind == NAMESPACE or kind in JOBS or kind in WATCHED:
        if not (metadata or {}).get("name"):
            problems.append(errors.FieldError("metadata.name", "required; give the object a name"))
        problems += _raw_problems(kind, raw)
    else:
        obj, load_problems = _object(kind, raw)
        problems += load_problems
    if problems:
        return None, problems
    return (
        Document(
            location=loc,
            raw=raw,
            obj=obj,
            at=at or 0.0,
            delete_at=delete_at,
            duration=run_for,
            ready_after=0.0
            if ready_after is None
            else (None if math.isinf(ready_after) else ready_after),
            checkpoint_every=checkpoint_every,
        ),
        [],
    )
