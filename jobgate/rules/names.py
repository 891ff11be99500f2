"""Name checks with the wording of k8s.io/apimachinery/pkg/util/validation."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Final

# Patterns, not compiled ones: re compiles (and caches) each when a name first needs it, so that
# start-up does not compile the patterns a run never uses (up to a million instructions each).
_DNS1123_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL: Final = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_PORT_NAME_CHARSET: Final = r"[-a-z0-9]+"
_HAS_LETTER: Final = r"[a-z]"
_RELAXED_ENV_VAR_NAME: Final = r"[\x20-\x3c\x3e-\x7e]+"  # printable ASCII except '='
QUALIFIED_NAME: Final = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
DNS1123_SUBDOMAIN: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
# The whole-string form a CRD schema's "pattern" and its message quote.
DNS1123_LABEL_PATTERN: Final = f"^{_DNS1123_LABEL}$"

LABEL_MAX_LENGTH: Final = 63
PORT_NAME_MAX_LENGTH: Final = 15
SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1123_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{DNS1123_SUBDOMAIN}')"
)

DNS1123_LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_LABEL_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
# What port_name_problems says of a name that is no IANA service name (besides its length).
PORT_NAME_PROBLEMS: Final = (
    "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
    "must contain at least one letter (a-z)",
    "must not contain consecutive hyphens",
    "must not begin or end with a hyphen",
)
ENV_VAR_NAME_MESSAGE: Final = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)


_PORT_NAME: Final = r"(?=[-a-z0-9]*[a-z])(?![-a-z0-9]*--)[a-z0-9](?:[-a-z0-9]{0,13}[a-z0-9])?"

# The patterns every job's names meet are matched without re: compiling one costs a one-file
# check from a third to a half of a million instructions, more than its rules. Each function
# below answers as re.fullmatch of its pattern (tests/unit/test_fast_paths.py holds them to it).
_LETTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyz")
_ALPHANUMERIC: Final = _LETTERS | frozenset("0123456789")
_LABEL_CHARACTERS: Final = _ALPHANUMERIC | {"-"}
_MIXED_CASE_ALPHANUMERIC: Final = _ALPHANUMERIC | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_QUALIFIED_NAME_CHARACTERS: Final = _MIXED_CASE_ALPHANUMERIC | {"-", "_", "."}


def matches_dns1123_label(value: str) -> bool:
    """``re.fullmatch(_DNS1123_LABEL, value) is not None``."""
    if value == "" or value[0] not in _ALPHANUMERIC or value[-1] not in _ALPHANUMERIC:
        return False
    return _LABEL_CHARACTERS.issuperset(value)


def matches_dns1035_label(value: str) -> bool:
    """``re.fullmatch(_DNS1035_LABEL, value) is not None``."""
    if value == "" or value[0] not in _LETTERS or value[-1] not in _ALPHANUMERIC:
        return False
    return _LABEL_CHARACTERS.issuperset(value)


def matches_dns1123_subdomain(value: str) -> bool:
    """``re.fullmatch(DNS1123_SUBDOMAIN, value) is not None``: labels joined by dots."""
    return all(matches_dns1123_label(label) for label in value.split("."))


def matches_qualified_name(value: str) -> bool:
    """``re.fullmatch(QUALIFIED_NAME, value) is not None`` (a name without prefix)."""
    if value == "" or value[0] not in _MIXED_CASE_ALPHANUMERIC or value[-1] not in _MIXED_CASE_ALPHANUMERIC:
        return False
    return _QUALIFIED_NAME_CHARACTERS.issuperset(value)


def matches_port_name(value: str) -> bool:
    """``re.fullmatch(_PORT_NAME, value) is not None``: at most 15 characters, a letter, no "--"."""
    return (
        len(value) <= PORT_NAME_MAX_LENGTH
        and matches_dns1123_label(value)
        and "--" not in value
        and any(character in _LETTERS for character in value)
    )


def matches_relaxed_env_var_name(value: str) -> bool:
    """``re.fullmatch(_RELAXED_ENV_VAR_NAME, value) is not None``: printable ASCII but '='."""
    return value != "" and value.isascii() and value.isprintable() and "=" not in value


# Pod templates repeat the same few names (containers, volumes, ports, env vars) in every
# replica and every review: a set lookup answers the ones already seen valid without the
# regex. Only valid names are kept, none longer than a short limit, and no more than a fixed
# count, so hostile input can neither grow the memory nor change an answer.
_KNOWN_NAMES_MAX: Final = 4096
_KNOWN_ENV_VAR_NAME_MAX_LENGTH: Final = 256
_known_labels: set[str] = set()
_known_port_names: set[str] = set()
_known_env_var_names: set[str] = set()


def is_dns1123_label(value: str) -> bool:
    """Fast yes/no; the *_problems functions say why not."""
    if value in _known_labels:
        return True
    if len(value) > LABEL_MAX_LENGTH or not matches_dns1123_label(value):
        return False
    if len(_known_labels) < _KNOWN_NAMES_MAX:
        _known_labels.add(value)
    return True


def is_port_name(value: str) -> bool:
    if value in _known_port_names:
        return True
    if not matches_port_name(value):
        return False
    if len(_known_port_names) < _KNOWN_NAMES_MAX:
        _known_port_names.add(value)
    return True


def is_env_var_name(value: str) -> bool:
    if value in _known_env_var_names:
        return True
    if not matches_relaxed_env_var_name(value):
        return False
    if len(value) <= _KNOWN_ENV_VAR_NAME_MAX_LENGTH and len(_known_env_var_names) < _KNOWN_NAMES_MAX:
        _known_env_var_names.add(value)
    return True


def dns1123_subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value) > SUBDOMAIN_MAX_LENGTH:
        problems.append(max_length_message(SUBDOMAIN_MAX_LENGTH))
    if not matches_dns1123_subdomain(value):
        problems.append(DNS1123_SUBDOMAIN_MESSAGE)
    return problems


def max_length_message(limit: int) -> str:
    return f"must be no more than {limit} characters"


# apimachinery's IsQualifiedName and IsValidLabelValue, word for word: the apiserver's check of every
# object's metadata.labels (ValidateLabels), which refuses a job before any admission webhook is asked.
QUALIFIED_NAME_REGEX_MESSAGE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{QUALIFIED_NAME}')"
)
LABEL_VALUE_MESSAGE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    f"validation is '({QUALIFIED_NAME})?')"
)


def qualified_name_problems(value: str) -> list[str]:
    """IsQualifiedName: a name part of at most 63 characters, after an optional DNS-1123 subdomain and '/'."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {QUALIFIED_NAME_REGEX_MESSAGE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {problem}" for problem in dns1123_subdomain_problems(prefix)]
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > LABEL_MAX_LENGTH:
        problems.append(f"name part {max_length_message(LABEL_MAX_LENGTH)}")
    if not matches_qualified_name(name):
        problems.append(f"name part {QUALIFIED_NAME_REGEX_MESSAGE}")
    return problems


