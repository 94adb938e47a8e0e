"""The lanes that run code: the sealed property runs, seed ledgers, replays, steering, coverage."""
