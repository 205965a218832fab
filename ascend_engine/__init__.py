"""ascend-engine: multi-model inference pipelines on Ascend NPUs."""
