"""Helpers every transport shares and none owns: logging, settings read from the environment."""
