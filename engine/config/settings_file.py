"""A `--config` YAML file read into `Settings`, and what is wrong with it in one line.

Whatever stops the file from becoming settings (it cannot be read, it is not YAML, it
is not a mapping, a key that is no setting, a value of the wrong kind) is a
`SettingsFileError` whose message names the file, the line, and the key, e.g.
`sandex.yaml line 3: seed: Input should be a valid integer (got 'abc')`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from sandex.engine.config.yaml_errors import describe

if TYPE_CHECKING:
    from sandex.engine.config.settings import Settings


class SettingsFileError(ValueError):
    """The file cannot become settings; the message says where and why, in one line."""


def load(path: str | Path, overrides: dict[str, Any]) -> Settings:
    """The settings of the file at `path`, with `overrides` (the command line's, None
    left out) over it."""
    from sandex.engine.config.settings import Settings

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsFileError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SettingsFileError(f"{path}: not a YAML file (not UTF-8 text)") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsFileError(f"{path}{describe(exc)}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SettingsFileError(f"{path}: a config file is a mapping of settings (key: value)")
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings.model_validate({**raw, **given})
    except ValidationError as exc:
        raise SettingsFileError(
            _describe(path, text, exc, given, list(Settings.model_fields))
        ) from None


def _describe(
    path: str | Path,
    text: str,
    exc: ValidationError,
    given: dict[str, Any],
    known: list[str],
) -> str:
    first = exc.errors()[0]
    loc = list(first["loc"])
    key = ".".join(str(p) for p in loc)
    if loc and loc[0] in given:
        where = f"{path} (with the command line's {loc[0]})"
    else:
        line = _line_of(text, loc)
        where = f"{path} line {line}" if line else str(path)
    if first["type"] == "extra_forbidden":
        if len(loc) == 1:
            close = difflib.get_close_matches(str(loc[0]), known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"{where}: {key}: not a setting{hint}"
        return f"{where}: {key}: not a field of {'.'.join(str(p) for p in loc[:-1])}"
    message = first["msg"]
    if isinstance(first.get("input"), str | int | float | bool):  # not a whole section
        shown = repr(first["input"])
        message += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    return f"{where}: {key}: {message}" if key else f"{where}: {message}"


def _line_of(text: str, loc: list[Any]) -> int | None:
    """The line (1-based) of the deepest key or item of `loc` found in the YAML text."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line
