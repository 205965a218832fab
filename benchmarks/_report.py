"""What every benchmark file prints and records: its figures, one per line.

Ratios and absolute figures go to the benchmark's ``extra_info`` (so they land
in pytest-benchmark's JSON) and to stdout (run with ``-s``).
"""


def report(benchmark, title, figures):
    """Record ``figures`` ({name: value}) in ``benchmark.extra_info`` and print them under ``title``."""
    benchmark.extra_info.update(figures)
    print(f"\n{title}")
    for k, v in figures.items():
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
