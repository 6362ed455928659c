"""Training on packed shards without Ray: the loader, the reference model and the training loop."""
