"""The code's plain-Unicode formulas as math on the generated pages.

Docstrings, ``#:`` field comments, observation and ``info`` docs and suite descriptions write
their formulas in plain Unicode, readable in a terminal and in ``help()``: ``Σ_k N_k / T``,
``T_k^dft``, ``L = V_eff·(⌈log2 V⌉ + Q)``, ``tanh((g_ul [dB] + 115)/15)``, ``21^20``. The
generated reference pages (``docs/_ext/msenv_docs.py``, ``msenv_leaderboard.py``) pass their
Markdown through :func:`markdown_math`, which finds each such formula in the text — a run of
words around a subscript, superscript or mathematical sign — and writes it as ``$…$`` TeX for
MathJax; a configuration field's name (``ref_gain_db``, ``acc_len``) outside a formula becomes
code. Code blocks, code spans, HTML tags, link targets and math already written are left alone.
The browser test (``tests/test_browser.py``) holds these pages to "no formula in plain text".
"""

from __future__ import annotations

import re

GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon", "κ": r"\kappa",
         "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau",
         "φ": r"\varphi", "ω": r"\omega", "Δ": r"\Delta", "Γ": r"\Gamma", "Φ": r"\Phi", "Ω": r"\Omega",
         "θ": r"\theta", "η": r"\eta", "ξ": r"\xi", "χ": r"\chi", "ψ": r"\psi", "ζ": r"\zeta"}
SYMBOLS = {"²": "^2", "³": "^3", "Σ": r"\sum ", "Π": r"\prod ", "·": r"\cdot ", "×": r"\times ", "−": "-",
           "≤": r"\le ", "≥": r"\ge ", "≡": r"\equiv ", "≈": r"\approx ", "∈": r"\in ", "⌈": r"\lceil ",
           "⌉": r"\rceil ", "⌊": r"\lfloor ", "⌋": r"\rfloor ", "…": r"\dots ", "→": r"\to ", "~": r"\sim ",
           "±": r"\pm ", "∝": r"\propto ", "√": r"\sqrt ", "∞": r"\infty ", "½": r"\tfrac12 ", "%": r"\%", "#": r"\#",
           "&": r"\&", "{": r"\{", "}": r"\}", "∣": r"\mid "}
FUNCTIONS = {"tanh": r"\tanh", "exp": r"\exp", "log": r"\log", "ln": r"\ln", "min": r"\min", "max": r"\max",
             "sin": r"\sin", "cos": r"\cos", "log2": r"\log_2", "log10": r"\log_{10}", "J0": "J_0"}
