"""The errors of bad training settings, and how their text names a setting.

A check says what is wrong once, as a function of a *namer*: ``say(field)`` names a setting and
``say(field, value)`` names it with its value. In Python (:func:`python_names`) that reads
``n_envs=0``; on the command line (:func:`agents.training.options.cli_names`) ``--n-envs 0`` — so
one check gives both the library's ``ValueError`` and ``train.py``'s one-line usage error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: ``say(field)`` or ``say(field, value)`` → how a message names a setting
Namer = Callable[..., str]
#: a message as a function of the namer
Render = Callable[[Namer], str]
#: the marker of "no value given" to a namer
NO_VALUE = object()


def python_names(field: str, value: Any = NO_VALUE) -> str:
    """``field``, or ``field=value`` (the value's repr): how a Python caller names a setting."""
    return field if value is NO_VALUE else f"{field}={value!r}"


class SettingMessage(Exception):
    """A bad-settings error whose text names each setting through a namer: ``str(error)`` in
    Python's words (:func:`python_names`), :meth:`spelled` in another's (the command line's)."""

    def __init__(self, render: Render) -> None:
        """``render``: the message as a function of the namer."""
        self.render = render
        super().__init__(render(python_names))

    def spelled(self, say: Namer) -> str:
        """The message with every setting named by ``say``."""
        return self.render(say)


class SettingError(SettingMessage, ValueError):
    """A bad value of a training setting, or of two that do not go together."""


class SettingTypeError(SettingMessage, TypeError):
    """A keyword a setting's object does not take (Python's wording: "unexpected keyword argument")."""


def invalid(field: str, value: Any, allowed: str) -> SettingError:
    """The error of ``field``'s bad ``value``: ``<field>=<value> is invalid; allowed: <allowed>``."""
    return SettingError(lambda say: f"{say(field, value)} is invalid; allowed: {allowed}")


__all__ = ["NO_VALUE", "Namer", "Render", "SettingError", "SettingMessage", "SettingTypeError", "invalid",
           "python_names"]
