"""The offline loader reads YAML as kubectl does (sigs.k8s.io/yaml: go-yaml v2, then JSON).

Every case runs through both paths: the fast one (yaml-rs plus its fix-ups, or a detour to
the exact one) and the exact one alone (ruamel's nodes resolved with go-yaml v2's rules).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from jobgate.offline.documents import MAX_DEPTH, Chunk, LoadError, split_documents
from jobgate.offline.exact_yaml import go_format_float, load_exact
from jobgate.offline.loader import has_yaml11_tokens, load_document

REPO = Path(__file__).resolve().parents[2]


def both(text: str) -> list[object]:
    """The document read by each path; the two must agree."""
    fast = [load_document(chunk) for chunk in split_documents(text)]
    exact = [load_exact(chunk) for chunk in split_documents(text)]
    assert fast == exact
    return fast


# (YAML value, what kubectl sends the apiserver for it)
SCALARS = [
    # YAML 1.1 booleans (YAML 1.2 reads them as strings)
    ("yes", True),
    ("Yes", True),
    ("YES", True),
    ("y", True),
    ("Y", True),
    ("on", True),
    ("On", True),
    ("ON", True),
    ("true", True),
    ("True", True),
    ("no", False),
    ("N", False),
    ("off", False),
    ("OFF", False),
    ("FALSE", False),
    ("yEs", "yEs"),
    ("'yes'", "yes"),
    ('"on"', "on"),
    # nulls
    ("~", None),
    ("null", None),
    ("Null", None),
    ("", None),
    ("'null'", "null"),
    # integers: Go's strconv with base 0 after dropping underscores
    ("0777", 511),
    ("-0777", -511),
    ("0o17", 15),
    ("0x1F", 31),
    ("0X1F", 31),
    ("-0x1F", -31),
    ("+0x1F", 31),
    ("0b101", 5),
    ("+12", 12),
    ("1_000", 1000),
    ("1__0", 10),
    ("0_777", 511),
    ("_1000", "_1000"),
    ("09", 9),  # not octal: a float, which JSON writes as 9
    ("9223372036854775807", 2**63 - 1),
    ("9223372036854775808", 9.223372036854775808e18),  # beyond int64: the apiserver reads a float
    ("12345678901234567890123", 1.2345678901234568e22),
    # floats: JSON writes integral ones as integers
    ("2.0", 2),
    ("1e3", 1000),
    ("1.5", 1.5),
    (".5", 0.5),
    ("-.5", -0.5),
    ("1_0.5", 10.5),
    ("1e21", 1e21),
    ("1e400", "1e400"),  # overflows float64: go-yaml keeps the string
    (".5e999", ".5e999"),  # the same with go-yaml's "." hint
    ("-.5e999", "-.5e999"),
    # no sexagesimal in go-yaml v2, timestamps stay as written
    ("1:20", "1:20"),
    ("190:20:30.15", "190:20:30.15"),
    ("2001-12-14", "2001-12-14"),
    ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    # tags
    ("!!str 123", "123"),
    ("!!binary aGVsbG8=", "hello"),
    ("!custom 5", "5"),
    ("!!int '7'", 7),
    # strings
    ("'0777'", "0777"),
    ("v1.2", "v1.2"),
    ("1.2.3", "1.2.3"),
    ("0x", "0x"),
    ('"\\ud800"', "\ufffd"),  # a lone surrogate: Go's JSON writes U+FFFD
]


@pytest.mark.parametrize(("written", "read"), SCALARS, ids=[s for s, _ in SCALARS])
def test_scalars_read_as_kubectl_reads_them(written, read):
    for text in (f"a: {written}\n", f"a: [{written}]\n" if written else "a: [~]\n"):
        (document,) = both(text)
        value = document["a"][0] if isinstance(document["a"], list) else document["a"]
        assert value == read
        assert type(value) is type(read)


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("on: 1\n", ["true"]),
        ("y: 1\nn: 2\n", ["true", "false"]),
        ("1: a\n", ["1"]),
        ("2.0: a\n", ["2"]),
        ("1.5e30: a\n", ["1.5e+30"]),
        ("~: a\n", ["null"]),
        ("'on': 1\n", ["on"]),
    ],
)
def test_keys_become_json_strings_as_sigs_k8s_yaml_writes_them(text, keys):
    (document,) = both(text)
    assert list(document) == keys


def test_duplicate_keys_keep_the_last_value_as_kubectl_does():
    for loader in (load_document, load_exact):
        notes: list[tuple[int, str]] = []
        assert loader(split_documents("a: 1\nb: {c: 1}\na: 3\nb: {d: 2}\n")[0], notes) == {"a": 3, "b": {"d": 2}}
        assert notes == [
            (3, 'duplicate key "a": kubectl keeps the last value'),
            (4, 'duplicate key "b": kubectl keeps the last value'),
        ]


def test_go_float_formatting():
    assert [go_format_float(v) for v in (1.0, 100000.0, 1e21, 1.5e-5, 0.0001, -2.5, math.inf)] == [
        "1",
        "100000",
        "1e+21",
        "1.5e-05",
        "0.0001",
        "-2.5",
        "+Inf",
    ]


def test_merge_keys_and_aliases():
    (document,) = both("base: &b {cpu: 1, memory: 2Gi}\nuse:\n  <<: *b\n  cpu: 2\nsame: *b\n")
    assert document == {
        "base": {"cpu": 1, "memory": "2Gi"},
        "use": {"cpu": 2, "memory": "2Gi"},
        "same": {"cpu": 1, "memory": "2Gi"},
    }


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("? [a]\n: 1\n", "a mapping key must be a scalar", 1),
        # Found by fuzzing: yaml-rs raised TypeError (unhashable list) on a key holding a list.
        ("? a c: [1]\n", "a mapping key must be a scalar", 1),
        ("x:\n  - y: 1\n? a  c: ['s']\n", "a mapping key must be a scalar", 3),
        ("? a: {b: 1}\n", "a mapping key must be a scalar", 1),
        ("a: .inf\n", "json: unsupported value: .inf", 1),
        ("a:\n  b: -.Inf\n", "json: unsupported value: -.Inf", 2),
        ("a: .NaN\n", "json: unsupported value: .NaN", 1),
        ("a: [1,\nb: 2\n", "cannot parse YAML", None),
        ("a: " + "1" * 5000 + "\n", "longer than 1000", 1),
    ],
)
def test_what_kubectl_cannot_convert_is_refused_with_its_line(text, message, line):
    for loader in (load_document, load_exact):
        with pytest.raises(LoadError) as failure:
            loader(split_documents(text)[0])
        assert message in failure.value.message
        if line is not None:
            assert failure.value.line == line


def test_document_separators_split_as_kubectl_reads_them():
    chunks = split_documents("a: 1\n---\nb: 2\n--- # comment\n\n---\nc: 3\n")
    assert [c.first_line for c in chunks] == [1, 3, 5, 7]
    assert [load_document(c) for c in chunks] == [{"a": 1}, {"b": 2}, None, {"c": 3}]
    with pytest.raises(LoadError, match="only a comment may follow"):
        split_documents("a: 1\n--- b: 2\n")


def test_a_byte_order_mark_is_not_part_of_the_first_key():
    assert both("\ufeffa: 1\n") == [{"a": 1}]


@pytest.mark.parametrize(
    "text",
    [
        "- " * (MAX_DEPTH + 5) + "x\n",
        "- " * 20000 + "x\n",  # deep enough to crash a recursive native parser
        "a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n",
        "a: " + "[" * 5000 + "]" * 5000 + "\n",
        "".join(" " * i + "k:\n" for i in range(MAX_DEPTH + 5)),
        "".join(" " * i + "k:\n" for i in range(1500)),
        "{" + '"a":' * 0 + '"k": ' * 1 + "[" * 2000 + "]" * 2000 + "}",
    ],
)
def test_nesting_beyond_the_limit_is_refused(text):
    with pytest.raises(LoadError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load_document(split_documents(text)[0])


def test_nesting_up_to_the_limit_is_read():
    (document,) = both("a: " + "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2) + "\n")
    assert document["a"]


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bombs_are_refused_quickly():
    for loader in (load_document, load_exact):
        with pytest.raises(LoadError, match="excessive aliasing"):
            loader(split_documents(alias_bomb(10))[0])


def test_moderate_aliasing_is_read():
    (document,) = both(alias_bomb(3))
    assert len(document["a2"]) == 9


def test_the_pre_scan_sends_yaml11_numbers_and_tags_to_the_exact_path():
    assert has_yaml11_tokens("a: 0777\n")
    assert has_yaml11_tokens("a: [1, 1_000]\n")
    assert has_yaml11_tokens("a: !!str 1\n")
    assert has_yaml11_tokens("<<: *x\n")
    # digits inside words, comments and quoted strings do not count
    assert not has_yaml11_tokens("name: job-007\nimage: a:0.1\n# 0777\ntag: 'x'\nenv: NCCL_2\n")


def test_a_realistic_job_takes_the_fast_path_and_reads_the_same():
    from jobgate.offline import loader

    for path in sorted((REPO / "examples").rglob("*.yaml")):
        text = path.read_text()
        for chunk in split_documents(text):
            assert load_document(chunk) == load_exact(chunk), path
    text = (REPO / "examples" / "valid" / "tfjob-mnist.yaml").read_text()
    assert loader._fast_path_applies(text)


def test_lines_of_fields():
    from jobgate.offline.loader import Locator

    text = "a: 1\n---\n# c\nkind: X\nspec:\n  list:\n    - x\n    - name: y\n      v: 2\n"
    chunk = split_documents(text)[1]
    locator = Locator(chunk)
    assert locator.line == 4
    assert locator.line_of(("spec", "list", 1, "v")) == 9
    assert locator.line_of(("spec", "list", 1, "missing")) == 8
    assert locator.line_of(("SPEC",)) == 5  # case-folded match (renamed replica types)


def test_json_documents():
    assert both('{"a": 2.0, "b": [1, true, null], "c": "yes"}') == [{"a": 2, "b": [1, True, None], "c": "yes"}]


def test_where_a_document_starts():
    chunks = split_documents("# header\n\n%YAML 1.1\n---\n# about\nkind: X\n---\n")
    assert [c.content_line for c in chunks] == [1, 6, 8]


def test_chunk_line_offsets_in_errors():
    with pytest.raises(LoadError) as failure:
        load_document(Chunk("a: 1\nb: .inf\n", 10))
    assert failure.value.line == 11


def test_lines_of_fields_among_many_keys():
    """Keys as written first, then case-folded; of duplicates, the first written."""
    from jobgate.offline.loader import Locator

    types = "".join(f"  T{i}:\n    replicas: {i}\n" for i in range(3000))
    text = "kind: X\nspec:\n  worker: 1\n  Worker: 2\n  ps: 3\n  ps: 4\n" + types
    locator = Locator(split_documents(text)[0], loaded=True)
    assert locator.line_of(("spec", "Worker")) == 4  # as written, though "worker" above folds to it
    assert locator.line_of(("spec", "WORKER")) == 3
    assert locator.line_of(("spec", "ps")) == 5
    assert locator.line_of(("spec", "T2999", "replicas")) == 6 + 2 * 2999 + 2
    assert locator.line_of(("spec", "t1500", "missing")) == 6 + 2 * 1500 + 1


def big_document(types: int = 5000) -> str:
    """Far more nesting characters than the crude bound that keeps unread text from libyaml."""
    return "kind: X\nspec:\n" + "".join(f"  T{i}:\n    replicas: [{i}]\n" for i in range(types))


def test_a_loaded_document_is_located_by_libyaml_whatever_its_size(monkeypatch):
    from jobgate.offline import exact_yaml, loader

    text = big_document()
    assert sum(map(text.count, exact_yaml._NESTING_CHARACTERS)) > exact_yaml._LIBYAML_MAX_NESTING

    def refuse(chunk: Chunk) -> None:
        raise AssertionError("ruamel composed a document libyaml can read")

    monkeypatch.setattr(exact_yaml, "_compose_ruamel", refuse)
    locator = loader.Locator(Chunk(text, 10), loaded=True)
    assert locator.line == 10
    assert locator.line_of(("spec", "T2000", "replicas", 0)) == 10 + 2 + 2 * 2000 + 1
    # Located once: the shared graph cache no longer holds it.
    assert exact_yaml._LAST_COMPOSED[0] is None


def test_text_after_a_document_end_is_not_given_to_libyaml_unbounded(monkeypatch):
    """``...`` may hide further documents that no reading has checked: the crude bound applies."""
    from jobgate.offline import exact_yaml, loader

    text = big_document() + "...\n" + "[" * 30_000 + "]" * 30_000 + "\n"
    composed: list[str] = []
    monkeypatch.setattr(exact_yaml, "_compose_ruamel", lambda chunk: composed.append(chunk.text))
    loader.Locator(Chunk(text, 1), loaded=True).line_of(("spec",))
    assert composed == [text]


def test_deep_flow_nesting_stops_ruamel_at_once():
    from ruamel.yaml import YAML

    from jobgate.offline import exact_yaml

    def scan(text: str) -> int:
        yaml = YAML(typ="rt")
        yaml.Scanner = exact_yaml._bounded_scanner()
        return len(list(yaml.scan(text)))

    limit = exact_yaml._RUAMEL_MAX_FLOW_LEVEL
    assert scan("[" * limit + "]" * limit) == 2 * limit + 2
    with pytest.raises(exact_yaml._FlowTooDeep):
        scan("[" * (limit + 1))
    with pytest.raises(LoadError, match=f"nesting deeper than {MAX_DEPTH} levels") as failure:
        exact_yaml._compose_ruamel(Chunk("a: " + "[a, " * 50_000 + "]" * 50_000 + "\n", 7))
    assert failure.value.line == 7


def ruamel_reading(text: str, scanner: object) -> object:
    """ruamel's node graph of ``text`` (lines included) or its error, with the given scanner."""
    import warnings

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from jobgate.offline import exact_yaml
    from testkit.fuzzing.loader_differential import shape

    yaml = YAML(typ="rt")
    yaml.Resolver = exact_yaml._plain_marking_resolver()
    if scanner is not None:
        yaml.Scanner = scanner
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [shape(node) for node in yaml.compose_all(text)]
    except YAMLError as exc:
        return ("error", str(exc))
    except (RecursionError, exact_yaml._FlowTooDeep):
        return ("too deep",)


