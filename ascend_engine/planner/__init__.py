"""The planner: pipeline graphs built, validated and planned in Python.

Python only configures: a :class:`~ascend_engine.planner.builder.Pipeline`
records the graph, and ``compile()`` turns it into a flat
:class:`~ascend_engine.planner.plan.Plan` the native executor runs
(docs/executor.md).  One job per module, in the order a plan is made:

* ``builder``   -- ``Pipeline`` (input, model, host, output, plan; ``from_spec`` and
  ``compile`` are ascend_engine.pipeline's), ``TensorHandle``;
* ``models``    -- ``ModelDescription`` and what the builder asks the runtime
  (model files described once, model sizes, device count, peer links);
* ``validate``  -- edges against the descriptors, row domains, unused
  inputs, shaped-plan checks;
* ``nodes``     -- the plan order and the plan tensors and nodes;
* ``placement`` -- streams and devices of every node, copy nodes between
  devices;
* ``memory``    -- carving, lifetimes and shared buffers of a request slot;
* ``plan``      -- the plan dataclasses and the memory report.

Planning rules (DESIGN.md §6):

* every tensor is row based: its first dimension is the request's batch;
* a request may carry up to ``max_batch`` rows: the smallest "largest gear"
  of the dynamic models, or the batch a static model was built for;
* each tensor's buffer is as large as the largest descriptor size of the
  model outputs and inputs it is bound to;
* tensors whose lifetimes within a request cannot overlap share memory: a
  buffer is reused only when every reader of its previous tensor is ordered
  (by event or stream order) before the writer of the next one; a tensor
  nothing reads lives until its writer has finished;
* a node with ``instances=k`` runs request r on instance r % k, each instance
  on a stream of its own: its stream changes per request, so stream order
  never orders it (only events do);
* every buffer is carved at 128-byte alignment with 32 bytes of padding;
* a host step (``pipe.host``) is a node too, on a stream of its own for the
  copies of its inputs and outputs; with ``rows="any"`` it sets the rows of
  everything downstream of it (its *row domain*): those tensors hold
  ``max_rows`` rows, plus the padding of the gears their models run at;
* a *shaped* tensor has dimensions after the first that change per request
  (``-1``): it is a pipeline input or an output of an image-size or
  dims-gear model, and only such models (or pipeline outputs) read it.
  Its buffer holds the largest gear; per request every such model runs the
  smallest gear holding its inputs (:mod:`ascend_engine.shapes`).

The planner never imports the executor: ``compile()`` lives above it
(ascend_engine/pipeline.py), the gear rule it sizes buffers by is C's own
through the small :mod:`ascend_engine._gears`, and native steps are plan
data (:mod:`ascend_engine.native_step`) that the executor lowers.
"""
