"""Which past runs to use, and how much each counts (docs/design.md §8.2c-d).

CI verdicts are free, so the reason RLFDC stays result-agnostic (oracle cost) is gone; what is
left is relevance (older versions count less), trace noise and the cost of fetching logs. The
greedy FDC picks runs that cover what the failure ran (RLFDC Eq. 5) and split its ambiguity
groups (Eq. 6). Similar runs (as DTG compares them) are passes whose decisions and inputs resemble
the failure's. RLFDC and DTG are the papers of docs/design.md §2.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_K = 10  # RLFDC selects ten tests
DEFAULT_ALPHA = 0.5  # FDG's default balance of split and cover


def run_weight(versions_apart: int) -> float:
    """ω_r = 0.5^(d/2): a run two script versions older than the failure counts half."""
    return 0.5 ** (max(0, versions_apart) / 2.0)


def cover(covered: frozenset[Hashable], failing: frozenset[Hashable]) -> float:
    """1 - Jaccard distance between a candidate's coverage and the failure's (RLFDC Eq. 5)."""
    union = covered | failing
    return len(covered & failing) / len(union) if union else 0.0


def ambiguity_groups(
    elements: frozenset[Hashable], chosen: Sequence[frozenset[Hashable]]
) -> list[frozenset[Hashable]]:
    """Elements the chosen runs cannot tell apart: same coverage in every chosen run."""
    groups: dict[tuple[bool, ...], set[Hashable]] = {}
    for e in elements:
        groups.setdefault(tuple(e in c for c in chosen), set()).add(e)
    return [frozenset(g) for g in groups.values()]


def split(covered: frozenset[Hashable], groups: Sequence[frozenset[Hashable]], n: int) -> float:
    """Σ_g (|g|/n)·min(|g ∩ c_t|, |g ∖ c_t|) (RLFDC Eq. 6): even splits of big groups score most."""
    if n == 0:
        return 0.0
    return sum(len(g) / n * min(len(g & covered), len(g - covered)) for g in groups)


def select_fdc(
    candidates: Mapping[str, frozenset[Hashable]],
    failing: frozenset[Hashable],
    k: int = DEFAULT_K,
    alpha: float = DEFAULT_ALPHA,
) -> list[str]:
    """Greedy FDC = α·split/max(split) + (1-α)·cover over the lines the failure ran; ids in pick order."""
    chosen: list[str] = []
    chosen_cov: list[frozenset[Hashable]] = [failing]
    left = dict(candidates)
    while left and len(chosen) < k:
        groups = ambiguity_groups(failing, chosen_cov)
        splits = {rid: split(cov & failing, groups, len(failing)) for rid, cov in left.items()}
        top = max(splits.values(), default=0.0)
        value = {
            rid: alpha * (splits[rid] / top if top > 0 else 0.0) + (1 - alpha) * cover(cov, failing)
            for rid, cov in left.items()
        }
        best = max(sorted(value), key=lambda rid: value[rid])
        chosen.append(best)
        chosen_cov.append(left.pop(best) & failing)
    return chosen


@dataclass(frozen=True)
class RunFacts:
    """What similarity compares: estimated decision outcomes and the run's inputs."""

    decisions: Mapping[Hashable, Hashable]  # branch header -> successor taken (unknown: absent)
    inputs: Mapping[str, str]  # env fingerprint and params


def path_similarity(a: RunFacts, b: RunFacts) -> float:
    """Share (0-100) of decisions known in both with the same outcome (DTG §4.1)."""
    common = a.decisions.keys() & b.decisions.keys()
    if not common:
        return 0.0
    return 100.0 * sum(a.decisions[d] == b.decisions[d] for d in common) / len(common)


def input_similarity(a: RunFacts, b: RunFacts) -> float:
    """Share (0-100) of inputs with equal values over the union of names (DTG §4.2)."""
    names = a.inputs.keys() | b.inputs.keys()
    if not names:
        return 100.0
    return 100.0 * sum(a.inputs.get(n) == b.inputs.get(n) for n in names) / len(names)


def similarity(a: RunFacts, b: RunFacts) -> float:
    """Path similarity first (the better criterion in DTG), inputs as the finer half."""
    return 0.75 * path_similarity(a, b) + 0.25 * input_similarity(a, b)


def similar_runs(
    failures: Sequence[RunFacts], candidates: Mapping[str, RunFacts], k: int = DEFAULT_K
) -> list[str]:
    """The top-k candidates by σ'(e, S) = max over the failures of σ (DTG §4)."""
    if not failures:
        return []
    score = {rid: max(similarity(facts, f) for f in failures) for rid, facts in candidates.items()}
    return sorted(score, key=lambda rid: (-score[rid], rid))[:k]
