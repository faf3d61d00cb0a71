"""Package globs matched in linear time: a bit-parallel NFA, never a backtracking regex.

Syntax (KNOWLEDGE.yaml include/exclude): ``**/`` any folders (also none), ``**`` any characters including ``/``,
``*`` any characters within one segment, ``?`` one character other than ``/``; everything else is literal. A pattern
that matches a folder also matches everything inside it (``docs`` ≡ ``docs/**``).

Why not ``re``: a translated glob such as ``*a*a*a*a*a*ab`` backtracks polynomially (each ``*a`` multiplies the
time by about the path length), and ``re`` holds the GIL while it does, so one manifest stalled every request of
the process. Here every pattern of a set becomes a few bits of one Python int (a Thompson NFA, one bit per
state) and a path is read once, left to right: each character costs a constant number of int operations on
``GlobSet.width`` bits, whatever the patterns say. ``GlobSet.steps`` counts the state updates of a match so a
test can assert the bound (``max_steps``) instead of timing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

# Token kinds: a literal character, "?" (one non-slash character), "*" ([^/]*), "**" (.*), "**/" ((?:.*/)?).
_LIT, _ONE, _STAR, _ANY, _DIRS = range(5)
_STARS = (_STAR, _ANY, _DIRS)
# Steps per path character: the advance, plus the ε-closure's passes. A normalised star run is at most ``* **/ *``,
# whose ε-chain (star → group → body and past it → star → next) takes three passes.
STEPS_PER_CHAR = 4


def tokens(pattern: str) -> list[tuple[int, str]]:
    """The pattern's tokens, left to right (``**/`` before ``**`` before ``*``), runs of stars normalised."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((_DIRS, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((_STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((_ONE, ""))
            i += 1
        else:
            out.append((_LIT, pattern[i]))
            i += 1
    return _normalise(out)


def _normalise(toks: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Rewrite each run of adjacent stars to an equivalent run of at most ``* **/ *`` (so ε-chains stay short):
    ``**`` absorbs any neighbour star, ``* *`` ≡ ``*``, ``**/ **/`` ≡ ``**/`` and ``**/ * **/`` ≡ ``**/ *``."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(toks):
        if toks[i][0] not in _STARS:
            out.append(toks[i])
            i += 1
            continue
        j = i
        while j < len(toks) and toks[j][0] in _STARS:
            j += 1
        kinds = [k for k, _ in toks[i:j]]
        i = j
        if _ANY in kinds:
            out.append((_ANY, ""))
            continue
        run: list[int] = []
        for k in kinds:
            if run and run[-1] == k:
                continue  # "* *" and "**/ **/"
            if len(run) >= 2 and run[-2] == _DIRS and run[-1] == _STAR and k == _DIRS:
                continue  # "**/ * **/" ≡ "**/ *": a string the last group adds ends with "/", so the first takes it
            run.append(k)
        out.extend((k, "") for k in run)
    return out


@dataclass(frozen=True, slots=True)
class _Compiled:
    start: int
    eps1: int
    eps2: int
    loop_slash: int
    loop_other: int
    adv_slash: int
    adv_other: int
    adv_lit: dict[str, int]


def _compile(groups: list[list[str]]) -> tuple[_Compiled, list[int], int]:
    """One NFA over every pattern of every group: (automaton, accept mask per group, width in bits)."""
    start = eps1 = eps2 = loop_slash = loop_other = adv_slash = adv_other = 0
    adv_lit: dict[str, int] = {}
    group_accept: list[int] = []
    base = 0
    for patterns in groups:
        mask = 0
        for pattern in patterns:
            start |= 1 << base
            k = base
            for kind, ch in tokens(pattern):
                bit = 1 << k
                if kind == _LIT:
                    adv_lit[ch] = adv_lit.get(ch, 0) | bit
                    if ch == "/":
                        adv_slash |= bit
                elif kind == _ONE:
                    adv_other |= bit
                elif kind == _STAR:
                    eps1 |= bit
                    loop_other |= bit
                elif kind == _ANY:
                    eps1 |= bit
                    loop_other |= bit
                    loop_slash |= bit
                else:  # "**/": a group state G (ε to its body and ε past it) and a body state that loops on any
                    # character and leaves on "/"
                    eps1 |= bit
                    eps2 |= bit
                    body = bit << 1
                    loop_other |= body
                    loop_slash |= body
                    adv_slash |= body
                    k += 1
                k += 1
            end, rest = 1 << k, 1 << (k + 1)  # the pattern's end; "/…" after it (the folder's contents)
            adv_slash |= end
            loop_other |= rest
            loop_slash |= rest
            mask |= end | rest
            base = k + 3  # one spare bit: nothing ever shifts out of "rest" into the next pattern
        group_accept.append(mask)
    for ch, bits in adv_lit.items():
        if ch != "/":
            adv_lit[ch] = bits | adv_other
    return (
        _Compiled(start, eps1, eps2, loop_slash, loop_other, adv_slash, adv_other, adv_lit),
        group_accept,
        base,
    )


class GlobSet:
    """Groups of globs matched together; ``match(path)`` says, per group, whether any of its patterns matches.

    Bound: a match reads each character of the path once: one advance and at most three ε-passes, so
    ``steps ≤ (len(path) + 1) * STEPS_PER_CHAR`` (``max_steps``), every step a constant number of operations on
    ints of ``width`` bits (the total pattern length plus 3 per pattern)."""

    def __init__(self, *groups: list[str]):
        self._nfa, self._groups, self.width = _compile([list(g) for g in groups])
        self.steps = 0

    @staticmethod
    def max_steps(path: str) -> int:
        return (len(path) + 1) * STEPS_PER_CHAR

    def match(self, path: str) -> list[bool]:
        nfa = self._nfa
        eps1, eps2, adv_lit, adv_other = nfa.eps1, nfa.eps2, nfa.adv_lit, nfa.adv_other
        eps = eps1 | eps2
        s, steps = nfa.start, 0
        chars = iter(path)
        while True:
            frontier = s & eps  # ε-closure, pass by pass from the states just reached
            while frontier:
                steps += 1
                reach = ((frontier & eps1) << 1) | ((frontier & eps2) << 2)
                new = (reach | s) ^ s
                s |= new
                frontier = new & eps
            ch = next(chars, None)
            if ch is None or not s:
                break
            steps += 1
            if ch == "/":
                s = ((s & nfa.adv_slash) << 1) | (s & nfa.loop_slash)
            else:
                s = ((s & adv_lit.get(ch, adv_other)) << 1) | (s & nfa.loop_other)
        self.steps = steps
        return [bool(s & g) for g in self._groups]
