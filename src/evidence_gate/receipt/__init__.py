"""The receipt: its typed parts, how it is written, merged over shards, compared and re-derived from its facts."""
