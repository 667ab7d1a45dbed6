r"""Patterns on which Python versions could disagree, for ``test_regex_versions.py``.

Each is run through :func:`flowc.regex.refusal` under the running interpreter and the
verdict (accepted, or the message, offset and length of the refusal) compared with
``regex_corpus.expected.json`` beside this file: one file for every supported Python, so
a version on which flowc accepts or refuses a pattern differently, or words it
differently, fails. ``pytest --update-golden tests/hostile/test_regex_versions.py``
rewrites the file from the running interpreter; run the test under each version after.

Where CPython 3.11, 3.12 and 3.13 themselves differ (``re.compile``), the comment says how.
"""

from __future__ import annotations


def _nested(opening: str, depth: int, inner: str = "a", closing: str = ")") -> str:
    return opening * depth + inner + closing * depth


CORPUS: list[str] = [
    # plain, valid everywhere
    "", "a", "abc", "a|b", "^a$", r"\Aa\Z", r"(?s)a.b", r"(?m)^a$", "[a-z]+", "[^a]", "[]a]",
    "[a-]", r"[\b]", r"\d\w\s\D\W\S", r"\b\B", r"\x41\u0041\U00000041\101\0", r"\ud800",
    r"[\ud800-\udfff]", "{", "a{}", "a{ 1}", "a{1 }", "a{0x10}", "(?:)*", "()+", "(?P<a>)",
    "(?P<é>a)", "(?P<a1>a)", "[[:alpha:]]", "[a&&b]", "[a||b]", "[a~~b]", "[[a]", "$a", "a$",
    r"\Z$", "a|$", "(?m)a$b",
    # repeats: `{,n}` (3.11+), lazy, counts at and over flowc's limit and over Python's own
    "a{,3}", "a{,}", r"\w{,2}", "a*?", "a+?", "a??", "a{2,3}?", "a{1000}", "a{1001}", "a{,1001}",
    "a{1000,}", "(?:a{100}){100}", "(?:a{10}){10}", "a{4294967295}", "a{4294967296}",
    "a{3,2}", "a**", "a{2}{3}", "x{1}{2}", "{1}", "a|*", "^*", r"\A*", r"\b+",
    # possessive quantifiers and atomic groups (3.11+)
    "a*+", "a++", "a?+", "a{1,2}+", "a{2}+", "(?>a)", "(?>ab)c", "x(?>)",
    # lookaround, empty ones included (3.13 parses an empty negative one as FAILURE)
    "x(?=a)", "x(?!a)", "(?<=a)b", "(?<!a)b", "(?=)", "(?!)", "a(?!)", "(?<=)", "(?<!)",
    "a(?<!)b(?!)", "(?:(?!))", "(?i:(?<!))", "(?<=a+)b", "(?<=a|bc)d",
    # backreferences and conditionals; 3.11 also takes a conditional's group as `+1`,
    # ` 1`, `1_0` or non-ASCII digits (with a DeprecationWarning), 3.12 and 3.13 refuse them
    r"(a)\1", r"\1", r"(a)\2", r"\8", r"\08", r"\400", r"[\400]", r"((((((((((a))))))))))\10",
    "(?P<n>a)(?P=n)", "(?P=1)", "(?P<a>x)(?P=b)", "(a)(?(1)b|c)", "(?P<n>a)(?(n)b)",
    "(a)(?(+1)a)", "(a)(?( 1)a)", "(a)(?(1 )a)", "(a)(?(0_1)a)", "(a)(?(\u0661)a)",
    "(?(\u0661)a)", "(?(-1)a)", "(?(1a)b)", "(?()a)", "(?(1", "(a)(?(1)a|b|c)",
    r"\8(?(+1)a)", "((?(+1)a)",
    # group names
    "(?P<1>a)", "(?P<a-b>a)", "(?P<n>a)(?P<n>b)", "(?'a'b)", "(?<n>a)",
    # inline flags: at the start only (3.11+); `t` (TEMPLATE) is a flag on 3.11 and 3.12
    # (deprecated) and unknown on 3.13
    "(?i)a", "a(?i)b", "(?x)a b", "a(?x)b", "xxxxxxxxxx(?x)", "(?u)a", "(?L)a", "(?aL)a",
    "(?au)a", "(?-i:a)", "(?i-i:a)", "(?ii)", "(?-)", "(?-a:x)", "(?a-u:x)", "(?i)(?m)",
    "(?x)(?i)a", "(?aiLmsux)", "(?aimsux)", "(?i:(?-i:a))", "(?i", "(?", "(?<", "(?P",
    "(?^:a)", "(?a:\\w)", "(?u:\\w)", "(?L:\\w)", "(?t)", "(?T)", "(?it)", "(?ti)", "(?t:a)",
    "(?-t:a)", "(?i-t:a)", "(?t)a*", "(?i:a(?t))", "(?Lt)", "(?at)", "(?x) (?t)",
    # verbose mode: whitespace and comments are not pattern, classes keep their spaces
    "(?x)a b # c", "(?x)# c\na", r"(?x)\ ", "(?x)[ ]", "(?x)a#(?t)\nb", "(?x)a#(((\nb",
    "(?x:a #(?t)\n)b", "(?x:a)#(?t)", "(?x)(?-x:#(?t))", "(?x)[#(?t)]", "a#(?t)",
    # word boundaries of both kinds
    r"\b(?a:\b)", r"(?a)\b\b", r"\b(?u:\b)",
    # escapes each version refuses alike
    r"\p{L}", r"\z", r"\x", r"\u12", r"\U00110000", r"\c", r"\e", r"\g<1>", r"\Q", r"\p",
    r"\X", r"\R", r"\h", r"\K", r"\G", r"\o{12}", r"\x{41}", "\\", "[\\",
    # \N{...}: each version knows the names of its own Unicode (3.11: 14.0, 3.12: 15.0,
    # 3.13: 15.1): WIRELESS, U+0CF3 and U+31350 are 15.0, U+2EBF0 15.1; flowc refuses them
    # on every version, as 3.11 does. LATIN CAPITAL LETTER GHA is an alias, the one with
    # MACRON AND GRAVE a named sequence (two characters: not valid in a pattern)
    r"\N{LATIN SMALL LETTER A}", r"[\N{LATIN SMALL LETTER A}]", r"\N{latin small letter a}",
    r"\N{WIRELESS}", r"[\N{WIRELESS}]", r"a\N{WIRELESS}(", r"\N{KANNADA SIGN COMBINING ANUSVARA ABOVE RIGHT}",
    r"\N{CJK UNIFIED IDEOGRAPH-31350}", r"\N{CJK UNIFIED IDEOGRAPH-2EBF0}",
    r"\N{CJK UNIFIED IDEOGRAPH-4E00}",
    r"\N{LATIN CAPITAL LETTER GHA}", r"\N{LATIN CAPITAL LETTER A WITH MACRON AND GRAVE}",
    r"\N{NOPE}", r"\N", r"\N{}", r"\N{LATIN", r"(?x)#\N{WIRELESS}", r"\\N{WIRELESS}",
    r"\U0001f6dc",
    # malformed each version refuses alike
    "(", ")", "[", "[]", "[^]", "(?#comment", "[z-a]", r"[a-\d]", "[a--b]", "(a", "a)",
    # nesting: flowc allows 50 levels on every version (3.11's parser and flowc's
    # translation used to run out of stack at different depths on each version)
    _nested("(", 49), _nested("(", 50), _nested("(", 51), _nested("(?:", 50),
    _nested("(?:", 51), _nested("(?i:", 51), _nested("(?=", 51), _nested("(?P<g>", 51, "a"),
    _nested("(?:a|", 50, "b", ")*"), _nested("(?i:a|", 50, "b", ")*"),
    _nested("(?:a|", 50, "b", "){1,2}"), _nested("(a|", 50, "b", ")+?"),
    _nested("(", 300), _nested("(?:", 300), _nested("(", 1000), "(" * 300 + "a",
    "[" + "(" * 300 + "]", "\\(" * 300, "(?#" + "(" * 300 + ")", "(?x)#" + "(" * 300,
    "(?x)" + "(" * 51 + "#" + ")" * 51, "(?P=" + "(" * 300 + ")",
]
