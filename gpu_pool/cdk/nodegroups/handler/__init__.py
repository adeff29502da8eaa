"""Lambda code for the per-node-group custom resources (`index.on_event`), an asset of
cdk/nodegroups/provider.py."""
