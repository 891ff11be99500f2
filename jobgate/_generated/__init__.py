"""Modules written by ``jobgate manifests generate``; never edited by hand (a test fails when stale)."""
