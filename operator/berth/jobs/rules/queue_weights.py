"""Who may give a LocalQueue a ``fairSharing.weight``: the rule the Berth-kind webhook applies.

Under admission fair sharing a LocalQueue's weight divides its usage, and the chart lets a
namespace's admins create and update their LocalQueues: one who set their own queue's weight to
1000 would take every next head of a ClusterQueue shared with other teams. So a LocalQueue
created with a weight other than the default (1), or an update that changes the weight, is
allowed only to a request whose user or one of whose groups the Configuration lists in
``admissionFairSharing.weightSetters`` (default ``system:masters``). Kueue has no LocalQueue
webhook and leaves it to RBAC. Called by ``operator.webhooks.berth_admission``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from berth.api import errors, quantity
from berth.api.bodies import Body
from berth.jobs.rules import workload_updates

_DEFAULT = 1000
"""Weight 1, in the thousandths the API keeps it in."""


def refusals(
    old: Body | None,
    new: Body,
    user: Mapping[str, Any],
    setters: Sequence[str],
) -> list[errors.FieldError]:
    """The refusal of a weight ``user`` may not give (``old`` None for a creation)."""
    after = _weight(new)
    before = _DEFAULT if old is None else _weight(old)
    if after is None or after == before or workload_updates.requested_by(user, setters):
        return []
    return [
        errors.FieldError(
            "spec.fairSharing.weight",
            f"{user.get('username') or 'this user'} may not set a LocalQueue's weight: it decides "
            "how much of a shared ClusterQueue its team gets; ask an admin named in the "
            "Configuration's admissionFairSharing.weightSetters",
        )
    ]


def _weight(body: Body) -> int | None:
    """A LocalQueue body's weight in thousandths.

    None when it does not parse: validation says why.
    """
    fair = (body.get("spec") or {}).get("fairSharing")
    if not isinstance(fair, dict) or fair.get("weight") is None:
        return _DEFAULT
    try:
        return quantity.parse("cpu", fair["weight"])  # thousandths, as the model parses it
    except quantity.QuantityError:
        return None