def label_value_problems(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 characters of a qualified name's."""
    problems: list[str] = []
    if len(value) > LABEL_MAX_LENGTH:
        problems.append(max_length_message(LABEL_MAX_LENGTH))
    if value and not matches_qualified_name(value):
        problems.append(LABEL_VALUE_MESSAGE)
    return problems


def dns1123_label_problems(value: str) -> list[str]:
    problems = []
    if len(value) > LABEL_MAX_LENGTH:
        problems.append(max_length_message(LABEL_MAX_LENGTH))
    if not matches_dns1123_label(value):
        problems.append(DNS1123_LABEL_MESSAGE)
    return problems


def dns1035_label_problems(value: str) -> list[str]:
    problems = []
    if len(value) > LABEL_MAX_LENGTH:
        problems.append(max_length_message(LABEL_MAX_LENGTH))
    if not matches_dns1035_label(value):
        problems.append(DNS1035_LABEL_MESSAGE)
    return problems


# apimachinery's httpPathFmt, which IsDomainPrefixedPath holds the path after the domain to.
HTTP_PATH: Final = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_CHARACTERS: Final = _MIXED_CASE_ALPHANUMERIC | frozenset("/-._~%!$&'()*+,;=:")


def is_http_path(value: str) -> bool:
    """``re.fullmatch(HTTP_PATH, value) is not None``."""
    return value != "" and _HTTP_PATH_CHARACTERS.issuperset(value)


def port_name_problems(value: str) -> list[str]:
    """IANA service name rules, which Kubernetes applies to container port names."""
    import re  # here, not at the top: a one-file check that never meets a bad port name never imports re

    problems = []
    if len(value) > PORT_NAME_MAX_LENGTH:
        problems.append(max_length_message(PORT_NAME_MAX_LENGTH))
    if not re.fullmatch(_PORT_NAME_CHARSET, value):
        problems.append(PORT_NAME_PROBLEMS[0])
    if not re.search(_HAS_LETTER, value):
        problems.append(PORT_NAME_PROBLEMS[1])
    if "--" in value:
        problems.append(PORT_NAME_PROBLEMS[2])
    if value and (value[0] == "-" or value[-1] == "-"):
        problems.append(PORT_NAME_PROBLEMS[3])
    return problems


def env_var_name_problems(value: str) -> list[str]:
    """The relaxed rule, GA since Kubernetes 1.34: printable ASCII except '='."""
    if not value:
        return ["environment variable name must be non-empty"]
    if not matches_relaxed_env_var_name(value):
        return [ENV_VAR_NAME_MESSAGE]
    return []
