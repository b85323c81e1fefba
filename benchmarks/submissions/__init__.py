"""Submissions to a shared leaderboard (issue 49): bundles (``fairforensics submit``), benchmark
definitions (``fairforensics board define``) and the checks that admit a bundle to a board."""
