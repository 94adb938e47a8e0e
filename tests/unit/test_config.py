"""Configuration parsing from the baseline's bytes, and the agents globs."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from evidence_gate.config import Config, is_agent, parse_config
from evidence_gate.errors import InputInvalid

SPEC_EXAMPLE = b"""\
version: 1
agents: ["*[bot]", "agent-*"]   # logins whose patches are scored; others get `human-patch` (pass, not scored)
locked:                          # globs, added to the built-in defaults
  - "tools/**"
freeze:
  file: freeze.yaml              # or freeze.json; format follows the extension
  mode: shrink-only              # or: locked (any edit of the ledger is evidence-path-edited)
  removal_runs: 3                # a removed entry's test must pass this many times on baseline and on patch
properties:
  list: SCORE_PROPERTIES
  seeds: [1101, 1102, 1103, 1104]   # the declared plan; every seed is attempted
  fresh_seeds: 1                 # extra seeds drawn at run time and recorded (defeats answer-key patches)
  trials: 200                    # examples per seed
  pythonpath: [src]              # added to sys.path inside the sealed run
  install: ""                    # optional command that installs test dependencies into the sealed environment
  timeout_s: 600
"""


def test_spec_example_parses() -> None:
    """SPEC's configuration example, verbatim, parses to the values it states."""
    config = parse_config(SPEC_EXAMPLE)
    assert config.agents == ("*[bot]", "agent-*")
    assert config.locked == ("tools/**",)
    assert config.freeze.mode == "shrink-only"
    assert config.properties.seeds == (1101, 1102, 1103, 1104)
    assert config.properties.pythonpath == ("src",)
    assert config.to_json()["properties"]["seeds"] == [1101, 1102, 1103, 1104]


@pytest.mark.parametrize("data", [None, b"~\n", b"null\n"])
def test_absent_or_null_gives_defaults(data: bytes | None) -> None:
    """No file (or an explicit null document) means the defaults."""
    assert parse_config(data) == Config()


@pytest.mark.parametrize("data", [b"", b"# only a comment\n"])
def test_empty_file_is_invalid(data: bytes) -> None:
    """A file with no YAML document at all is config-invalid (fail closed), not silently the defaults."""
    with pytest.raises(InputInvalid, match="does not parse"):
        parse_config(data)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"version: 2\n", "version"),
        (b"version: 1\nagents: octocat\n", "agents"),
        (b"version: 1\nfreeze: {mode: relaxed}\n", "freeze.mode"),
        (b"version: 1\nproperties: {trials: 0}\n", "properties.trials"),
        (b"version: 1\nproperties: {seeds: [1, 1]}\n", "properties.seeds"),
        (b"version: 1\nfreez: {}\n", "freez"),
    ],
)
def test_invalid_values_name_the_field(data: bytes, field: str) -> None:
    """A wrong value, unknown key or sexagesimal number is config-invalid naming the field."""
    with pytest.raises(InputInvalid) as info:
        parse_config(data)
    assert field.split(".", maxsplit=1)[0] in info.value.message


@pytest.mark.parametrize(
    "data",
    [
        b"version: 1\nversion: 1\n",
        b"version: 1\nagents: &a [x]\nlocked: *a\n",
        b"version: !!int 1\n",
        b"version: 1\n  bad indent: [\n",
        b"\xff\xfe",
        b"version: 1\nproperties: {trials: 1:30}\n",
        b"version: 1\nproperties: {timeout_s: .inf}\n",
    ],
)
def test_unsafe_or_broken_yaml_is_invalid(data: bytes) -> None:
    """Duplicate keys, aliases, tags, syntax errors, bad encodings, sexagesimal and non-finite numbers are rejected."""
    with pytest.raises(InputInvalid):
        parse_config(data)


@pytest.mark.parametrize("path", ["/usr/lib", "../outside", "src/../../x"])
def test_pythonpath_stays_inside(path: str) -> None:
    """A pythonpath entry that leaves the repository is rejected."""
    with pytest.raises(InputInvalid, match="inside the repository"):
        parse_config(f"version: 1\nproperties: {{pythonpath: ['{path}']}}\n".encode())


@pytest.mark.parametrize(
    ("login", "agent"),
    [
        ("dependabot[bot]", True),
        ("Copilot-SWE[BOT]", True),
        ("agent-42", True),
        ("AGENT-x", True),
        ("octocat", False),
        ("bot", False),
        ("dependabotb", False),
        ("dependabot[bot]x", False),
        ("agent", False),
        ("my-agent-1", False),
    ],
)
def test_default_agent_globs(login: str, agent: bool) -> None:
    """`*[bot]` is a literal `[bot]` suffix (not a character class) and `agent-*` a prefix, case-insensitively."""
    assert is_agent(login, Config().agents) is agent


@given(
    st.sampled_from(["", "agent-", "Agent-", "AGENT-"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", max_size=20),
    st.sampled_from(["", "[bot]", "[BOT]", "[bot", "bot]"]),
)
@example("", "octocat", "")
@example("agent-", "42", "")
@example("", "dependabot", "[bot]")
def test_default_globs_are_exactly_prefix_or_suffix(prefix: str, name: str, suffix: str) -> None:
    """Under the defaults a login is an agent exactly when it starts with `agent-` or ends with `[bot]` (any case):
    both directions, so neither an always-false nor an always-true `is_agent` passes."""
    login = prefix + name + suffix
    assume(login)
    expected = login.casefold().startswith("agent-") or login.casefold().endswith("[bot]")
    assert is_agent(login, Config().agents) is expected, login


def test_custom_globs_are_literal() -> None:
    """Regex metacharacters in a pattern match themselves only; `?` is one character."""
    assert is_agent("a.b", ("a.b",))
    assert not is_agent("axb", ("a.b",))
    assert is_agent("bot-1", ("bot-?",))
    assert not is_agent("bot-12", ("bot-?",))
