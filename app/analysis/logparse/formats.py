"""Prefix formats of log lines: which one a log uses, and the line with its prefix stripped.

Logs are what users paste: any logging prefix (detected from the log or configured), wrapped by
transports (syslog, CI timestamps), coloured by terminals. Every built-in pattern is anchored and
has no nested quantifiers; patterns from users are compiled with RE2, which runs in linear time.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from itertools import chain, compress, count, filterfalse, islice, repeat
from operator import add, and_, attrgetter, eq, ge, is_, is_not, mul, ne, not_, or_, rshift, sub
from typing import Any, NamedTuple, Protocol

# --------------------------------------------------------------------------------------------
# Prefix formats
# --------------------------------------------------------------------------------------------

_LEVEL = (
    r"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARNI|WARN|ERROR|ERR|CRITICAL|CRITI|CRIT|FATAL|SEVERE|EXCEPTION)"
)
_LEVEL_ANY_CASE = f"(?i:{_LEVEL[3:-1]})"
_PY_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_DATE = r"(?:\d{4}-\d\d-\d\d|\d{4}/\d\d/\d\d|\d\d/\d\d/\d{4})"
_ISO_DATE = r"\d{4}-\d\d-\d\d"
# Reporters redact times as 01:xx:xx; accept that where a time is expected.
_TIME = r"[\dxX]{2}:[\dxX]{2}:[\dxX]{2}(?:[.,][\dxX]+)?"
_ZONE = r"(?:Z|[+-]\d\d:?\d\d)?"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

# (name, pattern). Groups: msg (required), level, sig (the prefix minus its timestamp: lines of
# one logging call share it). Order = preference when several formats fit equally well.
_FORMATS: tuple[tuple[str, str], ...] = (
    # 2017-09-16 16:38:59,012 download         L0066 INFO | msg   ([stdlog] and a logger name optional);
    # newer releases drop the line number: 2023-02-08 10:53:48,717 avocado.test INFO | msg
    (
        "avocado",
        rf"(?:\[stdlog\] )?{_DATE} {_TIME} +"
        rf"(?P<sig>(?:(?:\S+ +)??\S+ +L\d+|avocado\.[\w.]+) +(?P<level>{_LEVEL}) *)\| ?(?P<msg>.*)",
    ),
    # avocado (nrunner) debug.log stream tags around what the test printed: [stdout] msg
    ("avocado-stream", r"\[(?:stdout|stderr|stdlog)\] ?(?P<msg>.*)"),
    # tempest / oslo.log: 2015-07-31 09:37:44,661 17897 INFO [tempest.x] msg
    #                     2015-07-31 09:37:44.661 17897 ERROR nova.compute.manager [req-1 - -] msg
    (
        "oslo",
        rf"{_DATE} {_TIME} +(?P<sig>\d+ +(?P<level>{_LEVEL}) +"
        r"(?:\[[^\]\s]+\]|[A-Za-z_][\w.]*(?: \[[^\]]*\])?)) ?(?P<msg>.*)",
    ),
    # sonic-mgmt live log: 08:39:25 init._fixture_func_decorator L0073 ERROR | msg
    ("sonic", rf"(?:{_DATE} )?{_TIME} +(?P<sig>\S+ +(?:L\d+ +)?(?P<level>{_LEVEL}) *)\| ?(?P<msg>.*)"),
    # pytest log_cli_format "%(asctime)s [%(levelname)8s] %(message)s (%(filename)s:%(lineno)s)"
    ("pytest-live-bracket", rf"(?:{_DATE}[ T])?{_TIME} +\[ *(?P<level>{_LEVEL_ANY_CASE}) *\] (?P<msg>.*)"),
    # %(asctime)s - %(name)s - %(levelname)s - %(message)s   (name optional)
    ("asctime", rf"{_DATE}[ T]{_TIME} +- +(?P<sig>(?:\S+ +- +)?(?P<level>{_LEVEL})) +-(?: (?P<msg>.*)|$)"),
    # pytest captured/live log default: "%(levelname)-8s %(name)s:%(filename)s:%(lineno)d %(message)s"
    ("pytest-captured", rf"(?P<sig>(?P<level>{_LEVEL}) +[^\s:]+:[^\s:]+:\d+)(?: (?P<msg>.*))?"),
    # Python logging's default: LEVEL:name:msg
    ("python", rf"(?P<sig>(?P<level>{_PY_LEVEL}):[^\s:]+):(?P<msg>.*)"),
    ("bracket", rf"\[ *(?P<level>{_LEVEL_ANY_CASE}) *\]:? ?(?P<msg>.*)"),
    # Jan  2 03:04:05 host prog[123]: msg   (also with an RFC 3339 timestamp)
    (
        "syslog",
        rf"(?:{_MONTH} +\d{{1,2}} {_TIME}|{_ISO_DATE}T{_TIME}{_ZONE}) \S+ "
        rf"(?P<sig>[^\s:\[]+)(?:\[\d+\])?: ?(?P<msg>.*)",
    ),
    # pytest live log with a time-only date format: 10:00:00 INFO msg
    ("pytest-live", rf"(?:{_DATE}[ T])?{_TIME} +(?P<level>{_LEVEL}):?(?: +(?P<msg>.*))?"),
    # 2024-05-01T10:00:00.123Z [LEVEL] msg   (CI runners; Jenkins' timestamper brackets it)
    (
        "iso",
        rf"\[?{_ISO_DATE}[T ]{_TIME}{_ZONE}\]?(?:[ \t](?: *\[? *(?P<level>{_LEVEL}) *\]?:? +)?(?P<msg>.*)|$)",
    ),  # avocado's console: ERROR| msg   (the level cut to five characters)
    ("avocado-console", rf"(?P<level>{_LEVEL}) ?\| ?(?P<msg>.*)"),
)

KNOWN_FORMATS: tuple[str, ...] = tuple(name for name, _ in _FORMATS)
"""Names accepted by ``parse_log(prefix_format=...)`` besides a regex; ``plain`` strips nothing."""

_ALL = tuple(range(len(_FORMATS)))
_LIVE_BRACKET = KNOWN_FORMATS.index("pytest-live-bracket")
_TRANSPORTS = frozenset({KNOWN_FORMATS.index("syslog"), KNOWN_FORMATS.index("iso")})

# Patterns are compiled on first use: compiling every format's alternation at import would slow
# every start, and most runs need a few of them.


@cache
def _single(i: int) -> re.Pattern[str]:
    return re.compile(_FORMATS[i][1])


@cache
def _combined(order: tuple[int, ...]) -> re.Pattern[str]:
    """One alternation trying the formats in ``order``: a single C-level match per line."""
    return re.compile(_alternation(order))


def _alternation(order: tuple[int, ...]) -> str:
    alternatives = []
    for i in order:
        pattern = _FORMATS[i][1]
        for group in ("msg", "level", "sig"):
            pattern = pattern.replace(f"(?P<{group}>", f"(?P<{group}{i}>")
        alternatives.append(f"(?P<f{i}>{pattern})")
    return "|".join(alternatives)


def _preferring(detected: int | None) -> re.Pattern[str]:
    """The alternation preferring the detected format, then the others in their default order."""
    if detected is None:
        return _combined(_ALL)
    return _combined((detected, *(j for j in _ALL if j != detected)))


@cache
def _inner() -> re.Pattern[str]:
    return _combined(tuple(i for i in _ALL if i not in _TRANSPORTS))


_LEVEL_ALIASES = {
    "WARN": "WARNING",
    "WARNI": "WARNING",
    "ERR": "ERROR",
    "CRIT": "CRITICAL",
    "CRITI": "CRITICAL",
}
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL", "SEVERE", "EXCEPTION"})
_LOCATION_TAIL = re.compile(r"[^\s()]+:\d+")


class _Prefix(NamedTuple):
    """What the prefix of one line said."""

    fmt: int  # index into _FORMATS, -1 for a configured regex
    level: str | None
    sig: str  # the prefix less its timestamp: lines of one logging call share it
    body: str  # the line with the prefix stripped
    layered: bool = False  # a transport prefix (syslog, CI timestamps) around an application one
    bare: bool = False  # a transport prefix around nothing recognisable: may continue a message


def _offset_type(length: int) -> str:
    """The smallest signed array type holding offsets into a text of ``length`` characters."""
    return "i" if length < 2**31 - 2 else "q"  # offsets run to length + 1


class _PrefixColumns:
    """The prefix of every line as columns over the log's text; indexing gives ``_Prefix | None``.

    One object per line would hold several times the log's size: most lines need only where
    their message starts and ends and a level and signature code. Lines of transports, of
    pytest's bracket format and of user patterns, and lines the parser rewrites, keep a whole
    ``_Prefix``. ``special`` marks the lines whose prefix is absent or whose message might be
    more than a message (the parser's full checks run on those). ``shape``: for lines read by
    their shape, an index into ``shapes``, their message's shape (every digit made 0); else -1.
    """

    __slots__ = ("count", "fmt", "level", "level_codes", "levels", "sig_codes", "signature", "sigs")
    __slots__ += ("lazy", "lazy_codes", "shape", "shape_codes", "shapes", "special", "start", "stop", "text")
    __slots__ += ("whole",)

    def __init__(self, text: str, n: int) -> None:
        self.text = text
        self.fmt = bytearray(n)  # 0: no prefix; 1: in ``whole``; else the format + 2
        self.start = self.stop = self.signature = array("i")
        self.level = bytearray()  # index into ``levels``: a byte, so runs of lines copy in C
        self.sigs: list[str] = []
        self.levels: list[str | None] = [None]
        self.level_codes: dict[str | None, int] = {None: 0}
        self.sig_codes: dict[str, int] = {}
        self.whole: dict[int, _Prefix] = {}
        self.shape = array("i")
        self.shapes: list[str] = []
        self.shape_codes: dict[str, int] = {}
        # a negative signature code -k: the signature is the line's text over lazy[k - 1], a span
        # from the message's start, read when first asked for (most lines' never are)
        self.lazy: list[tuple[int, int]] = []
        self.lazy_codes: dict[tuple[int, int], int] = {}
        self.count = 0  # lines with a prefix
        self.special = bytearray(b"\x01") * n

    def __len__(self) -> int:
        return len(self.fmt)

    def __getitem__(self, i: int) -> _Prefix | None:
        f = self.fmt[i]
        if f == 0:
            return None
        if f == 1:
            return self.whole[i]
        if i < 0:
            i += len(self.fmt)
        return tuple.__new__(
            _Prefix,
            (
                f - 2,
                self.levels[self.level[i]],
                self.sig_at(i),
                self.text[self.start[i] : self.stop[i]],
                False,
                False,
            ),
        )

    def __setitem__(self, i: int, prefix: _Prefix | None) -> None:
        if i < 0:
            i += len(self.fmt)
        if prefix is None:
            if self.fmt[i]:
                self.count -= 1
            self.fmt[i] = 0
            self.whole.pop(i, None)
            return
        if not self.fmt[i]:
            self.count += 1
        self.fmt[i] = 1
        self.whole[i] = prefix

    def body_span(self, i: int) -> tuple[int, int]:
        """Where the message of a bulk-read line lies in the text."""
        return self.start[i], self.stop[i]

    def allocate(self) -> None:
        """The span and code columns, for the lines the built-in formats read in bulk."""
        n = len(self.fmt)
        kind = _offset_type(len(self.text))
        self.start, self.stop = (array(kind, bytes(array(kind).itemsize * n)) for _ in range(2))
        self.level = bytearray(n)
        self.signature = array("i", bytes(4 * n))
        self.shape = array("i", (-1,)) * n

    def code(self, level: str | None) -> int:
        self.level_codes[level] = len(self.levels)
        self.levels.append(level)
        return self.level_codes[level]

    def sig_at(self, i: int) -> str:
        """Line i's signature (of a bulk-read line)."""
        code = self.signature[i]
        if code < 0:  # read from the line now, and kept
            lo, hi = self.lazy[-code - 1]
            start = self.start[i]
            sig = self.text[start + lo : start + hi]
            code = self.sig_codes.get(sig)
            if code is None:
                code = self.sig(sig)
            self.signature[i] = code
        return self.sigs[code]

    def lazy_code(self, lo: int, hi: int) -> int:
        """The negative signature code of a signature over ``lo:hi`` from the message's start."""
        code = self.lazy_codes.get((lo, hi))
        if code is None:
            self.lazy.append((lo, hi))
            code = self.lazy_codes[lo, hi] = -len(self.lazy)
        return code

    def shape_code(self, shape: str) -> int:
        code = self.shape_codes.get(shape)
        if code is None:
            code = self.shape_codes[shape] = len(self.shapes)
            self.shapes.append(shape)
        return code

    def sig(self, sig: str) -> int:
        self.sig_codes[sig] = len(self.sigs)
        self.sigs.append(sig)
        return self.sig_codes[sig]


class _Plain(NamedTuple):
    """A format whose lines are read in bulk: its format column value and group indexes (0: none)."""

    fmt: int
    msg: int
    level: int
    sig: int
    codes: dict[object, int]  # what the level and signature groups read -> packed code


_STARTERS = frozenset("0123456789[ABCDEFGHIJKLMNOPQRSTUVWXYZx")
_STARTER = re.compile(r"[\d\[A-Zx]")  # the same, ``\d`` with every decimal digit
_STARTER_AFTER_NEWLINE = re.compile(r"\n(?=[\d\[A-Zx])")
_CHUNK = 2048  # lines matched at once: their match objects are alive together
_DIGIT_SHAPE = str.maketrans("123456789", "000000000")
_SHAPE_SHARE = 4  # a chunk is read by its lines' shapes when it has at most one shape per 4 lines
_SHAPE_SKIP = 7  # chunks not tried by shape after one that was not: a failed try costs little then
_LASTINDEX = attrgetter("lastindex")
_START, _END, _GROUP = re.Match.start, re.Match.end, re.Match.group


@cache
def _no_match(groups: int) -> re.Match[str]:
    """Stands for a line no format matched: every group absent, ``lastindex`` None."""
    found = re.compile("(?:" + "()" * groups + "x)?").match("")
    assert found is not None
    return found


@cache
def _after_newline(fmt: int) -> re.Pattern[str]:
    """Format ``fmt`` at the start of a line of a longer text: after its newline, within the line
    (``.`` and the classes stop at a newline, but one class that did not is kept inside it here)."""
    inline = _FORMATS[fmt][1].replace(r"[^\]]*", r"[^\]\n]*")
    return re.compile(rf"\n(?=[\d\[A-Zx])(?:{inline})", re.MULTILINE)  # other lines rejected at once


@cache
def _space_chars() -> frozenset[str]:
    """Every character ``str.isspace`` accepts (all lie below U+3001)."""
    return frozenset(filter(str.isspace, map(chr, range(0x3001))))


class _Same:
    """A group that reads the same on every line: ``value``, ``count`` times."""

    __slots__ = ("count", "value")

    def __init__(self, value: str, count: int) -> None:
        self.value, self.count = value, count

    def __iter__(self) -> Iterator[str]:
        return repeat(self.value, self.count)


def _column(of: dict[int, int], ids: list[int]) -> bytearray:
    """Each line's byte by its shape's id; one multiplication when all shapes give the same."""
    values = set(of.values())
    if len(values) == 1:
        return bytearray((values.pop(),)) * len(ids)
    return bytearray(map(of.__getitem__, ids))


class _BulkRead:
    """``_Prefixer.columns`` over the built-in formats, a chunk of lines at a time."""

    def __init__(
        self,
        prefixer: _Prefixer,
        cols: _PrefixColumns,
        plain: dict[int, _Plain],
        slow_first: frozenset[str],
        headers: tuple[str, ...],
        bounds: array,
    ) -> None:
        self.prefixer = prefixer
        self.cols = cols
        self.plain = plain
        self.match = prefixer.pattern.match  # type: ignore[union-attr]
        self.none = _no_match(prefixer.pattern.groups)  # type: ignore[union-attr]
        self.slow_first = slow_first | _space_chars()
        self.headers = headers
        self.kind = cols.start.typecode
        self.bounds = bounds
        self.by_shape = True  # chunks of few line shapes read a shape at a time
        self.skip = 0  # chunks left untried by shape after one that had too many
        # (format, level) -> signature -> code, for lines whose signatures hold digits
        self.by_sig: dict[tuple[int, str], dict[str, int]] = {}
        # the first format the alternation tries, when it is read in bulk: searched for over the text
        self.fast: re.Pattern[str] | None = None
        first = min(prefixer.table)
        if first in plain:
            fmt = prefixer.table[first][0]
            self.fast = _after_newline(fmt)
            groups = self.fast.groupindex
            self.fast_entry = _Plain(fmt + 2, groups["msg"], groups.get("level", 0), groups.get("sig", 0), {})

    def chunk(self, a: int, b: int) -> None:
        """Lines a to b - 1: the first format tried found over the chunk's text, the other lines
        matched one by one (in bulk when none was found); then the columns are stored."""
        c = b - a
        fast = self.fast
        shaped = None
        if self.by_shape and c >= _SHAPE_SHARE:
            if self.skip:  # the last try found too many shapes (or no ASCII): the next chunks likely too
                self.skip -= 1
            else:
                shaped = self.shaped(a, b)
                if shaped is None:
                    self.skip = _SHAPE_SKIP
        special: bytes | bytearray | None = None
        shapes: array | None = None
        packed: tuple[bytes | bytearray, array] | None = None
        if shaped is not None:
            starts, stops, codes, fmts, special, shapes, packed = shaped
        elif fast is None or c < 2:
            starts, stops, codes, fmts = self.mixed(a, b)
        else:
            starts, stops, codes, fmts = self.found(a, b)
        cols = self.cols
        if fmts.count(0) == c:
            return  # no prefix: the columns stay as made (every line special)
        if not cols.start:
            cols.allocate()
        cols.fmt[a:b] = fmts
        cols.start[a:b] = array(self.kind, starts)
        cols.stop[a:b] = array(self.kind, stops)
        if packed is not None:
            cols.level[a:b], cols.signature[a:b] = packed
        else:
            cols.level[a:b] = bytes(map(and_, codes, repeat(0xFF)))
            cols.signature[a:b] = array("i", map(rshift, codes, repeat(8)))
        cols.special[a:b] = self.special(starts, stops, a) if special is None else special
        if shapes is not None:
            cols.shape[a:b] = shapes

    def shaped(
        self, a: int, b: int
    ) -> (
        tuple[list[int], list[int], list[int], bytearray, bytearray, array, tuple[bytearray, array] | None]
        | None
    ):
        """Lines a to b - 1 read by their shape (every digit made ``0``), when the chunk is ASCII and
        few shapes make it up (a log repeats its messages, numbers aside): the alternation is tried
        once per shape, and its spans, prefix codes and special flags given to each line of it.

        Exact: no built-in pattern tells one ASCII digit from another (a test checks), so a line and
        its shape match alike with the same spans. Prefix groups holding a digit (a logger's line
        number, a process id) are read from each line's own text. Each line's message shape is
        coded too (matching tells most messages apart by it). A line without a message gets an
        empty span at its start (only its prefix is read, as an empty body). The prefix codes come
        packed, or as the level and signature columns when no line needs its own. None: the chunk
        is read otherwise.
        """
        text, bounds, cols = self.cols.text, self.bounds, self.cols
        piece = text[bounds[a] : bounds[b] - 1]
        if not piece.isascii():
            return None
        c = b - a
        ids: dict[str, int] = {}
        line_ids = list(map(ids.setdefault, piece.translate(_DIGIT_SHAPE).split("\n"), count()))
        if len(ids) * _SHAPE_SHARE > c:
            return None  # mostly distinct lines: matching each in the text costs less
        del piece
        fmt_of, start_of, stop_of = {}, {}, {}
        code_of: dict[int, int] = {}
        special_of: dict[int, int] = {}
        shape_of: dict[int, int] = {}  # id -> the message shape's code, -1 where unknown
        by_line: set[int] = set()  # shapes whose lines are matched one by one (whole prefixes)
        digits: dict[int, tuple[_Plain, int, int, int, int]] = {}  # id -> format, group spans
        match, plain, headers, slow_first = self.match, self.plain, self.headers, self.slow_first
        for shape, k in ids.items():
            fmt_of[k] = start_of[k] = stop_of[k] = code_of[k] = 0
            special_of[k], shape_of[k] = 1, -1
            m = match(shape) if shape[:1] in _STARTERS else None
            if m is None:
                continue
            entry = plain.get(m.lastindex or 0)
            if entry is None:
                by_line.add(k)
                continue
            ms, me = m.span(entry.msg)
            fmt_of[k] = entry.fmt
            if ms >= 0:
                start_of[k], stop_of[k] = ms, me
                shape_of[k] = cols.shape_code(shape[ms:me])
                special_of[k] = int(
                    ms >= me
                    or shape[ms] in slow_first
                    or shape[me - 1] == "]"
                    or (shape[me - 1] == ":" and shape.endswith(headers, ms, me))
                    or shape.find(".py", ms, me) >= 0
                )
            ls, le = m.span(entry.level) if entry.level else (0, 0)
            ss, se = m.span(entry.sig) if entry.sig else (0, 0)
            if "0" in shape[ss:se] and "0" not in shape[ls:le] and ss >= 0 and ls >= 0:
                # a signature with digits (a logger's line number, a process id): read per line
                # only when asked for; the level is the shape's
                raw_level = m.group(entry.level) if entry.level else None
                level = self.prefixer.level(raw_level) if raw_level else None
                level_code = cols.level_codes.get(level)
                if level_code is None:
                    level_code = cols.code(level)
                code_of[k] = level_code | cols.lazy_code(ss - start_of[k], se - start_of[k]) << 8
                continue
            if "0" in shape[ls:le] or "0" in shape[ss:se]:
                if ls < 0 or ss < 0:
                    by_line.add(k)  # an optional group absent: read as the line-by-line path does
                    shape_of[k] = -1
                else:
                    digits[k] = (entry, ls, le, ss, se)
                continue
            raw: object = None
            if entry.level and entry.sig:
                raw = m.group(entry.level, entry.sig)
            elif entry.level or entry.sig:
                raw = m.group(entry.level or entry.sig)
            code_of[k] = self.prefixer.packed(cols, entry, raw)
        firsts = bounds[a:b]
        starts = list(map(add, firsts, map(start_of.__getitem__, line_ids)))
        stops = list(map(add, firsts, map(stop_of.__getitem__, line_ids)))
        packed = None
        if not digits and not by_line:  # every line's code is its shape's: the columns made directly
            levels = {k: code & 0xFF for k, code in code_of.items()}
            sigs = {k: code >> 8 for k, code in code_of.items()}
            one = set(sigs.values())
            packed = (
                _column(levels, line_ids),
                array("i", one) * c if len(one) == 1 else array("i", list(map(sigs.__getitem__, line_ids))),
            )
            codes = []
        else:
            codes = list(map(code_of.__getitem__, line_ids))
        fmts = _column(fmt_of, line_ids)
        special = _column(special_of, line_ids)
        if digits:
            self.digit_codes(firsts, line_ids, digits, codes, {k: shape for shape, k in ids.items()})
        if by_line:
            prefixer = self.prefixer
            for j in compress(range(c), map(by_line.__contains__, line_ids)):
                i = a + j
                m = match(text, bounds[i], bounds[i + 1] - 1)
                if m is not None:  # it is: the line matches as its shape did
                    fmts[j], starts[j], stops[j], codes[j] = prefixer.one(
                        cols, i, m, plain.get(m.lastindex or 0)
                    )
        shapes = array("i", map(shape_of.__getitem__, line_ids))
        return starts, stops, codes, fmts, special, shapes, packed

    def digit_codes(
        self,
        firsts: Sequence[int],
        line_ids: list[int],
        digits: dict[int, tuple[_Plain, int, int, int, int]],
        codes: list[int],
        shapes: dict[int, str],
    ) -> None:
        """The prefix codes of the lines whose level or signature group holds a digit, from each
        line's own text (the spans are its shape's), a format at a time; new ones coded in line order."""
        text = self.cols.text
        for entry in {v[0].fmt: v[0] for v in digits.values()}.values():
            ours = {k: v for k, v in digits.items() if v[0] is entry}
            if len(ours) == len(shapes):  # every line: the usual case
                lines: Sequence[int] = range(len(line_ids))
                sub, starts = line_ids, firsts
            else:
                lines = list(compress(range(len(line_ids)), map(ours.__contains__, line_ids)))
                sub = list(map(line_ids.__getitem__, lines))
                starts = list(map(firsts.__getitem__, lines))
            groups: list[Iterable[str]] = []
            for at, group in ((1, entry.level), (3, entry.sig)):
                if not group:
                    continue
                spans = {k: (v[at], v[at + 1]) for k, v in ours.items()}
                if not any("0" in shapes[k][lo:hi] for k, (lo, hi) in spans.items()):
                    same = {k: shapes[k][lo:hi] for k, (lo, hi) in spans.items()}  # no digit: as its shape
                    values = set(same.values())
                    if len(values) == 1:
                        groups.append(_Same(values.pop(), len(sub)))
                    else:
                        groups.append(map(same.__getitem__, sub))
                    continue
                ends = [starts]
                for side in (0, 1):
                    offsets = {span[side] for span in spans.values()}
                    if len(offsets) == 1:
                        ends.append(map(add, starts, repeat(offsets.pop())))
                    else:
                        at_side = {k: span[side] for k, span in spans.items()}
                        ends.append(map(add, starts, map(at_side.__getitem__, sub)))
                groups.append(map(text.__getitem__, map(slice, ends[1], ends[2])))
            if len(groups) == 2 and isinstance(groups[0], _Same):
                # one level for all: the lines are told apart by their signatures alone
                level = groups[0].value
                known = self.by_sig.setdefault((entry.fmt, level), {})
                sigs = list(groups[1])
                got: list[int | None] = list(map(known.get, sigs))
                if None in got:
                    for sig in dict.fromkeys(compress(sigs, map(is_, got, repeat(None)))):
                        known[sig] = self.prefixer.packed(self.cols, entry, (level, sig))
                    got = list(map(known.get, sigs))
            else:
                raws: list[object] = list(zip(*groups, strict=True) if len(groups) == 2 else groups[0])
                got = list(map(entry.codes.get, raws))
                if None in got:
                    for raw in dict.fromkeys(compress(raws, map(is_, got, repeat(None)))):
                        self.prefixer.packed(self.cols, entry, raw)
                    got = list(map(entry.codes.get, raws))
            if isinstance(lines, range):
                codes[:] = got  # type: ignore[assignment]
            else:
                for j, code in zip(lines, got, strict=True):
                    codes[j] = code  # type: ignore[assignment]

    def found(self, a: int, b: int) -> tuple[list[int], list[int], list[int], bytearray]:
        """Lines a + 1 to b - 1 searched for the first format at once (its match at a line start
        is the alternation's: it is tried first); the lines it missed, line a among them, one by one."""
        text, bounds, entry = self.cols.text, self.bounds, self.fast_entry
        c = b - a
        found = list(self.fast.finditer(text, bounds[a + 1] - 1, bounds[b] - 1))  # type: ignore[union-attr]
        starts = list(map(_START, found, repeat(entry.msg)))
        stops = list(map(_END, found, repeat(entry.msg)))
        if -1 in starts:  # the message group is optional in some formats
            for j in compress(range(len(starts)), map(eq, starts, repeat(-1))):
                starts[j] = stops[j] = 0
        codes = self.codes(found, entry, None)
        if len(found) * 16 < c:  # a few (or none): each put on its line
            newlines = list(map(sub, bounds[a + 1 : b], repeat(1))) if found else []
            columns = ([0] * c, [0] * c, [0] * c)
            fmts = bytearray(c)
            for k, pos in enumerate(map(_START, found)):
                j = bisect_left(newlines, pos) + 1
                fmts[j] = entry.fmt
                for column, values in zip(columns, (starts, stops, codes), strict=True):
                    column[j] = values[k]
            starts, stops, codes = columns
            return self.rest(a, b, starts, stops, codes, fmts)
        starts.insert(0, 0)  # line a: matched on its own below
        stops.insert(0, 0)
        codes.insert(0, 0)
        fmts = bytearray((entry.fmt,)) * c
        fmts[0] = 0
        if len(found) < c - 1:  # lines the format missed: by the newline before each line
            newlines = list(map(sub, bounds[a + 1 : b], repeat(1)))
            at = list(map(_START, found))
            missed = sorted(set(newlines).difference(at))
            if len(missed) * 16 < c:  # a few: zeros put in where they go, in order
                for pos in missed:
                    j = bisect_left(newlines, pos) + 1
                    starts.insert(j, 0)
                    stops.insert(j, 0)
                    codes.insert(j, 0)
                    fmts[j] = 0
            else:  # many: each line looks its values up
                starts, stops, codes = (
                    [0, *map(dict(zip(at, column[1:], strict=True)).get, newlines, repeat(0))]
                    for column in (starts, stops, codes)
                )
                fmts = bytearray((0, *map(mul, map(set(at).__contains__, newlines), repeat(entry.fmt))))
        return self.rest(a, b, starts, stops, codes, fmts)

    def rest(
        self, a: int, b: int, starts: list[int], stops: list[int], codes: list[int], fmts: bytearray
    ) -> tuple[list[int], list[int], list[int], bytearray]:
        """The lines of a to b - 1 the first format missed, matched one by one."""
        text, bounds = self.cols.text, self.bounds
        missed = None if fmts.count(0) == b - a else compress(range(a, b), map(not_, fmts))
        rest = self.possible(missed, a, b)
        ends = map(sub, map(bounds.__getitem__, map((1).__add__, rest)), repeat(1))
        matched = list(map(self.match, repeat(text), map(bounds.__getitem__, rest), ends))
        prefixer, plain = self.prefixer, self.plain
        for i, m in compress(zip(rest, matched, strict=True), matched):
            j = i - a
            fmts[j], starts[j], stops[j], codes[j] = prefixer.one(
                self.cols, i, m, plain.get(m.lastindex or 0)
            )
        return starts, stops, codes, fmts

    def mixed(self, a: int, b: int) -> tuple[list[int], list[int], list[int], bytearray]:
        """Lines a to b - 1 matched one by one, the columns of their commonest format in bulk."""
        cols, text, plain, none = self.cols, self.cols.text, self.plain, self.none
        bounds = self.bounds
        c = b - a
        tried = self.possible(None, a, b)
        ends = map(sub, map(bounds.__getitem__, map((1).__add__, tried)), repeat(1))
        matched = list(map(self.match, repeat(text), map(bounds.__getitem__, tried), ends))
        if len(tried) == c:
            found = matched
            for j in compress(range(c), map(not_, found)):
                found[j] = none
        else:
            found = [none] * c
            for i, m in compress(zip(tried, matched, strict=True), matched):
                found[i - a] = m
        keys = list(map(_LASTINDEX, found))
        counts = Counter(keys)
        common = max((k for k in counts if k in plain), key=counts.__getitem__, default=None)
        if common is None:
            starts, stops, codes = [0] * c, [0] * c, [0] * c
            fmts = bytearray(c)
        else:
            entry = plain[common]
            starts = list(map(_START, found, repeat(entry.msg)))
            stops = list(map(_END, found, repeat(entry.msg)))
            if -1 in starts:  # the message group is optional in some formats
                for j in compress(range(c), map(eq, starts, repeat(-1))):
                    starts[j] = stops[j] = 0
            codes = self.codes(found, entry, list(map(eq, keys, repeat(common))))
            fmts = bytearray((entry.fmt,)) * c
        if counts[common] < c:
            prefixer = self.prefixer
            for j in compress(range(c), map(ne, keys, repeat(common))):
                m = found[j]
                if m is none:
                    fmts[j] = 0
                    starts[j] = stops[j] = codes[j] = 0
                    continue
                fmts[j], starts[j], stops[j], codes[j] = prefixer.one(cols, a + j, m, plain.get(keys[j] or 0))
        return starts, stops, codes, fmts

    def codes(self, found: list[re.Match[str]], entry: _Plain, ours: list[bool] | None) -> list[int]:
        """The packed level and signature code of each match read as ``entry``'s format (``ours``:
        which matches are of it; the others get any value, they are read on their own after)."""
        if entry.level and entry.sig:
            raws: list[object] = list(map(_GROUP, found, repeat(entry.level), repeat(entry.sig)))
        elif entry.level or entry.sig:
            raws = list(map(_GROUP, found, repeat(entry.level or entry.sig)))
        else:
            raws = [None] * len(found)
        codes: list[int | None] = list(map(entry.codes.get, raws))
        if None in codes:  # each new prefix coded once, in line order, then every line looked up again
            new = map(is_, codes, repeat(None))
            for raw in dict.fromkeys(compress(raws, new if ours is None else map(and_, new, ours))):
                self.prefixer.packed(self.cols, entry, raw)
            codes = list(map(entry.codes.get, raws, repeat(0)))
        return codes  # type: ignore[return-value]

    def possible(self, lines: Iterable[int] | None, a: int, b: int) -> list[int]:
        """Those of ``lines`` (of a to b - 1, ascending) whose first character can start a built-in
        prefix (a digit, a bracket, a capital letter, the ``x`` of a redacted time): no other line
        is tried. Many lines (None: all): the chunk's text is scanned for such line starts instead."""
        text, bounds = self.cols.text, self.bounds
        lines = list(lines) if lines is not None else None
        if lines is None or len(lines) * 4 > b - a:
            among = set(lines) if lines is not None else range(a, b)
            found = [a] if a in among and _STARTER.match(text, bounds[a]) else []
            for m in _STARTER_AFTER_NEWLINE.finditer(text, bounds[a], bounds[b] - 1):
                i = bisect_left(bounds, m.end(), a, b)
                if i in among:
                    found.append(i)
            return found
        firsts = list(map(text.__getitem__, map(bounds.__getitem__, lines)))
        can = map(_STARTERS.__contains__, firsts)
        if not text.isascii():
            can = map(or_, can, map(str.isdecimal, firsts))  # what ``\d`` matches besides 0-9
        return list(compress(lines, can))

    def special(self, starts: list[int], stops: list[int], a: int) -> bytes:
        """Which lines need the parser's full checks: an empty message, one starting with a slow
        character or whitespace, ending in ``]`` (or ``:`` after a header), holding ``.py``."""
        text, bounds, c = self.cols.text, self.bounds, len(starts)
        lo, hi = bounds[a], bounds[a + c]
        get = text.__getitem__
        if max(starts) < len(text):
            firsts = map(get, starts)
        else:  # an empty message at the text's very end: cut, not indexed
            firsts = map(get, map(slice, starts, map(add, starts, repeat(1))))
        lasts = list(map(get, map(sub, stops, repeat(1))))
        flags = int.from_bytes(bytes(map(ge, starts, stops)), "little")
        flags |= int.from_bytes(bytes(map(self.slow_first.__contains__, firsts)), "little")
        flags |= int.from_bytes(bytes(map(eq, lasts, repeat("]"))), "little")
        special = bytearray(flags.to_bytes(c, "little"))
        for j in compress(range(c), map(eq, lasts, repeat(":"))):
            if text.endswith(self.headers, starts[j], stops[j]):
                special[j] = 1
        at = text.find(".py", lo, hi)
        while at >= 0:
            j = bisect_right(bounds, at, a, a + c + 1) - 1 - a
            if starts[j] <= at and at + 3 <= stops[j]:
                special[j] = 1
            at = text.find(".py", at + 1, hi)
        return bytes(special)


class _Prefixer:
    """Strips prefixes with one compiled pattern (None: strip nothing).

    Group lookups go by precomputed index and levels through a per-parse cache: this runs once
    per log line.
    """

    def __init__(self, pattern: UserPattern | None, *, custom: bool = False, inner: bool = True) -> None:
        self.pattern = pattern
        self.levels: dict[str, str] = {}
        # syslog and CI timestamps wrap whatever the program printed: strip its own prefix too
        wraps = inner and pattern is not None and not custom
        self.inner = _Prefixer(_inner(), inner=False) if wraps else None
        # outer group index -> (format, msg group, level group, sig group); 0 = no such group
        self.table: dict[int, tuple[int, int, int, int]] = {}
        if pattern is None:
            return
        groups = pattern.groupindex
        if custom:
            self.table[-1] = (-1, groups["msg"], groups.get("level", 0), groups.get("sig", 0))
            return
        for i in _ALL:
            if f"f{i}" in groups:
                self.table[groups[f"f{i}"]] = (
                    i,
                    groups[f"msg{i}"],
                    groups.get(f"level{i}", 0),
                    groups.get(f"sig{i}", 0),
                )

    def __call__(self, line: str) -> _Prefix | None:
        if self.pattern is None:
            return None
        m = self.pattern.match(line)
        if m is None:
            return None
        fmt, msg_group, level_group, sig_group = self.table.get(m.lastindex or 0) or self.table[-1]
        msg = m.group(msg_group)
        if msg is None:
            if fmt < 0:
                return None
            msg = ""
        raw_level = m.group(level_group) if level_group else None
        level = self.level(raw_level) if raw_level else None
        sig = (m.group(sig_group) if sig_group else None) or raw_level or ""
        if fmt in _TRANSPORTS:
            inner = self.inner(msg) if self.inner is not None else None
            if inner is not None:
                return _Prefix(inner.fmt, inner.level, f"{sig} {inner.sig}", inner.body, True)
            return _Prefix(fmt, level, sig, msg.rstrip(), bare=level is None)
        if fmt == _LIVE_BRACKET:
            msg = _strip_location(msg)
        return _Prefix(fmt, level, sig, msg.rstrip())

    def columns(
        self,
        text: str,
        bounds: array,
        n: int,
        slow_first: frozenset[str],
        *,
        headers: tuple[str, ...] = (),
        bulk: bool = True,
        shapes: bool = True,
    ) -> _PrefixColumns:
        """The prefix of each of the ``n`` lines of ``text`` (line i is ``text[bounds[i]:bounds[i+1]-1]``).

        The built-in formats run in bulk, a chunk of lines at a time: each line is matched in
        place (no line is cut out) and the columns of the chunk's commonest format are pulled
        from the matches by C-level maps; only lines of other formats, or of none, are looked at
        one by one. A line whose message is an ordinary one (``_PrefixColumns.special`` clear)
        needs no further look: one ending in ``:`` is ordinary unless it ends like one of
        ``headers``. ``bulk=False`` matches line by line instead. ``shapes``: chunks of few line
        shapes are read a shape at a time (``_BulkRead.shaped``); False where few lines are
        expected to have a prefix (no format was detected), which the other ways skip cheaply.
        """
        cols = _PrefixColumns(text, n)
        pattern = self.pattern
        if pattern is None:
            return cols
        if not bulk or -1 in self.table or not isinstance(pattern, re.Pattern):
            for i in range(n):  # user patterns (and the reference the tests compare with): line by line
                prefix = self(text[bounds[i] : bounds[i + 1] - 1])
                if prefix is not None:
                    cols[i] = prefix
            return cols
        plain: dict[int, _Plain] = {}
        for key, (fmt, msg_group, level_group, sig_group) in self.table.items():
            if fmt not in _TRANSPORTS and fmt != _LIVE_BRACKET:
                plain[key] = _Plain(fmt + 2, msg_group, level_group, sig_group, {})
        bulk_read = _BulkRead(self, cols, plain, slow_first, headers, bounds)
        bulk_read.by_shape = shapes
        for a in range(0, n, _CHUNK):
            bulk_read.chunk(a, min(n, a + _CHUNK))
        cols.count = n - cols.fmt.count(0)
        return cols

    def one(
        self, cols: _PrefixColumns, i: int, m: re.Match[str], entry: _Plain | None
    ) -> tuple[int, int, int, int]:
        """Line i read on its own (its match ``m`` is not of its chunk's commonest format): its
        format column value, message span and code (a whole ``_Prefix`` is stored here)."""
        if entry is None:
            prefix = self(m.string[m.pos : m.endpos])
            if prefix is None:
                return 0, 0, 0, 0
            cols.whole[i] = prefix
            return 1, 0, 0, 0
        ms, me = m.span(entry.msg)
        if ms < 0:
            ms = me = 0
        raw = None
        if entry.level and entry.sig:
            raw = m.group(entry.level, entry.sig)
        elif entry.level or entry.sig:
            raw = m.group(entry.level or entry.sig)
        return entry.fmt, ms, me, self.packed(cols, entry, raw)

    def packed(self, cols: _PrefixColumns, entry: _Plain, raw: object) -> int:
        """The level and signature code of a line of ``entry``'s format whose groups read ``raw``."""
        code = entry.codes.get(raw)
        if code is None:
            if entry.level and entry.sig:
                key: tuple[Any, Any] = raw  # type: ignore[assignment]
            else:
                key = (raw, None) if entry.level else (None, raw)
            code = entry.codes[raw] = self.code(cols, key, bool(entry.level), bool(entry.sig))
        return code

    def code(
        self, cols: _PrefixColumns, key: tuple[str | None, str | None], has_level: bool, has_sig: bool
    ) -> int:
        """The packed level and signature code of a line whose prefix matched ``key``."""
        raw_level, sig = key
        level = None
        if has_level and raw_level:
            level = self.level(raw_level)
        else:
            raw_level = None
        if not has_sig or not sig:
            sig = raw_level or ""
        level_code = cols.level_codes.get(level)
        if level_code is None:
            level_code = cols.code(level)
        sig_code = cols.sig_codes.get(sig)
        if sig_code is None:
            sig_code = cols.sig(sig)
        return level_code | sig_code << 8

    def level(self, raw: str) -> str:
        level = self.levels.get(raw)
        if level is None:
            level = self.levels[raw] = _level(raw)
        return level


def _level(raw: str) -> str:
    up = raw.upper()
    return _LEVEL_ALIASES.get(up, up)


def _strip_location(msg: str) -> str:
    """Drop the ``(file.py:12)`` pytest puts after the message in its bracket live-log format."""
    rest = msg.rstrip()
    cut = rest.rfind(" (")
    if rest.endswith(")") and cut >= 0 and _LOCATION_TAIL.fullmatch(rest, cut + 2, len(rest) - 1):
        return rest[:cut]
    return msg


class UserPattern(Protocol):
    """What the parser needs of a compiled pattern; RE2's and ``re``'s both have it."""

    groupindex: Mapping[str, int]

    def match(self, string: str) -> Any: ...


# RE2 rejects what cannot run in linear time; say which construct in words a user knows.
_RE2_REJECTS = (
    ("invalid perl operator: (?=", "a lookahead (?=...)"),
    ("invalid perl operator: (?!", "a negative lookahead (?!...)"),
    ("invalid perl operator: (?<=", "a lookbehind (?<=...)"),
    ("invalid perl operator: (?<!", "a negative lookbehind (?<!...)"),
    ("invalid perl operator: (?>", "an atomic group (?>...)"),
    ("invalid named capture group", "named group syntax"),
    ("invalid repetition size", "a repetition count over 1000"),
    ("bad repetition operator", "a possessive or doubled quantifier"),
    ("pattern too large", "more states than the engine's memory bound allows"),
)


def check_prefix_format(spec: str) -> UserPattern | None:
    """Validate a configured prefix format; the compiled regex, or None for a known name.

    User patterns are compiled with RE2 (linear time in the line's length whatever the pattern),
    so a pattern like ``(a|a)+`` runs in linear time instead of backtracking for seconds. Raises
    ValueError with a one-line reason naming what RE2 rejected, so shells can refuse bad settings
    up front.
    """
    name = spec.strip()
    if name in KNOWN_FORMATS or name in {"plain", "auto"}:
        return None
    if not name:
        raise ValueError("prefix_format is empty; give a format name or a regex with a (?P<msg>...) group")
    if "(?P<msg>" not in spec:
        raise ValueError(
            f"unknown prefix_format {spec!r}: use one of {', '.join((*KNOWN_FORMATS, 'plain'))} "
            "or a regex with a named group (?P<msg>...)"
        )
    try:
        re.compile(spec)
    except (re.error, RecursionError, OverflowError) as e:
        raise ValueError(f"prefix_format is not a valid regex: {e}") from None
    pattern = _compile_linear(spec)
    if "msg" not in pattern.groupindex:
        raise ValueError("prefix_format regex needs a named group (?P<msg>...)")
    return pattern


def _compile_linear(spec: str) -> UserPattern:
    import re2  # only user patterns need it; the built-in formats use ``re``

    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 << 20  # a pattern whose automaton needs more is refused, not run
    try:
        return re2.compile(spec, options=options)
    except re2.error as e:
        raw = e.args[0] if e.args else ""
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        construct = next((what for key, what in _RE2_REJECTS if reason.startswith(key)), None)
        if reason.startswith("invalid perl operator: (?P") and "(?P=" in spec:
            construct = "a named backreference (?P=name)"
        if reason.startswith("invalid escape sequence: "):
            escape = reason.split(": ", 1)[1]
            construct = "a backreference (\\1, \\2, ...)" if escape[-1:].isdigit() else f"the escape {escape}"
        if construct is None:
            raise ValueError(
                f"prefix_format is rejected by the linear-time regex engine (RE2): {reason};"
                " rewrite the regex"
            ) from None
        raise ValueError(
            f"prefix_format uses {construct}, which the linear-time regex engine (RE2) does not support"
            f" ({reason}); rewrite the regex without it"
        ) from None


DETECT_SAMPLE = 2000


def _detect(lines: Sequence[str]) -> int | None:
    """The known format most of the log's first lines carry (ties: the earlier, more specific one).

    The sample is the head of the log, so a log that grows (or is cut after its head) keeps its
    format: a sample spread over the whole log shifted with its length and could flip the answer.
    This is the reference, one match per line and format; the parser runs ``_detect_text``.
    """
    sample: list[str] = []
    for ln in lines:
        if ln and not ln.isspace():
            sample.append(ln)
            if len(sample) == DETECT_SAMPLE:
                break
    return _best([sum(1 for _ in filter(_single(i).match, sample)) for i in _ALL])


def _best(scores: Sequence[int]) -> int | None:
    best, best_score = None, 0
    for i, score in enumerate(scores):
        if score > best_score:
            best, best_score = i, score
    return best


def _detect_text(text: str, bounds: Sequence[int], n: int) -> int | None:
    """``_detect`` over the ``n`` lines of ``text`` (line i is ``text[bounds[i]:bounds[i+1]-1]``).

    The same answer for less matching: a likely winner (the best on the first lines) is counted
    first, then every other format only until it can no longer beat the best so far. The others
    are tried first on the lines the likely winner missed: a format that misses those too can at
    best tie it, so a rival matching the same lines (CI timestamps and a timed live log) stops
    there instead of running over the sample, and a format matching nothing stops soon after.
    """
    sample = _head_sample(text, bounds, n)
    size = len(sample)
    head = sample[:_HEAD]
    counts = [_matching(_single(i).match, head) for i in _ALL]
    scores = [0] * len(_FORMATS)
    likely = _best(counts)
    best, best_score = None, 0
    fits = b""  # past the head: 1 where the likely winner matched (a byte a line, for peak memory)
    missed: list[str] = []
    if likely is not None:
        fits = bytes(map(is_not, map(_single(likely).match, islice(sample, _HEAD, None)), repeat(None)))
        missed = list(compress(islice(sample, _HEAD, None), map(not_, fits)))
        best, best_score = likely, counts[likely] + len(fits) - len(missed)
        scores[likely] = best_score
    for i in _ALL:
        if i == likely:
            continue
        # ties go to the earlier format: a later one must beat the best, an earlier one match it
        need = max(best_score + (best is not None and i > best), 1)
        got, pos, step = counts[i], len(head), _HEAD
        rest = islice(sample, _HEAD, None)
        if likely is not None:
            rest = chain(missed, compress(rest, fits))
        match = _single(i).match
        while pos < size and got + size - pos >= need:
            got += _matching(match, islice(rest, step))
            pos += step
            step *= 2
        if pos >= size and got >= need:
            scores[i] = got
            best, best_score = _best(scores), max(best_score, got)
    return best


def _matching(match: Callable[[str], object], lines: Iterable[str]) -> int:
    """How many of ``lines`` ``match`` accepts, counted in C, one match object alive at a time."""
    return sum(map(is_not, map(match, lines), repeat(None)))


_HEAD = 16  # lines every format is tried on to find the likely winner; the counting step grows from it


def _head_sample(text: str, bounds: Sequence[int], n: int) -> list[str]:
    """The first ``DETECT_SAMPLE`` non-blank lines, cut from the text a batch at a time (each line
    on its own: a copy of the whole head would raise the parse's peak memory)."""
    sample: list[str] = []
    done = 0
    while done < n and len(sample) < DETECT_SAMPLE:
        stop = min(n, done + DETECT_SAMPLE - len(sample))
        ends = map(sub, islice(bounds, done + 1, stop + 1), repeat(1))
        lines = map(text.__getitem__, map(slice, islice(bounds, done, stop), ends))
        sample += filterfalse(str.isspace, filter(None, lines))  # no batch list beside the sample
        done = stop
    return sample


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?")
# CI services' workflow commands: GitHub/Azure `##[group]`, `##[error]`, `::error file=x::`, `::endgroup::`
_CI_MARKER = re.compile(r"^(?:##\[[a-z]+\]|::[a-z-]+(?: [^:\n]*)?::)", re.MULTILINE)
# at the text's start or after a newline: a literal first character the scan jumps to
_CI_MARKER_HINT = re.compile(r"\n(?:##\[|::[a-z])")


def clean_text(text: str) -> str:
    """What a reader sees: colours and CI workflow markers gone, CR-overwritten progress collapsed.

    A bare CR returns the cursor: a terminal shows only what was written after the last one on
    a line (progress bars), so that is the line. CRLF endings are plain line ends.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            text = "\n".join(_last_overwrite(ln) if "\r" in ln else ln for ln in text.split("\n"))
    if text.startswith(("##[", "::")) or _CI_MARKER_HINT.search(text):
        text = _CI_MARKER.sub("", text)
    return text


def _last_overwrite(line: str) -> str:
    for part in reversed(line.split("\r")):
        if part.strip():
            return part
    return ""


_BINARY_SAMPLE = 65536
_CONTROL = frozenset(chr(c) for c in (*range(32), *range(0x7F, 0xA0)) if chr(c) not in "\t\n\r\f\v\x1b")
_CONTROL_CHAR = re.compile(f"[{''.join(re.escape(ch) for ch in sorted(_CONTROL))}]")
_NOT_CONTROL_ASCII = bytes(c for c in range(128) if chr(c) not in _CONTROL)


def _binary_share(text: str, *, replaced: int | None = None) -> float:
    """Share of control characters (and U+FFFD, unless ``replaced`` says how many decoding made)."""
    sample = text[:_BINARY_SAMPLE]
    if not sample:
        return 0.0
    if sample.isascii():  # every other byte deleted, what is left counted: faster than the regex
        odd = len(sample.encode("ascii").translate(None, _NOT_CONTROL_ASCII))
    else:
        odd = len(_CONTROL_CHAR.findall(sample))  # a C scan; a text has few, so the list stays small
    odd += sample.count("\ufffd") if replaced is None else min(replaced, len(sample))
    return odd / len(sample)


def decode_log(data: bytes) -> tuple[str, list[str]]:
    """Bytes from a file or upload -> text safe for ``parse_log``, with warnings.

    Invalid UTF-8 becomes U+FFFD rather than an error; NULs are dropped; a UTF-16 byte-order mark
    (logs redirected by PowerShell) is honoured.
    """
    warnings: list[str] = []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8-sig", errors="replace")
        bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
        if bad > 0:
            warnings.append(f"the log is not valid UTF-8: {bad} undecodable byte sequence(s) replaced")
    nuls = text.count("\x00")
    if nuls:
        text = text.replace("\x00", "")
    replaced = max(0, text.count("\ufffd") - data.count(b"\xef\xbf\xbd"))
    if nuls > 0 or _binary_share(text, replaced=replaced) > 0.1:
        warnings.append("the log looks like binary data; it was read as text")
    return text, warnings
