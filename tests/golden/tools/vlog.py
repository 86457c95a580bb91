"""Building blocks for the golden log fixtures (see ../README.md).

The fixtures are synthetic: they are written by gen_fixtures.py from the shapes described in
docs/log-formats.md (vLLM V1 multiproc logging, process prefixes, logger.exception records with
\\r\\n and a repeated header, unheadered tracebacks on stderr, CRI and Docker envelopes).
Everything is deterministic (fixed seeds), so re-running the generator reproduces the files
byte for byte.
"""

import datetime as dt
import json
import random

ESC = "\x1b"


class Proc:
    """One OS process writing to the shared container stream."""

    def __init__(self, name, pid, color=True, host="node"):
        self.name = name
        self.pid = pid
        self.color = color
        self.host = host

    def pfx(self):
        if self.name is None:
            return ""
        if self.color:
            return f"{ESC}[0;36m({self.name} pid={self.pid}){ESC}[0;0m "
        return f"({self.name} pid={self.pid}) "


class Line:
    __slots__ = ("owner", "stream", "text", "ts")

    def __init__(self, owner, stream, text, ts):
        self.owner = owner  # Proc or None (C-level output of an unknown process)
        self.stream = stream  # "stdout" | "stderr"
        self.text = text  # physical line without "\n"; may end in "\r"
        self.ts = ts  # datetime (second precision) when it was written


def hdr(level, ts, fileinfo):
    return f"{level} {ts:%m-%d %H:%M:%S} [{fileinfo}] "


def rec(p, level, ts, fileinfo, msg, stream="stdout"):
    """One single-line vLLM logger record."""
    return [Line(p, stream, f"{p.pfx()}{hdr(level, ts, fileinfo)}{msg}", ts)]


def multi(p, level, ts, fileinfo, msg_lines, stream="stdout"):
    """A multi-line vLLM record: NewLineFormatter repeats the header, joins with \\r\\n."""
    h = hdr(level, ts, fileinfo)
    out = []
    for i, m in enumerate(msg_lines):
        cr = "\r" if i < len(msg_lines) - 1 else ""
        out.append(Line(p, stream, f"{p.pfx()}{h}{m}{cr}", ts))
    return out


def exc(p, ts, fileinfo, msg, tb, level="ERROR", trailing_blank=False):
    """logger.exception(msg): message, then the traceback, every line headered."""
    lines = [msg] + tb
    if trailing_blank:
        lines.append("")
    return multi(p, level, ts, fileinfo, lines)


def raw(p, ts, lines, stream="stderr"):
    """Text written without a vLLM header (interpreter tracebacks, warnings, tqdm)."""
    return [Line(p, stream, f"{p.pfx() if p else ''}{t}", ts) for t in lines]


def frame(path, lineno, func, src=None, caret=None, tilde=None):
    """CPython 3.12 frame: File line, source line, optional caret line.

    caret: the substring of src to underline with ^; tilde: (value, subscript) pair for
    the 3.11+ subscript shape `~~~~^^^^`.
    """
    out = [f'  File "{path}", line {lineno}, in {func}']
    if src is not None:
        out.append(f"    {src}")
        if caret:
            col = src.index(caret)
            out.append("    " + " " * col + "^" * len(caret))
        elif tilde:
            val, sub = tilde
            col = src.index(val + sub)
            out.append("    " + " " * col + "~" * len(val) + "^" * len(sub))
    return out


def interleave(seqs, rng, weights=None):
    """Merge line lists like ranks writing to one pipe: time order, random order within a second.

    Each list keeps its own order; a process that already started a burst often writes a
    couple more lines before another process gets in.
    """
    seqs = [list(s) for s in seqs if s]
    idx = [0] * len(seqs)
    out = []
    while True:
        live = [i for i in range(len(seqs)) if idx[i] < len(seqs[i])]
        if not live:
            return out
        first = min(seqs[i][idx[i]].ts for i in live)
        ready = [i for i in live if seqs[i][idx[i]].ts == first]
        w = [weights[i] if weights else 1 for i in ready]
        i = rng.choices(ready, weights=w)[0]
        run = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        for _ in range(run):
            if idx[i] < len(seqs[i]) and seqs[i][idx[i]].ts == first:
                out.append(seqs[i][idx[i]])
                idx[i] += 1


# ----------------------------------------------------------------------------- envelopes


def write_plain(path, lines):
    with open(path, "wb") as f:
        for ln in lines:
            f.write(ln.text.encode("utf-8") + b"\n")


def rfc3339nano(t_ns, tz="Z"):
    sec, ns = divmod(t_ns, 1_000_000_000)
    base = dt.datetime.fromtimestamp(sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{ns:09d}".rstrip("0")
    return base + ("." + frac if frac else "") + tz


def envelope_times(lines, seed):
    """Runtime clock for each line: never before the record's second, monotone."""
    rng = random.Random(seed)
    out = []
    cur = 0
    for ln in lines:
        floor = int(ln.ts.replace(tzinfo=dt.timezone.utc).timestamp()) * 1_000_000_000
        if cur < floor:
            cur = floor + rng.randint(2_000_000, 400_000_000)
        else:
            cur += rng.randint(4_000, 250_000)
        out.append(cur)
    return out


def write_cri(path, lines, seed, max_line=16384):
    """Kubernetes CRI file as containerd writes it (\\r\\n stripped, P fragments)."""
    times = envelope_times(lines, seed)
    with open(path, "wb") as f:
        for ln, t in zip(lines, times):
            content = ln.text.encode("utf-8")
            if content.endswith(b"\r"):
                content = content[:-1]
            chunks = [content[i : i + max_line] for i in range(0, len(content), max_line)] or [b""]
            for j, c in enumerate(chunks):
                tag = b"F" if j == len(chunks) - 1 else b"P"
                f.write(rfc3339nano(t + j * 1000).encode() + b" " + ln.stream.encode() + b" " + tag + b" " + c + b"\n")


def _go_json_string(s):
    # encoding/json: HTML-safe escaping of <, >, & and \u001b for control bytes.
    j = json.dumps(s, ensure_ascii=False)
    return j.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_docker(path, lines, seed):
    """Docker json-file driver: one object per line, the line terminator kept in "log"."""
    times = envelope_times(lines, seed)
    with open(path, "wb") as f:
        for ln, t in zip(lines, times):
            text = ln.text
            log = text[:-1] + "\r\n" if text.endswith("\r") else text + "\n"
            obj = '{"log":%s,"stream":"%s","time":"%s"}' % (_go_json_string(log), ln.stream, rfc3339nano(t))
            f.write(obj.encode("utf-8") + b"\n")
