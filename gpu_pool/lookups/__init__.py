"""The answers to the app's lookups that the project's CDK CLI context provider plugin
(cdk-plugin/index.js) runs as `python3 -m gpu_pool.lookups.<module>`: `offerings.py` (the zones
that offer an instance type), `quotas.py` (an EC2 vCPU quota's value) and `eks_cluster.py` (an
existing EKS cluster), each in the AWS session of `session.py`. The CDK CLI caches each answer in
cdk.context.json, where gpu_pool/cdk/lookups/ reads it. Not the `gpu-pool` command: neither
imports the other.
"""
