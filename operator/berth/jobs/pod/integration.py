"""The pod integration's ``Integration``: a group of plain Pods, every patch one per member.

``PodGroupJob`` reads the group ``group.group_body`` assembles from its pods; its patches map
each member's name to its strategic merge patch, or None to delete it (``MEMBERS``). Made by
``jobs.registry`` for the ``pod`` framework.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from berth.api import bodies, errors, names, workload
from berth.api.bodies import Body
from berth.jobs.framework import labelled, pod_placement
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun
from berth.jobs.pod import group as podgroup
from berth.jobs.pod import rules

MEMBERS = "pods"
"""The key of a pod group's patches: a map from each member's name to its strategic merge patch,
or None to delete it (a group is many objects; ``PodGroupJob``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodGroupJob(labelled.Labelled):
    """The pod integration: plain Pods admitted as a group, one pod set per role.

    The job is the group ``jobs.pod.group.group_body`` assembles from its pods, and every patch
    is a map of member patches under ``MEMBERS`` (``jobs.pod.group``).
    """

    @property
    def kind(self) -> str:
        """``Pod``."""
        return podgroup.KIND

    @property
    def api_version(self) -> str:
        """``v1``."""
        return podgroup.API_VERSION

    @property
    def plural(self) -> str:
        """``pods``."""
        return podgroup.PLURAL

    @property
    def size_field(self) -> str:
        """The group's size annotation."""
        return f"metadata.annotations[{podgroup.TOTAL_ANNOTATION}]"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one size for the group
        """The group's size annotation."""
        return f"metadata.annotations[{podgroup.TOTAL_ANNOTATION}]"

    # Composed: a group is made of Pods -------------------------------------------------------

    @property
    def member_kind(self) -> str:
        """``Pod``."""
        return podgroup.KIND

    @property
    def member_label(self) -> str:
        """``berth.dev/managed``."""
        return podgroup.MANAGED_LABEL

    def is_member(self, obj: Body) -> bool:
        """Berth's ``berth.dev/managed`` label on a pod no controller owns."""
        return podgroup.is_member(obj)

    def group_of(self, obj: Body) -> names.JobKey | None:
        """The group a member names (the Pod webhook copied Kueue's labels to Berth's)."""
        member = podgroup.membership(obj) if podgroup.is_member(obj) else None
        if member is None:
            return None
        namespace = str(bodies.meta(obj).get("namespace") or "")
        return names.JobKey(podgroup.KIND, namespace, member.name)

    def group_of_new(self, obj: Body) -> names.JobKey | None:
        """The group a Pod no controller owns names, Kueue's labels read as configured."""
        if podgroup.controlled(obj):
            return None  # a controller's pod (a Job's): never a member
        member = podgroup.membership(obj, honor_kueue=self.honor_kueue_labels)
        if member is None:
            return None
        namespace = str(bodies.meta(obj).get("namespace") or "default")
        return names.JobKey(podgroup.KIND, namespace, member.name)

    def job_uid(self, key: names.JobKey) -> str:
        """The uid Berth gives a group (``group.group_uid``)."""
        return podgroup.group_uid(key.namespace, key.name)

    def assemble(self, namespace: str, name: str, members: Iterable[Body]) -> Body:
        """The group of these pods (``group.group_body``)."""
        return podgroup.group_body(namespace, name, members)

    def is_assembled(self, body: Body) -> bool:
        """A group carries its members; a Pod does not."""
        return "pods" in body

    def whole(self, job: Body) -> bool:
        """No member of its size is missing."""
        return not podgroup.missing(job, honor_kueue=self.honor_kueue_labels)

    def members(self, job: Body) -> list[Body]:
        """The group's pods, in Kueue's order."""
        return podgroup.pods(job)

    def member_patches(self, patch: Body) -> Mapping[str, Body | None]:
        """The map under ``MEMBERS``."""
        found = patch.get(MEMBERS)
        return found if isinstance(found, dict) else {}

    def owner_references(self, job: Body) -> list[Body]:
        """Every member owns the group's Workload (Kueue's ``EnsureWorkloadOwnedByAllMembers``)."""
        return podgroup.owner_references(job)

    def owners(self, job: Body, current: Any) -> list[Body] | None:  # noqa: ANN401 - a JSON value
        """Every member an owner of the Workload (None: each is already)."""
        return podgroup.owners(job, current)

    def parts_problems(self, job: Body) -> list[errors.FieldError]:
        """Members that disagree on their group's queue or size."""
        return podgroup.consistency_problems(job, honor_kueue=self.honor_kueue_labels)

    def admit_member(self, obj: Body) -> list[Body]:
        """Berth's label, gate, finalizer and role on a new member (``rules.webhook_patch``)."""
        return rules.webhook_patch(obj, honor_kueue=self.honor_kueue_labels)

    def new_member_problems(self, obj: Body) -> list[errors.FieldError]:
        """Its group metadata, and Berth's label only on a pod Berth queues."""
        return rules.create_problems(obj, honor_kueue=self.honor_kueue_labels)

    def member_update_problems(
        self, old: Body, new: Body, *, admitted: bool, may_drop_finalizer: bool
    ) -> list[errors.FieldError]:
        """A member's queue, group, size, role, gate and finalizer (``rules.update_problems``)."""
        return rules.update_problems(
            old,
            new,
            admitted=admitted,
            may_drop_finalizer=may_drop_finalizer,
            honor_kueue=self.honor_kueue_labels,
        )

    def may_drop_finalizer(self, job: Body, member: Body, *, finished_workload: bool) -> bool:
        """The member is one ``group.finalizer_drops`` lets go."""
        name = bodies.meta(member).get("name")
        drops = podgroup.finalizer_drops(
            job, finished_workload=finished_workload, honor_kueue=self.honor_kueue_labels
        )
        return any(bodies.meta(p).get("name") == name for p in drops)

    # Integration --------------------------------------------------------------------------------

    def pod_selector(self, job: Body) -> str:  # noqa: ARG002 - one label marks every member
        """Berth's label on every member (the group's own members are ``job['pods']``)."""
        return f"{podgroup.MANAGED_LABEL}=true"

    def pod_count(self, job: Body) -> int:
        """The group's size."""
        return podgroup.total(job, honor_kueue=self.honor_kueue_labels)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first member's ``priorityClassName``."""
        members = podgroup.pods(job)
        spec = (members[0].get("spec") or {}) if members else {}
        return spec.get("priorityClassName") or None

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The group's Workload, or why it cannot be made (yet)."""
        return podgroup.to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self,
        job: Body,
        originals: list[PodSetOriginal],  # noqa: ARG002 - a member keeps its own template
        runs: list[PodSetRun],
    ) -> Body:
        """Each gated member of the group, ungated on its role's flavors.

        A role placed by topology pins each member to its domain at once: the members exist
        already, so none waits at the topology gate.
        """
        by_role = {r.name: r for r in runs}
        size = self.pod_count(job)
        gated = [p for p in podgroup.runnable(job)[:size] if podgroup.is_gated(p)]
        pinned: dict[str, dict[str, str]] = {}
        for role, run in by_role.items():
            if run.topology is not None:
                members = sorted(
                    str(p["metadata"]["name"]) for p in gated if podgroup.role_of(p) == role
                )
                pinned.update(pod_placement.pin(run.topology, (), members))
        out: dict[str, Body] = {}
        for pod in gated:
            name, role = str(pod["metadata"]["name"]), podgroup.role_of(pod)
            found = by_role.get(role)
            out[name] = podgroup.start_patch(
                pod,
                pod_set=role,
                flavors=[] if found is None else list(found.placements),
                pinned=pinned.get(name),
            )
        return {MEMBERS: out}

    def stop_patch(self, job: Body) -> Body:
        """Delete the members that were started and still run."""
        return {MEMBERS: {str(p["metadata"]["name"]): None for p in podgroup.to_stop(job)}}

    def upkeep_patch(self, job: Body, *, finished_workload: bool) -> Body:
        """Excess members deleted, and finalizers off the members that may go."""
        out: dict[str, Body | None] = {
            str(p["metadata"]["name"]): podgroup.DROP_FINALIZER
            for p in podgroup.finalizer_drops(
                job, finished_workload=finished_workload, honor_kueue=self.honor_kueue_labels
            )
        }
        for pod in podgroup.excess(job, honor_kueue=self.honor_kueue_labels):
            out[str(pod["metadata"]["name"])] = None
        return {MEMBERS: out}

    def is_suspended(self, job: Body) -> bool:
        """A member that counts is still gated."""
        return podgroup.is_suspended(job, honor_kueue=self.honor_kueue_labels)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """``total`` members succeeded, or an unretriable group stopped."""
        return podgroup.finished(job, honor_kueue=self.honor_kueue_labels)

    def pods_ready(self, job: Body, count: int) -> bool:
        """Ready + succeeded members >= count."""
        return podgroup.pods_ready(job, count)

    def active_pods(self, job: Body) -> int:
        """Members bound and not finished."""
        return podgroup.active_pods(job)
