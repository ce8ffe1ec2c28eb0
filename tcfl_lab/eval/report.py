"""Aggregate case results into the `tcfl eval --json` report and a table for the terminal.

Means are over cases where the metric is defined: preservation over cases with a faulty code
line, true-trace scores over cases with an actual trace, localization at a level over cases
with a faulty element at that level. MPF1 per rate is the mean over cases; its ``mean`` is the
mean over cases of each case's mean over rates (paper V-B1). Rates are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import fmean, median
from typing import Any

from app.analysis.model import TRACE_ALIASES, VARIANTS
from tcfl_lab.eval.metrics import mean_or_none, summarize_ranks
from tcfl_lab.eval.runner import CaseResult, EvalOptions

_ALIAS_OF = {v: k for k, v in TRACE_ALIASES.items()}
_LIST_CAP = 20  # locations listed per case and variant in ``per_case``


def _rate_key(rate: float) -> str:
    return str(round(rate * 100))


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _mean(values: Iterable[float | None]) -> float | None:
    return mean_or_none(values)


def trace_section(results: Sequence[CaseResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in VARIANTS:
        rows = [r.quality[name] for r in results if name in r.quality]
        if not rows:
            continue
        rates = sorted({rate for q in rows for rate in q.mpf1})
        mpf1: dict[str, float | None] = {
            _rate_key(rate): _r(_mean(q.mpf1.get(rate) for q in rows)) for rate in rates
        }
        mpf1["mean"] = _r(_mean(_mean(q.mpf1.values()) for q in rows))
        with_true = [q.true for q in rows if q.true is not None]
        out[name] = {
            "alias": _ALIAS_OF.get(name),
            "pruning_rate": _r(fmean(q.pruning_rate for q in rows)),
            "kept_lines": _r(fmean(q.kept_lines for q in rows), 1),
            "partial_preservation": _r(_mean(float(q.partial) for q in rows if q.partial is not None)),
            "full_preservation": _r(_mean(float(q.full) for q in rows if q.full is not None)),
            "mpf1": mpf1,
            "true_precision": _r(_mean(t.precision for t in with_true)),
            "true_recall": _r(_mean(t.recall for t in with_true)),
            "true_f1": _r(_mean(t.f1 for t in with_true)),
            "cases": len(rows),
            "cases_with_actual_trace": len(with_true),
            "cases_contradicting_evidence": sum(1 for q in rows if q.contradicted),
            "cases_missing_executed_lines": sum(1 for q in rows if q.true is not None and q.missed),
        }
    return out


def localization_section(results: Sequence[CaseResult], variant: str, level: str) -> dict[str, Any]:
    outcomes = [o for r in results for o in r.localization if o.variant == variant and o.level == level]
    scored = [o.scores for o in outcomes if o.scores is not None]
    ks = sorted({k for s in scored for k in s})
    out: dict[str, Any] = {}
    for k in ks:
        summary = summarize_ranks(s[k] for s in scored if k in s)
        out[str(k)] = {
            "precision": _r(summary.precision),
            "recall": _r(summary.recall),
            "hit": _r(summary.hit),
            "map": _r(summary.map),
            "mrr": _r(summary.mrr),
            "cases": summary.cases,
            "mean_answers": _r(summary.mean_answers, 2),
        }
    return out


def validity_and_cost(results: Sequence[CaseResult], variant: str, level: str) -> dict[str, Any]:
    outcomes = [o for r in results for o in r.localization if o.variant == variant and o.level == level]
    if not outcomes:
        return {}
    asked = sum(o.asked for o in outcomes) or 1
    tokens_in = [o.input_tokens for o in outcomes if o.input_tokens is not None]
    tokens_out = [o.output_tokens for o in outcomes if o.output_tokens is not None]
    rankers = sorted({o.ranker for o in outcomes})
    return {
        "rankers": rankers,
        "invalid_rate": _r(sum(o.invalid for o in outcomes) / asked),
        "duplicate_rate": _r(sum(o.duplicates for o in outcomes) / asked),
        "mismatch_rate": _r(sum(o.mismatches for o in outcomes) / asked),
        "fallback_rate": _r(sum(1 for o in outcomes if o.fallback) / len(outcomes)),
        "fill_in_rate": _r(sum(o.filled for o in outcomes) / asked),
        "input_tokens_mean": _r(fmean(tokens_in), 1) if tokens_in else None,
        "output_tokens_mean": _r(fmean(tokens_out), 1) if tokens_out else None,
        "static_ms_mean": _r(fmean(o.static_ms for o in outcomes), 2),
        "model_ms_mean": _r(fmean(o.model_ms for o in outcomes), 2),
        "total_ms_mean": _r(fmean(o.total_ms for o in outcomes), 2),
    }


def ablation_section(results: Sequence[CaseResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in VARIANTS:
        rows = [r.ablation[name] for r in results if r.ablation and name in r.ablation]
        if not rows:
            continue
        rates = sorted({rate for row in rows for rate in row})
        out[name] = {
            _rate_key(rate): {
                "mpf1": _r(_mean(row[rate].mpf1 for row in rows if rate in row)),
                "pruning_rate": _r(_mean(row[rate].pruning_rate for row in rows if rate in row)),
                "partial_preservation": _r(
                    _mean(row[rate].partial_preservation for row in rows if rate in row)
                ),
                "full_preservation": _r(_mean(row[rate].full_preservation for row in rows if rate in row)),
            }
            for rate in rates
        }
    return out


def corpus_section(results: Sequence[CaseResult]) -> dict[str, Any]:
    ok = [r for r in results if r.error is None]
    if not ok:
        return {}
    return {
        "lines_mean": _r(fmean(r.total_lines for r in ok), 1),
        "lines_median": median(r.total_lines for r in ok),
        "log_statements": sum(r.log_statements for r in ok),
        "static_log_statements": sum(r.static_log_statements for r in ok),
        "cases_with_static_log_statements": sum(1 for r in ok if r.static_log_statements),
        "L_exe": sum(r.exe for r in ok),
        "L_nexe": sum(r.nexe for r in ok),
        "multi_matched": sum(r.multi for r in ok),
        "error_statements": sum(r.error_statements for r in ok),
        "cases_without_error_statement": sum(1 for r in ok if not r.error_statements),
        "faulty_elements_mean": {
            level: _r(fmean(r.faulty.get(level, 0) for r in ok), 2) for level in ("function", "block", "line")
        },
        "analysis_ms_mean": _r(fmean(r.analysis_ms for r in ok), 2),
        "eval_ms_mean": _r(fmean(r.eval_ms for r in ok), 2),
    }


def build_report(
    results: Sequence[CaseResult], options: EvalOptions, *, problems: Sequence[str] = (), seconds: float = 0.0
) -> dict[str, Any]:
    ok = [r for r in results if r.error is None]
    primary = options.rank_traces[0] if options.rank_traces else None
    by_trace: dict[str, Any] = {}
    costs: dict[str, Any] = {}
    for variant in options.rank_traces if options.localize else ():
        by_trace[variant] = {
            level: localization_section(ok, variant, level) for level in (*options.levels, "block_lm")
        }
        costs[variant] = {level: validity_and_cost(ok, variant, level) for level in options.levels}
    report: dict[str, Any] = {
        "cases": len(ok),
        "failed_cases": [{"id": r.case_id, "error": r.error} for r in results if r.error is not None],
        "skipped_files": list(problems),
        "settings": {
            "levels": list(options.levels),
            "k": {level: list(options.ks_for(level)) for level in options.levels},
            "rank_traces": list(options.rank_traces),
            "ranker": options.ranker,
            "seed": options.masking.seed,
            "masking_rates": list(options.masking.rates),
            "repetitions": options.masking.repetitions,
            "ablation_rates": list(options.ablation_rates) if options.ablation else None,
        },
        "corpus": corpus_section(results),
        "trace": trace_section(ok),
        "localization": {level: by_trace[primary][level] for level in options.levels if primary in by_trace},
        "localization_lm": by_trace[primary].get("block_lm", {}) if primary in by_trace else {},
        "localization_by_trace": by_trace,
        "validity_and_cost": costs,
        "seconds": round(seconds, 2),
        "per_case": [_case_row(r) for r in results],
    }
    if options.ablation:
        report["ablation"] = ablation_section(ok)
    return report


def _case_row(r: CaseResult) -> dict[str, Any]:
    if r.error is not None:
        return {"id": r.case_id, "error": r.error}
    return {
        "id": r.case_id,
        "lines": r.total_lines,
        "static_log_statements": r.static_log_statements,
        "L_exe": r.exe,
        "L_nexe": r.nexe,
        "faulty": r.faulty,
        "trace": {
            name: {
                "pruning_rate": _r(q.pruning_rate),
                "partial": q.partial,
                "full": q.full,
                "mpf1": _r(_mean(q.mpf1.values())),
                "true_f1": _r(q.true.f1) if q.true else None,
                "contradicted": [f"{loc.path}:{loc.line}" for loc in q.contradicted[:_LIST_CAP]],
                "missed_executed": len(q.missed),
                "missed_executed_lines": [f"{loc.path}:{loc.line}" for loc in q.missed[:_LIST_CAP]],
            }
            for name, q in r.quality.items()
        },
        "localization": {
            f"{o.variant}/{o.level}": {
                str(k): {"hit": s.hit, "ap": _r(s.ap), "rr": _r(s.rr)} for k, s in o.scores.items()
            }
            if o.scores
            else None
            for o in r.localization
        },
        "warnings": list(r.warnings),
    }


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{100 * value:5.1f}"


def render_table(report: dict[str, Any]) -> str:
    """The report's numbers as aligned text tables (percentages)."""
    lines = [
        f"cases: {report['cases']}  failed: {len(report['failed_cases'])}  skipped files: "
        f"{len(report['skipped_files'])}  ({report['seconds']} s)"
    ]
    corpus = report.get("corpus") or {}
    if corpus:
        lines.append(
            f"lines/case {corpus['lines_mean']}  static log statements {corpus['static_log_statements']} "
            f"(in {corpus['cases_with_static_log_statements']} cases)  L_exe {corpus['L_exe']}  "
            f"L_nexe {corpus['L_nexe']}  multi {corpus['multi_matched']}  "
            f"error statements {corpus['error_statements']}"
        )
    trace = report.get("trace") or {}
    if trace:
        rates = [key for key in next(iter(trace.values()))["mpf1"] if key != "mean"]
        head = f"\n{'trace variant':<26}{'MPF1':>6}" + "".join(f"{'@' + r:>6}" for r in rates)
        head += f"{'prune':>7}{'part.':>7}{'full':>7}{'kept':>7}{'tP':>7}{'tR':>7}{'tF1':>7}"
        lines += [head, "-" * len(head.strip("\n"))]
        for name, row in trace.items():
            label = name + (f" ({row['alias']})" if row["alias"] else "")
            cells = [_pct(row["mpf1"]["mean"]), *(_pct(row["mpf1"][r]) for r in rates)]
            lines.append(
                f"{label:<26}{cells[0]:>6}"
                + "".join(f"{c:>6}" for c in cells[1:])
                + f"{_pct(row['pruning_rate']):>7}{_pct(row['partial_preservation']):>7}"
                + f"{_pct(row['full_preservation']):>7}{row['kept_lines']:>7}"
                + f"{_pct(row['true_precision']):>7}{_pct(row['true_recall']):>7}{_pct(row['true_f1']):>7}"
            )
        lines.append(
            "MPF1 mean and @rate%, pruning, partial/full fault preservation, mean kept lines, "
            "true-trace precision/recall/F1 (%)"
        )
        contra = {
            n: r["cases_contradicting_evidence"]
            for n, r in trace.items()
            if r["cases_contradicting_evidence"]
        }
        missed = {
            n: r["cases_missing_executed_lines"]
            for n, r in trace.items()
            if r["cases_missing_executed_lines"]
        }
        if contra:
            lines.append(
                "cases contradicting known states: " + ", ".join(f"{n} {c}" for n, c in contra.items())
            )
        if missed:
            lines.append(
                "cases pruning truly executed lines: " + ", ".join(f"{n} {c}" for n, c in missed.items())
            )
    for variant, levels in (report.get("localization_by_trace") or {}).items():
        ranker = ",".join(
            sorted({r for c in report["validity_and_cost"][variant].values() for r in c.get("rankers", [])})
        )
        lines.append(
            f"\nlocalization on {variant} (ranker: {ranker or '-'}; DP = direct, LM = lines mapped to blocks)"
        )
        titles = ("P@k", "R@k", "Hit@k", "MAP@k", "MRR@k", "cases")
        head = f"{'level':<10}{'k':>3}" + "".join(f"{t:>7}" for t in titles) + f"{'#ans':>6}"
        lines += [head, "-" * len(head)]
        for level, per_k in levels.items():
            name = {"block": "block DP", "block_lm": "block LM"}.get(level, level)
            for k, row in per_k.items():
                lines.append(
                    f"{name:<10}{k:>3}{_pct(row['precision']):>7}{_pct(row['recall']):>7}{_pct(row['hit']):>7}"
                    f"{_pct(row['map']):>7}{_pct(row['mrr']):>7}{row['cases']:>7}{row['mean_answers']:>6}"
                )
        costs = report["validity_and_cost"][variant]
        for level, c in costs.items():
            if c:
                tokens = (
                    f"tokens in/out {c['input_tokens_mean']}/{c['output_tokens_mean']}"
                    if c["input_tokens_mean"] is not None
                    else "no model tokens"
                )
                lines.append(
                    f"  {level}: invalid {_pct(c['invalid_rate'])}% duplicate {_pct(c['duplicate_rate'])}% "
                    f"mismatch {_pct(c['mismatch_rate'])}% fallback {_pct(c['fallback_rate'])}% "
                    f"fill-in {_pct(c['fill_in_rate'])}%  {tokens}  static {c['static_ms_mean']} ms  "
                    f"model {c['model_ms_mean']} ms  total {c['total_ms_mean']} ms per case"
                )
    ablation = report.get("ablation")
    if ablation:
        rates = list(next(iter(ablation.values())))
        head = (
            f"\nablation: static log statements removed (%)\n{'trace variant':<26}"
            + "".join(f"{'MPF1@' + r:>9}" for r in rates)
            + "".join(f"{'prune@' + r:>10}" for r in rates)
        )
        lines += [head, "-" * (26 + 19 * len(rates))]
        for name, per_rate in ablation.items():
            lines.append(
                f"{name:<26}"
                + "".join(f"{_pct(per_rate[r]['mpf1']):>9}" for r in rates)
                + "".join(f"{_pct(per_rate[r]['pruning_rate']):>10}" for r in rates)
            )
    for failed in report["failed_cases"]:
        lines.append(f"failed: {failed['id']}: {failed['error']}")
    for skipped in report["skipped_files"]:
        lines.append(f"skipped: {skipped}")
    return "\n".join(lines)
