"""Comparing a bench run with a saved baseline, like with like.

Two runs are comparable only when they measured the same pipeline: the same
models in the same order, with the same batch gears and the same inputs;
otherwise :class:`IncomparableError` says what differs.  A figure decides the
verdict (is *gated*) only when both runs measured it the same way:

* runs of a dynamic-shape model at different input shapes are different
  configurations: comparing them is refused, like different pipelines;
* requests/s and per-request latency when the batch is the same; rows/s and
  per-row latency (latency / batch) when it differs;
* latency and the device arena only when the depth is the same too.

The other figures are shown for information.  With ``--repeat`` the spread of
each figure across passes (in both runs) is the noise: a gated figure that
got worse by more than the tolerance but less than the noise is reported,
not counted as a regression.
"""

from __future__ import annotations

DEFAULT_TOLERANCE = 10.0   # percent a gated figure may get worse before the verdict says so
SAME_BELOW = 1.0           # percent: smaller changes are "same"


class IncomparableError(ValueError):
    """The two runs measured different pipelines (a usage error)."""


def pipeline_identity(plan) -> dict:
    """What makes two runs comparable: nodes in order, each node's gears, inputs' dtypes and shapes."""
    return {
        "nodes": [n.name for n in plan.nodes],
        "gears": {n.name: list(n.gears) for n in plan.nodes},
        "inputs": {name: [str(plan.tensors[t].dtype), [-1, *plan.tensors[t].shape[1:]]]
                   for name, t in plan.inputs},
        "max_batch": plan.max_batch,
    }


def check_comparable(current, baseline, baseline_name="the baseline") -> list:
    """Raise IncomparableError when the runs measured different pipelines; returns notes otherwise."""
    old = baseline.get("pipeline") or {"nodes": baseline.get("nodes")}
    new = current.get("pipeline") or {"nodes": current.get("nodes")}
    if old.get("nodes") != new.get("nodes"):
        raise IncomparableError(f"cannot compare with {baseline_name}: it ran the models {old.get('nodes')}, "
                                f"this run {new.get('nodes')} (a different pipeline)")
    check_shapes(new, baseline, baseline_name)
    notes = []
    for key, what in (("gears", "batch gears"), ("inputs", "inputs")):
        if key not in old or key not in new:
            notes.append(f"{baseline_name} does not record its {what}; they were not checked")
            continue
        if old[key] != new[key]:
            diff = [f"{k}: {old[key].get(k)} then, {new[key].get(k)} now"
                    for k in sorted(set(old[key]) | set(new[key])) if old[key].get(k) != new[key].get(k)]
            raise IncomparableError(f"cannot compare with {baseline_name}: the {what} differ "
                                    f"({'; '.join(diff)}); figures of different models are not like figures")
    return notes


def check_shapes(identity, baseline, baseline_name="the baseline"):
    """Refuse (IncomparableError) when a dynamic-shape model's runs had different input shapes.

    ``identity``: the current run's ``pipeline`` figure (its ``shapes`` key
    is set for a dynamic-shape model run outside a pipeline).
    """
    old = baseline.get("pipeline") or {}
    if ("shapes" in old or "shapes" in identity) and old.get("shapes") != identity.get("shapes"):
        raise IncomparableError(f"cannot compare with {baseline_name}: it ran at the input shapes "
                                f"{_shapes(old)}, this run at {_shapes(identity)}; runs at different shapes "
                                "(gears) are different configurations: compare runs at the same --shapes")


def _shapes(identity) -> str:
    shapes = identity.get("shapes")
    if not shapes:
        return "none recorded (a pipeline run)"
    return ";".join(f"{name}:{','.join(str(d) for d in shape)}" for name, shape in shapes.items())


