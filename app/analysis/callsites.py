"""Call sites, and the paper's Algorithm 4 (call-site refinement)."""

from __future__ import annotations

from pathlib import PurePosixPath

from app.analysis.model import Function, Program, State, TraceReason


def call_sites(program: Program) -> dict[str, tuple[int, ...]]:
    """Statements calling (or passing on) each function.

    A method is called through an attribute (`self.m(...)`, `obj.m(...)`: the object's type is
    unknown, so any attribute call of that name counts); a plain function by its bare name, or
    qualified by its file's module name from another script (`helpers.f(...)`). So
    `process.run(...)` is no call site of a test's own `run`.
    """
    bare: dict[str, list[int]] = {}
    qualified: dict[str, list[int]] = {}
    attribute: dict[str, list[int]] = {}
    for st in program.statements:
        for call in st.calls:
            obj, dot, name = call.rpartition(".")
            if not dot:
                bare.setdefault(name, []).append(st.sid)
            else:
                attribute.setdefault(name, []).append(st.sid)
                if obj:
                    qualified.setdefault(call, []).append(st.sid)
    out: dict[str, tuple[int, ...]] = {}
    for fn in program.functions:
        if fn.kind != "function":
            continue
        if fn.is_method:
            found = attribute.get(fn.name, [])
        else:
            stem = PurePosixPath(fn.path.replace("\\", "/")).stem
            found = bare.get(fn.name, []) + qualified.get(f"{stem}.{fn.name}", [])
        out[fn.fid] = tuple(sorted(set(found)))
    return out


def helpers(program: Program, sites: dict[str, tuple[int, ...]]) -> list[Function]:
    """Functions with a call site in the scripts that the framework does not run by itself."""
    return [f for f in program.functions if f.kind == "function" and not f.is_hook and sites.get(f.fid)]


def csr(
    program: Program, trace: set[int], sites: dict[str, tuple[int, ...]]
) -> tuple[set[int], dict[int, TraceReason]]:
    out = set(trace)
    why: dict[int, TraceReason] = {}
    for fn in helpers(program, sites):
        if any(s in out for s in fn.statements) and not any(c in out for c in sites[fn.fid]):
            lines = ", ".join(str(program.statements[c].start_line) for c in sites[fn.fid][:5])
            ev = TraceReason(
                State.NEXE, "call-site", f"helper `{fn.name}`: no call site ({lines}) left in the trace"
            )
            for s in fn.statements:
                if s in out:
                    out.discard(s)
                    why[s] = ev
    return out, why


# ---------------------------------------------------------------------------------------------
# tplus: walks over the condensation, call-site inference, termination, normal return
