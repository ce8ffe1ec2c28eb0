"""CI history as evidence (docs/design.md §8): a pure core, like ``app/analysis``.

Runs of a test across script versions give a coverage spectrum from estimated traces at no
cost; the modules here map lines across versions, score spectra, propagate infection on the
block graph, select informative runs, fuse channels and classify failures. No I/O anywhere.
"""
