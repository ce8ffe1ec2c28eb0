"""PNG plots of an evaluation report (matplotlib, an optional dependency).

Two figures: pruning rate against partial and full fault preservation per trace variant (the
trade-off of paper V-B), and Hit@k curves per level for each ranked trace (V-C). Rendering uses
the Agg backend with fixed sizes and no timestamps in the metadata, so a report gives the same
files every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotUnavailable(
            "--plot needs matplotlib (pip install 'matplotlib>=3.8'); no plots written"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(report: dict[str, Any], out: Path) -> list[Path]:
    """Write the report's plots into ``out``; returns the files written."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    meta = {"Software": None}
    trace = report.get("trace") or {}
    if trace:
        fig, ax = plt.subplots(figsize=(8, 6), dpi=100)
        for name, row in trace.items():
            prune = row["pruning_rate"] or 0.0
            for key, marker, filled in (
                ("partial_preservation", "o", False),
                ("full_preservation", "s", True),
            ):
                if row[key] is not None:
                    color = "tab:red" if name == "tplus" else "tab:blue"
                    ax.scatter(
                        prune * 100,
                        row[key] * 100,
                        marker=marker,
                        s=60 if filled else 110,
                        facecolors=color if filled else "none",
                        edgecolors=color,
                        label=None,
                    )
            if row["partial_preservation"] is not None:
                short = name.replace("T1_dbt_exe", "T1e").replace("T1_dbt_nexe", "T1n").replace("CSR", "C")
                ax.annotate(
                    short,
                    (prune * 100, row["partial_preservation"] * 100),
                    fontsize=7,
                    xytext=(3, 3 + 5 * (sum(map(ord, short)) % 4)),  # stable stagger for coinciding points
                    textcoords="offset points",
                )
        ax.set_xlabel("pruning rate (%)")
        ax.set_ylabel("fault preservation (%)")
        ax.scatter(
            [],
            [],
            marker="o",
            facecolors="none",
            edgecolors="grey",
            s=110,
            label="partial (some faulty line kept)",
        )
        ax.scatter([], [], marker="s", color="grey", s=60, label="full (every faulty line kept)")
        ax.legend(loc="lower left", fontsize=8)
        ax.set_title(f"pruning vs fault preservation ({report['cases']} cases)")
        ax.grid(True, alpha=0.3)
        path = out / "pruning_vs_preservation.png"
        fig.savefig(path, metadata=meta)
        plt.close(fig)
        written.append(path)
    for variant, levels in (report.get("localization_by_trace") or {}).items():
        if not any(levels.values()):
            continue
        fig, ax = plt.subplots(figsize=(7, 5), dpi=100)
        for level, per_k in levels.items():
            if per_k:
                ks = [int(k) for k in per_k]
                ax.plot(ks, [per_k[str(k)]["hit"] * 100 for k in ks], marker="o", label=level)
        ax.set_xlabel("k")
        ax.set_ylabel("Hit@k (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"Hit@k per level, trace {variant}")
        ax.legend()
        ax.grid(True, alpha=0.3)
        safe = "".join(c if c.isalnum() else "_" for c in variant)
        path = out / f"hit_at_k_{safe}.png"
        fig.savefig(path, metadata=meta)
        plt.close(fig)
        written.append(path)
    return written
