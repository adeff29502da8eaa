"""The `gpu-pool` command: verify, doctor, smoke-test-manifest and the pre-deploy preview.

It reads a running cluster (and its AWS account) against the plan; it never imports the CDK.
"""
