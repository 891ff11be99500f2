"""The validate path's shortcuts for common valid values answer exactly as the long way does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobgate.offline import loader
from jobgate.rules import names, quantity
from jobgate.rules.names import is_dns1123_label, is_env_var_name, is_port_name
from jobgate.rules.podtemplate import check_pod_template


def test_remembered_names_are_bounded_and_never_change_an_answer() -> None:
    for index in range(names._KNOWN_NAMES_MAX + 100):
        assert is_dns1123_label(f"volume-{index}")
        assert is_port_name(f"p{index % 10000}")
        assert is_env_var_name(f"VAR_{index}")
    assert len(names._known_labels) <= names._KNOWN_NAMES_MAX
    assert len(names._known_port_names) <= names._KNOWN_NAMES_MAX
    assert len(names._known_env_var_names) <= names._KNOWN_NAMES_MAX
    # Asked twice: a remembered valid name stays valid, an invalid one is never remembered.
    for _ in range(2):
        assert is_dns1123_label("volume-1") and not is_dns1123_label("Volume-1")
        assert not is_dns1123_label("a" * 64)
        assert is_port_name("p1") and not is_port_name("p--1")
        assert is_env_var_name("VAR_1") and not is_env_var_name("A=B")
    assert "Volume-1" not in names._known_labels
    long_name = "V" * (names._KNOWN_ENV_VAR_NAME_MAX_LENGTH + 1)
    names._known_env_var_names.clear()
    assert is_env_var_name(long_name)
    assert long_name not in names._known_env_var_names


# Mostly the characters that decide, with the odd other one (upper case, '_', '.', non-ASCII).
label_like = st.text(st.sampled_from("abz09-A_.é=~ \n\x7f") | st.characters(), max_size=18)
# What a quantity or a YAML 1.1 number is made of, with the odd other character.
number_like = st.text(st.sampled_from("0123456789.+-_eEKMGTPiunmkxXoObBaf") | st.characters(), max_size=10)

# Each check written without re (compiling a pattern costs a one-file check more than its rules)
# against the pattern it stands for.
NAME_CHECKS = [
    (names.matches_dns1123_label, names._DNS1123_LABEL),
    (names.matches_dns1035_label, names._DNS1035_LABEL),
    (names.matches_dns1123_subdomain, names.DNS1123_SUBDOMAIN),
    (names.matches_qualified_name, names.QUALIFIED_NAME),
    (names.matches_port_name, names._PORT_NAME),
    (names.matches_relaxed_env_var_name, names._RELAXED_ENV_VAR_NAME),
]


@pytest.mark.parametrize(("matches", "pattern"), NAME_CHECKS)
@given(value=label_like)
def test_the_name_checks_without_re_answer_as_the_patterns(matches: Any, pattern: str, value: str) -> None:
    assert matches(value) == (re.fullmatch(pattern, value) is not None)


NAME_EDGES = ["a", "0", "-", "a-", "-a", "a-b", "a--b", "0a", "a0", "ab-cd-9", "A", "a_b", "", "a\n", "é", "a.b",
              "a..b", ".a", "a.", "A.b_C-d", "_a", "a_", "123456789012345", "1234567890123456", "abcdefghijklmnop",
              "a=b", " ", "~", "\x7f", "\t"]  # fmt: skip


@pytest.mark.parametrize(("matches", "pattern"), NAME_CHECKS)
@pytest.mark.parametrize("value", NAME_EDGES)
def test_the_name_checks_without_re_on_the_edges(matches: Any, pattern: str, value: str) -> None:
    assert matches(value) == (re.fullmatch(pattern, value) is not None)


QUANTITY_EDGES = ["1", "+1", "-1", "1.", ".5", ".", "+.", "1.5.", "1e3", "1E3", "1E", "1e", "1e+3", "1e-", "1Ki",
                  "1.5Gi", "5m", "1k", "1K", "", "e3", "1Kib", "1 ", "1.2.3", "+", "1ee3", "0x10", "١"]  # fmt: skip


@given(text=number_like)
def test_the_quantity_split_without_re_answers_as_the_pattern(text: str) -> None:
    match = re.fullmatch(quantity._QUANTITY, text)
    assert quantity._split(text) == (None if match is None else match.groups())


@pytest.mark.parametrize("text", QUANTITY_EDGES)
def test_the_quantity_split_without_re_on_the_edges(text: str) -> None:
    match = re.fullmatch(quantity._QUANTITY, text)
    assert quantity._split(text) == (None if match is None else match.groups())


@given(token=number_like)
def test_the_yaml11_number_check_asks_the_pattern_only_when_it_can_match(token: str) -> None:
    assert loader._yaml11_number(token) == (re.fullmatch(loader._YAML11_NUMBER, token) is not None)


@given(text=st.text(st.sampled_from("0123456789_xXoObBz: \n"), max_size=40))
def test_the_zero_hints_are_where_the_pattern_matches(text: str) -> None:
    assert list(loader._zero_hints(text)) == [match.start() for match in re.finditer(loader._ZERO_HINT, text)]


@given(text=st.text(st.sampled_from("-- \t\r\na#"), max_size=40))
def test_the_document_starts_are_where_the_pattern_matches(text: str) -> None:
    from jobgate.offline import documents

    expected = [match.start() for match in re.finditer(documents._DOCUMENT_START, text)]
    assert list(documents.document_starts(text)) == expected


@given(path=st.text(st.sampled_from("aZ09/-._~%!$&'()*+,;=: #?\\é"), max_size=12))
def test_the_http_path_check_without_re_answers_as_the_pattern(path: str) -> None:
    assert names.is_http_path(path) == (re.fullmatch(names.HTTP_PATH, path) is not None)


@given(name=st.text(st.sampled_from("aZ09_,:-é. "), max_size=12))
def test_the_jobset_rule_name_check_without_re_answers_as_the_pattern(name: str) -> None:
    from jobgate.families.jobset.rules.checks import RULE_NAME_PATTERN, is_rule_name

    assert is_rule_name(name) == (re.fullmatch(RULE_NAME_PATTERN, name) is not None)


# Text with every ASCII control character and the odd other character (non-ASCII among them).
stream_like = st.text(st.characters(max_codepoint=0x7F) | st.sampled_from("a: \n\t\r\x85é\x9f\ufeff"), max_size=40)


@given(text=stream_like)
def test_the_control_character_check_answers_as_the_pattern(text: str) -> None:
    # The ASCII case deletes the allowed bytes instead of searching the pattern: the same answer.
    assert loader._has_control_characters(text) == (re.search(loader._NOT_YAML_CHARACTERS, text) is not None)


@pytest.mark.parametrize("character", [chr(code) for code in range(0x80)] + ["\x85", "\x9f", "é"])
def test_the_control_character_check_of_each_character(character: str) -> None:
    text = f"a: b{character}c\n"
    assert loader._has_control_characters(text) == (re.search(loader._NOT_YAML_CHARACTERS, text) is not None)


def _template(volumes: list[Any], mounts: list[Any], env: list[Any]) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "volumeMounts": mounts, "env": env}
    return {"spec": {"containers": [container], "volumes": volumes}}


def test_the_second_of_two_equal_valid_names_is_still_a_duplicate() -> None:
    volumes = [{"name": "data"}, {"name": "data"}, {"name": "Data"}, "x"]
    mounts = [{"name": "data", "mountPath": "/d"}, {"name": "gone", "mountPath": "/g"}, {"name": "data"}]
    env = [{"name": "OK"}, {"name": "A=B"}, {"name": ""}, 3]
    for _ in range(2):  # the second time every valid name is a remembered one
        found = check_pod_template(_template(volumes, mounts, env), ("t",), where="w", replica_restart_policy=None)
        assert [str(e) for e in found.errors] == [
            't.spec.volumes[1].name: Duplicate value: "data"',
            't.spec.volumes[2].name: Invalid value: "Data": ' + names.DNS1123_LABEL_MESSAGE,
            't.spec.volumes[3]: Invalid value: "x": must be of type object',
            't.spec.containers[0].volumeMounts[1].name: Not found: "gone": no volume of that name in the pod',
            "t.spec.containers[0].volumeMounts[2].mountPath: Required value",
            't.spec.containers[0].env[1].name: Invalid value: "A=B": ' + names.ENV_VAR_NAME_MESSAGE,
            "t.spec.containers[0].env[2].name: Required value",
            "t.spec.containers[0].env[3]: Invalid value: 3: must be of type object",
        ]
