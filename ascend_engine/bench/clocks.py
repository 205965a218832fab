"""Which clock bound each model step of a bench on the simulator, and the SoC its models were made for.

A model converted by ``sim atc`` carries its ``--soc_version`` (in the conversion command it keeps)
and its modelled device time per profile (the roofline of that SoC, or ``--sim_latency_us``).  An
execution holds its stream for the longer of that modelled time and ONNX Runtime's real compute on
this CPU (docs/simulator.md, "Device time of converted models"), so the device time the timing
events measure is one or the other.  Measured within ``SLACK`` of the modelled time, the modelled
clock of the SoC bound the step; above it, this CPU's compute did, and the figure says nothing
about the SoC.  Simulator models written by ``sim.Graph`` declare their time and are not converted:
they have no entry here.
"""

from __future__ import annotations

import re

SLACK = 1.05                  # measured within 5 % of the modelled time: the modelled clock bound it
_SOC_FLAG = re.compile(r"--soc_version[= ](\S+)")
_MAGIC = b"AESIMMDL"          # the simulator model file's first bytes (docs/sim-model-format.md)


def converted(path) -> dict | None:
    """``{"soc", "modelled_ms": [per profile], "per_item_ms"}`` of a model file converted by sim atc,
    None for any other file (a ``sim.Graph`` model, a real CANN model, one that cannot be read)."""
    from ascend_engine.sim.atc import om_file

    try:
        with open(path, "rb") as f:
            if f.read(len(_MAGIC)) != _MAGIC:
                return None
            f.seek(0)
            desc = om_file.describe(f.read())
    except (OSError, ValueError):     # not a version-3/4 file: a sim.Graph model
        return None
    soc = _SOC_FLAG.search(desc.get("command") or "")
    return {"soc": soc.group(1) if soc else None,
            "modelled_ms": [t / 1e3 for t in desc["device_time_us"]],
            "per_item_ms": desc.get("device_time_per_item_us", 0.0) / 1e3}


def plan_model_files(plan) -> dict:
    """{model node: its file} of a compiled plan (nodes whose model came from a path)."""
    out = {}
    for node in plan.nodes:
        model = getattr(node, "model", None) or next(iter(getattr(node, "models", None) or []), None)
        path = getattr(model, "path", None)
        if path:
            out[node.name] = path
    return out


def figure(files, breakdown, rows) -> dict | None:
    """The JSON's ``clocks``: per converted model node, its SoC, modelled and measured device time
    per execution (ms) and ``bound``: ``"modelled"`` or ``"cpu"`` (None when the steps were not
    timed, without --profile).  None when no model of the run was converted by sim atc."""
    out = {}
    measured_all = ((breakdown or {}).get("per_execution") or {}).get("compute") or {} \
        if (breakdown or {}).get("measured", True) else {}
    for node, path in files.items():
        model = converted(path)
        if model is None:
            continue
        modelled = model["modelled_ms"]
        # a shape-range model adds its slope per row above the lower bound: at most rows x slope more
        ceiling = max(modelled) + model["per_item_ms"] * rows
        measured = (measured_all.get(node) or {}).get("p50")
        bound = None if measured is None else ("modelled" if measured <= ceiling * SLACK else "cpu")
        out[node] = {"soc": model["soc"], "modelled_ms": modelled, "per_item_ms": model["per_item_ms"],
                     "measured_ms": measured, "bound": bound}
    return out or None


def socs(clocks) -> list:
    """The SoCs the converted models of a run were made for, in order, once each."""
    return list(dict.fromkeys(c["soc"] or "unknown SoC" for c in (clocks or {}).values()))


def _modelled_text(c) -> str:
    lo, hi = min(c["modelled_ms"]), max(c["modelled_ms"])
    text = f"{lo:.3f} ms" if lo == hi else f"{lo:.3f}-{hi:.3f} ms"
    return text + (f" + {c['per_item_ms']:.3f} ms per row" if c["per_item_ms"] else "")


def lines(clocks, labels) -> list:
    """The report's ``clock`` lines: one per converted model, saying which clock bound it."""
    out = []
    for node, c in clocks.items():
        name = labels.get(node, f"model {node}")
        soc = c["soc"] or "its SoC"
        if c["bound"] is None:
            out.append(f"{name}: modelled {_modelled_text(c)} per execution for {soc}; --profile times "
                       "the executions and says which clock bound them")
        elif c["bound"] == "modelled":
            out.append(f"{name}: {c['measured_ms']:.3f} ms per execution (p50) is the device time modelled "
                       f"for {soc} ({_modelled_text(c)}); ONNX Runtime's compute on this CPU took less")
        else:
            out.append(f"{name}: {c['measured_ms']:.3f} ms per execution (p50) is ONNX Runtime's real "
                       f"compute on this CPU, not {soc}'s: its modelled device time is {_modelled_text(c)}")
    return out


def cpu_bound_label(clocks, labels) -> set:
    """The step labels (``model det``) whose measured time was this CPU's compute."""
    return {labels.get(node, f"model {node}") for node, c in (clocks or {}).items() if c["bound"] == "cpu"}
