"""The text ``ascend-engine bench`` prints (the same figures ``--json`` writes)."""

from __future__ import annotations

import sys

from ascend_engine.bench import clocks

from .shapes import gears_text
from .shapes import text as shapes_text


def human_bytes(n) -> str:
    """Bytes for people: 1536 -> '1.5 KiB'."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _ms(v) -> str:
    return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"


COLUMNS = ("p50", "p90", "p95", "p99", "max", "mean")


def _rows_that_add_up(fig, nodes, labels, with_end_to_end):
    """The breakdown rows whose means add up to the end-to-end mean (of a chain; see breakdown.py)."""
    rows = []
    if with_end_to_end and fig.get("before_device"):
        rows.append(("submit to H2D", fig["before_device"]))
    rows.append(("H2D", fig.get("h2d")))
    for n in nodes:
        rows.append((labels.get(n, f"model {n}"), fig["compute"].get(n)))
    rows.append(("queued, behind earlier", fig.get("queue")))
    rows.append(("D2H", fig.get("d2h")))
    if with_end_to_end and fig.get("after_device"):
        rows.append(("D2H to result", fig["after_device"]))
    return [(name, s) for name, s in rows if s is not None]


def _table(fig, nodes, labels, title, out, with_end_to_end):
    """One breakdown table: a row per step, p50/p90/p95/p99/max/mean columns in ms."""
    head = [("end-to-end", fig.get("end_to_end"))] if with_end_to_end else []
    summed = _rows_that_add_up(fig, nodes, labels, with_end_to_end)
    waits = [("host enqueue", fig.get("enqueue"))]
    if fig.get("device_span"):
        waits.append(("device span", fig["device_span"]))
    waits += [(f"{labels.get(n, n)} waited", fig["wait"].get(n)) for n in nodes]
    waits.append(("D2H waited", fig["wait"].get("outputs")))
    every = head + summed + waits
    width = max(24, *(len(name) for name, _ in every))
    cols = " ".join(f"{c:>9}" for c in COLUMNS)
    print(f"  {title:<{width}} {cols}   (ms)", file=out)

    def line(name, s):
        if s is not None:
            print(f"  {name:<{width}} " + " ".join(f"{_ms(s[k]):>9}" for k in COLUMNS), file=out)

    for name, s in head + summed:
        line(name, s)
    if head and head[0][1]:
        total = sum(s["mean"] for _, s in summed)
        e2e = head[0][1]["mean"]
        share = f" ({total / e2e * 100:.1f} %)" if e2e > 0 else ""
        print(f"  {'the rows above add up to':<{width}} {total:.3f} ms of the {e2e:.3f} ms mean{share}",
              file=out)
    print("  overlapping the rows above (host enqueue; device span; a stream blocked on its producers):",
          file=out)
    for name, s in waits:
        line(name, s)


def steps_text(nodes, labels) -> str:
    """``3 steps (model detector, host step nms, model classifier)``."""
    names = [labels.get(n, f"model {n}") for n in nodes]
    return f"{len(names)} step{'s' if len(names) != 1 else ''} ({', '.join(names)})"


def bound_text(fig) -> str:
    """What limits the run: from the timed steps under --profile, else from the calling thread's CPU."""
    bd = fig["breakdown"]
    if bd.get("measured", True) and bd["slowest_stage"] is not None:
        enq = (bd["per_execution"]["enqueue"] or {}).get("p50", 0.0)
        what = "HOST-BOUND: host enqueue {:.3f} ms per execution (p50) exceeds" if bd["host_bound"] else \
            "device-bound: host enqueue {:.3f} ms per execution (p50) is below"
        slowest = f" the slowest stage ({bd['slowest_stage']}, {bd['slowest_stage_ms']:.3f} ms)"
        labels = fig.get("step_labels") or bd.get("labels") or {}
        if not bd["host_bound"] and bd["slowest_stage"] in clocks.cpu_bound_label(fig.get("clocks"), labels):
            # its device time is ONNX Runtime's compute on this CPU (the clock lines below)
            what = "bound by this CPU's compute: host enqueue {:.3f} ms per execution (p50) is below"
            slowest += ", ONNX Runtime's real compute, longer than its modelled device time"
        return what.format(enq) + slowest
    busy = (fig.get("host") or {}).get("calling_thread_busy", 0.0) * 100
    if fig["host_bound"]:
        return (f"HOST-BOUND: the calling thread was busy {busy:.0f}% of the run (its CPU time over the wall "
                "time); larger batches help more than more streams")
    return (f"not host-bound: the calling thread was busy {busy:.0f}% of the run and waited for results "
            "the rest; --profile names the slowest stage")


