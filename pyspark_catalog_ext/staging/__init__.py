"""Staged create/commit helpers and the safe cleanup of abandoned staged tables."""
