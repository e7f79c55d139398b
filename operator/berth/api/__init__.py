"""Typed models of Berth's API: the ``berth.dev/v1beta1`` kinds and the operator Configuration.

Owns names (``NewType`` identifiers and ``WorkloadKey``), Kubernetes quantities parsed into integers
in canonical units, the pydantic models with Kueue v1beta2 field names, defaults and enums, the
pure validators that return every ``FieldError``, and conversion from Kueue's API groups. Every
other layer builds on these types; nothing here performs I/O or reads a clock.
"""
