"""``python -m fairforensics.cli <verb> [args]`` (what the benchmark sweep launches)."""

from fairforensics.cli import main

main()
