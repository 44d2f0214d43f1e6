"""Command templates over the merged config."""

from __future__ import annotations

import pytest

from tuna.backends.bench import CommandTemplate, TemplateError

CONFIG = {"cc": "cc", "tile": 16, "opt": "-O2", "name": "a b;rm -rf /", "flags": "-O2 -g", "r": 0.5}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{cc} {opt} -DTILE={tile} -o bench bench.c", "cc -O2 -DTILE=16 -o bench bench.c"),
        ("./bench --name {name}", "./bench --name 'a b;rm -rf /'"),
        ("cc {flags:raw} x.c", "cc -O2 -g x.c"),
        ("cc {flags} x.c", "cc '-O2 -g' x.c"),
        ("./b {tile:04d} {r:.2f}", "./b 0016 0.50"),
        ("echo '{{\"a\": 1}}' {tile}", "echo '{\"a\": 1}' 16"),
        ("true", "true"),
    ],
)
def test_render(text: str, expected: str) -> None:
    assert CommandTemplate(text).render(CONFIG) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("./bench {threads} {tile} {qps}", "names 'threads', 'qps', which are neither a param"),
        ("./bench {0}", "field {0} is not a plain name"),
        ("./bench {}", "field {} is not a plain name"),
        ("./bench {a.b}", "field {a.b} is not a plain name"),
        ("./bench {tile!r}", "field {tile!r} is not a plain name"),
        ("./bench {tile", "expected '}' before end of string"),
    ],
)
def test_bad_templates_are_refused(text: str, message: str) -> None:
    t = CommandTemplate(text, "run command")
    with pytest.raises(TemplateError) as e:
        t.check(CONFIG)
    assert str(e.value).startswith(f"run command {text!r}")
    assert message in str(e.value)


def test_a_field_the_config_lacks_renders_as_nothing() -> None:
    # An absent conditional parameter (its condition does not hold in this config).
    assert CommandTemplate("cc {unroll_flag:raw} -DU={unroll} x.c").render(CONFIG) == "cc  -DU= x.c"
    assert CommandTemplate("cc {unroll_flag:raw} x.c").render({"unroll_flag": "-funroll"}) == (
        "cc -funroll x.c"
    )


def test_bad_format_spec() -> None:
    with pytest.raises(TemplateError, match="cannot format opt='-O2' with \\{opt:d\\}"):
        CommandTemplate("x {opt:d}").render(CONFIG)