SHAPES_CHOSEN = {"given": "chosen with --shapes", "default": "the largest gear; choose one with --shapes",
                 "bench_shape": "the spec's bench_shape", "files": "those of the --input files"}


def _shapes_lines(fig, p):
    """The request shapes of a run (when chosen), and the gear each model node ran at them."""
    cfg = fig["config"]
    if fig.get("how") or cfg.get("shapes_chosen") in ("given", "bench_shape", "files"):
        outs = (fig.get("outputs") or {}).get("shapes")
        made = f"; outputs {shapes_text(outs)}" if outs else ""
        p("shapes", f"{shapes_text(cfg['shapes'])} ({SHAPES_CHOSEN.get(cfg.get('shapes_chosen'), '')}){made}")
    if fig.get("node_gears"):
        from .shaped import gears_line

        p("gears", gears_line(fig["node_gears"]))


def print_bench(fig, out=None):
    """Print bench figures as text."""
    out = out or sys.stdout
    cfg, lat = fig["config"], fig["latency_ms"]
    nodes = fig["nodes"]

    def p(label, text):
        print(f"{label:<10}: {text}", file=out)

    made_for = clocks.socs(fig.get("clocks"))
    soc = fig["soc"] or "unknown SoC"
    if made_for:      # models converted by sim atc: the SoC they model, not the simulated device's name
        soc = f"models converted by sim atc for {', '.join(made_for)}; the simulated device is {soc}"
    p("target", f"{fig['target']} ({fig['kind']}) on {fig['backend']} device {fig['device']} ({soc})")
    if fig.get("gears"):
        p("gears", gears_text(fig["gears"]))
    labels = fig.get("step_labels") or fig["breakdown"].get("labels") or {}
    if fig.get("how"):
        p("run", fig["how"])
    else:
        p("pipeline", f"{steps_text(nodes, labels)} on {fig['streams_used']} stream(s), "
                      f"depth {cfg['depth']}, batch {cfg['batch']}")
    _shapes_lines(fig, p)
    p("inputs", fig["inputs"]["description"])
    rep = fig["repeat"]
    if rep["count"] > 1:
        each = f"{cfg['requests']}" if cfg["requests"] else f"{cfg['duration']:g} s"
        passes = f" in {rep['count']} passes of {each}"
    else:
        passes = ""
    p("requests", f"{fig['requests']} timed{passes} in {fig['wall_seconds']:.2f} s after 1 cold + "
                  f"{cfg['warmup']} warm-up")
    spread = (f" (median pass; spread {rep['spread_percent']['rows_per_s']:.1f}% across {rep['count']})"
              if rep["count"] > 1 else "")
    p("throughput", f"{fig['throughput']['requests_per_s']:.1f} requests/s, "
                    f"{fig['throughput']['rows_per_s']:.1f} rows/s{spread}")
    p("latency", f"cold {lat['cold']:.2f} ms (first request); submit to result p50 {lat['p50']:.2f} ms, "
                 f"p90 {lat['p90']:.2f}, p95 {lat['p95']:.2f}, p99 {lat['p99']:.2f}, max {lat['max']:.2f}, "
                 f"mean {lat['mean']:.2f}")
    host = fig.get("host") or {}
    if "cpu_ms_per_request" in host:
        p("host", f"enqueue {host['enqueue_ms_per_request']:.3f} ms per request (mean), process CPU "
                  f"{host['cpu_ms_per_request']:.3f} ms per request, calling thread busy "
                  f"{host['calling_thread_busy'] * 100:.0f}% of the run")
    elif host:
        p("host", f"enqueue {host['enqueue_ms_per_request']:.3f} ms per request (mean)")
    bd = fig["breakdown"]
    e = bd["executions_per_request"]
    if e > 1:
        largest = fig["pipeline"]["max_batch"]
        p("split", f"each request of {cfg['batch']} rows runs as {e} executions (the largest batch one "
                   f"execution takes is {largest}): figures per request and per execution")
    if not bd.get("measured", True):
        p("breakdown", "not measured: --profile times every step with device events "
                       "(at a host cost per request)")
    else:
        print("breakdown :", file=out)
        _table(bd["per_request"], nodes, labels, "per request", out, True)
        if e > 1:
            _table(bd["per_execution"], nodes, labels, "per execution", out, False)
    p("bound", bound_text(fig))
    for text in clocks.lines(fig.get("clocks") or {}, labels):
        p("clock", text)
    if fig["kind"] == "remote":
        return
    mem = fig["memory"]
    pinned = human_bytes(mem.get("host_pinned_bytes", 0))
    p("memory", f"device arena {human_bytes(mem['arena_bytes'])} ({mem['depth']} slots x "
                f"{human_bytes(mem['slot_bytes'])}), pinned host {pinned}, "
                f"peak working set {human_bytes(mem['peak_working_set'])}, recommended pool "
                f"{human_bytes(mem['recommended_pool_bytes'])}")