#: short words that belong to a formula around them (units, bounds), not to the prose
MATH_WORDS = {"lo", "hi", "low", "high", "dB", "dBm", "Hz", "W", "U", "CN", "E", "P", "mod"}
#: single letters that are English words, never a formula's symbol
ENGLISH_LETTERS = {"a", "A", "I"}
OPERATORS = set("=+−-×/·~<>≤≥≡≈→∈±∝…") | {"..", "->"}
#: a sign that makes a word a formula by itself
MATH_SIGNS = set("ΣΠ⌈⌉⌊⌋∈≤≥≡∝√±")
_SUBSUP = re.compile(r"[A-Za-z0-9\u0370-\u03FF)\]][_^][A-Za-z0-9\u0370-\u03FF{(−-]")
#: a name of the code (a field, a key) rather than a symbol: ``ref_gain_db``, ``acc_len``, ``MSENV_TRACES_DIR``
_IDENT = re.compile(r"\$?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
_PROTECT = re.compile(r"(```.*?```|``[^`\n]+``|`[^`\n]*`|\$\$.*?\$\$|(?<!\\)\$[^$\n]+\$|<[^>\n]+>|\]\([^)\s]*\))", re.S)


def _fields() -> frozenset[str]:
    """The configuration fields of the code (``k_max``, ``p_dl_dbm``): names, never symbols."""
    global _FIELDS
    if _FIELDS is None:
        try:
            from msenv.config import FIELD_ORDER
            from msenv.envs.cells import CELL_FIELDS

            _FIELDS = frozenset(FIELD_ORDER) | frozenset(CELL_FIELDS)
        except ImportError:  # the module on its own, without msenv on the path
            _FIELDS = frozenset()
    return _FIELDS


_FIELDS: frozenset[str] | None = None


def is_identifier(word: str) -> bool:
    """A code name with underscores (a config field, an ``info`` key), not a subscripted symbol:
    its first part has three or more characters, or it has three or more parts, or it is an
    environment variable (``$NAME``) — ``ref_gain_db``, ``acc_len``, ``k_max_x``; not ``T_k``,
    ``g_ul``, ``N_SAA``."""
    if not _IDENT.fullmatch(word):
        return False
    if word in _fields():
        return True
    parts = word.lstrip("$").split("_")
    if parts[0] in ("max", "min") and len(parts) == 2 and len(parts[1]) == 1:  # max_k: a maximum over k
        return False
    return word.startswith("$") or len(parts[0]) >= 3 or len(parts) >= 3


def is_code_name(word: str) -> bool:
    """A name of the code written in the prose: an identifier (:func:`is_identifier`), a dotted
    name with an underscore (``env.oracle_context``), a path or file with one
    (``$MSENV_TRACES_DIR/combined_<set>.jsonl``)."""
    if is_identifier(word):
        return True
    if "/" in word and all(p in _fields() for p in word.split("/")):  # two fields: k_range/k_max
        return True
    if "=" in word and is_identifier(word.split("=")[0]):  # a setting: channel_dynamics="iid"
        return True
    if "_" in word and re.fullmatch(r"[\w.+-]+", word) and re.search(r"[A-Za-z]{2,}-|-[A-Za-z]{2,}", word):
        return True  # a platform string: Linux-6.18.44-x86_64-with-glibc2.36
    if "_" in word and re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", word):
        return True
    return "_" in word and (word.startswith("$") or "&lt;" in word or "<" in word
                            or bool(re.search(r"\.(?:jsonl?|npz|csv|py|md)\b", word)))


def _pieces(word: str) -> list[str]:
    return [p for p in re.split(r"[()\[\]{},;:.⌈⌉⌊⌋!?'\"]+", word) if p]


def _is_glue(word: str) -> bool:
    """A word that may stand inside a formula: an operator, a number, a symbol, a unit, a function."""
    if word in OPERATORS:
        return True
    pieces = _pieces(word)
    if not pieces:
        return bool(word) and set(word) <= set("()[]{},⌈⌉⌊⌋")
    for p in pieces:
        for q in re.split(r"([=+−×/·~<>≤≥≡≈→∈±∝…-])", p):
            if not q or q in OPERATORS:
                continue
            if re.fullmatch(r"\d+(?:\.\d+)?", q) or q in FUNCTIONS or q in MATH_WORDS:
                continue
            if len(q) == 1 and q not in ENGLISH_LETTERS and (q.isalpha() or q in "′'"):
                continue
            q = q.rstrip("²³′")
            if not q or all("\u0370" <= c <= "\u03FF" for c in q):
                continue
            if re.fullmatch(r"\d+[\u0370-\u03FF]", q) or (len(q) <= 3 and q.isalpha()
                                                          and any("\u0370" <= c <= "\u03FF" for c in q)):
                continue  # 2π, Δt
            return False
    return True


def _bare(word: str) -> str:
    return word.strip(",;:.").strip("()[]\"'").rstrip(",;:.")


#: a mathematical function applied: ``tanh((β [dB] + 115)/15)`` is a formula without a subscript
_CALL = re.compile(r"^[(\[]*(?:" + "|".join(("tanh", "exp", "log", "ln", "sqrt")) + r")\(")


def _is_core(word: str) -> bool:
    """A word that is a formula: a subscript or superscript, or a mathematical sign."""
    if is_code_name(_bare(word)):
        return False
    return bool(_SUBSUP.search(word)) or any(c in MATH_SIGNS for c in word) or bool(
        re.search(r"\w·\w|\w·\(|\)·\w", word)) or bool(_CALL.match(word))


def _balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0, "⌈": 0, "⌊": 0}
    close = {")": "(", "]": "[", "⌉": "⌈", "⌋": "⌊"}
    for c in text:
        if c in depth:
            depth[c] += 1
        elif c in close:
            depth[close[c]] -= 1
            if depth[close[c]] < 0:
                return False
    return not any(depth.values())


