"""The running scene's own options as the panel's rows (``SessionView.scene_options``: the
scene declares them, app/scenes/base.py ``SceneOption``, each naming the command that changes it)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OptionRow:
    """One of the running scene's own options (``Scene.options()``: a SceneOption), as the panel
    draws it under the controls: a checkbox ("toggle"), a combo ("choice"; "size": a local work
    size), a slider from ``low`` to ``high`` ("int"), or its value as text ("text") with a button
    when it has a command. A change calls ``request(command, value=...)``; a text row's button
    calls ``request(command)``."""

    name: str
    title: str
    kind: str
    value: bool | int | str
    command: str  # the controls command (app/session/controls.py); "" for a read-only row
    choices: tuple[str, ...] = ()  # "choice", "size": what the combo offers, the value among them
    low: int = 0
    high: int = 0
    keys: str = ""  # the keys that change it (the row's tooltip)
    button: str = ""  # a text row's button: its command's declared label ("reset", "animate")



def option_rows(options) -> tuple[OptionRow, ...]:
    """The panel's rows of ``SessionView.scene_options`` (SceneOption rows, plain values)."""
    rows = []
    for o in options:
        kind = o.kind
        if kind == "toggle":
            value = bool(o.value)
        elif kind == "int":
            value = int(o.value)
        else:
            value = str(o.value)
        choices = tuple(str(c) for c in o.choices)
        if kind in ("choice", "size") and value not in choices:
            choices = (value,) + choices  # a value set elsewhere (a key, --local-size 4x4) is shown too
        low = int(o.low) if o.low is not None else 0
        high = int(o.high) if o.high is not None else low
        button = (o.button or o.command.replace("_", " ")) if kind == "text" and o.command else ""
        rows.append(OptionRow(o.name, o.title, kind, value, o.command, choices, low, high, o.keys, button))
    return tuple(rows)
