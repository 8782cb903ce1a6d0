"""Robustness probes (`judge probe`): variants of labelled items that must not change a
judge's verdict (invariant) or must change it (sensitive), graded through the call cache,
with flip and catch rates per variant kind."""
