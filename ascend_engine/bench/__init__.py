"""What ``ascend-engine bench`` measures and how it reports it (see docs/cli.md).

* :mod:`.measure` runs the requests and times each one from the moment it is
  enqueued to the moment its result is delivered (timing events only with
  ``--profile``);
* :mod:`.breakdown` turns the engine's timing events into per-request and
  per-execution H2D, compute, wait and D2H figures;
* :mod:`.data` reads real inputs (``.npy``/``.bin``), writes outputs and checks
  them against reference files;
* :mod:`.compare` compares a run with a saved baseline, like with like;
* :mod:`.load` puts the engine under the load of many callers
  (``--concurrency``, a closed loop; ``--rate``, Poisson arrivals) and
  reports each point of a sweep;
* :mod:`.shapes` reads ``--shapes`` and checks it against a model's gears
  or ranges, and describes the gears;
* :mod:`.direct` runs a model with dynamic image size, dims or shape ranges
  on its own streams (pipelines take static and dynamic-batch models);
* :mod:`.report` prints the figures as text;
* :mod:`.ais` is ``bench --model``: ais_bench's options, summary and output files;
* :mod:`.perf` is perf_analyzer's load options, stability windows and ``-f`` CSV;
* :mod:`.command` and :mod:`.trace` are the ``bench`` and ``trace`` commands.
"""
