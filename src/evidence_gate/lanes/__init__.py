"""The lanes: each takes values read from git and returns its violations."""
