"""Lambda code for the per-node-group custom resources (`index.on_event`), an asset of
nodegroup_provider.py."""
