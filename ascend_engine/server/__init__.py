"""``ascend-engine serve``: the KServe v2 inference protocol over a folder of pipeline specs (docs/serve.md).

One job per module:

* ``repository`` -- the folder of specs, one model per spec, versions as subfolders;
* ``protocol`` -- KServe v2 datatypes and tensor data (JSON, binary), request checks;
* ``service`` -- what the server answers, whatever the transport;
* ``http_server`` -- HTTP/REST with the binary-tensor extension;
* ``grpc_server`` -- gRPC (``kserve_v2.proto``, our own copy of the public messages);
* ``metrics`` -- Prometheus text on its own port;
* ``lifecycle`` -- start, signals, graceful shutdown.
"""

from ascend_engine.server.lifecycle import run

__all__ = ["run"]