def _value(value, unit):
    if unit == "bytes":
        return human_bytes(value)
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def print_comparison(result, baseline_path, out=None):
    """Print a comparison (:func:`ascend_engine.bench.compare.compare`) as a table and a verdict."""
    out = out or sys.stdout
    print(f"compare   : against {baseline_path}", file=out)
    for note in result.get("notes", []):
        print(f"  note: {note}", file=out)
    print(f"  {'figure':<24} {'baseline':>10}    {'new':>10} {'unit':<13} {'change':>16}", file=out)
    for r in result["figures"]:
        unit = "" if r["unit"] == "bytes" else r["unit"]
        gate = "" if r["gated"] else f"  (not gated: {r['why']})"
        old, new = _value(r["baseline"], r["unit"]), _value(r["current"], r["unit"])
        print(f"  {r['name']:<24} {old:>10} -> {new:>10} "
              f"{unit:<13} x{r['ratio']:.3f} {r['percent']:+7.1f}%  {r['change']}{gate}", file=out)
    print(f"verdict   : {result['verdict']}", file=out)


def _cell(value, width, fmt="{:.3f}"):
    return f"{'-' if value is None else fmt.format(value):>{width}}"


def print_load(fig, out=None):
    """Print a load sweep (``bench --concurrency`` / ``--rate``): a header and one row per point."""
    out = out or sys.stdout
    cfg, load = fig["config"], fig["load"]

    def p(label, text):
        print(f"{label:<10}: {text}", file=out)

    if fig["kind"] == "remote":
        version = f" version {fig['model_version']}" if fig["model_version"] else ""
        p("target", f"model {fig['model']}{version} at {fig['url']} over {fig['protocol'].upper()} "
                    f"({fig['server']['name']} {fig['server']['version']}), batch {cfg['batch']}")
        p("server", "queue and service from the server's statistics (service: compute input + infer + output)"
          if fig["statistics"] else "no statistics extension: the client's figures only")
    else:
        nodes = fig["nodes"]
        p("target", f"{fig['target']} ({fig['kind']}) on {fig['backend']} device {fig['device']} "
                    f"({fig['soc'] or 'unknown SoC'})")
        batching = (f"batcher up to {cfg['max_delay_ms']:g} ms, gear policy {cfg['gear_policy']}"
                    if cfg["max_delay_ms"] else "no batcher")
        steps = steps_text(nodes, fig.get('step_labels') or {})
        p("pipeline", f"{steps} on {fig['streams_used']} stream(s), "
                      f"depth {cfg['depth']}, batch {cfg['batch']}, admission queue {cfg['max_queue']}, "
                      f"{batching}")
        _shapes_lines(fig, p)
    p("inputs", fig["inputs"]["description"])
    each = f"{cfg['requests']} timed requests" if cfg["requests"] else f"{cfg['duration']:g} s"
    windows = load.get("windows")
    if windows:
        each = (f"windows of {windows['interval_ms']:g} ms until the last 3 agree within "
                f"{windows['stability_percent']:g}% ({windows['figure']} latency and throughput; at most "
                f"{windows['max_trials']} windows), the last 3 reported")
    if load["mode"] == "closed":
        p("load", f"closed loop: N callers, each sends its next request when its last one is answered; "
                  f"{each} per point after {cfg['warmup']} warm-up; latency from submit to result")
        head = f"  {'callers':>9}"
    else:
        arrivals = ("arrivals evenly spaced at the offered rate" if load.get("distribution") == "constant"
                    else "Poisson arrivals at the offered rate")
        p("load", f"open loop: {arrivals}; {each} per point after "
                  f"{cfg['warmup']} warm-up; latency from each request's scheduled arrival to its result")
        head = f"  {'offered/s':>9}"
    if "latency_ms" in fig:
        p("cold", f"{fig['latency_ms']['cold']:.2f} ms (the first request, alone)")
    if load["mode"] == "open":
        head += f" {'arrived/s':>10}"
    head += (f" {'answered/s' if load['mode'] == 'open' else 'requests/s':>10} {'rows/s':>9} "
             f"{'p50 ms':>8} {'p90 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'queue ms':>9} "
             f"{'service ms':>10} {'device ms':>9} {'batch':>6} {'cpu':>5}")
    if load["mode"] == "open":
        head += f" {'lag p99':>8}  kept up"
    if windows:
        head += "  windows"
    print(head, file=out)
    for pt in load["points"]:
        lat = pt["latency_ms"] or {}
        first = pt["concurrency"] if load["mode"] == "closed" else pt["offered_per_s"]
        tput = pt["throughput"]
        row = f"  {first:>9g}"
        if load["mode"] == "open":
            row += f" {_cell(pt['offered_drawn_per_s'], 10, '{:.1f}')}"
        row += (f" {tput['requests_per_s']:>10.1f} {tput['rows_per_s']:>9.1f} "
               f"{_cell(lat.get('p50'), 8)} {_cell(lat.get('p90'), 8)} {_cell(lat.get('p95'), 8)} "
               f"{_cell(lat.get('p99'), 8)} "
               f"{_cell(pt['queue_ms'], 9)} {_cell(pt['service_ms'], 10)} "
               f"{_cell((pt['device_ms'] or {}).get('p50'), 9)} {_cell(pt['mean_batch_rows'], 6, '{:.2f}')} "
               f"{pt['host_cpu_cores']:>5.2f}")
        if load["mode"] == "open":
            row += f" {_cell((pt['lag_ms'] or {}).get('p99'), 8)}  {'yes' if pt['kept_up'] else 'NO'}"
        if windows:
            st = pt["stability"]
            row += f"  {st['windows']:>3} {'stable' if st['stable'] else 'NOT STABLE'}"
        print(row, file=out)
    legend = ("queue: mean ms a request waited in the admission queue; service: mean ms from an "
              "execution's start to its results; device: p50 ms of one execution's H2D, models and D2H; "
              "batch: mean rows per execution; cpu: cores the process used")
    if fig["kind"] == "remote":
        legend = ("queue: the server's mean queue ms; service: its mean compute input + infer + output ms; "
                  "batch: mean rows per execution; cpu: cores this client process used")
    if load["mode"] == "open":
        legend = ("arrived/s: the rate the arrival schedule delivered; lag: ms by which the generator sent "
                  "a request after its scheduled arrival (counted in the latency); " + legend)
    print(f"  ({legend})", file=out)
    if load["mode"] == "open":
        missed = [pt for pt in load["points"] if not pt["kept_up"]]
        kept = [f"{pt['offered_per_s']:g}" for pt in load["points"] if pt["kept_up"]]
        if missed:
            text = f"kept up at {', '.join(kept)} requests/s offered; " if kept else ""
            text += "; ".join(f"at {pt['offered_per_s']:g}/s offered: {pt['verdict']}" for pt in missed)
        else:
            text = f"kept up at every offered rate ({', '.join(kept)} requests/s)"
        p("capacity", text)
    if fig["kind"] == "remote":
        return
    mem = fig["memory"]
    pinned = human_bytes(mem.get("host_pinned_bytes", 0))
    p("memory", f"device arena {human_bytes(mem['arena_bytes'])} ({mem['depth']} slots x "
                f"{human_bytes(mem['slot_bytes'])}), pinned host {pinned}")
