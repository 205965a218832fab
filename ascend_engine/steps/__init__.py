"""Native steps between models (docs/executor.md): :mod:`ascend_engine.steps.ocr`
holds DB text-detection post-processing."""
