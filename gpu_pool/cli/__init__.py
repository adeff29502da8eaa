"""The `gpu-pool` command: verify, doctor, smoke-test-manifest and replacements (the
node groups a deploy would replace or delete).

It reads a running cluster (and its AWS account) against the plan; it never imports the CDK.
"""
