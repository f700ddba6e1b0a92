"""TOML configuration with the same keys as the command-line flags.

The flags are the single source of truth, and they are generated from the registry for the
conventions and the input, validation, execution and job options (:data:`pipeline.registry.CONVENTIONS`,
:data:`pipeline.registry.OPTIONS`): a key is valid when a flag of the same name exists
(``all-queries`` or ``all_queries`` for ``--all-queries``), and its value is checked by that
flag's own type and choices. Flags given on the command line override the file.
"""

from __future__ import annotations

import argparse
import difflib
import tomllib
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError

NOT_CONFIGURABLE = {"help", "config", "print_config", "handler", "command"}


def configurable_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        action.dest: action
        for action in parser._actions  # argparse keeps its options here; there is no public accessor
        if action.dest not in NOT_CONFIGURABLE and action.option_strings
    }


def load_config(path: str | Path, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Read ``path`` and return ``{dest: value}`` for ``parser.set_defaults``."""
    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark (written by some editors) is not TOML, and not an error
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise UsageError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read config: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: not valid TOML: {error}") from None
    actions = configurable_actions(parser)
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in data.items():
        dest = key.replace("-", "_")
        if dest in spelled:
            # TOML sees two keys; keeping the last would silently drop a value the user wrote
            raise UsageError(f"{path}: key {dest.replace('_', '-')!r} given twice ({spelled[dest]}, {key}); keep one")
        spelled[dest] = key
        action = actions.get(dest)
        if action is None:
            names = [name.replace("_", "-") for name in actions]
            close = difflib.get_close_matches(key.replace("_", "-"), names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(names))}"
            raise UsageError(f"{path}: unknown key {key!r}{hint}")
        values[dest] = _convert(path, key, value, action)
    return values


def _convert(path: Path, key: str, value: Any, action: argparse.Action) -> Any:
    where = f"{path}: key {key!r}"
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse.BooleanOptionalAction)):
        if not isinstance(value, bool):
            raise UsageError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return [_scalar(where, item, action) for item in items]
    if isinstance(value, list):
        # lists such as k = [5, 10, 20] or group-by = ["locale", "model"] become the flag's text
        if not all(isinstance(item, (str, int, float)) and not isinstance(item, bool) for item in value):
            raise UsageError(f"{where} must be a list of numbers or strings, got {value!r}")
        value = ",".join(str(item) for item in value)
    return _scalar(where, value, action)


def _scalar(where: str, value: Any, action: argparse.Action) -> Any:
    if isinstance(value, (dict, list, bool)):
        raise UsageError(f"{where} must be a single value, got {value!r}")
    text = str(value)
    if "\x00" in text:
        # no path or option holds one; the operating system would refuse it later as a crash
        raise UsageError(f"{where} holds a NUL character (\\x00): {text!r}")
    if action.type is not None:
        try:
            converted = action.type(text)  # type: ignore[operator]
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise UsageError(f"{where}: {error}") from None
    else:
        converted = text
    if action.choices is not None and converted not in action.choices:
        raise UsageError(f"{where} must be one of {', '.join(map(str, action.choices))}, got {value!r}")
    return converted
