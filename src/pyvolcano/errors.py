"""User-facing errors.

Every mistake a user can make (bad YAML, a manifest missing a field, an unknown plugin) raises a
``UserError`` subclass carrying a one-line message that names the object and field.  The CLI prints the
message and exits with status 2; it never shows a traceback for these.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in user input; ``str(err)`` is the whole message shown to the user."""

    exit_code = 2


class ConfigError(UserError):
    """A malformed volcano-scheduler.conf."""


class ManifestError(UserError):
    """A malformed Kubernetes manifest; the message names the object (kind ns/name) and field."""

    def __init__(self, obj_ref: str, field: str, problem: str) -> None:
        self.obj_ref = obj_ref
        self.field = field
        self.problem = problem
        super().__init__(f"{obj_ref}: field {field}: {problem}")


class QuantityError(ValueError):
    """A Kubernetes resource quantity that does not parse."""


def yaml_problem(exc: Exception, source: str) -> str:
    """A one-line description of a PyYAML error with its line and column."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return f"{source}: YAML error: {exc}"
    return f"{source}: YAML error at line {mark.line + 1}, column {mark.column + 1}: {getattr(exc, 'problem', None) or exc}"