SIMPLE_KEYS = [
    "a: 1\nb\nc: 2\n",  # a required key that never finds its ':'
    "a:\n  b\n  c: 1\n",
    "[a\n: 1]\n",  # a flow key may not span lines
    "{a: 1, b\n: 2}\n",
    "[" + "x" * 1100 + ": 1]\n",  # nor exceed 1,024 characters
    "[" + "x" * 1000 + ": 1]\n",
    "{[a, b]: c, {d: e}: f}\n",
    "[[a]: b, [c, [d]]: e]\n",
    "? a\n: b\n",
    "a: [b, {c: d}, [e: f]]\n",
    "x: " + "[" * 50 + ("[" * 50 + "]" * 50 + ",") * 30 + "]" * 50 + "\n",
    "x: " + "[a: " * 120 + "1" + "]" * 120 + "\n",
]


def test_the_bounded_scanner_reads_as_ruamel_does():
    """Simple keys found in constant time per token, by ruamel's rules: same graphs, same errors."""
    from jobgate.offline import exact_yaml
    from testkit.fuzzing.offline_mutator import example_texts, inputs

    texts = SIMPLE_KEYS + example_texts()[:10]
    texts += [raw.decode("utf-8", "replace") for raw in inputs(13, 60)]
    for text in texts:
        bounded = ruamel_reading(text, exact_yaml._bounded_scanner())
        if bounded != ("too deep",):
            assert bounded == ruamel_reading(text, None), text[:300]


def test_an_anchor_defined_again_is_read_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert both("a: &x 1\nb: &x 2\nc: *x\n") == [{"a": 1, "b": 2, "c": 2}]
