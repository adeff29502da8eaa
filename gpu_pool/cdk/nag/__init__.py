"""cdk-nag: gpu-pool's own rule pack, and the findings its design accepts, each with a reason."""
