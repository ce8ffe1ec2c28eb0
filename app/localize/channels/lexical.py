"""Lexical similarity: BM25 between the failure text and each element's code tokens.

Tokenizing is linear in the text length whatever its shape (no backtracking patterns over
unbounded runs), since logs and scripts can hold single lines of megabytes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

BM25_K1 = 1.2
BM25_B = 0.75
MAX_QUERY_CHARS = 20_000  # the failure text searched for: its head says what failed
# Words every error message uses; they say nothing about where the fault is.
QUERY_STOPWORDS = frozenset(
    {
        *("error", "errors", "exception", "failed", "fail", "failure", "test", "tests", "traceback", "line"),
        *("file", "most", "recent", "call", "last", "expected", "got", "assert", "assertion", "object"),
        *("has", "no", "py"),
    }
)
STOPWORDS = frozenset(
    {
        *("self", "cls", "def", "return", "if", "elif", "else", "for", "while", "in", "not", "and", "or"),
        *("is", "none", "true", "false", "import", "from", "as", "with", "try", "except", "finally", "raise"),
        *("pass", "break", "continue", "class", "lambda", "yield", "assert", "global", "nonlocal", "the"),
        *("to", "of", "a", "an", "on", "at", "by", "be", "it", "this", "that"),
    }
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|\d{2,}")
_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_DOTTED = re.compile(r"[\w.]+")
_EXCEPTION_SUFFIX = re.compile(r"(?:Error|Exception|Failure|Warning|Exit|Interrupt|Cancel|Fail|Skip)$")


def code_tokens(text: str) -> list[str]:
    """Lower-cased words of code or prose: identifiers split on snake_case and camelCase."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        for part in _WORD_PART.findall(word) or [word]:
            token = part.lower()
            if len(token) >= 2 and token not in STOPWORDS:
                tokens.append(token)
    return tokens


def query_tokens(message: str) -> list[str]:
    """Error-message words worth searching for: no exception class names, no generic words."""
    words = [
        word for word in _DOTTED.findall(message[:MAX_QUERY_CHARS]) if not _EXCEPTION_SUFFIX.search(word)
    ]
    return [token for token in code_tokens(" ".join(words)) if token not in QUERY_STOPWORDS]


def bm25(documents: Sequence[Sequence[str]], query: Iterable[str]) -> list[float]:
    """Okapi BM25 of each document for ``query`` (query term repeats count once)."""
    count = len(documents)
    if count == 0:
        return []
    lengths = [len(doc) for doc in documents]
    average = sum(lengths) / count or 1.0
    frequencies = [Counter(doc) for doc in documents]
    document_frequency = Counter(term for freq in frequencies for term in freq)
    scores = []
    terms = set(query)
    for freq, length in zip(frequencies, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = freq.get(term, 0)
            if tf == 0:
                continue
            df = document_frequency[term]
            idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
            score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
        scores.append(score)
    return scores


def normalized_bm25(documents: Sequence[Sequence[str]], message: str) -> list[float]:
    raw = bm25(documents, query_tokens(message))
    top = max(raw, default=0.0)
    return [value / top if top > 0 else 0.0 for value in raw]
