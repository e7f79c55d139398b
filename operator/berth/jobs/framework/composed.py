"""The members of composed jobs (pod groups) seen so far, and the jobs they make.

One ``Assembly`` per ``Composed`` kind: a member joins or leaves its job, and the job is
assembled again from the members left. The operator's World keeps the stored bodies of Pods
seen on the watch; the simulator keeps the documents of its scenario (each with its timers),
reading the body of each through ``body_of``. Called by ``operator.world`` and ``sim.engine``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from berth.api import names
from berth.api.bodies import Body
from berth.jobs.framework.protocol import ComposedIntegration

Member = TypeVar("Member")


class Assembly(Generic[Member]):
    """The members of every job of one composed kind, by job, then by member name."""

    def __init__(self, kind: ComposedIntegration, body_of: Callable[[Member], Body]) -> None:
        self.kind = kind
        self.body_of = body_of
        self._members: dict[names.JobKey, dict[str, Member]] = {}

    def join(self, job: names.JobKey, name: str, member: Member) -> None:
        """A member of ``job`` named ``name`` is new, or changed."""
        self._members.setdefault(job, {})[name] = member

    def leave(self, job: names.JobKey, name: str) -> bool:
        """A member left its job; True when the job has no member left (it is gone)."""
        members = self._members.get(job)
        if members is None:
            return True
        members.pop(name, None)
        if members:
            return False
        del self._members[job]
        return True

    def members(self, job: names.JobKey) -> list[Member]:
        """The members of ``job`` now, in the order they joined."""
        return list(self._members.get(job, {}).values())

    def job(self, job: names.JobKey) -> Body:
        """``job`` assembled from its members now (a job of none when all have left)."""
        return self.kind.assemble(
            job.namespace, job.name, [self.body_of(m) for m in self.members(job)]
        )
