"""Locust against ``ascend-engine serve``'s HTTP endpoint: an independent load generator.

Each simulated user sends KServe v2 infer requests of one row to the demo pipeline as fast as it is
answered (a closed loop), half with JSON tensors and half with binary ones, and checks every
answer's status and output shape.

    ascend-engine sim make-demo demo && mkdir -p models/demo/1 && cp demo/* models/demo/1/
    ascend-engine serve models &
    locust -f benchmarks/locustfile.py --headless -u 16 -r 16 -t 30s --host http://127.0.0.1:8000

Environment: ``AE_MODEL`` (default ``demo``), ``AE_INPUT`` (``x``) and ``AE_WIDTH`` (64) say what
to send.  Locust's table gives requests/s and the latency percentiles per kind of request.
"""

import json
import os
import random
import struct

from locust import FastHttpUser, task

MODEL = os.environ.get("AE_MODEL", "demo")
INPUT = os.environ.get("AE_INPUT", "x")
WIDTH = int(os.environ.get("AE_WIDTH", "64"))
PATH = f"/v2/models/{MODEL}/infer"


def json_body(values):
    return json.dumps({"inputs": [{"name": INPUT, "datatype": "FP32", "shape": [1, WIDTH], "data": values}]})


def binary_body(values):
    head = json.dumps({"inputs": [{"name": INPUT, "datatype": "FP32", "shape": [1, WIDTH],
                                   "parameters": {"binary_data_size": 4 * WIDTH}}],
                       "parameters": {"binary_data_output": True}}).encode()
    return head + struct.pack(f"<{WIDTH}f", *values), len(head)


class KServeUser(FastHttpUser):
    """One caller: a request, its answer, the next request."""

    @task
    def infer_json(self):
        values = [random.random() for _ in range(WIDTH)]
        with self.client.post(PATH, data=json_body(values), name="infer JSON", catch_response=True) as reply:
            if reply.status_code != 200:
                reply.failure(f"status {reply.status_code}: {reply.text[:200]}")
            elif len(reply.json()["outputs"][0]["data"]) == 0:
                reply.failure("no output data")

    @task
    def infer_binary(self):
        body, head = binary_body([random.random() for _ in range(WIDTH)])
        with self.client.post(PATH, data=body, name="infer binary", catch_response=True,
                              headers={"Inference-Header-Content-Length": str(head)}) as reply:
            if reply.status_code != 200:
                reply.failure(f"status {reply.status_code}: {reply.text[:200]}")
            elif "Inference-Header-Content-Length" not in reply.headers:
                reply.failure("the reply has no binary outputs")