def _get(data, path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data if isinstance(data, int | float) and not isinstance(data, bool) else None


def _figures(current, baseline):
    """(name, unit, path, +1 if higher is better, gated, why not gated, spread key) per figure."""
    old_cfg, new_cfg = baseline.get("config") or {}, current.get("config") or {}
    same_batch = old_cfg.get("batch") == new_cfg.get("batch")
    same_depth = old_cfg.get("depth") == new_cfg.get("depth")
    batch_why = "" if same_batch else "batch differs"
    depth_why = "" if same_depth else "depth differs"
    lat_why = batch_why or depth_why
    figs = [("throughput", "requests/s", ("throughput", "requests_per_s"), +1, same_batch, batch_why,
             "requests_per_s"),
            ("throughput (rows)", "rows/s", ("throughput", "rows_per_s"), +1, not same_batch,
             "same as requests/s at one batch" if same_batch else "", "rows_per_s"),
            ("cold latency", "ms", ("latency_ms", "cold"), -1, False, "one sample", None)]
    for p in ("p50", "p90", "p99"):
        figs.append((f"{p} latency", "ms", ("latency_ms", p), -1, same_batch and same_depth, lat_why, p))
    if not same_batch:
        for p in ("p50", "p90", "p99"):
            figs.append((f"{p} latency per row", "ms/row", ("latency_per_row_ms", p), -1, same_depth,
                         depth_why, p))
    figs += [("max latency", "ms", ("latency_ms", "max"), -1, False, "one sample", None),
             ("host enqueue", "ms/request", ("host", "enqueue_ms_per_request"), -1, False, "information",
              None),
             ("device arena", "bytes", ("memory", "arena_bytes"), -1, same_depth, depth_why, None)]
    nodes = [n for n in (current.get("nodes") or []) if n in (baseline.get("nodes") or [])]
    for node in nodes:
        figs.append((f"device {node}", "ms/execution", ("breakdown", "per_execution", "compute", node, "p50"),
                     -1, False, "information", None))
    return figs


def compare(current: dict, baseline: dict, tolerance: float = DEFAULT_TOLERANCE,
            baseline_name="the baseline") -> dict:
    """Each figure's baseline, current value and change, and a verdict on the gated ones.

    Returns ``{"figures": [{name, unit, baseline, current, ratio, percent,
    change, gated, why, noise_percent}], "regressions": [...], "gated": [...],
    "verdict": text, "notes": [...]}``.  ``change`` is "better", "worse" or
    "same" (within 1 %).  Raises IncomparableError for different pipelines.
    """
    notes = check_comparable(current, baseline, baseline_name)
    old_spread = (baseline.get("repeat") or {}).get("spread_percent") or {}
    new_spread = (current.get("repeat") or {}).get("spread_percent") or {}
    rows, regressions, within_noise, gated_names = [], [], [], []
    for name, unit, path, sign, gated, why, spread_key in _figures(current, baseline):
        old, new = _get(baseline, path), _get(current, path)
        if old is None or new is None:
            continue
        ratio = new / old if old else (1.0 if new == old else float("inf"))
        percent = (ratio - 1.0) * 100.0
        if abs(percent) < SAME_BELOW:
            change = "same"
        else:
            change = "better" if (percent > 0) == (sign > 0) else "worse"
        noise = (old_spread.get(spread_key, 0.0) + new_spread.get(spread_key, 0.0)) if spread_key else 0.0
        if gated:
            gated_names.append(name)
            if change == "worse" and abs(percent) > tolerance:
                (regressions if abs(percent) > noise else within_noise).append(f"{name} {percent:+.1f}%")
        rows.append({"name": name, "unit": unit, "baseline": old, "current": new, "ratio": ratio,
                     "percent": percent, "change": change, "gated": gated, "why": "" if gated else why,
                     "noise_percent": noise})
    if regressions:
        verdict = f"REGRESSION beyond {tolerance:g}%: " + ", ".join(regressions)
    else:
        worse = sum(r["change"] == "worse" for r in rows if r["gated"])
        better = sum(r["change"] == "better" for r in rows if r["gated"])
        verdict = (f"no regression beyond {tolerance:g}% in {', '.join(gated_names) or 'no like figures'} "
                   f"({better} better, {worse} worse)")
        if within_noise:
            verdict += "; within the runs' spread: " + ", ".join(within_noise)
    old_cfg, new_cfg = baseline.get("config") or {}, current.get("config") or {}
    for key in ("batch", "depth", "streams"):
        if key in old_cfg and key in new_cfg and old_cfg[key] != new_cfg[key]:
            notes.append(f"{baseline_name} ran with {key} {old_cfg[key]}, this run with {new_cfg[key]}")
    if old_cfg.get("batch") != new_cfg.get("batch"):
        notes.append("requests/s and per-request latency are not like figures across batches: "
                     "rows/s and per-row latency decide")
    for key in ("backend", "soc", "target"):
        if key in baseline and key in current and baseline[key] != current[key]:
            notes.append(f"{baseline_name} ran on {key} {baseline[key]!r}, this run on {current[key]!r}")
    return {"figures": rows, "regressions": regressions, "gated": gated_names, "verdict": verdict,
            "tolerance_percent": tolerance, "notes": notes}
