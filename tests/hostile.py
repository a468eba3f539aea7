"""Answers that once made extraction quadratic, and an ordinary answer of any size.

Shared by ``tests/test_extract_speed.py`` and ``bench/extract_speed.py``.
"""

from __future__ import annotations

from collections.abc import Callable


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda size: unit * (size // len(unit))


def _nested(size: int) -> str:
    return "[" * (size // 2) + "]" * (size // 2)


def _backtick_runs(size: int) -> str:
    """Backtick runs of growing length (`` ` `` ``` `` ``` ...): none closes another."""
    parts: list[str] = []
    total, k = 0, 1
    while total + k + 1 <= size:
        parts.append("`" * k)
        total += k + 1
        k += 1
    return " ".join(parts)


HOSTILE: dict[str, Callable[[int], str]] = {
    "link_opens": _repeat("[a]("),  # "[a]([a]([a](..."
    "brackets": _repeat("["),
    "nested_brackets": _nested,  # "[[[...]]]"
    "parens": _repeat("("),
    "backticks": _repeat("`"),  # one long run
    "backtick_runs": _backtick_runs,
    "angles": _repeat("<"),
    "autolink_opens": _repeat("<https://a"),
    "url_parens": _repeat("http://a.b/("),  # a URL candidate every 12 characters
    "ipv6_urls": _repeat("http://[::1]/("),  # IPv6 literals, read outside linkify-it-py
    "quotes": _repeat("“"),  # unpaired quotes: sentencex pairs them
}
"""Shape name -> answer of about ``size`` characters."""

ORDINARY_UNIT = """## Boiling and melting

Water boils at 100 °C at sea level [1]. At higher altitudes the air pressure is lower, so water
boils at a lower temperature; in Denver it boils at about 95 °C [2]. Dr. Smith et al. measured
100.5 degrees in the U.S. last year ([source](https://physics.example.org/boiling_(water))).

- Ice melts at 0 °C under standard pressure [3].
- Salt lowers the freezing point of water, which is why roads are salted (https://roads.example.gov/salt).
- See <https://wiki.example.org/Phase_diagram> for the full phase diagram.

> The triple point of water is 0.01 °C at 611.657 pascals [1][3].

| Substance | Boiling point |
|-----------|---------------|
| Water | 100 °C [1] |
| Ethanol | 78.37 °C [4] |

Use `water.boil(temp=100)` to simulate it; the [WHO guidance](https://who.example.int/water "Drinking water")
explains why boiling water for one minute makes it safe to drink.

"""

ORDINARY_REFERENCES = """Sources:
[1] https://a.example.org/1
[2] Second page - https://a.example.org/2
[3] https://a.example.org/3
[4] https://a.example.org/4
"""


def ordinary(size: int) -> str:
    """A realistic answer (headings, lists, a quote, a table, links, markers) of about ``size``
    characters, its reference list at the end."""
    repeats = max(1, (size - len(ORDINARY_REFERENCES)) // len(ORDINARY_UNIT))
    return ORDINARY_UNIT * repeats + ORDINARY_REFERENCES
