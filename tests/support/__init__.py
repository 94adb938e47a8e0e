"""Test helpers: real git repositories, local servers standing in for GitHub, container runs and case builders."""
