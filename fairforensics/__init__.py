"""The installed command-line tools of FairForensics (``fairforensics <verb>``, ``ff-<verb>``);
the library itself is the top-level packages ``configs``, ``preprocessing``, ``detectors``,
``evaluation``, ``training``, ``fairness`` and ``benchmarks``."""