def _group(text: str, i: int, open_: str, close: str) -> int:
    """The index just past the bracket that closes the one at ``text[i]``."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def tex(formula: str) -> str:
    """A plain-Unicode formula as TeX (MathJax's subset): ``T_k^dft`` → ``T_k^{\\mathrm{dft}}``."""
    out, i, n = [], 0, len(formula)
    while i < n:
        c = formula[i]
        if c in "_^" and i + 1 < n:
            nxt = formula[i + 1]
            if nxt == "{":
                end = _group(formula, i + 1, "{", "}")
                out.append(c + "{" + tex(formula[i + 2:end - 1]) + "}")
            elif nxt == "(":
                end = _group(formula, i + 1, "(", ")")
                out.append(c + "{" + tex(formula[i + 1:end]) + "}")
            else:
                m = re.match(r"[−-]?[A-Za-z0-9\u0370-\u03FF]+(?:,[A-Za-z]+)*", formula[i + 1:])
                if not m:
                    out.append(r"\_" if c == "_" else r"\hat{}")
                    i += 1
                    continue
                arg, end = m.group(0), i + 1 + len(m.group(0))
                if len(arg) == 1 or re.fullmatch(r"[−-]?\d+", arg) or all("\u0370" <= ch <= "\u03FF" for ch in arg):
                    out.append(c + "{" + tex(arg) + "}")
                elif re.fullmatch(r"[A-Za-z]{2,}(?:,[A-Za-z]+)*", arg):
                    out.append(c + r"{\mathrm{" + arg + "}}")
                else:
                    out.append(c + "{" + tex(arg) + "}")
            i = end
            continue
        m = re.match(r"\$?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+", formula[i:])
        if m and is_identifier(m.group(0)) and (i == 0 or not formula[i - 1].isalnum()):
            out.append(r"\mathtt{" + m.group(0).replace("$", r"\$").replace("_", r"\_") + "}")
            i += len(m.group(0))
            continue
        m = re.match(r"[A-Za-z]+\d*", formula[i:])
        if m and (i == 0 or not formula[i - 1].isalnum()):
            word = m.group(0)
            if word in FUNCTIONS:
                out.append(FUNCTIONS[word] + " ")
            elif re.fullmatch(r"[A-Za-z]\d*", word):
                out.append(word if len(word) == 1 else f"{word[0]}_{{{word[1:]}}}")
            else:
                out.append(r"\mathrm{" + word + "}")
            i += len(word)
            continue
        if formula.startswith("..", i):
            out.append(r"\dots ")
            i += 2
            continue
        out.append(GREEK.get(c, SYMBOLS.get(c, c)) + (" " if c in GREEK else ""))
        i += 1
    return "".join(out).replace("  ", " ")


#: a formula longer than this (characters of its plain text) is set as several pieces, cut after
#: its top-level operators, so that a narrow table cell can wrap it between them (MathJax 3 does not
#: break inline math)
LONG_FORMULA = 24


def _math(span: str) -> str:
    """A formula as ``$…$``; a long one as pieces ``$a =$ $b +$ $c$`` (see :data:`LONG_FORMULA`)."""
    if len(span) <= LONG_FORMULA:
        return "$" + tex(span).strip() + "$"
    pieces, current, depth = [], [], 0
    for w in span.split(" "):
        current.append(w)
        depth += sum(w.count(o) for o in "([{⌈⌊") - sum(w.count(c) for c in ")]}⌉⌋")
        if depth == 0 and w in OPERATORS and len(" ".join(current)) > 2:
            pieces.append(" ".join(current))
            current = []
    if current:
        pieces.append(" ".join(current))
    if len(pieces) > 1 and not all(_balanced(p) for p in pieces):
        pieces = [span]
    return " ".join("$" + tex(p).strip() + "$" for p in pieces)


def _convert_words(words: list[str]) -> str:
    """The words of a run that holds a formula, split where a word ends a clause (``,``, ``:``,
    ``;`` outside brackets); each part with a formula word in it as ``$…$``."""
    parts, current, depth = [], [], 0
    for w in words:
        current.append(w)
        depth += sum(w.count(o) for o in "([⌈⌊") - sum(w.count(c) for c in ")]⌉⌋")
        if depth <= 0 and w[-1] in ",;:":
            parts.append(current)
            current, depth = [], 0
    if current:
        parts.append(current)
    return " ".join(_convert_part(p) if any(_is_core(w) for w in p) else " ".join(p) for p in parts)


def _convert_part(words: list[str]) -> str:
    """One clause of a run: as ``$…$`` when its brackets balance, else each formula word on its own."""
    text = " ".join(words)
    lead, trail = "", ""
    while text and text[-1] in ",;:." and not re.search(r"\d\.$", text[-2:]):
        trail, text = text[-1] + trail, text[:-1]
    for o, c in (("(", ")"), ("[", "]")):
        if text.startswith(o) and text.count(o) > text.count(c):
            lead, text = lead + o, text[1:]
        if text.endswith(c) and text.count(c) > text.count(o):
            trail, text = c + trail, text[:-1]
    while text and text[-1] in ",;:.":
        trail, text = text[-1] + trail, text[:-1]
    if _balanced(text) and text:
        return lead + _math(text) + trail
    return " ".join(_single(w) for w in words)


def _single(word: str) -> str:
    if not _is_core(word):
        return word
    m = re.match(r"^([(\[]*)(.*?)([)\],;:.]*)$", word)
    lead, body, trail = m.groups()
    while body and not _balanced(body) and trail and trail[0] in ")]":
        body, trail = body + trail[0], trail[1:]
    return lead + _math(body) + trail if body and _balanced(body) else word


def _code_names(word: str) -> str:
    """A code name in the prose (``vocab_size``, ``env.oracle_context``) as a code span, with the
    quotes of a quoted one."""
    m = re.match(r"^([(\[]*\"?)(.*?)(\"?[)\],;:.]*)$", word)
    lead, body, trail = m.groups()
    if body.count('"') % 2 and trail.startswith('"'):  # name="value": the closing quote is the value's
        body, trail = body + '"', trail[1:]
    if body and is_code_name(body.rstrip(",;:.")):
        if lead.endswith('"') and trail.startswith('"'):
            lead, body, trail = lead[:-1], f'"{body}"', trail[1:]
        return f"{lead}`{body}`{trail}"
    return word


def text_math(text: str) -> str:
    """Plain text (no code, tags or math in it) with its formulas as ``$…$`` and its code names as code."""
    parts = re.split(r"(\s+|\\?\||\*\*)", text)
    words = [p for p in parts]
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if not w or w.isspace() or w in ("|", "\\|", "**"):
            out.append(w)
            i += 1
            continue
        if _is_core(w) or _is_glue(w):
            j, run, has_core = i, [], False
            while j < len(words) and (words[j].isspace() or (words[j] and (_is_core(words[j]) or _is_glue(words[j])))):
                if not words[j].isspace():
                    run.append(j)
                    has_core = has_core or _is_core(words[j])
                j += 1
            if has_core:
                while run and not _is_core(words[run[-1]]) and words[run[-1]] in OPERATORS:
                    run.pop()
                while run and not _is_core(words[run[0]]) and words[run[0]] in OPERATORS:
                    run.pop(0)
                first, last = run[0], run[-1]
                out += [_code_names(x) if not x.isspace() else x for x in words[i:first]]
                out.append(_convert_words([words[k] for k in run if not words[k].isspace()]))
                i = last + 1
                continue
        out.append(_code_names(w))
        i += 1
    return "".join(out)


#: the HTML elements a generated page may write; any other ``<word>`` in its text is a placeholder
#: of a path or a command (``combined_<set>.jsonl``), which a browser would swallow as a tag
HTML_TAGS = {"a", "b", "br", "code", "div", "em", "i", "img", "kbd", "p", "pre", "span", "strong", "sub", "sup",
             "table", "td", "th", "tr", "wbr", "details", "summary", "abbr", "small"}
#: a word holding a placeholder in angle brackets (``$DIR/combined_<set>.jsonl``, ``runs/ppo-<id>``)
_PLACEHOLDER = re.compile(r"(?<![`\w])([^\s`<>()]*<([A-Za-z][\w-]*)>[^\s`<>(),;]*)")
#: an arXiv identifier in the text, made a link to its abstract
_ARXIV = re.compile(r"(?<![\[/\w])arXiv (\d{4}\.\d{4,5})(?![\w\]])")


def _placeholders(text: str) -> str:
    """Each word with an unknown ``<tag>`` in it as a code span (a path with a placeholder)."""
    def code(m: re.Match) -> str:
        return m.group(0) if m.group(2).lower() in HTML_TAGS else f"`{m.group(1).rstrip('.')}`" + (
            "." if m.group(1).endswith(".") else "")
    return _PLACEHOLDER.sub(code, text)


def _prepare(md: str) -> str:
    """Outside code: placeholders as code spans and arXiv identifiers as links."""
    parts = re.split(r"(```.*?```|`[^`\n]*`)", md, flags=re.S)
    return "".join(part if k % 2 else _ARXIV.sub(r"[arXiv \1](https://arxiv.org/abs/\1)", _placeholders(part))
                   for k, part in enumerate(parts))


def markdown_math(md: str) -> str:
    """A generated Markdown page with every plain-Unicode formula of its text as math (see the
    module's doc); code, HTML tags, link targets and existing math unchanged. A path with a
    placeholder (``combined_<set>.jsonl``) becomes code, and an arXiv identifier a link."""
    md = _prepare(md)
    out = []
    for k, piece in enumerate(_PROTECT.split(md)):
        if k % 2:
            out.append(piece)
        else:
            out.append("\n".join(text_math(line)
                                  if not (line.startswith(("```", ":::")) or re.fullmatch(r"\(\S+\)=", line)) else line
                                  for line in piece.split("\n")))
    return "".join(out)
